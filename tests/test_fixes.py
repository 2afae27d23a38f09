"""--fix, --unsafe-fixes, --diff: on every rule's fixable example and on the fixture projects,
the fixed file parses, is written atomically, and a second --fix changes nothing."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import libcst as cst
import pytest
from rule_cases import invalid_examples

from mxlint import fix_run, fixes, registry
from mxlint.api import check_source
from mxlint.cli import main
from mxlint.config import Settings
from mxlint.rule import Edit, Finding, Fix, Location

FIXABLE = invalid_examples(with_line=False, with_fix=True, cli=True)


def _write_case(tmp_path: Path, rule, ex) -> Path:
    path = tmp_path / ex.filename
    path.write_text(ex.code, encoding="utf-8")
    (tmp_path / "mxlint.toml").write_text(
        f'select = ["{rule.code}"]\nmxnet-version = "{ex.mxnet}.0"\n'
    )
    return path


def _unsafe_flag(rule) -> list[str]:
    """Fix mechanics are tested on every fix, whatever its applicability."""
    return ["--unsafe-fixes"]


def _applicabilities(rule, ex) -> set[str]:
    s = Settings(select=(rule.code,), mxnet_version=ex.mxnet)
    return {f.fix.applicability for f in check_source(ex.code, ex.filename, s) if f.fix}


def test_there_are_fixable_examples():
    assert len({rule.code for rule, _, _ in FIXABLE}) >= 2


@pytest.mark.parametrize(("rule", "ex", "case_id"), FIXABLE, ids=[c[2] for c in FIXABLE])
def test_fix_parses_is_atomic_and_idempotent(rule, ex, case_id, tmp_path, monkeypatch, capsys):
    path = _write_case(tmp_path, rule, ex)
    os.chmod(path, 0o640)
    inode = path.stat().st_ino
    monkeypatch.chdir(tmp_path)
    args = ["check", "--fix", *_unsafe_flag(rule), ex.filename]
    main(args)
    fixed = path.read_text(encoding="utf-8")
    assert fixed != ex.code
    cst.parse_module(fixed)  # still parses
    compile(fixed, ex.filename, "exec")
    # Atomic: the file was replaced (new inode), with its permissions, and no temp file left.
    assert path.stat().st_ino != inode
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != ".mxlint_cache") == sorted(
        [ex.filename, "mxlint.toml"]
    )
    # With one fixable finding, --fix gives exactly the documented result.
    s = Settings(select=(rule.code,), mxnet_version=ex.mxnet)
    offered = [f for f in check_source(ex.code, ex.filename, s) if f.fix is not None]
    if len(offered) == 1:
        assert fixed == ex.expected_fix
    # Fixing twice changes nothing the second time.
    capsys.readouterr()
    main(args)
    assert path.read_text(encoding="utf-8") == fixed
    # No finding that offers an applicable fix remains.
    assert main(["check", "--output-format", "json", *_unsafe_flag(rule), ex.filename]) in (0, 1)


@pytest.mark.parametrize(("rule", "ex", "case_id"), FIXABLE, ids=[c[2] for c in FIXABLE])
def test_diff_writes_nothing_and_matches_fix(rule, ex, case_id, tmp_path, monkeypatch, capsys):
    path = _write_case(tmp_path, rule, ex)
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--diff", *_unsafe_flag(rule), ex.filename]) == 1
    diff = capsys.readouterr().out
    assert diff.startswith(f"--- a/{ex.filename}\n+++ b/{ex.filename}\n")
    assert path.read_text(encoding="utf-8") == ex.code
    main(["check", "--fix", *_unsafe_flag(rule), ex.filename])
    fixed = path.read_text(encoding="utf-8")
    for line in diff.splitlines()[2:]:
        if line.startswith("+"):
            assert line[1:] in fixed.splitlines()


def test_unsafe_fixes_need_the_flag(tmp_path, monkeypatch):
    unsafe = [c for c in FIXABLE if _applicabilities(c[0], c[1]) == {"unsafe"}]
    if not unsafe:
        pytest.skip("no rule offers an unsafe fix")
    rule, ex, _ = unsafe[0]
    path = _write_case(tmp_path, rule, ex)
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--fix", ex.filename]) == 1  # finding remains: exit 1
    assert path.read_text(encoding="utf-8") == ex.code
    main(["check", "--fix", "--unsafe-fixes", ex.filename])
    assert path.read_text(encoding="utf-8") != ex.code


def _fix_for(path: Path, row: int, old: str, new: str) -> Finding:
    line = fixes.SourceFile.read(path).text.splitlines()[row - 1]
    col = line.index(old) + 1
    edit = Edit(new, Location(row, col), Location(row, col + len(old)))
    return Finding(
        "MXL004",
        "m",
        str(path),
        Location(row, col),
        Location(row, col),
        fix=Fix("safe", "f", (edit,)),
    )


def test_line_endings_encoding_and_bom_are_kept(tmp_path):
    path = tmp_path / "m.py"
    data = "\ufeff# -*- coding: utf-8 -*-\r\nx = 'é'  # noqa: MXL999\r\ny = 2\r\n".encode()
    path.write_bytes(data)
    src = fixes.SourceFile.read(path)
    finding = _fix_for(path, 2, "  # noqa: MXL999", "")
    text, n = fixes.apply_findings(src.text, [finding], unsafe=False, python=True)
    assert n == 1
    fixes.atomic_write(src, text)
    assert path.read_bytes() == "\ufeff# -*- coding: utf-8 -*-\r\nx = 'é'\r\ny = 2\r\n".encode()
    latin = tmp_path / "l.py"
    latin.write_bytes("# -*- coding: latin-1 -*-\nx = 'é'  # noqa: MXL999\n".encode("latin-1"))
    src = fixes.SourceFile.read(latin)
    text, _ = fixes.apply_findings(
        src.text, [_fix_for(latin, 2, "  # noqa: MXL999", "")], unsafe=False, python=True
    )
    fixes.atomic_write(src, text)
    assert latin.read_bytes() == "# -*- coding: latin-1 -*-\nx = 'é'\n".encode("latin-1")


def test_file_changed_on_disk_is_not_overwritten(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("x = 1  # noqa: MXL999\n")
    src = fixes.SourceFile.read(path)
    path.write_text("x = 1  # edited by someone else\n")
    with pytest.raises(fixes.ChangedOnDisk):
        fixes.atomic_write(src, "x = 1\n")
    assert path.read_text() == "x = 1  # edited by someone else\n"
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]


def test_a_fix_that_breaks_the_parse_is_not_applied(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("x = f(1)\ny = 2\n")
    bad = _fix_for(path, 1, "f(1)", "f(1")
    good = _fix_for(path, 2, "2", "3")
    text, n = fixes.apply_findings(path.read_text(), [bad, good], unsafe=False, python=True)
    assert (text, n) == ("x = f(1)\ny = 3\n", 1)


def test_overlapping_fixes_are_applied_one_per_pass(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("x = abc\n")
    a = _fix_for(path, 1, "abc", "abd")
    b = _fix_for(path, 1, "bc", "xx")
    text, n = fixes.apply_findings(path.read_text(), [a, b], unsafe=False, python=True)
    assert n == 1 and text in ("x = abd\n", "x = axx\n")


@pytest.mark.parametrize("name", ["sample_project", "clean_project"])
def test_fix_on_fixture_projects(name, fixtures_dir, tmp_path, monkeypatch, capsys):
    root = tmp_path / name
    shutil.copytree(fixtures_dir / name, root)
    monkeypatch.chdir(root)
    before = {p.resolve(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    settings = Settings(root=root)
    report = fix_run.fix_paths([Path(".")], settings, unsafe=True, write=True)
    after = {p.resolve(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert set(after) == set(before)  # no stray temporary files
    for p, data in after.items():
        if p.suffix == ".py":
            cst.parse_module(data.decode("utf-8"))
    for f in report.fixed:
        assert f.after != f.before
        assert after[(root / f.path).resolve()] == f.after.encode("utf-8")
    # Re-lint: no applicable fix is left, and fixing again changes nothing.
    assert [f for f in report.remaining if fixes.applicable(f, True)] == []
    again = fix_run.fix_paths([Path(".")], settings, unsafe=True, write=True)
    assert again.fixed == []
    assert {p.resolve(): p.read_bytes() for p in root.rglob("*") if p.is_file()} == after
    if name == "clean_project":
        assert after == before


def test_every_fixable_rule_documents_its_fix_safety():
    for rule in registry.all_rules().values():
        if rule.fixable:
            assert rule.fix_safety != "This rule has no automatic fix.", rule.code
