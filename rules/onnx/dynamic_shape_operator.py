"""MXL902 onnx-dynamic-shape-operator: checks control flow (`F.contrib.foreach`, `while_loop`,
`cond`) and operators whose output shape depends on the data (`F.contrib.boolean_mask`) in the
graph of a block that the code exports with `mx.onnx.export_model`.

The function after the class decides and words its findings; the family's checker
(`rules/onnx/checker.py`) finds the exported blocks and runs it. Its tests are the examples
below (run by `tests/test_rule_examples.py`), `tests/test_onnx.py` and
`tests/snapshots/MXL902.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mxlint.knowledge.onnx import onnx_facts
from mxlint.rule import Example, Rule, Runtime
from mxlint.rules.onnx._report import finding, use_data, where

if TYPE_CHECKING:
    from mxlint.rule import Finding
    from mxlint.rules.onnx._blocks import Use
    from mxlint.rules.onnx._export import ExportSite

_KINDS = {
    "control-flow": (
        "is a control-flow operator (its loop or branches are subgraphs run for the data's values)"
    ),
    "data-dependent-shape": "gives an output whose shape depends on the input's values",
}


class DynamicShapeOperator(Rule):
    code = "MXL902"
    name = "onnx-dynamic-shape-operator"
    mxnet = "1"
    runtime = Runtime("onnx", loud=True)
    message = (
        "`{spelled}` puts `{op}` in the graph of {block}, exported to ONNX at {where}: "
        "`{op}` {kind}, which MXNet 1.9.1's exporter can neither infer shapes for nor "
        "convert; {advice}"
    )
    what = """
        Checks control flow (`F.contrib.foreach`, `while_loop`, `cond`) and operators whose
        output shape depends on the data (`F.contrib.boolean_mask`) in the graph of a block
        that the code exports with `mx.onnx.export_model`.
    """
    why = """
        The exporter first infers every output shape of the symbol from the input shapes it
        is given, then converts node by node. An operator whose output shape depends on the
        values (`boolean_mask` keeps as many rows as the mask has ones) leaves the shape
        unknown and the export fails in `infer_shape`; the control-flow operators hold
        subgraphs and have no converter. Both are observed on MXNet 1.9.1 when the facts are
        generated (`mxlint/knowledge/generate_onnx.py`). Only blocks that provably reach an
        export are judged, and only calls that run whatever the input is.
    """
    example = """
        class Keep(gluon.HybridBlock):
            def hybrid_forward(self, F, x, mask):
                return F.contrib.boolean_mask(x, mask)
    """
    use_instead = """
        class Keep(gluon.HybridBlock):
            def hybrid_forward(self, F, x, mask):
                # a fixed-shape output: zero the rows instead of dropping them
                return F.broadcast_mul(x, F.expand_dims(mask, axis=1))
    """
    invalid = (
        Example(
            """import mxnet as mx
import numpy as np
from mxnet import gluon


class Keep(gluon.HybridBlock):
    def hybrid_forward(self, F, x, mask):
        return F.contrib.boolean_mask(x, mask)


net = Keep()
net.hybridize()
net(mx.nd.ones((4, 3)), mx.nd.ones((4,)))
net.export("keep")
mx.onnx.export_model("keep-symbol.json", "keep-0000.params", [(4, 3), (4,)], [np.float32] * 2)
""",
            line=8,
        ),
        Example(
            """import mxnet as mx
import numpy as np
from mxnet import gluon


class Scan(gluon.HybridBlock):
    def hybrid_forward(self, F, x, state):
        out, _ = F.contrib.foreach(lambda d, s: (d + s[0], s), x, [state])
        return out


net = Scan()
sym = net(mx.sym.var("x"), mx.sym.var("state"))
mx.onnx.export_model(sym, {}, [(5, 2, 3), (2, 3)], np.float32, "scan.onnx", dynamic=True)
""",
            line=8,
        ),
    )
    valid = (
        # A fixed-shape masking.
        """import mxnet as mx
import numpy as np
from mxnet import gluon


class Keep(gluon.HybridBlock):
    def hybrid_forward(self, F, x, mask):
        return F.broadcast_mul(x, F.expand_dims(mask, axis=1))


net = Keep()
net.export("keep")
mx.onnx.export_model("keep-symbol.json", "keep-0000.params", [(4, 3), (4,)], np.float32)
""",
        # Not exported to ONNX (hybridized and saved for MXNet only).
        """from mxnet import gluon


class Keep(gluon.HybridBlock):
    def hybrid_forward(self, F, x, mask):
        return F.contrib.boolean_mask(x, mask)


net = Keep()
net.hybridize()
net.export("keep")
""",
    )


def decide(site: ExportSite, uses: list[tuple[Use, str, str]]) -> list[Finding]:
    facts = onnx_facts()
    out = []
    for use, path, holder in uses:
        path = path or site.path
        dynamic = [op for op in use.ops if op in facts.dynamic]
        if not dynamic:
            continue
        op = dynamic[0]
        kind = facts.dynamic[op]
        advice = (
            "unroll the loop over a fixed length, or run the control flow outside the "
            "exported block"
            if kind == "control-flow"
            else "keep the output shape fixed (mask by multiplying instead of dropping "
            "rows), or do the selection after the exported model"
        )
        message = DynamicShapeOperator.format(
            spelled=use.spelled,
            op=op,
            block=site.block.text if site.block is not None else "the block",
            where=where(site, path),
            kind=_KINDS[kind],
            advice=advice,
        )
        data = use_data(site, use, holder)
        out.append(finding(DynamicShapeOperator, message, path, use.span, use.symbol, data))
    return out
