"""flake8 plugin: a thin bridge over the engine (`MXL = mxlint.flake8_plugin:MxlintChecker`).

flake8 hands over the file's lines; the engine lints the text exactly as `mxlint check FILE`
does and the findings are yielded with 0-based columns (flake8 adds 1). Selection (`--select`,
`--extend-ignore`, per-file-ignores) and same-line `# noqa` are flake8's job and are left to it;
mxlint's own additions (file-level `# mxlint: noqa`, a directive on the first line of a
multi-line statement) are applied here, since flake8 does not know them.

flake8 reads one file at a time: findings that need other files of the project (a HybridBlock
whose base class lives in another module, cross-file facts) are reported only by `mxlint check`
on the project. Requirements files and Dockerfiles are never seen by flake8. A file that does
not parse at all is reported by flake8 itself (E999): flake8 runs no plugin on it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from mxlint import __version__


@lru_cache(maxsize=64)
def _settings_for(directory: str) -> Any:
    """mxlint's configuration for files of one directory, with every rule produced.

    Rules the configuration selects or ignores keep that choice; with no `select` in the
    configuration every rule is produced and flake8's selection (with the off-by-default
    rules in `extend_default_ignore`) decides what is shown.
    """
    from mxlint.config import find_config, load_settings

    # A broken configuration is an error here as under `mxlint check` (flake8 reports the
    # plugin's exception and fails), never a silent fallback to the defaults.
    settings = load_settings(find_config(Path(directory)))
    if settings.select is None:
        settings.select = ("ALL",)
    settings.inline_noqa = False
    return settings


def _still_off(default_off: list[str], directory: Path) -> list[str]:
    """The default-off codes the configuration found from `directory` does not turn on."""
    from mxlint.config import ConfigError, find_config, load_settings
    from mxlint.launch import load

    try:
        settings = load_settings(find_config(directory))
    except ConfigError as exc:  # flake8 stops with the message, as `mxlint check` exits 2
        raise SystemExit(f"mxlint: error: {exc}") from exc
    rules = load()
    return [code for code in default_off if not settings.code_enabled(rules[code])]


def _default_off() -> list[str]:
    # flake8 imports this module when it loads its plugins: what `run` needs loads here, the
    # way the `mxlint` command loads it.
    from mxlint.launch import load

    return [code for code, rule in load().items() if not rule.default_enabled]


class MxlintChecker:
    name = "mxlint"
    version = __version__
    #: Noisy or advisory rules stay off unless selected, as under `mxlint check`.
    extend_default_ignore: ClassVar[list[str]] = _default_off()

    @classmethod
    def add_options(cls, parser: Any) -> None:
        """flake8 reads default-off codes from its option manager, not from a class attribute:
        `--select MXL602` (or `extend-select`) turns such a rule on, as under `mxlint check`;
        so does the project's own configuration (`extend-select = ["MXL602"]`, `select =
        ["MXL"]` in `[tool.mxlint]`), read from where flake8 runs."""
        parser.extend_default_ignore(_still_off(cls.extend_default_ignore, Path.cwd()))

    def __init__(self, tree: ast.AST, lines: Sequence[str], filename: str) -> None:
        self.tree = tree  # unused: libcst needs the text, which `lines` gives without re-reading
        self.lines = lines
        self.filename = filename

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        from mxlint.engine import lint_source
        from mxlint.runner import resolve_project

        source = "".join(self.lines)
        path = Path(self.filename)
        directory = str(path.parent.resolve() if path.parent.exists() else Path.cwd())
        settings = _settings_for(directory)
        result = lint_source(self.filename, source, settings)
        findings = list(result.findings)
        findings.extend(resolve_project([result], settings, {self.filename: source}))
        findings.sort(key=lambda f: (f.location.row, f.location.column, f.code))
        for f in findings:
            yield f.location.row, f.location.column - 1, f"{f.code} {f.message}", type(self)
