"""The hybridization checker (MXL1xx): code that breaks when a HybridBlock is hybridized.

`hybrid_forward(self, F, x)` runs twice in a model's life: imperatively with `F = mx.nd` (what
every unit test sees) and symbolically with `F = mx.sym` once `net.hybridize()` is called, when
`x` is a Symbol with no value, no shape and different indexing semantics. These rules find the
statements that only work in the first mode. The analysis lives in `_analysis.py` (hooks over
the taint interpreter of `_taint.py`) and `_run.py` (per-file run, helper summaries,
cross-file calls); the rules' classes are in their own files.
"""

from __future__ import annotations

from mxlint.rules.hybridization._run import HybridAnalysis
from mxlint.rules.hybridization.autograd_state_in_hybrid import AutogradStateInHybrid
from mxlint.rules.hybridization.imperative_op_in_hybrid import ImperativeOpInHybrid
from mxlint.rules.hybridization.inplace_op_in_hybrid import InplaceOpInHybrid
from mxlint.rules.hybridization.print_tensor_in_hybrid import PrintTensorInHybrid
from mxlint.rules.hybridization.tensor_as_sequence import TensorAsSequence
from mxlint.rules.hybridization.tensor_attribute import TensorAttribute
from mxlint.rules.hybridization.tensor_control_flow import TensorControlFlow
from mxlint.rules.hybridization.tensor_to_python import TensorToPython


class HybridizationChecker(HybridAnalysis):
    """Reports the hybridization family; the analysis is `HybridAnalysis`."""

    rules = (
        TensorControlFlow,
        TensorToPython,
        TensorAttribute,
        TensorAsSequence,
        ImperativeOpInHybrid,
        PrintTensorInHybrid,
        InplaceOpInHybrid,
        AutogradStateInHybrid,
    )
