"""MXL4xx autograd and memory: NDArrays and recorded graphs kept alive by training loops.

MXNet's engine returns from every operator at once and computes later; a loop that only keeps
NDArrays never waits for it, and what is recorded under `autograd.record()` carries its graph.
One file per rule: the rule's class and the functions that decide and word its findings.
`checker.py` holds the two checkers that run them: `MemoryChecker` reads each loop once for
MXL401 and MXL403 and for the sync family (`rules/sync/`), `RecordChecker` reads each
`autograd.record()` block for MXL402, MXL404 and MXL405. What several rules share (a function's
tensor names, loops, the statements of a recorded block) is in `_analysis.py`.
"""
