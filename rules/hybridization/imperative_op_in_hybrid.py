"""MXL105 imperative-op-in-hybrid: finds calls of `nd.*`/`mx.nd.*` (and `mx.np`/`npx` in 1.x code)
inside `hybrid_forward` and the helpers it calls, and legacy `mx.nd.*` calls in an MXNet 2
HybridBlock `forward`.

Its findings are found by the family's one analysis per file (`_analysis.py`, run by
`checker.py`) and worded by the messages above the class; its tests
are the examples below (run by `tests/test_rule_examples.py`), `tests/test_hybridization.py` and
`tests/snapshots/MXL105.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.hybridization._examples import _GUARDED, _IMPORTS, _L, _MX2, _PLAIN_BLOCK, _block

#: The message in MXNet 1.x code, with the call as written and the `F.*` operator to use.
IMPERATIVE_ADVICE = (
    "`{call}(...)` runs imperatively: under hybridize() it receives Symbols and fails; "
    "use `{f}.{op}(...)`"
)
#: The message for an `nd` function `mx.sym` lacks (`nd.empty`): no `F.` spelling exists.
NO_TWIN_ADVICE = (
    "`{call}(...)` runs imperatively: under hybridize() it receives Symbols and fails; "
    "`mx.sym` has no `{op}`: compute it from the inputs with `{f}.` operators"
)
#: The message for an `nd` creator given only Python values (`nd.arange(n)`, `nd.zeros(shape)`):
#: it receives no Symbol, but what it builds is an NDArray the graph's Symbols cannot take.
CONSTANT_ADVICE = (
    "`{call}(...)` builds an NDArray: under hybridize() the Symbols it meets cannot be "
    "combined with it; use `{f}.{op}(...)`"
)
#: The same, for a creator `mx.sym` lacks (`nd.array`, `nd.empty`).
CONSTANT_NO_TWIN_ADVICE = (
    "`{call}(...)` builds an NDArray: under hybridize() the Symbols it meets cannot be "
    "combined with it, and `mx.sym` has no `{op}`: keep it as a constant parameter "
    "(`self.params.get_constant`) or compute it from the inputs with `{f}.` operators"
)
#: The message in MXNet 2 code (deferred compute), with the call and the operator.
LEGACY_ADVICE = (
    "`{call}` is a legacy imperative NDArray call: deferred compute does not trace it, so "
    "the hybridized graph loses it; use `np.{op}`/`npx.{op}`"
)

#: What to do when a helper called from a hybridized method does this, said at the call.
SITE_ADVICE = "pass `F` to the helper and call `F.*`"


class ImperativeOpInHybrid(Rule):
    code = "MXL105"
    name = "imperative-op-in-hybrid"
    runtime = Runtime("hybrid")
    message = "Imperative `nd.*` call in hybridized code; call `F.*` instead"
    fixable = "safe"
    what = """
        Finds calls of `nd.*`/`mx.nd.*` (and `mx.np`/`npx` in 1.x code) inside
        `hybrid_forward` and the helpers it calls, and legacy `mx.nd.*` calls in an MXNet 2
        HybridBlock `forward`.
    """
    why = """
        `nd.relu(x)` works while `F` is `mx.nd`; under `hybridize()` `x` is a Symbol and the
        NDArray function rejects it (or, for creators like `nd.zeros`, builds a constant that
        cannot be combined with Symbols). The `F` argument exists so that one body serves both
        modes.
    """
    example = """
        def hybrid_forward(self, F, x):
            return nd.relu(self.dense(x))
    """
    use_instead = """
        def hybrid_forward(self, F, x):
            return F.relu(self.dense(x))
    """
    fix_safety = """
        Replacing `nd.op` by `F.op` is safe for operators whose symbolic twin takes the same
        arguments (elementwise math, reductions, `reshape`, `concat`, layers' operators...).
        For other calls (creators such as `nd.zeros`, random samplers) the fix is unsafe: the
        symbolic version may need different arguments (no `ctx`, known shapes). Calls with
        `ctx=` and `nd.array(...)` get no fix. An import the fixes leave unused (`from mxnet
        import nd` once no `nd.` is left) is removed with them; one that was unused before, or
        that `__all__` or a package's `__init__.py` exports, stays.
    """
    invalid = (
        Example(
            _block("return nd.relu(self.dense(x))"),
            line=_L,
            # `nd` loses its last use and goes; `autograd` was unused before and stays.
            expected_fix=_block("return F.relu(self.dense(x))").replace(
                "from mxnet import nd, autograd", "from mxnet import autograd"
            ),
        ),
        Example(
            _block("return mx.nd.softmax(x, axis=-1)").replace(
                "from mxnet import nd", "import mxnet as mx\nfrom mxnet import nd"
            ),
            line=_L + 1,
            # `mx` loses its last use and goes; `nd` was unused before and stays.
            expected_fix=_block("return F.softmax(x, axis=-1)"),
        ),
        Example(_block("noise = nd.random.normal(shape=(2, 4))\nreturn x + noise"), line=_L),
        Example(_block("return x + nd.array([1, 2, 3, 4])"), line=_L),
        # The creator is reported; the operators on what it built receive no Symbol.
        Example(
            _block("ind = nd.arange(4)\nind = nd.tile(ind * 2, reps=(2,))\nreturn x + ind"),
            line=_L,
        ),
        Example(
            _block("return helper(x)") + "\n\ndef helper(v):\n    return nd.sigmoid(v)\n", line=_L
        ),
        Example(
            _MX2.replace("from mxnet import np, npx", "from mxnet import np, npx, nd")
            + "        return nd.relu(self.dense(x))\n",
            line=11,
            mxnet="2",
        ),
    )
    valid = (
        _block("return F.relu(x)"),
        _GUARDED.replace("print(y, y.shape, y.asnumpy())", "print(nd.relu(y))"),
        _IMPORTS + "def train_step(net, x):\n    return nd.relu(net(x))\n",
        _PLAIN_BLOCK.replace("return x[0]", "return nd.relu(x), x[0]"),
        _block("if isinstance(x, nd.NDArray):\n    x = nd.relu(x)\nreturn x"),
        Valid(_MX2 + "        return np.tanh(self.dense(x))\n", mxnet="2"),
    )
