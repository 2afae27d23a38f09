"""MXL6xx sync and timing: timers and synchronising calls in training loops.

One file per rule: the rule's class and the functions that decide and word its findings, run by
the memory family's `MemoryChecker` (`rules/memory/checker.py`), which reads each loop once for
the memory and the sync rules.
"""
