"""MXL116 literal-for-array-argument: finds an MXNet operator call that passes a Python value
positionally where the operator takes an array: `F.concat(a, b, 1)`, `F.softmax(x, -1)`,
`nd.LeakyReLU(x, 'leaky')`, `F.where(mask, x, 0)`.

Which parameters take arrays is MXNet's own operator registry (`tensors` of the signatures in
`mxlint/knowledge/api.py`, generated from MXNet). The function after the class decides and
words its findings; `OperatorCallChecker` (`rules/hybridization/checker.py`) runs it on every
call. Its tests are the examples below (run by `tests/test_rule_examples.py`),
`tests/test_hybridization.py` and `tests/snapshots/MXL116.txt`.
"""

from __future__ import annotations

import libcst as cst

from mxlint.checker import FileContext, shortened
from mxlint.knowledge.api import api
from mxlint.names import dotted_name
from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.hybridization._examples import _IMPORTS, _L, _block

VARARGS_ADVICE = (
    "`{call}` passes `{value}` positionally, but every positional argument of `{op}` is an "
    "input array: MXNet raises `Positional arguments must have NDArray type` (Symbol: `must be "
    "Symbol instances`) in both modes; pass it by keyword{keyword}"
)
PARAM_ADVICE = (
    "`{call}` passes `{value}` positionally as `{param}`, an input array of `{op}`: MXNet "
    "raises `Argument {param} must have NDArray type` (Symbol: `must be Symbol instances`) in "
    "both modes; {advice}"
)
#: The keyword meant by the trailing number of the varargs operators people call most.
_VARARGS_KEYWORDS = {"concat": "dim", "Concat": "dim", "stack": "axis"}


class LiteralForArrayArgument(Rule):
    code = "MXL116"
    name = "literal-for-array-argument"
    runtime = Runtime("raise", loud=True, error=r"must have NDArray type|must be Symbol instances")
    message = "A Python value passed positionally where an MXNet operator takes an array"
    what = """
        Finds calls of MXNet operators (`F.<op>` in a `hybrid_forward` or a helper taking `F`,
        `mx.nd.<op>`, `mx.sym.<op>` anywhere) that pass a Python number, string or boolean
        positionally where the operator takes an input array: the trailing `1` of
        `F.concat(a, b, 1)` (every positional argument of `concat`/`stack`/`add_n` is an array),
        `F.softmax(x, -1)` (softmax's second parameter is the `length` array), `F.where(mask,
        x, 0)`, `F.LeakyReLU(x, 'leaky')` (`gamma`).
    """
    why = """
        MXNet's generated operator functions bind positional arguments in the order of the
        operator's inputs, so the Python value lands in an array parameter and the call raises
        `TypeError: Argument length must have NDArray type, but got -1` — imperatively and
        hybridized alike, usually far from where the model was written (the first batch of a
        long job). Which parameters take arrays is read from MXNet's operator registry.
    """
    example = """
        def hybrid_forward(self, F, a, b):
            return F.softmax(F.concat(a, b, 1), -1)
    """
    use_instead = """
        def hybrid_forward(self, F, a, b):
            return F.softmax(F.concat(a, b, dim=1), axis=-1)
    """
    invalid = (
        Example(_block("return F.concat(x, self.dense(x), 1)"), line=_L),
        Example(_block("return F.softmax(self.dense(x), -1)"), line=_L),
        Example(_block("return F.where(x > 0, x, 0)"), line=_L),
        Example(
            _IMPORTS + "import mxnet as mx\n\nprobs = mx.nd.softmax(mx.nd.ones((2, 3)), 1)\n",
            line=6,
        ),
    )
    valid = (
        _block("return F.concat(x, self.dense(x), dim=1)"),
        _block("return F.softmax(self.dense(x), axis=-1)"),
        _block("return F.where(x > 0, x, F.zeros_like(x))"),
        _block("return F.sum(x, 1) + F.clip(x, 0, 1).sum()"),
        _block("return F.reshape(x, (0, -1))"),
        _IMPORTS + "import mxnet as mx\n\nx = mx.nd.zeros((2, 3), mx.cpu())\n",
        _IMPORTS + "def concat(a, b, dim):\n    return a\n\nconcat(1, 2, 3)\n",
        Valid(
            "from mxnet import np, npx\n\ny = np.concatenate([np.ones(2), np.ones(2)], 0)\n",
            mxnet="2",
        ),
    )


def has_positional_literal(call: cst.Call) -> bool:
    return any(_literal(a.value) for a in call.args if a.keyword is None and not a.star)


def _literal(node: cst.BaseExpression) -> bool:
    if type(node) in (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString):
        return True
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus:
        return type(node.expression) in (cst.Integer, cst.Float)
    return type(node) is cst.Name and node.value in ("True", "False")


def operator_key(ctx: FileContext, call: cst.Call, f_names: frozenset[str]) -> str | None:
    """`nd.concat` for `F.concat(...)` (F a parameter of the enclosing hybridized function or
    helper), `mx.nd.concat(...)` and `mx.sym.concat(...)`: the key of the generated
    signatures."""
    func = call.func
    if type(func) is not cst.Attribute:
        return None
    dotted = dotted_name(func)
    if dotted is None:
        return None
    root, _, rest = dotted.partition(".")
    if root in f_names:
        return f"nd.{rest}"
    name = ctx.resolve(func)
    if name is None or not name.startswith(("mxnet.nd.", "mxnet.sym.")):
        return None
    return name[len("mxnet.") :]


def check_call(ctx: FileContext, call: cst.Call, key: str) -> None:
    """Report the first positional Python value that lands on an array parameter."""
    sig = api().signatures.get(key)
    if sig is None or not sig.tensors:
        return
    op = key.rsplit(".", 1)[-1]
    for index, arg in enumerate(call.args):
        if arg.star or arg.keyword is not None:
            break
        if not _literal(arg.value):
            continue
        value = ctx.code(arg.value)
        spelled = shortened(ctx.code(call), 50)
        if sig.varargs:
            keyword = _VARARGS_KEYWORDS.get(op)
            message = VARARGS_ADVICE.format(
                call=spelled,
                value=value,
                op=op,
                keyword=f" (`{keyword}={value}`)" if keyword else "",
            )
        elif index < len(sig.params) and sig.params[index] in sig.tensors:
            param = sig.params[index]
            meant = next((p for p in sig.params[index:] if p not in sig.tensors), None)
            advice = (
                f"pass it by keyword (`{meant}={value}`?)"
                if meant is not None
                else "pass an array built from an input (`F.zeros_like(x) + value`)"
            )
            message = PARAM_ADVICE.format(
                call=spelled, value=value, param=param, op=op, advice=advice
            )
        else:
            continue
        ctx.report(arg, LiteralForArrayArgument, message)
        return
