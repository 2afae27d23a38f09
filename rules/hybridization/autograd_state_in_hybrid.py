"""MXL108 autograd-state-in-hybrid: finds `autograd.is_training()` and `autograd.is_recording()`
read inside hybridized code (typically to branch between training and inference behaviour).

Its findings are found by the family's one analysis per file (`_analysis.py`, run by
`checker.py`) and worded by the messages above the class; its tests
are the examples below (run by `tests/test_rule_examples.py`), `tests/test_hybridization.py` and
`tests/snapshots/MXL108.txt`.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from mxlint import knowledge
from mxlint.rule import Example, Rule, Runtime
from mxlint.rules.hybridization._examples import _IMPORTS, _L, _MX2, _PLAIN_BLOCK, _block
from mxlint.walker import iter_nodes

#: The message, with the autograd function read (`{fn}`).
AUTOGRAD_ADVICE = (
    "`autograd.{fn}()` is read once when the graph is built, so the hybridized "
    "block stays frozen in that mode; use operators that follow the mode "
    "(`F.Dropout`, `nn.BatchNorm`) or pass the mode as a constructor argument"
)


#: What to do when a helper called from a hybridized method does this, said at the call.
SITE_ADVICE = "pass the mode as a constructor argument"


def mode_selects_inputs(
    fn: cst.FunctionDef, resolve: Callable[[cst.BaseExpression], str | None]
) -> bool:
    """Whether the optional inputs of a 1.x `hybrid_forward` (`gt_box=None`) are read only
    where the autograd mode is training (recording): training calls the block with them and
    inference without. MXNet 1.x refuses a cached graph whose argument structure differs from
    the call's (`The argument structure of HybridBlock does not match the cached version`), so
    a graph traced in one mode is never silently reused in the other (the R-CNN models of
    gluon-cv read the mode so, and hybridize again when they switch)."""
    optional = {
        p.name.value
        for p in (*fn.params.params[2:], *fn.params.kwonly_params)
        if type(p.default) is cst.Name and p.default.value == "None"
    }
    if not optional:
        return False
    guarded: set[int] = set()
    for node in iter_nodes(fn.body):
        branch: cst.CSTNode | None = None
        if type(node) is cst.If or type(node) is cst.IfExp:
            test, negated = node.test, False
            if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
                test, negated = test.expression, True
            if type(test) is cst.Call and resolve(test.func) in knowledge.AUTOGRAD_STATE:
                branch = node.orelse if negated else node.body
        if branch is not None:
            guarded.update(id(n) for n in iter_nodes(branch))
    reads = [n for n in iter_nodes(fn.body) if type(n) is cst.Name and n.value in optional]
    return bool(reads) and all(id(n) in guarded for n in reads)


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
        code (typically to branch between training and inference behaviour). Not reported in
        an MXNet 1.x `hybrid_forward` whose optional inputs (`gt_box=None`) are read only in
        training mode: training and inference then call the block with different arguments,
        and MXNet refuses a cached graph whose argument structure differs from the call's, so
        nothing is reused silently.
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
        # Training passes the labels, inference does not: a graph cached in one mode is
        # refused in the other, never silently reused.
        _block(
            "n = 128 if autograd.is_training() else 16\n"
            "y = F.slice_axis(self.dense(x), axis=0, begin=0, end=n)\n"
            "if autograd.is_training():\n    return y - label\n"
            "return y",
            args="x, label=None",
        ),
        _IMPORTS + "def step(net, x):\n    if autograd.is_training():\n        return net(x)\n",
        _PLAIN_BLOCK.replace("if x.sum() > 0:", "if autograd.is_training():"),
        _block("if F is nd and autograd.is_training():\n    pass\nreturn x"),
    )
