"""`mxlint check -`: one file's source read from standard input, as editors and formatters pipe
it. `--stdin-filename` names it, for the report and for the settings (per-file ignores, whether
it is a notebook); with `--fix` the fixed source goes to standard output, and `--diff` prints
what would change, as Ruff does."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from mxlint.config import Settings
from mxlint.engine import lint_file
from mxlint.fix_run import FileFix, fix_project
from mxlint.fixes import SourceFile
from mxlint.rule import Finding
from mxlint.runner import Project, RunResult
from mxlint.sources import NOTEBOOK_SUFFIX, decode_source


@dataclass
class StdinResult:
    findings: list[Finding]
    error: bool
    source: str | None  # the decoded source (None: undecodable)
    #: The bytes read (or, after fixing, the fixed source in the same encoding).
    data: bytes | None = None
    fixed_text: str | None = None
    fixed: int = 0


def name_of(stdin_filename: Path | None) -> str:
    return stdin_filename.as_posix() if stdin_filename is not None else "-"


def _project(data: bytes, name: str, settings: Settings) -> tuple[Project, str | None]:
    """The piped source as a run of its own (one file, from memory), and its decoded text
    (None for a notebook or an undecodable source)."""
    result = lint_file(Path(name), settings, data)
    project = Project(settings, [Path(name)], [], set(), [result], [])
    source: str | None = None
    if not name.endswith(NOTEBOOK_SUFFIX):
        try:
            source = decode_source(data)
        except (UnicodeDecodeError, SyntaxError, LookupError):
            source = None
    project.changed[result.path] = source or ""
    return project, source


def lint_stdin(data: bytes, name: str, settings: Settings) -> StdinResult:
    """Findings of the piped source under `name`, cross-file rules included (with this file
    alone as the project)."""
    project, source = _project(data, name, settings)
    run = project.result()
    return StdinResult(run.findings, run.error, source, data=data)


def fix_stdin(result: StdinResult, name: str, settings: Settings, unsafe: bool) -> StdinResult:
    """Apply the applicable fixes to the piped Python source, pass after pass, as `--fix`
    does for files (`fix_run.fix_project`)."""
    if result.source is None or result.data is None:
        return result
    project, _ = _project(result.data, name, settings)
    run = RunResult(result.findings, error=result.error)
    original = SourceFile.from_bytes(Path(name), result.data, 0o644, python=True)
    skipped: list[tuple[str, str]] = []
    outcome = fix_project(project, run, unsafe, lambda _name: original, skipped)
    state = outcome.files.get(project.results[0].path)
    if state is None:
        result.fixed_text, result.fixed = result.source, 0
        return result
    after = outcome.result
    return StdinResult(
        after.findings,
        after.error,
        state.current.text,
        data=state.current.data,
        fixed_text=state.current.text,
        fixed=outcome.count,
    )


def diff(result: StdinResult, fixed: StdinResult, name: str) -> FileFix | None:
    """The change `--fix` would make, in the form `--diff` prints for files."""
    if result.source is None or fixed.fixed_text is None or not fixed.fixed:
        return None
    return FileFix(Path(name), result.source, fixed.fixed_text, fixed.fixed)


def read() -> bytes:
    return sys.stdin.buffer.read()
