"""The ONNX checker (MXL9xx): reads each file's HybridBlock classes and its `export_model` calls
(`_graphs.py`, loaded only for a file that exports or runs a model, and for the run's end when
one does), keeps them as the file's facts, and, once every file is known, follows each export
to the classes and layers of the exported block (in any file of the run) and runs the rules'
decisions on them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mxlint.checker import Checker
from mxlint.rules.onnx.dynamic_shape_operator import DynamicShapeOperator
from mxlint.rules.onnx.export_input_mismatch import ExportInputMismatch
from mxlint.rules.onnx.export_unknown_keyword import ExportUnknownKeyword
from mxlint.rules.onnx.fixed_batch_export import FixedBatchExport
from mxlint.rules.onnx.unsupported_operator import UnsupportedOnnxOperator

if TYPE_CHECKING:
    from mxlint.project import ProjectIndex
    from mxlint.rule import Finding

NAME = "onnx"


class OnnxChecker(Checker):
    rules = (
        UnsupportedOnnxOperator,
        DynamicShapeOperator,
        ExportInputMismatch,
        FixedBatchExport,
        ExportUnknownKeyword,
    )
    name = NAME
    cross_file = True

    def end(self) -> None:
        # Only a file that calls export_model is read now (its classes and its exports); the
        # classes of other files are read when an export reaches them (`Graphs`), so that a
        # run without exports pays nothing for them. A file running ONNX models is read for
        # what it feeds them.
        if "export_model" not in self.ctx.source and "InferenceSession" not in self.ctx.source:
            return
        from mxlint.rules.onnx._graphs import read_file

        facts = read_file(self.ctx, exports=True)
        if facts is not None:
            self.ctx.facts.checker_facts[NAME] = facts

    @classmethod
    def finalize(cls, project: ProjectIndex) -> list[Finding]:
        if not project.checker_facts(NAME):
            return []
        from mxlint.rules.onnx._graphs import findings

        return findings(project)
