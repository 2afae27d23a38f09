"""MXL103 tensor-attribute: finds reads of `.shape`, `.dtype`, `.context`/`.ctx`, `.size`, `.ndim`
and `.stype` on tensors inside MXNet 1.x `hybrid_forward` and the helpers it calls with tensors.

Its findings are found by the family's one analysis per file (`_analysis.py`, run by
`checker.py`) and worded by the messages above the class; its tests
are the examples below (run by `tests/test_rule_examples.py`), `tests/test_hybridization.py` and
`tests/snapshots/MXL103.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.hybridization._examples import _GUARDED, _IMPORTS, _L, _MX2, _PLAIN_BLOCK, _block

#: The messages for a size attribute (`.shape`, `.size`...) and for `.context`/`.ctx`.
SHAPE_ADVICE = (
    "`{code}` reads `.{attr}`, which a Symbol lacks under hybridize() in MXNet "
    "1.x; pass the size as a constructor argument, or use shape-free operators "
    "(`reshape` with 0/-1, `F.broadcast_like`, `F.zeros_like`, `F.shape_array`)"
)
CTX_ADVICE = (
    "`{code}` reads `.{attr}`, which a Symbol lacks under hybridize() in MXNet "
    "1.x; create constants from the input instead (`F.zeros_like(x)`, "
    "`F.ones_like(x)`), which land on its context"
)


#: What to do when a helper called from a hybridized method does this, said at the call.
SITE_ADVICE = "pass sizes as constructor arguments or use shape-free operators"


class TensorAttribute(Rule):
    code = "MXL103"
    name = "tensor-attribute"
    runtime = Runtime("hybrid")
    message = (
        "`.shape`/`.dtype`/`.context` of a tensor in MXNet 1.x hybridized code; pass "
        "sizes as constructor arguments or use shape-free operators"
    )
    mxnet = "1"
    what = """
        Finds reads of `.shape`, `.dtype`, `.context`/`.ctx`, `.size`, `.ndim` and `.stype` on
        tensors inside MXNet 1.x `hybrid_forward` and the helpers it calls with tensors.
    """
    why = """
        A 1.x Symbol has none of these attributes: `x.shape[0]` raises `AttributeError` once
        the block is hybridized, though every imperative test passes. (MXNet 2's deferred
        compute knows shapes: the rule is 1.x only.)
    """
    example = """
        def hybrid_forward(self, F, x):
            return x.reshape((x.shape[0], -1))
    """
    use_instead = """
        def hybrid_forward(self, F, x):
            return x.reshape((0, -1))  # 0 keeps the dimension, -1 infers it
    """
    invalid = (
        Example(_block("batch = x.shape[0]\nreturn x.reshape((batch, -1))"), line=_L),
        Example(_block("y = self.dense(x)\nreturn F.cast(y, y.dtype)"), line=_L + 1),
        Example(_block("return F.zeros((2, 2), ctx=x.context)"), line=_L),
        Example(_block("q = F.relu(x)\nscale = q.shape[-1] ** 0.5\nreturn q / scale"), line=_L + 1),
        Example(
            _IMPORTS + "from .layers import Base\n\nclass Net(Base):\n"
            "    def hybrid_forward(self, F, x):\n        return x.reshape((x.ndim, -1))\n",
            line=8,
            project=(
                ("layers", "from mxnet.gluon import nn\n\nclass Base(nn.HybridBlock):\n    pass\n"),
            ),
        ),
    )
    valid = (
        _block("return x.reshape((0, -1))"),
        _block("n = F.shape_array(x)\nreturn F.broadcast_like(n, x)"),
        _GUARDED,
        _PLAIN_BLOCK,
        _block("size = self.units\nreturn x.reshape((size, -1))"),
        _block(
            "in_size = self.in_size if self.fixed_size else x.shape[2:]\n"
            "return F.contrib.BilinearResize2D(x, height=in_size[0], width=in_size[1])"
        ),
        _block(
            "out_size = self.calc_size(x) if size is None else size\n"
            "return F.contrib.BilinearResize2D(x, height=out_size[0], width=out_size[1])",
            args="x, size=None",
        )
        + "\n    def calc_size(self, x):\n"
        "        return x.shape[2] * 2, x.shape[3] * 2\n",
        Valid(_MX2 + "        return x.reshape((x.shape[0], -1))\n", mxnet="2"),
    )
