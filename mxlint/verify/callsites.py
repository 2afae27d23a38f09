"""The project's own call sites, read statically (the `ast` module; nothing is imported): the
inputs a block is called with where they are literal arrays (`net(nd.ones((2, 4)), mask)` with
`mask = nd.zeros((2, 1))`), so `--verify` runs a block on the shapes its project uses before it
searches for others.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

#: Array constructors whose first positional argument (or `shape=`) is the shape.
SHAPED = {"ones", "zeros", "empty", "full", "uniform", "normal", "randn", "randint", "ones_like"}
INT_DTYPES = ("int", "uint", "bool")


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _literal(node: ast.expr | None) -> Any:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None


def _shape(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, int) and value > 0:
        return (value,)
    if isinstance(value, (tuple, list)) and value and all(isinstance(d, int) for d in value):
        return tuple(value)
    return None


def array_input(node: ast.expr) -> dict[str, Any] | None:
    """`nd.ones((2, 4))`, `mx.nd.random.uniform(shape=(1, 8))`, `nd.array([[1, 2]])`: the
    input it makes ({"shape", "integer", "high"}), else None."""
    if not isinstance(node, ast.Call):
        return None
    name = _name(node.func)
    keywords = {k.arg: k.value for k in node.keywords if k.arg}
    dtype = _literal(keywords.get("dtype"))
    integer = isinstance(dtype, str) and dtype.startswith(INT_DTYPES)
    if name == "array" and node.args:
        value = _literal(node.args[0])
        if value is None:
            return None
        shape: list[int] = []
        while isinstance(value, (list, tuple)):
            shape.append(len(value))
            value = value[0] if value else None
        return {"shape": shape, "integer": integer or isinstance(value, int), "high": 5}
    if name not in SHAPED:
        return None
    given = keywords.get("shape")
    if given is None and name in ("uniform", "normal", "randint"):
        return None  # positional low/high come first: only `shape=` is read
    if given is None and node.args:
        given = node.args[0]
    shape_t = _shape(_literal(given))
    if shape_t is None:
        return None
    return {"shape": list(shape_t), "integer": integer or name == "randint", "high": 5}


class _Scope:
    """Names bound once in a function or module body to an expression."""

    def __init__(self, body: list[ast.stmt]) -> None:
        self.values: dict[str, ast.expr] = {}
        self.count: dict[str, int] = {}
        for node in body:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Assign) and len(sub.targets) == 1:
                    self._bind(sub.targets[0], sub.value)

    def _bind(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.count[target.id] = self.count.get(target.id, 0) + 1
            self.values[target.id] = value
        elif (
            isinstance(target, ast.Tuple)
            and isinstance(value, ast.Tuple)
            and len(target.elts) == len(value.elts)
        ):
            for t, v in zip(target.elts, value.elts):
                self._bind(t, v)

    def value(self, name: str) -> ast.expr | None:
        return self.values.get(name) if self.count.get(name) == 1 else None


def _scopes(tree: ast.Module) -> Iterator[tuple[list[ast.stmt], _Scope]]:
    top = [
        n
        for n in tree.body
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]
    yield top, _Scope(top)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.body, _Scope(node.body)


def _resolve(node: ast.expr, scope: _Scope) -> dict[str, Any] | None:
    if isinstance(node, ast.Name):
        bound = scope.value(node.id)
        return array_input(bound) if bound is not None else None
    return array_input(node)


def block_inputs(cls: str, tree: ast.Module) -> list[list[dict[str, Any]]]:
    """The literal inputs `cls` is called with in this module: `Cls(...)(a, b)` or
    `v = Cls(...)` then `v(a, b)` in the same scope."""
    out: list[list[dict[str, Any]]] = []
    for body, scope in _scopes(tree):
        instances = {
            name
            for name, value in scope.values.items()
            if scope.count.get(name) == 1
            and isinstance(value, ast.Call)
            and _name(value.func) == cls
        }
        for stmt in body:
            for node in ast.walk(stmt):
                if not isinstance(node, ast.Call) or node.keywords:
                    continue
                func = node.func
                called = (isinstance(func, ast.Call) and _name(func.func) == cls) or (
                    isinstance(func, ast.Name) and func.id in instances
                )
                if not called or not node.args:
                    continue
                if any(isinstance(a, ast.Starred) for a in node.args):
                    continue
                inputs = [_resolve(a, scope) for a in node.args]
                if all(i is not None for i in inputs):
                    entry = [i for i in inputs if i is not None]
                    if entry not in out:
                        out.append(entry)
    return out
