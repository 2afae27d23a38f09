"""What a run is asked to do: which rules, which files, which MXNet; read by every layer.

Reading and validating a configuration file is `mxlint.config`'s; this module holds only the
settings themselves, so that analyses can be given them without depending on the rule registry.
"""

from __future__ import annotations

import errno
import fnmatch
import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from mxlint.rule import Rule

DEFAULT_EXCLUDE = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    "env",
    ".env",
    "__pycache__",
    "build",
    "dist",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".mxlint_cache",
    "node_modules",
    "site-packages",
    ".eggs",
    "*.egg-info",
    ".ipynb_checkpoints",
    # Editors' local history (VS Code's Local History extension): timestamped copies of files
    # taken while they were edited, many half-written; the program is the file they copy.
    ".history",
)


@dataclass
class Settings:
    """A run's configuration: the configuration file's, then the command line's."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    #: Leave out, under a directory, the files git ignores (`mxlint.gitignore`).
    respect_gitignore: bool = True
    #: Apply the excludes (and what git ignores) to paths named on the command line too, as
    #: pre-commit names every file it checks; off, a named path is always checked (Ruff's).
    force_exclude: bool = False
    #: "1", "2" or None (infer per file).
    mxnet_version: str | None = None
    entry_points: tuple[str, ...] = ()
    rule_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    verify: dict[str, Any] = field(default_factory=dict)
    #: Where the config came from (for messages), and the directory paths are relative to.
    source: Path | None = None
    root: Path = field(default_factory=Path.cwd)
    #: mxlint applies same-line noqa comments itself; False under flake8, which does it.
    inline_noqa: bool = True
    _cache: dict[tuple[Any, ...], bool] = field(default_factory=dict, repr=False)

    # -- selection -----------------------------------------------------------------------

    def _match_len(self, code: str, prefixes: tuple[str, ...]) -> int:
        best = -1
        for p in prefixes:
            if p == "ALL":
                best = max(best, 0)
            elif code.startswith(p):
                best = max(best, len(p))
        return best

    def code_enabled(self, rule: type[Rule]) -> bool:
        code = rule.code
        if self.select is None:
            selected = 3 if rule.default_enabled else -1
        else:
            selected = self._match_len(code, self.select)
        selected = max(selected, self._match_len(code, self.extend_select))
        ignored = self._match_len(code, self.ignore)
        # The more specific prefix wins; on a tie, ignore wins.
        return selected >= 0 and selected > ignored

    def enabled(self, rule: type[Rule], path: str) -> bool:
        key = (rule.code, path)
        hit = self._cache.get(key)
        if hit is None:
            hit = self.code_enabled(rule) and not self._ignored_for_path(rule.code, path)
            self._cache[key] = hit
        return hit

    def _ignored_for_path(self, code: str, path: str) -> bool:
        if not self.per_file_ignores:
            return False
        rel = self.relative(path)
        for pattern, codes in self.per_file_ignores.items():
            if _glob_match(rel, pattern) and any(p == "ALL" or code.startswith(p) for p in codes):
                return True
        return False

    # -- paths ---------------------------------------------------------------------------

    def relative(self, path: str) -> str:
        # A relative path means another file after a change of directory.
        return _relative(path, self.root, "" if os.path.isabs(path) else os.getcwd())

    def is_excluded(self, path: Path, *, ancestors: bool = True) -> bool:
        """Whether an exclude pattern matches `path` or, with `ancestors`, a directory above
        it (up to the project root). Discovery asks about each entry of a directory it walks
        without `ancestors` (the directory itself was asked when it was reached), so that a
        path named on the command line is walked even inside an excluded directory."""
        rel = self.relative(str(path))
        if rel == ".":
            return False  # the project root: patterns name what is under it
        patterns = self.exclude + self.extend_exclude
        parts = PurePosixPath(rel).parts
        if not ancestors:
            return _globs(patterns).match_entry(rel, parts[-1] if parts else "")
        # Directory names are matched once per directory, not once per file in it.
        key = (patterns, parts[:-1])
        in_excluded_dir = self._cache.get(key)
        if in_excluded_dir is None:
            in_excluded_dir = self._cache[key] = any(
                fnmatch.fnmatchcase(p, pattern) for pattern in patterns for p in parts[:-1]
            )
        if in_excluded_dir:
            return True
        return _globs(patterns).match(rel, parts[-1] if parts else "")

    def is_entry_point(self, path: str) -> bool:
        if path.endswith(".ipynb"):
            return True  # a notebook is a program: its cells run top to bottom
        rel = self.relative(path)
        return _globs(self.entry_points).match(rel, PurePosixPath(rel).name)

    def option(self, code: str, key: str, default: Any) -> Any:
        return self.rule_options.get(code, {}).get(key, default)


@functools.lru_cache(maxsize=4096)
def _relative(path: str, root: Path, cwd: str) -> str:
    """`path` relative to the project root, once per path: several rules and the settings ask
    for each file, and resolving a path asks the file system about every folder on it."""
    # `Path(path).resolve().relative_to(root.resolve()).as_posix()`, on text: path objects
    # for every entry of a large tree were a tenth of its discovery.
    resolved = _realpath(path)
    base = _resolved(root)
    if resolved == base:
        return "."
    head = base if base.endswith(os.sep) else base + os.sep
    if os.sep == "/":
        if resolved.startswith(head):
            return resolved[len(head) :]
    elif os.path.normcase(resolved).startswith(os.path.normcase(head)):  # as `relative_to`
        return resolved[len(head) :].replace(os.sep, "/")
    return Path(path).as_posix()


def _realpath(path: str) -> str:
    """`str(Path(path).resolve())`; an absolute path without resolving links where they
    loop (`resolve` raises there)."""
    try:
        resolved = os.path.realpath(path)
    except (RuntimeError, OSError):
        return os.path.abspath(path)
    try:
        os.stat(resolved)  # `resolve` raises where links loop; a missing file is no matter
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return os.path.abspath(path)
    return resolved


@functools.lru_cache(maxsize=64)
def _resolved(root: Path) -> str:
    """`str(root.resolve())`, once per run: every file's relative path is taken against it."""
    return str(root.resolve())


class _Globs:
    """Patterns as `_glob_match` reads them, compiled into one expression per kind of match:
    each file is tested against every exclude pattern, and thousands of files make that a
    large share of a warm run."""

    def __init__(self, patterns: tuple[str, ...]) -> None:
        stripped = [p.rstrip("/") for p in patterns]
        whole = [fnmatch.translate(p) for p in stripped]
        whole += [fnmatch.translate(p + "/*") for p in stripped if p.endswith("**")]
        names = [fnmatch.translate(p) for p in stripped if "/" not in p]
        self.whole = re.compile("|".join(whole)) if whole else None
        self.prefixes = tuple(p + "/" for p in stripped)
        self.names = re.compile("|".join(names)) if names else None

    def match(self, rel: str, name: str) -> bool:
        """Whether any pattern matches `rel` (its last component: `name`) or a directory
        above it."""
        return self.match_entry(rel, name) or rel.startswith(self.prefixes)

    def match_entry(self, rel: str, name: str) -> bool:
        """Whether any pattern matches `rel` itself, its whole path or its name."""
        return bool(
            (self.whole is not None and self.whole.match(rel))
            or (self.names is not None and self.names.match(name))
        )


@functools.lru_cache(maxsize=64)
def _globs(patterns: tuple[str, ...]) -> _Globs:
    return _Globs(patterns)


def _glob_match(rel: str, pattern: str) -> bool:
    pattern = pattern.rstrip("/")
    if fnmatch.fnmatchcase(rel, pattern):
        return True
    # `dir` and `dir/**` match everything below dir; bare names match at any depth.
    if rel.startswith(pattern + "/"):
        return True
    if "/" not in pattern and fnmatch.fnmatchcase(PurePosixPath(rel).name, pattern):
        return True
    return fnmatch.fnmatchcase(rel, pattern + "/*") if pattern.endswith("**") else False
