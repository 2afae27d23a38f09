"""MXL117 tensor-truth-value: finds an NDArray made by an MXNet operator used as a condition
(`if proposals:`, `while mask:`, `not x`, `x and y`, `assert x`, `bool(x)`) in imperative code.

The function after the class decides and words its findings; `OperatorCallChecker`
(`rules/hybridization/checker.py`) runs it on each test. Its tests are the examples below (run
by `tests/test_rule_examples.py`), `tests/test_hybridization.py` and
`tests/snapshots/MXL117.txt`.
"""

from __future__ import annotations

import libcst as cst

from mxlint.checker import FileContext
from mxlint.expected_errors import expects_error
from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.hybridization._arrays import array_origin
from mxlint.rules.hybridization._examples import _IMPORTS

TRUTH_ADVICE = (
    "`{code}` is an NDArray ({origin}) used as a truth value: MXNet raises `ValueError: The "
    "truth value of an NDArray with multiple elements is ambiguous` whenever it has more than "
    "one element (and syncs when it has one); test what is meant: `{code}.size > 0`, "
    "`({code} > 0).sum().asscalar()`"
)
_HEADER = _IMPORTS + "import mxnet as mx\n\n"


class TensorTruthValue(Rule):
    code = "MXL117"
    name = "tensor-truth-value"
    runtime = Runtime("raise", loud=True, error=r"truth value of an NDArray")
    message = "An NDArray used as a truth value; MXNet raises when it has more than one element"
    mxnet = "1"
    what = """
        Finds an NDArray made by an `mx.nd` operator (directly, or through a name bound to one
        once in its scope) used as a condition: `if boxes:`, `while mask:`, `not x`, `x and y`,
        `assert x`, `a if x else b`, `bool(x)`. Reductions without an axis (`nd.sum(x)`, one
        element) and arrays built with one element are not reported.
    """
    why = """
        `NDArray.__bool__` returns the value of a one-element array and raises `ValueError: The
        truth value of an NDArray with multiple elements is ambiguous` otherwise, so `if
        proposals:` meant as "any proposals?" works on the one-box test image and fails on the
        first real batch. (Inside a hybridized `hybrid_forward` the same test is MXL101.)
        A test that expects the error (`with pytest.raises(ValueError):`, nose's
        `@raises(ValueError)`, a `try` that catches it) is not reported.
    """
    example = """
        boxes = nd.contrib.box_nms(dets, overlap_thresh=0.5)
        if boxes:
            draw(boxes)
    """
    use_instead = """
        boxes = nd.contrib.box_nms(dets, overlap_thresh=0.5)
        if boxes.size > 0:
            draw(boxes)
    """
    invalid = (
        Example(
            _HEADER + "dets = nd.ones((1, 4, 6))\n"
            "boxes = nd.contrib.box_nms(dets, overlap_thresh=0.5)\nif boxes:\n    print(boxes)\n",
            line=8,
        ),
        Example(_HEADER + "mask = mx.nd.array([1, 0, 1])\nassert mask\n", line=7),
        Example(
            _HEADER + "def keep(scores):\n    high = nd.greater(scores, 0.5)\n"
            "    return scores if not high else None\n",
            line=8,
        ),
    )
    valid = (
        _HEADER + "total = nd.sum(nd.ones((2, 3)))\nif total:\n    print(total)\n",
        _HEADER + "x = nd.ones((2, 3))\nif x.size > 0:\n    print(x)\n",
        _HEADER + "x = nd.array([3])\nif x:\n    print(x)\n",
        _HEADER + "x = nd.ones((2, 3))\nx = None\nif x:\n    print(x)\n",
        _HEADER + "x = nd.ones((2, 3))\nif x is not None:\n    print(x)\n",
        _HEADER + "def f(x):\n    if x:\n        return nd.ones((2, 3))\n",
        Valid(
            _HEADER + "import pytest\nfrom nose.tools import raises\n\n\n"
            "@raises(ValueError)\ndef test_bool_ambiguous():\n    bool(mx.nd.ones((2, 3)))\n\n\n"
            "def test_not_ambiguous():\n    with pytest.raises(ValueError):\n"
            "        assert mx.nd.zeros((2, 3))\n",
            filename="tests/test_ndarray.py",
        ),
        Valid(
            "from mxnet import np, npx\nnpx.set_np()\n\nx = np.ones((2, 3))\nif x.any():\n"
            "    print(x)\n",
            mxnet="2",
        ),
    )


def truth_tested(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """The expressions a statement or expression uses as truth values."""
    kind = type(node)
    if kind in (cst.If, cst.While, cst.IfExp):
        return _operands(node.test)  # type: ignore[attr-defined]
    if kind is cst.Assert:
        return _operands(node.test)  # type: ignore[attr-defined]
    if kind is cst.UnaryOperation and type(node.operator) is cst.Not:  # type: ignore[attr-defined]
        return [node.expression]  # type: ignore[attr-defined]
    if (
        kind is cst.Call
        and type(node.func) is cst.Name  # type: ignore[attr-defined]
        and node.func.value == "bool"  # type: ignore[attr-defined]
        and len(node.args) == 1  # type: ignore[attr-defined]
    ):
        return [node.args[0].value]  # type: ignore[attr-defined]
    return []


def _operands(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    if type(test) is cst.BooleanOperation:
        return _operands(test.left) + _operands(test.right)
    return [test]


#: What MXNet raises for the truth value of a multi-element NDArray: a test that expects it
#: (`with pytest.raises(ValueError):`, nose's `@raises(ValueError)`) is not reported.
_RAISED = ("ValueError",)


def check_truth(ctx: FileContext, node: cst.CSTNode, nd_names: frozenset[str]) -> None:
    """`nd_names`: `nd_assigned_names(ctx)`, the names worth resolving."""
    for tested in truth_tested(node):
        if type(tested) is cst.Name and tested.value not in nd_names:
            continue
        origin = array_origin(ctx, tested)
        if origin is not None and not expects_error(ctx.resolve, ctx.stack, node, _RAISED):
            code = ctx.code(tested)
            ctx.report(
                tested,
                TensorTruthValue,
                TRUTH_ADVICE.format(code=code if len(code) <= 30 else "x", origin=origin),
            )
