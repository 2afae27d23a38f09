"""MXL801 inconsistent-dmlc-settings: checks that the processes of one parameter-server job —
as a project's launch scripts, Dockerfiles and `os.environ` writes start them — agree on
`DMLC_PS_ROOT_URI`, `DMLC_PS_ROOT_PORT`, `DMLC_NUM_WORKER` and `DMLC_NUM_SERVER`, that each of
them has a `DMLC_ROLE`, and that a script starts as many workers and servers as its scheduler
waits for.

The function after the class decides and words its findings over what `_launches.py` read;
`launch_checker.py` runs it. Its tests are the examples below (run by
`tests/test_distributed.py`), `tests/test_distributed.py` and `tests/snapshots/MXL801.txt`.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from mxlint.rule import Example, Finding, Location, Rule, Runtime, Valid
from mxlint.rules.distributed._dmlc import NUM_SERVER, NUM_WORKER, PORT, SETTINGS, URI

if TYPE_CHECKING:
    from mxlint.rules.distributed._launches import LaunchFile, Process, Setting

_NOT_FLAKE8 = """
        It reads launch scripts (`*.sh`), Dockerfiles and the `os.environ` writes of Python
        files together, so it runs only under `mxlint check`: the flake8 plugin sees one Python
        file at a time.
"""


class InconsistentDmlcSettings(Rule):
    code = "MXL801"
    name = "inconsistent-dmlc-settings"
    message = "{detail}"
    kind = "launch"
    runtime = Runtime("dist")
    what = (
        """
        Checks that the processes of one parameter-server job agree on their `DMLC_*`
        settings. It reads the processes a project starts — commands of a shell script run
        with `DMLC_ROLE` (`export DMLC_ROLE=worker`, `DMLC_ROLE=server python
        train.py &`, `env ...`, `docker run -e ...`), Dockerfile stages that set `ENV
        DMLC_ROLE`, Python files that write `os.environ["DMLC_ROLE"]` — and reports a
        `DMLC_PS_ROOT_URI`, `DMLC_PS_ROOT_PORT`, `DMLC_NUM_WORKER` or `DMLC_NUM_SERVER` that one
        of them gets differently from the scheduler (or from the others), a setting given to
        some processes of a script and not to another, a process of the job started without
        `DMLC_ROLE`, a script whose scheduler waits for more (or fewer) workers or servers
        than the script starts with it, servers and workers on this machine whose scheduler
        no file of the project starts, and a `DMLC_NUM_WORKER`/`DMLC_NUM_SERVER` exported
        before MXNet's `launch.py -n N -s S`, which sets its own.
    """
        + _NOT_FLAKE8
    )
    why = """
        Every process of an MXNet parameter-server job reads these variables when it creates
        its kvstore (or, for servers and the scheduler, when it imports mxnet), and ps-lite
        trusts them. On MXNet 1.9.1: a worker or server that looks for the scheduler at another
        address or port never joins, and the scheduler waits for it forever; a scheduler that
        counts more workers or servers than are started waits forever too; a worker that counts
        other servers sends keys to servers that do not exist and dies or hangs; a worker that
        counts more workers than the scheduler joins, but reports that count as
        `kv.num_workers`, so data split by it leaves parts unread; a process without
        `DMLC_ROLE` stops with "Check notnull: DMLC_ROLE". None of these is an error message
        that names the mismatch: the job hangs at start, usually on a cluster.

        A script's processes are the ones it starts together, until a `wait` or a process run
        in the foreground; scripts of one directory that each start some of the roles (a
        `scheduler.sh`, a `worker.sh`) are read as one job. Values only known at run time
        (`$HOST`, `$(hostname)`), launches in loops over computed lists, in functions or in
        branches are not counted, and a script with two schedulers at once is not judged.
        `localhost` and `127.0.0.1` are the same address.
    """
    example = """
        # run_local.sh
        export DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT=9091
        export DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=2
        DMLC_ROLE=scheduler python train.py &
        DMLC_ROLE=server python train.py &
        DMLC_ROLE=worker DMLC_PS_ROOT_PORT=9092 python train.py &
        DMLC_ROLE=worker python train.py &
        wait
    """
    use_instead = """
        # run_local.sh
        export DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT=9091
        export DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=2
        DMLC_ROLE=scheduler python train.py &
        DMLC_ROLE=server python train.py &
        DMLC_ROLE=worker python train.py &
        DMLC_ROLE=worker python train.py &
        wait
    """
    fix_safety = """
        No automatic fix: which of two disagreeing values is the intended one (and on which
        host a process runs) is the project's decision.
    """
    invalid = (
        Example(
            "export DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT=9091\n"
            "export DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=2\n"
            "DMLC_ROLE=scheduler python train.py &\n"
            "DMLC_ROLE=server python train.py &\n"
            "DMLC_ROLE=worker DMLC_PS_ROOT_PORT=9092 python train.py &\n"
            "DMLC_ROLE=worker python train.py &\n"
            "wait\n",
            line=5,
            filename="run_local.sh",
        ),
        Example(
            "export DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT=9091\n"
            "export DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=2\n"
            "DMLC_ROLE=scheduler python train.py &\n"
            "DMLC_ROLE=server python train.py &\n"
            "DMLC_ROLE=worker python train.py\n",
            line=2,
            filename="run_local.sh",
        ),
        Example(
            "#!/bin/sh\n"
            "export DMLC_ROLE=worker\n"
            "export DMLC_PS_ROOT_URI=10.0.0.1 DMLC_PS_ROOT_PORT=9000\n"
            "export DMLC_NUM_WORKER=4 DMLC_NUM_SERVER=2\n"
            "python train.py --kvstore dist_sync\n",
            line=4,
            filename="worker.sh",
            project=(
                (
                    "scheduler.sh",
                    "#!/bin/sh\n"
                    "export DMLC_ROLE=scheduler\n"
                    "export DMLC_PS_ROOT_URI=10.0.0.1 DMLC_PS_ROOT_PORT=9000\n"
                    "export DMLC_NUM_WORKER=2 DMLC_NUM_SERVER=2\n"
                    "python train.py\n",
                ),
            ),
        ),
        Example(
            "export DMLC_NUM_WORKER=4\n"
            "python ../../tools/launch.py -n 2 --launcher local python train.py --kvstore dist_sync\n",
            line=1,
            filename="launch_local.sh",
        ),
    )
    valid = (
        Valid(
            "export DMLC_PS_ROOT_URI=localhost DMLC_PS_ROOT_PORT=9091\n"
            "export DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=2\n"
            "DMLC_ROLE=scheduler DMLC_PS_ROOT_URI=127.0.0.1 python train.py &\n"
            "DMLC_ROLE=server python train.py &\n"
            "for i in 1 2; do\n"
            "  DMLC_ROLE=worker python train.py &\n"
            "done\n"
            "wait\n",
            filename="run_local.sh",
        ),
        # Two jobs one after the other, each on its own port.
        Valid(
            "export DMLC_PS_ROOT_URI=127.0.0.1 DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=1\n"
            "export DMLC_PS_ROOT_PORT=9000\n"
            "DMLC_ROLE=scheduler python train.py &\n"
            "DMLC_ROLE=server python train.py &\n"
            "DMLC_ROLE=worker python train.py --kvstore dist_sync\n"
            "export DMLC_PS_ROOT_PORT=9100\n"
            "DMLC_ROLE=scheduler python train.py &\n"
            "DMLC_ROLE=server python train.py &\n"
            "DMLC_ROLE=worker python train.py --kvstore dist_async\n",
            filename="run_both.sh",
        ),
        # The number of workers is only known at run time.
        Valid(
            "export DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT=9091\n"
            "export DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=$1\n"
            "DMLC_ROLE=scheduler python train.py &\n"
            "DMLC_ROLE=server python train.py &\n"
            "for i in $(seq 1 $1); do DMLC_ROLE=worker python train.py & done\n"
            "wait\n",
            filename="run_n.sh",
        ),
        Valid(
            "python ../../tools/launch.py -n 2 -s 2 --launcher local "
            "python train.py --kvstore dist_sync\n",
            filename="launch_local.sh",
        ),
    )


# --- the judgment ---------------------------------------------------------------------------


def _where(process: Process, path: str) -> str:
    """Where a process is started, as the reader of `path` finds it."""
    if process.path == path:
        return f"line {process.line}"
    try:
        shown = os.path.relpath(process.path, os.path.dirname(path) or ".")
    except ValueError:
        shown = process.path
    return f"{shown}:{process.line}"


def _count(n: int | str, role: str) -> str:
    return f"{n} {role}" + ("" if str(n) == "1" else "s")


def _describe(process: Process) -> str:
    return process.role or "process"


_CONSEQUENCE = {
    URI: "a process that looks for the scheduler at another address never joins, and the "
    "job waits for it forever",
    PORT: "a process that looks for the scheduler on another port never joins, and the job "
    "waits for it forever",
    NUM_WORKER: "every process of one job must count the same workers: the scheduler waits "
    "for its own count, and a process that counts otherwise hangs or reports a wrong "
    "`kv.num_workers`",
    NUM_SERVER: "every process of one job must count the same servers: the scheduler waits "
    "for its own count, and a worker that counts more servers sends keys to servers that do "
    "not exist",
}


class _Reports:
    """Findings by position: one per assignment, however many processes it reaches."""

    def __init__(self) -> None:
        self.found: dict[tuple[str, int, int], Finding] = {}

    def add(
        self, path: str, line: int, column: int, length: int, detail: str, data: dict[str, object]
    ) -> None:
        key = (path, line, column)
        if line <= 0 or key in self.found:
            return
        rule = InconsistentDmlcSettings
        self.found[key] = Finding(
            rule.code,
            rule.format(detail=detail),
            path,
            Location(line, column),
            Location(line, column + max(length, 1)),
            data=data,
        )

    def at_program(self, p: Process, detail: str, data: dict[str, object]) -> None:
        """A finding on the first word of the command that starts the process."""
        self.add(p.path, p.line, p.column, len((p.program or "x").split()[0]), detail, data)


def _job(processes: Iterable[Process], counted: bool = True) -> list[dict[str, object]]:
    """The processes as `--verify` starts them again: role, count (None when the script may
    run on several hosts), DMLC_* values."""
    out: list[dict[str, object]] = []
    for p in processes:
        env: dict[str, str | None] = {
            name: s.value for name, s in p.settings.items() if name in SETTINGS
        }
        count = p.count if counted else None
        out.append({"role": p.role, "count": count, "env": env, "line": p.line})
    return out


def _reference(entries: list[tuple[Process, Setting]]) -> tuple[Process, str] | None:
    """The value the others are judged against: the scheduler's, else the most common one
    (the first launched wins a tie)."""
    schedulers = {s.normalized() for p, s in entries if p.role == "scheduler"}
    if len(schedulers) == 1:
        value = next(iter(schedulers))
        proc = next(p for p, s in entries if p.role == "scheduler")
        return (proc, value) if value is not None else None
    if schedulers:
        return None  # two schedulers that disagree: not one job
    counts = Counter(s.normalized() for _, s in entries)
    top = max(counts.values())
    for p, s in entries:
        if counts[s.normalized()] == top:
            value = s.normalized()
            return (p, value) if value is not None else None
    return None


def _compare(processes: list[Process], reports: _Reports, check_missing: bool) -> None:
    """Within one script's phase (`check_missing`), and across the scripts of a directory
    (whose processes may each run on several hosts)."""
    job = _job(processes, counted=check_missing)
    unknown_roles = any(p.role is None and p.role_setting is not None for p in processes)
    if unknown_roles and not any(p.role == "scheduler" for p in processes):
        return  # the process whose role is not known may be the scheduler
    for name in SETTINGS:
        entries = [
            (p, p.settings[name])
            for p in processes
            if name in p.settings and p.settings[name].value is not None and p.role is not None
        ]
        if len({s.normalized() for _, s in entries}) > 1:
            ref = _reference(entries)
            if ref is None:
                continue
            ref_proc, ref_value = ref
            ref_setting = ref_proc.settings[name]
            for p, s in entries:
                if s.normalized() == ref_value:
                    continue
                detail = (
                    f"`{name}={s.value}` for the {_describe(p)} started at {_where(p, s.path)} "
                    f"disagrees with `{name}={ref_setting.value}` for the "
                    f"{_describe(ref_proc)} at {_where(ref_proc, s.path)}: {_CONSEQUENCE[name]}"
                )
                reports.add(
                    s.path,
                    s.line,
                    s.column,
                    s.span(),
                    detail,
                    {"check": "value", "setting": name, "job": job, "fix": {name: ref_value}},
                )
        if not check_missing:
            continue
        given = [(p, p.settings[name]) for p in processes if name in p.settings]
        inline = [(p, s) for p, s in given if s.inline and s.value is not None]
        if not inline or len(given) == len(processes):
            continue
        source, setting = inline[0]
        for p in processes:
            if name in p.settings or p.opaque or p.role is None:
                continue
            detail = (
                f"the {_describe(p)} started here gets no `{name}`, which the "
                f"{_describe(source)} at {_where(source, p.path)} is given (`{name}="
                f"{setting.value}`): it runs with whatever the caller's environment holds, or "
                f'MXNet stops with "Check notnull: {name}"'
            )
            reports.at_program(p, detail, {"check": "missing", "setting": name, "job": job})


def _roles(processes: list[Process], reports: _Reports) -> None:
    """A process of the job (the same program as the others) started without DMLC_ROLE."""
    job = _job(processes)
    for p in processes:
        if p.role is not None or p.role_setting is not None:
            continue
        others = [q for q in processes if q.role is not None and q.program == p.program]
        if not others:
            continue
        roles = ", ".join(sorted({q.role for q in others if q.role}))
        detail = (
            f"`{p.program}` is started here with DMLC_* settings but no `DMLC_ROLE` (the "
            f"script starts it as {roles} at {_where(others[0], p.path)}): MXNet stops with "
            '"Check notnull: DMLC_ROLE" when it creates the kvstore'
        )
        reports.at_program(p, detail, {"check": "role", "job": job})


def _counts(
    processes: list[Process], reports: _Reports, others: list[Process], uncounted: bool
) -> None:
    """A script's one scheduler waits for the workers and servers it counts; the script
    must start that many with it (unless another file may start some: same port, or none)."""
    schedulers = [p for p in processes if p.role == "scheduler"]
    if len(schedulers) != 1 or uncounted:
        return
    if any(p.count is None or not p.certain or p.role is None for p in processes):
        return
    scheduler = schedulers[0]
    port = scheduler.value(PORT)
    for other in others:
        if other.role in ("worker", "server") and other.value(PORT) in (None, port):
            return  # another file may start processes of this job
    job = _job(processes)
    for role, name in (("worker", NUM_WORKER), ("server", NUM_SERVER)):
        setting = scheduler.settings.get(name)
        if setting is None or setting.normalized() is None:
            continue
        expected = setting.normalized() or ""
        if not expected.isdigit():
            continue
        started = sum(p.count or 0 for p in processes if p.role == role)
        if started == int(expected):
            continue
        if started < int(expected):
            consequence = f"the scheduler waits for the missing {role}s and the job never starts"
        else:
            consequence = f"{started - int(expected)} of them are not part of the job it admits"
        detail = (
            f"`{name}={setting.value}`: the scheduler started at "
            f"{_where(scheduler, setting.path)} waits for {_count(expected, role)}, but the "
            f"script starts {_count(started, role)} with it: {consequence}"
        )
        reports.add(
            setting.path,
            setting.line,
            setting.column,
            setting.span(),
            detail,
            {"check": "count", "setting": name, "job": job},
        )


def _no_scheduler(processes: list[Process], reports: _Reports, everything: list[Process]) -> None:
    """Servers and workers of a job on this machine whose scheduler nothing starts (a
    scheduler on another port, or `launch.py`'s own, is another job's)."""
    ports = {p.value(PORT) for p in processes}
    if any(p.role == "scheduler" and p.value(PORT) in ports | {None} for p in everything):
        return
    roles = {p.role for p in processes}
    if not {"server", "worker"} <= roles or None in roles:
        return
    if not all(p.value(URI) == "loopback" for p in processes):
        return
    first = processes[0]
    uri = first.settings[URI]
    detail = (
        f"the script starts the servers and workers of a job on this machine "
        f"(`{URI}={uri.value}`), but nothing in the project starts its scheduler (no "
        "`DMLC_ROLE=scheduler`): they wait for it, and the job never starts"
    )
    reports.add(
        first.path,
        first.line,
        first.column,
        len((first.program or "x").split()[0]),
        detail,
        {"check": "scheduler", "job": _job(processes)},
    )


def _launchers(found: LaunchFile, reports: _Reports) -> None:
    for launcher in found.launchers:
        for name, started in ((NUM_WORKER, launcher.workers), (NUM_SERVER, launcher.servers)):
            setting = launcher.exported.get(name)
            if started is None or setting is None or setting.normalized() is None:
                continue
            if setting.normalized() == str(started):
                continue
            role = "worker" if name == NUM_WORKER else "server"
            detail = (
                f"`{name}={setting.value}` is exported for the job, but `launch.py` (line "
                f"{launcher.line}) starts {_count(started, role)} and sets `{name}={started}` "
                f"for every process: the exported value is overridden, and the job runs with "
                f"{_count(started, role)}, not {setting.value}"
            )
            reports.add(
                setting.path,
                setting.line,
                setting.column,
                setting.span(),
                detail,
                {"check": "launcher", "setting": name},
            )


def check(files: list[LaunchFile]) -> list[Finding]:
    """Every disagreement among the processes of the run's jobs."""
    reports = _Reports()
    everything = [p for f in files for p in f.processes]
    partial_units: dict[str, list[list[Process]]] = {}
    for found in files:
        _launchers(found, reports)
        phases: dict[int, list[Process]] = {}
        for p in found.processes:
            phases.setdefault(p.phase, []).append(p)
        for phase, processes in phases.items():
            schedulers = [p for p in processes if p.role == "scheduler"]
            if len(schedulers) > 1:
                continue  # two jobs at once: which process belongs to which is not known
            if processes[0].source != "dockerfile":
                _compare(processes, reports, check_missing=True)
                _roles(processes, reports)
                outside = [p for p in everything if p.path != found.path]
                _counts(processes, reports, outside, phase in found.uncounted_phases)
                _no_scheduler(processes, reports, everything)
            roles = {p.role for p in processes if p.role is not None}
            if len(roles) < 3:
                directory = os.path.dirname(os.path.normpath(found.path))
                partial_units.setdefault(directory, []).append(processes)
        # One script for every host (`case $ROLE in scheduler) ...`): its branches start the
        # parts of one job, each where the script runs.
        alternatives = [p for p in found.processes if not p.certain and p.role is not None]
        if (
            len({p.role for p in alternatives}) > 1
            and sum(1 for p in alternatives if p.role == "scheduler") <= 1
        ):
            _compare(alternatives, reports, check_missing=False)
    for units in partial_units.values():
        paths = {u[0].path for u in units}
        if len(paths) < 2:
            continue
        processes = [p for u in units for p in u if p.role is not None]
        if len({p.role for p in processes}) < 2:
            continue
        if sum(1 for p in processes if p.role == "scheduler") > 1:
            continue
        _compare(processes, reports, check_missing=False)
    return sorted(reports.found.values(), key=Finding.sort_key)
