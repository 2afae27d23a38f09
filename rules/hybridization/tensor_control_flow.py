"""MXL101 tensor-control-flow: finds `if`, `while`, conditional expressions, `assert` and
`and`/`or`/`not` whose condition is a tensor value inside `hybrid_forward` (MXNet 1.x),
HybridBlock `forward` (MXNet 2), or a helper they call with tensors.

Its findings are found by the family's one analysis per file (`_analysis.py`, run by
`checker.py`) and worded by the messages above the class; its tests
are the examples below (run by `tests/test_rule_examples.py`), `tests/test_hybridization.py` and
`tests/snapshots/MXL101.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.hybridization._examples import _GUARDED, _L, _MX2, _PLAIN_BLOCK, _block

#: The message, with the condition as written (`{code}`).
CONTROL_ADVICE = (
    "Python control flow on the tensor value `{code}`: under hybridize() it is a "
    "Symbol with no value, so the branch fails or is frozen; compute both sides "
    "and select with `F.where(cond, a, b)`"
)


#: What to do when a helper called from a hybridized method does this, said at the call.
SITE_ADVICE = "branch on values with `F.where` instead"


class TensorControlFlow(Rule):
    code = "MXL101"
    name = "tensor-control-flow"
    runtime = Runtime("hybrid")
    message = (
        "Python control flow on a tensor value in hybridized code; select with "
        "`F.where(cond, a, b)` instead"
    )
    what = """
        Finds `if`, `while`, conditional expressions, `assert` and `and`/`or`/`not` whose
        condition is a tensor value inside `hybrid_forward` (MXNet 1.x), HybridBlock
        `forward` (MXNet 2), or a helper they call with tensors.
    """
    why = """
        Under `hybridize()` the tensor is a Symbol (or a deferred-compute array): it has no
        value when the graph is built, so `bool()` raises `NotImplementedForSymbol`, or, where
        it is evaluated once, the branch taken on the first batch is frozen into the graph.
        The block passes every imperative test and breaks only once hybridized.
    """
    example = """
        def hybrid_forward(self, F, x):
            if x.sum() > 0:
                x = F.relu(x)
            return x
    """
    use_instead = """
        def hybrid_forward(self, F, x):
            return F.where(x.sum() > 0, F.relu(x), x)
    """
    invalid = (
        Example(_block("y = self.dense(x)\nif y.sum() > 0:\n    y = y * 2\nreturn y"), line=_L + 1),
        Example(_block("while F.norm(x) > 1:\n    x = x / 2\nreturn x"), line=_L),
        Example(_block("return x if x.max() > 0 else -x"), line=_L),
        Example(_block("assert x.min() >= 0\nreturn F.sqrt(x)"), line=_L),
        Example(_block("y = F.relu(x)\nz = y > 0 and self.units\nreturn z"), line=_L + 1),
        Example(
            _block(
                "if mask is not None and mask.sum() > 0:\n    x = x * mask\nreturn x",
                args="x, mask=None",
            ),
            line=_L,
        ),
        Example(
            _block("x = clip(F, x)\nreturn x") + "\n\ndef clip(F, x):\n"
            "    if x.max() > 1:\n        return x / x.max()\n    return x\n",
            line=_L,
        ),
        Example(
            _MX2 + "        y = self.dense(x)\n        if y.sum() > 0:\n"
            "            y = -y\n        return y\n",
            line=12,
            mxnet="2",
        ),
    )
    valid = (
        _block("if self.units > 2:\n    x = self.dense(x)\nreturn x"),
        _block(
            "if mask is None:\n    return self.dense(x)\nreturn self.dense(x) * mask",
            args="x, mask=None",
        ),
        _block(
            "if mask is not None:\n    x = F.broadcast_mul(x, mask)\nreturn x", args="x, mask=None"
        ),
        _block("if isinstance(x, (list, tuple)):\n    x = F.concat(*x)\nreturn x"),
        _block("for i in range(self.units):\n    x = self.dense(x)\nreturn x"),
        _block("return F.where(x > 0, x, F.zeros_like(x))"),
        _block("y = F.contrib.cond(x.sum() > 0, lambda: x, lambda: -x)\nreturn y"),
        _block("x = F.relu(x)\nx = 3\nif x > 2:\n    pass\nreturn x"),
        _GUARDED,
        _block(
            "y = self.dense(x)\nif isinstance(y, nd.NDArray):\n    assert y.sum() > 0\nreturn y"
        ),
        _block("if F is not nd:\n    return x\nif x.sum() > 0:\n    x = -x\nreturn x"),
        _PLAIN_BLOCK,
        Valid(
            _MX2 + "        if self.dense is not None:\n            x = self.dense(x)\n"
            "        return x\n",
            mxnet="2",
        ),
        "from mxnet.gluon import nn\n\nclass Net(nn.Block):\n"
        "    def hybrid_forward(self, F, x):\n        if x.sum() > 0:\n            x = -x\n"
        "        return x\n",
    )
