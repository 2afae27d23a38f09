"""Positions for reported nodes only.

libcst's PositionProvider records a range for every node of the module and costs about twice
the parse; a file with findings needs the ranges of a handful of nodes. This codegen state
tracks line and column as tokens are emitted and records only the requested nodes, with the
same semantics as PositionProvider (syntactic positions where a node defines them, whitespace
inclusive ones otherwise).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import libcst as cst
from libcst._nodes.internal import CodegenState

Pos = tuple[int, int]  # (line 1-based, column 0-based)
Range = tuple[Pos, Pos]


class _TargetedState(CodegenState):
    __slots__ = ("line", "column", "targets", "found", "_starts")

    def __init__(self, module: cst.Module, targets: set[cst.CSTNode]) -> None:
        super().__init__(default_indent=module.default_indent,
                         default_newline=module.default_newline)
        self.line = 1
        self.column = 0
        self.targets = targets
        self.found: dict[cst.CSTNode, Range] = {}
        self._starts: dict[cst.CSTNode, Pos] = {}

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        newlines = value.count("\n") + value.count("\r") - value.count("\r\n")
        if newlines:
            self.line += newlines
            last = max(value.rfind("\n"), value.rfind("\r"))
            self.column = len(value) - last - 1
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if node in self.targets:
            self._starts[node] = (self.line, self.column)

    def after_codegen(self, node: cst.CSTNode) -> None:
        if node in self.targets:
            start = self._starts.pop(node)
            self.found.setdefault(node, (start, (self.line, self.column)))

    @contextmanager
    def record_syntactic_position(
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> Iterator[None]:
        if node not in self.targets:
            yield
            return
        start = (self.line, self.column)
        yield
        end = (self.line, self.column)
        if start_node is not None and start_node in self.found:
            start = self.found[start_node][0]
        if end_node is not None and end_node in self.found:
            end = self.found[end_node][1]
        self.found[node] = (start, end)


def node_ranges(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[cst.CSTNode, Range]:
    """Source ranges of `nodes` within `module`, one codegen pass for all of them."""
    targets = set(nodes)
    if not targets:
        return {}
    # start_node/end_node hoisting needs those children recorded too.
    state = _TargetedState(module, targets | _hoisted_children(targets))
    module._codegen(state)
    return {node: state.found[node] for node in targets if node in state.found}


def _hoisted_children(nodes: set[cst.CSTNode]) -> set[cst.CSTNode]:
    """Children whose positions PositionProvider hoists into their parent's range."""
    extra: set[cst.CSTNode] = set()
    for node in nodes:
        for attr in ("decorators", "body", "name", "leading_lines"):
            value = getattr(node, attr, None)
            if isinstance(value, cst.CSTNode):
                extra.add(value)
            elif isinstance(value, (list, tuple)):
                extra.update(v for v in value if isinstance(v, cst.CSTNode))
    return extra
