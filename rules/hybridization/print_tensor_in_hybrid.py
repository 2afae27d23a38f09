"""MXL106 print-tensor-in-hybrid: finds `print(...)` calls with a tensor argument in hybridized
code.

Its findings are found by the family's one analysis per file (`_analysis.py`, run by
`checker.py`) and worded by the messages above the class; its tests
are the examples below (run by `tests/test_rule_examples.py`), `tests/test_hybridization.py` and
`tests/snapshots/MXL106.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime
from mxlint.rules.hybridization._examples import _GUARDED, _L, _MX2, _PLAIN_BLOCK, _block

#: The message.
PRINT_ADVICE = (
    "printing a tensor in a hybridized block prints a Symbol's name under "
    "hybridize(), not values; guard debugging with `if F is nd:` or inspect "
    "outputs outside the block"
)


#: What to do when a helper called from a hybridized method does this, said at the call.
SITE_ADVICE = "guard debugging output with `if F is nd:`"


class PrintTensorInHybrid(Rule):
    code = "MXL106"
    name = "print-tensor-in-hybrid"
    runtime = Runtime("hybrid")
    message = (
        "`print` of a tensor in hybridized code prints a Symbol, not values; guard "
        "debugging output with `if F is nd:`"
    )
    what = """
        Finds `print(...)` calls with a tensor argument in hybridized code. A
        `hybrid_forward` that also prints its namespace (`print('F:', F)`) shows which mode
        runs, as tutorials of hybridization do, and is not reported.
    """
    why = """
        Once hybridized, `hybrid_forward` runs once to build the graph: the print shows a
        Symbol's name (MXNet 1.x) or fails (MXNet 2 deferred compute), then never runs again.
        Debugging output that seems to work imperatively is silently gone in training.
    """
    example = """
        def hybrid_forward(self, F, x):
            y = self.dense(x)
            print(y)
            return y
    """
    use_instead = """
        def hybrid_forward(self, F, x):
            y = self.dense(x)
            if F is nd:  # imperative runs only
                print(y)
            return y
    """
    invalid = (
        Example(_block("y = self.dense(x)\nprint(y)\nreturn y"), line=_L + 1),
        Example(_block("print('input', x)\nreturn x"), line=_L),
        Example(_MX2 + "        print(x)\n        return self.dense(x)\n", line=11, mxnet="2"),
    )
    valid = (
        # A tutorial's block that prints its namespace too: it shows which mode runs, the
        # Symbol it prints once hybridized is the point.
        _block("print('F:', F)\nprint('x:', x)\nreturn x"),
        _block("print('units', self.units)\nreturn x"),
        _GUARDED,
        _PLAIN_BLOCK.replace("return x[0]", "print(x)\n        return x[0]"),
        _block("if F is mx.sym:\n    return x\nprint(x)\nreturn x").replace(
            "from mxnet import nd", "import mxnet as mx\nfrom mxnet import nd"
        ),
    )
