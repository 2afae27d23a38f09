"""Applying fixes: edits to text, the fix loop, and safe writes.

A fix is applied only if the result still parses; files are written atomically (a temporary file
in the same directory, then `os.replace`) with their permissions, encoding, BOM and line endings
kept; a file that changed on disk while mxlint ran is left alone. Fixing is iterated until
nothing applicable is left, so running it twice changes nothing the second time. A notebook is
fixed in its joined code cells and written back with only the changed cells' `source` replaced
(`mxlint.notebooks`).
"""

from __future__ import annotations

import io
import os
import re
import stat
import tempfile
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mxlint.rule import Edit, Finding

if TYPE_CHECKING:
    from mxlint.cache import Cache
    from mxlint.notebooks import Notebook
    from mxlint.runner import Progress
    from mxlint.settings import Settings

#: Passes over one file in memory (each re-lints the fixed text).
MAX_PASSES = 10
#: Runs over the whole project (each re-reads the written files).
MAX_ROUNDS = 3


class OverlappingEdits(Exception):
    pass


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _offsets(source: str) -> list[int]:
    """Where each line starts; lines end as Python's own (`\\r\\n`, `\\r`, `\\n`), as rows do."""
    return [0, *(m.end() for m in _LINE_BREAK.finditer(source))]


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


def applicable(finding: Finding, unsafe: bool) -> bool:
    fix = finding.fix
    if fix is None or not fix.edits:
        return False
    return fix.applicability == "safe" or (unsafe and fix.applicability == "unsafe")


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


def _choose(findings: Sequence[Finding], unsafe: bool) -> list[Finding]:
    """Applicable fixes that do not overlap one another, in file order."""
    chosen: list[Finding] = []
    seen_fixes: set[tuple] = set()
    for f in sorted(findings, key=Finding.sort_key):
        if not applicable(f, unsafe):
            continue
        assert f.fix is not None
        key = tuple((_span(e), e.content) for e in f.fix.edits)
        if key in seen_fixes:
            continue
        if any(_overlaps(f.fix.edits, c.fix.edits) for c in chosen if c.fix is not None):
            continue
        seen_fixes.add(key)
        chosen.append(f)
    return chosen


def _newline_of(text: str) -> str:
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
    """One pass: apply every non-overlapping applicable fix; (new text, fixes applied).

    If the fixes together break the parse, they are tried one at a time and only those that
    keep the file parsing are kept.
    """
    chosen = _choose(findings, unsafe)
    if not chosen:
        return text, 0
    newline = _newline_of(text)
    edits = [e for f in chosen if f.fix for e in _normalize(f.fix.edits, newline)]
    try:
        new = apply_edits(text, edits)
    except OverlappingEdits:
        new = None
    if new is not None and (not python or parses(new)):
        return new, len(chosen)
    applied = 0
    # One at a time, from the end of the file, so earlier positions stay valid.
    for f in sorted(chosen, key=Finding.sort_key, reverse=True):
        assert f.fix is not None
        try:
            candidate = apply_edits(text, _normalize(f.fix.edits, newline))
        except OverlappingEdits:
            continue
        if not python or parses(candidate):
            text, applied = candidate, applied + 1
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
            if kind == "hybridblock-or-unknown":
                if index.is_hybrid_block(name) is True:
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
    for another): (new text, fixes applied). `findings` are the file's, positioned in `text`.
    What `--fix` writes, `mxlint check - --fix` prints and the language server's fix-all edits."""
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
        data = path.read_bytes()
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
        return cls(path, data, text, encoding, stat.S_IMODE(path.stat().st_mode), python, notebook)

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
    target = src.path.resolve()
    if target.read_bytes() != src.data:
        raise ChangedOnDisk(str(src.path))
    payload = src.encode(text)
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


# -- the fix run ------------------------------------------------------------------------------


@dataclass
class FileFix:
    path: Path
    before: str
    after: str
    applied: int


@dataclass
class FixReport:
    fixed: list[FileFix] = field(default_factory=list)
    #: Files not written because they changed on disk (or could not be written).
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: Findings after fixing (a final full run).
    remaining: list[Finding] = field(default_factory=list)
    error: bool = False

    @property
    def count(self) -> int:
        return sum(f.applied for f in self.fixed)


def _stats(paths: Sequence[Path], settings: Settings) -> dict[str, tuple[int, int]]:
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


def fix_paths(
    paths: Sequence[Path],
    settings: Settings,
    *,
    unsafe: bool = False,
    write: bool = True,
    jobs: int = 1,
    cache: Cache | None = None,
    progress: Progress | None = None,
) -> FixReport:
    """Fix every applicable finding under `paths`; with write=False only compute the changes.
    `progress` follows each pass over the files."""
    from mxlint.runner import run

    report = FixReport()
    fixed: dict[str, FileFix] = {}
    stale = False
    for _round in range(MAX_ROUNDS if write else 1):
        before = _stats(paths, settings)
        result = run(paths, settings, jobs=jobs, cache=cache, progress=progress)
        report.error = result.error
        by_file: dict[str, list[Finding]] = {}
        for f in result.findings:
            if applicable(f, unsafe):
                by_file.setdefault(f.filename, []).append(f)
        wrote = False
        for filename, findings in sorted(by_file.items()):
            path = Path(filename)
            try:
                src = SourceFile.read(path)
                st = path.stat()
            except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
                report.skipped.append((filename, f"cannot read: {exc}"))
                continue
            if before.get(filename) != (st.st_mtime_ns, st.st_size):
                report.skipped.append((filename, "changed on disk during the run"))
                continue
            text, applied = fix_text(
                filename, src.text, src.in_text(findings), settings, unsafe, src.python
            )
            if not applied or text == src.text:
                continue
            try:
                after = src.on_disk(text)
            except OSError as exc:  # a notebook fix that cannot be written back
                report.skipped.append((filename, f"cannot write: {exc}"))
                continue
            if write:
                try:
                    atomic_write(src, text)
                except ChangedOnDisk:
                    report.skipped.append((filename, "changed on disk during the run"))
                    continue
                except (OSError, UnicodeError) as exc:  # UnicodeError: not in its encoding
                    report.skipped.append((filename, f"cannot write: {exc}"))
                    continue
            wrote = True
            entry = fixed.get(filename)
            if entry is None:
                fixed[filename] = FileFix(path, src.on_disk(src.text), after, applied)
            else:
                entry.after, entry.applied = after, entry.applied + applied
        report.remaining = result.findings
        if not write or not wrote:
            stale = False
            break
        stale = True
    report.fixed = [fixed[k] for k in sorted(fixed)]
    if stale:
        # The last round wrote files: the report reflects them as written.
        final = run(paths, settings, jobs=jobs, cache=cache, progress=progress)
        report.remaining, report.error = final.findings, final.error
    return report


def unified_diff(fix: FileFix) -> str:
    import difflib

    name = fix.path.as_posix()
    if fix.path.suffix == ".ipynb":
        from mxlint.notebooks import unified_diff as notebook_diff

        return notebook_diff(name, fix.before, fix.after)
    return "".join(
        difflib.unified_diff(
            fix.before.splitlines(keepends=True),
            fix.after.splitlines(keepends=True),
            fromfile=f"a/{name}",
            tofile=f"b/{name}",
        )
    )


def add_noqa_paths(paths: Sequence[Path], settings: Settings) -> tuple[int, list[tuple[str, str]]]:
    """Insert `# noqa: CODE` for every current finding in Python files; (count, skipped)."""
    from mxlint.runner import run
    from mxlint.suppressions import add_noqa

    before = _stats(paths, settings)
    result = run(paths, settings)
    by_file: dict[str, list[Finding]] = {}
    for f in result.findings:
        if f.code in ("MXL001", "MXL002", "MXL003", "MXL004"):
            continue
        by_file.setdefault(f.filename, []).append(f)
    total = 0
    skipped: list[tuple[str, str]] = []
    for filename, findings in sorted(by_file.items()):
        path = Path(filename)
        if path.suffix not in (".py", ".pyi", ".ipynb"):
            continue
        try:
            src = SourceFile.read(path)
            st = path.stat()
        except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
            skipped.append((filename, f"cannot read: {exc}"))
            continue
        if before.get(filename) != (st.st_mtime_ns, st.st_size):
            skipped.append((filename, "changed on disk during the run"))
            continue
        text, count = add_noqa(src.text, src.in_text(findings))
        if not count or (src.python and not parses(text)):
            continue
        try:
            atomic_write(src, text)
        except ChangedOnDisk:
            skipped.append((filename, "changed on disk during the run"))
            continue
        except (OSError, UnicodeError) as exc:  # UnicodeError: not in its encoding
            skipped.append((filename, f"cannot write: {exc}"))
            continue
        total += count
    return total, skipped
