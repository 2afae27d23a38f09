"""MXL111 one-namespace-function: finds `F.<name>(...)` in MXNet 1.x `hybrid_forward` (and the
helpers it calls with `F`) where only one of `mx.nd` and `mx.sym` has `<name>`.

The names each namespace has are MXNet's own (`mxlint/knowledge/api.py`, generated from MXNet by
`python -m mxlint.knowledge.generate`). Its findings are found by the family's one analysis per
file (`_analysis.py`, run by `checker.py`); its tests are the examples below (run by
`tests/test_rule_examples.py`), `tests/test_hybridization.py` and `tests/snapshots/MXL111.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.hybridization._examples import _GUARDED, _L, _MX2, _block

IMPERATIVE_ONLY = (
    "`{f}.{name}` exists only in `mx.nd`: once the block is hybridized `{f}` is `mx.sym`, "
    "which has no `{name}` (AttributeError); {advice}"
)
SYMBOLIC_ONLY = (
    "`{f}.{name}` exists only in `mx.sym`: until the block is hybridized (and whenever it is "
    "not) `{f}` is `mx.nd`, which has no `{name}` (AttributeError); {advice}"
)

#: `nd.<name>` -> the operator both namespaces have that computes the same (NDArray's
#: arithmetic functions broadcast, like Symbol's `broadcast_*`).
BROADCAST_TWINS = {
    "add": "broadcast_add",
    "subtract": "broadcast_sub",
    "multiply": "broadcast_mul",
    "divide": "broadcast_div",
    "true_divide": "broadcast_div",
    "modulo": "broadcast_mod",
    "equal": "broadcast_equal",
    "not_equal": "broadcast_not_equal",
    "greater": "broadcast_greater",
    "greater_equal": "broadcast_greater_equal",
    "lesser": "broadcast_lesser",
    "lesser_equal": "broadcast_lesser_equal",
    "logical_and": "broadcast_logical_and",
    "logical_or": "broadcast_logical_or",
    "logical_xor": "broadcast_logical_xor",
}
#: What to use for names with no same-meaning twin.
ADVICE = {
    "concatenate": "use `{f}.concat(*arrays, dim=axis)`",
    "moveaxis": "use `{f}.transpose(x, axes=...)` or `{f}.swapaxes`",
    "onehot_encode": "use `{f}.one_hot(indices, depth)`",
    "array": "create constants in `__init__` (`self.params.get_constant`) or from the input "
    "(`{f}.zeros_like(x)`)",
    "empty": "create the array from the input (`{f}.zeros_like(x)`)",
    "waitall": "drop it: a hybridized graph synchronises when its outputs are read",
    "pow": "use `{f}.power`",
    "hypot": "use `{f}.sqrt({f}.square(a) + {f}.square(b))`",
    "var": "declare inputs as parameters (`self.params.get`) and receive them as arguments",
    "Variable": "declare inputs as parameters (`self.params.get`) and receive them as arguments",
    "Group": "return a tuple of outputs",
}
GENERAL = "use an operator both namespaces have"
#: What to do when a helper called from a hybridized method does this, said at the call.
SITE_ADVICE = "use operators both `mx.nd` and `mx.sym` have"


def advice(name: str, f: str) -> str:
    if name in BROADCAST_TWINS:
        return f"use `{f}.{BROADCAST_TWINS[name]}`"
    return ADVICE.get(name, GENERAL).format(f=f)


class OneNamespaceFunction(Rule):
    code = "MXL111"
    name = "one-namespace-function"
    runtime = Runtime("hybrid")
    message = "`F.<name>` exists in only one of `mx.nd` and `mx.sym`; use an operator both have"
    fixable = "safe"
    mxnet = "1"
    what = """
        Finds `F.<name>(...)` in MXNet 1.x `hybrid_forward` (and the helpers it calls with `F`)
        where only one of `mx.nd` and `mx.sym` has `<name>`: `F.add`, `F.multiply`, `F.equal`,
        `F.array`, `F.concatenate`... exist only for NDArray; `F.pow`, `F.var`, `F.Group` only
        for Symbol. The names are MXNet 1.9.1's own, generated from the library.
    """
    why = """
        `F` is `mx.nd` when the block runs imperatively and `mx.sym` once it is hybridized. A
        name only one of them has works in one mode and raises `AttributeError: module
        'mxnet.symbol' has no attribute 'add'` in the other: the tests pass, the hybridized
        training job fails (or, for `F.pow`, the imperative one).
    """
    example = """
        def hybrid_forward(self, F, x, y):
            return F.add(x, y)
    """
    use_instead = """
        def hybrid_forward(self, F, x, y):
            return F.broadcast_add(x, y)
    """
    fix_safety = """
        `F.add`/`F.subtract`/`F.multiply`/`F.divide`/`F.equal`... become `F.broadcast_add`/
        `F.broadcast_sub`/...: NDArray's functions broadcast exactly like these. The fix is safe,
        and offered, when both arguments are tensors (the `broadcast_*` operators take no
        Python numbers: `F.add(x, 2)` should be `x + 2`). Other names get advice, no fix.
    """
    invalid = (
        Example(
            _block("return F.add(x, self.dense(x))"),
            line=_L,
            expected_fix=_block("return F.broadcast_add(x, self.dense(x))"),
        ),
        Example(_block("mask = F.equal(x, 0)\nreturn F.where(mask, x, x * 2)"), line=_L),
        Example(_block("return F.concatenate([x, x], axis=1)"), line=_L),
        Example(_block("return F.pow(x, 2)"), line=_L),
        Example(_block("return F.np.nonzero(x)"), line=_L),
        Example(
            _block("return helper(F, x)") + "\n\ndef helper(F, v):\n    return F.multiply(v, v)\n",
            line=_L,
        ),
    )
    valid = (
        _block("return F.broadcast_add(x, self.dense(x))"),
        _block("return F.concat(x, x, dim=1)"),
        _block("return F.power(x, 2)"),
        _GUARDED.replace("print(y, y.shape, y.asnumpy())", "print(F.array([1, 2]))"),
        _block("if F is nd:\n    return F.add(x, 1)\nreturn x + 1"),
        Valid(_MX2 + "        return np.add(x, self.dense(x))\n", mxnet="2"),
    )
