"""MXL4xx autograd and memory: NDArrays and recorded graphs kept alive by training loops.

MXNet's engine returns from every operator at once and computes later; a loop that only keeps
NDArrays never waits for it, and what is recorded under `autograd.record()` carries its graph.
One file per rule; `checker.py` holds the two checkers: `MemoryChecker` reads each loop once for
MXL401 and MXL403 and for the sync family (`rules/sync/`), `RecordChecker` reads each
`autograd.record()` block for MXL402, MXL404 and MXL405.
"""
