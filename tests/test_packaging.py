"""A built wheel carries the rule modules and data, and runs them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import pytest

from mxlint import registry

ROOT = Path(__file__).resolve().parent.parent


def _source_copy(target: Path) -> Path:
    """The project's files without build output: setuptools reuses an in-tree `build/lib`, so a
    module moved or deleted since an earlier build would still be packaged from there."""
    ignore = shutil.ignore_patterns(
        "build", "dist", "*.egg-info", "__pycache__", ".git", ".*_cache", ".mxlint_cache"
    )
    shutil.copytree(ROOT, target, ignore=ignore, symlinks=True)
    return target


@pytest.mark.slow
def test_wheel_contains_and_runs_the_rules(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(_source_copy(tmp_path / "src")),
        ],
        check=True,
    )
    (wheel,) = (tmp_path / "dist").glob("mxlint-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    # Every rule's file, and the analysis modules loaded only when needed, install under
    # mxlint.rules (a family folder missing from pyproject's package list would be lost).
    rule_files = [f"mxlint/{rule.source_file()}" for rule in registry.all_rules().values()]
    pages = [f"mxlint/data/rules/{code}.md" for code in registry.all_rules()]
    for required in (
        *rule_files,
        *pages,
        "mxlint/rules/versions/_dependency_sets.py",
        "mxlint/rules/hybridization/_taint.py",
        "mxlint/data/mxnet_releases.json",
        "mxlint/verify/__init__.py",
    ):
        assert required in names, required
    assert not any(n.startswith("rules/") for n in names), "rules must install as mxlint.rules"
    # The Apache-2.0 text ships in the wheel (PEP 639: `.dist-info/licenses/`), as in the repo.
    licenses = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    assert licenses, "the wheel carries no LICENSE"
    with zipfile.ZipFile(wheel) as zf:
        assert zf.read(licenses[0]) == (ROOT / "LICENSE").read_bytes()
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mxlint",
            "check",
            "--output-format",
            "json",
            str(ROOT / "fixtures" / "sample_project"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stderr
    import json

    findings = json.loads(proc.stdout)
    codes = {f["code"] for f in findings}
    assert {"MXL101", "MXL201", "MXL301", "MXL401", "MXL501"} <= codes
    # Every link the report gives is a page of the installed package, the rule's own.
    for finding in findings:
        page = Path(url2pathname(urlparse(finding["url"]).path))
        assert page.as_uri() == finding["url"] and page.is_file(), finding["url"]
        assert page.parent == (target / "mxlint" / "data" / "rules").resolve()
        documentation = registry.all_rules()[finding["code"]].documentation()
        assert page.read_text(encoding="utf-8") == documentation
    mod = subprocess.run(
        [sys.executable, "-c", "import mxlint.rules, sys; print(mxlint.rules.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert str(target) in mod.stdout
