"""A project kept in memory between checks, for the language server: every file linted once
(from the results cache when it is unchanged), then only the file that changed; the text of
open documents overrides the disk. The findings are `mxlint check`'s for the same files,
cross-file ones included, because the same passes run over the same results.

Paths are relative to the current directory, as `mxlint check .` run at the project root shows
them: the server changes into the workspace folder before it indexes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from mxlint import registry, sources
from mxlint.config import ConfigError, find_config, load_settings
from mxlint.engine import FileResult, lint_file, lint_notebook, lint_source
from mxlint.funnel import admit
from mxlint.notebooks import NotebookError
from mxlint.project import ProjectIndex
from mxlint.rule import Finding
from mxlint.runner import check_text_files, resolve_project
from mxlint.settings import Settings
from mxlint.workers import lint_all

#: Files whose change reloads the configuration.
CONFIG_NAMES = frozenset({"pyproject.toml", "mxlint.toml"})


@dataclass
class NotebookCell:
    """A cell of an open notebook: its kind and language decide whether it is Python code."""

    text: str
    code: bool = True


#: Modification times are coarse on some file systems (whole seconds, two on FAT): a file
#: modified this close to the start of an index may have changed after the index read it.
MTIME_SLACK_NS = 2_000_000_000


@dataclass
class Workspace:
    """The files of one project and their results; `findings()` is what `mxlint check .` says
    of the files read in full.

    The index reads the files that are not open for their cross-file facts only (what the
    findings of the open documents need of them: `engine.lint_source(facts_only=True)`), about
    13 % less work than a full read; a document is read in full when it is opened. With
    `whole_index`, the index reads every file in full (`findings()` is then what `mxlint check
    .` says of every file)."""

    root: Path
    settings: Settings = field(default_factory=Settings)
    whole_index: bool = False
    #: Why the configuration could not be read (the defaults are used meanwhile).
    config_error: str | None = None
    #: Lint results of Python files and notebooks, by displayed path.
    results: dict[str, FileResult] = field(default_factory=dict)
    #: Dependency files (requirements, Dockerfiles...) a text checker reads, by displayed path.
    text_files: set[str] = field(default_factory=set)
    #: Text of open documents, which overrides the file on disk (Python, dependency files).
    overlays: dict[str, str] = field(default_factory=dict)
    #: Open notebooks, as their cells.
    notebooks: dict[str, list[NotebookCell]] = field(default_factory=dict)
    #: Files `mxlint check .` checks, as the last index found them; and what was decided
    #: about files created since (excludes, what git ignores).
    discovered: set[str] = field(default_factory=set)
    #: When the last index started (`time.time_ns()`): a file not modified since was read by it.
    indexed_at: int = 0
    _checked: dict[str, bool] = field(default_factory=dict)
    _text_findings: list[Finding] | None = None
    #: The dependency files' findings are out of date (kept meanwhile: see `findings`).
    _text_stale: bool = True
    _project: list[Finding] | None = None
    _previous: ProjectIndex | None = None

    # -- configuration and indexing ----------------------------------------------------------

    def load_settings(self) -> None:
        """Read the project's configuration again; a broken file keeps the defaults and says why."""
        try:
            self.settings = load_settings(find_config(self.root), root=self.root)
            self.config_error = None
        except ConfigError as exc:
            self.settings = Settings(root=self.root)
            self.config_error = str(exc)

    def discover(self) -> tuple[list[Path], list[Path]]:
        """Read the configuration and find the files an index checks: (Python, dependency files)."""
        self.load_settings()
        self.indexed_at = time.time_ns()
        return sources.discover([Path(".")], self.settings)

    def index(
        self,
        *,
        jobs: int = 0,
        cache_dir: Path | None = None,
        use_cache: bool = True,
        pool: Executor | None = None,
        files: tuple[list[Path], list[Path]] | None = None,
        on_start: Callable[[], None] | None = None,
    ) -> None:
        """Lint every file of the project once (for its facts, unless `whole_index`; the open
        documents in full); unchanged files come from the results cache, which is saved for
        the next `mxlint check` or server start. `pool`: workers forked
        earlier with this workspace's settings (`workers.fork_pool`); `files`: what
        `discover()` has just returned, when the caller has called it; `on_start`: called
        when the files are handed to the workers."""
        from mxlint.cache import Cache, default_dir

        python, text = files if files is not None else self.discover()
        cache = (
            Cache.load(cache_dir or default_dir(self.settings), self.settings)
            if use_cache
            else None
        )
        self.text_files = {sources.display(p) for p in text}
        self.discovered = {sources.display(p) for p in (*python, *text)}
        self._checked = {}
        # The dependency-file pass needs no Python result: it runs in a thread meanwhile, on
        # what the workers leave of the CPU (the tail of their files), started once they have
        # their files (it would compete with handing them out).
        with ThreadPoolExecutor(max_workers=1) as side:
            text_pass: list[Future[list[Finding]]] = []

            def start() -> None:
                text_pass.append(side.submit(self.check_text, *self.text_inputs()))
                if on_start is not None:
                    on_start()

            results = lint_all(
                python,
                self.settings,
                jobs=jobs,
                cache=cache,
                threaded=True,
                pool=pool,
                on_start=start,
                facts_only=not self.whole_index,
            )
            self.set_text_findings(text_pass[0].result())  # lint_all always calls `start`
        if cache is not None:
            cache.save()
        self.results = {r.path: r for r in results}
        self._changed()
        for name in list(self.overlays):
            self._relint(name)
        for name in list(self.notebooks):
            self._relint(name)

    # -- documents ---------------------------------------------------------------------------

    def open(self, name: str, text: str) -> None:
        self._overlay(name, text)

    def change(self, name: str, text: str) -> None:
        if self.overlays.get(name) != text:
            self._overlay(name, text)

    def _overlay(self, name: str, text: str) -> None:
        opened = name not in self.overlays
        self.overlays[name] = text
        if opened and self._as_indexed(name, text):
            return  # a document opened as it is on disk: its findings are the index's
        self._relint(name)

    def _as_indexed(self, name: str, text: str) -> bool:
        """Whether the last index read `text` as the content of `name` (the file has not been
        modified since the index started, and it holds exactly that text)."""
        if name not in self.results and name not in self.text_files:
            return False
        if name in self.results and self.results[name].facts_only:
            return False  # read for its facts only: a document is read in full
        if name.endswith(sources.NOTEBOOK_SUFFIX):
            return False
        path = Path(name)
        try:
            if path.stat().st_mtime_ns >= self.indexed_at - MTIME_SLACK_NS:
                return False
            data = sources.read_regular(path)
            disk = sources.decode_source(data) if name in self.results else data.decode("utf-8")
        except (OSError, UnicodeDecodeError, SyntaxError, LookupError):
            return False
        return disk == text

    def close(self, name: str) -> None:
        """The disk is the truth again for a closed document."""
        self.overlays.pop(name, None)
        self.notebooks.pop(name, None)
        self._relint(name)

    def set_notebook(self, name: str, cells: list[NotebookCell]) -> None:
        self.notebooks[name] = cells
        self._relint(name)

    def is_checked(self, name: str) -> bool:
        """Whether `mxlint check .` would check this file: found by the last index, or, for a
        file created since, a kind mxlint reads that no exclude and no `.gitignore` leaves out."""
        if name in self.discovered:
            return True
        if name not in self._checked:
            self._checked[name] = self._would_check(name)
        return self._checked[name]

    def _would_check(self, name: str) -> bool:
        path = Path(name)
        if path.is_absolute() or name.startswith(".."):
            return False
        if self.settings.is_excluded(path):
            return False
        if not (self._is_python(name) or self._is_text(name)):
            return False
        if self.settings.respect_gitignore:
            from mxlint.gitignore import ignored

            return not ignored(Path("."), [path])
        return True

    def _is_python(self, name: str) -> bool:
        return name.endswith((".py", ".pyi", sources.NOTEBOOK_SUFFIX))

    def _is_text(self, name: str) -> bool:
        return any(t.matches(name) for t in registry.text_checkers())

    def _relint(self, name: str) -> None:
        path = Path(name)
        if self._is_text(name) and self.is_checked(name):
            if name in self.overlays or path.is_file():
                self.text_files.add(name)
            else:
                self.text_files.discard(name)
            self._changed(text=True)
        if not self._is_python(name) or not self.is_checked(name):
            return
        if name in self.notebooks or (
            name in self.overlays and name.endswith(sources.NOTEBOOK_SUFFIX)
        ):
            # An open notebook: as cells (LSP notebook documents) or as its JSON text (an editor
            # that opens it as a plain document).
            data = (
                _notebook_json(self.notebooks[name])
                if name in self.notebooks
                else self.overlays[name].encode("utf-8")
            )
            try:
                result = lint_notebook(name, data, self.settings)
            except NotebookError as exc:  # as `mxlint check` reports it: MXL003
                location, detail = sources.why_unreadable(exc, data)
                finding = sources.unreadable_finding(name, location, detail)
                result = FileResult(name, admit([finding], self.settings))
        elif name in self.overlays:
            module, is_package = sources.module_name_for(path)
            result = lint_source(
                name, self.overlays[name], self.settings, module_name=module, is_package=is_package
            )
        elif path.is_file():  # not open (closed, or changed on disk): as the index reads it
            result = lint_file(path, self.settings, facts_only=not self.whole_index)
        else:  # deleted
            self.results.pop(name, None)
            self._changed()
            return
        self.results[name] = result
        self._changed()

    def file_changed_on_disk(self, name: str, deleted: bool = False) -> None:
        """A file changed outside the editor (watched files): read it again unless it is open."""
        if Path(name).name in CONFIG_NAMES:
            return  # the caller reloads the configuration and indexes again
        if name in self.overlays or name in self.notebooks:
            return
        if deleted:
            self.results.pop(name, None)
            self.text_files.discard(name)
            self._changed(text=True)
            return
        if self.is_checked(name):
            self._relint(name)

    def _changed(self, text: bool = False) -> None:
        self._project = None
        if text:
            self._text_stale = True

    # -- findings ----------------------------------------------------------------------------

    def findings(self, *, text: bool = True) -> dict[str, list[Finding]]:
        """The findings of every file read in full (not those read for their facts only: see
        the class), sorted as `mxlint check` prints them. With `text=False` the dependency
        files' findings are the last ones computed even if out of date: they read every launch
        script and Python file of the project, too slow for each keystroke (the server computes
        them in a thread, see `text_inputs`, and publishes again)."""
        if self._project is None:
            overrides = {name: text for name, text in self.overlays.items() if name in self.results}
            index = ProjectIndex(
                (r.facts for r in self.results.values() if r.facts is not None),
                self.settings,
                overrides,
                previous=self._previous,
            )
            self._previous = index
            self._project = resolve_project(self.results.values(), self.settings, index=index)
        if self._text_findings is None or (text and self._text_stale):
            self.set_text_findings(self.check_text(*self.text_inputs()))
        partial = {name for name, r in self.results.items() if r.facts_only}
        by_file: dict[str, list[Finding]] = {}
        for finding in _chain(
            (f for r in self.results.values() for f in r.findings),
            self._project,
            self._text_findings or (),
        ):
            if finding.filename not in partial:
                by_file.setdefault(finding.filename, []).append(finding)
        for group in by_file.values():
            group.sort(key=Finding.sort_key)
        return by_file

    @property
    def text_stale(self) -> bool:
        return self._text_stale

    def text_inputs(self) -> tuple[list[Path], dict[Path, str]]:
        """What the dependency-file pass reads now (a snapshot another thread can check);
        the pass is then out of date no more, unless something changes meanwhile."""
        names = sorted(self.text_files)
        texts = {Path(n): self.overlays[n] for n in names if n in self.overlays}
        self._text_stale = False
        return [Path(n) for n in names], texts

    def check_text(self, paths: list[Path], texts: dict[Path, str]) -> list[Finding]:
        return check_text_files(paths, self.settings, texts=texts)

    def set_text_findings(self, found: list[Finding]) -> None:
        self._text_findings = found

    def fix_all(self, name: str, unsafe: bool = False) -> tuple[str, int] | None:
        """The text `mxlint check --fix` would write for an open Python document: (text, fixes)."""
        text = self.overlays.get(name)
        if text is None or not name.endswith((".py", ".pyi")):
            return None
        from mxlint.fixes import fix_text  # the editor's quick fix: not needed to index

        found = self.findings().get(name, [])
        return fix_text(name, text, found, self.settings, unsafe, python=True)


def _chain(*groups: Iterable[Finding]) -> Iterable[Finding]:
    for group in groups:
        yield from group


def _notebook_json(cells: list[NotebookCell]) -> bytes:
    """An nbformat 4 document of an open notebook's cells, as `lint_notebook` reads files."""
    doc = {
        "cells": [
            {
                "cell_type": "code" if c.code else "markdown",
                "metadata": {},
                "source": c.text,
                **({"outputs": [], "execution_count": None} if c.code else {}),
            }
            for c in cells
        ],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(doc).encode("utf-8")


def standalone(name: str, text: str, settings: Settings) -> list[Finding]:
    """Findings of a Python document outside the workspace: the file alone is the project, as
    `mxlint check - --stdin-filename` reads it."""
    result = lint_source(name, text, settings)
    found = list(result.findings) + resolve_project([result], settings, {name: text})
    return sorted(found, key=Finding.sort_key)
