"""Bad input gets a clear finding and the run goes on.

Every case runs through the real command line next to a good file whose finding must still be
reported: syntax errors and Python 2 files (MXL001 at the parser's own position), undecodable,
unreadable and vanished files (MXL003), odd encodings and line endings, empty, huge and deeply
nested files, broken symlinks and symlink loops, directories, FIFOs and devices where a file
is expected, and a rule that raises (MXL002, exit code 2). The last part checks that `--fix`
never loses data.
"""

from __future__ import annotations

import codecs
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mxlint import engine, fix_run, fixes, registry, runner, sources
from mxlint.cli import main
from mxlint.config import Settings

GOOD = textwrap.dedent("""\
    import mxnet as mx
    from mxnet.gluon import nn


    class Net(nn.HybridBlock):
        def hybrid_forward(self, F, x):
            if x.sum() > 0:
                return x
            return x * 2
    """)
#: What good.py reports: control flow on a tensor, line 7, at `x.sum() > 0`.
GOOD_FINDING = ("good.py", "MXL101", 7, 12)

#: A safe fix: `nd.relu(x)` -> `F.relu(x)` on line 7.
FIXABLE = textwrap.dedent("""\
    from mxnet import nd
    from mxnet.gluon import nn


    class Net(nn.HybridBlock):
        def hybrid_forward(self, F, x):
            return nd.relu(x)
    """)
#: The fix, and the import it left unused gone with it.
FIXED = FIXABLE.replace("nd.relu(x)", "F.relu(x)").replace("from mxnet import nd\n", "")

ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False
skip_as_root = pytest.mark.skipif(ROOT, reason="root reads and writes regardless of permissions")

Row = tuple[str, str, int, int]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project directory (the current directory) holding good.py."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MXLINT_OUTPUT_FORMAT", raising=False)
    (tmp_path / "good.py").write_text(GOOD, encoding="utf-8")
    return tmp_path


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[Row], list[dict]]:
    """`mxlint check` in this process: (exit code, sorted findings, the JSON records)."""
    capsys.readouterr()
    rc = main(
        [
            "check",
            "--isolated",
            "--no-cache",
            "-j",
            "1",
            "--output-format",
            "json",
            *(args or (".",)),
        ]
    )
    data = json.loads(capsys.readouterr().out)
    rows = sorted(
        (Path(d["filename"]).as_posix(), d["code"], d["location"]["row"], d["location"]["column"])
        for d in data
    )
    return rc, rows, data


def message(data: list[dict], filename: str) -> str:
    found = [d["message"] for d in data if Path(d["filename"]).as_posix() == filename]
    assert len(found) == 1, found
    return found[0]


def cpython_position(source: str) -> tuple[int, int]:
    try:
        compile(source, "<test>", "exec")
    except SyntaxError as exc:
        assert exc.lineno is not None and exc.offset is not None
        return exc.lineno, exc.offset
    raise AssertionError("expected a syntax error")


# -- syntax errors and Python 2 -------------------------------------------------------------


def test_syntax_error_is_reported_at_the_parsers_position(project, capsys):
    comma = "import mxnet as mx\nnet = mx.gluon.nn.Dense(10 20)\n"
    unclosed = "import mxnet as mx\n\nx = (1 +\ny = 2\n"
    (project / "comma.py").write_text(comma)
    (project / "unclosed.py").write_text(unclosed)
    rc, rows, data = check(capsys)
    assert rc == 1
    assert rows == [("comma.py", "MXL001", 2, 25), GOOD_FINDING, ("unclosed.py", "MXL001", 3, 5)]
    # The position and the message are the interpreter's own.
    assert cpython_position(comma) == (2, 25)
    assert cpython_position(unclosed) == (3, 5)
    assert message(data, "comma.py") == "Syntax error: invalid syntax. Perhaps you forgot a comma?"
    assert message(data, "unclosed.py") == "Syntax error: '(' was never closed"


def test_python2_files_get_one_finding_each(project, capsys):
    (project / "old_train.py").write_text(
        'import mxnet as mx\n\nprint "epoch", 1\ntry:\n    pass\nexcept Exception, e:\n    pass\n'
    )
    (project / "old_import.py").write_text(
        "try:\n    import mxnet as mx\nexcept ImportError, e:\n    mx = None\n"
    )
    (project / "old_octal.py").write_text("import mxnet as mx\nos.chmod(path, 0755)\n")
    (project / "old_tabs.py").write_text("import mxnet as mx\nif True:\n        x = 1\n\ty = 2\n")
    rc, rows, data = check(capsys)
    assert rc == 1
    assert rows == [
        GOOD_FINDING,
        ("old_import.py", "MXL001", 3, 8),
        ("old_octal.py", "MXL001", 2, 16),
        ("old_tabs.py", "MXL001", 4, 1),
        ("old_train.py", "MXL001", 3, 1),
    ]
    assert message(data, "old_train.py") == (
        "Syntax error: Missing parentheses in call to 'print'. Did you mean print(...)? "
        "(Python 2 syntax; mxlint reads Python 3)"
    )
    # libcst alone would read `except E, e:` as Python 3: the interpreter's verdict wins.
    assert message(data, "old_import.py") == (
        "Syntax error: multiple exception types must be parenthesized "
        "(Python 2 syntax; mxlint reads Python 3)"
    )
    for name in ("old_octal.py", "old_tabs.py"):
        assert message(data, name).endswith("(Python 2 syntax; mxlint reads Python 3)")


def test_syntax_error_through_python_m_mxlint(project):
    (project / "old.py").write_text('import mxnet as mx\nprint "loss", loss\n')
    env = {k: v for k, v in os.environ.items() if k != "MXLINT_OUTPUT_FORMAT"}
    proc = subprocess.run(
        [sys.executable, "-m", "mxlint", "check", "--isolated", "--no-cache", "."],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines() == [
        "good.py:7:12: MXL101 " + GOOD_FINDING_MESSAGE,
        "old.py:2:1: MXL001 Syntax error: Missing parentheses in call to 'print'. Did you mean "
        "print(...)? (Python 2 syntax; mxlint reads Python 3)",
    ]
    assert "Traceback" not in proc.stderr


GOOD_FINDING_MESSAGE = (
    "Python control flow on the tensor value `x.sum() > 0`: under hybridize() it is a Symbol "
    "with no value, so the branch fails or is frozen; compute both sides and select with "
    "`F.where(cond, a, b)`"
)


def test_nul_bytes(project, capsys):
    (project / "nul.py").write_bytes(b"import mxnet as mx\nx = 1\x00\n")
    rc, rows, data = check(capsys)
    assert (rc, rows) == (1, [GOOD_FINDING, ("nul.py", "MXL001", 2, 6)])
    assert message(data, "nul.py") == "Syntax error: source code cannot contain null bytes"


# -- encodings, line endings, tabs ----------------------------------------------------------


def test_latin1_with_and_without_a_coding_cookie(project, capsys):
    cookie = "# -*- coding: latin-1 -*-\n# caf\u00e9\n" + GOOD
    (project / "cookie.py").write_bytes(cookie.encode("latin-1"))
    (project / "no_cookie.py").write_bytes("import mxnet as mx\n# caf\u00e9\n".encode("latin-1"))
    (project / "no_cookie_cr.py").write_bytes("import mxnet as mx\r# caf\u00e9\r".encode("latin-1"))
    rc, rows, data = check(capsys)
    assert rc == 1
    assert rows == [
        ("cookie.py", "MXL101", 9, 12),
        GOOD_FINDING,
        ("no_cookie.py", "MXL003", 2, 6),
        ("no_cookie_cr.py", "MXL003", 2, 6),
    ]
    assert message(data, "no_cookie.py") == (
        "Cannot read file: byte 0xe9 is not valid utf-8 (invalid continuation byte); declare "
        "the file's encoding in a coding comment (`# -*- coding: latin-1 -*-`) or save it as "
        "UTF-8"
    )


def test_columns_count_characters_not_bytes(project, capsys):
    source = GOOD.replace(
        "        if x.sum() > 0:",
        '        s = "\u00e9\u00e9"; y = x.asnumpy()\n        if x.sum() > 0:',
    )
    (project / "good.py").write_text(source, encoding="utf-8")
    rc, rows, _ = check(capsys)
    assert (rc, rows) == (1, [("good.py", "MXL101", 8, 12), ("good.py", "MXL102", 7, 23)])


def test_utf8_bom(project, capsys):
    (project / "bom.py").write_bytes(codecs.BOM_UTF8 + GOOD.encode())
    (project / "bom_cookie.py").write_bytes(codecs.BOM_UTF8 + b"# coding: utf-8\n" + GOOD.encode())
    rc, rows, _ = check(capsys)
    assert (rc, rows) == (
        1,
        [("bom.py", "MXL101", 7, 12), ("bom_cookie.py", "MXL101", 8, 12), GOOD_FINDING],
    )


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_utf16_and_utf32(project, capsys, encoding):
    data = GOOD.encode(encoding)
    if encoding == "utf-16-be":
        data = codecs.BOM_UTF16_BE + data
    (project / "wide.py").write_bytes(data)
    rc, rows, records = check(capsys)
    assert (rc, rows) == (1, [GOOD_FINDING, ("wide.py", "MXL003", 1, 1)])
    assert "UTF-16 or UTF-32" in message(records, "wide.py")


@pytest.mark.parametrize("newline", ["\r\n", "\r"], ids=["crlf", "cr"])
def test_crlf_and_cr_line_endings(project, capsys, newline):
    (project / "good.py").write_bytes(GOOD.replace("\n", newline).encode())
    (project / "fixable.py").write_bytes(FIXABLE.replace("\n", newline).encode())
    rc, rows, _ = check(capsys)
    assert (rc, rows) == (1, [("fixable.py", "MXL105", 7, 16), GOOD_FINDING])
    rc, rows, _ = check(capsys, "--fix", ".")
    assert (rc, rows) == (1, [GOOD_FINDING])
    # libcst cannot write lone-CR lines back as it read them: the import then stays.
    fixed = FIXED if newline == "\r\n" else FIXABLE.replace("nd.relu(x)", "F.relu(x)")
    assert (project / "fixable.py").read_bytes() == fixed.replace("\n", newline).encode()
    assert (project / "good.py").read_bytes() == GOOD.replace("\n", newline).encode()


def test_tabs(project, capsys):
    (project / "tabs.py").write_text(GOOD.replace("    ", "\t"))
    rc, rows, _ = check(capsys)
    # A tab is one column, as in flake8 and Ruff.
    assert (rc, rows) == (1, [GOOD_FINDING, ("tabs.py", "MXL101", 7, 6)])


def test_form_feeds_and_unicode_line_separators_do_not_shift_rows(project, capsys):
    """`str.splitlines` breaks at `\\f`, `\\x85` and `\\u2028`; Python does not. Before the
    fix, the MXL004 fix below deleted `y.zz` and left `x = y` (still valid Python)."""
    source = (
        "import mxnet as mx\n\x0c\n# caf\x85 \u2028 ok\na = 1"
        + " " * 20
        + "\nx = yy.zz  # noqa: MXL999\n"
    )
    (project / "pages.py").write_text(source, encoding="utf-8")
    rc, rows, _ = check(capsys)
    assert (rc, rows) == (1, [GOOD_FINDING, ("pages.py", "MXL004", 5, 12)])
    check(capsys, "--fix", ".")
    assert (project / "pages.py").read_text(encoding="utf-8") == source.replace(
        "  # noqa: MXL999", ""
    )


# -- empty, huge, deeply nested -------------------------------------------------------------


def test_empty_files(project, capsys):
    (project / "empty.py").write_bytes(b"")
    (project / "blank.py").write_bytes(b"\n\n\n")
    (project / "only_bom.py").write_bytes(codecs.BOM_UTF8)
    (project / "only_comment.py").write_text("# mxnet helpers, to be written\n")
    (project / "pkg").mkdir()
    (project / "pkg" / "__init__.py").write_bytes(b"")
    rc, rows, _ = check(capsys)
    assert (rc, rows) == (1, [GOOD_FINDING])


def test_huge_file(project, capsys):
    block = textwrap.dedent("""\


        class Net{i}(nn.HybridBlock):
            def hybrid_forward(self, F, x):
                if x.sum() > 0:
                    return x
                return x * 2
        """)
    parts = ["import mxnet as mx\nfrom mxnet.gluon import nn\n"]
    count = 0
    while sum(p.count("\n") for p in parts) < 50_000:
        parts.append(block.format(i=count))
        parts.append("".join(f"# generated row {count}.{k}\n" for k in range(63)))
        count += 1
    source = "".join(parts)
    assert source.count("\n") >= 50_000
    (project / "huge.py").write_text(source)
    rc, rows, _ = check(capsys)
    assert rc == 1
    huge = [r for r in rows if r[0] == "huge.py"]
    assert len(huge) == count
    assert huge[0] == ("huge.py", "MXL101", 7, 12)
    assert huge[-1] == ("huge.py", "MXL101", 7 + (count - 1) * 70, 12)
    assert GOOD_FINDING in rows


DEEP = {
    # CPython refuses more than 200 nested brackets; libcst's native parser used to crash the
    # whole process (SIGSEGV) at about 1500.
    "brackets.py": "import mxnet as mx\nx = " + "[" * 5000 + "]" * 5000 + "\n",
    # Deeper than CPython's own parser allows: its RecursionError becomes the finding.
    "sum5000.py": "import mxnet as mx\nx = " + " + ".join(["a"] * 5000) + "\n",
    # Valid Python, flat for CPython, 20000 levels deep in libcst's tree.
    "and_chain.py": "import mxnet as mx\nok = " + " and ".join(["a"] * 20_000) + "\n",
}
#: Valid Python deeper than the default recursion limit allows the rules to walk: checked again
#: on a large stack, so its findings are reported (and no MXL002).
DEEP_VALID = GOOD.replace(
    "            return x\n", "            return x\n        y = " + " + ".join(["x"] * 1500) + "\n"
)


def test_deeply_nested_files(project):
    for name, source in DEEP.items():
        (project / name).write_text(source)
    (project / "deep_valid.py").write_text(DEEP_VALID)
    # A subprocess: a crash of the parser would kill the test runner itself.
    env = {k: v for k, v in os.environ.items() if k != "MXLINT_OUTPUT_FORMAT"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mxlint",
            "check",
            "--isolated",
            "--no-cache",
            "--output-format",
            "json",
            ".",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    data = json.loads(proc.stdout)
    rows = sorted(
        (d["filename"], d["code"], d["location"]["row"], d["location"]["column"]) for d in data
    )
    assert rows == [
        ("brackets.py", "MXL001", 2, 205),
        ("deep_valid.py", "MXL101", 7, 12),
        ("good.py", "MXL101", 7, 12),
        ("sum5000.py", "MXL001", 1, 1),
    ]
    assert message(data, "brackets.py") == "Syntax error: too many nested parentheses"
    assert message(data, "sum5000.py").startswith(
        "Syntax error: too deeply nested for Python's parser"
    )


# -- files that cannot be read --------------------------------------------------------------


@skip_as_root
def test_unreadable_file(project, capsys):
    secret = project / "secret.py"
    secret.write_text(GOOD)
    secret.chmod(0)
    try:
        rc, rows, data = check(capsys)
    finally:
        secret.chmod(0o644)
    assert (rc, rows) == (1, [GOOD_FINDING, ("secret.py", "MXL003", 1, 1)])
    assert message(data, "secret.py") == "Cannot read file: Permission denied"


def test_unreadable_file_whoever_runs_the_tests(project, capsys, monkeypatch):
    """The read itself fails, as it does for a non-root user on a chmod 000 file."""
    (project / "secret.py").write_text(GOOD)
    read_bytes = Path.read_bytes

    def denied(self: Path) -> bytes:
        if self.name == "secret.py":
            raise PermissionError(13, "Permission denied", str(self))
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", denied)
    rc, rows, data = check(capsys)
    assert (rc, rows) == (1, [GOOD_FINDING, ("secret.py", "MXL003", 1, 1)])
    assert message(data, "secret.py") == "Cannot read file: Permission denied"


@skip_as_root
def test_unreadable_directory(project, capsys):
    (project / "locked").mkdir()
    (project / "locked" / "model.py").write_text(GOOD)
    (project / "locked").chmod(0)
    try:
        rc, rows, data = check(capsys)
    finally:
        (project / "locked").chmod(0o755)
    assert (rc, rows) == (1, [GOOD_FINDING, ("locked", "MXL003", 1, 1)])
    assert message(data, "locked") == (
        "Cannot read file: cannot list the directory (Permission denied); nothing in it is checked"
    )


def test_unreadable_directory_whoever_runs_the_tests(project, capsys, monkeypatch):
    """Listing the directory fails, as it does for a non-root user on a chmod 000 one."""
    (project / "locked").mkdir()
    (project / "locked" / "model.py").write_text(GOOD)
    scandir = os.scandir

    def denied(path):
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", denied)
    rc, rows, data = check(capsys)
    assert (rc, rows) == (1, [GOOD_FINDING, ("locked", "MXL003", 1, 1)])
    assert message(data, "locked") == (
        "Cannot read file: cannot list the directory (Permission denied); nothing in it is checked"
    )
    rc, rows, _ = check(capsys, "--ignore", "MXL003", ".")
    assert (rc, rows) == (1, [GOOD_FINDING])


def test_directory_vanishing_during_discovery(project, capsys, monkeypatch):
    """Deleted after its parent was listed and before it is (a `git checkout` meanwhile)."""
    (project / "gone").mkdir()
    (project / "gone" / "model.py").write_text(GOOD)
    is_excluded = Settings.is_excluded

    def delete_when_asked(self, path, **options):
        if path.name == "gone" and path.exists():
            shutil.rmtree(path)
        return is_excluded(self, path, **options)

    monkeypatch.setattr(Settings, "is_excluded", delete_when_asked)
    rc, rows, data = check(capsys)
    assert (rc, rows) == (1, [("gone", "MXL003", 1, 1), GOOD_FINDING])
    assert "No such file or directory" in message(data, "gone")


def test_broken_symlink(project, capsys):
    (project / "gone.py").symlink_to(project / "nowhere.py")
    rc, rows, data = check(capsys)
    assert (rc, rows) == (1, [("gone.py", "MXL003", 1, 1), GOOD_FINDING])
    assert message(data, "gone.py") == "Cannot read file: No such file or directory"
    rc, rows, _ = check(capsys, "gone.py", "good.py")  # named on the command line
    assert (rc, rows) == (1, [("gone.py", "MXL003", 1, 1), GOOD_FINDING])


def test_symlink_loop(project, capsys):
    (project / "a.py").symlink_to(project / "b.py")
    (project / "b.py").symlink_to(project / "a.py")
    expected = [("a.py", "MXL003", 1, 1), ("b.py", "MXL003", 1, 1), GOOD_FINDING]
    rc, rows, data = check(capsys)
    assert (rc, rows) == (1, expected)
    assert message(data, "a.py") == "Cannot read file: Too many levels of symbolic links"
    # Named on the command line: the configuration lookup used to crash on it.
    rc, rows, _ = check(capsys, "a.py", "b.py", "good.py")
    assert (rc, rows) == (1, expected)


def test_directory_named_like_a_python_file(project, capsys):
    (project / "model.py").mkdir()
    (project / "model.py" / "layers.py").write_text(GOOD)
    rc, rows, _ = check(capsys)
    assert (rc, rows) == (1, [GOOD_FINDING, ("model.py/layers.py", "MXL101", 7, 12)])
    rc, rows, _ = check(capsys, "model.py")
    assert (rc, rows) == (1, [("model.py/layers.py", "MXL101", 7, 12)])


@pytest.mark.skipif(
    not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(), reason="no FIFOs or /dev/zero here"
)
def test_fifos_and_devices_are_not_read(project):
    """Reading a FIFO named `x.py` or `-r /dev/zero` never ends: both used to hang the run.
    A subprocess with a timeout, so that a regression fails instead of hanging the tests."""
    os.mkfifo(project / "pipe.py")
    os.mkfifo(project / "requirements-dev.txt")
    (project / "requirements.txt").write_text("-r /dev/zero\nmxnet\nnumpy<1.24\n")
    env = {k: v for k, v in os.environ.items() if k != "MXLINT_OUTPUT_FORMAT"}
    for cache in (["--no-cache"], []):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "mxlint",
                "check",
                "--isolated",
                *cache,
                "--output-format",
                "json",
                ".",
            ],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert proc.returncode == 1, proc.stderr
        rows = sorted(
            (d["filename"], d["code"], d["location"]["row"], d["location"]["column"])
            for d in json.loads(proc.stdout)
        )
        assert rows == [
            GOOD_FINDING,
            ("pipe.py", "MXL003", 1, 1),
            ("requirements.txt", "MXL501", 2, 1),
        ]
        assert message(json.loads(proc.stdout), "pipe.py") == (
            "Cannot read file: not a regular file"
        )


def test_file_vanishing_between_discovery_and_reading(project):
    (project / "gone.py").write_text(GOOD)
    settings = Settings(root=project)
    python, _ = sources.discover([Path(".")], settings)
    assert sorted(p.as_posix() for p in python) == ["gone.py", "good.py"]
    (project / "gone.py").unlink()
    results = {r.path: r for r in (engine.lint_file(p, settings) for p in python)}
    assert [(f.code, f.location.row, f.message) for f in results["gone.py"].findings] == [
        ("MXL003", 1, "Cannot read file: No such file or directory")
    ]
    assert not results["gone.py"].error
    assert [f.code for f in runner.resolve_project(results.values(), settings)] == ["MXL101"]


def test_file_vanishing_during_a_cli_run(project, capsys, monkeypatch):
    """The CLI's own run, with the file deleted right after discovery (as an editor's
    save-and-rename or a `git checkout` in another terminal would)."""
    (project / "gone.py").write_text(GOOD)
    discover = sources.discover

    def discover_then_delete(paths, settings, **kwargs):
        found = discover(paths, settings, **kwargs)
        (project / "gone.py").unlink()
        return found

    monkeypatch.setattr(sources, "discover", discover_then_delete)
    rc, rows, _ = check(capsys)
    assert (rc, rows) == (1, [("gone.py", "MXL003", 1, 1), GOOD_FINDING])


def _fix_while(monkeypatch, capsys, meanwhile, target: str) -> tuple[int, str]:
    """`mxlint check --fix target`, with `meanwhile()` run after the findings are known and
    before the fixes are written (another program touching the file during the run)."""
    apply_findings = fix_run.apply_findings

    def touched_meanwhile(*args, **kwargs):
        meanwhile()
        return apply_findings(*args, **kwargs)

    monkeypatch.setattr(fix_run, "apply_findings", touched_meanwhile)
    capsys.readouterr()
    rc = main(["check", "--isolated", "--no-cache", "-j", "1", "--fix", target])
    return rc, capsys.readouterr().err


def test_file_vanishing_before_its_fix_is_written(project, capsys, monkeypatch):
    path = project / "gone.py"
    path.write_text(FIXABLE)
    rc, err = _fix_while(monkeypatch, capsys, lambda: path.unlink(missing_ok=True), ".")
    assert rc == 1
    assert "gone.py: not fixed (cannot write: [Errno 2] No such file or directory" in err
    assert not path.exists()  # not recreated
    _no_temp_files(project)


# -- a rule that raises ---------------------------------------------------------------------


def _checker_for(code: str) -> type:
    return next(c for c in registry.python_checkers() if code in {r.code for r in c.rules})


def _boom(*args: object) -> None:
    raise RuntimeError("injected fault")


REPRO = (
    'import random\nimport numpy as np\n\nif __name__ == "__main__":\n'
    "    np.random.seed(0)\n    random.shuffle(files)\n    train(files)\n"
)


def test_a_rule_that_raises_becomes_one_internal_error_per_file(project, capsys, monkeypatch):
    (project / "train.py").write_text(REPRO)
    faulty = _checker_for("MXL201")
    monkeypatch.setattr(faulty, "visit_Call", _boom, raising=False)
    rc, rows, data = check(capsys)
    assert rc == 2
    assert rows == [
        ("good.py", "MXL002", 1, 1),
        GOOD_FINDING,
        ("train.py", "MXL002", 1, 1),
        ("train.py", "MXL303", 6, 5),
    ]
    text = message([d for d in data if d["code"] == "MXL002"], "good.py")
    assert text.startswith(
        f"Internal error in {faulty.__name__} while checking this file: "
        "RuntimeError: injected fault at test_robustness.py:"
    )


def test_begin_and_end_that_raise(project, capsys, monkeypatch):
    monkeypatch.setattr(_checker_for("MXL201"), "begin", _boom)
    monkeypatch.setattr(_checker_for("MXL701"), "end", _boom)
    rc, rows, data = check(capsys)
    assert rc == 2
    assert rows == [("good.py", "MXL002", 1, 1), ("good.py", "MXL002", 1, 1), GOOD_FINDING]
    names = sorted(d["message"].split()[3] for d in data if d["code"] == "MXL002")
    assert names == sorted([_checker_for("MXL201").__name__, _checker_for("MXL701").__name__])


def test_a_cross_file_rule_that_raises(project, capsys, monkeypatch):
    (project / "train.py").write_text(REPRO)
    faulty = _checker_for("MXL301")
    monkeypatch.setattr(faulty, "finalize", classmethod(_boom))
    rc, rows, data = check(capsys)
    assert rc == 2
    # That checker's cross-file findings (MXL303 in train.py) are lost; the others stay.
    assert rows == [("good.py", "MXL002", 1, 1), GOOD_FINDING]
    text = message([d for d in data if d["code"] == "MXL002"], "good.py")
    assert text.startswith(f"Internal error in {faulty.__name__} (cross-file) while checking")


def test_a_dependency_file_rule_that_raises(project, capsys, monkeypatch):
    (project / "requirements.txt").write_text("mxnet\nnumpy<1.24\n")
    (project / "requirements-bad.txt").write_text("mxnet>=1.6\n")
    checker = next(c for c in registry.text_checkers() if c.name == "versions")
    check_files = checker.check_files

    def fail_on_bad(self, files, settings):
        if any(name.endswith("requirements-bad.txt") for name, _ in files):
            raise RuntimeError("injected fault")
        return check_files(self, files, settings)

    monkeypatch.setattr(checker, "check_files", fail_on_bad)
    rc, rows, _ = check(capsys)
    assert rc == 2
    assert rows == [
        GOOD_FINDING,
        ("requirements-bad.txt", "MXL002", 1, 1),
        ("requirements.txt", "MXL501", 1, 1),
    ]


# -- fixes never lose data ------------------------------------------------------------------


def _no_temp_files(root: Path) -> None:
    assert [p.name for p in root.rglob("*.mxlint")] == []


@pytest.mark.parametrize("mode", [0o640, 0o755, 0o600])
def test_fix_keeps_permissions(project, capsys, mode):
    path = project / "fixable.py"
    path.write_text(FIXABLE)
    path.chmod(mode)
    check(capsys, "--fix", "fixable.py")
    assert path.read_text() == FIXED
    assert stat.S_IMODE(path.stat().st_mode) == mode
    _no_temp_files(project)


@pytest.mark.parametrize("case", ["latin-1", "bom", "crlf", "cr", "latin-1-crlf"])
def test_fix_keeps_encoding_bom_and_line_endings(project, capsys, case):
    text = "# -*- coding: latin-1 -*-\n# caf\u00e9\n" + FIXABLE if "latin" in case else FIXABLE
    fixed = text.replace("nd.relu(x)", "F.relu(x)")
    if case != "cr":  # the import left unused goes (not where libcst cannot write lone CRs)
        fixed = fixed.replace("from mxnet import nd\n", "")
    newline = {"crlf": "\r\n", "cr": "\r", "latin-1-crlf": "\r\n"}.get(case, "\n")
    encoding = "latin-1" if "latin" in case else "utf-8"
    prefix = codecs.BOM_UTF8 if case == "bom" else b""
    path = project / "fixable.py"
    path.write_bytes(prefix + text.replace("\n", newline).encode(encoding))
    rc, rows, _ = check(capsys, "--fix", "fixable.py")
    assert (rc, rows) == (0, [])
    assert path.read_bytes() == prefix + fixed.replace("\n", newline).encode(encoding)


def test_fix_writes_through_a_symlink(project, capsys):
    (project / "real.py").write_text(FIXABLE)
    (project / "link.py").symlink_to(project / "real.py")
    check(capsys, "--fix", "link.py")
    assert (project / "link.py").is_symlink()
    assert (project / "real.py").read_text() == FIXED


def test_file_changed_during_the_fix_run_is_not_overwritten(project, capsys, monkeypatch):
    """Someone saves the file while mxlint computes its fix: their version stays."""
    path = project / "fixable.py"
    path.write_text(FIXABLE)
    theirs = FIXABLE.replace("return nd.relu(x)", "return nd.relu(x) * 2  # edited meanwhile")
    rc, err = _fix_while(monkeypatch, capsys, lambda: path.write_text(theirs), "fixable.py")
    assert rc == 1
    assert path.read_text() == theirs
    assert "fixable.py: not fixed (changed on disk during the run)" in err
    _no_temp_files(project)


def test_stale_source_file_is_not_written(project):
    path = project / "fixable.py"
    path.write_text(FIXABLE)
    src = fixes.SourceFile.read(path)
    path.write_text(FIXABLE + "# saved by the editor\n")
    with pytest.raises(fixes.ChangedOnDisk):
        fixes.atomic_write(src, FIXED)
    assert path.read_text() == FIXABLE + "# saved by the editor\n"
    path.unlink()  # deleted meanwhile: not recreated
    with pytest.raises(OSError):
        fixes.atomic_write(src, FIXED)
    assert not path.exists()
    _no_temp_files(project)


@pytest.mark.parametrize("fail", ["replace", "fsync"])
def test_failed_write_leaves_the_file_and_no_temp_file(project, capsys, monkeypatch, fail):
    path = project / "fixable.py"
    path.write_text(FIXABLE)

    def disk_full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fixes.os, fail, disk_full)
    capsys.readouterr()
    rc = main(["check", "--isolated", "--no-cache", "-j", "1", "--fix", "fixable.py"])
    err = capsys.readouterr().err
    assert rc == 1
    assert path.read_text() == FIXABLE
    assert "fixable.py: not fixed (cannot write: [Errno 28] No space left on device)" in err
    _no_temp_files(project)


@skip_as_root
def test_fix_in_a_read_only_directory(project, capsys):
    sub = project / "ro"
    sub.mkdir()
    path = sub / "fixable.py"
    path.write_text(FIXABLE)
    sub.chmod(0o555)
    try:
        capsys.readouterr()
        rc = main(["check", "--isolated", "--no-cache", "-j", "1", "--fix", "ro"])
        err = capsys.readouterr().err
    finally:
        sub.chmod(0o755)
    assert rc == 1
    assert path.read_text() == FIXABLE
    assert "not fixed (cannot write" in err
    _no_temp_files(project)
