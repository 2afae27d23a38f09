"""`--color`: Ruff's escape sequences in the text formats when asked for (or on a terminal),
none in pipes, under `NO_COLOR`, in machine formats or in `-o FILE`."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mxlint.output import render_concise
from mxlint.rule import Finding, Location
from mxlint.style import Style, color_enabled

NET = (
    "from mxnet import nd\n"
    "from mxnet.gluon import nn\n"
    "\n"
    "\n"
    "class Net(nn.HybridBlock):\n"
    "    def hybrid_forward(self, F, x):\n"
    "        if x.sum() > 0:\n"
    "            x = x * 2\n"
    "        return nd.relu(x)\n"
)
MXL101 = (
    "Python control flow on the tensor value `x.sum() > 0`: under hybridize() it is a Symbol "
    "with no value, so the branch fails or is frozen; compute both sides and select with "
    "`F.where(cond, a, b)`"
)
MXL105 = (
    "`nd.relu(...)` runs imperatively: under hybridize() it receives Symbols and fails; "
    "use `F.relu(...)`"
)
B, R, CY, X = "\x1b[1m", "\x1b[31m", "\x1b[36m", "\x1b[0m"
SEP = f"{CY}:{X}"
STAR = f"[{CY}*{X}]"
GUTTER = "\x1b[1m\x1b[94m"


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("NO_COLOR", "FORCE_COLOR", "MXLINT_OUTPUT_FORMAT")
    }
    env.update(extra)
    return env


def _mxlint(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mxlint", "check", "--no-cache", *args],
        cwd=cwd,
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "net.py").write_text(NET)
    (tmp_path / "clean.py").write_text("import mxnet as mx\n\nx = 1\n")
    return tmp_path


def test_always_colours_concise_as_ruff_does(project: Path):
    proc = _mxlint(project, "--color", "always", "net.py")
    assert proc.returncode == 1
    assert proc.stdout == (
        f"{B}net.py{X}{SEP}7{SEP}12{SEP} {B}{R}MXL101{X} {MXL101}\n"
        f"{B}net.py{X}{SEP}9{SEP}16{SEP} {B}{R}MXL105{X} {STAR} {MXL105}\n"
    )
    assert proc.stderr == f"Found 2 errors.\n{STAR} 1 fixable with the `--fix` option.\n"
    clean = _mxlint(project, "--color", "always", "clean.py")
    assert (clean.returncode, clean.stdout) == (0, "\x1b[1;32mAll checks passed!\x1b[0m\n")


def test_always_colours_full_and_statistics(project: Path):
    proc = _mxlint(project, "--color", "always", "--output-format", "full", "--select", "MXL105")
    assert proc.stdout == (
        f"{B}net.py{X}{SEP}9{SEP}16{SEP} {B}{R}MXL105{X} {STAR} {MXL105}\n"
        f"{GUTTER}  |{X}\n"
        f"{GUTTER}9 |{X}         return nd.relu(x)\n"
        f"{GUTTER}  |{X}                {B}\x1b[91m^^^^^^^^^^{X}\n"
        f"{GUTTER}  |{X}\n"
        f"  = {B}\x1b[96mhelp{X}: Replace `nd.relu` with `F.relu`\n"
        "    Safe fix:\n"
        f"    {R}-        return nd.relu(x){X}\n"
        f"    \x1b[32m+        return F.relu(x){X}\n"
        "  = docs: `mxlint rule MXL105`\n"
        "\n"
    )
    stats = _mxlint(project, "--color", "always", "--statistics", "net.py")
    assert stats.stdout == (
        f"{B}1{X}\t\x1b[1;31mMXL101{X}\t[ ] tensor-control-flow\n"
        f"{B}1{X}\t\x1b[1;31mMXL105{X}\t{STAR} imperative-op-in-hybrid\n"
    )


def test_no_colour_in_pipes_never_no_color_machine_formats_or_files(project: Path):
    plain = _mxlint(project, "net.py")
    assert plain.stdout.startswith("net.py:7:12: MXL101 Python control flow")
    for args, env in (
        ((), {}),  # auto, and stdout is a pipe
        (("--color", "never"), {"FORCE_COLOR": "1"}),
        ((), {"NO_COLOR": "1"}),
        ((), {"NO_COLOR": "1", "FORCE_COLOR": "1"}),  # NO_COLOR wins, as in Ruff
        ((), {"NO_COLOR": "", "FORCE_COLOR": ""}),  # empty values say nothing
    ):
        for fmt in ("concise", "full"):
            proc = _mxlint(project, *args, "--output-format", fmt, "net.py", **env)
            assert "\x1b" not in proc.stdout + proc.stderr, (args, env, fmt)
        assert _mxlint(project, *args, "net.py", **env).stdout == plain.stdout
    forced = _mxlint(project, "net.py", FORCE_COLOR="1")
    assert forced.stdout.startswith(f"{B}net.py{X}{SEP}7")
    for fmt in ("json", "sarif", "github"):
        proc = _mxlint(project, "--color", "always", "--output-format", fmt, "net.py")
        assert proc.returncode == 1 and "\x1b" not in proc.stdout, fmt
    json.loads(_mxlint(project, "--color", "always", "--output-format", "json", "net.py").stdout)
    for fmt in ("concise", "full"):
        out = project / f"report.{fmt}"
        proc = _mxlint(project, "--color", "always", "--output-format", fmt, "-o", str(out), ".")
        assert proc.stdout == "" and "\x1b" not in out.read_text(), fmt


def test_color_enabled_reads_the_mode_the_environment_and_the_stream():
    pipe = io.StringIO()
    master, slave = os.openpty()
    try:
        with open(slave, "w", closefd=True) as terminal:
            assert color_enabled("auto", terminal, {}) is True
            assert color_enabled("auto", terminal, {"NO_COLOR": "1"}) is False
            assert color_enabled("auto", terminal, {"NO_COLOR": ""}) is True
            assert color_enabled("never", terminal, {"FORCE_COLOR": "1"}) is False
    finally:
        os.close(master)
    assert color_enabled("auto", pipe, {}) is False
    assert color_enabled("auto", pipe, {"FORCE_COLOR": "1"}) is True
    assert color_enabled("auto", pipe, {"FORCE_COLOR": "1", "NO_COLOR": "x"}) is False
    assert color_enabled("always", pipe, {"NO_COLOR": "1"}) is True
    closed = io.StringIO()
    closed.close()
    assert color_enabled("auto", closed, {}) is False


def test_notebook_cells_are_coloured_like_any_position():
    finding = Finding("MXL101", "m", "nb.ipynb", Location(2, 5), Location(2, 9), cell=3)
    assert render_concise([finding], style=Style(True)) == (
        f"{B}nb.ipynb{X}{SEP}cell 3{SEP}2{SEP}5{SEP} {B}{R}MXL101{X} m\n"
    )
    assert render_concise([finding]) == "nb.ipynb:cell 3:2:5: MXL101 m\n"
