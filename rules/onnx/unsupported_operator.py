"""MXL901 onnx-unsupported-operator: checks operators without a converter in MXNet 1.9.1's ONNX
exporter, put in the graph of a block that the code exports with `mx.onnx.export_model`.

The function after the class decides and words its findings; the family's checker
(`rules/onnx/checker.py`) finds the exported blocks and runs it. Its tests are the examples
below (run by `tests/test_rule_examples.py`), `tests/test_onnx.py` and
`tests/snapshots/MXL901.txt`.
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

_MODELS = """from mxnet import gluon


class Head(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.dense = gluon.nn.Dense(4)

    def hybrid_forward(self, F, x):
        return F.cosh(self.dense(x))
"""
_EXPORT = """import mxnet as mx
import numpy as np
from models import Head

net = Head()
net.initialize()
sym = net(mx.sym.var("data"))
params = {k: v.data() for k, v in net.collect_params().items()}
mx.onnx.export_model(sym, params, [(1, 4)], np.float32, "head.onnx")
"""


class UnsupportedOnnxOperator(Rule):
    code = "MXL901"
    name = "onnx-unsupported-operator"
    mxnet = "1"
    runtime = Runtime("onnx", loud=True, error=r"No conversion function registered")
    message = (
        "`{spelled}` puts operator `{op}` in the graph of {block}, exported to ONNX at "
        "{where}: MXNet 1.9.1's exporter has no converter for `{op}`{opset} and raises "
        '"No conversion function registered for op type {op} yet."; compute it with '
        "operators the exporter converts (`mx.onnx.get_operator_support()` lists them), or "
        "keep it out of the exported block"
    )
    what = """
        Checks operators without a converter in MXNet 1.9.1's ONNX exporter, put in the graph
        of a block that the code exports with `mx.onnx.export_model`: an `F.<op>` call of its
        `hybrid_forward` (or of a child block it calls), or a Gluon layer it holds
        (`nn.GroupNorm`, `contrib.nn.SyncBatchNorm`, deformable convolutions).
    """
    why = """
        `mx.onnx.export_model` converts the exported symbol node by node, through converters
        registered per operator name and ONNX opset; a node whose operator has none raises
        `AttributeError: No conversion function registered for op type X yet.` and no model
        is written. The table of converters is generated from MXNet 1.9.1's own registry
        (`mxlint/knowledge/generate_onnx.py`), and each spelling is mapped to the operator
        the graph node records (`F.split` is `SliceChannel`, `F.identity` is `_copy`). With
        an explicit opset the lookup falls back as the exporter's does (an opset below 12 is
        read as 12). Only blocks that provably reach an export are judged (a `net.export`
        whose files go to `export_model`, or a symbol made by calling the block), and only
        operator calls that run whatever the input is (not under `if`, `while` or `try`).
    """
    example = """
        class Head(gluon.HybridBlock):
            def hybrid_forward(self, F, x):
                return F.cosh(x)

        net = Head()
        net.initialize()
        net.hybridize()
        net(mx.nd.ones((1, 4)))
        net.export("head")
        mx.onnx.export_model("head-symbol.json", "head-0000.params", [(1, 4)], np.float32)
    """
    use_instead = """
        class Head(gluon.HybridBlock):
            def hybrid_forward(self, F, x):
                return (F.exp(x) + F.exp(-x)) / 2
    """
    invalid = (
        Example(
            """import mxnet as mx
import numpy as np
from mxnet import gluon


class Head(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.broadcast_maximum(x, F.zeros_like(x))


net = Head()
net.initialize()
net.hybridize()
net(mx.nd.ones((1, 4)))
net.export("head")
mx.onnx.export_model("head-symbol.json", "head-0000.params", [(1, 4)], np.float32, "head.onnx")
""",
            line=8,
        ),
        Example(
            """import mxnet as mx
import numpy as np
from mxnet import gluon

net = gluon.nn.HybridSequential()
net.add(gluon.nn.Dense(8), gluon.nn.GroupNorm())
net.initialize()
net.hybridize()
net(mx.nd.ones((2, 4)))
prefix = "model"
net.export(prefix, epoch=0)
mx.onnx.export_model(prefix + "-symbol.json", prefix + "-0000.params", [(2, 4)], np.float32)
""",
            line=6,
        ),
        # The block is defined in one file and exported in another.
        Example(_MODELS, line=11, filename="models.py", project=(("export", _EXPORT),)),
    )
    valid = (
        # F.where, F.relu, F.concat: converted.
        """import mxnet as mx
import numpy as np
from mxnet import gluon


class Head(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.concat(F.where(x > 0, x, F.zeros_like(x)), F.relu(x), dim=1)


net = Head()
net.initialize()
net.hybridize()
net(mx.nd.ones((1, 4)))
net.export("head")
mx.onnx.export_model("head-symbol.json", "head-0000.params", [(1, 4)], np.float32)
""",
        # Never exported to ONNX.
        """from mxnet import gluon


class Head(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.cosh(x)
""",
        # The exported file is another network's.
        """import mxnet as mx
import numpy as np
from mxnet import gluon


class Head(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.cosh(x)


head = Head()
body = gluon.nn.Dense(4)
head.export("head")
body.export("body")
mx.onnx.export_model("body-symbol.json", "body-0000.params", [(1, 4)], np.float32)
""",
        # Under a condition: the operator may not be in the exported graph.
        """import mxnet as mx
import numpy as np
from mxnet import gluon


class Head(gluon.HybridBlock):
    def __init__(self, smooth=False, **kwargs):
        super().__init__(**kwargs)
        self.smooth = smooth

    def hybrid_forward(self, F, x):
        if self.smooth:
            x = F.cosh(x)
        return x


net = Head()
net.export("head")
mx.onnx.export_model("head-symbol.json", "head-0000.params", [(1, 4)], np.float32)
""",
    )


def decide(site: ExportSite, uses: list[tuple[Use, str, str]]) -> list[Finding]:
    facts = onnx_facts()
    out = []
    for use, path, holder in uses:
        path = path or site.path
        if any(op in facts.dynamic for op in use.ops):
            continue  # MXL902's
        missing = facts.unconverted(use.ops, site.opset)
        if not missing:
            continue
        block = site.block.text if site.block is not None else "the block"
        message = UnsupportedOnnxOperator.format(
            spelled=use.spelled,
            op=missing[0],
            block=block,
            where=where(site, path),
            opset=f" at opset {site.opset}" if site.opset is not None else "",
        )
        data = use_data(site, use, holder)
        out.append(finding(UnsupportedOnnxOperator, message, path, use.span, use.symbol, data))
    return out
