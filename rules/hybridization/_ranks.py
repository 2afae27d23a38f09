"""Relative ranks of the tensors of one hybridized method, where they are provable.

Symbol's elementwise operators do not broadcast (NDArray's do: observed by running MXNet, see
`broadcasts` in `mxlint/knowledge/api.py`), so `x - F.mean(x, axis=1)` works imperatively and
fails once hybridized. Input shapes are unknown; what is known is how a value's shape relates to
the input it was computed from: `expand_dims` adds an axis, a reduction over literal axes drops
them or (with `keepdims=True`) keeps them with size 1, elementwise operators keep the shape. Two
values of one input with different relations have different shapes whatever the input is (save
a reduced axis of size 1, which no real input of a reduction has). Only names bound once are
followed; anything else is unknown and never reported.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from mxlint.checker import FileContext
from mxlint.names import dotted_name
from mxlint.rules.hybridization._analysis import imperative_guard
from mxlint.rules.hybridization._taint import params_of
from mxlint.walker import iter_nodes

#: Operators whose output has their (first) input's shape.
_SAME_SHAPE = frozenset(
    {
        "relu",
        "sigmoid",
        "tanh",
        "exp",
        "log",
        "abs",
        "sqrt",
        "rsqrt",
        "square",
        "negative",
        "reciprocal",
        "sign",
        "round",
        "floor",
        "ceil",
        "softmax",
        "log_softmax",
        "Activation",
        "LeakyReLU",
        "Dropout",
        "clip",
        "cast",
        "astype",
        "stop_gradient",
        "BlockGrad",
        "identity",
        "zeros_like",
        "ones_like",
        "erf",
        "softsign",
    }
)
_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod", "nansum", "nanprod", "norm"})
#: Python's operators as `api().broadcasts` spells them, and the `broadcast_*` operator that
#: computes what NDArray's broadcasting operator does.
_OPERATORS: dict[type[cst.CSTNode], tuple[str, str]] = {
    cst.Add: ("+", "broadcast_add"),
    cst.Subtract: ("-", "broadcast_sub"),
    cst.Multiply: ("*", "broadcast_mul"),
    cst.Divide: ("/", "broadcast_div"),
    cst.Modulo: ("%", "broadcast_mod"),
    cst.Power: ("**", "broadcast_power"),
    cst.Equal: ("==", "broadcast_equal"),
    cst.NotEqual: ("!=", "broadcast_not_equal"),
    cst.GreaterThan: (">", "broadcast_greater"),
    cst.GreaterThanEqual: (">=", "broadcast_greater_equal"),
    cst.LessThan: ("<", "broadcast_lesser"),
    cst.LessThanEqual: ("<=", "broadcast_lesser_equal"),
}
#: `F.<name>(a, b)` functions whose NDArray form broadcasts, and their broadcasting twin.
_FUNCTIONS = {
    "maximum": "broadcast_maximum",
    "minimum": "broadcast_minimum",
    "power": "broadcast_power",
}


@dataclass(frozen=True)
class Shape:
    """A value's shape relative to the input `origin`: `delta` axes more (or fewer), and the
    axes kept with size 1 by a `keepdims` reduction. `how` says what changed it last."""

    origin: str
    delta: int = 0
    kept: frozenset[str] = frozenset()  # "1": axis 1 reduced, kept; "+1": axis 1 inserted
    how: str = ""

    def same(self, other: Shape) -> bool:
        return self.delta == other.delta and self.kept == other.kept

    def differs(self, other: Shape) -> bool:
        """Provably different shapes: different ranks, or one keeps a reduced axis of size 1
        where the other has the input's axis."""
        if self.origin != other.origin:
            return False
        if self.delta != other.delta:
            return True
        return bool(self.kept) != bool(other.kept)


@dataclass(frozen=True)
class Mismatch:
    """An elementwise combination of two provably different shapes."""

    node: cst.CSTNode
    operator: str  # as `api().broadcasts` spells it: "+", "maximum"...
    twin: str  # the broadcasting operator that computes the same
    left: Shape
    right: Shape
    operands: tuple[cst.BaseExpression, cst.BaseExpression]


def mismatches(ctx: FileContext, fn: cst.FunctionDef, f_name: str | None) -> Iterator[Mismatch]:
    """Each `a OP b` and `F.maximum(a, b)`-like call of the method (outside `if F is nd:`
    branches) whose operands derive from one input with different shapes."""
    ranks = _Ranks(ctx, fn, f_name)
    skip: set[int] = set()
    for node in iter_nodes(fn.body, stop=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if type(node) is cst.If:
            guard = imperative_guard(node.test, f_name, ctx)
            if guard == "body":
                skip.update(id(n) for n in iter_nodes(node.body))
            elif guard == "orelse" and node.orelse is not None:
                skip.update(id(n) for n in iter_nodes(node.orelse))
        if id(node) in skip:
            continue
        found = ranks.mismatch(node)
        if found is not None:
            yield found


class _Ranks:
    def __init__(self, ctx: FileContext, fn: cst.FunctionDef, f_name: str | None) -> None:
        self.ctx = ctx
        self.f_name = f_name
        self.env: dict[str, Shape] = {}
        # The bindings model says how often each name is bound in the method.
        self.scope = ctx.bindings.scope(fn)
        bound = self.scope.names if self.scope is not None else {}
        for param in params_of(fn):
            name = param.name.value
            if name in ("self", f_name) or param.default is not None or param.star != "":
                continue
            if len(bound.get(name, ())) == 1:  # the parameter itself, never rebound
                self.env[name] = Shape(name)
        for name, bindings in bound.items():
            if len(bindings) == 1 and bindings[0].kind == "assignment" and bindings[0].value:
                shape = self.shape(bindings[0].value)
                if shape is not None:
                    self.env[name] = shape

    def shape(self, node: cst.BaseExpression) -> Shape | None:
        if type(node) is cst.Name:
            scope = self.ctx.bindings.scope_at(node)
            if scope is not self.scope and scope.local(node.value):
                return None  # a comprehension's own variable
            return self.env.get(node.value)
        if type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus:
            return self.shape(node.expression)
        if type(node) is cst.BinaryOperation:
            left, right = self.shape(node.left), self.shape(node.right)
            if left is not None and right is not None:
                if left.same(right):
                    return left
                # NDArray broadcasts a kept size-1 axis back to the input's size.
                if left.origin == right.origin and left.delta == right.delta:
                    return left if not left.kept else right if not right.kept else None
                return None
            # A tensor and a Python number (`x * 2`): the tensor's shape.
            if left is not None and _number(node.right):
                return left
            if right is not None and _number(node.left):
                return right
            return None
        if type(node) is cst.Call:
            return self._call(node)
        return None

    def _call(self, node: cst.Call) -> Shape | None:
        func = node.func
        if type(func) is not cst.Attribute:
            return None
        op = func.attr.value
        dotted = dotted_name(func.value)
        args = [a for a in node.args if a.keyword is None and not a.star]
        if self.f_name is not None and dotted == self.f_name:
            if not args:
                return None
            data, rest = self.shape(args[0].value), args[1:]
        else:
            data, rest = self.shape(func.value), args
        if data is None:
            return None
        if op in _SAME_SHAPE:
            return data
        if op == "expand_dims":
            axis = _axis_argument(node, rest)
            if axis is None:
                return None
            # A size-1 axis where the input had its own (after a reduction dropped one).
            kept = data.kept | {f"+{axis}"} if data.delta < 0 else data.kept
            return Shape(data.origin, data.delta + 1, kept, how=f"`{op}` inserts a size-1 axis")
        if op in _REDUCTIONS:
            return _reduced(node, op, data, rest)
        return None

    def mismatch(self, node: cst.CSTNode) -> Mismatch | None:
        if type(node) is cst.BinaryOperation:
            spelled = _OPERATORS.get(type(node.operator))
            sides = (node.left, node.right)
        elif type(node) is cst.Comparison and len(node.comparisons) == 1:
            spelled = _OPERATORS.get(type(node.comparisons[0].operator))
            sides = (node.left, node.comparisons[0].comparator)
        elif (
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and self.f_name is not None
            and dotted_name(node.func.value) == self.f_name
            and node.func.attr.value in _FUNCTIONS
            and len(node.args) == 2
            and all(a.keyword is None and not a.star for a in node.args)
        ):
            name = node.func.attr.value
            spelled = (name, _FUNCTIONS[name])
            sides = (node.args[0].value, node.args[1].value)
        else:
            return None
        if spelled is None:
            return None
        left, right = self.shape(sides[0]), self.shape(sides[1])
        if left is None or right is None or not left.differs(right):
            return None
        return Mismatch(node, spelled[0], spelled[1], left, right, sides)


def _axis_argument(node: cst.Call, rest: list[cst.Arg]) -> tuple[int, ...] | None:
    """The literal `axis=` (or first argument after the data) of a call."""
    axis_node = next(
        (a.value for a in node.args if a.keyword is not None and a.keyword.value == "axis"),
        rest[0].value if rest else None,
    )
    return _literal_axes(axis_node)


def _reduced(node: cst.Call, op: str, data: Shape, rest: list[cst.Arg]) -> Shape | None:
    axes = _axis_argument(node, rest)
    keep = next(
        (a.value for a in node.args if a.keyword is not None and a.keyword.value == "keepdims"),
        None,
    )
    if axes is None or (keep is not None and type(keep) is not cst.Name):
        return None
    keepdims = type(keep) is cst.Name and keep.value == "True"
    spelled = f"`{op}(axis={axes[0] if len(axes) == 1 else tuple(axes)}"
    if keepdims:
        if data.delta or data.kept:
            return None
        kept = frozenset(str(a) for a in axes)
        return Shape(data.origin, 0, kept, how=f"{spelled}, keepdims=True)` keeps it")
    return Shape(data.origin, data.delta - len(axes), data.kept, how=f"{spelled})` drops it")


def _literal_axes(node: cst.BaseExpression | None) -> tuple[int, ...] | None:
    """`1`, `-1` or `(1, 2)`; None for anything else (no axis reduces everything)."""
    if node is None:
        return None
    if type(node) is cst.Integer:
        return (node.evaluated_value,)
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus:
        inner = _literal_axes(node.expression)
        return tuple(-a for a in inner) if inner is not None and len(inner) == 1 else None
    if type(node) is cst.Tuple and node.elements:
        out: list[int] = []
        for element in node.elements:
            one = _literal_axes(element.value)
            if one is None:
                return None
            out.extend(one)
        return tuple(out)
    return None


def _number(node: cst.BaseExpression) -> bool:
    return type(node) in (cst.Integer, cst.Float) or (
        type(node) is cst.UnaryOperation and type(node.expression) in (cst.Integer, cst.Float)
    )
