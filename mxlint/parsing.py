"""Parsing any input without crashing: the tree, or where and why the file does not parse.

libcst's native parser recurses on the machine stack, and input nested deeply enough (a few
thousand brackets, a long `and` chain) crashes the whole process instead of raising. So every
parse runs on a thread with a large stack (address space, touched only as deep as the input goes),
and CPython's own parser, which fails cleanly on such input, reads the text first. CPython's
error is also the better report when libcst fails too: its message and 1-based position are
exact (`Missing parentheses in call to 'print'` at the `print`).

The engine checks the whole file on that thread (`engine.lint_source`), not only its parse:
checking the tree on the thread that built it measured 5-15 % less CPU time on a single-process
run of gluon-cv (why is not settled: the process moved between cores about ten times either
way, and one malloc arena instead of one per thread did not close the gap).
"""

from __future__ import annotations

import ast
import io
import os
import queue
import re
import sys
import threading
import tokenize
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

import libcst as cst

from mxlint import node_init

T = TypeVar("T")

#: Stack of the thread that parses (and re-checks a deeply nested file).
LARGE_STACK = 512 * 1024 * 1024
#: Recursion limit for checking a file whose tree is deeper than the default limit allows.
DEEP_RECURSION_LIMIT = 100_000
#: CPython refuses more nested brackets than this ("too many nested parentheses").
MAX_BRACKET_DEPTH = 200

#: CPython errors that mean "nested too deeply": libcst is not asked at all.
_TOO_DEEP = (
    "too many nested parentheses",
    "too complex",
    "too many levels of indentation",
    "too many nested",
)
_NON_BRACKETS = re.compile(r"[^()\[\]{}]+")
#: Statements and literals that are Python 2 only, on the line CPython stopped at.
_PYTHON2 = re.compile(
    r"^\s*(?:print|exec)\s+[^\s(=.,;)\]}]"
    r"|^\s*except\s+[^:#]+,\s*[A-Za-z_]\w*\s*:"
    r"|^\s*raise\s+[\w.]+\s*,"
    r"|`"
    r"|<>"
    r"|\b[uU][rR]['\"]"
    r"|(?<![\w.])0\d+(?![\w.])"
    r"|(?<![\w.])\d+[lL]\b"
    r"|^\s*def\s+\w+\s*\([^)]*\("
)


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """Lines as Python counts them: only `\\r\\n`, `\\r` and `\\n` end a line.

    `str.splitlines` also splits at form feeds (`^L` page breaks in old code), `\\x85` and
    `\\u2028`, which shifts every row after them against the parser's.
    """
    lines = _LINE.findall(text)
    return lines if keepends else [line.rstrip("\r\n") for line in lines]


@dataclass(frozen=True)
class ParseFailure:
    """Why a file does not parse, at a 1-based line and column."""

    line: int
    column: int
    message: str


class _LargeStack:
    """One long-lived thread with a large stack that runs calls handed to it, one at a time.

    Long-lived because a fresh thread per file costs more than the parse itself (the
    allocator's per-thread memory starts cold); restarted in a forked child, where it is gone.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.requests: queue.SimpleQueue = queue.SimpleQueue()

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]

    def _serve(self) -> None:
        while True:
            fn, box, done = self.requests.get()
            try:
                box.append((True, fn()))
            except BaseException as exc:  # handed back to the caller
                box.append((False, exc))
            finally:
                done.set()
                # Held here until the next call, the answer (a whole tree) would stay alive
                # while the next file is parsed.
                del fn, box, done

    def _start(self) -> threading.Thread:
        old_size = threading.stack_size()
        try:
            threading.stack_size(LARGE_STACK)
            thread = threading.Thread(target=self._serve, name="mxlint-large-stack", daemon=True)
            thread.start()
        finally:
            threading.stack_size(old_size)
        return thread

    def call(self, fn: Callable[[], T], recursion_limit: int | None) -> T:
        if threading.current_thread() is self.thread:
            with _recursion_limit(recursion_limit):
                return fn()
        with self.lock:
            if self.thread is None or not self.thread.is_alive():
                try:
                    self.thread = self._start()
                except (RuntimeError, ValueError, MemoryError):
                    return fn()  # no such thread here: the caller's stack
            box: list[tuple[bool, object]] = []
            done = threading.Event()
            with _recursion_limit(recursion_limit):
                self.requests.put((fn, box, done))
                done.wait()
        ok, value = box[0]
        if ok:
            return value  # type: ignore[return-value]
        assert isinstance(value, BaseException)
        raise value


@contextmanager
def _recursion_limit(limit: int | None) -> Iterator[None]:
    """The interpreter's recursion limit raised to `limit` (never lowered) while in the block."""
    old_limit = sys.getrecursionlimit()
    if limit is not None and limit > old_limit:
        sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(old_limit)


_LARGE_STACK = _LargeStack()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_LARGE_STACK.reset)


def on_large_stack(fn: Callable[[], T], recursion_limit: int | None = None) -> T:
    """`fn()` on a thread with a large stack (and a higher recursion limit while it runs).

    Called from that thread, `fn` runs there at once. Where no such thread can be started, `fn`
    runs on the caller's stack.
    """
    return _LARGE_STACK.call(fn, recursion_limit)


def parse_module(source: str) -> cst.Module | ParseFailure:
    """libcst's tree of `source`, or why it does not parse. Never raises, never crashes."""
    try:
        return on_large_stack(lambda: _parse(source))
    except (RecursionError, MemoryError) as exc:
        return ParseFailure(1, 1, f"too deeply nested to parse ({type(exc).__name__})")


def _parse(source: str) -> cst.Module | ParseFailure:
    cpython, final = cpython_error(source)
    if cpython is not None and (final or bracket_depth(source) > MAX_BRACKET_DEPTH):
        return cpython
    try:
        if cpython is None:
            with _unvalidated():
                return cst.parse_module(source)
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        # libcst's own position is that of the token it gave up on, not always the error's.
        return cpython or ParseFailure(
            exc.raw_line,
            exc.raw_column + 1,
            f"{exc.message} (valid Python that libcst cannot parse)",
        )
    except (RecursionError, MemoryError, ValueError) as exc:
        return cpython or ParseFailure(1, 1, f"cannot parse ({type(exc).__name__}: {exc})")


@contextmanager
def _unvalidated() -> Iterator[None]:
    """libcst without its node validation, while it builds the tree of a source CPython has
    accepted.

    Every node checks its own fields as it is built (`CSTNode.__post_init__` calls
    `_validate`: whitespace and parentheses as Python requires them), a tenth of the parse.
    That catches nodes a program builds wrongly; a tree the parser reads from valid Python is
    valid by construction (libcst's own comment there says as much). Source CPython rejects is
    still validated, as libcst may read it leniently. The parse is the only one that runs
    meanwhile (`on_large_stack` holds its lock); other threads that build nodes in that time
    go unvalidated too, which only matters to code that builds invalid ones.
    """
    node_init.validation(False)
    try:
        yield
    finally:
        node_init.validation(True)


def cpython_error(source: str) -> tuple[ParseFailure | None, bool]:
    """CPython's verdict on `source`: (its error or None, whether libcst must not be tried).

    A plain syntax error is not final: libcst reads syntax newer than the running interpreter
    (`match` under Python 3.9). Python 2 and input nested too deeply are final.
    """
    global _last_tree
    _last_tree = None  # the previous file's tree goes before this one is built
    # CPython places some errors differently in CRLF text; rows and columns do not change.
    text = source.replace("\r\n", "\n").replace("\r", "\n") if "\r" in source else source
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = compile(text, "<mxlint>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        if isinstance(tree, ast.Module):
            _last_tree = (source, tree)
    except SyntaxError as exc:
        if exc.lineno is None and "\0" in source:  # null bytes, reported with no position
            return _at(source, source.find("\0"), "source code cannot contain null bytes"), True
        line = exc.lineno or 1
        column = exc.offset if exc.offset and exc.offset > 0 else 1
        message = exc.msg or "invalid syntax"
        # Python 2 (which also allowed mixing tabs and spaces) is never newer syntax: libcst,
        # more lenient than CPython, would read some of it (`except E, e:`) as Python 3.
        python2 = isinstance(exc, TabError) or looks_like_python2(source, line, message)
        if python2:
            message += " (Python 2 syntax; mxlint reads Python 3)"
        return ParseFailure(line, column, message), python2 or any(m in message for m in _TOO_DEEP)
    except ValueError as exc:  # null bytes (before Python 3.11.4), lone surrogates
        index = source.find("\0")
        if index >= 0:
            return _at(source, index, "source code cannot contain null bytes"), True
        return ParseFailure(1, 1, str(exc)), True
    except (RecursionError, MemoryError) as exc:
        why = str(exc) or type(exc).__name__
        return ParseFailure(1, 1, f"too deeply nested for Python's parser ({why})"), True
    return None, False


def _at(source: str, index: int, message: str) -> ParseFailure:
    head = _BREAK.split(source[:index])
    return ParseFailure(len(head), len(head[-1]) + 1, message)


#: The last source CPython parsed, and its tree: positions reuse it instead of parsing again.
_last_tree: tuple[str, ast.Module] | None = None


def cpython_tree(source: str) -> ast.Module:
    """`ast.parse(source)`, from the check `parse_module` just made when it was this source."""
    last = _last_tree
    if last is not None and last[0] is source:
        return last[1]
    return ast.parse(source)


def looks_like_python2(source: str, line: int, message: str) -> bool:
    if "Missing parentheses in call to" in message:
        return True
    lines = split_lines(source)
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return bool(_PYTHON2.search(text))


def bracket_depth(source: str) -> int:
    """Deepest bracket nesting, counting brackets in strings and comments too (an estimate)."""
    depth = deepest = 0
    for ch in _NON_BRACKETS.sub("", source):
        if ch in "([{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif depth:
            depth -= 1
    return deepest


def decode_source(data: bytes) -> str:
    """Decode Python source as the interpreter would (PEP 263 cookie, BOM); raises on bad bytes."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    if text.startswith("\ufeff"):
        text = text[1:]
    return text
