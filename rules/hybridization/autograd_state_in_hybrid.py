"""MXL108 autograd-state-in-hybrid: finds `autograd.is_training()` and `autograd.is_recording()`
read inside hybridized code (typically to branch between training and inference behaviour).

Its findings are found by the family's one analysis per file (`_analysis.py`, run by
`checker.py`) and worded by the messages above the class; its tests
are the examples below (run by `tests/test_rule_examples.py`), `tests/test_hybridization.py` and
`tests/snapshots/MXL108.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime
from mxlint.rules.hybridization._examples import _IMPORTS, _L, _MX2, _PLAIN_BLOCK, _block

#: The message, with the autograd function read (`{fn}`).
AUTOGRAD_ADVICE = (
    "`autograd.{fn}()` is read once when the graph is built, so the hybridized "
    "block stays frozen in that mode; use operators that follow the mode "
    "(`F.Dropout`, `nn.BatchNorm`) or pass the mode as a constructor argument"
)


#: What to do when a helper called from a hybridized method does this, said at the call.
SITE_ADVICE = "pass the mode as a constructor argument"


class AutogradStateInHybrid(Rule):
    code = "MXL108"
    name = "autograd-state-in-hybrid"
    runtime = Runtime("hybrid", shows=("mode",))
    message = (
        "`autograd.is_training()`/`is_recording()` in hybridized code is frozen when "
        "the graph is built; use mode-aware operators or a constructor argument"
    )
    what = """
        Finds `autograd.is_training()` and `autograd.is_recording()` read inside hybridized
        code (typically to branch between training and inference behaviour).
    """
    why = """
        A hybridized block traces `hybrid_forward` once and caches the graph: the mode seen on
        that first call (often inference, from a shape check) is baked in, so training
        silently runs the inference branch or vice versa.
    """
    example = """
        def hybrid_forward(self, F, x):
            if autograd.is_training():
                x = x * F.random.uniform(shape=(1,))
            return x
    """
    use_instead = """
        def hybrid_forward(self, F, x):
            return F.Dropout(x, p=0.1)  # follows the mode at run time
    """
    invalid = (
        Example(_block("if autograd.is_training():\n    x = x * 0.5\nreturn x"), line=_L),
        Example(
            _block("p = 0.5 if autograd.is_recording() else 0.0\nreturn F.Dropout(x, p=p)"), line=_L
        ),
        Example(
            _block("return helper(x)") + "\n\ndef helper(v):\n"
            "    if autograd.is_training():\n        return v * 2\n    return v\n",
            line=_L,
        ),
        Example(
            _MX2.replace("from mxnet import np, npx", "from mxnet import np, npx, autograd")
            + "        if autograd.is_training():\n            x = x * 2\n"
            "        return x\n",
            line=11,
            mxnet="2",
        ),
    )
    valid = (
        _block("return F.Dropout(x, p=0.5)"),
        _IMPORTS + "def step(net, x):\n    if autograd.is_training():\n        return net(x)\n",
        _PLAIN_BLOCK.replace("if x.sum() > 0:", "if autograd.is_training():"),
        _block("if F is nd and autograd.is_training():\n    pass\nreturn x"),
    )
