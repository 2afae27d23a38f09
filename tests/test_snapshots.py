"""Snapshot tests in Ruff's manner: every rule's findings, rendered in full, pinned in a file.

For each code of `mxlint.registry.all_rules()`, `tests/snapshots/<CODE>.txt` holds what
`mxlint check --output-format full` shows for that code (position, message, the source lines and
the fix as a diff), so that a changed message, position or fix shows in review as a diff of the
snapshot. The findings come from:

* the bad fixtures: `fixtures/<family>/bad/`, `fixtures/verify/<family>/bad/` and
  `fixtures/sample_project/`, each linted as one run with the settings its directory implies (the
  `mxlint.toml` or `[tool.mxlint]` found at or above it inside the repository, else
  `select = ["ALL"]`), with paths relative to the repository root;
* the rule's own invalid examples (`Rule.invalid`), each checked alone with only that rule
  selected, as `tests/test_rule_examples.py` (Python rules) and `tests/test_versions.py`
  (dependency-file rules) check them.

A snapshot that differs fails its test with a unified diff (pinned -> now). When the change is
intended, rewrite the snapshots, review the diff and commit it with the change:

    MXLINT_UPDATE_SNAPSHOTS=1 pytest tests/test_snapshots.py

In that mode the tests write what they find (and delete snapshots of codes that no longer exist)
instead of comparing.
"""

from __future__ import annotations

import difflib
import functools
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
from rule_cases import invalid_examples
from rule_cases import settings as example_settings

from mxlint import registry
from mxlint.api import check_paths, check_source
from mxlint.config import Settings, find_config, load_settings
from mxlint.output import render_full
from mxlint.rule import Example, Finding, Rule

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SNAPSHOTS = ROOT / "tests" / "snapshots"
UPDATE_VAR = "MXLINT_UPDATE_SNAPSHOTS"
UPDATE_COMMAND = f"{UPDATE_VAR}=1 pytest tests/test_snapshots.py"
RULES = registry.all_rules()


def _updating() -> bool:
    return os.environ.get(UPDATE_VAR, "") not in ("", "0")


@contextmanager
def _cwd(path: Path) -> Iterator[None]:
    """Run in `path`: mxlint names files relative to the current directory, and `full` output
    reads the source lines it shows from disk."""
    old = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


# -- findings on the fixtures -----------------------------------------------------------------


def fixture_dirs() -> list[Path]:
    return [
        *sorted(FIXTURES.glob("*/bad")),
        *sorted(FIXTURES.glob("verify/*/bad")),
        FIXTURES / "sample_project",
    ]


def _rel(path: Path) -> str:
    return path.resolve().relative_to(ROOT).as_posix()


def fixture_settings(directory: Path) -> tuple[Settings, str]:
    """The settings a fixture directory implies, and how to name them in the snapshot."""
    config = find_config(directory)
    if config is not None and ROOT in config.resolve().parents:
        return load_settings(config), f"settings of {_rel(config)}"
    return Settings(select=("ALL",), root=directory), "select = ALL"


@functools.cache
def fixture_findings() -> tuple[tuple[str, tuple[Finding, ...]], ...]:
    """(section title, findings) per fixture directory, each linted once as its own run."""
    out = []
    with _cwd(ROOT):
        for directory in fixture_dirs():
            settings, how = fixture_settings(directory)
            result = check_paths([Path(_rel(directory))], settings)
            out.append((f"{_rel(directory)} ({how})", tuple(result.findings)))
    return tuple(out)


def _render_fixtures(findings: Sequence[Finding]) -> str:
    with _cwd(ROOT):
        return render_full(findings)


# -- findings on the rules' own invalid examples ----------------------------------------------


@functools.cache
def _python_examples() -> dict[str, list[tuple[int, Example]]]:
    by_code: dict[str, list[tuple[int, Example]]] = {}
    for rule, ex, case_id in invalid_examples(single_file=False, with_line=False):
        by_code.setdefault(rule.code, []).append((int(case_id.rsplit("-", 1)[1]), ex))
    return by_code


def _examples(rule: type[Rule]) -> list[tuple[int, Example]]:
    if rule.kind == "python":
        return _python_examples().get(rule.code, [])
    return [
        (i, ex if isinstance(ex, Example) else Example(ex)) for i, ex in enumerate(rule.invalid)
    ]


def _write(directory: Path, name: str, text: str) -> None:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _render_example(rule: type[Rule], ex: Example) -> str:
    """The example's findings of this rule, rendered from a scratch directory that holds its
    file(s), named as the example names them."""
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        _write(directory, ex.filename, ex.code)
        with _cwd(directory):
            if rule.kind == "python":
                found = check_source(
                    ex.code, ex.filename, example_settings(rule, ex.mxnet), ex.project
                )
            else:  # dependency files are read from disk, together with the example's others
                for name, text in ex.project:
                    _write(directory, name, text)
                found = check_paths(
                    [Path(".")], Settings(select=(rule.code,), root=directory)
                ).findings
            hits = [f for f in found if f.code == rule.code]
            return render_full(hits) if hits else "(not reported)\n"


def _example_title(rule: type[Rule], index: int, ex: Example) -> str:
    where = ex.filename if rule.kind != "python" else f"{ex.filename}, MXNet {ex.mxnet}.x"
    if ex.project:
        others = ", ".join(name for name, _ in ex.project)
        where += f", with {others}"
    return f"invalid example {index} ({where})"


# -- the snapshot -----------------------------------------------------------------------------


def render_snapshot(code: str) -> str:
    rule = RULES[code]
    sections: list[str] = []
    for title, findings in fixture_findings():
        hits = [f for f in findings if f.code == code]
        if hits:
            sections.append(f"## {title}\n\n{_render_fixtures(hits).rstrip()}\n")
    for index, ex in _examples(rule):
        rendered = _render_example(rule, ex).rstrip()
        sections.append(f"## {_example_title(rule, index, ex)}\n\n{rendered}\n")
    head = (
        f"# {code} {rule.name}\n"
        f"# Pinned by tests/test_snapshots.py; after an intended change: {UPDATE_COMMAND}\n"
    )
    if not sections:
        sections.append("(no finding on the fixtures, and no invalid example)\n")
    return head + "\n" + "\n".join(sections)


def _diff(pinned: str, now: str, name: str) -> str:
    return "".join(
        difflib.unified_diff(
            pinned.splitlines(keepends=True),
            now.splitlines(keepends=True),
            f"{name} (pinned)",
            f"{name} (now)",
        )
    )


@pytest.mark.parametrize("code", sorted(RULES))
def test_findings_match_the_snapshot(code):
    path = SNAPSHOTS / f"{code}.txt"
    now = render_snapshot(code)
    if _updating():
        SNAPSHOTS.mkdir(exist_ok=True)
        if not path.is_file() or path.read_bytes().decode("utf-8") != now:
            path.write_bytes(now.encode("utf-8"))
        return
    name = _rel(path)
    if not path.is_file():
        pytest.fail(f"{name} is missing; write it with: {UPDATE_COMMAND}", pytrace=False)
    pinned = path.read_bytes().decode("utf-8")
    if pinned != now:
        pytest.fail(
            f"{code}: the findings differ from {name}:\n{_diff(pinned, now, name)}\n"
            f"If the change is intended: {UPDATE_COMMAND}, and review the diff.",
            pytrace=False,
        )


def test_no_stray_snapshot():
    """Every file in tests/snapshots/ is the snapshot of a code the registry knows."""
    stray = (
        sorted(p for p in SNAPSHOTS.iterdir() if p.suffix != ".txt" or p.stem not in RULES)
        if SNAPSHOTS.is_dir()
        else []
    )
    if _updating():
        for path in stray:
            if path.is_file():
                path.unlink()
        return
    assert not stray, (
        f"snapshots of no known code: {', '.join(p.name for p in stray)}; "
        f"remove them (or run {UPDATE_COMMAND})"
    )
