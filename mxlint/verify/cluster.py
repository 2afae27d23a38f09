"""A local parameter-server job for `--verify`: a scheduler, servers and workers started through
MXNet's own `DMLC_*` variables, on loopback addresses only, bounded in time.

Every member is a `mxlint.verify.child` process in its own session. The scheduler and servers
import mxnet, which runs their loop (`mxnet.kvstore.kvstore_server`); the workers run a job (the
user's script under the script harness, or the launch probe). When every worker has exited, or
the time is up, whatever is still running — a scheduler waiting for a worker that never came —
is killed with its whole process group: nothing outlives the call.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mxlint.verify.sandbox import Confinement, prepare

#: Seconds the scheduler and servers get to leave on their own once the workers are done.
GRACE = 2.0


@dataclass
class Member:
    """One process of the job: its role, its DMLC_* variables, and for a worker its job."""

    #: "scheduler", "server", "worker", or "" for a process started without DMLC_ROLE.
    role: str
    env: dict[str, str]
    job: dict[str, Any] | None = None


@dataclass
class MemberResult:
    role: str
    env: dict[str, str]
    pid: int
    #: Exited on its own before the deadline (else it was killed).
    finished: bool
    returncode: int | None
    payload: dict[str, Any] = field(default_factory=dict)
    stderr: str = ""


def free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports free on 127.0.0.1 right now."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _environment(member: Member) -> dict[str, str]:
    """The member's DMLC_* variables (the parent's own are never passed: see `environment`)."""
    env = dict(member.env)
    if member.role:
        env["DMLC_ROLE"] = member.role  # a process launched without one gets none
    # Each node binds and announces a loopback address only.
    env["DMLC_NODE_HOST"] = "127.0.0.1"
    env["DMLC_INTERFACE"] = "lo"
    return env


def run_cluster(
    members: list[Member],
    *,
    timeout: float,
    memory_mb: int,
    engine: str = "NaiveEngine",
    confinement: Confinement | None = None,
) -> list[MemberResult]:
    """Start every member, wait for the workers (at most `timeout` seconds), then stop what
    is left. The results are in the order of `members`. Each member runs in the verify
    sandbox with the host's network, which the members need to reach each other."""
    with tempfile.TemporaryDirectory(prefix="mxlint-cluster-") as tmp:
        procs: list[subprocess.Popen[bytes]] = []
        outs: list[Path] = []
        errs: list[Path] = []
        try:
            for i, member in enumerate(members):
                job = member.job if member.job is not None else {"kind": "ps-node"}
                work = Path(os.path.realpath(tmp)) / f"{i}-{member.role or 'no-role'}"
                work.mkdir()
                launch = prepare(
                    job,
                    str(work),
                    engine=engine,
                    memory_mb=memory_mb,
                    env=_environment(member),
                    confinement=confinement,
                    network=True,
                )
                out, err = work / "result.json", work / "stderr.txt"
                outs.append(out)
                errs.append(err)
                with open(err, "wb") as err_file:
                    procs.append(
                        subprocess.Popen(
                            launch.cmd,
                            cwd=launch.cwd,
                            env=launch.env,
                            stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL,
                            stderr=err_file,
                            start_new_session=True,
                        )
                    )
            deadline = time.monotonic() + timeout
            workers = [p for p, m in zip(procs, members) if m.job is not None]
            for proc in workers:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(max(0.0, deadline - time.monotonic()))
            if all(p.poll() is not None for p in workers):
                grace = min(GRACE, max(0.0, deadline - time.monotonic()) + GRACE)
                for proc in procs:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(max(0.0, grace))
            finished = [p.poll() is not None for p in procs]
        finally:
            for proc in procs:
                _stop(proc)
        results = []
        for member, proc, done, out, err in zip(members, procs, finished, outs, errs):
            payload: dict[str, Any] = {}
            if out.is_file():
                with contextlib.suppress(ValueError, OSError):
                    payload = json.loads(out.read_text(encoding="utf-8"))
            stderr = err.read_text(encoding="utf-8", errors="replace") if err.is_file() else ""
            results.append(
                MemberResult(
                    member.role,
                    dict(member.env),
                    proc.pid,
                    done,
                    proc.returncode if done else None,
                    payload,
                    "\n".join(stderr.strip().splitlines()[-8:]),
                )
            )
        return results


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill the member's whole process group if anything of it still runs, and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)
