"""Positions for reported nodes only.

libcst's PositionProvider records a range for every node of the module and costs about twice
the parse; a file with findings needs the ranges of a handful of nodes. This codegen state
tracks line and column as tokens are emitted and records only the requested nodes, with the
same semantics as PositionProvider (syntactic positions where a node defines them, whitespace
inclusive ones otherwise).
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext

import libcst as cst
from libcst._nodes.internal import CodegenState

from mxlint import walker
from mxlint.parsing import cpython_tree

Pos = tuple[int, int]  # (line 1-based, column 0-based)
Range = tuple[Pos, Pos]


class _TargetedState(CodegenState):
    """Codegen that tracks line and column; every node of the statement passes through its
    hooks, so a node that is not a target costs one lookup of its `id` (a node's own `__hash__`
    is a Python call) and no context manager of its own."""

    __slots__ = ("line", "column", "targets", "found", "_starts")

    def __init__(
        self, module: cst.Module, targets: set[cst.CSTNode], line: int = 1, indent: str = ""
    ) -> None:
        super().__init__(
            default_indent=module.default_indent, default_newline=module.default_newline
        )
        if indent:
            self.indent_tokens.append(indent)
        self.line = line
        self.column = 0
        self.targets = {id(node) for node in targets}
        self.found: dict[cst.CSTNode, Range] = {}
        self._starts: dict[int, Pos] = {}

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
        if id(node) in self.targets:
            self._starts[id(node)] = (self.line, self.column)

    def after_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.targets:
            start = self._starts.pop(id(node))
            self.found.setdefault(node, (start, (self.line, self.column)))

    def record_syntactic_position(  # type: ignore[override]  # a context manager all the same
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> AbstractContextManager[None]:
        if id(node) not in self.targets:
            return _UNRECORDED
        return self._record(node, start_node, end_node)

    @contextmanager
    def _record(
        self, node: cst.CSTNode, start_node: cst.CSTNode | None, end_node: cst.CSTNode | None
    ) -> Iterator[None]:
        start = (self.line, self.column)
        yield
        end = (self.line, self.column)
        if start_node is not None and start_node in self.found:
            start = self.found[start_node][0]
        if end_node is not None and end_node in self.found:
            end = self.found[end_node][1]
        self.found[node] = (start, end)


#: What a node that is not a target records: nothing (one context shared by all of them).
_UNRECORDED: AbstractContextManager[None] = nullcontext()


def node_ranges(
    module: cst.Module, nodes: Iterable[cst.CSTNode], source: str | None = None
) -> dict[cst.CSTNode, Range]:
    """Source ranges of `nodes` within `module`.

    With the module's `source`, only the innermost statement that holds each node is generated
    again, placed at the line Python's own (C) parser gives it (see `_innermost`); otherwise,
    or if the two parsers disagree, one codegen pass over the whole module.
    """
    targets = set(nodes)
    if not targets:
        return {}
    if source is not None and module not in targets:
        index = walker.current_index()
        if index is None or index.module is not module:
            index = walker.TreeIndex(module)  # a tree outside the file being checked
        found = _innermost(module, targets, source, index)
        if found is not None:
            return found
    return _ranges(module, targets)


def _ranges(module: cst.Module, targets: set[cst.CSTNode]) -> dict[cst.CSTNode, Range]:
    # start_node/end_node hoisting needs those children recorded too.
    state = _TargetedState(module, targets | _hoisted_children(targets))
    module._codegen(state)
    return {node: state.found[node] for node in targets if node in state.found}


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _lines(source: str, index: walker.TreeIndex) -> list[str]:
    """The lines of `source`, split once per file: kept with the file's index, whose
    checkers each place their own nodes."""
    found = index.memo.get(("lines", 0))
    if found is None or found[0] is not source:  # type: ignore[index]
        found = index.memo[("lines", 0)] = (source, _LINE_BREAK.split(source))
    return found[1]  # type: ignore[index,no-any-return]


Block = tuple[Sequence[cst.BaseStatement], list[ast.stmt]]


def _innermost(
    module: cst.Module, targets: set[cst.CSTNode], source: str, index: walker.TreeIndex
) -> dict[cst.CSTNode, Range] | None:
    """Each node placed by generating only the innermost statement that holds it: a simple
    statement line, or the compound statement whose header (or whole) it is. Python's parser
    gives every statement's first line; the statement is generated at that line with the
    indentation of that line, so its rows and columns come out as they are in the file.
    None where the two parsers do not line up (the caller then generates more)."""
    try:
        tree = cpython_tree(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    pending: list[tuple[int, cst.CSTNode]] = []
    for node in targets:
        i = index.index_of(node)
        if i is None:
            return None
        pending.append((i, node))
    pending.sort(key=lambda item: item[0])
    placer = _Placer(module, index, _lines(source, index))
    if not placer.block(module.body, tree.body, pending) or len(placer.found) != len(targets):
        return None  # e.g. a comment in the module's header, outside every statement
    return placer.found


class _Placer:
    def __init__(self, module: cst.Module, index: walker.TreeIndex, lines: list[str]) -> None:
        self.module = module
        self.index = index
        self.lines = lines
        self.found: dict[cst.CSTNode, Range] = {}

    def block(
        self,
        stmts: Sequence[cst.BaseStatement],
        nodes: list[ast.stmt],
        pending: list[tuple[int, cst.CSTNode]],
    ) -> bool:
        index = self.index
        keys = [i for i, _ in pending]
        k = 0
        for stmt in stmts:
            if k >= len(nodes):
                return False
            anode = nodes[k]
            k += len(stmt.body) if type(stmt) is cst.SimpleStatementLine else 1
            si = index.index_of(stmt)
            if si is None:
                return False
            lo = bisect.bisect_left(keys, si)
            hi = bisect.bisect_left(keys, index.end[si])
            if lo == hi:
                continue
            decorators = getattr(anode, "decorator_list", None)
            first = decorators[0].lineno if decorators else anode.lineno
            if not self.statement(stmt, anode, first, pending[lo:hi]):
                return False
        return k == len(nodes)

    def statement(
        self,
        stmt: cst.BaseStatement,
        anode: ast.stmt,
        first: int,
        inside: list[tuple[int, cst.CSTNode]],
    ) -> bool:
        rest = inside
        blocks = None if type(stmt) is cst.SimpleStatementLine else _blocks(stmt, anode)
        if blocks is None and type(stmt) is not cst.SimpleStatementLine:
            blocks = []
        for body, anodes in blocks or ():
            if not body:
                continue
            lo = self.index.index_of(body[0])
            hi = self.index.index_of(body[-1])
            if lo is None or hi is None:
                return False
            end = self.index.end[hi]
            sub = [(i, n) for i, n in rest if lo <= i < end]
            if sub:
                if not self.block(body, anodes, sub):
                    return False
                rest = [(i, n) for i, n in rest if not lo <= i < end]
        return not rest or self.generate(stmt, first, rest)

    def generate(
        self, stmt: cst.BaseStatement, first: int, pending: list[tuple[int, cst.CSTNode]]
    ) -> bool:
        if first > len(self.lines):
            return False
        line = self.lines[first - 1]
        indent = line[: len(line) - len(line.lstrip(" \t\f"))]
        nodes = [n for _, n in pending]
        alone = stmt.with_changes(leading_lines=(), **self._header_only(stmt, pending))
        wanted = {alone if n is stmt else n for n in nodes}
        state = _TargetedState(self.module, wanted | _hoisted_children(wanted), first, indent)
        alone._codegen(state)
        head = "".join(state.tokens)
        if _LINE_BREAK.split(head, 1)[0] != line:
            return False  # the parsers disagree on where (or how) this statement starts
        for node in nodes:
            rng = state.found.get(alone if node is stmt else node)
            if rng is not None:
                self.found[node] = rng
        return True

    def _header_only(
        self, stmt: cst.BaseStatement, pending: list[tuple[int, cst.CSTNode]]
    ) -> dict[str, object]:
        """Changes that leave out a compound statement's blocks when every node to place is in
        its header (a loop's iterable, a function's parameters): all that comes before the
        first block, so rows and columns do not move, and a long loop or class is not
        generated whole for one of its header's names."""
        body = getattr(stmt, "body", None)
        if type(body) is not cst.IndentedBlock:
            return {}
        start = self.index.index_of(body)
        if start is None or any(i >= start or n is stmt for i, n in pending):
            return {}
        changes: dict[str, object] = {"body": body.with_changes(body=())}
        if getattr(stmt, "orelse", None) is not None:
            changes["orelse"] = None
        return changes


def _suite(suite: cst.BaseSuite) -> Sequence[cst.BaseStatement] | None:
    return suite.body if type(suite) is cst.IndentedBlock else None  # type: ignore[return-value]


def _blocks(stmt: cst.BaseStatement, anode: ast.stmt) -> list[Block] | None:
    """The blocks of a compound statement, each with Python's statements of that block."""
    out: list[tuple[Sequence[cst.BaseStatement] | None, list[ast.stmt]]] = []
    typ = type(stmt)
    if (
        typ is cst.FunctionDef
        and isinstance(anode, (ast.FunctionDef, ast.AsyncFunctionDef))
        or typ is cst.ClassDef
        and isinstance(anode, ast.ClassDef)
        or typ is cst.With
        and isinstance(anode, (ast.With, ast.AsyncWith))
    ):
        out.append((_suite(stmt.body), anode.body))  # type: ignore[attr-defined]
    elif typ is cst.If and isinstance(anode, ast.If):
        branch: cst.BaseStatement | cst.Else | None = stmt
        a_branch: ast.stmt = anode
        while type(branch) is cst.If and isinstance(a_branch, ast.If):
            out.append((_suite(branch.body), a_branch.body))  # type: ignore[union-attr]
            orelse = branch.orelse  # type: ignore[union-attr]
            if type(orelse) is cst.If:  # `elif`: its header is generated with the `if`
                if len(a_branch.orelse) != 1:
                    return None
                branch, a_branch = orelse, a_branch.orelse[0]
            else:
                if type(orelse) is cst.Else:
                    out.append((_suite(orelse.body), a_branch.orelse))
                branch = None
    elif typ in (cst.For, cst.While) and isinstance(anode, (ast.For, ast.AsyncFor, ast.While)):
        out.append((_suite(stmt.body), anode.body))  # type: ignore[attr-defined]
        if stmt.orelse is not None:  # type: ignore[attr-defined]
            out.append((_suite(stmt.orelse.body), anode.orelse))  # type: ignore[attr-defined]
    elif typ is cst.Try and isinstance(anode, ast.Try):
        out.append((_suite(stmt.body), anode.body))  # type: ignore[attr-defined]
        handlers = stmt.handlers  # type: ignore[attr-defined]
        if len(handlers) != len(anode.handlers):
            return None
        out.extend((_suite(h.body), a.body) for h, a in zip(handlers, anode.handlers))
        if stmt.orelse is not None:  # type: ignore[attr-defined]
            out.append((_suite(stmt.orelse.body), anode.orelse))  # type: ignore[attr-defined]
        if stmt.finalbody is not None:  # type: ignore[attr-defined]
            out.append(
                (
                    _suite(stmt.finalbody.body),  # type: ignore[attr-defined]
                    anode.finalbody,
                )
            )
    else:
        return None
    return [(body, nodes) for body, nodes in out if body is not None]


def _hoisted_children(nodes: set[cst.CSTNode]) -> set[cst.CSTNode]:
    """Children whose positions PositionProvider hoists into their parent's range, and theirs
    in turn: a compound statement ends where the last statement of its body ends."""
    extra: set[cst.CSTNode] = set()
    pending = list(nodes)
    while pending:
        node = pending.pop()
        for attr in (
            "decorators",
            "body",
            "name",
            "leading_lines",
            "orelse",
            "handlers",
            "finalbody",
        ):
            value = getattr(node, attr, None)
            found: list[cst.CSTNode] = []
            if walker.is_node(value):
                found.append(value)
            elif isinstance(value, (list, tuple)):  # list and tuple are not ABCs: cheap
                found.extend(v for v in value if walker.is_node(v))
            for child in found:
                if child not in extra:
                    extra.add(child)
                    pending.append(child)
    return extra
