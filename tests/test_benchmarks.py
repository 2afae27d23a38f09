"""The speed benchmark runs end to end on a small generated corpus (figures are not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_speed_benchmark_runs_every_tool_and_prints_the_ratios(tmp_path: Path):
    out = tmp_path / "figures.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "speed.py"),
            "--generate",
            "12",
            "--repeat",
            "1",
            "--short-repeat",
            "2",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "warm / cold" in proc.stdout and "cold / flake8 -j" in proc.stdout
    figures = json.loads(out.read_text())
    assert figures["files"] == 13  # 12 modules and their package's __init__.py
    runs = figures["runs"]
    assert set(runs) == {
        "parse",
        "flake8",
        "cold",
        "cold1",
        "warm",
        "one",
        "flake8one",
        "typical",
        "flake8typical",
        "import",
        "startup",
    }
    assert "peak memory, PSS sum" in proc.stdout
    # Every tool ran to completion (the linters run with --exit-zero).
    assert all(run["rc"] == 0 for run in runs.values()), runs
    assert all(run["seconds"] > 0 for run in runs.values())
    # One time per round for every command, the short ones' the median of their runs.
    assert {key: len(times) for key, times in figures["rounds"].items()} == dict.fromkeys(runs, 1)
