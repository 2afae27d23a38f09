"""MXL2xx: device contexts — parameters and data on different contexts.

One file per rule (the rule's class, message, documentation and examples); `checker.py` holds
the one checker that reads each function once for all four rules, over the placement analysis of
`mxlint/placement.py`.
"""
