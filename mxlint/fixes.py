"""Applying fixes: edits to text, reading files as they are fixed, and safe writes.

A fix is applied only if the result still parses; files are written atomically (a temporary file
in the same directory, then `os.replace`) with their permissions, encoding, BOM and line endings
kept; a file that changed on disk while mxlint ran is left alone. A notebook is fixed in its
joined code cells and written back with only the changed cells' `source` replaced
(`mxlint.notebooks`). The passes over a whole run are `mxlint.fix_run`'s.
"""

from __future__ import annotations

import io
import os
import re
import stat
import tempfile
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from mxlint.rule import Edit, Finding, applicable
from mxlint.unused_imports import remove_unused_imports

if TYPE_CHECKING:
    from mxlint.notebooks import Notebook
    from mxlint.settings import Settings


#: Passes of fixes over one text (and, in a fix run, over the run's files), at most.
MAX_PASSES = 10


class OverlappingEdits(Exception):
    pass


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _offsets(source: str) -> list[int]:
    """Where each line starts; lines end as Python's own (`\\r\\n`, `\\r`, `\\n`), as rows do."""
    return [0, *(m.end() for m in _LINE_BREAK.finditer(source))]


def split_rows(text: str) -> list[str]:
    """The rows of `text` as positions count them (without their line endings)."""
    return _LINE_BREAK.split(text)


def apply_edits(source: str, edits: Iterable[Edit]) -> str:
    """Apply edits (1-based rows and columns) to `source`; later edits first, no overlaps."""
    starts = _offsets(source)

    def offset(row: int, column: int) -> int:
        return starts[row - 1] + column - 1 if row - 1 < len(starts) else len(source)

    spans = sorted(
        (
            (
                offset(e.location.row, e.location.column),
                offset(e.end_location.row, e.end_location.column),
                e.content,
            )
            for e in edits
        ),
        key=lambda s: (s[0], s[1]),
    )
    for (a0, a1, _), (b0, _b1, _c) in zip(spans, spans[1:]):
        if b0 < a1:
            raise OverlappingEdits(f"edits overlap at offsets {a0}-{a1} and {b0}")
    out = source
    for start, end, content in reversed(spans):
        out = out[:start] + content + out[end:]
    return out


def _span(e: Edit) -> tuple[int, int, int, int]:
    return (e.location.row, e.location.column, e.end_location.row, e.end_location.column)


def _overlaps(a: Sequence[Edit], b: Sequence[Edit]) -> bool:
    for x in a:
        xs, xe = _span(x)[:2], _span(x)[2:]
        for y in b:
            ys, ye = _span(y)[:2], _span(y)[2:]
            if xs < ye and ys < xe:
                return True
            if xs == xe == ys == ye:  # two insertions at one point: order is ambiguous
                return True
            if (xs == xe and ys < xs < ye) or (ys == ye and xs < ys < xe):
                return True
    return False


def _choose(findings: Sequence[Finding], unsafe: bool) -> list[tuple[Finding, int]]:
    """Applicable fixes that do not overlap one another, in file order, each with how many
    findings it fixes (two findings may offer the very same fix: applying it fixes both)."""
    chosen: list[tuple[Finding, int]] = []
    index: dict[tuple, int] = {}
    for f in sorted(findings, key=Finding.sort_key):
        if not applicable(f, unsafe):
            continue
        assert f.fix is not None
        key = tuple((_span(e), e.content) for e in f.fix.edits)
        if key in index:
            first, count = chosen[index[key]]
            chosen[index[key]] = (first, count + 1)
            continue
        if any(_overlaps(f.fix.edits, c.fix.edits) for c, _ in chosen if c.fix is not None):
            continue
        index[key] = len(chosen)
        chosen.append((f, 1))
    return chosen


def newline_of(text: str) -> str:
    """The file's most common line ending."""
    crlf = text.count("\r\n")
    cr = text.count("\r") - crlf
    lf = text.count("\n") - crlf
    if cr > crlf and cr > lf:
        return "\r"
    return "\r\n" if crlf and crlf >= lf else "\n"


def _normalize(edits: Iterable[Edit], newline: str) -> list[Edit]:
    if newline == "\n":
        return list(edits)
    return [
        Edit(e.content.replace("\r\n", "\n").replace("\n", newline), e.location, e.end_location)
        for e in edits
    ]


def parses(text: str, filename: str = "<fix>") -> bool:
    """Whether fixed Python text still parses (libcst and the interpreter's own parser)."""
    import libcst as cst

    from mxlint.parsing import cpython_error, on_large_stack

    def both() -> bool:
        # CPython first: what it accepts is never too deep for libcst on a large stack.
        if cpython_error(text)[0] is not None:
            return False
        try:
            cst.parse_module(text)
        except Exception:
            return False
        return True

    return on_large_stack(both)


def apply_findings(
    text: str, findings: Sequence[Finding], unsafe: bool, python: bool
) -> tuple[str, int]:
    """One pass: apply every non-overlapping applicable fix; (new text, findings fixed).

    If the fixes together break the parse, they are tried one at a time and only those that
    keep the file parsing are kept.
    """
    chosen = _choose(findings, unsafe)
    if not chosen:
        return text, 0
    newline = newline_of(text)
    edits = [e for f, _ in chosen if f.fix for e in _normalize(f.fix.edits, newline)]
    try:
        new = apply_edits(text, edits)
    except OverlappingEdits:
        new = None
    if new is not None and (not python or parses(new)):
        return new, sum(count for _, count in chosen)
    applied = 0
    # One at a time, from the end of the file, so earlier positions stay valid.
    for f, count in sorted(chosen, key=lambda c: c[0].sort_key(), reverse=True):
        assert f.fix is not None
        try:
            candidate = apply_edits(text, _normalize(f.fix.edits, newline))
        except OverlappingEdits:
            continue
        if not python or parses(candidate):
            text, applied = candidate, applied + count
    return text, applied


def relint_strict(path: str, text: str, settings: Settings) -> list[Finding]:
    """Findings of one file read on its own, keeping only what this file alone proves.

    Used between passes over fixed text in memory: a finding that depends on other files (an
    unknown base class, a cross-file fact) is not fixed from a partial view; the next full run
    reports it again if it stands.
    """
    from mxlint.engine import lint_source
    from mxlint.project import ProjectIndex

    result = lint_source(path, text, settings)
    findings = list(result.findings)
    if result.conditional and result.facts is not None:
        index = ProjectIndex([result.facts])
        for finding, (kind, name) in result.conditional:
            if kind == "hybridized-or-unknown":
                if index.satisfies(("hybridized", name)):
                    findings.append(finding)
            elif index.satisfies((kind, name)):
                findings.append(finding)
    return findings


def fix_text(
    name: str,
    text: str,
    findings: Sequence[Finding],
    settings: Settings,
    unsafe: bool,
    python: bool,
) -> tuple[str, int]:
    """One file's text with its applicable fixes applied, pass after pass (a fix can make room
    for another), and the imports they left unused removed: (new text, fixes applied).
    `findings` are the file's, positioned in `text`; between passes the file is read on its
    own (`relint_strict`). The language server's fix-all of one document; `--fix` and
    `mxlint check - --fix` run `fix_run.fix_project`, which decides every pass over the run."""
    original = text
    findings = [f for f in findings if applicable(f, unsafe)]
    applied = 0
    for _pass in range(MAX_PASSES):
        if not findings:
            break
        text, n = apply_findings(text, findings, unsafe, python)
        applied += n
        if not n or not python:
            break
        findings = [f for f in relint_strict(name, text, settings) if applicable(f, unsafe)]
    if python and applied:
        pruned = remove_unused_imports(original, text, PurePath(name))
        if pruned != text and parses(pruned):
            text = pruned
    return text, applied


# -- files ------------------------------------------------------------------------------------


@dataclass
class SourceFile:
    """A file's bytes as read, and how to write text back the same way."""

    path: Path
    data: bytes
    text: str
    encoding: str
    mode: int
    python: bool
    #: A notebook: `text` is its code cells joined (what is linted and fixed), and the file
    #: is written back as the notebook's JSON with only the changed cells replaced.
    notebook: Notebook | None = None

    @classmethod
    def read(cls, path: Path) -> SourceFile:
        return cls.from_bytes(path, path.read_bytes(), stat.S_IMODE(path.stat().st_mode))

    @classmethod
    def from_bytes(
        cls, path: Path, data: bytes, mode: int, python: bool | None = None
    ) -> SourceFile:
        """The file `path` as if it held `data` (raises as `read` does for bad content);
        `python`: whether it is Python source, when its name does not say."""
        if python is None:
            python = path.suffix in (".py", ".pyi")
        if python:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        else:
            encoding = "utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8"
        text = data.decode(encoding)
        if text.startswith("\ufeff"):
            text = text[1:]
            encoding = "utf-8-sig"
        notebook = None
        if path.suffix == ".ipynb":
            from mxlint.notebooks import Notebook

            notebook = Notebook.parse(text)  # NotebookError is a SyntaxError
            text, python = notebook.source, True
        return cls(path, data, text, encoding, mode, python, notebook)

    def in_text(self, findings: Sequence[Finding]) -> list[Finding]:
        """Findings positioned in `text` (a notebook's are reported per cell)."""
        if self.notebook is None:
            return list(findings)
        return [self.notebook.cell_map.to_source(f) for f in findings]

    def on_disk(self, text: str) -> str:
        """The file's content for (fixed) `text`; raises UnwritableFix (an OSError) for a
        notebook fix that cannot be written back."""
        return text if self.notebook is None else self.notebook.render(text)

    def encode(self, text: str) -> bytes:
        return self.on_disk(text).encode(self.encoding)


class ChangedOnDisk(Exception):
    """The file is not what mxlint read: it is not overwritten."""


def atomic_write(src: SourceFile, text: str) -> None:
    """Write `text` over `src.path` atomically, unless the file changed since it was read."""
    write_bytes(src, src.encode(text))


def write_bytes(src: SourceFile, payload: bytes) -> None:
    """Write `payload` over `src.path` atomically, unless the file changed since it was read."""
    target = src.path.resolve()
    if target.read_bytes() != src.data:
        raise ChangedOnDisk(str(src.path))
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".mxlint")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, src.mode)
        if target.read_bytes() != src.data:
            raise ChangedOnDisk(str(src.path))
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def file_stats(paths: Sequence[Path], settings: Settings) -> dict[str, tuple[int, int]]:
    """(mtime, size) of every file a run over `paths` reads: a file that differs when it is
    about to be written changed while mxlint ran."""
    from mxlint.sources import discover, display

    python, text = discover(paths, settings)
    out = {}
    for p in (*python, *text):
        try:
            st = p.stat()
        except OSError:
            continue
        out[display(p)] = (st.st_mtime_ns, st.st_size)
    return out
