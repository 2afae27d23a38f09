"""MXL103 tensor-attribute: finds NDArray members a 1.x Symbol lacks or only raises on (`.shape`,
`.dtype`, `.context`, `.T`, `.grad`, `.detach()`, `.copyto()`...) used on tensors inside MXNet 1.x
`hybrid_forward` and the helpers it calls with tensors. The members are MXNet's own
(`mxlint/knowledge/api.py`, generated from MXNet).

Its findings are found by the family's one analysis per file (`_analysis.py`, run by
`checker.py`) and worded by the messages above the class; its tests
are the examples below (run by `tests/test_rule_examples.py`), `tests/test_hybridization.py` and
`tests/snapshots/MXL103.txt`.
"""

from __future__ import annotations

from mxlint import knowledge
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

#: What to use instead of an NDArray-only member in hybridized code (any member NDArray has and
#: Symbol lacks is reported; those not named here get the general advice).
ALTERNATIVES = {
    "T": "use `F.transpose(x)`",
    "grad": "gradients are read after `backward()`, outside the forward pass",
    "copyto": "a hybridized graph runs on its inputs' context: drop the copy",
    "as_in_context": "a hybridized graph runs on its inputs' context: drop the move",
    "detach": "use `F.stop_gradient(x)`",
    "wait_to_read": "drop it: the graph synchronises when its outputs are read",
    "attach_grad": "attach gradients outside the forward pass",
    "backward": "call `backward()` on the loss outside the forward pass",
    "tostype": "use `F.cast_storage(x, stype)`",
}
MEMBER_ADVICE = (
    "`{code}` uses `.{attr}`, which NDArray has and a Symbol lacks (or only raises on) in "
    "MXNet 1.x: it fails under hybridize(); {alternative}"
)
_GENERAL = "compute it with `F.*` operators on the tensor instead"


def member_advice(attr: str, code: str) -> str:
    """The message for one NDArray-only member, with what to use instead."""
    if attr in ("context", "ctx"):
        return CTX_ADVICE.format(attr=attr, code=code)
    if attr in knowledge.SIZE_ATTRIBUTES:
        return SHAPE_ADVICE.format(attr=attr, code=code)
    return MEMBER_ADVICE.format(code=code, attr=attr, alternative=ALTERNATIVES.get(attr, _GENERAL))


#: What to do when a helper called from a hybridized method does this, said at the call.
SITE_ADVICE = (
    "pass sizes as constructor arguments and use `F.*` operators instead of NDArray-only members"
)


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
        Finds the NDArray members a 1.x Symbol lacks, or has only to raise
        `NotImplementedForSymbol`, used on tensors inside MXNet 1.x `hybrid_forward` and the
        helpers it calls with tensors: `.shape`, `.dtype`, `.context`/`.ctx`, `.size`, `.ndim`,
        `.stype`, `.T`, `.grad`, `.writable`, and the methods `.detach()`, `.copyto()`, `.as_in_context()`, `.wait_to_read()`, `.attach_grad()`, `.tostype()`...
        The list is MXNet 1.9.1's own, generated from NDArray and Symbol. (`.asnumpy()` and
        `.asscalar()` are MXL102.)
    """
    why = """
        A 1.x Symbol has none of these: `x.shape[0]` or `x.T` raises `AttributeError`, and
        `x.detach()` raises `NotImplementedForSymbol`, once the block is hybridized, though
        every imperative test passes. (MXNet 2's deferred compute knows shapes: the rule is
        1.x only.)
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
        Example(_block("return F.dot(x, x.T)"), line=_L),
        Example(_block("n = getattr(x, 'shape')[0]\nreturn x.reshape((n, -1))"), line=_L),
        Example(_block("y = self.dense(x)\nreturn y.detach()"), line=_L + 1),
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
        _block("return F.dot(x, F.transpose(x))"),
        _block("act = getattr(self, 'act', None)\nreturn act(x) if act else x"),
        _block("return F.stop_gradient(self.dense(x))"),
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
