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
from mxlint.fixes import FileFix, fix_text
from mxlint.rule import Finding
from mxlint.runner import resolve_project
from mxlint.sources import NOTEBOOK_SUFFIX, decode_source


@dataclass
class StdinResult:
    findings: list[Finding]
    error: bool
    source: str | None  # the decoded source (None: undecodable)
    fixed_text: str | None = None
    fixed: int = 0


def name_of(stdin_filename: Path | None) -> str:
    return stdin_filename.as_posix() if stdin_filename is not None else "-"


def lint_stdin(data: bytes, name: str, settings: Settings) -> StdinResult:
    """Findings of the piped source under `name`, cross-file rules included (with this file
    alone as the project)."""
    result = lint_file(Path(name), settings, data)
    source: str | None = None
    if not name.endswith(NOTEBOOK_SUFFIX):
        try:
            source = decode_source(data)
        except (UnicodeDecodeError, SyntaxError, LookupError):
            source = None
    findings = list(result.findings)
    findings.extend(resolve_project([result], settings, {result.path: source or ""}))
    findings.sort(key=Finding.sort_key)
    error = any(f.code == "MXL002" for f in findings)
    return StdinResult(findings, error, source)


def fix_stdin(result: StdinResult, name: str, settings: Settings, unsafe: bool) -> StdinResult:
    """Apply the applicable fixes to the piped Python source, pass after pass, as for files."""
    if result.source is None:
        return result
    text, applied = fix_text(name, result.source, result.findings, settings, unsafe, python=True)
    remaining = lint_stdin(text.encode("utf-8"), name, settings) if applied else result
    remaining.fixed_text, remaining.fixed = text, applied
    return remaining


def diff(result: StdinResult, fixed: StdinResult, name: str) -> FileFix | None:
    """The change `--fix` would make, in the form `--diff` prints for files."""
    if result.source is None or fixed.fixed_text is None or not fixed.fixed:
        return None
    return FileFix(Path(name), result.source, fixed.fixed_text, fixed.fixed)


def read() -> bytes:
    return sys.stdin.buffer.read()
