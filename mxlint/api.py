"""Python API: what the CLI, the flake8 plugin and --verify call."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mxlint.config import Settings, find_config, load_settings
from mxlint.engine import lint_source
from mxlint.rule import Finding
from mxlint.runner import RunResult, resolve_project, run


def settings_for(path: Path) -> Settings:
    return load_settings(find_config(path))


def check_paths(paths: Sequence[Path | str], settings: Settings | None = None) -> RunResult:
    resolved = [Path(p) for p in paths]
    if settings is None:
        settings = settings_for(resolved[0] if resolved else Path.cwd())
    return run(resolved, settings)


def check_source(
    source: str,
    filename: str = "example.py",
    settings: Settings | None = None,
    project: Sequence[tuple[str, str]] = (),
) -> list[Finding]:
    """Lint in-memory source; `project` holds (module name, source) of other files of the run."""
    settings = settings or Settings()
    module = Path(filename).stem
    results = [lint_source(filename, source, settings, module_name=module, force=True)]
    sources = {filename: source}
    for name, text in project:
        path = name.replace(".", "/") + ".py"
        sources[path] = text
        results.append(lint_source(path, text, settings, module_name=name, force=True))
    findings = list(results[0].findings)
    findings.extend(
        f for f in resolve_project(results, settings, sources) if f.filename == filename
    )
    findings.sort(key=Finding.sort_key)
    return findings
