"""MXL1xx: code that breaks when a HybridBlock is hybridized, and MXNet's tensor API misused.

`hybrid_forward(self, F, x)` runs twice in a model's life: imperatively with `F = mx.nd` (what
every unit test sees) and symbolically with `F = mx.sym` once `net.hybridize()` is called, when
`x` is a Symbol with no value, no shape and different indexing semantics. These rules find the
statements that only work in the first mode. A block that overrides `hybridize()` without ever
reaching MXNet's (a test double that raises there, a block that ignores it) only runs in the
first mode: its forward code is not checked; so does a block the project builds only in files
that pass `hybridize=False` to what trains it and call no `.hybridize()`
(`ProjectIndex.hybridize_declined`); and so does a block every object of which the project
builds where it keeps it, calls it and never hybridizes, exports or hands it to code that might
(a loss a training script builds and calls, a reference layer a test runs on arrays), when no
file outside the run names it (`ProjectIndex.never_hybridized`, `semantic.constructions`). Two
rules read any code, hybridized or not, from
MXNet's own facts: Python values passed where an operator takes an array (MXL116) and an
NDArray used as a truth value (MXL117).

One file per rule (class, message, documentation, examples). The analysis they share:
`_taint.py` (the tensor-taint interpreter), `_analysis.py` (MXNet's meaning plugged into it, the
per-function analysis and helper summaries), `_run.py` (the per-file run and the cross-file
resolution of calls into helpers) and `checker.py` (the checker that reports every rule of the
family from one analysis per file).
"""
