"""Scopes and bindings: which statement binds each name, in which scope.

Rules used to ask "is `x` a parameter? where was it assigned? is `nd` the import or a local?"
each with its own walk. Here a file is read once into scopes (module, class, function, lambda,
comprehension) holding the bindings of their names, as pyflakes' checks read its Binding/Scope
model: assignments with the value bound, loop and `with` targets, parameters with their
defaults, imports, definitions, `global`/`nonlocal` declarations, walrus targets (bound in the
enclosing function), and the `self.x` attributes a class's methods assign.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

import libcst as cst

from mxlint.walker import TreeIndex, iter_nodes, locate

BindingKind = Literal[
    "parameter",
    "assignment",
    "augmented",
    "loop",
    "with",
    "except",
    "import",
    "function",
    "class",
    "walrus",
    "comprehension",
    "attribute",
]
ScopeKind = Literal["module", "class", "function", "lambda", "comprehension"]

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda, *_COMPREHENSIONS)
_SCOPE_TYPES = frozenset(_SCOPES)
#: The node types a scope's reading stops at (one set lookup for every other node).
_INTERESTING = _SCOPE_TYPES | {
    cst.Assign,
    cst.AnnAssign,
    cst.AugAssign,
    cst.For,
    cst.CompFor,
    cst.WithItem,
    cst.ExceptHandler,
    cst.NamedExpr,
    cst.Import,
    cst.ImportFrom,
    cst.Global,
    cst.Nonlocal,
}


@dataclass(frozen=True)
class Binding:
    """One place a name gets bound."""

    name: str
    kind: BindingKind
    #: The binding statement or header: Assign, AnnAssign, AugAssign, For, CompFor, WithItem,
    #: ExceptHandler, Import/ImportFrom, FunctionDef/ClassDef, NamedExpr, or the Param.
    node: cst.CSTNode
    #: The expression bound when the target is the name itself (`x = value`), a parameter's
    #: default; None when the name is one part of an unpacking or has no expression.
    value: cst.BaseExpression | None = None


@dataclass(eq=False)
class Scope:
    """The names one scope binds."""

    kind: ScopeKind
    node: cst.CSTNode
    parent: Scope | None
    names: dict[str, list[Binding]] = field(default_factory=dict)
    params: list[str] = field(default_factory=list)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)
    #: For a class: `self.<name>` assigned in its methods.
    attributes: dict[str, list[Binding]] = field(default_factory=dict)

    def bind(self, binding: Binding) -> None:
        self.names.setdefault(binding.name, []).append(binding)

    def local(self, name: str) -> bool:
        """Bound here (not declared global or nonlocal)."""
        return name in self.names and name not in self.globals and name not in self.nonlocals

    def bindings(self, name: str, kinds: frozenset[str] | None = None) -> list[Binding]:
        found = self.names.get(name, [])
        return found if kinds is None else [b for b in found if b.kind in kinds]

    def lookup(self, name: str) -> Scope | None:
        """The scope whose binding `name` refers to from here (class bodies are not seen from
        the functions inside them), or None (a builtin or an undefined name)."""
        scope: Scope | None = self
        first = True
        while scope is not None:
            if (first or scope.kind != "class") and scope.local(name):
                return scope
            if name in scope.globals:
                return self.module()
            first = False
            scope = scope.parent
        return None

    def module(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope


class Bindings:
    """The scopes of one module, found by their syntax nodes."""

    def __init__(self, module: cst.Module) -> None:
        self.module = Scope("module", module, None)
        self._scopes: dict[int, Scope] = {id(module): self.module}
        self._spans: tuple[TreeIndex, list[int], list[int], list[Scope]] | None = None
        self._members: dict[int, list[cst.CSTNode]] | None = None
        self._outer: list[int] = []
        self._members = _scope_members(module)
        pending: list[Scope] = [self.module]
        while pending:
            scope = pending.pop()
            pending.extend(self._read(scope))
        self._members = None
        #: Names some function, class or comprehension binds to something other than an
        #: import: the only names a local binding can shadow.
        self.rebound = frozenset(
            name
            for scope in self._scopes.values()
            if scope.parent is not None
            for name, found in scope.names.items()
            if any(b.kind != "import" for b in found)
        )

    def scope(self, node: cst.CSTNode) -> Scope | None:
        """The scope a Module, FunctionDef, ClassDef, Lambda or comprehension opens."""
        return self._scopes.get(id(node))

    def scope_at(self, node: cst.CSTNode) -> Scope:
        """The innermost scope `node` sits in (the module when the file's tree index does not
        hold `node`)."""
        found = locate(node)
        if found is None:
            return self.module
        index, i = found
        if self._spans is None or self._spans[0] is not index:
            self._spans = (index, *self._index_spans(index))
        _, starts, ends, scopes = self._spans
        k = bisect_right(starts, i) - 1
        while k >= 0:
            if i < ends[k]:
                return scopes[k]
            k = self._outer[k]
        return self.module

    def _index_spans(self, index: TreeIndex) -> tuple[list[int], list[int], list[Scope]]:
        spans = []
        for scope in self._scopes.values():
            i = index.index_of(scope.node)
            if i is not None and scope.parent is not None:
                spans.append((i, index.end[i], scope))
        spans.sort(key=lambda span: span[0])
        position = {id(scope): k for k, (_, _, scope) in enumerate(spans)}
        #: For each span, the span of its enclosing scope (-1: the module).
        self._outer = [
            position.get(id(scope.parent), -1) if scope.parent is not None else -1
            for _, _, scope in spans
        ]
        return [s for s, _, _ in spans], [e for _, e, _ in spans], [c for _, _, c in spans]

    def shadowed(self, name: str, scope: Scope) -> bool:
        """Whether `name`, used in `scope`, refers to something other than an import: a
        parameter, a local assignment, a definition of an enclosing function. (A module that
        binds an imported name again does so in an order only the module's reading knows.)"""
        found = scope.lookup(name)
        if found is None or found.parent is None:
            return False
        return any(b.kind != "import" for b in found.names[name])

    # -- reading -------------------------------------------------------------------------------

    def _open(self, node: cst.CSTNode, parent: Scope) -> Scope:
        if type(node) is cst.FunctionDef:
            kind: ScopeKind = "function"
        elif type(node) is cst.ClassDef:
            kind = "class"
        elif type(node) is cst.Lambda:
            kind = "lambda"
        else:
            kind = "comprehension"
        scope = Scope(kind, node, parent)
        self._scopes[id(node)] = scope
        if isinstance(node, (cst.FunctionDef, cst.Lambda)):
            p = node.params
            for param in (*p.posonly_params, *p.params, *p.kwonly_params):
                scope.params.append(param.name.value)
                scope.bind(Binding(param.name.value, "parameter", param, param.default))
            for star in (p.star_arg, p.star_kwarg):
                if type(star) is cst.Param:
                    scope.params.append(star.name.value)
                    scope.bind(Binding(star.name.value, "parameter", star))
        return scope

    def _read(self, scope: Scope) -> list[Scope]:
        """Bind what `scope` binds; the scopes nested in it, opened."""
        nested: list[Scope] = []
        root = scope.node
        owner = _enclosing_function(scope)
        self_name = _self_parameter(scope)
        members = self._members
        if members is not None:
            nodes = members.get(id(root), [])
        else:
            nodes = [n for n in iter_nodes(root, stop=_SCOPES) if type(n) in _INTERESTING]
        for node in nodes:
            kind = type(node)
            if node is not root and kind in _SCOPE_TYPES:
                if isinstance(node, cst.FunctionDef):
                    scope.bind(Binding(node.name.value, "function", node))
                elif isinstance(node, cst.ClassDef):
                    scope.bind(Binding(node.name.value, "class", node))
                nested.append(self._open(node, scope))
            elif kind is cst.Assign:
                assert isinstance(node, cst.Assign)
                for target in node.targets:
                    self._target(scope, target.target, "assignment", node, node.value, self_name)
            elif kind is cst.AnnAssign:
                assert isinstance(node, cst.AnnAssign)
                self._target(scope, node.target, "assignment", node, node.value, self_name)
            elif kind is cst.AugAssign:
                assert isinstance(node, cst.AugAssign)
                self._target(scope, node.target, "augmented", node, None, self_name)
            elif kind is cst.For:
                assert isinstance(node, cst.For)
                self._target(scope, node.target, "loop", node, None, None)
            elif kind is cst.CompFor:
                assert isinstance(node, cst.CompFor)
                self._target(scope, node.target, "comprehension", node, None, None)
            elif kind is cst.WithItem:
                assert isinstance(node, cst.WithItem)
                if node.asname is not None:
                    self._target(scope, node.asname.name, "with", node, None, None)
            elif kind is cst.ExceptHandler:
                assert isinstance(node, cst.ExceptHandler)
                if node.name is not None and type(node.name.name) is cst.Name:
                    scope.bind(Binding(node.name.name.value, "except", node))
            elif kind is cst.NamedExpr:
                assert isinstance(node, cst.NamedExpr)
                if type(node.target) is cst.Name:
                    owner.bind(Binding(node.target.value, "walrus", node, node.value))
            elif kind is cst.Import or kind is cst.ImportFrom:
                assert isinstance(node, (cst.Import, cst.ImportFrom))
                for name in _imported_names(node):
                    scope.bind(Binding(name, "import", node))
            elif kind is cst.Global:
                assert isinstance(node, cst.Global)
                scope.globals.update(n.name.value for n in node.names)
            elif kind is cst.Nonlocal:
                assert isinstance(node, cst.Nonlocal)
                scope.nonlocals.update(n.name.value for n in node.names)
        return nested

    def _target(
        self,
        scope: Scope,
        target: cst.BaseExpression,
        kind: BindingKind,
        node: cst.CSTNode,
        value: cst.BaseExpression | None,
        self_name: str | None,
    ) -> None:
        if type(target) is cst.Name:
            scope.bind(Binding(target.value, kind, node, value))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._target(scope, el.value, kind, node, None, self_name)
        elif type(target) is cst.StarredElement:
            self._target(scope, target.value, kind, node, None, self_name)
        elif (
            type(target) is cst.Attribute
            and self_name is not None
            and type(target.value) is cst.Name
            and target.value.value == self_name
            and scope.parent is not None
        ):
            scope.parent.attributes.setdefault(target.attr.value, []).append(
                Binding(target.attr.value, "attribute", node, value)
            )


def _scope_members(module: cst.Module) -> dict[int, list[cst.CSTNode]] | None:
    """The nodes of `_INTERESTING` types each scope holds (by `id` of the node that opens it),
    in pre-order, from one pass over the file's index; None when the index does not hold
    `module` (each scope then walks its own subtree)."""
    found = locate(module)
    if found is None:
        return None
    index, _ = found
    order, end = index.order, index.end
    members: dict[int, list[cst.CSTNode]] = {id(module): []}
    #: (end of the scope's subtree, its members), innermost last.
    open_scopes: list[tuple[int, list[cst.CSTNode]]] = [(len(order), members[id(module)])]
    for i in index.indices_of(_INTERESTING):
        while i >= open_scopes[-1][0]:
            open_scopes.pop()
        node = order[i]
        open_scopes[-1][1].append(node)
        if type(node) in _SCOPE_TYPES:
            own: list[cst.CSTNode] = []
            members[id(node)] = own
            open_scopes.append((end[i], own))
    return members


def _enclosing_function(scope: Scope) -> Scope:
    """Where a walrus in `scope` binds: the nearest scope that is not a comprehension."""
    while scope.kind == "comprehension" and scope.parent is not None:
        scope = scope.parent
    return scope


def _self_parameter(scope: Scope) -> str | None:
    """The first parameter of a method (its instance), if `scope` is one."""
    if scope.kind != "function" or scope.parent is None or scope.parent.kind != "class":
        return None
    node = scope.node
    assert isinstance(node, cst.FunctionDef)
    if any(
        type(d.decorator) is cst.Name and d.decorator.value in ("staticmethod", "classmethod")
        for d in node.decorators
    ):
        return None
    return scope.params[0] if scope.params else None


def _imported_names(node: cst.Import | cst.ImportFrom) -> Iterator[str]:
    if isinstance(node.names, cst.ImportStar):
        return
    for alias in node.names:
        if alias.asname is not None and type(alias.asname.name) is cst.Name:
            yield alias.asname.name.value
        elif type(node) is cst.Import:
            name: cst.BaseExpression = alias.name
            while isinstance(name, cst.Attribute):
                name = name.value
            if type(name) is cst.Name:
                yield name.value
        elif type(alias.name) is cst.Name:
            yield alias.name.value
