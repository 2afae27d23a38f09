"""Every kind of finding passes the one funnel: `--select`, `--ignore`, per-file ignores and
`# noqa` work for the engine's own codes, cross-file findings, dependency files and notebooks
alike (`mxlint.funnel.admit`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mxlint.cli import main
from mxlint.funnel import admit, superseded
from mxlint.rule import Finding, Location
from mxlint.settings import Settings

PY2 = "import mxnet as mx\nprint 'hello'\n"
BASE = """from mxnet import gluon


class Base(gluon.HybridBlock):
    pass
"""
NET = """from base import Base


class Net(Base):
    def hybrid_forward(self, F, x):
        if x.sum() > 0:{noqa}
            return x
        return -x
"""
NOTEBOOK_CELL = "import mxnet as mx\nx = mx.nd.ones(3)\nfor i in range(3):\n    t0 = 1\n"


def run(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, list[tuple]]:
    """`mxlint check` in `root` with its own configuration: (exit code, [(file, code, row)])."""
    capsys.readouterr()
    cwd = Path.cwd()
    try:
        import os

        os.chdir(root)
        rc = main(["check", "--no-cache", "-j", "1", "--output-format", "json", *args, "."])
    finally:
        os.chdir(cwd)
    out = json.loads(capsys.readouterr().out)
    return rc, sorted((f["filename"], f["code"], f["location"]["row"]) for f in out)


def config(root: Path, body: str = "") -> None:
    (root / "mxlint.toml").write_text(body)


def test_syntax_errors_follow_ignore_and_per_file_ignores(tmp_path, capsys):
    config(tmp_path)
    (tmp_path / "old.py").write_text(PY2)
    assert run(capsys, tmp_path) == (1, [("old.py", "MXL001", 2)])
    assert run(capsys, tmp_path, "--ignore", "MXL001") == (0, [])
    assert run(capsys, tmp_path, "--ignore", "MXL0") == (0, [])
    config(tmp_path, '[per-file-ignores]\n"old.py" = ["MXL001"]\n')
    assert run(capsys, tmp_path) == (0, [])
    assert run(capsys, tmp_path, "--select", "MXL1") == (0, [])


def test_unreadable_files_follow_ignore_and_per_file_ignores(tmp_path, capsys):
    config(tmp_path)
    (tmp_path / "latin.py").write_bytes(b"import mxnet\nname = '\xe9'\n")
    assert run(capsys, tmp_path) == (1, [("latin.py", "MXL003", 2)])
    assert run(capsys, tmp_path, "--ignore", "MXL003") == (0, [])
    config(tmp_path, '[per-file-ignores]\n"latin.py" = ["MXL0"]\n')
    assert run(capsys, tmp_path) == (0, [])


def test_dependency_files_follow_selection_and_noqa(tmp_path, capsys):
    config(tmp_path)
    req = tmp_path / "requirements.txt"
    req.write_text("mxnet>=1.8\nnumpy<1.24\n")
    assert run(capsys, tmp_path) == (1, [("requirements.txt", "MXL501", 1)])
    assert run(capsys, tmp_path, "--ignore", "MXL501") == (0, [])
    assert run(capsys, tmp_path, "--select", "MXL1") == (0, [])
    config(tmp_path, '[per-file-ignores]\n"requirements*.txt" = ["MXL5"]\n')
    assert run(capsys, tmp_path) == (0, [])
    config(tmp_path)
    req.write_text("mxnet>=1.8  # noqa: MXL501\nnumpy<1.24\n")
    assert run(capsys, tmp_path) == (0, [])


def test_cross_file_findings_follow_per_file_ignores_and_noqa(tmp_path, capsys):
    """MXL101 in `Net` stands only once the run proves `Base` (another file) a HybridBlock."""
    config(tmp_path)
    (tmp_path / "base.py").write_text(BASE)
    net = tmp_path / "net.py"
    net.write_text(NET.format(noqa=""))
    assert run(capsys, tmp_path) == (1, [("net.py", "MXL101", 6)])
    assert run(capsys, tmp_path, "--ignore", "MXL101") == (0, [])
    config(tmp_path, '[per-file-ignores]\n"net.py" = ["MXL1"]\n')
    assert run(capsys, tmp_path) == (0, [])
    config(tmp_path)
    net.write_text(NET.format(noqa="  # noqa: MXL101"))
    assert run(capsys, tmp_path) == (0, [])


def test_notebook_cells_follow_ignore(tmp_path, capsys):
    config(tmp_path)
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    doc = {
        "cells": [
            {**cell, "source": "import mxnet as mx\nfrom mxnet import gluon\n"},
            {
                **cell,
                "source": "class Net(gluon.HybridBlock):\n"
                "    def hybrid_forward(self, F, x):\n"
                "        return x.asnumpy()\n",
            },
        ],
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "nb.ipynb").write_text(json.dumps(doc))
    rc, rows = run(capsys, tmp_path)
    assert (rc, rows) == (1, [("nb.ipynb", "MXL102", 3)])
    assert run(capsys, tmp_path, "--ignore", "MXL102") == (0, [])


def _finding(code: str, row: int, path: str = "a.py") -> Finding:
    return Finding(code, "m", path, Location(row, 1), Location(row, 2))


def test_supersedes_is_decided_among_selected_findings():
    """MXL402 replaces MXL401 at the same place, unless MXL402 is not selected."""
    both = [_finding("MXL401", 3), _finding("MXL402", 3), _finding("MXL401", 5)]
    assert superseded(both) == {("MXL401", 3, 1)}
    kept = admit(both, Settings(select=("ALL",)))
    assert [(f.code, f.location.row) for f in kept] == [("MXL402", 3), ("MXL401", 5)]
    kept = admit(both, Settings(select=("ALL",), ignore=("MXL402",)))
    assert [(f.code, f.location.row) for f in kept] == [("MXL401", 3), ("MXL401", 5)]
