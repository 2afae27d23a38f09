"""Configuration files: `[tool.mxlint]` in pyproject.toml or mxlint.toml, read and checked
against the rules, overridden by CLI flags; the result is a `mxlint.settings.Settings`."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mxlint.rule import CODE_RE
from mxlint.settings import Settings

KNOWN_KEYS = {
    "select",
    "extend-select",
    "ignore",
    "extend-ignore",
    "per-file-ignores",
    "exclude",
    "extend-exclude",
    "respect-gitignore",
    "force-exclude",
    "mxnet-version",
    "entry-points",
    "rules",
    "verify",
}


def toml_reader() -> Any:
    """The TOML reader, loaded only by runs that have a configuration file to read."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib


class ConfigError(Exception):
    """Bad configuration: the message names the file and the key."""


def _code_prefix_ok(value: str) -> bool:
    if value == "ALL":
        return True
    digits = value[3:]
    return value.startswith("MXL") and (digits.isdigit() or not digits) and len(value) <= 6


def validate_codes(values: Iterable[str], where: str) -> None:
    """Codes or prefixes (`MXL` and `ALL`: every rule, `MXL1`, `MXL101`), as flake8 reads them;
    a full code must name an existing rule."""
    from mxlint import registry

    known = registry.all_rules()
    for value in values:
        if not _code_prefix_ok(value):
            raise ConfigError(
                f"{where}: invalid rule code `{value}` (expected MXL and up to 3 digits, or ALL)"
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


def find_config(start: Path) -> Path | None:
    """The nearest mxlint.toml, or pyproject.toml with a [tool.mxlint] table, at or above start,
    up to the root of the git repository holding it (a directory with `.git`): a stray config
    above the project does not silently change its checks."""
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
            tomllib = toml_reader()
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError):
                return candidate  # let load_settings report it
            if "mxlint" in data.get("tool", {}):
                return candidate
        if (d / ".git").exists():  # the repository's root: the project ends here
            return None
    return None


def load_settings(path: Path | None, root: Path | None = None) -> Settings:
    """Settings from a config file (None: defaults). Raises ConfigError naming file and key."""
    if path is None:
        return Settings(root=root or Path.cwd())
    tomllib = toml_reader()
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
    for key, attr in (
        ("respect-gitignore", "respect_gitignore"),
        ("force-exclude", "force_exclude"),
    ):
        if key in table:
            value = table[key]
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: `{key}` must be true or false")
            setattr(settings, attr, value)
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
