"""MXL114 non-tensor-output: finds a hybridized forward pass that returns something other than
tensors and (nested) lists or tuples of them: a dict, a number, a string, a dataclass or
namedtuple instance, or (MXNet 1.x) `None` among the outputs.

Its findings are found by the family's one analysis per file (`_analysis.py`, deciding through
`_outputs.py`, run by `checker.py`) and worded by the messages above the class; its tests are
the examples below (run by `tests/test_rule_examples.py`), `tests/test_hybridization.py` and
`tests/snapshots/MXL114.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime
from mxlint.rules.hybridization._examples import _IMPORTS, _L, _MX2, _PLAIN_BLOCK, _block

#: The message, with the `return` statement (`{code}`), what it returns that is not a tensor,
#: MXNet's error and the advice.
OUTPUT_ADVICE = (
    "`{code}` returns {what} as an output of a hybridized forward: MXNet takes only tensors "
    "and (nested) lists or tuples of them, and raises at the first hybridized call "
    "(`{error}`); {advice}"
)
#: The message for a namedtuple, with the `return` statement (`{code}`).
NAMEDTUPLE_ADVICE = (
    "`{code}` returns a namedtuple from a hybridized forward: hybridized, MXNet returns its "
    "tensors as a plain list, so reading its fields by name raises AttributeError; return a "
    "plain tuple and build the namedtuple in the caller"
)
#: What MXNet 1.9.1 raises for a value that is neither a tensor nor a list or tuple.
VALUE_ERROR = (
    "ValueError: When hybridized, the input of HybridBlock output must be (nested) list of "
    "Symbol or NDArray"
)
#: What MXNet 1.9.1 raises for `None` among the outputs.
NONE_ERROR = "TypeError: Expected a list of symbols as input"
#: What to do, by what the value is.
ADVICE = {
    "a dict": "return a tuple of tensors and build the dict in the caller",
    "a number": "return it as a tensor (`F.ones_like(x) * v`) or keep it out of the outputs",
    "a bool": "keep it out of the outputs (a constructor argument the caller can read)",
    "a string": "keep it out of the outputs (a constructor argument the caller can read)",
    "a dataclass instance": "return a tuple of its tensors and build the instance in the caller",
    "None": "return only the outputs that exist, or a placeholder tensor (`F.zeros_like(x)`)",
}


class NonTensorOutput(Rule):
    code = "MXL114"
    name = "non-tensor-output"
    runtime = Runtime(
        "hybrid",
        loud=True,
        error=r"output must be \(nested\) list|list of symbols",
        shows=("structure",),
    )
    message = (
        "A hybridized forward returns something other than tensors and lists or tuples of "
        "them; return a tuple of tensors"
    )
    what = """
        Finds a hybridized forward pass (`hybrid_forward`, or an MXNet 2 HybridBlock's
        `forward`) that returns something other than tensors and (nested) lists or tuples of
        them: a dict (`return {'loss': l, 'out': y}`, `dict(...)`, a name bound to one), a
        number, a bool or a string, an instance of a dataclass or namedtuple defined in the
        file, or, in MXNet 1.x, `None` among the outputs (`return out, None`). A forward
        that returns None on every path is a placeholder by design (a break in an hourglass's
        skip path, which its parent reads as "no branch"), and is not reported.
    """
    why = """
        A hybridized block flattens what its forward returns into the outputs of one graph,
        and accepts only tensors and (nested) lists or tuples of them. The imperative run
        (every unit test) returns anything; the first hybridized call raises. MXNet 1.9.1
        raises `ValueError: When hybridized, the input of HybridBlock output must be (nested)
        list of Symbol or NDArray, but got {'out': <Symbol dense0_fwd>, ...} of type
        <class 'dict'>` for a dict, a number, a string or a dataclass instance, and
        `TypeError: Expected a list of symbols as input` for `None` among the outputs (MXNet 2
        accepts `None`). A namedtuple passes, but comes back as a plain list: reading its
        fields by name raises `AttributeError` in the caller.

        Only values that are provably not tensors are reported: a dict display, a literal, a
        `dict(...)` call, a name that holds one of those on every path. A value the analysis
        cannot see into (a helper's result, an attribute) is never reported.
    """
    example = """
        def hybrid_forward(self, F, x):
            y = self.dense(x)
            return {'out': y, 'norm': F.norm(y)}
    """
    use_instead = """
        def hybrid_forward(self, F, x):
            y = self.dense(x)
            return y, F.norm(y)  # the caller names them: out, norm = net(x)
    """
    fix_safety = (
        "This rule has no automatic fix: the callers of the block read the outputs by key or "
        "by field and must change with them."
    )
    invalid = (
        Example(_block("y = self.dense(x)\nreturn {'out': y, 'sum': F.sum(y)}"), line=_L + 1),
        Example(_block("return x, 0.5"), line=_L),
        Example(_block("return F.relu(x), None"), line=_L),
        Example(_block("outs = dict()\nouts['y'] = F.relu(x)\nreturn outs"), line=_L + 2),
        Example(
            "from dataclasses import dataclass\n"
            + _block("return Out(F.relu(x))")
            + "\n\n@dataclass\nclass Out:\n    y: object\n",
            line=_L + 1,
        ),
        Example(_MX2 + "        return {'y': self.dense(x)}\n", line=11, mxnet="2"),
    )
    valid = (
        _block("y = self.dense(x)\nreturn y, F.sum(y)"),
        # No output by design: a placeholder its parent reads as "no branch".
        _block("return None"),
        _block(
            "outs = []\nfor i in range(self.units):\n    outs.append(F.relu(x) * i)\nreturn outs"
        ),
        _block(
            "out = self.dense(x)\nif mask is None:\n    mask = F.ones_like(out)\nreturn out, mask",
            args="x, mask=None",
        ),
        _block("return F.relu(x), [F.sigmoid(x), (F.tanh(x), x)]"),
        _block("if F is nd:\n    return {'y': x}\nreturn x"),
        _block("return self.head(x)"),
        _PLAIN_BLOCK.replace("return x[0], len(x), x.shape, x.asnumpy()", "return {'y': x}"),
        _IMPORTS + "def summary(net, x):\n    return {'y': net(x), 'n': 1}\n",
        _MX2 + "        return self.dense(x), None\n",
    )
