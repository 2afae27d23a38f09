"""docs/ci/verify-gpu.yml, the example GPU workflow: a GPU runner label, a matrix whose shards
cover 1..N, and a verify command that mxlint parses — run here for every shard, each finding
gets its verdict in exactly one shard."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from mxlint.cli import build_parser
from mxlint.verify.isolation import SandboxUnavailable, detect

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "docs" / "ci" / "verify-gpu.yml"


def _verify_job() -> dict[str, Any]:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return dict(workflow["jobs"]["verify"])


def _command(shard: int) -> list[str]:
    """The verify step's mxlint command line for one matrix entry."""
    (step,) = [s for s in _verify_job()["steps"] if "--verify" in s.get("run", "")]
    line = step["run"].replace("${{ matrix.shard }}", str(shard)).split("||")[0]
    argv = shlex.split(line)
    assert argv[0] == "mxlint"
    return argv[1:]


def test_the_workflow_runs_on_a_gpu_runner_with_a_shard_matrix() -> None:
    job = _verify_job()
    assert "gpu" in job["runs-on"]
    shards = job["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1))
    assert job["strategy"]["fail-fast"] is False
    for shard in shards:
        args = build_parser().parse_args(_command(shard))
        assert args.verify and args.shard == (shard, len(shards))
        assert args.verify_sandbox == "bubblewrap"
        assert args.report == Path(f"verify-{shard}.html")
        assert args.output_file == Path(f"verify-{shard}.json")


@pytest.mark.slow
def test_the_shards_of_the_workflow_split_the_verdicts(tmp_path: Path) -> None:
    try:
        detect("bubblewrap")
    except SandboxUnavailable as exc:
        pytest.skip(f"the workflow asks for bubblewrap: {exc}")
    shards = _verify_job()["strategy"]["matrix"]["shard"]
    verified: dict[tuple[str, int, str], list[int]] = {}
    for shard in shards:
        argv = _command(shard)
        argv[-1] = "fixtures/verify/hybrid/bad"  # the repository's `.` in the workflow
        argv = [str(tmp_path / a) if a.startswith("verify-") else a for a in argv]
        proc = subprocess.run(
            [sys.executable, "-m", "mxlint", *argv, "--no-benchmark"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert proc.returncode == 1, proc.stderr
        assert (tmp_path / f"verify-{shard}.html").is_file()
        items = json.loads((tmp_path / f"verify-{shard}.json").read_text(encoding="utf-8"))
        for item in items:
            key = (item["filename"], item["location"]["row"], item["code"])
            verified.setdefault(key, [])
            if "verify" in item:
                verified[key].append(shard)
    assert verified and all(len(s) == 1 for s in verified.values()), verified
    assert len({s[0] for s in verified.values()}) > 1  # the work is spread
