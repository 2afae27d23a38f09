"""A fix run: every applicable fix of a run, applied in memory pass after pass, then written.

Each pass applies the non-overlapping fixes of every file, lints the changed files again and
decides the whole run's findings again (cross-file ones too), so a fix held back by an overlap,
or one that only a fixed file makes possible, is applied in a later pass; fixing twice changes
nothing the second time. Only then are files written, so `--diff` shows exactly what `--fix`
writes.

Both report one count: how many of the findings the run first reported with an applicable fix
are gone after the fixes (matched from the text before to the text after). The report's
`[*] N fixable` line counts the same findings, so the three agree unless a fix cannot be
applied (it would break the parse, the file changed meanwhile), which the run says.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mxlint.fixes import (
    MAX_PASSES,
    ChangedOnDisk,
    SourceFile,
    applicable,
    apply_findings,
    file_stats,
    parses,
    split_rows,
    write_bytes,
)
from mxlint.rule import Finding
from mxlint.unused_imports import remove_unused_imports

if TYPE_CHECKING:
    from mxlint.cache import Cache
    from mxlint.runner import Progress, Project, RunResult
    from mxlint.settings import Settings


@dataclass
class FileFix:
    path: Path
    before: str
    after: str
    #: Findings of this file the fixes resolved.
    applied: int


@dataclass
class FixReport:
    fixed: list[FileFix] = field(default_factory=list)
    #: Files not written because they changed on disk (or could not be written).
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: Findings after fixing (the run's findings over the fixed files).
    remaining: list[Finding] = field(default_factory=list)
    error: bool = False
    #: Findings the run reported with an applicable fix that the fixes resolved.
    count: int = 0


@dataclass
class Fixing:
    """One file while it is fixed: as read, and as fixed so far."""

    original: SourceFile
    current: SourceFile

    @property
    def changed(self) -> bool:
        return self.current.data != self.original.data


@dataclass
class FixOutcome:
    files: dict[str, Fixing]
    #: The run's findings over the fixed files.
    result: RunResult
    #: Per file, the findings first reported with an applicable fix that are gone.
    resolved: dict[str, int]

    @property
    def count(self) -> int:
        return sum(self.resolved.values())


def fix_project(
    project: Project,
    result: RunResult,
    unsafe: bool,
    read: Callable[[str], SourceFile],
    skipped: list[tuple[str, str]],
) -> FixOutcome:
    """Fix `project` (whose findings are `result`) in memory until no applicable fix is left.

    `read(name)` gives a file's content as the run read it (raising OSError, or ValueError
    for a file that changed since, when it cannot); files it refuses go to `skipped`.
    """
    first = result.findings
    files: dict[str, Fixing] = {}
    refused: set[str] = set()
    for _pass in range(MAX_PASSES):
        by_file: dict[str, list[Finding]] = {}
        for f in result.findings:
            if applicable(f, unsafe) and f.filename not in refused:
                by_file.setdefault(f.filename, []).append(f)
        progress = False
        for filename, findings in sorted(by_file.items()):
            state = files.get(filename)
            if state is None:
                try:
                    src = read(filename)
                except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
                    skipped.append((filename, f"cannot read: {exc}"))
                    refused.add(filename)
                    continue
                except ValueError as exc:
                    skipped.append((filename, str(exc)))
                    refused.add(filename)
                    continue
                state = Fixing(src, src)
            current = state.current
            text, applied = apply_findings(
                current.text, current.in_text(findings), unsafe, current.python
            )
            if not applied or text == current.text:
                continue
            if current.python:
                pruned = remove_unused_imports(state.original.text, text, current.path)
                if pruned != text and parses(pruned):
                    text = pruned
            try:
                data = current.encode(text)
            except (OSError, UnicodeError) as exc:  # a notebook fix that cannot be written
                # back, a character the file's encoding cannot hold
                skipped.append((filename, f"cannot write: {exc}"))
                refused.add(filename)
                continue
            python = current.python if current.notebook is None else None
            state.current = SourceFile.from_bytes(current.path, data, current.mode, python)
            files[filename] = state
            project.replace(filename, data)
            progress = True
        if not progress:
            break
        result = project.result()
    return FixOutcome(files, result, resolved(first, result.findings, unsafe, files))


def resolved(
    before: Sequence[Finding],
    after: Sequence[Finding],
    unsafe: bool,
    files: dict[str, Fixing],
) -> dict[str, int]:
    """Per file, how many findings of `before` with an applicable fix are not in `after`.

    In a file the fixes changed, a finding is followed from the text before to the text after
    by a diff of their lines: on a line kept or changed in place it must be found again with
    its code where its column went; in lines replaced by a different number of lines, as many
    findings of its code as there were must be on the lines that replaced them. Findings the
    fixes made (never reported) do not count."""
    olds: dict[str, list[Finding]] = {}
    for f in before:
        if applicable(f, unsafe):
            olds.setdefault(f.filename, []).append(f)
    news: dict[str, list[Finding]] = {}
    for f in after:
        news.setdefault(f.filename, []).append(f)
    out: dict[str, int] = {}
    for filename, mine in olds.items():
        state = files.get(filename)
        now = news.get(filename, [])
        if state is None or not state.changed:
            keys = Counter(_key(f) for f in now)
            gone = 0
            for f in mine:
                if keys[_key(f)]:
                    keys[_key(f)] -= 1
                else:
                    gone += 1
        else:
            gone = _gone(state, mine, now)
        if gone:
            out[filename] = gone
    return out


def _key(f: Finding) -> tuple[str, int | None, int, int]:
    return (f.code, f.cell, f.location.row, f.location.column)


def _gone(state: Fixing, before: list[Finding], after: list[Finding]) -> int:
    """How many of `before` (the file's findings with an applicable fix, as first reported)
    are not among `after` (its findings once fixed)."""
    old_rows = split_rows(state.original.text)
    new_rows = split_rows(state.current.text)
    #: old row -> new row, for lines kept as they were or changed in place (one for one).
    moved: dict[int, int] = {}
    #: old row -> the index of the block of lines it was replaced by, with other line counts.
    block_of: dict[int, int] = {}
    blocks: list[tuple[int, int]] = []  # new rows [start, end) of each such block
    matcher = difflib.SequenceMatcher(None, old_rows, new_rows, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            moved.update((i1 + k + 1, j1 + k + 1) for k in range(i2 - i1))
        else:
            block_of.update((row + 1, len(blocks)) for row in range(i1, i2))
            blocks.append((j1 + 1, j2 + 1))
    now = state.current.in_text(after)
    exact = Counter((f.code, f.location.row, f.location.column) for f in now)
    in_block: Counter[tuple[int, str]] = Counter()
    for f in now:
        for index, (start, end) in enumerate(blocks):
            if start <= f.location.row < end:
                in_block[(index, f.code)] += 1
    gone = 0
    for f in state.original.in_text(before):
        row = f.location.row
        if row in moved:
            new_row = moved[row]
            column = _column(old_rows[row - 1], new_rows[new_row - 1], f.location.column)
            key = (f.code, new_row, column)
            if exact[key]:
                exact[key] -= 1
                continue
        elif row in block_of and in_block[(block_of[row], f.code)]:
            in_block[(block_of[row], f.code)] -= 1
            continue
        gone += 1
    return gone


def _column(old: str, new: str, column: int) -> int:
    """Where the 1-based `column` of line `old` is in line `new` (the start of what replaced
    it, if it was changed)."""
    if old == new:
        return column
    index = column - 1
    for tag, i1, i2, j1, _j2 in difflib.SequenceMatcher(
        None, old, new, autojunk=False
    ).get_opcodes():
        if i1 <= index < i2 or (tag == "insert" and index == i1):
            return (j1 + index - i1 if tag == "equal" else j1) + 1
    return len(new) + 1


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
    `progress` follows the run that finds them."""
    from mxlint.runner import Project

    before = file_stats(paths, settings)
    project = Project.lint(paths, settings, jobs=jobs, cache=cache, progress=progress)
    first = project.result()
    if progress is not None:
        progress.advance(len(project.text_only))
    report = FixReport()

    def read(filename: str) -> SourceFile:
        path = Path(filename)
        src = SourceFile.read(path)
        st = path.stat()
        if before.get(filename) != (st.st_mtime_ns, st.st_size):
            raise ValueError("changed on disk during the run")
        return src

    outcome = fix_project(project, first, unsafe, read, report.skipped)
    files, result = outcome.files, outcome.result
    for filename, state in sorted(files.items()):
        if not write:
            continue
        try:
            write_bytes(state.original, state.current.data)
        except ChangedOnDisk:
            report.skipped.append((filename, "changed on disk during the run"))
        except (OSError, UnicodeError) as exc:  # UnicodeError: not in its encoding
            report.skipped.append((filename, f"cannot write: {exc}"))
        else:
            if cache is not None:
                project.remember(filename, state.current.data, cache)
            continue
        # Not written: what remains is reported, and counted, as the file stands.
        project.replace(filename, state.original.data)
        del files[filename]
        result = project.result()
    counts = (
        outcome.resolved
        if result is outcome.result
        else resolved(first.findings, result.findings, unsafe, files)
    )
    report.fixed = [_file_fix(state, counts.get(name, 0)) for name, state in sorted(files.items())]
    report.count = sum(counts.values())
    report.remaining, report.error = result.findings, result.error
    return report


def _file_fix(state: Fixing, applied: int) -> FileFix:
    original, current = state.original, state.current
    return FileFix(
        original.path, original.on_disk(original.text), current.on_disk(current.text), applied
    )


def unified_diff(fix: FileFix) -> str:
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
