"""What the lifecycle rules share: the state of each network a script builds, followed in
execution order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import libcst as cst

from mxlint.walker import children

_NESTED = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


@dataclass
class _NetState:
    known_block: bool = False
    project_class: str | None = None
    #: A project function in another file that returned the network (it may hybridize it).
    builder: str | None = None
    hybridized: bool = False
    forwarded: bool = False
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
        if current is not node and isinstance(current, _NESTED):
            continue
        kids = list(children(current))
        kids.reverse()
        stack.extend((k, current, parent) for k in kids)
