"""MXL2xx: device contexts — parameters and data on different contexts.

The analysis (where each value lives) is in `mxlint.placement`; this module decides which of
its events are findings, and spells messages and fixes.

One file per rule (the rule's class, message, documentation and examples); `checker.py` holds
the one checker that reads each function once for all four rules, over the placement analysis of
`mxlint/placement.py`.
"""
