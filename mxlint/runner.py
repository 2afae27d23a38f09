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
from mxlint.engine import FileResult, enabled_checkers, internal_error, lint_file
from mxlint.funnel import admit
from mxlint.project import ProjectIndex
from mxlint.rule import Finding, Rule
from mxlint.settings import Settings
from mxlint.sources import NOTEBOOK_SUFFIX, decode_source
from mxlint.suppressions import Suppressions, parse_lines, unused_directives
from mxlint.workers import lint_all

if TYPE_CHECKING:
    from mxlint.cache import Cache
    from mxlint.checker import Checker, CommentStyle, TextChecker


class Progress(Protocol):
    """What a run tells a progress indicator (`mxlint.progress.FileProgress`)."""

    def start(self, total: int) -> None: ...

    def advance(self, n: int = 1) -> None: ...


@dataclass
class RunResult:
    """What a run found, over how many files, and whether something failed."""

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
    """Findings that need the whole run: conditional ones, checkers' cross-file reports, and
    the `# noqa` directives that suppressed nothing (MXL004), now that every use is known.
    `sources` gives the text of files checked from memory rather than read from disk; `index`,
    the run's facts already gathered (the language server keeps one between changes)."""
    results = list(results)
    if index is None:
        index = ProjectIndex((r.facts for r in results if r.facts is not None), settings, sources)
    found: list[Finding] = []
    for result in results:
        for finding, requirement in result.conditional:
            if index.satisfies(requirement, near=finding.filename):
                found.append(finding)
    failures: list[Finding] = []
    failed: set[str] = set()
    for checker in enabled_checkers(settings):
        if not checker.cross_file:
            continue
        try:
            found.extend(checker.finalize(index))
        except Exception as exc:  # a rule bug must not stop the run
            failed.add(checker.__name__)
            if results:
                failure = internal_error(results[0].path, f"{checker.__name__} (cross-file)", exc)
                failures.append(failure)
    # What this run marks as used goes on copies: a file's result may come from the cache.
    directives = {r.path: r.suppressions.copy() for r in results if r.suppressions}
    admitted = _admit_per_file(found, results, settings, directives)
    unused = _unused_noqa(results, settings, directives, index, failed)
    return admitted + unused + admit(failures, settings)


def _admit_per_file(
    findings: list[Finding],
    results: Sequence[FileResult],
    settings: Settings,
    directives: Mapping[str, Suppressions],
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
        kept = admit([f], settings, directives.get(f.filename))
        if result is not None and result.cells is not None:
            kept = [result.cells.localize(k) for k in kept]
        out.extend(kept)
    return out


def _unused_noqa(
    results: Sequence[FileResult],
    settings: Settings,
    directives: Mapping[str, Suppressions],
    index: ProjectIndex,
    failed: Collection[str],
) -> list[Finding]:
    """MXL004 for every Python file's directives, once every finding of the run is known."""
    owners = {r.code: c for c in enabled_checkers(settings) for r in c.rules}
    out: list[Finding] = []
    for result in results:
        sup = directives.get(result.path)
        if sup is None or not result.parsed:
            continue
        judge = _Judge(result, owners, failed, index)
        found = admit(unused_directives(result.path, sup, settings, judge), settings)
        if result.cells is not None:
            found = [result.cells.localize(f) for f in found]
        out.extend(found)
    return out


class _Judge:
    """Which codes of one file's `# noqa` MXL004 judges: each code that ran on the file, but
    not those of a checker that failed, and a code whose findings may need another file
    (reported by a cross-file checker, or pending on a fact of the project) only when every
    project module the file reaches is in the run (`ProjectIndex.sees_dependencies`): checking
    some files of a project (pre-commit passes the changed ones) must not call a directive
    unused that the whole project uses."""

    def __init__(
        self,
        result: FileResult,
        owners: Mapping[str, type[Checker]],
        failed: Collection[str],
        index: ProjectIndex,
    ) -> None:
        self.result = result
        self.owners = owners
        self.failed = {*failed, *result.failed}
        self.index = index
        self.pending = {f.code for f, _ in result.conditional}
        self._complete: bool | None = None

    def __call__(self, rule: type[Rule]) -> bool:
        checker = self.owners.get(rule.code)
        if rule.kind != "python" or checker is None or checker.__name__ in self.failed:
            return False
        if checker.cross_file or rule.code in self.pending:
            return self.complete
        return True

    @property
    def complete(self) -> bool:
        if self._complete is None:
            facts = self.result.facts
            self._complete = facts is not None and self.index.sees_dependencies(facts)
        return self._complete


def check_text_files(
    paths: Sequence[Path],
    settings: Settings,
    named: Collection[Path] = (),
    *,
    texts: Mapping[Path, str] | None = None,
) -> list[Finding]:
    """Dependency files (requirements, pyproject.toml, Dockerfiles...), each text checker over
    every file it reads, so that it sees a project's files together. A file in `named` (given on
    the command line) that no checker knows by its name goes to a checker that reads such files.
    `texts` holds the text of files read from memory (an editor's unsaved buffers, files a fix
    changed). Then the directives of each file that suppressed nothing of what read it
    (MXL004)."""
    findings: list[Finding] = []
    #: Per file: its directives (read once, in the style of the first checker reading it),
    #: and the checkers that read it and did not fail on it.
    directives: dict[str, Suppressions] = {}
    readers: dict[str, list[type[TextChecker]]] = {}
    checkers = registry.text_checkers()
    # A file some checker reads by its name goes to that checker only.
    claimed = {p for p in paths if any(t.matches(p.as_posix()) for t in checkers)}
    for checker_type in checkers:
        if not any(settings.code_enabled(r) for r in checker_type.rules):
            continue  # work skipped: none of its rules can be reported
        files: list[tuple[str, str]] = []
        for path in paths:
            name = path.as_posix()
            if not checker_type.matches(name) and not (
                path in named and path not in claimed and checker_type.reads_named(name)
            ):
                continue
            shown = sources.display(path)
            if texts is not None and path in texts:
                files.append((shown, texts[path]))
            else:
                try:
                    files.append((shown, sources.read_text(path)))
                except OSError:
                    continue
            if shown not in directives:
                directives[shown] = parse_lines(files[-1][1], checker_type.comment_style(name))
        if not files:
            continue
        found = _check_text(checker_type, files, settings)
        broken = {f.filename for f in found if f.code == "MXL002"}
        for shown, _ in files:
            if shown not in broken:
                readers.setdefault(shown, []).append(checker_type)
        findings.extend(
            f for f in found if admit([f], settings, directives.get(f.filename), inline=True)
        )
    for shown, sup in directives.items():
        if not sup:
            continue
        codes = {r.code for c in readers.get(shown, ()) for r in c.rules}
        # A Python file (setup.py) has its unknown codes judged as Python.
        unknown = not shown.endswith((".py", ".pyi"))
        judge = _ReadBy(frozenset(codes))
        findings.extend(admit(unused_directives(shown, sup, settings, judge, unknown), settings))
    return findings


@dataclass(frozen=True)
class _ReadBy:
    """MXL004 in a dependency file judges the codes of the checkers that read it."""

    codes: frozenset[str]

    def __call__(self, rule: type[Rule]) -> bool:
        return rule.code in self.codes


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


@dataclass
class Project:
    """One run's files and each Python file's own result.

    A fix changes files in memory first (`replace`); `result` decides the run's findings again
    over the files as they now are, so that what `--diff` shows, what `--fix` writes and the
    counts both report come from the same passes."""

    settings: Settings
    python: list[Path]
    text: list[Path]
    #: Files named on the command line (a text checker reads them whatever their name).
    named: set[Path]
    results: list[FileResult]
    #: MXL003 for directories that could not be listed.
    unlisted: list[Finding]
    #: Text of files changed in memory, by the path the run shows.
    changed: dict[str, str] = field(default_factory=dict)

    @classmethod
    def lint(
        cls,
        paths: Sequence[Path],
        settings: Settings,
        *,
        jobs: int = 1,
        cache: Cache | None = None,
        progress: Progress | None = None,
    ) -> Project:
        """Discover the files under `paths` and lint each (`jobs` processes; 0 = one per core;
        results of unchanged files from `cache`); `progress` is told how many files there are
        and as each Python file is done."""
        unlisted: list[tuple[Path, OSError]] = []
        python, text = sources.discover(paths, settings, unlisted=unlisted)
        if progress is not None:
            progress.start(len(python) + len(_only_text(python, text)))
            results = lint_all(python, settings, jobs=jobs, cache=cache, on_done=progress.advance)
        else:
            results = lint_all(python, settings, jobs=jobs, cache=cache)
        named = {p for p in paths if not p.is_dir()}
        missing = admit(sources.unlisted_findings(unlisted), settings)
        return cls(settings, python, text, named, results, missing)

    @property
    def text_only(self) -> list[Path]:
        """The text files that are not also Python files (a text checker may read those too:
        setup.py, a launcher's `os.environ` writes): each file counts once."""
        return _only_text(self.python, self.text)

    def result(self) -> RunResult:
        """Every finding of the run: the files' own, what needs every file, dependency files."""
        out = RunResult(files_checked=len(self.python) + len(self.text_only))
        out.findings.extend(self.unlisted)
        for r in self.results:
            out.findings.extend(r.findings)
            out.error = out.error or r.error
        python_text = {k: v for k, v in self.changed.items() if not k.endswith(NOTEBOOK_SUFFIX)}
        out.findings.extend(resolve_project(self.results, self.settings, python_text))
        texts: dict[Path, str] = {}
        for path in self.text:
            changed = self.changed.get(sources.display(path))
            if changed is not None:  # universal newlines, as `sources.read_text` reads
                texts[path] = changed.replace("\r\n", "\n").replace("\r", "\n")
        out.findings.extend(check_text_files(self.text, self.settings, self.named, texts=texts))
        # A checker that failed on the whole project or on a dependency file is an error too.
        out.error = out.error or any(f.code == "MXL002" for f in out.findings)
        out.findings.sort(key=Finding.sort_key)
        return out

    def replace(self, shown: str, data: bytes) -> FileResult | None:
        """Take `data` as the content of the file the run shows as `shown`: a Python file is
        linted again from it (its new result is returned), a dependency file is read from it."""
        for index, result in enumerate(self.results):
            if result.path == shown:
                fresh = lint_file(self.python[index], self.settings, data)
                self.results[index] = fresh
                if not shown.endswith(NOTEBOOK_SUFFIX):
                    self.changed[shown] = decode_source(data)
                return fresh
        self.changed[shown] = data.decode("utf-8", errors="replace")  # as `read_text` reads
        return None

    def comment_style(self, path: Path) -> CommentStyle:
        """How a `# noqa` directive is written in the dependency file `path` of the run."""
        name = path.as_posix()
        for checker_type in registry.text_checkers():
            if checker_type.matches(name) or (
                path in self.named and checker_type.reads_named(name)
            ):
                return checker_type.comment_style(name)
        return "line"

    def remember(self, shown: str, data: bytes, cache: Cache) -> None:
        """Keep the result of a Python file now written with `data` in `cache`, as a run that
        read it from disk would have."""
        from mxlint.cache import file_key

        for path, result in zip(self.python, self.results):
            if result.path == shown:
                module, is_package = sources.module_name_for(path)
                cache.put(shown, file_key(data, f"{module}:{is_package}"), result)
                return


def _only_text(python: Sequence[Path], text: Sequence[Path]) -> list[Path]:
    seen = set(python)
    return [p for p in text if p not in seen]


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
    project = Project.lint(paths, settings, jobs=jobs, cache=cache, progress=progress)
    out = project.result()
    if progress is not None:
        progress.advance(len(project.text_only))
    return out
