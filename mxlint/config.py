"""Settings: `[tool.mxlint]` in pyproject.toml or mxlint.toml, overridden by CLI flags."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from mxlint.rule import CODE_RE, Rule

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

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
)

KNOWN_KEYS = {
    "select",
    "extend-select",
    "ignore",
    "extend-ignore",
    "per-file-ignores",
    "exclude",
    "extend-exclude",
    "mxnet-version",
    "entry-points",
    "rules",
    "verify",
}


class ConfigError(Exception):
    """Bad configuration: the message names the file and the key."""


def _code_prefix_ok(value: str) -> bool:
    if value == "ALL":
        return True
    return value.startswith("MXL") and value[3:].isdigit() and len(value) <= 6


def validate_codes(values: Iterable[str], where: str) -> None:
    """Codes or prefixes (`MXL1`, `MXL101`, `ALL`); a full code must name an existing rule."""
    from mxlint import registry

    known = registry.all_rules()
    for value in values:
        if not _code_prefix_ok(value):
            raise ConfigError(
                f"{where}: invalid rule code `{value}` "
                "(expected MXL followed by up to 3 digits, or ALL)"
            )
        if len(value) == 6 and value not in known:
            raise ConfigError(f"{where}: unknown rule code `{value}` (see `mxlint rule --all`)")


def _check_rule_options(code: str, options: dict[str, Any], where: str) -> None:
    """Per-rule options: the rule must exist; if it declares `options`, keys and types too."""
    from mxlint import registry

    rule = registry.get_rule(code)
    if rule is None:
        raise ConfigError(f"{where}: `rules.{code}`: unknown rule code `{code}`")
    declared = getattr(rule, "options", None)
    if not isinstance(declared, dict):
        return
    for key, value in options.items():
        if key not in declared:
            known = ", ".join(sorted(declared)) or "none"
            raise ConfigError(
                f"{where}: `rules.{code}.{key}`: unknown option for {code} (known options: {known})"
            )
        default = declared[key]
        if default is not None and not isinstance(value, type(default)):
            raise ConfigError(
                f"{where}: `rules.{code}.{key}` must be of type "
                f"{type(default).__name__}, got {value!r}"
            )


@dataclass
class Settings:
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
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
        try:
            resolved = Path(path).resolve()
        except (RuntimeError, OSError):  # a symlink loop
            resolved = Path(os.path.abspath(path))
        try:
            return resolved.relative_to(_resolved(self.root)).as_posix()
        except ValueError:
            return Path(path).as_posix()

    def is_excluded(self, path: Path) -> bool:
        rel = self.relative(str(path))
        patterns = self.exclude + self.extend_exclude
        parts = PurePosixPath(rel).parts
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


@functools.lru_cache(maxsize=64)
def _resolved(root: Path) -> Path:
    """`root.resolve()`, once per run: every file's relative path is taken against it."""
    return root.resolve()


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
        """Whether any pattern matches `rel` (its last component: `name`)."""
        return bool(
            (self.whole is not None and self.whole.match(rel))
            or rel.startswith(self.prefixes)
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


def find_config(start: Path) -> Path | None:
    """The nearest mxlint.toml, or pyproject.toml with a [tool.mxlint] table, at or above start."""
    try:
        start = start.resolve()
    except (RuntimeError, OSError):  # a symlink loop
        start = Path(os.path.abspath(start))
    directory = start if start.is_dir() else start.parent
    for d in (directory, *directory.parents):
        candidate = d / "mxlint.toml"
        if candidate.is_file():
            return candidate
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError):
                return candidate  # let load_settings report it
            if "mxlint" in data.get("tool", {}):
                return candidate
    return None


def load_settings(path: Path | None, root: Path | None = None) -> Settings:
    """Settings from a config file (None: defaults). Raises ConfigError naming file and key."""
    if path is None:
        return Settings(root=root or Path.cwd())
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc
    table = data if path.name == "mxlint.toml" else data.get("tool", {}).get("mxlint", {})
    if path.name == "mxlint.toml" and "tool" in table and "mxlint" in table["tool"]:
        table = table["tool"]["mxlint"]
    return settings_from_table(table, path)


def settings_from_table(table: dict[str, Any], path: Path | None) -> Settings:
    where = str(path) if path else "settings"
    settings = Settings(source=path, root=path.parent if path else Path.cwd())
    for key in table:
        if key not in KNOWN_KEYS:
            raise ConfigError(
                f"{where}: unknown key `{key}` in [tool.mxlint]; "
                f"known keys: {', '.join(sorted(KNOWN_KEYS))}"
            )

    def codes(key: str) -> tuple[str, ...]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: `{key}` must be a list of rule codes")
        validate_codes(value, f"{where}: `{key}`")
        return tuple(value)

    if "select" in table:
        settings.select = codes("select")
    settings.extend_select = codes("extend-select")
    settings.ignore = codes("ignore") + codes("extend-ignore")
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError(f"{where}: `per-file-ignores` must be a table of glob = [codes]")
    for pattern, value in pfi.items():
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(
                f'{where}: `per-file-ignores."{pattern}"` must be a list of rule codes'
            )
        validate_codes(value, f'{where}: `per-file-ignores."{pattern}"`')
        settings.per_file_ignores[pattern] = tuple(value)
    for key, attr in (
        ("exclude", "exclude"),
        ("extend-exclude", "extend_exclude"),
        ("entry-points", "entry_points"),
    ):
        if key in table:
            value = table[key]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where}: `{key}` must be a list of glob patterns")
            setattr(settings, attr, tuple(value))
    if "mxnet-version" in table:
        settings.mxnet_version = parse_mxnet_version(table["mxnet-version"], where)
    rules = table.get("rules", {})
    if not isinstance(rules, dict):
        raise ConfigError(f"{where}: `rules` must be a table of per-rule option tables")
    for code, options in rules.items():
        if not CODE_RE.match(code) or not isinstance(options, dict):
            raise ConfigError(f"{where}: `rules.{code}` must be a table keyed by a rule code")
        _check_rule_options(code, options, where)
        settings.rule_options[code] = options
    verify = table.get("verify", {})
    if not isinstance(verify, dict):
        raise ConfigError(f"{where}: `verify` must be a table")
    settings.verify = verify
    return settings


def parse_mxnet_version(value: object, where: str = "--mxnet-version") -> str:
    text = str(value).strip()
    major = text.split(".", 1)[0]
    if major not in ("1", "2"):
        raise ConfigError(
            f'{where}: `mxnet-version` must be 1.x or 2.x (e.g. "1.9"), got {value!r}'
        )
    return major
