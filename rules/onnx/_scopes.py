"""Scopes of one file for the ONNX rules: each function (and the module) with the calls and the
name bindings of its own body, and what a path expression spells (`prefix + "-symbol.json"`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

import libcst as cst

from mxlint import knowledge
from mxlint.checker import FileContext
from mxlint.names import dotted_name
from mxlint.walker import children

_NESTED = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
#: Nodes whose body may not run (or run only for some values).
_CONDITIONAL: tuple[type[cst.CSTNode], ...] = (
    cst.If,
    cst.While,
    cst.Try,
    cst.IfExp,
    cst.BooleanOperation,
    cst.ExceptHandler,
    cst.Else,
    cst.Match,
)
#: A binding whose value is not known (a loop variable, `x += 1`, `with ... as x`).
_UNKNOWN: tuple[cst.BaseExpression, int | None] = (cst.Name("None"), -1)


@dataclass
class Scope:
    node: cst.Module | cst.FunctionDef
    parent: Scope | None
    #: name -> every value bound to it in this scope (a tuple target: (value, index))
    bindings: dict[str, list[tuple[cst.BaseExpression, int | None]]] = field(default_factory=dict)
    #: calls of this scope's own body, in source order, with whether they run conditionally
    calls: list[tuple[cst.Call, bool]] = field(default_factory=list)
    params: frozenset[str] = frozenset()
    #: name -> the iterables of the `for` loops of this scope that bind it
    loops: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)

    def lookup(self, name: str) -> list[tuple[cst.BaseExpression, int | None]] | None:
        """The values bound to `name` where this scope reads it; None for a parameter or a
        name bound nowhere in the file (its value is unknown)."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope.params:
                return None
            if name in scope.bindings:
                return scope.bindings[name]
            scope = scope.parent
        return None

    def single(self, name: str) -> tuple[cst.BaseExpression, int | None] | None:
        values = self.lookup(name)
        return values[0] if values is not None and len(values) == 1 else None


def scopes(module: cst.Module) -> list[Scope]:
    """The module and every function of the file (methods too), each with its own body."""
    out: list[Scope] = []

    def visit(node: cst.Module | cst.FunctionDef, parent: Scope | None) -> None:
        params: frozenset[str] = frozenset()
        if type(node) is cst.FunctionDef:
            p = node.params
            every = [*p.posonly_params, *p.params, *p.kwonly_params]
            for star in (p.star_arg, p.star_kwarg):
                if isinstance(star, cst.Param):
                    every.append(star)
            params = frozenset(x.name.value for x in every)
        scope = Scope(node, parent, params=params)
        out.append(scope)
        nested: list[cst.FunctionDef] = []
        _collect(node.body if type(node) is cst.FunctionDef else node, scope, nested, False, True)
        for fn in nested:
            visit(fn, scope)

    visit(module, None)
    return out


def _collect(
    node: cst.CSTNode, scope: Scope, nested: list[cst.FunctionDef], cond: bool, root: bool
) -> None:
    if not root and isinstance(node, _NESTED):
        if type(node) is cst.FunctionDef:
            nested.append(node)
        elif type(node) is cst.ClassDef:
            for stmt in node.body.body:
                if type(stmt) is cst.FunctionDef:
                    nested.append(stmt)
        return
    if type(node) is cst.Assign:
        for target in node.targets:
            _bind(target.target, node.value, scope)
    elif type(node) is cst.AnnAssign and node.value is not None:
        _bind(node.target, node.value, scope)
    elif type(node) is cst.AugAssign or type(node) is cst.For:
        for name in _names(node.target):
            scope.bindings.setdefault(name, []).append(_UNKNOWN)
        if type(node) is cst.For and type(node.target) is cst.Name:
            scope.loops.setdefault(node.target.value, []).append(node.iter)
    elif type(node) is cst.WithItem and node.asname is not None:
        for name in _names(node.asname.name):
            scope.bindings.setdefault(name, []).append(_UNKNOWN)
    elif type(node) is cst.Call:
        scope.calls.append((node, cond))
    inner = cond or isinstance(node, _CONDITIONAL)
    for child in children(node):
        _collect(child, scope, nested, inner, False)


def _names(target: cst.CSTNode) -> Iterator[str]:
    if type(target) is cst.Name:
        yield target.value
    elif type(target) in (cst.Tuple, cst.List):
        for el in target.elements:  # type: ignore[attr-defined]
            yield from _names(el.value)


def _bind(target: cst.BaseExpression, value: cst.BaseExpression, scope: Scope) -> None:
    if type(target) is cst.Name:
        scope.bindings.setdefault(target.value, []).append((value, None))
    elif type(target) in (cst.Tuple, cst.List):
        for index, el in enumerate(target.elements):  # type: ignore[attr-defined]
            if type(el.value) is cst.Name:
                scope.bindings.setdefault(el.value.value, []).append((value, index))
            else:
                for name in _names(el.value):
                    scope.bindings.setdefault(name, []).append(_UNKNOWN)


def template(node: cst.BaseExpression, scope: Scope, depth: int = 0) -> str | None:
    """What a path expression spells, with unknown parts as `{code}`: `prefix + "-symbol.json"`
    and `f"{prefix}-symbol.json"` are both `{prefix}-symbol.json`; a name bound once to a
    string is read through. None when it cannot be read."""
    kind = type(node)
    if kind is cst.SimpleString:
        try:
            value = ast.literal_eval(node.value)  # type: ignore[attr-defined]
        except (ValueError, SyntaxError):
            return None
        return value if isinstance(value, str) else None
    if kind is cst.ConcatenatedString:
        left = template(node.left, scope, depth)  # type: ignore[attr-defined]
        right = template(node.right, scope, depth)  # type: ignore[attr-defined]
        return None if left is None or right is None else left + right
    if kind is cst.FormattedString:
        parts: list[str] = []
        for part in node.parts:  # type: ignore[attr-defined]
            if type(part) is cst.FormattedStringText:
                parts.append(part.value)
            elif part.conversion is None and part.format_spec is None:
                inner = template(part.expression, scope, depth)
                if inner is None:
                    return None
                parts.append(inner)
            else:
                return None
        return "".join(parts)
    if kind is cst.BinaryOperation:
        op = type(node.operator)  # type: ignore[attr-defined]
        if op is cst.Add:
            left = template(node.left, scope, depth)  # type: ignore[attr-defined]
            right = template(node.right, scope, depth)  # type: ignore[attr-defined]
            return None if left is None or right is None else left + right
        if op is cst.Modulo:
            fmt = template(node.left, scope, depth)  # type: ignore[attr-defined]
            right = node.right  # type: ignore[attr-defined]
            values = [e.value for e in right.elements] if type(right) is cst.Tuple else [right]
            return _percent(fmt, [template(v, scope, depth) for v in values])
        return None
    if kind is cst.Call:
        func = dotted_name(node.func)  # type: ignore[attr-defined]
        args = node.args  # type: ignore[attr-defined]
        if any(a.keyword is not None or a.star for a in args):
            return None
        texts = [template(a.value, scope, depth) for a in args]
        if func in ("os.path.join", "osp.join", "path.join") and texts and None not in texts:
            return "/".join(t.rstrip("/") for t in texts if t is not None)
        if (
            type(node.func) is cst.Attribute  # type: ignore[attr-defined]
            and node.func.attr.value == "format"  # type: ignore[attr-defined]
        ):
            fmt = template(node.func.value, scope, depth)  # type: ignore[attr-defined]
            if fmt is None or None in texts or "{}" not in fmt:
                return None
            for text in texts:
                fmt = fmt.replace("{}", text or "", 1)
            return fmt
        return None
    if kind is cst.Name:
        bound = scope.single(node.value) if depth < 4 else None  # type: ignore[attr-defined]
        if bound is not None and bound[1] is None and _stringish(bound[0]):
            inner = template(bound[0], scope, depth + 1)
            if inner is not None:
                return inner
        return "{" + node.value + "}"  # type: ignore[attr-defined]
    if kind is cst.Attribute:
        name = dotted_name(node)
        return "{" + name + "}" if name is not None else None
    return None


def _stringish(node: cst.BaseExpression) -> bool:
    return type(node) in (
        cst.SimpleString,
        cst.ConcatenatedString,
        cst.FormattedString,
        cst.BinaryOperation,
    ) or (type(node) is cst.Call and dotted_name(node.func) in ("os.path.join", "osp.join"))


def _percent(fmt: str | None, values: list[str | None]) -> str | None:
    if fmt is None or None in values:
        return None
    out, index, i = [], 0, 0
    while i < len(fmt):
        if fmt[i] == "%" and i + 1 < len(fmt) and fmt[i + 1] in "sdi":
            if index >= len(values):
                return None
            out.append(values[index] or "")
            index += 1
            i += 2
            continue
        if fmt[i] == "%":
            return None
        out.append(fmt[i])
        i += 1
    return "".join(out) if index == len(values) else None


def canonical(ctx: FileContext, func: cst.BaseExpression) -> str | None:
    """The MXNet (or other) name a called expression resolves to, in its canonical spelling."""
    name = ctx.resolve(func)
    return knowledge.canonical(name) if name is not None else None
