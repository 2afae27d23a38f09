"""MXL2xx: device contexts — parameters and data on different contexts.

One file per rule: the rule's class (message, documentation, examples) and the functions that
decide and word its findings. `checker.py` holds the one checker that reads each function once
for all four rules, over the placement analysis of `mxlint/placement.py`; `_analysis.py` what
several rules share.
"""
