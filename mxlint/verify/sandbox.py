"""One verify job in its own subprocess: timeout, memory limit, NaiveEngine, a private cwd.

User code may hang, segfault or exhaust memory; each of these becomes a reason string for an
inconclusive verdict, never an exception in the parent.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_TIMEOUT = 60.0
#: Address-space limit for a job. MXNet maps ~1.5 GiB of virtual memory at import (thread
#: stacks, the OpenMP pool), so the limit must leave room for that.
DEFAULT_MEMORY_MB = 6144


@dataclass
class ChildResult:
    ok: bool
    payload: dict[str, Any]
    reason: str = ""
    stderr: str = ""
    elapsed: float = 0.0


#: The child applies this limit to itself first thing (a preexec_fn is unsafe with threads).
MEMORY_ENV = "MXLINT_VERIFY_MEMORY_MB"


def child_env(engine: str = "NaiveEngine", extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["MXNET_ENGINE_TYPE"] = engine
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("MXNET_CPU_WORKER_NTHREADS", "1")
    env["PYTHONHASHSEED"] = env.get("PYTHONHASHSEED", "0")
    env["PYTHONWARNINGS"] = "ignore"
    env.pop("MXNET_ENFORCE_DETERMINISM", None)
    env.update(extra or {})
    return env


def run_job(
    job: dict[str, Any],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    memory_mb: int = DEFAULT_MEMORY_MB,
    engine: str = "NaiveEngine",
    env: dict[str, str] | None = None,
) -> ChildResult:
    """Run `mxlint.verify.child` on `job`; the child writes its JSON result to a file."""
    import time

    with tempfile.TemporaryDirectory(prefix="mxlint-verify-") as tmp:
        job_path = Path(tmp) / "job.json"
        out_path = Path(tmp) / "result.json"
        work = Path(tmp) / "cwd"
        work.mkdir()
        job_path.write_text(json.dumps(job), encoding="utf-8")
        cmd = [sys.executable, "-m", "mxlint.verify.child", str(job_path), str(out_path)]
        start = time.monotonic()
        child = child_env(engine, env)
        child[MEMORY_ENV] = str(memory_mb)
        # A new session: a timeout kills the job's whole process group (DataLoader workers).
        proc = subprocess.Popen(
            cmd,
            cwd=work,
            env=child,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            _out, err_b = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            proc.communicate()
            return ChildResult(
                False,
                {},
                f"timeout: the job did not finish within {timeout:g}s",
                elapsed=time.monotonic() - start,
            )
        elapsed = time.monotonic() - start
        err = err_b.decode("utf-8", "replace")
        payload: dict[str, Any] = {}
        if out_path.is_file():
            try:
                payload = json.loads(out_path.read_text(encoding="utf-8"))
            except ValueError:
                payload = {}
        if payload:
            payload.setdefault("stderr_tail", _tail(err))
            return ChildResult(True, payload, stderr=err, elapsed=elapsed)
        return ChildResult(
            False, {}, _crash_reason(proc.returncode, err), stderr=err, elapsed=elapsed
        )


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _crash_reason(code: int | None, err: str) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"crash: the job died with {name}" + (f"; stderr: {_tail(err, 3)}" if err else "")
    lowered = err.lower()
    if "segmentation fault" in lowered:  # MXNet's own SIGSEGV handler exits with status 255
        return "crash: the job died with SIGSEGV (segmentation fault)"
    if "memoryerror" in lowered or "bad_alloc" in lowered or "cannot allocate" in lowered:
        return "out of memory: the job exceeded its memory limit"
    return f"crash: the job exited with status {code}" + (
        f"; stderr: {_tail(err, 3)}" if err else ""
    )
