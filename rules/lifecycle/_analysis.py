"""What the lifecycle rules share: the state of each network a script builds, followed in
execution order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import libcst as cst

from mxlint.walker import children

_NESTED = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_NESTED_TYPES = frozenset(_NESTED)


@dataclass
class _NetState:
    """What is known of one network so far: who made it, hybridized, ran, exported it."""

    known_block: bool = False
    project_class: str | None = None
    #: A project function in another file that returned the network (it may hybridize it).
    builder: str | None = None
    #: None: made by something that may have hybridized it (a builder no summary sees into).
    hybridized: bool | None = False
    #: None: hybridized by its maker, which may also have run it.
    forwarded: bool | None = False
    unknown: bool = False
    exports: list[tuple[cst.Call, str]] = field(default_factory=list)


def _walk_with_parent(
    node: cst.CSTNode,
) -> Iterator[tuple[cst.CSTNode, cst.CSTNode | None, cst.CSTNode | None]]:
    """Pre-order (node, parent, grandparent), not entering nested definitions below `node`."""
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None, cst.CSTNode | None]] = [(node, None, None)]
    while stack:
        current, parent, grand = stack.pop()
        yield current, parent, grand
        if current is not node and type(current) in _NESTED_TYPES:
            continue
        kids = list(children(current))
        kids.reverse()
        stack.extend((k, current, parent) for k in kids)


def _functions(module: cst.Module) -> Iterator[tuple[cst.FunctionDef, str | None]]:
    """The module's functions and its classes' methods, with the class a method belongs to
    (`self.build()` in it calls that class's `build`)."""
    for stmt in module.body:
        if type(stmt) is cst.FunctionDef:
            yield stmt, None
        elif type(stmt) is cst.ClassDef and type(stmt.body) is cst.IndentedBlock:
            for inner in stmt.body.body:
                if type(inner) is cst.FunctionDef:
                    yield inner, stmt.name.value
