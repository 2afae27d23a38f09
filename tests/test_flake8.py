"""The real flake8, with mxlint installed as its plugin, reports what `mxlint check` reports:
same codes, rows, columns, suppressions; selection and noqa are flake8's own options."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rule_cases import invalid_examples

from mxlint import add_noqa, registry, suppressions
from mxlint.flake8_plugin import MxlintChecker
from mxlint.rule import Example

CASES = invalid_examples(cli=True)
FORMAT = "%(path)s:%(row)d:%(col)d:%(code)s"


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "MXLINT_OUTPUT_FORMAT"}


def flake8(root: Path, *args: str) -> set[tuple[str, int, int, str]]:
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", f"--format={FORMAT}", *args, "."],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env=_env(),
    )
    assert proc.returncode in (0, 1), proc.stderr
    out = set()
    for line in proc.stdout.splitlines():
        path, row, col, code = line.rsplit(":", 3)
        if code.startswith("MXL"):
            out.add((Path(path).as_posix().removeprefix("./"), int(row), int(col), code))
    return out


def mxlint(root: Path, *args: str) -> set[tuple[str, int, int, str]]:
    proc = subprocess.run(
        [sys.executable, "-m", "mxlint", "check", "--output-format", "json", *args, "."],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env=_env(),
    )
    assert proc.returncode in (0, 1), proc.stderr
    return {
        (Path(f["filename"]).as_posix(), f["location"]["row"], f["location"]["column"], f["code"])
        for f in json.loads(proc.stdout)
    }


def _commented(code: str, row: int, comment: str) -> str | None:
    if row in add_noqa.rows_without_comment_end(code):
        return None
    lines = code.splitlines(keepends=True)
    body = lines[row - 1].rstrip("\r\n")
    lines[row - 1] = f"{body}  {comment}" + lines[row - 1][len(body) :]
    return "".join(lines)


@pytest.fixture(scope="module")
def projects(tmp_path_factory) -> list[Path]:
    """One project per MXNet line: every example, plain and with a directive on its line."""
    base = tmp_path_factory.mktemp("flake8")
    roots: dict[str, Path] = {}
    for rule, ex, case_id in CASES:
        root = roots.get(ex.mxnet)
        if root is None:
            root = roots[ex.mxnet] = base / f"mx{ex.mxnet}"
            root.mkdir()
            (root / "pyproject.toml").write_text(f'[tool.mxlint]\nmxnet-version = "{ex.mxnet}.0"\n')
        d = root / case_id.replace("-", "_").lower()
        d.mkdir()
        # A package per example: module names stay unique across the project (two top-level
        # `example` modules would be one module to the cross-file index).
        (d / "__init__.py").write_text("")
        (d / ex.filename).write_text(ex.code)
        assert ex.line is not None  # invalid_examples() keeps examples with a line
        noqa = _commented(ex.code, ex.line, f"# noqa: {rule.code}")
        if noqa is not None and rule.code != "MXL004" and rule.default_enabled:
            (d / f"noqa_{ex.filename}").write_text(noqa)
    return sorted(roots.values())


def test_examples_are_available():
    assert len({rule.code for rule, _, _ in CASES}) >= 3


def test_flake8_reports_exactly_what_mxlint_check_reports(projects):
    total = 0
    for root in projects:
        theirs, ours = flake8(root), mxlint(root)
        assert theirs == ours, (sorted(theirs - ours), sorted(ours - theirs))
        total += len(ours)
    assert total >= len({c for c, *_ in CASES}) // 2


def test_noqa_is_honoured_and_flake8_can_disable_it(projects):
    for root in projects:
        plain = flake8(root)
        suppressed = set()
        for path in root.rglob("noqa_*.py"):
            rel = path.relative_to(root).as_posix()
            code, row = _marked(path)
            assert not any(f[0] == rel and f[1] == row and f[3] == code for f in plain)
            suppressed.add((rel, row, code))
        assert suppressed
        disabled = flake8(root, "--disable-noqa")
        back = {(f[0], f[1], f[3]) for f in disabled - plain}
        assert suppressed <= back


def _marked(path: Path) -> tuple[str, int]:
    for row, line in enumerate(path.read_text().splitlines(), start=1):
        m = suppressions.NOQA_INLINE.search(line)
        if m and m.group("codes") and line.rstrip().endswith(m.group(0).rstrip()):
            return m.group("codes").strip(), row
    raise AssertionError(path)


def test_flake8_selection_options_work(projects):
    root = projects[0]
    everything = flake8(root)
    codes = sorted({f[3] for f in everything})
    first = codes[0]
    ignored = flake8(root, f"--extend-ignore={first}")
    assert ignored == {f for f in everything if f[3] != first}
    selected = flake8(root, f"--select={first}")
    assert selected == {f for f in everything if f[3] == first}
    one_dir = sorted({f[0].split("/")[0] for f in everything})[0]
    per_file = flake8(root, f"--per-file-ignores={one_dir}/*:MXL")
    assert per_file == {f for f in everything if not f[0].startswith(one_dir + "/")}


def test_off_by_default_rules_are_in_extend_default_ignore():
    off = sorted(c for c, r in registry.all_rules().items() if not r.default_enabled)
    assert MxlintChecker.extend_default_ignore == off


def test_flake8_registers_the_plugin():
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
    )
    assert "mxlint" in proc.stdout


def test_mxlint_noqa_extensions_hold_under_flake8(tmp_path: Path):
    """File-level `# mxlint: noqa` and statement-first-line directives, which flake8 does not
    know, give the same result through the plugin."""
    rule, ex, _ = CASES[0]
    (tmp_path / "pyproject.toml").write_text(f'[tool.mxlint]\nmxnet-version = "{ex.mxnet}.0"\n')
    (tmp_path / "a.py").write_text(f"# mxlint: noqa: {rule.code}\n" + ex.code)
    (tmp_path / "b.py").write_text("# mxlint: noqa\n" + ex.code)
    (tmp_path / "c.py").write_text(ex.code)
    theirs, ours = flake8(tmp_path), mxlint(tmp_path)
    assert theirs == ours
    assert not any(f[0] in ("a.py", "b.py") and f[3] == rule.code for f in ours)
    assert any(f[0] == "c.py" and f[3] == rule.code for f in ours)


def test_off_by_default_rules_stay_off_until_selected(tmp_path: Path):
    from mxlint.registry import all_rules

    off = [r for r in all_rules().values() if not r.default_enabled and r.invalid]
    assert off
    rule = off[0]
    example = rule.invalid[0]
    assert isinstance(example, Example)
    (tmp_path / example.filename).write_text(example.code)
    assert not any(f[3] == rule.code for f in flake8(tmp_path))
    assert any(f[3] == rule.code for f in flake8(tmp_path, f"--extend-select={rule.code}"))


def test_select_mxl_selects_every_rule_in_both(tmp_path: Path):
    """`--select MXL` is every rule, those off by default too, under flake8 and mxlint alike."""
    off = next(r for r, _, _ in CASES if not r.default_enabled)
    on = next(r for r, _, _ in CASES if r.default_enabled and r.code[3] != "0")
    for rule in (off, on):
        example = next(ex for r, ex, _ in CASES if r is rule)
        (tmp_path / f"{rule.code.lower()}.py").write_text(example.code)
    theirs, ours = flake8(tmp_path, "--select=MXL"), mxlint(tmp_path, "--select", "MXL")
    assert theirs == ours
    assert {f[3] for f in ours} >= {off.code, on.code}
    assert off.code not in {f[3] for f in mxlint(tmp_path)}


def test_flake8_reads_the_projects_configuration_as_mxlint_does(tmp_path: Path):
    """`extend-select` of a default-off rule in `[tool.mxlint]` shows it under flake8 too, and
    a broken `[tool.mxlint]` stops flake8 with mxlint's message instead of falling back."""
    off = next(r for r, _, _ in CASES if not r.default_enabled)
    example = next(ex for r, ex, _ in CASES if r is off)
    (tmp_path / "mod.py").write_text(example.code)

    def run_flake8() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "flake8", f"--format={FORMAT}", "."],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
            env=_env(),
        )

    assert off.code not in run_flake8().stdout
    (tmp_path / "pyproject.toml").write_text(f'[tool.mxlint]\nextend-select = ["{off.code}"]\n')
    shown = run_flake8()
    assert shown.returncode == 1
    codes = {line.rsplit(":", 1)[1] for line in shown.stdout.splitlines()}
    assert {c for c in codes if c.startswith("MXL")} == {off.code}
    assert {f[3] for f in mxlint(tmp_path)} == {off.code}
    (tmp_path / "pyproject.toml").write_text('[tool.mxlint]\nselect = ["XYZ"]\n')
    broken = run_flake8()
    assert broken.returncode == 1 and broken.stdout == ""
    assert "mxlint: error:" in broken.stderr and "invalid rule code `XYZ`" in broken.stderr
