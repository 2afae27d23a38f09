"""A run over paths: discover the files, lint each once (in workers, from the cache), then
decide what needs every file, then read the dependency files.

The orchestrator only: files come from `mxlint.sources`, each is linted by `mxlint.engine`
(through `mxlint.workers`), and every finding passes `mxlint.funnel.admit`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mxlint import registry, sources
from mxlint.engine import FileResult, enabled_checkers, internal_error
from mxlint.funnel import admit
from mxlint.project import ProjectIndex
from mxlint.rule import Finding
from mxlint.settings import Settings
from mxlint.suppressions import parse_lines
from mxlint.workers import lint_all

if TYPE_CHECKING:
    from mxlint.cache import Cache
    from mxlint.checker import TextChecker


class Progress(Protocol):
    """What a run tells a progress indicator (`mxlint.progress.FileProgress`)."""

    def start(self, total: int) -> None: ...

    def advance(self, n: int = 1) -> None: ...


@dataclass
class RunResult:
    findings: list[Finding] = field(default_factory=list)
    files_checked: int = 0
    error: bool = False


def resolve_project(
    results: Iterable[FileResult],
    settings: Settings,
    sources: Mapping[str, str] | None = None,
    *,
    index: ProjectIndex | None = None,
) -> list[Finding]:
    """Findings that need the whole run: conditional ones and checkers' cross-file reports.
    `sources` gives the text of files checked from memory rather than read from disk; `index`,
    the run's facts already gathered (the language server keeps one between changes)."""
    results = list(results)
    if index is None:
        index = ProjectIndex((r.facts for r in results if r.facts is not None), settings, sources)
    found: list[Finding] = []
    for result in results:
        for finding, requirement in result.conditional:
            if index.satisfies(requirement):
                found.append(finding)
    failures: list[Finding] = []
    for checker in enabled_checkers(settings):
        if not checker.cross_file:
            continue
        try:
            found.extend(checker.finalize(index))
        except Exception as exc:  # a rule bug must not stop the run
            if results:
                failure = internal_error(results[0].path, f"{checker.__name__} (cross-file)", exc)
                failures.append(failure)
    return _admit_per_file(found, results, settings) + admit(failures, settings)


def _admit_per_file(
    findings: list[Finding], results: Sequence[FileResult], settings: Settings
) -> list[Finding]:
    """Findings decided after every file was read, through the funnel with their file's
    directives; a notebook's are positioned in its joined source until then, and reported in
    their cells after."""
    by_path = {r.path: r for r in results}
    out: list[Finding] = []
    for f in findings:
        result = by_path.get(f.filename)
        if f.cell is not None:  # already in its cell, and through its notebook's directives
            out.extend(admit([f], settings))
            continue
        kept = admit([f], settings, result.suppressions if result is not None else None)
        if result is not None and result.cells is not None:
            kept = [result.cells.localize(k) for k in kept]
        out.extend(kept)
    return out


def check_text_files(
    paths: Sequence[Path],
    settings: Settings,
    named: Collection[Path] = (),
    *,
    texts: Mapping[Path, str] | None = None,
) -> list[Finding]:
    """Dependency files (requirements, pyproject.toml, Dockerfiles...), each text checker over
    every file it reads, so that it sees a project's files together. A file in `named` (given on
    the command line) goes to a checker that reads it even when its name is not one it knows.
    `texts` holds the text of files read from memory (an editor's unsaved buffers)."""
    findings: list[Finding] = []
    for checker_type in registry.text_checkers():
        if not any(settings.code_enabled(r) for r in checker_type.rules):
            continue  # work skipped: none of its rules can be reported
        files: list[tuple[str, str]] = []
        for path in paths:
            name = path.as_posix()
            if not checker_type.matches(name) and not (
                path in named and checker_type.reads_named(name)
            ):
                continue
            if texts is not None and path in texts:
                files.append((sources.display(path), texts[path]))
                continue
            try:
                files.append((sources.display(path), sources.read_text(path)))
            except OSError:
                continue
        if not files:
            continue
        by_name = dict(files)
        found = _check_text(checker_type, files, settings)
        by_file: dict[str, list[Finding]] = {}
        for finding in found:
            by_file.setdefault(finding.filename, []).append(finding)
        kept: set[int] = set()
        for name, group in by_file.items():
            text = by_name.get(name)
            noqa = parse_lines(text) if text is not None else None
            kept.update(id(f) for f in admit(group, settings, noqa, inline=True))
        findings.extend(f for f in found if id(f) in kept)
    return findings


def _check_text(
    checker_type: type[TextChecker], files: list[tuple[str, str]], settings: Settings
) -> list[Finding]:
    """A text checker over the files of the run; if it raises, each file alone, so that one
    file that breaks it gets an MXL002 and every other file still reports."""
    try:
        return checker_type().check_files(files, settings)
    except Exception:  # a rule bug must not stop the run
        pass
    good: list[tuple[str, str]] = []
    failures: list[Finding] = []
    for name, text in files:
        try:
            checker_type().check_files([(name, text)], settings)
        except Exception as exc:
            failures.append(internal_error(name, checker_type.__name__, exc))
        else:
            good.append((name, text))
    try:
        found = checker_type().check_files(good, settings) if good else []
    except Exception:  # only together: each good file on its own
        found = [f for item in good for f in checker_type().check_files([item], settings)]
    return found + failures


def run(
    paths: Sequence[Path],
    settings: Settings,
    *,
    jobs: int = 1,
    cache: Cache | None = None,
    progress: Progress | None = None,
) -> RunResult:
    """Lint `paths`: each file on its own (`jobs` processes; 0 = one per core; results of
    unchanged files from `cache`), then what needs every file, then dependency files.
    `progress` is told how many files there are and as each is done."""
    unlisted: list[tuple[Path, OSError]] = []
    python, text = sources.discover(paths, settings, unlisted=unlisted)
    out = RunResult(files_checked=len(python) + len(text))
    out.findings.extend(admit(sources.unlisted_findings(unlisted), settings))
    if progress is not None:
        progress.start(out.files_checked)
        results = lint_all(python, settings, jobs=jobs, cache=cache, on_done=progress.advance)
    else:
        results = lint_all(python, settings, jobs=jobs, cache=cache)
    for r in results:
        out.findings.extend(r.findings)
        out.error = out.error or r.error
    out.findings.extend(resolve_project(results, settings))
    named = {p for p in paths if not p.is_dir()}
    out.findings.extend(check_text_files(text, settings, named))
    if progress is not None:
        progress.advance(len(text))
    # A checker that failed on the whole project or on a dependency file is an error too.
    out.error = out.error or any(f.code == "MXL002" for f in out.findings)
    out.findings.sort(key=Finding.sort_key)
    return out
