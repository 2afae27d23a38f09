"""MXL112 reshape-varargs: finds `x.reshape(a, b, ...)` (the shape as separate arguments) on
tensors in MXNet 1.x `hybrid_forward` and the helpers it calls with tensors.

Which spellings each tensor type accepts was observed by running MXNet (`reshape_forms` in
`mxlint/knowledge/api.py`). Its findings are found by the family's one analysis per file
(`_analysis.py`); its tests are the examples below (run by `tests/test_rule_examples.py`),
`tests/test_hybridization.py` and `tests/snapshots/MXL112.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.hybridization._examples import _GUARDED, _L, _MX2, _PLAIN_BLOCK, _block

RESHAPE_ADVICE = (
    "`{code}` passes the shape as separate arguments: NDArray accepts that, a 1.x Symbol "
    "reads the second as `reverse` and fails under hybridize(); pass one tuple: `{fixed}`"
)
#: What to do when a helper called from a hybridized method does this, said at the call.
SITE_ADVICE = "pass reshape's shape as one tuple"


class ReshapeVarargs(Rule):
    code = "MXL112"
    name = "reshape-varargs"
    runtime = Runtime("hybrid")
    message = "`x.reshape(a, b)` in MXNet 1.x hybridized code; pass one tuple: `x.reshape((a, b))`"
    fixable = "safe"
    mxnet = "1"
    what = """
        Finds `x.reshape(a, b, ...)`, the shape spelt as separate arguments, on tensors in MXNet
        1.x `hybrid_forward` and the helpers it calls with tensors.
    """
    why = """
        `NDArray.reshape(*shape)` accepts the shape as separate arguments; `Symbol.reshape`
        passes them on positionally to the `Reshape` operator, whose second parameter is
        `reverse`: MXNet 1.9.1 raises `Invalid Parameter format for reverse expect boolean but
        value='2'` when the hybridized block is first called.
    """
    example = """
        def hybrid_forward(self, F, x):
            return x.reshape(0, -1)
    """
    use_instead = """
        def hybrid_forward(self, F, x):
            return x.reshape((0, -1))
    """
    fix_safety = """
        Safe: both NDArray and Symbol read one tuple as the shape, with the same special values
        (0, -1, -2, -3, -4); keyword arguments are kept.
    """
    invalid = (
        Example(
            _block("return x.reshape(0, -1)"),
            line=_L,
            expected_fix=_block("return x.reshape((0, -1))"),
        ),
        Example(
            _block("y = self.dense(x)\nreturn y.reshape(-1, self.units, reverse=True)"),
            line=_L + 1,
            expected_fix=_block(
                "y = self.dense(x)\nreturn y.reshape((-1, self.units), reverse=True)"
            ),
        ),
        Example(_block("return F.relu(x).reshape(2, 2, -1)"), line=_L),
    )
    valid = (
        _block("return x.reshape((0, -1))"),
        _block("return x.reshape(shape=(0, -1))"),
        _block("return x.reshape(-1)"),
        _block("return F.reshape(x, (0, -1))"),
        _GUARDED.replace("print(y, y.shape, y.asnumpy())", "print(y.reshape(2, -1))"),
        _PLAIN_BLOCK.replace("return x[0]", "return x.reshape(2, -1), x[0]"),
        Valid(_MX2 + "        return self.dense(x).reshape(2, -1)\n", mxnet="2"),
    )
