"""MXL505 onnx-breaks-mxnet-export: checks for `onnx` required without an upper bound below 1.19
(unpinned, `onnx>=1.10`, `onnx==1.19.0`) in a dependency set that also installs MXNet.

Its findings are decided by the cap check it shares with the other release cap
(`check_cap` in `rules/versions/_releases.py`), per dependency set; its tests are the
examples below (run by `tests/test_rule_examples.py`), `tests/test_versions.py` and
`tests/snapshots/MXL505.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mxlint.rule import Example, Rule, Valid

if TYPE_CHECKING:
    pass
from mxlint.rules.versions._docs import _NOT_FLAKE8


class OnnxBreaksMxnetExport(Rule):
    code = "MXL505"
    name = "onnx-breaks-mxnet-export"
    message = (
        "`{text}` admits onnx 1.19+, which removed `onnx.mapping` that MXNet's ONNX "
        "exporter imports: add `onnx<1.19`"
    )
    kind = "requirements"
    what = (
        """
        Checks for `onnx` required without an upper bound below 1.19 (unpinned, `onnx>=1.10`,
        `onnx==1.19.0`) in a dependency set that also installs MXNet.
    """
        + _NOT_FLAKE8
    )
    why = """
        MXNet 1.9.1's exporter (`mx.onnx.export_model`) runs `from onnx import helper,
        mapping, shape_inference`. onnx 1.19.0 removed the long-deprecated `onnx.mapping`
        module, and the import failure is re-raised as the misleading `ImportError: Onnx and
        protobuf need to be installed`. Checked on MXNet 1.9.1: export works with onnx 1.14.1
        through 1.18.0 (with a DeprecationWarning) and fails with 1.19.0. The threshold is
        1.19 — not the 1.15/1.16 sometimes quoted for the removal.
    """
    example = """
        # requirements.txt
        mxnet==1.9.1
        numpy<1.24
        onnx>=1.10
    """
    use_instead = """
        # requirements.txt
        mxnet==1.9.1
        numpy<1.24
        onnx>=1.10,<1.19
    """
    invalid = (
        Example("mxnet==1.9.1\nnumpy<1.24\nonnx\n", line=3, filename="requirements.txt"),
        Example("mxnet==1.9.1\nnumpy<1.24\nonnx==1.19.0\n", line=3, filename="requirements.txt"),
        Example(
            "FROM python:3.8\nRUN pip install mxnet==1.9.1 'numpy<1.24' onnx>=1.10\n",
            line=2,
            filename="Dockerfile",
        ),
    )
    valid = (
        Valid("mxnet==1.9.1\nnumpy<1.24\nonnx==1.14.1\n", filename="requirements.txt"),
        Valid("mxnet==1.9.1\nnumpy<1.24\nonnx>=1.10,<1.19\n", filename="requirements.txt"),
        Valid("torch==2.1.0\nonnx>=1.15\n", filename="requirements.txt"),
    )
