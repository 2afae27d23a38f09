"""MXL117 tensor-truth-value: finds an NDArray made by an MXNet operator used as a condition
(`if proposals:`, `while mask:`, `not x`, `x and y`, `assert x`, `bool(x)`) in imperative code.

The function after the class decides and words its findings; `OperatorCallChecker`
(`rules/hybridization/checker.py`) runs it on each test. Its tests are the examples below (run
by `tests/test_rule_examples.py`), `tests/test_hybridization.py` and
`tests/snapshots/MXL117.txt`.
"""

from __future__ import annotations

import libcst as cst

from mxlint import knowledge
from mxlint.checker import FileContext
from mxlint.knowledge.api import api
from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.hybridization._examples import _IMPORTS

TRUTH_ADVICE = (
    "`{code}` is an NDArray ({origin}) used as a truth value: MXNet raises `ValueError: The "
    "truth value of an NDArray with multiple elements is ambiguous` whenever it has more than "
    "one element (and syncs when it has one); test what is meant: `{code}.size > 0`, "
    "`({code} > 0).sum().asscalar()`"
)
#: Reductions that, called without an axis, return one element (`nd.sum(x)` has shape (1,)).
_FULL_REDUCTIONS = frozenset(
    {"sum", "mean", "max", "min", "prod", "nansum", "nanprod", "norm", "argmax", "argmin"}
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


def array_origin(ctx: FileContext, node: cst.BaseExpression) -> str | None:
    """How `node` is known to be an NDArray of possibly several elements: the `mx.nd` call
    that makes it, itself or through the one binding of its name; None if not known."""
    if type(node) is cst.Name:
        scope = ctx.bindings.scope_at(node).lookup(node.value)
        found = scope.bindings(node.value) if scope is not None else []
        if len(found) != 1 or found[0].kind != "assignment" or found[0].value is None:
            return None
        node = found[0].value
    if type(node) is not cst.Call:
        return None
    name = ctx.resolve(node.func)
    if name is None or not name.startswith("mxnet.nd."):
        return None
    # An operator of MXNet's registry (it takes arrays), an arithmetic function or a creator
    # returns an NDArray; `nd.load` (a dict or list), `nd.waitall` and helpers do not.
    facts = api()
    sig = facts.signatures.get(name[len("mxnet.") :])
    op = name.rsplit(".", 1)[-1]
    creator = name in knowledge.ndarray_creators()
    if not creator and op not in facts.broadcasts and (sig is None or not sig.tensors):
        return None
    positional = [a for a in node.args if a.keyword is None and not a.star]
    keywords = {a.keyword.value for a in node.args if a.keyword is not None}
    if op in _FULL_REDUCTIONS and len(positional) < 2 and "axis" not in keywords:
        return None
    if creator and not _several(op, positional):
        return None
    return f"made by `{ctx.code(node.func)}(...)`"


def _several(op: str, positional: list[cst.Arg]) -> bool:
    """A creator's literal shape or data with more than one element."""
    if not positional:
        return False
    first = positional[0].value
    if op == "array":
        return type(first) in (cst.List, cst.Tuple) and len(first.elements) > 1  # type: ignore[attr-defined]
    if type(first) is cst.Tuple and all(type(e.value) is cst.Integer for e in first.elements):
        size = 1
        for element in first.elements:
            size *= int(element.value.value)  # type: ignore[attr-defined]
        return size > 1
    return type(first) is cst.Integer and int(first.value) > 1


def check_truth(ctx: FileContext, node: cst.CSTNode) -> None:
    for tested in truth_tested(node):
        origin = array_origin(ctx, tested)
        if origin is not None:
            code = ctx.code(tested)
            ctx.report(
                tested,
                TensorTruthValue,
                TRUTH_ADVICE.format(code=code if len(code) <= 30 else "x", origin=origin),
            )
