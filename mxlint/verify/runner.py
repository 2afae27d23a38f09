"""The verify stage of a run: plan tasks, run their subprocesses in parallel, give verdicts."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mxlint.fixes import apply_edits
from mxlint.rule import Finding, FindingKey, Runtime
from mxlint.verify import bench, dist, interpret, onnx_verdicts, plan, syncs
from mxlint.verify.gpu import nvidia_smi_gpus
from mxlint.verify.isolation import Sandbox, detect
from mxlint.verify.model import Verdict, inconclusive
from mxlint.verify.sandbox import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, ChildResult, Confinement
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
    (only it) and run again, so each finding gets its own verdict."""
    job = dict(task.job)
    if job["mode"] == "onnx":
        result = slots.run(job, options)
        return _child_failed(task.items, result) or onnx_verdicts.verdicts(
            task.items, result.payload
        )
    if job["mode"] == "hybrid":
        job["rewrite_source"] = _rewrite_source(task.items)
    verdicts: dict[FindingKey, Verdict] = {}
    pending: list[plan.Item] = list(task.items)
    applied: list[plan.Item] = []
    for round_ in range(ISOLATION_ROUNDS + 1):
        run = dict(job)
        if applied:
            run["source"], run["rewrite_source"] = _rewrite_source(applied), None
        result = slots.run(run, options)
        failed = _child_failed(pending, result)
        if failed:
            verdicts.update(failed)
            break
        found = interpret.block_verdicts(pending, result.payload)
        masked = [it for it in pending if "masked" in found[it.key].reason]
        breakers = [
            it
            for it in pending
            if found[it.key].verdict == "confirmed" and it.finding.fix is not None
        ]
        for it in pending:
            if applied and it not in masked:
                lines = ", ".join(str(a.line) for a in applied)
                found[it.key].evidence += f" (after applying the fixes at lines {lines})"
            verdicts[it.key] = found[it.key]
        if not masked or not breakers or round_ == ISOLATION_ROUNDS:
            break
        applied += breakers
        pending = masked
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


def _checks(how: Runtime | None, check: str) -> bool:
    return how is not None and how.check == check


def run_script(task: plan.Task, slots: Slots, options: VerifyOptions) -> dict[FindingKey, Verdict]:
    job = dict(task.job, steps=options.steps)
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
    codes = {it.finding.code for it in items}
    hows = {code: plan.runtime(code) for code in codes}
    naive: dict[str, Any] | None = None
    if any(h is not None and (h.loud or h.check in ("memory", "amp")) for h in hows.values()):
        per_batch = any(h is not None and h.per_batch for h in hows.values())
        probes = {
            # Exports re-imported and compared; networks watched across `amp.init()`.
            "roundtrip": any(c in ROUNDTRIP_CODES for c in codes),
            "amp_watch": any(_checks(h, "amp") for h in hows.values()),
        }
        naive = _payload(slots.run(dict(job, memory=True, per_batch=per_batch, **probes), options))
        threaded = None
        if "MXL401" in codes:
            threaded = _payload(slots.run(dict(job, memory="light"), options, engine=THREADED))
        for it in items:
            declared = hows[it.finding.code]
            if _checks(declared, "memory"):
                verdicts[it.key] = interpret.memory_verdict(it, naive, threaded)
            elif _checks(declared, "amp"):
                verdicts[it.key] = interpret.amp_verdict(it, naive)
            elif it.finding.code in ROUNDTRIP_CODES:
                verdicts[it.key] = interpret.roundtrip_verdict(it, naive)
            elif declared is not None and declared.loud:
                verdicts[it.key] = interpret.loud_verdict(it, naive)
    verdicts.update(_sync_family(task, items, slots, options, hows))
    seeds = [it for it in items if _checks(hows[it.finding.code], "seed")]
    by_rng: dict[str, list[plan.Item]] = {}
    lines = Path(task.job["file"]).read_text(encoding="utf-8").splitlines()
    for it in seeds:
        text = _line(it, lines)
        by_rng.setdefault(plan.rng_of(text, it.finding.code), []).append(it)
    for rng, items in by_rng.items():
        others = [r for r in ("numpy", "random", "mxnet") if r != rng]
        unseeded = [_payload(slots.run(dict(job, seed=others), options)) for _ in range(2)]
        same_file = [it for it in items if it.path == task.job["file"]]
        source = _rewrite_source(same_file) if same_file else None
        if source is not None:
            seeded_job, how = dict(job, seed=others, rewrite_source=source), "with the fix applied"
        else:
            seeded_job, how = dict(job, seed=others + [rng]), f"seeding {rng} before user code"
        seeded = [_payload(slots.run(seeded_job, options)) for _ in range(2)]
        for it in items:
            verdicts[it.key] = interpret.seed_verdict(it, rng, unseeded, seeded, how)
    return verdicts


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
                return run_script(task, slots, options)
        except Exception as exc:  # noqa: BLE001 - a verify bug must not lose the lint result
            return {
                it.key: inconclusive(f"verify failed: {type(exc).__name__}: {exc}")
                for it in task.items
            }

    if on_progress:
        on_progress(0, len(tasks))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(work, t): t for t in tasks}
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
