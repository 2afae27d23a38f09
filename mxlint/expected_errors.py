"""Code that runs where an error is expected: a test checking that MXNet rejects something.

A rule whose finding is an error MXNet raises has nothing to report there: the body of a `try`
that catches that error, of `pytest.raises()` / `self.assertRaises()`, or of a test function
decorated with nose's `@raises(...)`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import libcst as cst

from mxlint.names import last_name
from mxlint.walker import iter_nodes

#: Context managers and decorators of test frameworks that expect their body to raise.
_RAISES = frozenset(
    {"raises", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp", "assert_raises"}
)
#: Exception classes that catch every error a rule reports.
_CATCH_ALL = frozenset({"Exception", "BaseException"})

Resolve = Callable[[cst.BaseExpression], "str | None"]


def expects_error(
    resolve: Resolve,
    stack: Sequence[cst.CSTNode],
    node: cst.CSTNode,
    errors: Collection[str],
) -> bool:
    """Whether `node` (`stack` its enclosing statements, outermost first) runs where one of
    `errors` (class names: `MXNetError`, `ValueError`) is expected to be raised."""
    for index, outer in enumerate(stack):
        if type(outer) is cst.FunctionDef:
            if any(_raises_call(d.decorator, errors) for d in outer.decorators):
                return True
        elif type(outer) is cst.With:
            if any(_raises_call(item.item, errors) for item in outer.items):
                return True
        elif type(outer) is cst.Try:
            inner = stack[index + 1] if index + 1 < len(stack) else node
            if not any(n is inner for n in iter_nodes(outer.body)):
                continue  # in a handler, `else` or `finally`: nothing is caught there
            for handler in outer.handlers:
                if any(_names_error(resolve, t, errors) for t in _caught(handler.type)):
                    return True
    return False


def _raises_call(expr: cst.BaseExpression, errors: Collection[str]) -> bool:
    """`pytest.raises(E)`, `self.assertRaises(E)`, `@raises(E)` with E one of `errors`."""
    if type(expr) is not cst.Call or last_name(expr.func) not in _RAISES or not expr.args:
        return False
    return any(_named(t, errors) for t in _caught(expr.args[0].value))


def _caught(expr: cst.BaseExpression | None) -> list[cst.BaseExpression]:
    if expr is None:
        return []
    if type(expr) is cst.Tuple:
        return [e.value for e in expr.elements]
    return [expr]


def _named(expr: cst.BaseExpression, errors: Collection[str]) -> bool:
    name = last_name(expr)
    return name in errors or name in _CATCH_ALL


def _names_error(resolve: Resolve, expr: cst.BaseExpression, errors: Collection[str]) -> bool:
    resolved = resolve(expr) or ""
    return _named(expr, errors) or resolved.rsplit(".", 1)[-1] in errors
