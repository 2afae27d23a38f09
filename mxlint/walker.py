"""One traversal of a libcst tree that feeds every checker.

libcst's own `visit` rebuilds every node on the way back up (it is a transformer underneath) and
costs about as much as the parse. This walker follows the dataclass fields that can hold
statements and expressions, skips whitespace and punctuation, and calls each checker's
`visit_<Node>`/`leave_<Node>` methods: about 5 % of the parse.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import libcst as cst

_SKIP_FIELDS = frozenset(
    {
        "lpar", "rpar", "comma", "header", "footer", "leading_lines", "lines_after_decorators",
        "semicolon", "colon", "equal", "dot", "star", "whitespace", "newline",
        "trailing_whitespace", "default_indicator", "asynchronous", "lbracket", "rbracket",
        "lbrace", "rbrace", "indent", "arrow", "walrus", "star_tok", "first_line",
        "empty_lines",
    }
)
_FIELDS: dict[type, tuple[str, ...]] = {}

#: Nodes that open a region checkers ask about (`ctx.stack`).
STRUCTURAL: tuple[type[cst.CSTNode], ...] = (
    cst.ClassDef, cst.FunctionDef, cst.For, cst.While, cst.With, cst.If, cst.Try, cst.Lambda,
    cst.TryStar,
)
_STRUCTURAL = frozenset(STRUCTURAL)


def _fields(typ: type) -> tuple[str, ...]:
    names = _FIELDS.get(typ)
    if names is None:
        names = tuple(
            f.name
            for f in dataclasses.fields(typ)
            if f.name not in _SKIP_FIELDS and not f.name.startswith("whitespace")
        )
        _FIELDS[typ] = names
    return names


#: type -> is it a CSTNode. `isinstance` against libcst's ABCs goes through
#: `ABCMeta.__instancecheck__`, which dominated tree walks; a type is asked once.
_IS_NODE: dict[type, bool] = {}
_SEQUENCES = (tuple, list)


def _is_node_type(typ: type) -> bool:
    known = _IS_NODE.get(typ)
    if known is None:
        known = _IS_NODE[typ] = issubclass(typ, cst.CSTNode)
    return known


def _kids(node: cst.CSTNode) -> list[cst.CSTNode]:
    out: list[cst.CSTNode] = []
    is_node = _IS_NODE
    for name in _fields(type(node)):
        value = getattr(node, name)
        typ = type(value)
        flag = is_node.get(typ)
        if flag is None:
            flag = _is_node_type(typ)
        if flag:
            out.append(value)
        elif typ in _SEQUENCES:
            for item in value:
                flag = is_node.get(type(item))
                if flag is None:
                    flag = _is_node_type(type(item))
                if flag:
                    out.append(item)
    return out


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Semantic children in source order (no whitespace or punctuation nodes)."""
    return iter(_kids(node))


_STOPS: dict[tuple[type, ...], dict[type, bool]] = {}


def iter_nodes(node: cst.CSTNode, stop: tuple[type[cst.CSTNode], ...] = ()) -> Iterator[cst.CSTNode]:
    """Pre-order descendants of `node` (itself included); do not enter nodes of `stop` types
    below the root (e.g. nested function definitions)."""
    stops = _STOPS.get(stop)
    if stops is None:
        stops = _STOPS[stop] = {}
    stack = [node]
    root = node
    while stack:
        current = stack.pop()
        yield current
        if stop and current is not root:
            typ = type(current)
            halt = stops.get(typ)
            if halt is None:
                halt = stops[typ] = issubclass(typ, stop)
            if halt:
                continue
        kids = _kids(current)
        kids.reverse()
        stack.extend(kids)


Handler = Callable[[cst.CSTNode], object]
OnError = Callable[[int, BaseException], None]


def walk(
    module: cst.Module,
    visits: dict[type, list[tuple[int, Handler]]],
    leaves: dict[type, list[tuple[int, Handler]]],
    scope_stack: list[cst.CSTNode],
    on_error: OnError,
) -> None:
    """Walk `module` once, calling handlers (tagged with their checker's index).

    A handler that raises is reported through `on_error` and its checker is dropped for the
    rest of the file; the walk and the other checkers go on.
    """
    failed: set[int] = set()

    def call(handlers: list[tuple[int, Handler]], node: cst.CSTNode) -> None:
        for owner, handler in handlers:
            if owner in failed:
                continue
            try:
                handler(node)
            except Exception as exc:  # a rule bug must not stop the run
                failed.add(owner)
                on_error(owner, exc)

    stack: list[tuple[cst.CSTNode, bool]] = [(module, False)]
    while stack:
        node, leaving = stack.pop()
        typ = type(node)
        if leaving:
            handlers = leaves.get(typ)
            if handlers:
                call(handlers, node)
            if typ in _STRUCTURAL:
                scope_stack.pop()
            continue
        handlers = visits.get(typ)
        if handlers:
            call(handlers, node)
        if typ in _STRUCTURAL:
            scope_stack.append(node)
            stack.append((node, True))
        elif typ in leaves:
            stack.append((node, True))
        kids = [(kid, False) for kid in _kids(node)]
        kids.reverse()
        stack.extend(kids)
