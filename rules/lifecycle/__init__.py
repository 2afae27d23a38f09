"""MXL7xx: calls made at the wrong point of a network's life (export, AMP initialisation).

Both rules were checked against MXNet 1.9.1: `HybridBlock.export` raises "Please first call
block.hybridize() and then run forward with this block at least once before calling export"
unless a forward pass ran *after* the last `hybridize()` (a SymbolBlock loaded from a file
exports without one); and a network that was hybridized and run before `amp.init()` keeps its
float32 cached graph (AMP silently does nothing for it), which is why MXNet's documentation
asks for `amp.init()` before the model is created.

One file per rule: the rule's class and the function that decides and words its findings.
`checker.py` holds the one checker that follows a script in execution order (`mxlint/flow.py`)
for both rules; `_analysis.py` the state of each network it follows.
"""
