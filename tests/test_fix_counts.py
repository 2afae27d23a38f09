"""One fix count everywhere: the report's `[*] N fixable` line, `--diff`'s `Would fix N` and
`--fix`'s `N fixed` count the same findings, on a project where fixes overlap (two fixes of
one call; a fix that makes another finding moot), where the fixed findings need another file
(the block's base class), and where unsafe fixes are hidden."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mxlint.cli import main

FINDINGS = [
    "models/blocks.py:10:13: MXL105",
    "models/blocks.py:10:13: MXL112",
    "models/blocks.py:11:16: MXL105",
    "models/blocks.py:11:16: MXL202",
    "models/blocks.py:12:43: MXL105",
    "models/blocks.py:17:16: MXL112",
    "train.py:11:10: MXL301",
]
HIDDEN = "2 hidden fixes can be enabled with the `--unsafe-fixes` option"

SAFE_BLOCKS = """\
import mxnet as mx
from mxnet import nd
from mxnet.gluon import nn

from .base import Base


class Head(Base):
    def hybrid_forward(self, F, x):
        y = F.relu(self.dense(x)).reshape((2, -1))
        bias = nd.zeros((2, 8))
        return F.broadcast_add(y, bias) + F.sigmoid(y)


class Plain(nn.HybridBlock):
    def hybrid_forward(self, F, x):
        return x.reshape((0, -1))
"""
# With the unsafe fixes `nd` loses its last use and its import goes; `mx`, unused before,
# stays. MXL202 has no fix in `hybrid_forward` (a Symbol has no `.context`): MXL105's rewrite
# of the same call resolves it, and it is neither fixed nor remaining, as in Ruff's count.
UNSAFE_BLOCKS = SAFE_BLOCKS.replace("from mxnet import nd\n", "").replace(
    "nd.zeros((2, 8))", "F.zeros((2, 8))"
)


@pytest.fixture
def project(fixtures_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "fix_counts"
    shutil.copytree(fixtures_dir / "fix_counts", root)
    monkeypatch.chdir(root)
    return root


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(["check", "--no-cache", "--isolated", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_findings(project, capsys):
    rc, out, _ = _run(capsys, "--output-format", "concise", ".")
    assert rc == 1
    assert [" ".join(line.split(" ")[:2]) for line in out.splitlines()] == FINDINGS


def test_safe_fixes_counted_alike_in_all_three_modes(project, capsys):
    before = {p: p.read_text() for p in project.rglob("*.py")}
    assert _run(capsys, ".")[2] == (
        f"Found 7 errors.\n[*] 4 fixable with the `--fix` option ({HIDDEN}).\n"
    )
    rc, diff, err = _run(capsys, "--diff", ".")
    assert (rc, err) == (
        1,
        "Would fix 4 errors (2 additional fixes available with `--unsafe-fixes`).\n",
    )
    assert {p: p.read_text() for p in project.rglob("*.py")} == before
    rc, _, err = _run(capsys, "--fix", ".")
    assert (rc, err) == (
        1,
        f"Found 7 errors (4 fixed, 3 remaining).\nNo fixes available ({HIDDEN}).\n",
    )
    assert (project / "models/blocks.py").read_text() == SAFE_BLOCKS
    assert (project / "train.py").read_text() == before[project / "train.py"]
    assert diff == (
        "--- a/models/blocks.py\n+++ b/models/blocks.py\n@@ -7,11 +7,11 @@\n \n"
        " class Head(Base):\n     def hybrid_forward(self, F, x):\n"
        "-        y = nd.relu(self.dense(x)).reshape(2, -1)\n"
        "+        y = F.relu(self.dense(x)).reshape((2, -1))\n"
        "         bias = nd.zeros((2, 8))\n"
        "-        return F.broadcast_add(y, bias) + nd.sigmoid(y)\n"
        "+        return F.broadcast_add(y, bias) + F.sigmoid(y)\n \n \n"
        " class Plain(nn.HybridBlock):\n     def hybrid_forward(self, F, x):\n"
        "-        return x.reshape(0, -1)\n+        return x.reshape((0, -1))\n"
    )
    # Nothing left to fix: a second run fixes nothing and says so as a plain run does.
    assert _run(capsys, "--fix", ".")[2] == f"Found 3 errors.\nNo fixes available ({HIDDEN}).\n"


def test_unsafe_fixes_counted_alike_in_all_three_modes(project, capsys):
    assert _run(capsys, "--unsafe-fixes", ".")[2] == (
        "Found 7 errors.\n[*] 6 fixable with the `--fix --unsafe-fixes` options.\n"
    )
    rc, diff, err = _run(capsys, "--diff", "--unsafe-fixes", ".")
    assert (rc, err) == (1, "Would fix 6 errors.\n")
    rc, _, err = _run(capsys, "--fix", "--unsafe-fixes", ".")
    assert (rc, err) == (0, "Found 6 errors (6 fixed, 0 remaining).\n")
    assert (project / "models/blocks.py").read_text() == UNSAFE_BLOCKS
    train = (project / "train.py").read_text()
    assert train.startswith(
        "import random\n\nimport numpy as np\nfrom mxnet import gluon\n\n"
        "from models import Head\nnp.random.seed(0)\n\nitems = list(range(100))\n"
    )
    assert "--- a/train.py\n+++ b/train.py\n" in diff and "+np.random.seed(0)\n" in diff
    assert "-from mxnet import nd\n" in diff and "+        bias = F.zeros((2, 8))\n" in diff
    assert _run(capsys, "--unsafe-fixes", ".")[1:] == ("All checks passed!\n", "")


def test_no_fix_available_hint(project, capsys):
    assert _run(capsys, "--select", "MXL202,MXL301", ".")[2] == (
        "Found 2 errors.\nNo fixes available (1 hidden fix can be enabled with the "
        "`--unsafe-fixes` option).\n"
    )
    assert _run(capsys, "--diff", "--select", "MXL202,MXL301", ".")[2] == (
        "No errors would be fixed (1 fix available with `--unsafe-fixes`).\n"
    )


HELPER = """\
from mxnet import nd
from mxnet.gluon import nn


def log_prob(x):
    return nd.log(x)


class Net(nn.HybridBlock):
    def hybrid_forward(self, F, x):
        return nd.sum(log_prob(x))
"""


def test_a_finding_left_on_a_fixed_line_is_not_counted(tmp_path, monkeypatch, capsys):
    """`nd.sum` is fixed on a line where another finding (the helper's `nd.log`, no fix)
    stays, one column to the left: one fixed, one remaining, in all three modes."""
    (tmp_path / "net.py").write_text(HELPER)
    monkeypatch.chdir(tmp_path)
    assert _run(capsys, ".")[2] == "Found 2 errors.\n[*] 1 fixable with the `--fix` option.\n"
    assert _run(capsys, "--diff", ".")[2] == "Would fix 1 error.\n"
    rc, out, err = _run(capsys, "--fix", ".")
    assert (rc, err) == (1, "Found 2 errors (1 fixed, 1 remaining).\n")
    assert out.startswith("net.py:11:22: MXL105 `log_prob()` calls `nd.log()`")
    # `nd` keeps a use in the helper: its import stays.
    assert (tmp_path / "net.py").read_text() == HELPER.replace("nd.sum(", "F.sum(")
