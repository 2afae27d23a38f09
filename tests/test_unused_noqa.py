"""MXL004 judges every code that ran, the cross-file families (MXL1xx, MXL3xx) included: a used
and an unused directive of each in a project whose findings need another file, and silence for
codes that did not run, or whose findings may depend on files the run does not see."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mxlint import registry
from mxlint.cli import main

BASE = "from mxnet.gluon import nn\n\n\nclass Base(nn.HybridBlock):\n    pass\n"
NET = """\
from mxnet import nd

from .base import Base


class Net(Base):
    def hybrid_forward(self, F, x):
        y = nd.relu(x)  # noqa: MXL105
        return F.relu(y)  # noqa: MXL101
"""
TRAIN = """\
import numpy as np
from mxnet import gluon

from models.net import Net

dataset = gluon.data.ArrayDataset(np.arange(10))
loader = gluon.data.DataLoader(dataset, batch_size=2, shuffle=True)  # noqa: MXL301
net = Net()  # noqa: MXL302, E501


def main():
    net.hybridize()
    for batch in loader:
        net(batch)


if __name__ == "__main__":
    main()
"""
UNUSED = [
    ("models/net.py", 9, 27, "MXL004", "Unused `noqa` directive (unused: MXL101)"),
    ("train.py", 8, 14, "MXL004", "Unused `noqa` directive (unused: MXL302)"),
]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "base.py").write_text(BASE)
    (tmp_path / "models" / "net.py").write_text(NET)
    (tmp_path / "train.py").write_text(TRAIN)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _found(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[tuple]]:
    capsys.readouterr()
    rc = main(["check", "--isolated", "--output-format", "json", *args])
    items = json.loads(capsys.readouterr().out)
    rows = [
        (i["filename"], i["location"]["row"], i["location"]["column"], i["code"], i["message"])
        for i in items
    ]
    return rc, rows


def test_used_directives_are_silent_and_unused_ones_reported(project, capsys):
    assert _found(capsys, "--no-cache", ".") == (1, UNUSED)
    # Without the directives, the used ones suppress real findings of both families.
    (project / "models" / "net.py").write_text(NET.replace("  # noqa: MXL105", ""))
    (project / "train.py").write_text(TRAIN.replace("  # noqa: MXL301", ""))
    rc, rows = _found(capsys, "--no-cache", ".")
    assert [r[:4] for r in rows] == [
        ("models/net.py", 8, 13, "MXL105"),
        ("models/net.py", 9, 27, "MXL004"),
        ("train.py", 7, 10, "MXL301"),
        ("train.py", 8, 14, "MXL004"),
    ]


def test_the_fix_removes_only_the_unused_codes(project, capsys):
    main(["check", "--isolated", "--no-cache", "--fix", "."])
    assert (project / "models" / "net.py").read_text() == NET.replace(
        "return F.relu(y)  # noqa: MXL101", "return F.relu(y)"
    )
    assert (project / "train.py").read_text() == TRAIN.replace(
        "# noqa: MXL302, E501", "# noqa: E501"
    )
    assert _found(capsys, "--no-cache", ".") == (0, [])


@pytest.mark.parametrize(
    "args",
    [
        ["--select", "MXL004,MXL2"],  # neither family ran
        ["--ignore", "MXL101,MXL302"],
    ],
    ids=["not-selected", "ignored"],
)
def test_codes_that_did_not_run_are_not_judged(project, capsys, args):
    assert _found(capsys, "--no-cache", *args, ".") == (0, [])


def test_per_file_ignores_leave_their_codes_unjudged(project, capsys):
    (project / "mxlint.toml").write_text('per-file-ignores = { "train.py" = ["MXL3"] }\n')
    capsys.readouterr()
    main(["check", "--no-cache", "--output-format", "json", "."])
    items = json.loads(capsys.readouterr().out)
    assert [(i["filename"], i["location"]["row"]) for i in items] == [("models/net.py", 9)]


def test_a_run_that_does_not_see_the_files_a_finding_needs_does_not_judge(project, capsys):
    # Checked alone (as pre-commit passes changed files), net.py's block has its base class in
    # a file of the project outside the run: its MXL1 findings cannot be known absent.
    assert _found(capsys, "--no-cache", "models/net.py") == (0, [])
    assert _found(capsys, "--no-cache", "models/net.py", "train.py") == (0, [])
    # With every file it reaches, it is judged.
    assert _found(capsys, "--no-cache", "models", "train.py") == (1, UNUSED)


def test_a_self_contained_file_is_judged_alone(project, capsys):
    (project / "models" / "net.py").write_text(NET.replace("from .base import Base", BASE))
    rc, rows = _found(capsys, "--no-cache", "models/net.py")
    assert [r[:4] for r in rows] == [("models/net.py", 14, 27, "MXL004")]


def test_a_failed_checker_leaves_its_codes_unjudged(project, capsys, monkeypatch):
    checker = next(c for c in registry.python_checkers() if "MXL101" in {r.code for r in c.rules})

    def boom(cls, index):
        raise RuntimeError("injected fault")

    monkeypatch.setattr(checker, "finalize", classmethod(boom))
    rc, rows = _found(capsys, "--no-cache", ".")
    assert rc == 2
    assert [r[:4] for r in rows if r[3] == "MXL004"] == [("train.py", 8, 14, "MXL004")]


def test_uses_found_in_one_run_do_not_stay_in_the_cache(project, capsys):
    assert _found(capsys, ".") == (1, UNUSED)  # fills the cache
    # Base stops being a HybridBlock: Net's MXL105 directive no longer suppresses anything,
    # though net.py itself is unchanged and comes from the cache.
    (project / "models" / "base.py").write_text(BASE.replace("nn.HybridBlock", "nn.Block"))
    rc, rows = _found(capsys, ".")
    assert [r[:3] + (r[4],) for r in rows if r[0] == "models/net.py"] == [
        ("models/net.py", 8, 25, "Unused `noqa` directive (unused: MXL105)"),
        ("models/net.py", 9, 27, "Unused `noqa` directive (unused: MXL101)"),
    ]
    (project / "models" / "base.py").write_text(BASE)
    assert _found(capsys, ".") == (1, UNUSED)


def test_flake8_judges_what_its_one_file_view_can(project):
    def flake8(path: str) -> list[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "flake8", "--isolated", "--select", "MXL", path],
            capture_output=True,
            text=True,
            timeout=600,
        )
        return [line.split(" ")[0] + " " + line.split(" ")[1] for line in proc.stdout.splitlines()]

    assert flake8("models/net.py") == []  # its base class is in another file
    (project / "models" / "net.py").write_text(NET.replace("from .base import Base", BASE))
    assert flake8("models/net.py") == ["models/net.py:14:27: MXL004"]


DOCKERFILE = """\
FROM nvidia/cuda:11.0.3-cudnn8-runtime-ubuntu20.04
# the CUDA 11.2 wheel on purpose
# noqa: MXL503, MXL501
RUN pip install numpy<1.24 && \\
    pip install mxnet-cu112==1.9.1 onnx<1.19
"""


def test_dependency_files_judge_the_codes_that_read_them(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "requirements.txt").write_text(
        "mxnet>=1.6  # noqa: MXL501, MXL505\n"
        "numpy<1.24  # noqa: MXL999, MXL101\n"
        "onnx>=1.10 \\\n    --hash=sha256:0123  # noqa: MXL505\n"
    )
    (tmp_path / "Dockerfile").write_text(DOCKERFILE)
    rc, rows = _found(capsys, "--no-cache", "--select", "MXL", ".")
    assert rows == [
        # The comment line above an instruction covers all its lines.
        ("Dockerfile", 3, 1, "MXL004", "Unused `noqa` directive (unused: MXL501)"),
        ("requirements.txt", 1, 13, "MXL004", "Unused `noqa` directive (unused: MXL505)"),
        # MXL101 is no rule of a requirements file: left alone there.
        ("requirements.txt", 2, 13, "MXL004", "Unused `noqa` directive (unused: MXL999)"),
    ]
    main(["check", "--isolated", "--no-cache", "--select", "MXL", "--fix", "."])
    assert (tmp_path / "Dockerfile").read_text() == DOCKERFILE.replace(
        "# noqa: MXL503, MXL501", "# noqa: MXL503"
    )
    assert (tmp_path / "requirements.txt").read_text().splitlines()[:2] == [
        "mxnet>=1.6  # noqa: MXL501",
        "numpy<1.24  # noqa: MXL101",
    ]
    assert _found(capsys, "--no-cache", "--select", "MXL", ".") == (0, [])
