"""Verdicts of the sync and environment families (parent side): runs of an entry script on the
threaded engine — the engine whose asynchrony these findings are about — with the probes of
`mxlint.verify.probes`, and what they showed.

- "sync": the synchronisations the flagged line makes per training step; with a fix, the
  rewritten script must give the same losses and parameters, and is then timed against the
  original (steps alternated over processes, median step time).
- "profiler": the operators a read of the profiler missed, or the state the program left the
  profiler in.
- "engine": the script run with the setting the finding names and without it (the fix
  applied): an engine MXNet cannot find fails; a debugging setting is timed.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mxlint.rule import FindingKey
from mxlint.verify import interpret
from mxlint.verify.evidence import exc_text, expected, failure
from mxlint.verify.model import Rewrite, Verdict, inconclusive
from mxlint.verify.plan import Item, Task

THREADED = "ThreadedEnginePerDevice"
#: Steps of a sync or engine run: a timing window of 36 steps after the warm-up.
TIMING_STEPS = 40
#: Timed runs of each side, alternated (a shared machine's load comes in bursts).
TIMING_RUNS = 3
#: Steps dropped from the start of a timed run (graph building, allocations, caches).
WARMUP = 4
#: A setting is confirmed to slow training when the slower side's median step is this much
#: longer and every pair of runs agrees.
SLOWER = 1.05

Run = Callable[..., dict[str, Any]]


def _where(item: Item) -> str:
    return f"{item.path}:{item.line}"


def _steps(payload: dict[str, Any]) -> str:
    return interpret._bounded(payload)


def step_ms(payload: dict[str, Any], clock: str = "cpu_seconds") -> float | None:
    """The mean training step time (ms) of a timed run over the steps after the warm-up, on
    process CPU time (steadier than wall time on a shared machine; `clock="seconds"` for wall
    time). The engine is drained at both ends of the window, so queued work is counted."""
    window = payload.get("window")
    if not isinstance(window, dict) or not window.get("steps") or window.get(clock) is None:
        return None
    return float(window[clock]) * 1000 / int(window["steps"])


def blocked_ms(payload: dict[str, Any]) -> float | None:
    """Per step, the time (ms) Python spent inside forward, `backward()` and `trainer.step()`
    calls in the timing window."""
    window = payload.get("window")
    if not isinstance(window, dict) or window.get("blocked") is None or not window.get("steps"):
        return None
    return float(window["blocked"]) * 1000 / int(window["steps"])


def compare_times(
    slow: Sequence[dict[str, Any]], fast: Sequence[dict[str, Any]], clock: str = "cpu_seconds"
) -> tuple[float, float, float, float, float] | None:
    """(ratio, low, high, slow ms, fast ms): the median step time of the `slow` runs over that
    of the `fast` runs, with the lowest and highest ratio of the paired runs; None when a run
    did not complete its timing window."""
    a = [m for m in (step_ms(p, clock) for p in slow) if m is not None]
    b = [m for m in (step_ms(p, clock) for p in fast) if m is not None]
    if not a or not b or len(a) != len(slow) or len(b) != len(fast):
        return None
    pairs = [x / y for x, y in zip(a, b) if y > 0]
    sa, sb = statistics.median(a), statistics.median(b)
    if sb <= 0 or not pairs:
        return None
    return sa / sb, min(pairs), max(pairs), sa, sb


# -- sync --------------------------------------------------------------------------------------


def sync_verdicts(
    task: Task, items: Sequence[Item], run: Run, rewrite_source: str | None, bench: bool
) -> dict[FindingKey, Verdict]:
    """Count each flagged line's synchronisations per step; check and time the rewrite."""
    lines = [[it.path, it.line] for it in items]
    job = dict(
        task.job,
        steps=TIMING_STEPS,
        sync_lines=lines,
        seed=["numpy", "random", "mxnet"],
    )
    counted = run(job, THREADED)
    out: dict[FindingKey, Verdict] = {}
    for it in items:
        out[it.key] = _sync_verdict(it, counted)
    if rewrite_source is None:
        return out
    fixed = [
        it for it in items if it.finding.fix is not None and out[it.key].verdict == "confirmed"
    ]
    if not fixed:
        return out
    rewritten = run(dict(job, rewrite_source=rewrite_source), THREADED)
    rewrite = _sync_rewrite(fixed, counted, rewritten)
    if rewrite.verified and bench:
        plain = dict(job, sync_lines=[], timed=WARMUP, trace=False)
        originals, rewrites = [], []
        for _ in range(TIMING_RUNS):  # alternated: a drifting machine slows both sides alike
            originals.append(run(plain, THREADED))
            rewrites.append(run(dict(plain, rewrite_source=rewrite_source), THREADED))
        _time_rewrite(rewrite, originals, rewrites)
    for it in fixed:
        out[it.key].rewrite = rewrite
    return out


def _per_step(payload: dict[str, Any], item: Item) -> dict[int, int]:
    found = (payload.get("syncs") or {}).get(_where(item), {})
    return {int(k): int(v) for k, v in found.items()}


def _sync_verdict(item: Item, payload: dict[str, Any]) -> Verdict:
    why = failure(payload)
    if why:
        return inconclusive(why)
    runs = interpret.watched(payload, item)["runs"]
    per_step = _per_step(payload, item)
    exc = payload.get("exception")
    if not runs:
        why = f"; the script failed: {exc_text(exc)}" if exc else ""
        return inconclusive(f"line {item.line} was not reached in {_steps(payload)}{why}")
    steps = payload.get("steps", 0)
    if not per_step:
        return Verdict(
            "refuted",
            f"line {item.line} ran {runs}x in {_steps(payload)} without synchronising "
            "(threaded engine)",
        )
    total = sum(per_step.values())
    during = len(per_step)
    average = total / during
    code = item.finding.code
    if code == "MXL602":
        every = steps and during >= max(1, min(steps, 3)) and during >= steps - 1
        if every:
            return Verdict(
                "confirmed",
                f"line {item.line} synchronised in every training step ({during} of {steps}; "
                f"{average:.1f} per step, threaded engine)",
            )
        return Verdict(
            "refuted",
            f"line {item.line} synchronised in {during} of {steps} training steps only",
        )
    if average >= 2:
        return Verdict(
            "confirmed",
            f"line {item.line} synchronised {average:.1f} times per training step "
            f"({total} engine round trips over {during} steps, threaded engine)",
        )
    return Verdict(
        "refuted",
        f"line {item.line} synchronised at most once per training step ({total} over {during} "
        "steps)",
    )


def _sync_rewrite(
    fixed: Sequence[Item], original: dict[str, Any], rewritten: dict[str, Any]
) -> Rewrite:
    why = failure(rewritten)
    if why:
        return Rewrite(None, f"the rewrite could not run: {failure}")
    exc = rewritten.get("exception")
    if exc and not original.get("exception"):
        return Rewrite(False, f"the rewrite raised {exc_text(exc)}")
    differ, what = interpret.fingerprint_diff(original, rewritten)
    if differ is None:
        return Rewrite(None, "nothing to compare (no batches, losses or trainer)")
    if differ:
        return Rewrite(False, f"the rewrite changes the {what}")
    counts = []
    for it in fixed:
        after = _per_step(rewritten, it)
        per = sum(after.values()) / len(after) if after else 0.0
        counts.append(f"line {it.line}: {per:.1f} per step")
    return Rewrite(
        True,
        f"the rewrite gives the same {what} ({_steps(rewritten)}); syncs after it: "
        + ", ".join(counts),
    )


def _time_rewrite(
    rewrite: Rewrite, originals: Sequence[dict[str, Any]], rewrites: Sequence[dict[str, Any]]
) -> None:
    found = compare_times(originals, rewrites)
    if found is None:
        rewrite.evidence += "; timing: a run did not complete its timing window"
        return
    ratio, low, high, slow, fast = found
    rewrite.ratio, rewrite.spread = round(ratio, 3), (round(low, 3), round(high, 3))
    wall = compare_times(originals, rewrites, "seconds")
    rewrite.wall_ratio = round(wall[0], 3) if wall is not None else None
    rewrite.within_noise = low <= 1.0 <= high or abs(ratio - 1) < 0.03
    rewrite.samples = {
        "original": [m / 1000 for m in (step_ms(p) for p in originals) if m is not None],
        "rewrite": [m / 1000 for m in (step_ms(p) for p in rewrites) if m is not None],
    }
    verdict = (
        "within noise"
        if rewrite.within_noise
        else (f"rewrite {ratio:.2f}x faster" if ratio > 1 else f"rewrite {1 / ratio:.2f}x slower")
    )
    rewrite.evidence += (
        f"; timed on the threaded engine ({len(originals)}+{len(rewrites)} runs alternated, "
        f"{TIMING_STEPS - WARMUP} steps each after {WARMUP} warm-up steps, the engine drained "
        f"at both ends): {slow:.2f} ms of CPU time per step before, {fast:.2f} ms after, "
        f"ratio {ratio:.2f} [{low:.2f}, {high:.2f}]"
        + (f", wall-time ratio {wall[0]:.2f}" if wall is not None else "")
        + f", {verdict}"
    )


# -- profiler ----------------------------------------------------------------------------------


def profiler_verdicts(
    task: Task, items: Sequence[Item], run: Run, gpus: int
) -> dict[FindingKey, Verdict]:
    out: dict[FindingKey, Verdict] = {}
    runnable = []
    for it in items:
        if it.finding.code == "MXL604" and not _reads_profiler(it):
            out[it.key] = inconclusive(
                "a GPU memory reading: it needs a GPU to show what it misses"
                + ("" if gpus else " (this host has none)")
            )
        else:
            runnable.append(it)
    if not runnable:
        return out
    payload = run(dict(task.job, profiler=True, seed=["numpy", "random", "mxnet"]), THREADED)
    for it in runnable:
        out[it.key] = _profiler_verdict(it, payload)
    return out


def _names(profiler: dict[str, Any], item: Item) -> str:
    """The queued operators by name, most first: `: dot ×3, _div_scalar ×2`."""
    late = (profiler.get("late") or {}).get(_where(item)) or {}
    ranked = sorted(late.items(), key=lambda kv: (-kv[1], kv[0]))
    return f": {', '.join(f'{name} ×{n}' for name, n in ranked)}" if ranked else ""


def _profiler_verdict(item: Item, payload: dict[str, Any]) -> Verdict:
    why = failure(payload)
    if why:
        return inconclusive(why)
    runs = interpret.watched(payload, item)["runs"]
    exc = payload.get("exception")
    if not runs:
        why = f"; the script failed: {exc_text(exc)}" if exc else ""
        return inconclusive(f"line {item.line} was not reached in {_steps(payload)}{why}")
    profiler = payload.get("profiler") or {}
    if item.finding.code == "MXL604":
        missed = (profiler.get("missed") or {}).get(_where(item))
        if missed is None:
            return inconclusive(f"line {item.line} ran, but not while the profiler was running")
        if missed > 0:
            return Verdict(
                "confirmed",
                f"when line {item.line} read the profiler, {missed} operator call(s) queued "
                f"before it had not run yet{_names(profiler, item)} (they appeared in the "
                "profile only after `waitall()`; threaded engine)",
            )
        return Verdict(
            "refuted",
            f"every operator queued before line {item.line} had run when it read the profiler",
        )
    state = profiler.get("state")
    started = profiler.get("started_at")
    stops = [where for event, where in profiler.get("events", []) if event in ("stop", "dump")]
    if state == "run":
        held = profiler.get("held")
        holding = f", holding {held} operator events in memory" if held else ""
        steps = payload.get("steps", 0)
        ended = f"the run ended after {_steps(payload)}" if steps else "the script ended"
        return Verdict(
            "confirmed",
            f"the profiler started at line {str(started).rsplit(':', 1)[-1]} was still running "
            f"when {ended}{holding}; nothing had stopped it or dumped its profile",
        )
    if stops:
        return Verdict(
            "refuted",
            f"the profiler was stopped or dumped at line {stops[-1].rsplit(':', 1)[-1]}",
        )
    return inconclusive(f"the profiler was not running when the run ended (state: {state})")


# -- engine and settings -----------------------------------------------------------------------


def engine_verdicts(
    task: Task,
    items: Sequence[Item],
    run: Run,
    rewrite_source: Callable[[Sequence[Item]], str | None],
    gpus: int,
) -> dict[FindingKey, Verdict]:
    out: dict[FindingKey, Verdict] = {}
    for it in items:
        data = it.finding.data or {}
        name, value = data.get("setting"), data.get("value")
        if not isinstance(name, str) or not isinstance(value, str):
            name, value = _setting_on_line(it)
        if name is None or value is None:
            out[it.key] = inconclusive("the setting is not known statically")
            continue
        if it.finding.code == "MXL511":
            out[it.key] = _invalid_setting(task, it, name, value, run, gpus)
        else:
            out[it.key] = _debug_setting(task, it, name, value, run, rewrite_source)
    return out


_SETTING = re.compile(r"""["'](MXNET_\w+)["']\s*\]?\s*[=,]\s*(["'])(.*?)\2""")


def _setting_on_line(item: Item) -> tuple[str | None, str | None]:
    """`os.environ["NAME"] = "value"` (or `setdefault("NAME", "value")`) read from the flagged
    line, for a finding that does not carry its setting."""
    try:
        line = Path(item.path).read_text(encoding="utf-8").splitlines()[item.line - 1]
    except (OSError, IndexError, UnicodeDecodeError):
        return None, None
    found = _SETTING.search(line)
    return (found.group(1), found.group(3)) if found else (None, None)


def _reads_profiler(item: Item) -> bool:
    read = (item.finding.data or {}).get("read")
    if read is not None:
        return read == "profiler"
    try:
        line = Path(item.path).read_text(encoding="utf-8").splitlines()[item.line - 1]
    except (OSError, IndexError, UnicodeDecodeError):
        return False
    return "profiler" in line


def _environment(name: str, value: str) -> tuple[str, dict[str, str]]:
    """The engine and the extra environment a run with `name=value` in effect starts with."""
    if name == "MXNET_ENGINE_TYPE":
        return value, {}
    return THREADED, {name: value}


def _invalid_setting(task: Task, item: Item, name: str, value: str, run: Run, gpus: int) -> Verdict:
    if name != "MXNET_ENGINE_TYPE" and not gpus:
        return inconclusive(
            f"MXNet reads {name} when it first allocates GPU memory; this host has no GPU"
        )
    engine, extra = _environment(name, value)
    payload = run(dict(task.job, env=extra), engine)
    texts = [
        exc_text(e)
        for e in (payload.get("exception"), payload.get("harness_exception"))
        if isinstance(e, dict)
    ]
    if payload.get("status") == "harness-error":
        texts.append(exc_text(payload.get("exception", {})))
    texts.append(str(payload.get("child_failed", "")))
    texts.append(str(payload.get("stderr_tail", "")))
    for text in texts:
        if expected(item.finding.code, {"type": "", "message": text}) and text.strip():
            return Verdict("confirmed", f"with {name}={value!r} MXNet failed: {text.strip()[:300]}")
    why = failure(payload)
    if why:
        return inconclusive(why)
    return Verdict(
        "refuted",
        f"the script ran {_steps(payload)} with {name}={value!r} without an engine or "
        "memory-pool error",
    )


def _debug_setting(
    task: Task,
    item: Item,
    name: str,
    value: str,
    run: Run,
    rewrite_source: Callable[[Sequence[Item]], str | None],
) -> Verdict:
    if name == "MXNET_EXEC_VERBOSE":
        return inconclusive(
            "MXNet 1.9.1 does not read MXNET_EXEC_VERBOSE: there is no effect to run"
        )
    probe = run(dict(task.job, steps=8), THREADED)
    why = failure(probe)
    if why:
        return inconclusive(why)
    if not interpret.watched(probe, item)["runs"]:
        exc = probe.get("exception")
        if exc:
            return inconclusive(f"the script failed before line {item.line}: {exc_text(exc)}")
        return Verdict(
            "refuted",
            f"line {item.line} does not run when the script is launched as it is "
            f"({_steps(probe)}): the setting is not in effect",
        )
    same_file = item.path == task.job["file"]
    source = rewrite_source([item]) if same_file and item.finding.fix is not None else None
    engine, extra = _environment(name, value)
    base = dict(task.job, steps=TIMING_STEPS, seed=["numpy", "random", "mxnet"], timed=WARMUP)
    with_setting, without = [], []
    for _ in range(TIMING_RUNS):  # alternated: a drifting machine slows both sides alike
        with_setting.append(run(dict(base, env=extra, trace=False), engine))
        clean = (
            dict(base, rewrite_source=source, trace=False)
            if source is not None
            else dict(base, trace=False)
        )
        without.append(run(clean, THREADED))
    for payload in with_setting + without:
        why = failure(payload)
        if why:
            return inconclusive(why)
        if payload.get("exception"):
            return inconclusive(f"the script failed: {exc_text(payload['exception'])}")
    differ, what = interpret.fingerprint_diff(with_setting[0], without[0])
    found = compare_times(with_setting, without)
    if found is None:
        return inconclusive(f"too few training steps to time ({_steps(with_setting[0])})")
    ratio, low, high, slow, fast = found
    same = (
        f"; both give the same {what}"
        if differ is False
        else f"; they differ in the {what}"
        if differ
        else ""
    )
    timing = (
        f"step {slow:.2f} ms with {name}={value}, {fast:.2f} ms without (ratio {ratio:.2f} "
        f"[{low:.2f}, {high:.2f}], {TIMING_RUNS}+{TIMING_RUNS} runs alternated){same}"
    )
    verdict: Verdict
    held = [m for m in (blocked_ms(p) for p in with_setting) if m is not None]
    free = [m for m in (blocked_ms(p) for p in without) if m is not None]
    if name == "MXNET_ENGINE_TYPE" and held and free:
        # NaiveEngine's cost is that nothing overlaps: the Python thread waits in every call.
        waits, waits_without = statistics.median(held), statistics.median(free)
        if waits >= 2 * waits_without and waits >= 0.5:
            verdict = Verdict(
                "confirmed",
                f"with {value} the Python thread waited {waits:.2f} ms per step inside the "
                f"forward, backward() and trainer.step() calls, against {waits_without:.2f} ms "
                f"on the threaded engine: every operator ran before the call returned, so "
                f"nothing overlaps Python (step times on this CPU: {timing})",
            )
        else:
            verdict = inconclusive(
                f"the Python thread waited {waits:.2f} ms per step inside MXNet calls with "
                f"{value} and {waits_without:.2f} ms without; {timing}"
            )
    elif ratio >= SLOWER and low > 1.0:
        verdict = Verdict("confirmed", f"training steps ran {ratio:.2f}x slower with it: {timing}")
    else:
        verdict = inconclusive(
            f"on this CPU the steps did not run measurably slower with it ({timing})"
        )
    if source is not None:
        verdict.rewrite = Rewrite(
            differ is False,
            "the script without the setting"
            + (f" gives the same {what}" if differ is False else f" changes the {what}"),
        )
    return verdict
