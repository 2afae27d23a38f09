"""`--verify` for the distributed rules (MXL8xx): a real local parameter-server job.

A finding in a Python file is proven by running its entry script as both workers of a job with
a scheduler and one server on 127.0.0.1 (`cluster.run_cluster`): the script harness bounds
the run and each worker reports its exception, the loaders it built (size, the indices of one
epoch, first and last sample, first batch) and its Trainers' kvstores. A launch script's finding
(MXL801) is proven by starting the processes the script starts, with the DMLC_* values it gives
them — each distinct address mapped to its own loopback address, each distinct port to a free
port — and a probe in place of the program (`probe.py`), then once more with the disagreement
resolved: the finding is confirmed when the first job hangs or fails and the second joins.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from mxlint.rule import FindingKey
from mxlint.verify.cluster import Member, MemberResult, free_ports, run_cluster
from mxlint.verify.model import Verdict, inconclusive
from mxlint.verify.plan import Item, Task, runtime
from mxlint.verify.sandbox import Confinement, run_job

URI, PORT = "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT"
NUM_WORKER, NUM_SERVER = "DMLC_NUM_WORKER", "DMLC_NUM_SERVER"
SETTINGS = (URI, PORT, NUM_WORKER, NUM_SERVER)
WORKERS = 2
#: The most processes a launch finding's job may start here.
MAX_MEMBERS = 10
#: Seconds a launch job gets to join (a healthy 2-worker job has joined 3 s after its start,
#: most of it importing mxnet).
LAUNCH_TIMEOUT = 12.0
_LOOPBACK = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "loopback"}


def _job_text() -> str:
    return f"a local job (scheduler, 1 server, {WORKERS} workers on 127.0.0.1)"


def _exc(exc: dict[str, Any]) -> str:
    return f"{exc.get('type')}: {str(exc.get('message', '')).strip()[:300]}"


def _where(exc: dict[str, Any], files: set[str]) -> str:
    frames = [f for f in exc.get("frames", []) if os.path.realpath(f[0]) in files]
    if not frames:
        return ""
    path, line = frames[-1]
    return f" at {os.path.basename(path)}:{line}"


# --- a script as the workers of a job -------------------------------------------------------


def script_verdicts(
    task: Task,
    items: Sequence[Item],
    *,
    timeout: float,
    memory_mb: int,
    steps: int,
    confinement: Confinement | None = None,
) -> dict[FindingKey, Verdict]:
    """Run the task's script as the workers of a local job; a verdict for each item."""
    job = dict(task.job, steps=steps, dist=True, memory=False)
    env = {URI: "127.0.0.1", PORT: str(free_ports(1)[0]), NUM_WORKER: str(WORKERS), NUM_SERVER: "1"}
    members = [Member("scheduler", dict(env)), Member("server", dict(env))]
    members += [Member("worker", dict(env), job) for _ in range(WORKERS)]
    results = run_cluster(members, timeout=timeout, memory_mb=memory_mb, confinement=confinement)
    workers = [r for r in results if r.role == "worker"]
    files = {os.path.realpath(f) for f in [task.job["file"], *task.job.get("trace_files", [])]}
    return {it.key: _script_verdict(it, workers, files, timeout) for it in items}


def _script_verdict(
    item: Item, workers: list[MemberResult], files: set[str], timeout: float
) -> Verdict:
    payloads = [w.payload for w in workers]
    if any(not p for p in payloads):
        hung = sum(1 for w in workers if not w.finished)
        if hung:
            return inconclusive(
                f"{_job_text()}: {hung} of {WORKERS} workers did not finish within {timeout:g}s "
                "(the script waits for something the harness does not bound, or the job hangs)"
            )
        tail = next((w.stderr for w in workers if not w.payload), "")
        return inconclusive(f"{_job_text()}: a worker crashed; stderr: {tail[-300:]}")
    for p in payloads:
        if p.get("status") == "harness-error":
            return inconclusive(f"the harness could not run the script: {_exc(p['exception'])}")
    code = item.finding.code
    if code == "MXL804":
        return _unsplit(item, payloads)
    how = runtime(code)
    pattern = how.error if how is not None else None
    for rank, p in enumerate(payloads):
        for raised in _exceptions(p, item):
            text = f"{raised.get('type')}: {raised.get('message')}"
            if pattern is None or not re.search(pattern, text, re.I):
                continue
            # At the flagged line, or after it ran (a Trainer checks its options lazily).
            if _frames_hit(raised, item) or _runs(p, item):
                return Verdict(
                    "confirmed",
                    f"in {_job_text()}, worker {rank} raised {_exc(raised)}{_where(raised, files)}",
                )
    if code == "MXL806":
        dropped = _dropped_compression(item, payloads)
        if dropped is not None:
            return dropped
    runs = [_runs(p, item) for p in payloads]
    exc: dict[str, Any] | None = next(
        (p["exception"] for p in payloads if p.get("exception")), None
    )
    if not all(runs):
        if exc:
            return inconclusive(f"the script failed before line {item.line} ran: {_exc(exc)}")
        return inconclusive(f"line {item.line} did not run on both workers")
    if exc:
        return inconclusive(f"the script failed for another reason first: {_exc(exc)}")
    steps = min(int(p.get("steps", 0)) for p in payloads)
    return Verdict(
        "refuted",
        f"in {_job_text()}, line {item.line} ran on both workers and {steps} training steps "
        "followed without the predicted error",
    )


def _exceptions(payload: dict[str, Any], item: Item) -> list[dict[str, Any]]:
    out = []
    for w in payload.get("watch", []):
        if w.get("line") == item.line and w.get("exception"):
            out.append(w["exception"])
    if payload.get("exception"):
        out.append(payload["exception"])
    return out


def _frames_hit(exc: dict[str, Any], item: Item) -> bool:
    return any(
        os.path.realpath(f) == item.path and line == item.line for f, line in exc.get("frames", [])
    )


def _runs(payload: dict[str, Any], item: Item) -> int:
    return sum(
        int(w.get("runs", 0))
        for w in payload.get("watch", [])
        if w.get("line") == item.line and os.path.realpath(w.get("file", "")) == item.path
    )


def _dropped_compression(item: Item, payloads: list[dict[str, Any]]) -> Verdict | None:
    """A Trainer made at the flagged line that set compression but never got a kvstore."""
    if "MXNET_KVSTORE_BIGARRAY_BOUND" in item.finding.message:
        kinds = sorted({k for p in payloads for k in ((p.get("dist") or {}).get("kvstores", []))})
        shown = ", ".join(kinds) if kinds else "none"
        return inconclusive(
            "MXNET_KVSTORE_BIGARRAY_BOUND changes no result a run can compare; the kvstores "
            f"this run created: {shown}"
        )
    for rank, p in enumerate(payloads):
        trainers = [
            t
            for t in (p.get("dist") or {}).get("trainers", [])
            if t.get("site")
            and os.path.realpath(t["site"][0]) == item.path
            and t["site"][1] <= item.line
        ]
        if not trainers:
            continue
        # The Trainer call the flagged argument belongs to: the last one made before it.
        t = max(trainers, key=lambda t: t["site"][1])
        if t.get("initialized") and t.get("kvstore") is None and t.get("compression"):
            return Verdict(
                "confirmed",
                f"in {_job_text()}, the Trainer made at line {t['site'][1]} on worker {rank} "
                "created no kvstore (one device, no distributed kvstore): its "
                f"compression_params {t['compression']} were dropped",
            )
    return None


def _unsplit(item: Item, payloads: list[dict[str, Any]]) -> Verdict:
    if "Horovod" in item.finding.message or "BytePS" in item.finding.message:
        return inconclusive(
            "the finding is about Horovod/BytePS workers, which --verify does not start "
            "(it starts MXNet's own parameter-server job)"
        )
    facts = []
    for p in payloads:
        found = [
            f
            for f in (p.get("dist") or {}).get("loaders", [])
            if f.get("site")
            and f["site"][1] == item.line
            and os.path.realpath(f["site"][0]) == item.path
        ]
        if not found:
            exc = p.get("exception")
            why = f": {_exc(exc)}" if exc else ""
            return inconclusive(f"the loader of line {item.line} was not built on a worker{why}")
        facts.append(found[0])
    kinds = sorted(
        {str(k) for p in payloads for k in (p.get("dist") or {}).get("kvstores", [])}
        | {
            str(t["kvstore"])
            for p in payloads
            for t in (p.get("dist") or {}).get("trainers", [])
            if t.get("kvstore")
        }
    )
    if not any(k.startswith("dist") for k in kinds):
        shown = ", ".join(kinds) if kinds else "none"
        return Verdict(
            "refuted",
            f"run as the {WORKERS} workers of {_job_text()[2:]}, the script created no "
            f"distributed kvstore (kvstores: {shown}): its processes are not one job",
        )
    a, b = facts[0], facts[1]
    same_batch = a.get("first_batch") is not None and a.get("first_batch") == b.get("first_batch")
    ia, ib = a.get("indices"), b.get("indices")
    if ia and ib and a.get("length") is not None:
        length = a["length"]
        if a.get("length") != b.get("length") or ia["set"] != ib["set"]:
            return Verdict(
                "refuted",
                f"in {_job_text()}, the two workers' loaders of line {item.line} read different "
                f"samples ({ia['distinct']} and {ib['distinct']} distinct indices, not the same "
                "set)",
            )
        if a.get("samples") != b.get("samples"):
            return Verdict(
                "refuted",
                f"in {_job_text()}, the two workers' datasets at line {item.line} hold different "
                "samples",
            )
        if ia["distinct"] == length:
            batch = "; both saw the same first batch" if same_batch else ""
            return Verdict(
                "confirmed",
                f"in {_job_text()}, both workers' loaders of line {item.line} go through all "
                f"{length} samples of the same dataset in one epoch (the same index set, the "
                f"same first and last sample){batch}",
            )
        return inconclusive(
            f"both workers read the same {ia['distinct']} of {length} samples: the same part, "
            "but not the whole dataset"
        )
    if same_batch:
        return Verdict(
            "confirmed",
            f"in {_job_text()}, both workers' first batch from the loader of line {item.line} "
            "is the same",
        )
    return inconclusive(
        f"the loader of line {item.line} gave the two workers different first batches and its "
        "epoch cannot be enumerated (shuffling may explain the difference)"
    )


# --- a launch script's job ------------------------------------------------------------------


def _normal(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    if name == URI:
        return "loopback" if value.lower() in _LOOPBACK else value.lower()
    return str(int(value)) if value.isdigit() else value


def _reference(processes: list[dict[str, Any]], name: str) -> str | None:
    values = [_normal(name, p["env"].get(name)) for p in processes if p["env"].get(name)]
    scheduler = [
        _normal(name, p["env"].get(name))
        for p in processes
        if p.get("role") == "scheduler" and p["env"].get(name)
    ]
    if scheduler:
        return scheduler[0]
    return Counter(values).most_common(1)[0][0] if values else None


def _plural(n: int, role: str) -> str:
    return f"{n} {role}" + ("" if n == 1 else "s")


def _wanted(refs: dict[str, str | None], name: str) -> int:
    value = refs.get(name) or "1"
    return int(value) if value.isdigit() else 1


def _expand(processes: list[dict[str, Any]], refs: dict[str, str | None]) -> list[dict[str, Any]]:
    """One entry per process: a known count repeats its entry; entries whose count is unknown
    (a per-host script, a Dockerfile) make up what the scheduler counts for their role. A
    process without DMLC_ROLE stands where a worker would."""
    out: list[dict[str, Any]] = []
    for role, name in (("scheduler", None), ("server", NUM_SERVER), ("worker", NUM_WORKER)):
        mine = [p for p in processes if (p.get("role") or "worker") == role]
        unknown = [p for p in mine if not p.get("count")]
        started = [p for p in mine if p.get("count") for _ in range(int(p["count"]))]
        if unknown:
            wanted = _wanted(refs, name) if name else len(unknown)
            extra = max(wanted - len(started), len(unknown))
            started += [unknown[i % len(unknown)] for i in range(extra)]
        out += started
    return out


def _members(
    processes: list[dict[str, Any]], complete_scheduler: bool = True
) -> tuple[list[Member], list[str]] | str:
    """The job's processes as cluster members (addresses and ports mapped to loopback), and
    what was added to complete it; a string when it cannot be run here."""
    refs = {name: _reference(processes, name) for name in SETTINGS}
    notes: list[str] = []
    expanded = _expand(processes, refs)
    roles = Counter(p.get("role") or "worker" for p in expanded)
    complete: list[dict[str, Any]] = []
    ref_env = {k: v for k, v in refs.items() if v is not None}
    if not roles.get("scheduler") and complete_scheduler:
        complete.append({"role": "scheduler", "env": dict(ref_env)})
        notes.append("a scheduler")
    for role, name in (("server", NUM_SERVER), ("worker", NUM_WORKER)):
        if not roles.get(role):
            count = _wanted(refs, name)
            complete.extend({"role": role, "env": dict(ref_env)} for _ in range(count))
            notes.append(_plural(count, role))
    everyone = expanded + complete
    if len(everyone) > MAX_MEMBERS:
        return f"the job has {len(everyone)} processes; --verify starts at most {MAX_MEMBERS}"
    uris = sorted({_normal(URI, p["env"].get(URI)) or refs[URI] or "loopback" for p in everyone})
    address = {u: f"127.0.0.{i + 1}" for i, u in enumerate(uris)}
    port_values = sorted(
        {_normal(PORT, p["env"].get(PORT)) or refs[PORT] or "9091" for p in everyone}
    )
    ports = dict(zip(port_values, free_ports(len(port_values))))
    members = []
    for p in everyone:
        env: dict[str, str] = {}
        for name in SETTINGS:
            if name not in p["env"]:
                continue  # not set for this process: it gets none
            value = _normal(name, p["env"][name]) or refs[name]
            if value is None:
                continue
            if name == URI:
                env[name] = address[value]
            elif name == PORT:
                env[name] = str(ports[value])
            else:
                env[name] = value
        role = p.get("role") or ""
        job = {"kind": "probe"} if role not in ("scheduler", "server") else None
        members.append(Member(role, env, job))
    return members, notes


def _outcome(results: list[MemberResult], limit: float) -> tuple[bool, str]:
    """(joined, what happened) for a probe job."""
    workers = [r for r in results if r.role not in ("scheduler", "server")]
    errors = [r for r in workers if r.payload.get("status") == "error"]
    if errors:
        return False, f"a worker stopped with {_exc(errors[0].payload['exception'])}"
    waiting = [r for r in workers if r.payload.get("status") in (None, "creating")]
    if waiting:
        return False, (
            f"{len(waiting)} of {len(workers)} workers never joined (still waiting in "
            f"`mx.kv.create` when the job was stopped after {limit:g}s)"
        )
    stuck = [r for r in workers if r.payload.get("status") != "finished"]
    if stuck:
        return False, f"{len(stuck)} of {len(workers)} workers joined but never got an answer"
    counts = {r.payload.get("num_workers") for r in workers}
    if counts != {len(workers)}:
        shown = ", ".join(str(c) for c in sorted(counts, key=str))
        return False, (f"all {len(workers)} workers joined, but they report num_workers {shown}")
    seconds = max(float(r.payload.get("seconds", 0)) for r in workers)
    return True, f"all {len(workers)} workers joined within {seconds:g}s and pushed and pulled"


def _control(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The job with the finding's disagreement resolved."""
    processes = [
        {"role": p.get("role"), "count": p.get("count"), "env": dict(p["env"])} for p in data["job"]
    ]
    check = data.get("check")
    name = data.get("setting")
    if check in ("value", "missing") and name:
        ref = _reference(processes, name)
        for p in processes:
            if ref is not None:
                p["env"][name] = ref if name != URI or ref != "loopback" else "127.0.0.1"
    elif check == "role":
        for p in processes:
            p["role"] = p.get("role") or "worker"
    elif check == "count" and name:
        scheduler = next((p for p in processes if p.get("role") == "scheduler"), None)
        role = "worker" if name == NUM_WORKER else "server"
        wanted = (scheduler or {}).get("env", {}).get(name) or "1"
        kept = [p for p in processes if p.get("role") != role]
        template = next((p for p in processes if p.get("role") == role), None)
        env = dict(template["env"]) if template else dict((scheduler or {}).get("env", {}))
        count = int(wanted) if wanted.isdigit() else 1
        processes = kept + [{"role": role, "count": 1, "env": dict(env)} for _ in range(count)]
    return processes


def argv_verdict(
    item: Item,
    data: dict[str, Any],
    *,
    memory_mb: int,
    timeout: float,
    confinement: Confinement | None = None,
) -> Verdict:
    """Run the launched script with the launch's arguments: argparse's answer."""
    script = str(data["script"])
    argv = [str(a) for a in data.get("argv", [])]
    option = str(data.get("option", ""))
    job = {
        "kind": "script",
        "file": os.path.realpath(script),
        "roots": [os.path.dirname(os.path.realpath(script))],
        "argv": argv,
        "steps": 1,
        "watch": [],
    }
    result = run_job(job, timeout=timeout, memory_mb=memory_mb, confinement=confinement)
    shown = " ".join([os.path.basename(script), *argv])
    if not result.ok:
        return inconclusive(f"`{shown}` could not be run: {result.reason}")
    exc = result.payload.get("exception") or {}
    wording = re.search(r"error: (unrecognized arguments: .*)", result.stderr)
    if exc.get("type") == "SystemExit" and wording and option in wording.group(1):
        return Verdict(
            "confirmed", f"`{shown}` stopped at start: SystemExit 2, {wording.group(0).strip()}"
        )
    if exc.get("type") == "SystemExit":
        return inconclusive(f"`{shown}` exited ({exc.get('message')}) for another reason")
    if "unrecognized" in item.finding.message and "parse_known_args" not in item.finding.message:
        return Verdict("refuted", f"`{shown}` ran past its argument parsing")
    return inconclusive(
        "parse_known_args() leaves the option over without a trace a run could show"
    )


def launch_verdict(
    item: Item, *, memory_mb: int, timeout: float, confinement: Confinement | None = None
) -> Verdict:
    data: dict[str, Any] = dict(item.finding.data or {})
    if data.get("check") == "argv":
        return argv_verdict(
            item, data, memory_mb=memory_mb, timeout=timeout, confinement=confinement
        )
    if data.get("check") == "launcher":
        return inconclusive(
            "launch.py's tracker (dmlc_tracker) sets DMLC_NUM_WORKER/DMLC_NUM_SERVER for the "
            "processes it starts; --verify does not run launchers"
        )
    if not data.get("job"):
        return inconclusive("the finding carries no job to start")
    job: list[dict[str, Any]] = list(data["job"])
    built = _members(job, complete_scheduler=data.get("check") != "scheduler")
    if isinstance(built, str):
        return inconclusive(built)
    members, added = built
    limit = min(timeout, LAUNCH_TIMEOUT)
    joined, what = _outcome(
        run_cluster(members, timeout=limit, memory_mb=memory_mb, confinement=confinement), limit
    )
    shape = ", ".join(
        _plural(n, r) if r else f"{n} without DMLC_ROLE" for r, n in _roles(members).items()
    )
    completed = f" (completed with {', '.join(added)} as its settings imply)" if added else ""
    started = f"started as the launch files start it ({shape}){completed}, with a probe in place of the program, on loopback addresses"
    if joined:
        return Verdict("refuted", f"{started}: {what}")
    control = _members(_control(data))
    if isinstance(control, str):
        return inconclusive(control)
    fixed, why = _outcome(
        run_cluster(control[0], timeout=limit, memory_mb=memory_mb, confinement=confinement),
        limit,
    )
    if not fixed:
        return inconclusive(
            f"the job fails as the script starts it ({what}), but also with the disagreement "
            f"resolved ({why}): something else stops it here"
        )
    return Verdict("confirmed", f"{started}: {what}; with the disagreement resolved, {why}")


def _roles(members: list[Member]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for m in members:
        counts[m.role] = counts.get(m.role, 0) + 1
    return counts
