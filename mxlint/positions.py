"""Positions for reported nodes only.

libcst's PositionProvider records a range for every node of the module and costs about twice
the parse; a file with findings needs the ranges of a handful of nodes. This codegen state
tracks line and column as tokens are emitted and records only the requested nodes, with the
same semantics as PositionProvider (syntactic positions where a node defines them, whitespace
inclusive ones otherwise).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import libcst as cst
from libcst._nodes.internal import CodegenState

from mxlint.parsing import cpython_tree
from mxlint.walker import iter_nodes

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


def node_ranges(module: cst.Module, nodes: Iterable[cst.CSTNode],
                source: str | None = None) -> dict[cst.CSTNode, Range]:
    """Source ranges of `nodes` within `module`.

    With the module's `source`, only the top-level statements that hold a node are generated
    again, each placed at the line Python's own (C) parser gives it; otherwise, or if the two
    parsers disagree, one codegen pass over the whole module.
    """
    targets = set(nodes)
    if not targets:
        return {}
    if source is not None and module not in targets and len(module.body) > 1:
        found = _by_statement(module, targets, source)
        if found is not None:
            return found
    return _ranges(module, targets)


def _ranges(module: cst.Module, targets: set[cst.CSTNode]) -> dict[cst.CSTNode, Range]:
    # start_node/end_node hoisting needs those children recorded too.
    state = _TargetedState(module, targets | _hoisted_children(targets))
    module._codegen(state)
    return {node: state.found[node] for node in targets if node in state.found}


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _statement_lines(module: cst.Module, source: str) -> list[int] | None:
    """The first line of each top-level statement (its first decorator), from `ast`."""
    try:
        tree = cpython_tree(source)  # usually the tree the parse check just built
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    body = tree.body
    lines: list[int] = []
    index = 0
    for stmt in module.body:
        if index >= len(body):
            return None
        node = body[index]
        decorators = getattr(node, "decorator_list", None)
        lines.append(decorators[0].lineno if decorators else node.lineno)
        index += len(stmt.body) if type(stmt) is cst.SimpleStatementLine else 1
    return lines if index == len(body) else None


def _by_statement(module: cst.Module, targets: set[cst.CSTNode], source: str
                  ) -> dict[cst.CSTNode, Range] | None:
    starts = _statement_lines(module, source)
    if starts is None:
        return None
    source_lines = _LINE_BREAK.split(source)
    remaining = set(targets)
    out: dict[cst.CSTNode, Range] = {}
    for stmt, first in zip(module.body, starts):
        if not remaining:
            break
        inside = {n for n in iter_nodes(stmt) if n in remaining}
        if not inside:
            continue
        remaining -= inside
        alone = stmt.with_changes(leading_lines=())
        mini = module.with_changes(header=(), body=(alone,), footer=())
        wanted = {alone if n is stmt else n for n in inside}
        found = _ranges(mini, wanted)
        if first > len(source_lines) or \
                _LINE_BREAK.split(mini.code, 1)[0] != source_lines[first - 1]:
            return None  # the parsers disagree on where this statement starts
        shift = first - 1
        for node in inside:
            rng = found.get(alone if node is stmt else node)
            if rng is not None:
                (sl, sc), (el, ec) = rng
                out[node] = ((sl + shift, sc), (el + shift, ec))
    if remaining:
        return None  # nodes outside the statements (header or footer comments)
    return out


def _hoisted_children(nodes: set[cst.CSTNode]) -> set[cst.CSTNode]:
    """Children whose positions PositionProvider hoists into their parent's range, and theirs
    in turn: a compound statement ends where the last statement of its body ends."""
    extra: set[cst.CSTNode] = set()
    pending = list(nodes)
    while pending:
        node = pending.pop()
        for attr in ("decorators", "body", "name", "leading_lines", "orelse", "handlers",
                     "finalbody"):
            value = getattr(node, attr, None)
            found: list[cst.CSTNode] = []
            if isinstance(value, cst.CSTNode):
                found.append(value)
            elif isinstance(value, (list, tuple)):
                found.extend(v for v in value if isinstance(v, cst.CSTNode))
            for child in found:
                if child not in extra:
                    extra.add(child)
                    pending.append(child)
    return extra
