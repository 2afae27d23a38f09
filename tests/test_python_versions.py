"""The Pythons pyproject names are the ones the core runs on: on the oldest and the newest
classifier's interpreter (where this machine has it), a fresh virtualenv installs mxlint from a
copy of this checkout, with its dependencies for that Python, and reports on the fixtures exactly
what this interpreter reports."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mxlint.config import toml_reader

ROOT = Path(__file__).resolve().parent.parent
PROJECT = toml_reader().loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
CLASSIFIED = sorted(
    (tuple(int(p) for p in m.group(1).split(".")), m.group(1))
    for c in PROJECT["classifiers"]
    if (m := re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", c))
)

pytestmark = pytest.mark.slow


def test_classifiers_start_at_requires_python():
    assert PROJECT["requires-python"] == f">={CLASSIFIED[0][1]}"
    minors = [v[1] for v, _ in CLASSIFIED]
    assert minors == list(range(minors[0], minors[-1] + 1)), "no gap between versions"


def _interpreter(version: str) -> str | None:
    """A working `pythonX.Y`: on PATH, or one pyenv installed."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = [shutil.which(f"python{version}")]
    candidates += [str(p) for p in sorted(pyenv.glob(f"versions/{version}.*/bin/python{version}"))]
    for candidate in filter(None, candidates):
        proc = subprocess.run(
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode == 0 and proc.stdout.strip() == version:
            return candidate
    return None


def _findings(python: str, cwd: Path) -> list[tuple[str, int, int, str, str]]:
    """What `python` reports on the fixtures, run outside the checkout (from it, `-m mxlint`
    would import the source tree rather than the installed package)."""
    proc = subprocess.run(
        [python, "-m", "mxlint", "check", "--no-cache", "--output-format", "json"]
        + [str(ROOT / "fixtures")],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 1 and proc.stdout.startswith("["), proc.stderr[-2000:]
    return sorted(
        (f["filename"], f["location"]["row"], f["location"]["column"], f["code"], f["message"])
        for f in json.loads(proc.stdout)
    )


@pytest.fixture(scope="module")
def outside(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("elsewhere")


@pytest.fixture(scope="module")
def reference(outside: Path) -> list[tuple[str, int, int, str, str]]:
    return _findings(sys.executable, outside)


@pytest.mark.parametrize("version", sorted({CLASSIFIED[0][1], CLASSIFIED[-1][1]}))
def test_the_core_runs_the_same_on(version: str, reference, outside: Path, tmp_path: Path):
    if version == f"{sys.version_info[0]}.{sys.version_info[1]}":
        pytest.skip("this interpreter is the reference")
    python = _interpreter(version)
    if python is None:
        pytest.skip(f"no Python {version} here")
    source = tmp_path / "src"
    ignore = shutil.ignore_patterns(
        "build", "dist", "*.egg-info", "__pycache__", ".git", ".*_cache", "tests", "benchmarks"
    )
    shutil.copytree(ROOT, source, ignore=ignore, symlinks=True)
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(source)],
        check=True,
        timeout=600,
        env=env,
    )
    assert _findings(str(venv / "bin" / "python"), outside) == reference
