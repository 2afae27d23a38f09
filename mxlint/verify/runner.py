"""The verify stage of a run: plan tasks, run their subprocesses in parallel, give verdicts."""

from __future__ import annotations

import functools
import os
import re
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mxlint.fixes import apply_edits
from mxlint.rule import Finding, FindingKey, Runtime
from mxlint.verify import bench, block_verdicts, dist, interpret, onnx_verdicts, plan, syncs
from mxlint.verify.gpu import nvidia_smi_gpus
from mxlint.verify.isolation import Sandbox, detect
from mxlint.verify.model import Verdict, inconclusive
from mxlint.verify.sandbox import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, ChildResult, Confinement
from mxlint.verify.skips import skip_statements
from mxlint.verify.slots import Slots

THREADED = syncs.THREADED
#: Codes proven by exporting and importing back (`verify/lifecycle.py`) as well as by what
#: the line raises.
ROUNDTRIP_CODES = frozenset({"MXL704"})


@dataclass
class VerifyOptions:
    timeout: float = DEFAULT_TIMEOUT
    memory_mb: int = DEFAULT_MEMORY_MB
    jobs: int | None = None
    shard: tuple[int, int] = (1, 1)
    bench: bool = True
    bench_pairs: int = 30
    steps: int = 8
    progress: bool = False
    #: `[tool.mxlint.verify]`: blocks.<Class> = {args, kwargs, input-shapes}, argv, ...
    config: dict[str, Any] = field(default_factory=dict)
    #: The sandbox backend (`isolation.CHOICES`); "auto" takes the strongest that works.
    sandbox: str = "auto"
    #: Environment variables the jobs keep (`pass-env`), paths they may read (`readable`).
    pass_env: tuple[str, ...] = ()
    readable: tuple[str, ...] = ()


@dataclass
class VerifyResult:
    verdicts: dict[FindingKey, Verdict]
    tasks: int
    gpus: int
    sandbox: Sandbox = field(default_factory=lambda: Sandbox("none"))
    #: Task key (a verdict's `job`) -> what its jobs' code tried outside the sandbox.
    escapes: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def _payload(result: ChildResult) -> dict[str, Any]:
    if result.ok:
        return result.payload
    return {
        "status": "harness-error",
        "exception": {"type": "Inconclusive", "message": result.reason, "frames": []},
        "child_failed": result.reason,
    }


def _rewrite_source(items: Sequence[plan.Item]) -> str | None:
    """The file with the fixes of these findings applied (None without any fix)."""
    edits = [e for it in items if it.finding.fix for e in it.finding.fix.edits]
    if not edits:
        return None
    source = Path(items[0].path).read_text(encoding="utf-8")
    try:
        return apply_edits(source, edits)
    except Exception:  # noqa: BLE001 - overlapping fixes: no rewrite to run
        return None


def _child_failed(
    items: Sequence[plan.Item], result: ChildResult
) -> dict[FindingKey, Verdict] | None:
    if result.ok:
        return None
    return {it.key: inconclusive(result.reason) for it in items}


#: Re-runs of a block to unmask findings behind an earlier graph break.
ISOLATION_ROUNDS = 3


def run_block(task: plan.Task, slots: Slots, options: VerifyOptions) -> dict[FindingKey, Verdict]:
    """Run the block; when a confirmed break with a fix masks later findings, apply that fix
    (only it) and run again, so each finding gets its own verdict. Lines no run reached are
    tried again with a constructor flag (a boolean with a default) that reaches them."""
    job = dict(task.job)
    if job["mode"] == "onnx":
        result = slots.run(job, options)
        return _child_failed(task.items, result) or onnx_verdicts.verdicts(
            task.items, result.payload
        )
    if job["mode"] == "hybrid":
        job["rewrite_source"] = _rewrite_source(task.items)
    verdicts, payload = _isolate(job, list(task.items), slots, options)
    never = [it for it in task.items if "never ran" in verdicts[it.key].reason]
    for variant in (payload or {}).get("variants", []):
        items = [it for it in never if it.line in variant.get("reaches", [])]
        if not items:
            continue
        varied = dict(job, rewrite_source=None)
        if "kwargs" in variant:
            varied["ctor_override"] = variant["kwargs"]
        if variant.get("all_inputs"):
            varied["all_inputs"] = True
        found, _ = _isolate(varied, items, slots, options)
        for it in items:
            if found[it.key].verdict != "inconclusive":
                verdicts[it.key] = found[it.key]
        never = [it for it in never if it not in items]
    rewrite = next((v.rewrite for v in verdicts.values() if v.rewrite), None)
    for it in task.items:  # the rewrite (all fixes together) ran in the first round only
        if it.finding.fix is not None and it.key in verdicts:
            verdicts[it.key].rewrite = verdicts[it.key].rewrite or rewrite
    if rewrite is not None and rewrite.verified and options.bench:
        bench_job = dict(job, kind="bench", bench={"pairs": options.bench_pairs, "warmup": 5})
        results = [_payload(slots.run(bench_job, options)) for _ in range(2)]
        bench.summarize(results, rewrite)
        for v in verdicts.values():
            if v.rewrite is not None:
                v.rewrite = rewrite
    return verdicts


def _isolate(
    job: dict[str, Any], items: list[plan.Item], slots: Slots, options: VerifyOptions
) -> tuple[dict[FindingKey, Verdict], dict[str, Any] | None]:
    """Rounds of block runs; each round applies the fixes of the breaks that masked others."""
    verdicts: dict[FindingKey, Verdict] = {}
    pending: list[plan.Item] = list(items)
    applied: list[plan.Item] = []
    first: dict[str, Any] | None = None
    for round_ in range(ISOLATION_ROUNDS + 1):
        run = dict(job)
        if applied:
            run["source"], run["rewrite_source"] = _rewrite_source(applied), None
        result = slots.run(run, options)
        failed = _child_failed(pending, result)
        if failed:
            verdicts.update(failed)
            break
        first = first if first is not None else result.payload
        found = block_verdicts.block_verdicts(pending, result.payload)
        # Masked lines, and lines only inferred past a break: with the break fixed, they run.
        masked = [
            it
            for it in pending
            if "masked" in found[it.key].reason or found[it.key].basis == "inferred"
        ]
        breakers = [
            it
            for it in pending
            if found[it.key].verdict == "confirmed" and it.finding.fix is not None
        ]
        for it in pending:
            earlier = verdicts.get(it.key)
            if applied and found[it.key].verdict == "inconclusive" and earlier is not None:
                continue  # what the earlier round inferred stands
            if applied and it not in masked:
                lines = ", ".join(str(a.line) for a in applied)
                found[it.key].evidence += f" (after applying the fixes at lines {lines})"
            verdicts[it.key] = found[it.key]
        if not masked or not breakers or round_ == ISOLATION_ROUNDS:
            break
        applied += breakers
        pending = masked
    return verdicts, first


def _checks(how: Runtime | None, check: str) -> bool:
    return how is not None and how.check == check


def run_program(task: plan.Task, slots: Slots, options: VerifyOptions) -> dict[FindingKey, Verdict]:
    """A script task (or a call task: a function called directly); a script's findings it
    left without a definite verdict get a second chance as direct calls of their functions."""
    verdicts: dict[FindingKey, Verdict] = {}
    distributed = [it for it in task.items if _checks(plan.runtime(it.finding.code), "dist")]
    if distributed:
        with slots.reserved():
            verdicts.update(
                dist.script_verdicts(
                    task,
                    distributed,
                    timeout=options.timeout,
                    memory_mb=options.memory_mb,
                    steps=options.steps,
                    confinement=slots.confinement,
                )
            )
    items = [it for it in task.items if it not in distributed]
    verdicts.update(_program_verdicts(items, task, task.job, slots, options))
    if task.job["kind"] != "script":
        return verdicts
    missed: dict[tuple[str, str], list[plan.Item]] = {}
    for it in items:
        measured = _checks(plan.runtime(it.finding.code), "underflow") and (
            interpret.MEASURED_UNDERFLOW in verdicts[it.key].reason
        )  # a direct call runs without the program's `amp.init()`
        if it.target is not None and verdicts[it.key].verdict == "inconclusive" and not measured:
            missed.setdefault((it.path, it.target["qualname"]), []).append(it)
    calls = {
        key: _in_parallel(
            slots,
            functools.partial(_called, group, task, slots, options),
        )
        for key, group in missed.items()
    }
    for (_path, qualname), group in missed.items():
        found = calls[(_path, qualname)].result()
        for it in group:
            before = verdicts[it.key]
            after = found[it.key]
            if after.verdict != "inconclusive":
                after.reached += (
                    f" (the entry script {Path(task.job['file']).name} did not settle it: "
                    f"{before.reason})"
                )
                verdicts[it.key] = after
            else:
                before.reason += f"; called {qualname}() directly: {after.reason}"
    _past_earlier_breaks(items, verdicts, slots, options)
    for it in items:
        verdict = verdicts[it.key]
        if not verdict.reached.startswith("called"):
            entry = f"ran the entry script {Path(task.job['file']).name}"
            verdict.reached = f"{entry}, after {verdict.reached}" if verdict.reached else entry
    return verdicts


def _past_earlier_breaks(
    items: list[plan.Item],
    verdicts: dict[FindingKey, Verdict],
    slots: Slots,
    options: VerifyOptions,
) -> None:
    """Findings of a function that never ran their line because another finding's line in it
    raised first: the function is called again with those earlier lines skipped, and again
    while that settles more of them (three failing exports in a row)."""
    for _round in range(SKIP_ROUNDS):
        raised: dict[tuple[str, str], set[int]] = {}
        blocked: dict[tuple[str, str], list[plan.Item]] = {}
        for it in items:
            if it.target is None:
                continue
            where = (it.path, it.target["qualname"])
            verdict = verdicts[it.key]
            if verdict.verdict == "confirmed" and verdict.basis == "raised":
                raised.setdefault(where, set()).add(it.line)
            elif verdict.verdict == "inconclusive" and "failed before reaching line" in (
                verdict.reason
            ):
                blocked.setdefault(where, []).append(it)
        progress = False
        for (path, qualname), group in blocked.items():
            earlier = {
                line
                for line in raised.get((path, qualname), ())
                if line < max(it.line for it in group)
            }
            try:
                source = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            text, skipped = skip_statements(source, earlier)
            if not skipped:
                continue
            job = dict(plan.call_job(group, {"steps": options.steps}), rewrite_source=text)
            call = plan.Task("script", f"call:{path}:{qualname}:skipping", group, job)
            found = _program_verdicts(group, call, job, slots, options)
            said = ", ".join(str(line) for line in skipped)
            for it in group:
                after = found[it.key]
                if after.verdict == "inconclusive":
                    continue
                after.reached += (
                    f" with line(s) {said} skipped (another finding's line, which raised there "
                    "first and kept this one from running)"
                )
                verdicts[it.key] = after
                progress = True
        if not progress:
            return


#: How many times a function is called again past the findings that raised before others.
SKIP_ROUNDS = 3


def _called(
    items: list[plan.Item], task: plan.Task, slots: Slots, options: VerifyOptions
) -> dict[FindingKey, Verdict]:
    """The function holding these items called directly (a task of its own)."""
    job = plan.call_job(items, {"steps": options.steps})
    call = plan.Task("script", f"call:{items[0].path}:{items[0].target}", items, job)
    return _program_verdicts(items, call, job, slots, options)


def _program_verdicts(
    items: list[plan.Item],
    task: plan.Task,
    task_job: dict[str, Any],
    slots: Slots,
    options: VerifyOptions,
) -> dict[FindingKey, Verdict]:
    job = dict(task_job, steps=options.steps)
    codes = {it.finding.code for it in items}
    hows = {code: plan.runtime(code) for code in codes}
    verdicts: dict[FindingKey, Verdict] = {}
    timed = [
        [it.path, it.line, _timer_start(it.finding.message)]
        for it in items
        if _checks(hows[it.finding.code], "timing")
    ]
    watched = [
        it
        for it in items
        if (h := hows[it.finding.code]) is not None
        and (
            h.loud
            or h.check in ("memory", "amp", "underflow")
            or it.finding.code in ROUNDTRIP_CODES
        )
    ]
    # The experiments are independent: they run side by side (the slots bound the processes).
    pending = []
    if watched:

        def watch() -> dict[FindingKey, Verdict]:
            threaded = None
            if "MXL401" in codes:
                threaded = _payload(slots.run(dict(job, memory="light"), options, engine=THREADED))
            return _watched_verdicts(watched, job, threaded, slots, options)

        pending.append(_in_parallel(slots, watch))
    if timed:  # its own run: a timing world does real work per step, a memory world little

        def clock() -> dict[FindingKey, Verdict]:
            # "light": the probe reads nothing back, so nothing but the program synchronises
            clocked = _payload(
                slots.run(dict(job, timing=timed, memory="light"), options, engine=THREADED)
            )
            return {
                it.key: _annotated(interpret.timing_verdict(it, clocked), clocked)
                for it in items
                if _checks(hows[it.finding.code], "timing")
            }

        pending.append(_in_parallel(slots, clock))
    seeds = [it for it in items if _checks(hows[it.finding.code], "seed")]
    if seeds:
        pending.append(_in_parallel(slots, lambda: _seed_verdicts(seeds, job, slots, options)))
    if any(_checks(h, c) for h in hows.values() for c in ("sync", "profiler", "engine")):
        program = plan.Task(task.kind, task.key, items, job)
        pending.append(
            _in_parallel(slots, lambda: _sync_family(program, items, slots, options, hows))
        )
    for future in pending:
        verdicts.update(future.result())
    return verdicts


def _in_parallel(slots: Slots, fn: Callable[[], Any]) -> Future[Any]:
    """Run `fn` on its own thread (it mostly waits for a slot and a subprocess); its jobs are
    attributed to the task of the thread that started it."""
    future: Future[Any] = Future()
    key = slots.current_task()

    def target() -> None:
        try:
            with slots.task(key):
                future.set_result(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
            future.set_exception(exc)

    threading.Thread(target=target, daemon=True).start()
    return future


def _watched_verdicts(
    items: list[plan.Item],
    job: dict[str, Any],
    threaded: dict[str, Any] | None,
    slots: Slots,
    options: VerifyOptions,
) -> dict[FindingKey, Verdict]:
    """Loud, memory and AMP findings from one watched run; when a confirmed failure with a
    fix stops the run before other flagged lines, that fix is applied (only it) and the run
    repeated for them, so each finding gets its own verdict."""
    hows = {it.finding.code: plan.runtime(it.finding.code) for it in items}
    per_batch = any(h is not None and h.per_batch for h in hows.values())
    probes = {
        # Exports re-imported and compared; networks watched across `amp.init()`.
        "roundtrip": any(it.finding.code in ROUNDTRIP_CODES for it in items),
        "amp_watch": any(_checks(h, "amp") for h in hows.values()),
        # Gradients read after each backward pass under AMP.
        "grad_watch": any(_checks(h, "underflow") for h in hows.values()),
    }
    verdicts: dict[FindingKey, Verdict] = {}
    pending, applied = list(items), list[plan.Item]()
    for _round in range(ISOLATION_ROUNDS + 1):
        run = dict(job, memory=True, per_batch=per_batch, **probes)
        if applied:
            run["rewrite_source"] = _rewrite_source(applied)
        naive = _payload(slots.run(run, options))
        for it in pending:
            declared = hows[it.finding.code]
            if _checks(declared, "memory"):
                found = interpret.memory_verdict(it, naive, threaded)
            elif _checks(declared, "amp"):
                found = interpret.amp_verdict(it, naive)
            elif _checks(declared, "underflow"):
                found = interpret.underflow_verdict(it, naive)
            elif it.finding.code in ROUNDTRIP_CODES:
                found = interpret.roundtrip_verdict(it, naive)
            else:
                found = interpret.loud_verdict(it, naive)
            if applied and found.verdict != "inconclusive":
                lines = ", ".join(str(a.line) for a in applied)
                found.evidence += f" (after applying the fixes at lines {lines})"
            verdicts[it.key] = _annotated(found, naive)
        unreached = [
            it
            for it in pending
            if verdicts[it.key].verdict == "inconclusive"
            and not interpret.watched(naive, it)["runs"]
        ]
        breakers = [
            it
            for it in pending
            if verdicts[it.key].verdict == "confirmed"
            and it.finding.fix is not None
            and it.path == job["file"]
        ]
        if not unreached or not breakers:
            break
        applied += breakers
        pending = unreached
    _verify_fixes(items, job, verdicts, naive, slots, options)
    return verdicts


def _verify_fixes(
    items: list[plan.Item],
    job: dict[str, Any],
    verdicts: dict[FindingKey, Verdict],
    original: dict[str, Any],
    slots: Slots,
    options: VerifyOptions,
) -> None:
    """Confirmed findings with a fix: one run with all those fixes applied. A fix is verified
    when its line then runs without the predicted failure; its steps are timed."""
    fixed = [
        it
        for it in items
        if verdicts[it.key].verdict == "confirmed"
        and it.finding.fix is not None
        and it.path == job["file"]
    ]
    source = _rewrite_source(fixed) if fixed else None
    if source is None:
        return
    payload = _payload(slots.run(dict(job, memory=True, rewrite_source=source), options))
    for it in fixed:
        verdicts[it.key].rewrite = interpret.fix_verdict(it, payload, original)


ALL_RNGS = ["numpy", "random", "mxnet"]
#: Training steps of a seed check's runs.
SEED_STEPS = 3
#: The start timestamp of a timing finding's interval: `time.time() - tic` names `tic`.
_TIMER_START = re.compile(r"`\(?[\w.]+\([^`]*\)\s*-\s*([A-Za-z_][\w.]*)\)?`")


def _timer_start(message: str) -> str:
    found = _TIMER_START.search(message)
    return found.group(1) if found else ""


def _seed_verdicts(
    seeds: list[plan.Item], job: dict[str, Any], slots: Slots, options: VerifyOptions
) -> dict[FindingKey, Verdict]:
    """Each seed finding by itself: every generator seeded and only its line's draws from a
    stream of their own, started from two seeds (a seed that comes too late: its generator
    left unseeded as a whole). When the two runs differ, two more with its rewrite applied must
    not: a fix that seeds is tested on the generator as a whole, any other fix
    (`shuffle=False`) on the line. A line the first run does not reach ends there."""
    verdicts: dict[FindingKey, Verdict] = {}
    lines = Path(job["file"]).read_text(encoding="utf-8").splitlines()
    # A fingerprint needs the first batches and losses, not a memory trend: fewer steps.
    job = dict(job, steps=min(int(job.get("steps", SEED_STEPS)), SEED_STEPS))
    whole: dict[str, tuple[list[dict[str, Any]], str]] = {}
    unseeded_whole: dict[str, list[dict[str, Any]]] = {}

    lock = threading.Lock()

    def run(spec: dict[str, Any]) -> dict[str, Any]:
        return _payload(slots.run(spec, options))

    def generator_pair(rng: str) -> tuple[list[dict[str, Any]], str]:
        with lock:  # shared by the findings of one generator: computed once
            if rng not in whole:
                others = [r for r in ALL_RNGS if r != rng]
                same_file = [it for it in seeds if it.path == job["file"] and _seeds_with_fix(it)]
                source = _rewrite_source(same_file) if same_file else None
                if source is not None:
                    spec = dict(job, seed=others, rewrite_source=source)
                    how = "with the fix applied"
                else:
                    spec, how = dict(job, seed=ALL_RNGS), f"with {rng} seeded before the program"
                pair = [_in_parallel(slots, lambda: run(spec)) for _ in range(2)]
                whole[rng] = ([f.result() for f in pair], how)
            return whole[rng]

    def generator_unseeded(rng: str) -> list[dict[str, Any]]:
        with lock:
            if rng not in unseeded_whole:
                others = [r for r in ALL_RNGS if r != rng]
                pair = [_in_parallel(slots, lambda: run(dict(job, seed=others))) for _ in range(2)]
                unseeded_whole[rng] = [f.result() for f in pair]
            return unseeded_whole[rng]

    def one(it: plan.Item) -> Verdict:
        rng = plan.rng_of(_line(it, lines), it.finding.code)
        declared = plan.runtime(it.finding.code)
        if declared is not None and declared.draws:
            start, end = plan.statement_span(it.path, it.line)
            live = dict(job, seed=ALL_RNGS, live=[[it.path, start, end]], live_rng=rng)
            first = run(dict(live, live_seed=0))
            early = interpret.seed_reached(it, first)
            if early is not None:
                return _annotated(early, first)
            unseeded = [first, run(dict(live, live_seed=1))]
            fixed: list[dict[str, Any]] | None = None
            how = ""
            if interpret.fingerprint_diff(unseeded[0], unseeded[1])[0]:
                if (
                    it.finding.fix is not None
                    and it.path == job["file"]
                    and not _seeds_with_fix(it)
                ):
                    spec = dict(live, rewrite_source=_rewrite_source([it]))
                    runs = [
                        _in_parallel(slots, functools.partial(run, dict(spec, live_seed=s)))
                        for s in (0, 1)
                    ]
                    fixed = [f.result() for f in runs]
                    how = "with the fix applied (the line's stream still started from two seeds)"
                else:
                    fixed, how = generator_pair(rng)
            return _annotated(
                interpret.seed_verdict(it, rng, unseeded, fixed, how, alone=True), first
            )
        fresh = generator_unseeded(rng)
        fixed, how = (
            generator_pair(rng) if interpret.fingerprint_diff(fresh[0], fresh[1])[0] else (None, "")
        )
        return _annotated(interpret.seed_verdict(it, rng, fresh, fixed, how), fresh[0])

    running = {it.key: _in_parallel(slots, functools.partial(one, it)) for it in seeds}
    for key, future in running.items():
        verdicts[key] = future.result()
    return verdicts


def _annotated(verdict: Verdict, payload: dict[str, Any]) -> Verdict:
    """The run's stand-ins and, for a direct call, the arguments it was given."""
    verdict.standins = list(payload.get("standins") or [])
    prior = interpret.writers_note(payload)
    if payload.get("call"):
        world = "; ".join(payload.get("world") or [])
        verdict.reached = f"called {payload['call']}" + (f" with {world}" if world else "")
        verdict.reached += f", after {prior}" if prior else ""
    elif prior:
        verdict.reached = prior
    return verdict


def _seeds_with_fix(item: plan.Item) -> bool:
    """The finding's fix adds a seed call (rather than, say, `shuffle=False`)."""
    fix = item.finding.fix
    return fix is not None and any("seed(" in e.content for e in fix.edits)


def _sync_family(
    task: plan.Task,
    items: list[plan.Item],
    slots: Slots,
    options: VerifyOptions,
    hows: dict[str, Runtime | None],
) -> dict[FindingKey, Verdict]:
    """The sync, profiler and engine checks of a script task (`mxlint.verify.syncs`)."""

    def run(job: dict[str, Any], engine: str) -> dict[str, Any]:
        return _payload(slots.run(job, options, engine=engine))

    def kind(check: str) -> list[plan.Item]:
        return [it for it in items if _checks(hows[it.finding.code], check)]

    verdicts: dict[FindingKey, Verdict] = {}
    found = kind("sync")
    if found:
        same_file = [it for it in found if it.path == task.job["file"]]
        source = _rewrite_source(same_file) if same_file else None
        verdicts.update(syncs.sync_verdicts(task, found, run, source, options.bench))
    found = kind("profiler")
    if found:
        verdicts.update(syncs.profiler_verdicts(task, found, run, slots.gpus))
    found = kind("engine")
    if found:
        verdicts.update(syncs.engine_verdicts(task, found, run, _rewrite_source, slots.gpus))
    return verdicts


def _line(item: plan.Item, script_lines: list[str]) -> str:
    try:
        lines = Path(item.path).read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = script_lines
    return lines[item.line - 1] if 0 < item.line <= len(lines) else ""


def verify(
    findings: Sequence[Finding],
    files: Sequence[Path],
    options: VerifyOptions,
    on_progress: Callable[[int, int], None] | None = None,
) -> VerifyResult:
    """A verdict for every finding of this shard (others are left out)."""
    findings = list(findings)
    gpus = nvidia_smi_gpus()
    tasks, skipped = plan.build(
        findings, list(files), {"config": options.config, "steps": options.steps, "gpus": gpus}
    )
    index, total = options.shard
    if total > 1:
        tasks = plan.shard(tasks, index, total)
        keep = {
            id(s.item.finding) for s in skipped if zlib_shard(s.item.finding, total) == index - 1
        }
        skipped = [s for s in skipped if id(s.item.finding) in keep]
    verdicts: dict[FindingKey, Verdict] = {s.item.key: inconclusive(s.reason) for s in skipped}
    jobs = options.jobs or (gpus if gpus else max(1, os.cpu_count() or 1))
    box = detect(options.sandbox)
    slots = Slots(gpus, jobs, Confinement(box, options.pass_env, options.readable))
    done = 0
    lock = threading.Lock()

    def work(task: plan.Task) -> dict[FindingKey, Verdict]:
        try:
            with slots.task(task.key):
                if task.kind == "block":
                    return run_block(task, slots, options)
                if task.kind == "launch":
                    with slots.reserved():
                        return {
                            it.key: dist.launch_verdict(
                                it,
                                memory_mb=options.memory_mb,
                                timeout=options.timeout,
                                confinement=slots.confinement,
                            )
                            for it in task.items
                        }
                return run_program(task, slots, options)
        except Exception as exc:  # noqa: BLE001 - a verify bug must not lose the lint result
            return {
                it.key: inconclusive(f"verify failed: {type(exc).__name__}: {exc}")
                for it in task.items
            }

    if on_progress:
        on_progress(0, len(tasks))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        # Programs first: their experiments form the longest chains of subprocesses.
        ordered = sorted(tasks, key=lambda t: t.kind == "block")
        futures = {pool.submit(work, t): t for t in ordered}
        for future in as_completed(futures):
            task = futures[future]
            result = future.result()
            for it in task.items:
                v = result.get(it.key) or inconclusive("no verdict")
                v.job = task.key
                verdicts[it.key] = v
            with lock:
                done += 1
                if on_progress:
                    on_progress(done, len(tasks))
    return VerifyResult(verdicts, len(tasks), gpus, box, slots.escapes)


def zlib_shard(finding: Finding, total: int) -> int:
    import zlib

    return zlib.crc32(f"{finding.filename}:{finding.location.row}:{finding.code}".encode()) % total


def progress_bar(stream: Any = None) -> Callable[[int, int], None]:
    stream = stream or sys.stderr

    def show(done: int, total: int) -> None:
        width = 30
        filled = width * done // total if total else width
        stream.write(f"\rverify [{'#' * filled}{'.' * (width - filled)}] {done}/{total} jobs")
        if done >= total:
            stream.write("\n")
        stream.flush()

    return show
