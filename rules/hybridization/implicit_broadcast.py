"""MXL115 implicit-broadcast: finds `a + b`, `a * b`, `a > b`... (and `F.maximum`/`F.minimum`/
`F.power`) between tensors whose shapes provably differ, in MXNet 1.x `hybrid_forward`.

Which operators broadcast for NDArray and not for Symbol was observed by running MXNet
(`broadcasts` in `mxlint/knowledge/api.py`); the shapes are relative ranks (`_ranks.py`). Its
findings are reported by the family's checker (`_run.py`); its tests are the examples below (run
by `tests/test_rule_examples.py`), `tests/test_hybridization.py` and
`tests/snapshots/MXL115.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.hybridization._examples import _GUARDED, _L, _MX2, _PLAIN_BLOCK, _block

BROADCAST_ADVICE = (
    "`{code}` combines `{left}` and `{right}`, whose shapes differ ({why}): NDArray's `{op}` "
    "broadcasts, a 1.x Symbol's does not, so the hybridized block fails at its first call; "
    "use `{fixed}`"
)


class ImplicitBroadcast(Rule):
    code = "MXL115"
    name = "implicit-broadcast"
    runtime = Runtime("hybrid")
    message = (
        "Elementwise operator between tensors of different shapes in MXNet 1.x hybridized code"
    )
    fixable = "safe"
    mxnet = "1"
    what = """
        Finds `a + b`, `a - b`, `a * b`, `a / b`, `%`, `**`, comparisons, and `F.maximum`/
        `F.minimum`/`F.power`, between two tensors of an MXNet 1.x `hybrid_forward` whose
        shapes provably differ: one is derived from the other (or both from one input) through
        a reduction over literal axes (`F.mean(x, axis=1)` drops the axis;
        `keepdims=True` keeps it with size 1) or `expand_dims`, and elementwise operators.
    """
    why = """
        NDArray's arithmetic operators broadcast; a 1.x Symbol's `+`, `-`, `*`, `/` are
        `elemwise_*`, which require equal shapes. `x - F.mean(x, axis=1, keepdims=True)` works in
        every imperative test and, hybridized, fails at the first call with MXNet's
        `Incompatible attr in node ... expected [2,3], got [2,1]`. Shapes of inputs are unknown
        to a linter; only differences that hold for every input are reported.
    """
    example = """
        def hybrid_forward(self, F, x):
            return x - F.mean(x, axis=1, keepdims=True)
    """
    use_instead = """
        def hybrid_forward(self, F, x):
            return F.broadcast_sub(x, F.mean(x, axis=1, keepdims=True))
    """
    fix_safety = """
        Safe: `F.broadcast_sub(a, b)` computes what NDArray's `a - b` computes, for equal and
        for broadcastable shapes, in both modes.
    """
    invalid = (
        Example(
            _block("return x - F.mean(x, axis=1, keepdims=True)"),
            line=_L,
            expected_fix=_block("return F.broadcast_sub(x, F.mean(x, axis=1, keepdims=True))"),
        ),
        Example(
            _block("norm = F.sqrt(F.sum(F.square(x), axis=-1))\nreturn x / norm"),
            line=_L + 1,
            expected_fix=_block(
                "norm = F.sqrt(F.sum(F.square(x), axis=-1))\nreturn F.broadcast_div(x, norm)"
            ),
        ),
        Example(_block("peak = x.max(axis=1, keepdims=True)\nreturn x == peak"), line=_L + 1),
        Example(_block("m = F.mean(x, axis=0)\nreturn F.maximum(x, m)"), line=_L + 1),
    )
    valid = (
        _block("return F.broadcast_sub(x, F.mean(x, axis=1, keepdims=True))"),
        _block("return x - F.mean(x, axis=1, keepdims=True).broadcast_like(x)"),
        _block("y = F.relu(x) * 2\nreturn x + y"),
        _block("m = F.mean(x)\nreturn x - m", args="x"),
        _block("m = F.mean(x, axis=1)\nreturn m - F.mean(x, axis=1)"),
        _block("m = F.mean(x, axis=self.units)\nreturn x - m"),
        _block("x = F.mean(x, axis=1)\nreturn x - F.expand_dims(x, 1)"),
        _GUARDED.replace("print(y, y.shape, y.asnumpy())", "print(y - y.mean(axis=1))"),
        _PLAIN_BLOCK.replace("return x[0]", "return x - x.mean(axis=1), x[0]"),
        Valid(_MX2 + "        return x - x.mean(axis=1, keepdims=True)\n", mxnet="2"),
    )


def broadcast_message(code: str, left: str, right: str, why: str, op: str, fixed: str) -> str:
    return BROADCAST_ADVICE.format(code=code, left=left, right=right, why=why, op=op, fixed=fixed)
