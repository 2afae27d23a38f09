"""Flow-sensitive "is this a tensor?" analysis of one function body.

Rules about hybridized code must tell a tensor (`x`, `F.relu(x)`, `x.reshape(...)`) from a Python
value (`self.num_layers`, `len(...)`, `x.shape[0]` in MXNet 1.x is already a break of its own)
without running anything. This module interprets a function's statements in order over a small
lattice of value kinds and calls hooks at the places a rule may care about (tests, attribute
reads, subscripts, iteration, calls); the rule decides what is a finding. Control flow is the
shared engine's (`mxlint.semantic.dataflow`): reassignment is honoured (`x = 3` after
`x = F.relu(x)` is a Python value again), branches are joined, loops run to a fixpoint; here
`x is None` tests narrow optional tensors and `if F is nd:` branches run silently.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import Enum

import libcst as cst

from mxlint.semantic.dataflow import COMPREHENSIONS, Dataflow
from mxlint.walker import iter_nodes


class Kind(Enum):
    """What a value is, as far as the analysis can tell."""

    TENSOR = "tensor"  # one NDArray/Symbol: certain
    MAYBE_GROUP = "tensor-or-group"  # a tensor or a tuple/list of them (child block outputs)
    GROUP = "group"  # a tuple/list/multi-output symbol of tensors: indexing is fine
    OPTIONAL = "tensor-or-none"  # a tensor argument defaulting to None
    PYTHON = "python"  # a Python value: config, shapes, ints, strings
    NONE = "none"
    MAPPING = "dict"  # a dict built here (`{...}`, `dict(...)`): never a tensor
    #: an NDArray the method builds from Python values with `nd.*` calls (`nd.arange(n)`,
    #: and operators on such arrays): an NDArray in both modes, never a Symbol
    CONSTANT = "ndarray-constant"
    UNKNOWN = "unknown"


TENSORISH = frozenset({Kind.TENSOR, Kind.MAYBE_GROUP})
#: What an operator can combine with an NDArray constant and still give one.
_CONSTANT_OPERANDS = frozenset({Kind.CONSTANT, Kind.PYTHON})
Env = dict[str, Kind]


def join(a: Kind, b: Kind) -> Kind:
    if a is b:
        return a
    pair = {a, b}
    if pair == {Kind.TENSOR, Kind.MAYBE_GROUP}:
        return Kind.MAYBE_GROUP
    if pair <= {Kind.TENSOR, Kind.NONE, Kind.OPTIONAL}:
        return Kind.OPTIONAL
    if pair <= {Kind.PYTHON, Kind.NONE}:
        return Kind.PYTHON
    return Kind.UNKNOWN


def join_env(a: Env, b: Env) -> Env:
    out: Env = {}
    for name in a.keys() | b.keys():
        out[name] = join(a.get(name, Kind.UNKNOWN), b.get(name, Kind.UNKNOWN))
    return out


def element(kind: Kind) -> Kind:
    """The kind of an element of a value of `kind` (iteration, unpacking, indexing)."""
    if kind in (Kind.GROUP, Kind.MAYBE_GROUP):
        return Kind.MAYBE_GROUP
    if kind is Kind.TENSOR:
        return Kind.TENSOR
    if kind is Kind.PYTHON:
        return Kind.PYTHON
    return Kind.UNKNOWN


_COMPREHENSIONS = COMPREHENSIONS


class Hooks:
    """Callbacks of the interpreter; a rule overrides what it needs.

    `silent` is true while the interpreter is inside an imperative-only branch (`if F is nd:`):
    hooks should still answer kinds but report nothing.
    """

    silent: bool = False
    #: True inside the branch where an argument or setting is None (`x.shape` as a fallback).
    fallback: bool = False
    #: True inside a branch that runs once per object (`if self.cache is None: self.cache =`).
    once: bool = False

    def name_kind(self, name: str) -> Kind:
        """Kind of a name the function never assigned (globals, builtins, closure)."""
        return Kind.UNKNOWN

    def call(
        self, node: cst.Call, func_kind: Kind, args: list[tuple[cst.Arg, Kind]], interp: Interpreter
    ) -> Kind | None:
        """Kind of a call's result, or None to let the interpreter decide."""
        return None

    def attribute(self, node: cst.Attribute, base: Kind) -> Kind | None:
        return None

    def subscript(self, node: cst.Subscript, base: Kind, interp: Interpreter) -> None:
        """`x[...]` read."""

    def test(self, node: cst.BaseExpression, kind: Kind) -> None:
        """A value used as a truth value (if/while/assert/ternary/and/or/not)."""

    def iterate(self, node: cst.CSTNode, iterable: cst.BaseExpression, kind: Kind) -> None:
        """`for _ in x`, comprehensions."""

    def unpack(self, node: cst.CSTNode, value: cst.BaseExpression, kind: Kind) -> None:
        """`a, b = x`."""

    def store_subscript(self, node: cst.Subscript, base: Kind) -> None:
        """`x[...] = v`."""

    def augassign(self, node: cst.AugAssign, target: Kind, value: Kind) -> None:
        """`x += v`."""

    def guard(self, test: cst.BaseExpression) -> str | None:
        """ "body"/"orelse" when that branch of `if test:` runs imperatively only."""
        return None

    def returned(self, node: cst.Return, kind: Kind, interp: Interpreter) -> None:
        """A `return` statement and the kind it returns (`interp.env` holds the names' kinds
        at that point)."""

    def write(self, target: cst.BaseExpression, value: Kind, stmt: cst.CSTNode) -> None:
        """An assignment, plain or augmented, through an attribute or a subscript (`a.b = v`,
        `a[k] = v`, `a.b += v`); `value` is the kind of what is assigned."""

    def observe_call(self, node: cst.Call, args: list[tuple[cst.Arg, Kind]]) -> None:
        """Every call, once its arguments are evaluated (a rule that reports a call without
        deciding what it returns)."""

    def makes_mapping(self, node: cst.Call, interp: Interpreter) -> bool:
        """Whether the call builds a dict (`dict(...)`)."""
        func = node.func
        return type(func) is cst.Name and func.value == "dict" and "dict" not in interp.env


class Interpreter(Dataflow[Kind]):
    """Abstract interpretation of one function body over `Kind`, on the shared dataflow engine."""

    def __init__(self, hooks: Hooks, env: Env) -> None:
        super().__init__(env)
        self.hooks = hooks
        self.returns: Kind | None = None

    # -- the domain ----------------------------------------------------------------------------

    def top(self) -> Kind:
        return Kind.UNKNOWN

    def join(self, a: Kind, b: Kind) -> Kind:
        return join(a, b)

    def none(self) -> Kind:
        return Kind.NONE

    def join_envs(self, base: Env, envs: Sequence[Env]) -> Env:
        # A name bound on one path only is unknown after the join.
        out = dict(envs[0])
        for env in envs[1:]:
            out = join_env(out, env)
        return out

    def element(self, value: Kind) -> Kind:
        return element(value)

    # -- statements ----------------------------------------------------------------------------

    def test(self, node: cst.BaseExpression) -> Kind:
        return self.test_expr(node)

    def narrow(self, test: cst.BaseExpression) -> tuple[Env, Env]:
        return narrow(test, self.env)

    def if_test(self, node: cst.If) -> None:
        if self.hooks.guard(node.test) is None:
            self.test_expr(node.test)

    @contextmanager
    def branch(self, node: cst.CSTNode, which: str) -> Iterator[None]:
        assert isinstance(node, cst.If)
        with self._mode(
            self.hooks.guard(node.test) == which,
            none_branch(node.test) == which,
            initialising_branch(node) == which,
        ):
            yield

    def after_if(self, node: cst.If, body_leaves: bool, else_leaves: bool) -> None:
        if node.orelse is None and body_leaves and self.hooks.guard(node.test) == "orelse":
            # `if F is sym: return ...`: what follows runs imperatively only.
            self.hooks.silent = True

    def augassign(self, node: cst.AugAssign) -> None:
        value = self.expr(node.value)
        current = (
            self.expr(node.target)
            if type(node.target) is not cst.Name
            else self.env.get(node.target.value, self.hooks.name_kind(node.target.value))
        )
        self.hooks.augassign(node, current, value)
        if type(node.target) is cst.Name:
            new = Kind.TENSOR if Kind.TENSOR in (current, value) else join(current, value)
            self.env[node.target.value] = new
        else:
            self.hooks.write(node.target, value, node)

    def returned(self, node: cst.Return, value: Kind) -> None:
        self.returns = value if self.returns is None else join(self.returns, value)
        self.hooks.returned(node, value, self)

    def define(self, node: cst.FunctionDef | cst.ClassDef) -> None:
        self.env[node.name.value] = Kind.UNKNOWN

    def entered(self, item: cst.WithItem, value: Kind) -> Kind:
        return element(value) if value is Kind.GROUP else Kind.UNKNOWN

    def iterate(self, node: cst.For | cst.CompFor, value: Kind) -> None:
        self.hooks.iterate(node, node.iter, value)

    def loop_item(self, node: cst.For | cst.CompFor, value: Kind) -> Kind:
        """What a loop over `iterable` binds: ints for `range`, layers for `self.*`."""
        iterable = node.iter
        if (
            type(iterable) is cst.Call
            and type(iterable.func) is cst.Name
            and iterable.func.value == "range"
        ):
            return Kind.PYTHON
        if (
            type(iterable) is cst.Call
            and type(iterable.func) is cst.Name
            and iterable.func.value == "enumerate"
        ):
            return Kind.UNKNOWN
        return element(value)

    def assign(
        self,
        target: cst.BaseExpression,
        value_node: cst.BaseExpression | None,
        value: Kind,
        stmt: cst.CSTNode,
    ) -> None:
        if type(target) is cst.Name:
            self.env[target.value] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            if (
                isinstance(value_node, (cst.Tuple, cst.List))
                and len(value_node.elements) == len(elements)
                and not any(type(e) is cst.StarredElement for e in value_node.elements)
            ):
                for sub, val in zip(elements, value_node.elements):
                    self.assign(sub, val.value, self.expr(val.value), stmt)
                return
            if value_node is not None:
                self.hooks.unpack(stmt, value_node, value)
            for sub in elements:
                inner = sub.value if type(sub) is cst.StarredElement else sub
                self.assign(inner, None, element(value), stmt)
        elif type(target) is cst.Subscript:
            base = self.expr(target.value)
            for el in target.slice:
                self.slice(el)
            self.hooks.store_subscript(target, base)
            self.hooks.write(target, value, stmt)
        elif type(target) is cst.Attribute:
            self.expr(target.value)
            self.hooks.write(target, value, stmt)
        elif type(target) is cst.StarredElement:
            self.assign(target.value, None, Kind.UNKNOWN, stmt)

    @contextmanager
    def _mode(self, silent: bool, fallback: bool, once: bool = False) -> Iterator[None]:
        """Enter a branch: imperative-only (`silent`), a None fallback (`fallback`) or a
        one-time initialisation of the object's attributes (`once`)."""
        saved = self.hooks.silent, self.hooks.fallback, self.hooks.once
        self.hooks.silent = saved[0] or silent
        self.hooks.fallback = saved[1] or fallback
        self.hooks.once = saved[2] or once
        try:
            yield
        finally:
            self.hooks.silent, self.hooks.fallback, self.hooks.once = saved

    # -- expressions ---------------------------------------------------------------------------

    def test_expr(self, node: cst.BaseExpression) -> Kind:
        kind = self.expr(node)
        self.hooks.test(node, kind)
        return kind

    def expr(self, node: cst.BaseExpression | None) -> Kind:
        if node is None:
            return Kind.NONE
        if type(node) is cst.Name:
            if node.value == "None":
                return Kind.NONE
            if node.value in ("True", "False"):
                return Kind.PYTHON
            if node.value in self.env:
                return self.env[node.value]
            return self.hooks.name_kind(node.value)
        if type(node) in (
            cst.Integer,
            cst.Float,
            cst.Imaginary,
            cst.SimpleString,
            cst.ConcatenatedString,
            cst.Ellipsis,
        ):
            return Kind.PYTHON
        if type(node) is cst.FormattedString:
            for part in node.parts:
                if type(part) is cst.FormattedStringExpression:
                    self.expr(part.expression)
            return Kind.PYTHON
        if type(node) is cst.Attribute:
            base = self.expr(node.value)
            answer = self.hooks.attribute(node, base)
            if answer is not None:
                return answer
            if base in TENSORISH and node.attr.value == "T":
                return Kind.TENSOR
            return Kind.UNKNOWN
        if type(node) is cst.Call:
            return self.call(node)
        if type(node) is cst.BinaryOperation:
            left, right = self.expr(node.left), self.expr(node.right)
            if Kind.GROUP in (left, right) and type(node.operator) in (cst.Add, cst.Multiply):
                return Kind.GROUP  # `[x0] + rest`, `[h] * n`: list arithmetic
            if left in TENSORISH or right in TENSORISH:
                return Kind.TENSOR
            if left is Kind.PYTHON and right is Kind.PYTHON:
                return Kind.PYTHON
            if {left, right} <= _CONSTANT_OPERANDS and Kind.CONSTANT in (left, right):
                return Kind.CONSTANT
            return Kind.UNKNOWN
        if type(node) is cst.UnaryOperation:
            if type(node.operator) is cst.Not:
                self.test_expr(node.expression)
                return Kind.PYTHON
            inner = self.expr(node.expression)
            return Kind.TENSOR if inner in TENSORISH else inner
        if type(node) is cst.BooleanOperation:
            left = self.test_expr(node.left)
            body_env, else_env = narrow(node.left, self.env)
            saved = self.env
            self.env = body_env if type(node.operator) is cst.And else else_env
            right = self.test_expr(node.right)
            self.env = join_env(saved, self.env)
            return join(left, right)
        if type(node) is cst.Comparison:
            kinds = [self.expr(node.left)]
            identity = False
            for comp in node.comparisons:
                kinds.append(self.expr(comp.comparator))
                if type(comp.operator) in (cst.Is, cst.IsNot, cst.In, cst.NotIn):
                    identity = True
            if not identity and any(k in TENSORISH for k in kinds):
                return Kind.TENSOR
            return Kind.PYTHON
        if type(node) is cst.IfExp:
            imperative = self.hooks.guard(node.test)
            if imperative is None:
                self.test_expr(node.test)
            body_env, else_env = narrow(node.test, self.env)
            fallback = none_branch(node.test) or configured_branch(node)
            saved = self.env
            try:
                self.env = body_env
                with self._mode(imperative == "body", fallback == "body"):
                    body = self.expr(node.body)
                self.env = else_env
                with self._mode(imperative == "orelse", fallback == "orelse"):
                    orelse = self.expr(node.orelse)
            finally:
                self.env = saved
            return join(body, orelse)
        if type(node) is cst.Subscript:
            base = self.expr(node.value)
            for el in node.slice:
                self.slice(el)
            self.hooks.subscript(node, base, self)
            if base is Kind.TENSOR or base is Kind.CONSTANT:
                return base
            if base in (Kind.GROUP, Kind.MAYBE_GROUP):
                return Kind.MAYBE_GROUP
            if base is Kind.PYTHON:
                return Kind.PYTHON
            return Kind.UNKNOWN
        if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
            kinds = [self.expr(e.value) for e in node.elements]
            if any(k in TENSORISH or k in (Kind.GROUP, Kind.OPTIONAL) for k in kinds):
                return Kind.GROUP
            if all(k is Kind.PYTHON for k in kinds):
                return Kind.PYTHON
            return Kind.UNKNOWN
        if type(node) is cst.Dict:
            for item in node.elements:
                if type(item) is cst.DictElement:
                    self.expr(item.key)
                self.expr(item.value)
            return Kind.MAPPING
        if isinstance(node, _COMPREHENSIONS):
            return self.comprehension_kind(node)
        if type(node) is cst.NamedExpr:
            kind = self.expr(node.value)
            self.assign(node.target, node.value, kind, node)
            return kind
        if type(node) is cst.StarredElement:
            return self.expr(node.value)
        if type(node) is cst.Await:
            self.expr(node.expression)
            return Kind.UNKNOWN
        return Kind.UNKNOWN

    def call(self, node: cst.Call) -> Kind:
        func_kind = Kind.UNKNOWN
        if type(node.func) is cst.Attribute:
            func_kind = self.expr(node.func.value)
        elif type(node.func) is not cst.Name:
            func_kind = self.expr(node.func)
        args = [(arg, self.expr(arg.value)) for arg in node.args]
        self.hooks.observe_call(node, args)
        if self.hooks.makes_mapping(node, self):
            return Kind.MAPPING
        answer = self.hooks.call(node, func_kind, args, self)
        if answer is not None:
            return answer
        if type(node.func) is cst.Name and node.func.value in _PYTHON_BUILTINS:
            return Kind.PYTHON
        if type(node.func) is cst.Attribute and func_kind in TENSORISH:
            return Kind.TENSOR
        if any(k in TENSORISH for _, k in args):
            return Kind.MAYBE_GROUP
        return Kind.UNKNOWN

    def comprehension_kind(
        self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp
    ) -> Kind:
        elt, dict_value = self.comprehension(node)
        value = dict_value if isinstance(node, cst.DictComp) else elt
        if value in TENSORISH or value is Kind.GROUP:
            return Kind.GROUP
        return Kind.PYTHON if value is Kind.PYTHON else Kind.UNKNOWN


_PYTHON_BUILTINS = frozenset(
    {
        "len",
        "range",
        "isinstance",
        "issubclass",
        "hasattr",
        "getattr",
        "callable",
        "int",
        "float",
        "str",
        "bool",
        "repr",
        "format",
        "id",
        "type",
        "print",
        "sorted",
        "enumerate",
        "zip",
        "abs",
        "round",
        "divmod",
        "hash",
        "ord",
        "chr",
    }
)


def none_branch(test: cst.BaseExpression) -> str | None:
    """ "body"/"orelse": the branch of `x is None` / `self.size is not None` where the value is
    None, i.e. a fallback for a missing argument or configuration."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    comp = test.comparisons[0]
    subject = test.left
    if not (type(comp.comparator) is cst.Name and comp.comparator.value == "None"):
        return None
    if type(subject) not in (cst.Name, cst.Attribute):
        return None
    if type(comp.operator) is cst.Is:
        return "body"
    if type(comp.operator) is cst.IsNot:
        return "orelse"
    return None


def _is_self_attr(node: cst.BaseExpression) -> bool:
    return (
        type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self"
    )


def configured_branch(node: cst.IfExp) -> str | None:
    """`self.in_size if self.fixed_size else x.shape[2:]`: the branch that computes what a
    configured attribute otherwise provides is a fallback."""
    test = node.test
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test = test.expression
    if not _is_self_attr(test):
        return None
    if _is_self_attr(node.body):
        return "orelse"
    if _is_self_attr(node.orelse):
        return "body"
    return None


def initialising_branch(node: cst.If) -> str | None:
    """ "body"/"orelse": the branch of `if self.cache is None:` (`not self.ready`,
    `not hasattr(self, "cache")`, `not isinstance(self.gen, Block)`) that assigns the attribute
    it tests, i.e. that runs on an object's first call only, hybridized or not."""
    test = node.test
    negate = False
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        negate, test = True, test.expression
    attr: str | None = None
    unset = True  # the test is true while the attribute is unset
    if _is_self_attr(test):
        attr, unset = test.attr.value, False  # type: ignore[attr-defined]
    elif (
        type(test) is cst.Comparison
        and len(test.comparisons) == 1
        and _is_self_attr(test.left)
        and type(test.comparisons[0].comparator) is cst.Name
        and test.comparisons[0].comparator.value == "None"  # type: ignore[attr-defined]
        and type(test.comparisons[0].operator) in (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual)
    ):
        attr = test.left.attr.value  # type: ignore[attr-defined]
        unset = type(test.comparisons[0].operator) in (cst.Is, cst.Equal)
    elif (
        type(test) is cst.Call
        and type(test.func) is cst.Name
        and test.func.value == "hasattr"
        and len(test.args) == 2
        and type(test.args[0].value) is cst.Name
        and test.args[0].value.value == "self"
        and type(test.args[1].value) is cst.SimpleString
    ):
        attr, unset = test.args[1].value.evaluated_value, False  # type: ignore[assignment]
    elif (
        type(test) is cst.Call
        and type(test.func) is cst.Name
        and test.func.value == "isinstance"
        and len(test.args) == 2
        and _is_self_attr(test.args[0].value)
    ):
        attr, unset = test.args[0].value.attr.value, False  # type: ignore[attr-defined]
    if attr is None:
        return None
    which = "body" if unset != negate else "orelse"
    if which == "body":
        suite: cst.BaseSuite | None = node.body
    else:
        suite = node.orelse.body if type(node.orelse) is cst.Else else None
    assigned = suite is not None and any(
        _is_self_attr(t.target) and t.target.attr.value == attr  # type: ignore[attr-defined]
        for n in iter_nodes(suite, stop=(cst.FunctionDef, cst.ClassDef, cst.Lambda))
        if type(n) is cst.Assign
        for t in n.targets
    )
    return which if assigned else None


def narrow(test: cst.BaseExpression, env: Env) -> tuple[Env, Env]:
    """Environments for the true and false branches of `test` (None checks on names)."""
    body, orelse = dict(env), dict(env)
    for conjunct, positive in _conjuncts(test, True):
        if type(conjunct) is not cst.Comparison or len(conjunct.comparisons) != 1:
            continue
        comp = conjunct.comparisons[0]
        left, right = conjunct.left, comp.comparator
        name = left.value if type(left) is cst.Name else None
        other = right
        if name is None and type(right) is cst.Name and right.value != "None":
            name, other = right.value, left
        if name is None or not (type(other) is cst.Name and other.value == "None"):
            continue
        is_none = type(comp.operator) in (cst.Is, cst.Equal)
        if type(comp.operator) not in (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual):
            continue
        current = env.get(name)
        if current is None:
            continue
        not_none = Kind.TENSOR if current is Kind.OPTIONAL else current
        if is_none == positive:  # the true branch knows `name is None`
            body[name] = Kind.NONE
            if positive and _single(test):
                orelse[name] = not_none
        else:
            body[name] = not_none
            if positive and _single(test):
                orelse[name] = Kind.NONE
    return body, orelse


def _single(test: cst.BaseExpression) -> bool:
    return type(test) is not cst.BooleanOperation


def _conjuncts(
    test: cst.BaseExpression, positive: bool
) -> Iterator[tuple[cst.BaseExpression, bool]]:
    # A loop, not recursion: an `and` chain can be thousands of operands long.
    pending = [test]
    while pending:
        node = pending.pop()
        if type(node) is cst.BooleanOperation and type(node.operator) is cst.And:
            pending.append(node.right)
            pending.append(node.left)
        elif (
            type(node) is cst.UnaryOperation
            and type(node.operator) is cst.Not
            and type(node.expression) is cst.Comparison
        ):
            yield node.expression, not positive
        else:
            yield node, positive


def params_of(fn: cst.FunctionDef) -> list[cst.Param]:
    """Positional and keyword parameters in order (`*args` and `**kwargs` excluded)."""
    p = fn.params
    return [*p.posonly_params, *p.params, *p.kwonly_params]
