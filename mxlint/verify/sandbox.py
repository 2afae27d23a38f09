"""One verify job in its own subprocess, inside the run's sandbox (`isolation`): a timeout,
resource limits (`limits`), a scrubbed environment (`environment`), NaiveEngine, and a
scratch directory that is its working directory, home and TMPDIR.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mxlint.verify import environment, escapes, limits
from mxlint.verify.isolation import Sandbox, detect, python_paths

DEFAULT_TIMEOUT = 60.0
#: Memory limit for a job (the address space on CPU, the data segment on GPU: see `limits`).
#: MXNet maps ~1.5 GiB of virtual memory at import (thread stacks, the OpenMP pool), so the
#: limit must leave room for that.
DEFAULT_MEMORY_MB = 6144


@dataclass
class ChildResult:
    ok: bool
    payload: dict[str, Any]
    reason: str = ""
    stderr: str = ""
    elapsed: float = 0.0
    #: What the job's code tried outside its sandbox (`escapes` records).
    escapes: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Confinement:
    """The run's sandbox and what the project adds to it (`[tool.mxlint.verify]`)."""

    sandbox: Sandbox
    #: Environment variables passed through unchanged (`pass-env`).
    pass_env: tuple[str, ...] = ()
    #: Paths the jobs may read although the sandbox hides them (`readable`, the project).
    readable: tuple[str, ...] = ()


def child_env(engine: str = "NaiveEngine", extra: dict[str, str] | None = None) -> dict[str, str]:
    """The MXNet settings of a job, over the given (already scrubbed) variables."""
    env = dict(extra or {})
    env["MXNET_ENGINE_TYPE"] = engine
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("MXNET_CPU_WORKER_NTHREADS", "1")
    env["PYTHONHASHSEED"] = env.get("PYTHONHASHSEED", "0")
    env["PYTHONWARNINGS"] = "ignore"
    env.pop("MXNET_ENFORCE_DETERMINISM", None)
    return env


def _project_paths(job: dict[str, Any]) -> list[str]:
    paths = [str(p) for p in job.get("roots", [])]
    paths += [os.path.dirname(str(f)) for f in [job.get("file"), *job.get("trace_files", [])] if f]
    return [p for p in paths if p]


@dataclass
class Launch:
    """A verify child ready to start: its command line (wrapped in the sandbox), environment
    and working directory."""

    cmd: list[str]
    env: dict[str, str]
    cwd: Path


def prepare(
    job: dict[str, Any],
    scratch: str,
    *,
    engine: str = "NaiveEngine",
    memory_mb: int = DEFAULT_MEMORY_MB,
    env: dict[str, str] | None = None,
    confinement: Confinement | None = None,
    network: bool = False,
) -> Launch:
    """Lay out `scratch` for one child (job.json; cwd, home and tmp directories; result.json
    is written there) and build its sandboxed command. `network`: the child keeps the host's
    network (the members of a local parameter-server job reach each other over loopback)."""
    confinement = confinement or Confinement(detect())
    box = confinement.sandbox
    gpu = bool(job.get("gpu"))
    root = Path(scratch)
    work, home, tmpdir = (root / d for d in ("cwd", "home", "tmp"))
    for d in (work, home, tmpdir):
        d.mkdir(exist_ok=True)
    (root / "job.json").write_text(json.dumps(job), encoding="utf-8")
    project = _project_paths(job)
    readable = [*python_paths(), *project, *confinement.readable]
    argv = [sys.executable, "-m", "mxlint.verify.child", str(root / "job.json")]
    cmd = box.command(
        [*argv, str(root / "result.json")],
        scratch=scratch,
        cwd=str(work),
        readable=readable,
        project=project,
        gpu=gpu,
        network=network,
    )
    base = environment.scrubbed(os.environ, str(home), str(tmpdir), confinement.pass_env)
    child = child_env(engine, {**base, **(env or {})})
    child.update(limits.env_for(memory_mb, gpu))
    child.update(
        escapes.sandbox_env(
            box.name,
            scratch,
            box.writable(scratch),
            box.readonly(readable, project),
            network or box.network,
        )
    )
    return Launch(cmd, child, work)


def run_job(
    job: dict[str, Any],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    memory_mb: int = DEFAULT_MEMORY_MB,
    engine: str = "NaiveEngine",
    env: dict[str, str] | None = None,
    confinement: Confinement | None = None,
) -> ChildResult:
    """Run `mxlint.verify.child` on `job` in the sandbox; the child writes its JSON result to
    a file in its scratch directory."""
    import time

    with tempfile.TemporaryDirectory(prefix="mxlint-verify-") as tmp:
        scratch = os.path.realpath(tmp)
        launch = prepare(
            job, scratch, engine=engine, memory_mb=memory_mb, env=env, confinement=confinement
        )
        out_path = Path(scratch) / "result.json"
        cmd, child, work = launch.cmd, launch.env, launch.cwd
        start = time.monotonic()
        # A new session: a timeout kills the job's whole process group (DataLoader workers).
        proc = subprocess.Popen(
            cmd,
            cwd=work,
            env=child,
            stdin=subprocess.DEVNULL,
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
        found = list(payload.get("sandbox_events", [])) if payload else []
        if payload:
            payload.setdefault("stderr_tail", _tail(err))
            return ChildResult(True, payload, stderr=err, elapsed=elapsed, escapes=found)
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
