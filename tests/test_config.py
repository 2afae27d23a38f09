"""`[tool.mxlint]` / mxlint.toml: discovery, keys, CLI overrides, and errors (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rule_cases import invalid_examples

from mxlint.cli import main
from mxlint.config import ConfigError, find_config, load_settings
from mxlint.settings import Settings

CASES = invalid_examples(cli=True)


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> tuple[Path, str, str]:
    """A project with one rule example in pkg/mod.py; returns (root, code, relative path)."""
    rule, ex, _ = next(c for c in CASES if c[0].code[3] != "0")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / ex.filename).write_text(ex.code)
    (tmp_path / "pyproject.toml").write_text(f'[tool.mxlint]\nmxnet-version = "{ex.mxnet}.9"\n')
    monkeypatch.chdir(tmp_path)
    return tmp_path, rule.code, f"pkg/{ex.filename}"


def _config(root: Path, body: str, name: str = "pyproject.toml") -> None:
    header = "[tool.mxlint]\n" if name == "pyproject.toml" else ""
    text = (root / "pyproject.toml").read_text()
    version = text.split("mxnet-version = ")[1].splitlines()[0]
    (root / name).write_text(header + f"mxnet-version = {version}\n" + body)


def _codes(capsys, *args: str) -> tuple[int, set[str]]:
    capsys.readouterr()
    rc = main(["check", *args])
    out = capsys.readouterr().out
    return rc, {line.split(": ", 1)[1].split()[0] for line in out.splitlines() if ": MXL" in line}


def test_config_is_found_walking_up(project):
    root, _, rel = project
    assert find_config(root / rel) == root / "pyproject.toml"
    (root / "pkg" / "mxlint.toml").write_text("ignore = []\n")
    assert find_config(root / rel) == root / "pkg" / "mxlint.toml"


def test_pyproject_without_tool_mxlint_is_skipped(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.mxlint]\nignore = []\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert find_config(sub) == tmp_path / "pyproject.toml"


def test_ignore_select_and_cli_overrides(project, capsys):
    root, code, rel = project
    rc, codes = _codes(capsys, rel)
    assert rc == 1 and code in codes
    _config(root, f'ignore = ["{code[:4]}"]\n')
    rc, codes = _codes(capsys, rel)
    assert code not in codes
    # CLI --select replaces the configured selection; the more specific code wins.
    rc, codes = _codes(capsys, "--select", code, rel)
    assert code in codes
    rc, codes = _codes(capsys, "--select", code[:4], rel)
    assert code not in codes
    _config(root, f'select = ["{code}"]\n')
    rc, codes = _codes(capsys, rel)
    assert codes == {code}
    rc, codes = _codes(capsys, "--ignore", code, rel)
    assert rc == 0 and codes == set()
    _config(root, 'select = ["MXL0"]\n')
    rc, codes = _codes(capsys, rel)
    assert code not in codes
    rc, codes = _codes(capsys, "--extend-select", code, rel)
    assert code in codes
    rc, codes = _codes(capsys, "--isolated", "--select", code, rel)
    assert code in codes


def test_mxl_and_all_select_every_rule(tmp_path: Path, capsys, monkeypatch):
    """`MXL` (as flake8 reads it) and `ALL` select the rules that are off by default too."""
    off = next(r for r, ex, _ in CASES if not r.default_enabled)
    example = next(ex for r, ex, _ in CASES if r is off)
    (tmp_path / example.filename).write_text(example.code)
    (tmp_path / "mxlint.toml").write_text(f'mxnet-version = "{example.mxnet}.0"\n')
    monkeypatch.chdir(tmp_path)
    assert off.code not in _codes(capsys, example.filename)[1]
    for prefix in ("MXL", "ALL"):
        assert off.code in _codes(capsys, "--select", prefix, example.filename)[1]
        (tmp_path / "mxlint.toml").write_text(
            f'mxnet-version = "{example.mxnet}.0"\nselect = ["{prefix}"]\n'
        )
        assert off.code in _codes(capsys, example.filename)[1]
        assert _codes(capsys, "--ignore", "MXL", example.filename) == (0, set())
        (tmp_path / "mxlint.toml").write_text(f'mxnet-version = "{example.mxnet}.0"\n')


def test_extend_select_and_per_file_ignores(project, capsys):
    root, code, rel = project
    _config(root, f'[tool.mxlint.per-file-ignores]\n"pkg/*" = ["{code}"]\n')
    assert code not in _codes(capsys, rel)[1]
    _config(root, f'[tool.mxlint.per-file-ignores]\n"other/*" = ["{code}"]\n')
    assert code in _codes(capsys, rel)[1]


def test_mxlint_toml(project, capsys):
    root, code, rel = project
    _config(root, f'ignore = ["{code}"]\n', name="mxlint.toml")
    assert code not in _codes(capsys, rel)[1]


def test_named_paths_are_checked_unless_force_exclude(project, capsys):
    """As Ruff: excludes prune what a directory walk finds; a path named on the command line is
    checked (a named directory is walked) unless `--force-exclude` / `force-exclude = true`."""
    root, code, rel = project
    sub = root / "pkg" / "sub"
    sub.mkdir()
    (sub / "deep.py").write_text((root / rel).read_text())
    deep = "pkg/sub/deep.py"
    _config(root, 'extend-exclude = ["pkg"]\n')
    assert _codes(capsys, ".") == (0, set())
    for named in (rel, "pkg", deep, "pkg/sub"):
        assert _codes(capsys, named) == (1, {code}), named
        assert _codes(capsys, "--force-exclude", named) == (0, set()), named
    assert _codes(capsys, "--force-exclude", ".") == (0, set())
    _config(root, 'exclude = ["pkg/*.py"]\n')
    assert _codes(capsys, ".") == (0, set())  # pkg/sub/deep.py too: `*` crosses `/`
    assert _codes(capsys, rel) == (1, {code})
    assert _codes(capsys, "--force-exclude", rel) == (0, set())
    assert _codes(capsys, "pkg") == (0, set())  # walked: the files under it match
    assert _codes(capsys, "--force-exclude", "--exclude", "nothing", rel) == (1, {code})
    _config(root, 'extend-exclude = ["sub"]\nforce-exclude = true\n')
    assert _codes(capsys, rel) == (1, {code})
    assert _codes(capsys, deep) == (0, set())
    assert _codes(capsys, "--no-force-exclude", deep) == (1, {code})
    assert _codes(capsys, "pkg") == (1, {code})  # pkg/sub pruned, pkg/example.py found
    assert load_settings(root / "pyproject.toml").force_exclude is True
    _config(root, 'force-exclude = "yes"\n')
    assert main(["check", rel]) == 2
    assert "`force-exclude` must be true or false" in capsys.readouterr().err


def test_editor_history_copies_are_excluded_by_default(project, capsys):
    """An editor's local history (`.history/`, VS Code's Local History) holds timestamped copies
    of files taken while they were edited: a walk skips them, a named copy is still checked."""
    root, code, rel = project
    history = root / ".history" / "pkg"
    history.mkdir(parents=True)
    copy = history / Path(rel).name.replace(".py", "_20200617110726.py")
    copy.write_text((root / rel).read_text())
    (root / rel).unlink()
    assert _codes(capsys, ".") == (0, set())
    assert _codes(capsys, str(copy.relative_to(root))) == (1, {code})
    _config(root, "exclude = []\n")
    assert _codes(capsys, ".") == (1, {code})


def test_mxnet_version_from_config_and_cli(tmp_path: Path):
    (tmp_path / "mxlint.toml").write_text('mxnet-version = "2.0"\n')
    assert load_settings(tmp_path / "mxlint.toml").mxnet_version == "2"
    (tmp_path / "mxlint.toml").write_text('mxnet-version = "1.9.1"\n')
    assert load_settings(tmp_path / "mxlint.toml").mxnet_version == "1"


def test_per_rule_options_and_entry_points(tmp_path: Path):
    (tmp_path / "mxlint.toml").write_text(
        'entry-points = ["scripts/*.py"]\n[rules.MXL004]\nanything = 1\n'
    )
    settings = load_settings(tmp_path / "mxlint.toml")
    assert settings.option("MXL004", "anything", 0) == 1
    assert settings.option("MXL004", "missing", "d") == "d"
    assert settings.is_entry_point(str(tmp_path / "scripts" / "run.py"))
    assert not settings.is_entry_point(str(tmp_path / "lib" / "run.py"))


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("colour = 1\n", ["colour"]),
        ('select = ["MXL1O1"]\n', ["select", "MXL1O1"]),
        ('ignore = ["E501"]\n', ["ignore", "E501"]),
        ('ignore = ["MXL999"]\n', ["ignore", "MXL999"]),
        ('select = "MXL101"\n', ["select"]),
        ('mxnet-version = "3.0"\n', ["mxnet-version"]),
        ('respect-gitignore = "no"\n', ["respect-gitignore"]),
        ("select = [\n", ["invalid TOML"]),
        ("[per-file-ignores]\n'a.py' = ['X1']\n", ["per-file-ignores", "X1"]),
        ("[rules.MXL999]\nx = 1\n", ["rules.MXL999"]),
        ("[rules]\nMXL101 = 3\n", ["rules.MXL101"]),
    ],
)
def test_bad_configuration_names_file_and_key(tmp_path: Path, capsys, monkeypatch, body, words):
    config = tmp_path / "mxlint.toml"
    config.write_text(body)
    (tmp_path / "a.py").write_text("import mxnet\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        load_settings(config)
    for word in [str(config), *words]:
        assert word in str(info.value)
    assert main(["check", "a.py"]) == 2
    err = capsys.readouterr().err
    assert str(config) in err and words[0] in err


@pytest.mark.parametrize(
    "args",
    [
        ["--select", "MXL99X"],
        ["--ignore", "MXL998"],
        ["--mxnet-version", "0.12"],
        ["--config", "nope.toml"],
    ],
)
def test_bad_cli_options_exit_2(tmp_path: Path, capsys, monkeypatch, args):
    (tmp_path / "a.py").write_text("import mxnet\n")
    monkeypatch.chdir(tmp_path)
    assert main(["check", *args, "a.py"]) == 2
    assert "mxlint: error:" in capsys.readouterr().err


_RESHAPE = (
    "from mxnet.gluon import nn\n\n\n"
    "class Net(nn.HybridBlock):\n"
    "    def hybrid_forward(self, F, x):\n"
    "        return x.reshape(0, -1)\n"
)


def test_config_discovery_stops_at_the_repository_root(tmp_path: Path, capsys):
    (tmp_path / "mxlint.toml").write_text('ignore = ["MXL112"]\n')  # a stray config above
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "net.py").write_text(_RESHAPE)
    assert _codes(capsys, "--no-cache", str(repo / "net.py")) == (0, set())  # not a repository
    (repo / ".git").mkdir()
    assert find_config(repo / "net.py") is None
    assert _codes(capsys, "--no-cache", str(repo / "net.py")) == (1, {"MXL112"})
    (repo / "mxlint.toml").write_text('ignore = ["MXL112"]\n')  # the repository's own
    assert _codes(capsys, "--no-cache", str(repo / "net.py")) == (0, set())


def test_show_settings_and_show_files(tmp_path: Path, capsys):
    (tmp_path / "mxlint.toml").write_text('ignore = ["MXL112"]\nextend-exclude = ["old"]\n')
    (tmp_path / "net.py").write_text(_RESHAPE)
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "legacy.py").write_text(_RESHAPE)
    (tmp_path / "requirements.txt").write_text("mxnet==1.9.1\nnumpy<1.24\n")
    capsys.readouterr()
    assert main(["check", "--show-settings", str(tmp_path)]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[0] == f"config file: {tmp_path / 'mxlint.toml'}"
    assert "ignore: ['MXL112']" in shown
    enabled = next(line for line in shown if line.startswith("enabled rules")).split(": ")[1]
    assert "MXL111" in enabled.split() and "MXL112" not in enabled.split()
    assert main(["check", "--show-files", str(tmp_path)]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [Path(p).name for p in listed] == ["net.py", "requirements.txt"]


def test_a_relative_path_is_taken_from_the_current_directory_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("A", "B"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.py").write_text("pass\n")
    settings = Settings(root=tmp_path)
    monkeypatch.chdir(tmp_path / "A")
    assert settings.relative("train.py") == "A/train.py"
    monkeypatch.chdir(tmp_path / "B")
    assert settings.relative("train.py") == "B/train.py"
    assert settings.relative(str(tmp_path / "A" / "train.py")) == "A/train.py"


def test_paths_with_nothing_mxlint_reads_are_said_so(tmp_path: Path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "README.md").write_text("Install with `pip install mxnet==1.9.1`.\n")
    assert main(["check", "--isolated", str(tmp_path / "empty"), str(tmp_path / "README.md")]) == 0
    captured = capsys.readouterr()
    assert captured.out == "All checks passed!\n"
    assert captured.err.startswith("mxlint: warning: no files to check under the given path(s)")
    (tmp_path / "empty" / "train.py").write_text("import mxnet as mx\n")
    assert main(["check", "--isolated", str(tmp_path / "empty")]) == 0
    assert "no files to check" not in capsys.readouterr().err


def test_relative_paths_read_as_pathlib_resolves_them(tmp_path, monkeypatch) -> None:
    """`Settings.relative` works on text; it must say what `Path.resolve().relative_to()`
    says, through symlinks in and out of the root, a symlink loop and missing files."""
    import os

    from mxlint import settings as settings_module

    root = tmp_path / "proj"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.py").write_text("x = 1\n")
    (root / "link").symlink_to(root / "sub")
    (root / "out").symlink_to(tmp_path)
    (root / "loop1").symlink_to(root / "loop2")
    (root / "loop2").symlink_to(root / "loop1")
    monkeypatch.chdir(root)

    def by_pathlib(path: str, base: Path) -> str:
        try:
            resolved = Path(path).resolve()
        except (RuntimeError, OSError):
            resolved = Path(os.path.abspath(path))
        try:
            return resolved.relative_to(base.resolve()).as_posix()
        except ValueError:
            return Path(path).as_posix()

    paths = ["sub/a.py", "./sub//a.py", "link/a.py", "out", "loop1/x.py", "missing/x.py", "."]
    paths += [str(root / "sub" / "a.py"), "../proj/sub/a.py", str(tmp_path)]
    for base in (Path("."), root, Path("sub")):
        for path in paths:
            settings_module._relative.cache_clear()
            assert settings_module._relative(path, base, os.getcwd()) == by_pathlib(path, base)
