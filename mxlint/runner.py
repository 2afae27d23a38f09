"""A run over paths: discover files, lint each once, then resolve cross-file facts."""

from __future__ import annotations

import io
import os
import tokenize
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mxlint import notebooks, registry, suppressions
from mxlint.config import Settings
from mxlint.engine import FileResult, lint_source
from mxlint.project import ProjectIndex
from mxlint.rule import Finding, Location

if TYPE_CHECKING:
    from mxlint.cache import Cache


@dataclass
class RunResult:
    findings: list[Finding] = field(default_factory=list)
    files_checked: int = 0
    error: bool = False
    #: Files whose own result came from the cache.
    cached: int = 0


def decode_source(data: bytes) -> str:
    """Decode Python source as the interpreter would (PEP 263 cookie, BOM); raises on bad bytes."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def discover(paths: Sequence[Path], settings: Settings) -> tuple[list[Path], list[Path]]:
    """Python files (and notebooks) and the files a text checker reads, in a stable order."""
    text_types = registry.text_checkers()
    python: list[Path] = []
    text: list[Path] = []
    seen: set[Path] = set()

    def consider(path: Path, explicit: bool) -> None:
        if path in seen:
            return
        if settings.is_excluded(path):
            return
        if path.suffix == ".py" or (explicit and path.suffix == ".pyi"):
            if not path.is_dir():
                seen.add(path)
                python.append(path)
                # setup.py is also a dependency file, read (never run) by a text checker.
                if any(t.matches(path.name) for t in text_types):
                    text.append(path)
        elif path.suffix == notebooks.SUFFIX:
            if not path.is_dir():
                seen.add(path)
                python.append(path)  # lint_file reads it as a notebook
        elif any(t.matches(path.name) for t in text_types):
            seen.add(path)
            text.append(path)

    for root in paths:
        if root.is_dir():
            for path in _walk(root, settings):
                consider(path, explicit=False)
        else:
            consider(root, explicit=True)
    return python, text


def _walk(root: Path, settings: Settings) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not settings.is_excluded(base / d))
        for name in sorted(filenames):
            yield base / name


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def lint_file(path: Path, settings: Settings) -> FileResult:
    shown = _display(path)
    try:
        data = path.read_bytes()
        if path.suffix == notebooks.SUFFIX:
            return notebooks.lint_notebook(shown, data, settings)
        source = decode_source(data)
    except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
        rule = registry.all_rules()["MXL003"]
        result = FileResult(shown)
        if settings.enabled(rule, shown):
            loc = Location(1, 1)
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            result.findings.append(Finding(rule.code, rule.format(detail=detail), shown, loc, loc))
        return result
    return lint_source(shown, source, settings)


def resolve_project(results: Iterable[FileResult], settings: Settings,
                    sources: Mapping[str, str] | None = None) -> list[Finding]:
    """Findings that need the whole run: conditional ones and checkers' cross-file reports.
    `sources` gives the text of files checked from memory rather than read from disk."""
    results = list(results)
    index = ProjectIndex((r.facts for r in results if r.facts is not None), settings, sources)
    findings: list[Finding] = []
    for result in results:
        for finding, requirement in result.conditional:
            if index.satisfies(requirement):
                findings.append(finding)
    from mxlint.engine import enabled_checkers

    for checker in enabled_checkers(settings):
        for finding in checker.finalize(index):
            rule = registry.get_rule(finding.code)
            if rule is not None and settings.enabled(rule, finding.filename):
                findings.append(finding)
    return suppressions.filter_cross_file(findings, results, settings)


def check_text_files(paths: Sequence[Path], settings: Settings) -> list[Finding]:
    findings: list[Finding] = []
    for checker_type in registry.text_checkers():
        if not any(settings.code_enabled(r) for r in checker_type.rules):
            continue
        files: list[tuple[str, str]] = []
        for path in paths:
            if not checker_type.matches(path.name):
                continue
            try:
                files.append((_display(path), path.read_text(encoding="utf-8", errors="replace")))
            except OSError:
                continue
        if files:
            found = checker_type().check_files(files, settings)
            for finding in suppressions.filter_text(found, dict(files)):
                rule = registry.get_rule(finding.code)
                if rule is not None and settings.enabled(rule, finding.filename):
                    findings.append(finding)
    return findings


def run(paths: Sequence[Path], settings: Settings, *, jobs: int = 1,
        cache: Cache | None = None) -> RunResult:
    """Lint `paths`: each file on its own (`jobs` processes; 0 = one per core; results of
    unchanged files from `cache`), then what needs every file, then dependency files."""
    from mxlint.workers import lint_all

    python, text = discover(paths, settings)
    out = RunResult(files_checked=len(python) + len(text))
    results = lint_all(python, settings, jobs=jobs, cache=cache)
    if cache is not None:
        out.cached = cache.hits
    for r in results:
        out.findings.extend(r.findings)
        out.error = out.error or r.error
    out.findings.extend(resolve_project(results, settings))
    out.findings.extend(check_text_files(text, settings))
    out.findings.sort(key=Finding.sort_key)
    return out
