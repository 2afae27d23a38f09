"""`--add-noqa` for every kind of file mxlint reads: after it a rerun exits 0 on a project with
Python, requirements, Dockerfile, pyproject.toml, setup.cfg and environment.yml findings; the
comments are where each kind reads them, and the files still mean what they meant (read by pip,
tomllib, PyYAML and setuptools themselves). What no comment can suppress is named."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pip._internal.network.session import PipSession
from pip._internal.req.req_file import parse_requirements

from mxlint import add_noqa
from mxlint.cli import main

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

FINDINGS = [
    ("Dockerfile", 6, "MXL505"),
    ("environment.yml", 7, "MXL505"),
    ("net.py", 12, "MXL101"),
    ("net.py", 15, "MXL105"),
    ("pyproject.toml", 5, "MXL501"),
    ("requirements.txt", 2, "MXL501"),
    ("requirements.txt", 2, "MXL502"),
    ("requirements.txt", 2, "MXL503"),
    ("requirements.txt", 4, "MXL506"),
    ("setup.cfg", 6, "MXL501"),
]
# What --add-noqa changes, file by file: (old line, new line), or a line inserted above one.
CHANGED = {
    "Dockerfile": ("RUN pip3 install \\\n", "# noqa: MXL505\nRUN pip3 install \\\n"),
    "environment.yml": (
        "    - onnx  # the exporter\n",
        "    - onnx  # the exporter  # noqa: MXL505\n",
    ),
    "net.py": (
        "        if x.sum() > 0:\n            x = x * 2\n        y = F.concat(self.dense(x),\n"
        "                     nd.relu(x), dim=1)\n",
        "        if x.sum() > 0:  # noqa: MXL101\n            x = x * 2\n"
        "        y = F.concat(self.dense(x),\n                     nd.relu(x), dim=1)  # noqa: MXL105\n",
    ),
    "pyproject.toml": ('    "mxnet>=1.6",\n', '    "mxnet>=1.6",  # noqa: MXL501\n'),
    # The entry continues with its hash: pip reads a comment on its last line only.
    "requirements.txt": (
        "    --hash=sha256:0123456789abcdef0123456789abcdef\nnumpy>=1.20\n",
        "    --hash=sha256:0123456789abcdef0123456789abcdef  # noqa: MXL501, MXL502, MXL503\n"
        "numpy>=1.20  # noqa: MXL506\n",
    ),
    "setup.cfg": ("    mxnet-cu112\n", "    mxnet-cu112  # noqa: MXL501\n"),
}


@pytest.fixture
def project(fixtures_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "noqa_project"
    shutil.copytree(fixtures_dir / "noqa_project", root)
    monkeypatch.chdir(root)
    return root


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(["check", "--isolated", "--no-cache", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def _rows(capsys: pytest.CaptureFixture[str]) -> list[tuple[str, int, str]]:
    rc, out, _ = _run(capsys, "--output-format", "json", ".")
    return [(i["filename"], i["location"]["row"], i["code"]) for i in json.loads(out)]


def test_after_add_noqa_a_rerun_exits_0(project, capsys):
    before = {p.name: p.read_text() for p in project.iterdir()}
    assert _rows(capsys) == FINDINGS
    assert _run(capsys, "--add-noqa", ".") == (0, "", "Added 10 noqa directives.\n")
    for name, text in before.items():
        old, new = CHANGED[name]
        assert before[name].count(old) == 1
        assert (project / name).read_text() == text.replace(old, new), name
    assert _run(capsys, ".") == (0, "All checks passed!\n", "")
    assert _run(capsys, "--add-noqa", ".") == (0, "", "Added 0 noqa directives.\n")


def test_the_files_still_mean_what_they_meant(project, capsys):
    def requirements() -> list[tuple[str | None, dict]]:
        found = parse_requirements(str(project / "requirements.txt"), session=PipSession())
        return [(r.requirement, r.options) for r in found]

    def setup_cfg() -> str:
        code = (
            "from setuptools.config.setupcfg import read_configuration\n"
            "from setuptools.dist import Distribution\n"
            "reqs = read_configuration('setup.cfg')['options']['install_requires']\n"
            "print([str(r) for r in Distribution({'install_requires': reqs}).install_requires])"
        )
        env = {**os.environ, "SETUPTOOLS_USE_DISTUTILS": "stdlib"}
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=project, capture_output=True, text=True, env=env
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def meaning() -> tuple:
        return (
            requirements(),
            tomllib.loads((project / "pyproject.toml").read_text()),
            yaml.safe_load((project / "environment.yml").read_text()),
            setup_cfg(),
            # Docker drops comment lines: the instructions are the same, one line lower.
            [
                line
                for line in (project / "Dockerfile").read_text().splitlines()
                if not line.startswith("#")
            ],
        )

    before = meaning()
    assert _run(capsys, "--add-noqa", ".")[0] == 0
    assert meaning() == before


def test_what_no_comment_can_suppress_is_named(project, capsys):
    (project / "legacy.py").write_text("import mxnet\nprint 'python 2'\n")
    (project / "cont.py").write_text(
        "from mxnet.gluon import nn\n\n\nclass Net(nn.HybridBlock):\n"
        "    def hybrid_forward(self, F, x):\n"
        "        return F.relu(x) if x.sum() > 0 else \\\n            x\n"
    )
    (project / "stale.py").write_text("import mxnet as mx\nx = mx.nd.zeros((1,))  # noqa: MXL999\n")
    rc, out, err = _run(capsys, "--add-noqa", ".")
    assert rc == 1
    assert err.splitlines() == [
        "mxlint: warning: cont.py:6:29: MXL101 not suppressed: " + add_noqa.BLOCKED_PYTHON,
        "mxlint: warning: legacy.py:2:1: MXL001 not suppressed: "
        + add_noqa.NOT_BY_COMMENT["MXL001"],
        "mxlint: warning: stale.py:2:24: MXL004 not suppressed: "
        + add_noqa.NOT_BY_COMMENT["MXL004"],
        "Added 10 noqa directives.",
    ]
    assert [r for r in _rows(capsys)] == [
        ("cont.py", 6, "MXL101"),
        ("legacy.py", 2, "MXL001"),
        ("stale.py", 2, "MXL004"),
    ]


def test_a_comment_that_does_not_suppress_is_not_written(project, capsys, monkeypatch):
    """The run is linted again before anything is written: a file whose directives would not
    silence its findings (here a directive put on the wrong line) stays as it was."""
    plan_text = add_noqa.plan_text

    def misplaced(text, findings, style):
        plan = plan_text(text, findings, style)
        if style == "requirements":
            plan.end = {1: [c for codes in plan.end.values() for c in codes]}
        return plan

    monkeypatch.setattr(add_noqa, "plan_text", misplaced)
    before = (project / "requirements.txt").read_text()
    rc, _, err = _run(capsys, "--add-noqa", ".")
    assert rc == 1
    why = "linted again with the comments in place, the file still reports MXL004, MXL501, "
    assert err.splitlines()[:4] == [
        f"mxlint: warning: requirements.txt:2:1: MXL501 not suppressed: {why}MXL502, MXL503, MXL506",
        f"mxlint: warning: requirements.txt:2:1: MXL502 not suppressed: {why}MXL502, MXL503, MXL506",
        f"mxlint: warning: requirements.txt:2:1: MXL503 not suppressed: {why}MXL502, MXL503, MXL506",
        f"mxlint: warning: requirements.txt:4:1: MXL506 not suppressed: {why}MXL502, MXL503, MXL506",
    ]
    assert err.splitlines()[4:] == ["Added 6 noqa directives."]
    assert (project / "requirements.txt").read_text() == before
    assert [r[0] for r in _rows(capsys)] == ["requirements.txt"] * 4
