"""Writers first (runs inside the verify subprocess, before the project's program).

A finding about a model file a line reads (MXL704, MXL705) is about what another program — or
an earlier run of the same one — wrote into it. The job's `before` list names those programs;
each runs here, as a bounded script run of its own process (fresh MXNet name counters, as in
the earlier run it stands for), in the job's working directory, so the flagged line then reads
the files it wrote rather than a stand-in in another format.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

#: A writer's share of the job's time budget (the program that reads runs after it).
SHARE = 0.4


def _files(root: str) -> set[str]:
    out: set[str] = set()
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        out.update(os.path.relpath(os.path.join(folder, n), root) for n in names)
    return out


def run(job: dict[str, Any]) -> list[dict[str, Any]]:
    """Run each writer of `job["before"]`; what each did (finished, what it wrote, its error)."""
    done: list[dict[str, Any]] = []
    budget = float(job.get("budget") or 60) * SHARE
    cwd = os.getcwd()
    for spec in job.get("before", []):
        writer = {
            "kind": "script",
            "file": spec["file"],
            "roots": spec.get("roots", []),
            "argv": spec.get("argv", []),
            "steps": int(job.get("steps", 8)),
            "ctx_map": bool(job.get("ctx_map", True)),
            "gpu": bool(job.get("gpu")),
            "watch": [],
            "trace": False,
        }
        entry: dict[str, Any] = {"file": os.path.basename(spec["file"]), "line": spec.get("line")}
        seen = _files(cwd)
        with tempfile.TemporaryDirectory(prefix="mxlint-writer-") as tmp:
            job_path, out_path = Path(tmp, "job.json"), Path(tmp, "out.json")
            job_path.write_text(json.dumps(writer), encoding="utf-8")
            try:
                subprocess.run(
                    [sys.executable, "-m", "mxlint.verify.child", str(job_path), str(out_path)],
                    cwd=cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=budget,
                    check=False,
                )
                result = json.loads(out_path.read_text(encoding="utf-8"))
            except subprocess.TimeoutExpired:
                result = {"status": "timeout"}
            except (OSError, ValueError) as problem:
                result = {"status": "harness-error", "exception": {"type": type(problem).__name__}}
        raised = result.get("exception") or {}
        entry.update(
            status=result.get("status"),
            error=f"{raised.get('type')}: {str(raised.get('message', ''))[:200]}"
            if raised
            else None,
            wrote=sorted(_files(cwd) - seen),
            standins=list(result.get("standins") or []),
            sandbox_events=list(result.get("sandbox_events") or []),
        )
        done.append(entry)
    return done
