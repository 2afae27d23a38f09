"""MXL107 inplace-op-in-hybrid: finds augmented assignment (`x += y`), slice assignment (`x[...] =
v`) and `out=` arguments on tensors in hybridized code.

Its findings are found by the family's one analysis per file (`_analysis.py`, run by
`checker.py`) and worded by the messages above the class; its tests
are the examples below (run by `tests/test_rule_examples.py`), `tests/test_hybridization.py` and
`tests/snapshots/MXL107.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime
from mxlint.rules.hybridization._examples import _L, _PLAIN_BLOCK, _block

#: The message, with the statement that writes in place (`{code}`).
INPLACE_ADVICE = (
    "`{code}` writes into a tensor in place: a Symbol does not support it and "
    "autograd rejects it while recording; assign a new value (`x = x + y`, "
    "`F.where`, `F.concat`)"
)


#: What to do when a helper called from a hybridized method does this, said at the call.
SITE_ADVICE = "assign new values instead of writing in place"


class InplaceOpInHybrid(Rule):
    code = "MXL107"
    name = "inplace-op-in-hybrid"
    runtime = Runtime("hybrid")
    message = "In-place write to a tensor in hybridized code; assign a new value instead"
    what = """
        Finds augmented assignment (`x += y`), slice assignment (`x[...] = v`) and `out=`
        arguments on tensors in hybridized code. The output of a layer of a `Sequential`
        child indexed in the forward pass (`total += self.branches[i](x)`) is a tensor when
        every layer `__init__` adds to it returns one; a block of unknown class may return a
        tuple, which `+=` extends.
    """
    why = """
        A Symbol raises `NotImplementedForSymbol` for `+=` and has no item assignment, and
        while autograd records (the imperative training run) in-place writes fail with
        "Inplace operations are not supported when recording with autograd".
    """
    example = """
        def hybrid_forward(self, F, x, residual):
            x = F.relu(x)
            x += residual
            return x
    """
    use_instead = """
        def hybrid_forward(self, F, x, residual):
            x = F.relu(x)
            x = x + residual
            return x
    """
    invalid = (
        Example(_block("y = F.relu(x)\ny += 1\nreturn y"), line=_L + 1),
        Example(_block("x[:, 0] = 0\nreturn x"), line=_L),
        Example(_block("F.relu(x, out=x)\nreturn x"), line=_L),
        Example(_block("h = self.dense(x)\nh *= mask\nreturn h", args="x, mask"), line=_L + 1),
    )
    valid = (
        _block("total = 0\nfor i in range(self.units):\n    total += i\nreturn x * total"),
        _block("y = F.relu(x)\ny = y + 1\nreturn y"),
        _block("outs = {}\nouts['a'] = x\nreturn outs['a']"),
        _PLAIN_BLOCK.replace("return x[0]", "x += 1\n        return x[0]"),
        _block("acc = x\nacc = acc + 1\nreturn acc"),
    )
