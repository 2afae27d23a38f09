"""MXL9xx: ONNX export with `mx.onnx.export_model` (MXNet 1.9.1's exporter).

The exporter converts a symbol graph node by node through converters registered per operator
and opset; the facts of which operators it converts, which ones make shapes dynamic, which
operators each `F.` spelling and Gluon layer puts in the graph, and the exporter's parameters
are generated from MXNet and onnx (`mxlint/knowledge/generate_onnx.py`). The rules judge only
blocks that provably reach an export: `_export.py` finds the export calls and the block each
one exports (a `net.export(prefix)` whose files are passed to `export_model`, or a symbol built
by calling the block on `mx.sym.var`), `_blocks.py` what a block's graph holds, and
`checker.py` joins them across the files of a run.
"""
