"""The command line as a user meets it: exit codes, `mxlint rule`, the pre-commit entry."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rule_cases import invalid_examples

from mxlint import registry
from mxlint.cli import main

CASES = invalid_examples(cli=True)


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "MXLINT_OUTPUT_FORMAT"}
    return subprocess.run(
        ["mxlint", *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env
    )


@pytest.fixture
def bad(tmp_path: Path) -> tuple[Path, str]:
    rule, ex, _ = next(c for c in CASES if c[0].code[3] != "0")
    (tmp_path / "mxlint.toml").write_text(f'mxnet-version = "{ex.mxnet}.0"\n')
    (tmp_path / ex.filename).write_text(ex.code)
    return tmp_path / ex.filename, rule.code


def test_exit_codes(bad, tmp_path: Path):
    path, code = bad
    proc = run("check", path.name, cwd=tmp_path)
    assert proc.returncode == 1
    assert f"{path.name}:" in proc.stdout and code in proc.stdout
    assert "Found" in proc.stderr and "Found" not in proc.stdout
    assert run(path.name, cwd=tmp_path).returncode == 1  # `check` is the default command
    assert run("check", "--exit-zero", path.name, cwd=tmp_path).returncode == 0
    clean = tmp_path / "clean.py"
    clean.write_text("import mxnet as mx\n\nx = 1\n")
    proc = run("check", "clean.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "All checks passed!\n", "")
    assert run("check", "missing.py", cwd=tmp_path).returncode == 2
    assert run("check", "--output-format", "xml", path.name, cwd=tmp_path).returncode == 2


def test_clean_run_says_so_in_text_formats_only(bad, tmp_path: Path):
    (tmp_path / "clean.py").write_text("import mxnet as mx\n\nx = 1\n")
    for fmt in ("concise", "full"):
        proc = run("check", "--output-format", fmt, "clean.py", cwd=tmp_path)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "All checks passed!\n", "")
    for fmt in ("json", "github"):
        proc = run("check", "--output-format", fmt, "clean.py", cwd=tmp_path)
        assert (proc.returncode, proc.stdout, proc.stderr) == (
            0,
            "[]\n" if fmt == "json" else "",
            "",
        )
    proc = run("check", "--statistics", "clean.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    proc = run("check", "-o", "report.txt", "clean.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert (tmp_path / "report.txt").read_text() == "All checks passed!\n"


def test_quiet_prints_the_findings_only(bad, tmp_path: Path):
    path, code = bad
    (tmp_path / "clean.py").write_text("import mxnet as mx\n\nx = 1\n")
    loud = run("check", path.name, cwd=tmp_path)
    assert loud.stderr.startswith("Found ")
    for flag in ("-q", "--quiet"):
        proc = run("check", flag, path.name, cwd=tmp_path)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, loud.stdout, "")
        proc = run("check", flag, "clean.py", cwd=tmp_path)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    proc = run("check", "-q", "--add-noqa", path.name, cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert run("check", "-q", path.name, cwd=tmp_path).returncode == 0


def _rows(proc: subprocess.CompletedProcess) -> list[tuple[str, str]]:
    """(file, code) per finding of a concise report."""
    return [
        (line.split(":")[0], line.split(": ")[1].split()[0]) for line in proc.stdout.splitlines()
    ]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_gitignore_is_respected_under_directories(bad, tmp_path: Path):
    path, code = bad
    source = path.read_text()
    path.unlink()
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".gitignore").write_text("scratch/\n")
    for rel in ("scratch/bad.py", "lib/ok.py", "lib/gen/out.py", "lib/local.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(source)
    (tmp_path / "lib" / ".gitignore").write_text("gen/\n")  # nested
    (tmp_path / ".git" / "info" / "exclude").write_text("lib/local.py\n")
    everything = [(rel, code) for rel in ("lib/gen/out.py", "lib/local.py", "lib/ok.py")]
    everything.append(("scratch/bad.py", code))

    proc = run("check", "-q", "--no-cache", ".", cwd=tmp_path)
    assert (proc.returncode, _rows(proc), proc.stderr) == (1, [("lib/ok.py", code)], "")
    proc = run("check", "-q", "--no-cache", "--no-respect-gitignore", ".", cwd=tmp_path)
    assert (proc.returncode, _rows(proc)) == (1, everything)
    (tmp_path / "mxlint.toml").write_text(
        (tmp_path / "mxlint.toml").read_text() + "respect-gitignore = false\n"
    )
    assert _rows(run("check", "-q", "--no-cache", ".", cwd=tmp_path)) == everything
    proc = run("check", "-q", "--no-cache", "--respect-gitignore", ".", cwd=tmp_path)
    assert _rows(proc) == [("lib/ok.py", code)]
    # Named on the command line, a file or an ignored directory is checked.
    proc = run(
        "check", "-q", "--no-cache", "--respect-gitignore", ".", "lib/local.py", cwd=tmp_path
    )
    assert _rows(proc) == [("lib/local.py", code), ("lib/ok.py", code)]
    proc = run("check", "-q", "--no-cache", "--respect-gitignore", "scratch", cwd=tmp_path)
    assert _rows(proc) == [("scratch/bad.py", code)]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_force_exclude_applies_gitignore_to_named_paths(bad, tmp_path: Path):
    """Under `--force-exclude` a named file or directory git ignores is left out (what git
    tracks never is); `--no-respect-gitignore` turns that part off."""
    path, code = bad
    source = path.read_text()
    path.unlink()
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".gitignore").write_text("scratch/\n*.gen.py\n")
    for rel in ("scratch/bad.py", "lib/ok.py", "lib/model.gen.py", "lib/kept.gen.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(source)
    subprocess.run(["git", "add", "-f", "lib/kept.gen.py"], cwd=tmp_path, check=True)
    named = ("scratch", "scratch/bad.py", "lib/ok.py", "lib/model.gen.py", "lib/kept.gen.py")
    proc = run("check", "-q", "--no-cache", *named, cwd=tmp_path)
    assert _rows(proc) == [
        ("lib/kept.gen.py", code),
        ("lib/model.gen.py", code),
        ("lib/ok.py", code),
        ("scratch/bad.py", code),
    ]
    proc = run("check", "-q", "--no-cache", "--force-exclude", *named, cwd=tmp_path)
    assert (proc.returncode, _rows(proc)) == (1, [("lib/kept.gen.py", code), ("lib/ok.py", code)])
    proc = run("check", "-q", "--no-cache", "--force-exclude", "scratch/bad.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    proc = run(
        "check",
        "-q",
        "--no-cache",
        "--force-exclude",
        "--no-respect-gitignore",
        *named,
        cwd=tmp_path,
    )
    assert len(_rows(proc)) == 4
    # --show-files says the same.
    proc = run("check", "--show-files", "--force-exclude", *named, cwd=tmp_path)
    assert proc.stdout == "lib/kept.gen.py\nlib/ok.py\n"


def test_gitignore_outside_a_repository_is_not_read(bad, tmp_path: Path):
    path, code = bad
    (tmp_path / ".gitignore").write_text(f"{path.name}\n")
    proc = run("check", "-q", "--no-cache", ".", cwd=tmp_path)
    assert (proc.returncode, _rows(proc), proc.stderr) == (1, [(path.name, code)], "")


def test_syntax_error_is_a_finding_not_a_crash(tmp_path: Path):
    (tmp_path / "old.py").write_text("import mxnet\nprint 'x'\n")
    proc = run("check", "old.py", cwd=tmp_path)
    assert proc.returncode == 1 and "MXL001" in proc.stdout


def test_pre_commit_entry_with_no_files_is_clean(tmp_path: Path, bad):
    proc = run("check", "--pre-commit", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "")


def test_columns_are_one_based_everywhere(bad, tmp_path: Path):
    path, _ = bad
    concise = run("check", path.name, cwd=tmp_path).stdout.splitlines()
    data = json.loads(run("check", "--output-format", "json", path.name, cwd=tmp_path).stdout)
    assert [f"{f['filename']}:{f['location']['row']}:{f['location']['column']}:" for f in data] == [
        line.split(" ", 1)[0] for line in concise
    ]


def test_rule_docs(capsys):
    for code, rule in registry.all_rules().items():
        assert main(["rule", code.lower()]) == 0
        assert capsys.readouterr().out == rule.documentation()
    assert main(["rule", "--all"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listing] == list(registry.all_rules())
    assert main(["rule", "MXL999"]) == 2
    assert main(["rule", "--all", "--output-format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {d["code"] for d in data} == set(registry.all_rules())


def test_version_and_help():
    proc = subprocess.run(
        [sys.executable, "-m", "mxlint", "--version"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stdout.startswith("mxlint ")
    proc = subprocess.run(
        [sys.executable, "-m", "mxlint", "check", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    for flag in (
        "--fix",
        "--unsafe-fixes",
        "--diff",
        "--add-noqa",
        "--statistics",
        "--output-format",
        "--output-file",
        "--select",
        "--extend-select",
        "--ignore",
        "--mxnet-version",
        "--exclude",
        "--extend-exclude",
    ):
        assert flag in proc.stdout


def test_fix_exit_code_reflects_what_remains(tmp_path: Path, monkeypatch):
    fixable = [c for c in invalid_examples(with_line=False, with_fix=True, cli=True)]
    if not fixable:
        pytest.skip("no fixable rule example")
    rule, ex, _ = fixable[0]
    (tmp_path / ex.filename).write_text(ex.code)
    (tmp_path / "mxlint.toml").write_text(
        f'select = ["{rule.code}"]\nmxnet-version = "{ex.mxnet}.0"\n'
    )
    monkeypatch.chdir(tmp_path)
    flags = ["--unsafe-fixes"] if rule.fixable == "unsafe" else []
    rc = main(["check", "--fix", *flags, ex.filename])
    remaining = main(["check", *flags, ex.filename])
    assert rc == remaining


# --- stdin --------------------------------------------------------------------------------------

_PIPED = (
    "from mxnet.gluon import nn\n\n\n"
    "class Net(nn.HybridBlock):\n"
    "    def hybrid_forward(self, F, x):\n"
    "        return x.reshape(0, -1)\n"
)
_PIPED_FIXED = _PIPED.replace("x.reshape(0, -1)", "x.reshape((0, -1))")


def _piped(*args: str, cwd: Path, text: str = _PIPED) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "MXLINT_OUTPUT_FORMAT"}
    return subprocess.run(
        [sys.executable, "-m", "mxlint", "check", *args],
        cwd=cwd,
        env=env,
        input=text,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_check_reads_stdin_under_its_stdin_filename(tmp_path: Path):
    proc = _piped("-", "--output-format", "json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert [(f["filename"], f["location"]["row"], f["code"]) for f in json.loads(proc.stdout)] == [
        ("-", 6, "MXL112")
    ]
    proc = _piped("-", "--stdin-filename", "models/net.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.startswith("models/net.py:6:16: MXL112 ")
    clean = _piped("-", cwd=tmp_path, text="x = 1\n")
    assert (clean.returncode, clean.stdout) == (0, "All checks passed!\n")


def test_stdin_fix_writes_the_fixed_source_and_diff_shows_it(tmp_path: Path):
    fixed = _piped("-", "--fix", cwd=tmp_path)
    assert (fixed.returncode, fixed.stdout) == (0, _PIPED_FIXED)
    assert "1 fixed, 0 remaining" in fixed.stderr
    diff = _piped("-", "--diff", "--stdin-filename", "net.py", cwd=tmp_path)
    assert diff.returncode == 1
    assert "-        return x.reshape(0, -1)\n+        return x.reshape((0, -1))\n" in diff.stdout
    assert diff.stdout.startswith("--- a/net.py\n+++ b/net.py\n")


def test_stdin_filename_chooses_settings_and_per_file_ignores(tmp_path: Path):
    project = tmp_path / "proj"
    (project / "legacy").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[tool.mxlint.per-file-ignores]\n"legacy/*" = ["MXL112"]\n', encoding="utf-8"
    )
    ignored = _piped("-", "--stdin-filename", str(project / "legacy" / "net.py"), cwd=tmp_path)
    assert (ignored.returncode, ignored.stdout) == (0, "All checks passed!\n")
    kept = _piped("-", "--stdin-filename", str(project / "net.py"), cwd=tmp_path)
    assert kept.returncode == 1 and "MXL112" in kept.stdout


def test_stdin_filename_under_force_exclude(tmp_path: Path):
    """As Ruff: an excluded `--stdin-filename` is not checked under `--force-exclude`; `--fix`
    hands the source back unchanged."""
    (tmp_path / "mxlint.toml").write_text('extend-exclude = ["vendor"]\n', encoding="utf-8")
    name = str(tmp_path / "vendor" / "net.py")
    proc = _piped("-", "--stdin-filename", name, cwd=tmp_path)
    assert proc.returncode == 1 and "MXL112" in proc.stdout
    proc = _piped("-", "--force-exclude", "--stdin-filename", name, cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    proc = _piped("-", "--force-exclude", "--fix", "--stdin-filename", name, cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, _PIPED, "")
    proc = _piped("-", "--force-exclude", "--diff", "--stdin-filename", name, cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    kept = str(tmp_path / "net.py")
    proc = _piped("-", "--force-exclude", "--fix", "--stdin-filename", kept, cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, _PIPED_FIXED)


def test_stdin_with_other_paths_is_a_usage_error(tmp_path: Path):
    proc = _piped("-", ".", cwd=tmp_path)
    assert proc.returncode == 2
    assert "cannot be combined" in proc.stderr


@pytest.mark.parametrize("columns", [None, "57", "133", "junk", "0"])
def test_the_help_is_as_wide_as_argparse_makes_it(monkeypatch, columns):
    """The formatters ask `terminal_columns` for the width argparse asks shutil for (shutil
    stays unloaded in a run): the same number, and the same help, as argparse's own."""
    import argparse

    from mxlint.cli import build_parser, terminal_columns

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    ours = [parser.format_help(), *(p.format_help() for p in subparsers.choices.values())]
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    for p in subparsers.choices.values():
        p.formatter_class = argparse.HelpFormatter
    theirs = [parser.format_help(), *(p.format_help() for p in subparsers.choices.values())]
    assert ours == theirs
    assert "--output-format" in ours[1]
