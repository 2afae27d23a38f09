"""Verdicts from what the verify subprocesses observed. Each rule family has its own notion of
"the predicted failure happened"; everything that could not be observed is inconclusive."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from mxlint.verify.evidence import CTX_ERROR, exc_text, expected, failure, frames_hit, is_context
from mxlint.verify.evidence import source as exc_source
from mxlint.verify.model import Rewrite, Verdict, inconclusive
from mxlint.verify.plan import Item

# -- scripts: contexts, autograd and memory, lifecycle ---------------------------------------


def watched(payload: dict[str, Any], item: Item) -> dict[str, Any]:
    for w in payload.get("watch", []):
        if os.path.realpath(w["file"]) == item.path and w["line"] == item.line:
            return dict(w)
    return {"runs": 0, "recording": 0, "exception": None}


def _bounded(payload: dict[str, Any]) -> str:
    steps = payload.get("steps", 0)
    return f"{steps} training step{'s' if steps != 1 else ''}" if steps else "the bounded run"


def _raised(item: Item, payload: dict[str, Any], exc: dict[str, Any], text: str) -> Verdict:
    basis, said = exc_source(exc, payload)
    return Verdict("confirmed", f"{text}; {said}", basis=basis)


def _what_ran(payload: dict[str, Any]) -> str:
    """`the script` or the called function, for reasons."""
    target = payload.get("target")
    return f"{target}()" if target else "the script"


def _failed_before(item: Item, payload: dict[str, Any], exc: dict[str, Any]) -> str:
    who = _what_ran(payload)
    if exc.get("type") == "SystemExit" and str(exc.get("message")) == "2":
        return (
            f"{who} exits with status 2 before reaching line {item.line}: its command line is "
            'missing arguments; give them in [tool.mxlint.verify.scripts."<file name>"] argv'
        )
    return f"{who} failed before reaching line {item.line}: {exc_text(exc)}"


def _misplaced(item: Item, payload: dict[str, Any]) -> Verdict | None:
    """A layer the line initialised on one device type inside a network on another."""
    here = [item.path, item.line]
    for event in payload.get("placement") or []:
        if [event.get("file"), event.get("line")] != here and here not in event.get("stack", []):
            continue
        own, theirs = set(event.get("devices", [])), set(event.get("network_devices", []))
        if own and theirs and not own & theirs:
            return Verdict(
                "confirmed",
                f"after line {item.line}, {event['block']}'s parameters are on "
                f"{', '.join(sorted(own))} while the rest of {event['network']} is on "
                f"{', '.join(sorted(theirs))}: its first forward pass raises a context error "
                "(gpu(i) emulated as cpu(i+1))"
                if payload.get("env", {}).get("ctx_map")
                else f"after line {item.line}, {event['block']}'s parameters are on "
                f"{', '.join(sorted(own))} while the rest of {event['network']} is on "
                f"{', '.join(sorted(theirs))}: its first forward pass raises a context error",
                basis="observed",
            )
    return None


def loud_verdict(item: Item, payload: dict[str, Any]) -> Verdict:
    """Codes whose failure is an exception at (or, for contexts, after) the flagged line."""
    why = failure(payload)
    if why:
        return inconclusive(why)
    w = watched(payload, item)
    code = item.finding.code
    if w.get("exception") and expected(code, w["exception"]):
        return _raised(
            item,
            payload,
            w["exception"],
            f"line {item.line} raised {exc_text(w['exception'])}{_amp_mapped(payload)}",
        )
    exc = payload.get("exception")
    if exc and frames_hit(exc, item) and expected(code, exc):
        return _raised(
            item, payload, exc, f"line {item.line} raised {exc_text(exc)}{_amp_mapped(payload)}"
        )
    for text in payload.get("unraisable", []):
        if is_context(code) and CTX_ERROR.search(text):
            return Verdict(
                "confirmed",
                "the kvstore updater raised (swallowed by ctypes, "
                f"'Exception ignored on calling ctypes callback'): {text[:300]}",
                basis="emulated" if "same context" in text else "raised",
            )
    if exc and is_context(code) and w["runs"] and expected(code, exc):
        return _raised(
            item,
            payload,
            exc,
            f"after line {item.line} ran, {_what_ran(payload)} failed with {exc_text(exc)}",
        )
    if exc and not w["runs"]:
        return inconclusive(_failed_before(item, payload, exc))
    if not w["runs"]:
        return inconclusive(f"line {item.line} was not reached in {_bounded(payload)}")
    placed = _misplaced(item, payload) if is_context(code) else None
    if placed is not None:
        return placed
    if exc:
        return inconclusive(
            f"{_what_ran(payload)} failed for another reason first: {exc_text(exc)}"
        )
    standin = _read_standin(item, payload)
    if standin:
        return inconclusive(
            f"line {item.line} ran without an error, but on a stand-in ({standin}), not on the "
            "file its writer writes: the format the finding is about was never read"
        )
    return Verdict(
        "refuted",
        f"line {item.line} ran {w['runs']}x in {_bounded(payload)} without the predicted error",
        basis="compared",
    )


#: Codes about the model file a line reads: a stand-in for that file proves nothing about them.
READS_FILES = frozenset({"MXL704", "MXL705"})
_FILE_STANDINS = ("missing parameter file", "missing exported model")


def _read_standin(item: Item, payload: dict[str, Any]) -> str | None:
    if item.finding.code not in READS_FILES:
        return None
    notes = payload.get("standins") or []
    return next((n for n in notes if n.startswith(_FILE_STANDINS)), None)


def writers_note(payload: dict[str, Any]) -> str:
    """What ran first to write the files the run read (`verify/writers.py`), for `reached`."""
    parts = []
    for w in payload.get("before") or []:
        name = f"{w['file']} (the writer, line {w['line']})" if w.get("line") else w["file"]
        wrote = ", ".join(w.get("wrote") or []) or "no file"
        if w.get("status") in ("finished", "stopped"):
            parts.append(f"{name} ran first in the same directory and wrote {wrote}")
        elif w.get("status") == "timeout":
            parts.append(f"{name} ran first but did not finish in its time limit (wrote {wrote})")
        else:
            parts.append(f"{name} ran first and failed: {w.get('error')} (wrote {wrote})")
    return "; ".join(parts)


def _amp_mapped(payload: dict[str, Any]) -> str:
    """A note when AMP's float16 target ran as bfloat16 (no float16 kernels on a CPU host)."""
    if payload.get("lifecycle", {}).get("amp_mapped"):
        return " (AMP's float16 ran as bfloat16: MXNet 1.9.1 has no float16 kernels on CPU)"
    return ""


def _at(entry: dict[str, Any], item: Item) -> bool:
    where = entry.get("where")
    if not where:
        return False
    last = where[2] if len(where) > 2 else where[1]
    return os.path.realpath(where[0]) == item.path and where[1] <= item.line <= last


def roundtrip_verdict(item: Item, payload: dict[str, Any]) -> Verdict:
    """An `imports` whose names differ from the export's: it raises at the line, or the block
    it imports computes something else than the network that was exported."""
    loud = loud_verdict(item, payload)
    if loud.verdict == "confirmed":
        return loud
    trips = [t for t in payload.get("lifecycle", {}).get("roundtrips", []) if _at(t, item)]
    if any(t.get("equal") is False for t in trips):
        detail = next(t["detail"] for t in trips if t.get("equal") is False)
        return Verdict(
            "confirmed",
            f"export and re-import at line {item.line}: run on the arrays the exported network "
            f"last saw, the imported block and the network disagree: {detail}",
            basis="compared",
        )
    if trips and all(t.get("equal") for t in trips):
        return Verdict(
            "refuted",
            f"export and re-import at line {item.line}: the imported block and the exported "
            f"network give equal outputs ({trips[0]['detail']})",
            basis="compared",
        )
    if loud.verdict == "refuted":
        return inconclusive(
            f"line {item.line} imported the graph without an error, but the network that wrote "
            "it was not exported in this run: nothing to compare its outputs with"
        )
    return loud


def amp_verdict(item: Item, payload: dict[str, Any]) -> Verdict:
    """`amp.init()` after the network was built: the networks that already had a cached
    graph when it ran keep running it in float32."""
    why = failure(payload)
    if why:
        return inconclusive(why)
    inits = [i for i in payload.get("lifecycle", {}).get("amp_inits", []) if _at(i, item)]
    if not inits:
        exc = payload.get("exception")
        why = f"; the script failed: {exc_text(exc)}" if exc else ""
        return inconclusive(f"`amp.init()` at line {item.line} did not run{why}")
    cached = max(i.get("cached", 0) for i in inits)
    if not cached:
        return Verdict(
            "refuted",
            f"when `amp.init()` ran at line {item.line} no network had been hybridized and run "
            "yet: networks built before it still cast their operators for AMP",
            basis="observed",
        )
    outputs = payload.get("lifecycle", {}).get("stale_outputs", {})
    seen = (
        f"; called {sum(outputs.values())}x after it, they returned "
        + ", ".join(f"{n}x {dtype}" for dtype, n in sorted(outputs.items()))
        if outputs
        else ""
    )
    return Verdict(
        "confirmed",
        f"when `amp.init()` ran at line {item.line}, {cached} network(s) had already been "
        f"hybridized and run: they keep their cached float32 graph, without AMP's casts{seen}"
        f"{_amp_mapped(payload)}",
        basis="observed",
    )


#: The share of nonzero gradient values float16 must flush to zero for a confirmation: a few
#: values near zero occur in any gradient, and are no loss of learning.
UNDERFLOW_SHARE = 0.01
#: Words of an underflow verdict whose gradients were measured.
MEASURED_UNDERFLOW = "nonzero gradient values"


def underflow_verdict(item: Item, payload: dict[str, Any]) -> Verdict:
    """A backward pass under float16 AMP without loss scaling: the gradients it computed, read
    after the flagged line's first passes, and the share float16 makes zero."""
    why = failure(payload)
    if why:
        return inconclusive(why)
    w = watched(payload, item)
    lifecycle = payload.get("lifecycle", {})
    passes = [g for g in lifecycle.get("gradients", []) if _at(g, item) and "nonzero" in g]
    if not w["runs"] or not passes:
        exc = payload.get("exception")
        if not lifecycle.get("amp_inits"):
            return inconclusive(
                f"`amp.init()` did not run before line {item.line}"
                + (f"; {_what_ran(payload)} failed: {exc_text(exc)}" if exc else "")
            )
        if exc and not w["runs"]:
            return inconclusive(_failed_before(item, payload, exc))
        return inconclusive(f"line {item.line} was not reached in {_bounded(payload)}")
    if not lifecycle.get("amp_mapped"):
        return inconclusive(
            "AMP ran in float16 here: the gradients float16 flushed are zeros already, which "
            "the run cannot tell from the zeros of inactive units"
        )
    nonzero = sum(g["nonzero"] for g in passes)
    flushed = sum(g["flushed"] for g in passes)
    still = sum(g["flushed_scaled"] for g in passes)
    vanished = sorted({n for g in passes for n in g.get("vanished", [])})
    smallest = min((g["smallest"] for g in passes if g.get("smallest") is not None), default=None)
    share = flushed / nonzero if nonzero else 0.0
    counted = (
        f"{flushed} of the {nonzero} nonzero gradient values of {len(passes)} backward "
        f"pass{'es' if len(passes) != 1 else ''} at line {item.line} ({100 * share:.2g} %)"
    )
    ran = (
        " (measured on the bfloat16 run AMP's float16 became: MXNet 1.9.1 has no float16 "
        "kernels on CPU; bfloat16 has float32's range, so these values are the unflushed ones)"
    )
    if share >= UNDERFLOW_SHARE or vanished:
        lost = f"; every gradient of {', '.join(vanished)} is among them" if vanished else ""
        return Verdict(
            "confirmed",
            f"{counted} lie below float16's smallest value (about 6e-8): a float16 backward "
            f"pass makes them zero{lost}; at AMP's initial loss scale (2**16) {still} would"
            f"{ran}",
            basis="measured",
        )
    low = f"; the smallest was {smallest:.2g}" if smallest is not None else ""
    return inconclusive(
        f"{counted} lie below float16's smallest value (about 6e-8){low}: on this run's inputs "
        "and weights no learning is lost, but gradients shrink as the loss falls, which a "
        f"bounded run does not reach{ran}"
    )


_PLURAL = {"step": "steps", "batch": "batches"}
#: An engine this far behind at the end of a run ran ahead of the loop (seconds).
BEHIND_FLOOR = 0.05


def growth(series: Sequence[float], warmup: int = 2) -> float | None:
    """Average growth per step after warm-up, when the series grows steadily; else None."""
    tail = list(series[warmup:])
    if len(tail) < 4:
        return None
    steps = [b - a for a, b in zip(tail, tail[1:])]
    rising = sum(1 for s in steps if s > 0)
    falling = sum(1 for s in steps if s < 0)
    if rising >= 0.7 * len(steps) and falling <= 0.1 * len(steps) and tail[-1] > tail[0]:
        return (tail[-1] - tail[0]) / (len(tail) - 1)
    return None


def memory_verdict(item: Item, naive: dict[str, Any], threaded: dict[str, Any] | None) -> Verdict:
    code = item.finding.code
    if code in ("MXL403", "MXL404"):
        return loud_verdict(item, naive)
    why = failure(naive)
    if why:
        return inconclusive(why)
    w = watched(naive, item)
    if not w["runs"]:
        exc = naive.get("exception")
        why = f"; {_what_ran(naive)} failed: {exc_text(exc)}" if exc else ""
        return inconclusive(f"line {item.line} was not reached in {_bounded(naive)}{why}")
    if code == "MXL405":
        if w["recording"]:
            return Verdict(
                "confirmed",
                f"line {item.line} ran {w['recording']}x inside "
                "autograd.record(): its graph was recorded and layers ran in "
                "training mode (dropout, batch-norm statistics)",
                basis="observed",
            )
        return Verdict(
            "refuted",
            f"line {item.line} ran {w['runs']}x, never while recording",
            basis="observed",
        )
    mem = naive.get("memory", {})
    storage, live = mem.get("storage_kib", []), mem.get("live_ndarrays", [])
    per = "step"
    if len(storage) < 6 and len(mem.get("batch_storage_kib", [])) >= 6:
        # An evaluation loop: no training step ran, its batches did.
        storage, live = mem["batch_storage_kib"], mem.get("batch_live_ndarrays", [])
        per = "batch"
    g_storage, g_live = growth(storage), growth(live)
    series = {"storage_kib (NaiveEngine)": storage, "live_ndarrays (NaiveEngine)": live}
    if g_storage or g_live:
        parts = []
        if g_storage and g_storage >= 0.05:
            parts.append(f"+{g_storage:.1f} KiB of MXNet storage")
        if g_live:
            parts.append(f"+{g_live:.1f} live NDArrays")
        verdict = Verdict(
            "confirmed",
            f"memory grows every {per} under NaiveEngine: "
            f"{' and '.join(parts)} per {per} over {len(storage)} {_PLURAL[per]}",
            basis="measured",
        )
        verdict.series = series
        return verdict
    if code == "MXL402" and not w["recording"]:
        return Verdict(
            "refuted",
            f"line {item.line} never ran inside autograd.record() and memory stays flat",
            basis="measured",
        )
    if threaded is not None and not failure(threaded):
        t_storage = threaded.get("memory", {}).get("storage_kib", [])
        series["storage_kib (ThreadedEngine)"] = t_storage
        g = growth(t_storage)
        behind = threaded.get("behind_s")
        if not g and behind is not None and behind >= BEHIND_FLOOR and threaded.get("steps"):
            verdict = Verdict(
                "confirmed",
                f"engine run-ahead: nothing in the loop waits, so after "
                f"{threaded['steps']} steps the threaded engine was {1000 * behind:.0f} ms of "
                "work behind; every queued step keeps its buffers allocated",
                basis="measured",
            )
            verdict.series = series
            return verdict
        if g:
            verdict = Verdict(
                "confirmed",
                f"engine run-ahead: MXNet storage grows +{g:.1f} KiB "
                "per step under the threaded engine and stays flat under "
                "NaiveEngine (no synchronisation in the loop)",
                basis="measured",
            )
            verdict.series = series
            return verdict
    if len(storage) < 6:
        exc = naive.get("exception")
        why = f"; the script failed: {exc_text(exc)}" if exc else ""
        return inconclusive(
            f"only {len(storage)} training steps ran: too few to measure memory growth{why}"
        )
    flat = f"{storage[-1]:.0f} KiB" if storage else "no allocations"
    verdict = Verdict(
        "refuted",
        f"memory stays flat over {len(storage)} steps under "
        f"NaiveEngine{' and the threaded engine' if threaded else ''} ({flat}, "
        f"{live[-1] if live else 0} live NDArrays)",
        basis="measured",
    )
    verdict.series = series
    return verdict


def fix_verdict(item: Item, rewritten: dict[str, Any], original: dict[str, Any]) -> Rewrite:
    """The fix applied (with the task's other fixes): its line runs without the failure."""
    why = failure(rewritten)
    if why:
        return Rewrite(None, f"the rewritten program did not run: {why}")
    w = watched(rewritten, item)
    if not w["runs"]:
        exc = rewritten.get("exception")
        tail = f" ({exc_text(exc)})" if exc else ""
        return Rewrite(None, f"with the fix applied, line {item.line} was not reached{tail}")
    caught = [e for e in (w.get("exception"), rewritten.get("exception")) if e]
    failed = [e for e in caught if expected(item.finding.code, e) and frames_hit(e, item)]
    if failed or (w.get("exception") and expected(item.finding.code, w["exception"])):
        bad = failed[0] if failed else w["exception"]
        return Rewrite(False, f"with the fix applied line {item.line} still raises {exc_text(bad)}")
    steps = rewritten.get("steps") or 0
    ms = rewritten.get("step_ms")
    timed = (
        f"; {steps} training steps at {ms:.1f} ms each (the original stops at the failure: "
        "no step time to compare with)"
        if ms and not original.get("step_ms")
        else (
            f"; {ms:.1f} ms per step against {original['step_ms']:.1f} ms for the original"
            if ms and original.get("step_ms")
            else ""
        )
    )
    return Rewrite(
        True, f"with the fix applied line {item.line} ran {w['runs']}x without the failure{timed}"
    )


# -- seeds -----------------------------------------------------------------------------------


FINGERPRINT = (
    ("first_batch", "first batch"),
    ("losses", "losses"),
    ("params", "parameters after the bounded run"),
    ("result", "returned value"),
    ("stdout", "printed output"),
    ("built", "first batch of the loader built on the line"),
)


def fingerprint_diff(
    a: dict[str, Any], b: dict[str, Any], only: set[str] | None = None
) -> tuple[bool | None, str]:
    """(differ?, what) over the components both runs produced (of `only`, when given); None
    when nothing compares."""
    fa, fb = a.get("fingerprint", {}), b.get("fingerprint", {})
    compared = []
    for key, label in FINGERPRINT:
        if only is not None and key not in only:
            continue
        x, y = fa.get(key), fb.get(key)
        if not x or not y:
            continue
        if key == "losses":
            n = min(len(x), len(y))
            x, y = x[:n], y[:n]
        compared.append(label)
        if x != y:
            return True, label
    if not compared:
        return None, ""
    return False, ", ".join(compared)


def _differing(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, str]]:
    """Fingerprint components both runs produced that differ."""
    fa, fb = a.get("fingerprint", {}), b.get("fingerprint", {})
    out = []
    for key, label in FINGERPRINT:
        x, y = fa.get(key), fb.get(key)
        if not x or not y:
            continue
        if key == "losses":
            n = min(len(x), len(y))
            x, y = x[:n], y[:n]
        if x != y:
            out.append((key, label))
    return out


def seed_reached(item: Item, first: dict[str, Any]) -> Verdict | None:
    """After the first run: an inconclusive verdict when it cannot go on (failed to run, or
    never reached the line), else None."""
    why = failure(first)
    if why:
        return inconclusive(why)
    if not watched(first, item)["runs"]:
        exc = first.get("exception")
        tail = f"; it failed: {exc_text(exc)}" if exc else ""
        return inconclusive(f"line {item.line} was not reached in {_bounded(first)}{tail}")
    return None


def seed_verdict(
    item: Item,
    rng: str,
    unseeded: Sequence[dict[str, Any]],
    fixed: Sequence[dict[str, Any]] | None,
    how: str,
    alone: bool = False,
) -> Verdict:
    """`alone`: the two runs had every generator seeded but this line's draws of `rng` (from a
    stream started from two seeds); else `rng` was left unseeded as a whole. `fixed`: two runs
    the same way with the rewrite applied (needed when the first two differ): what differs
    there too is other nondeterminism (timings printed), not the line."""
    for p in list(unseeded) + list(fixed or []):
        why = failure(p)
        if why:
            return inconclusive(why)
    u1, u2 = unseeded
    early = seed_reached(item, u1)
    if early is not None:
        return early
    runs = (
        f"two runs with every generator seeded and only line {item.line}'s {rng} draws left random"
        if alone
        else f"two fresh runs (all other generators seeded, {rng} not)"
    )
    differ, what = fingerprint_diff(u1, u2)
    if differ is None:
        exc = u1.get("exception")
        return inconclusive(
            "nothing to fingerprint (no batches, losses, trainer, result or output)"
            + (f"; it failed: {exc_text(exc)}" if exc else "")
        )
    if not differ:
        exc = u1.get("exception") or u2.get("exception")
        if exc:
            return inconclusive(
                f"it failed ({exc_text(exc)}) before {runs} could differ (same {what} so far)"
            )
        if not (
            u1.get("steps")
            or u1.get("batches")
            or any(u1.get("fingerprint", {}).get(k) for k in ("losses", "result", "stdout"))
        ):
            return inconclusive(
                "no training step, batch, loss, result or output to compare; only initial "
                f"parameters ({what}) were equal"
            )
        tail = (
            ": the line's draws do not reach the results"
            if alone
            else (
                "; MXNet's generator starts from the same state in every process"
                if rng == "mxnet"
                else ""
            )
        )
        return Verdict("refuted", f"{runs} give the same {what}{tail}", basis="compared")
    changed = _differing(u1, u2)
    if not fixed:
        return Verdict(
            "confirmed",
            f"{runs} differ in their {', '.join(label for _, label in changed)}",
            basis="compared",
        )
    still = {key for key, _ in _differing(fixed[0], fixed[1])}
    explained = [(k, label) for k, label in changed if k not in still]
    if not explained:
        return inconclusive(
            f"{runs} differ in their {', '.join(label for _, label in changed)}, but so do two "
            f"runs {how}: other nondeterminism (timings in the printed output?)"
        )
    verdict = Verdict(
        "confirmed",
        f"{runs} differ in their {', '.join(label for _, label in explained)}",
        basis="compared",
    )
    agree = ", ".join(label for _, label in explained)
    verdict.rewrite = Rewrite(
        True,
        f"{how}: two runs give the same {agree} (the two runs with the rewrite applied compared "
        "with each other; nothing to time: it adds no work per step)",
    )
    return verdict


# -- timing and AMP ----------------------------------------------------------------------------

#: Queued work below this is the engine keeping up (seconds), and below this share of the
#: timed interval a reading is accurate enough.
PENDING_FLOOR = 0.001
PENDING_SHARE = 0.05
#: A timed interval shorter than this held no real work to judge by (seconds).
INTERVAL_FLOOR = 0.02


def timing_verdict(item: Item, payload: dict[str, Any] | None) -> Verdict:
    """MXL601: how much queued work the clock read at the line missed, on the threaded engine
    (the rewrite, `mx.nd.waitall()` before the read, compared with the reading as written)."""
    if payload is None:
        return inconclusive("no run on the asynchronous engine")
    why = failure(payload)
    if why:
        return inconclusive(why)
    reads: list[dict[str, Any]] = next(
        (
            t["reads"]
            for t in payload.get("timing", [])
            if os.path.realpath(t["file"]) == item.path and t["line"] == item.line
        ),
        [],
    )
    if not reads:
        exc = payload.get("exception")
        tail = f"; it failed: {exc_text(exc)}" if exc else ""
        return inconclusive(f"line {item.line} was not reached in {_bounded(payload)}{tail}")
    worked = [r for r in reads if r.get("work") is None or r["work"] > 0]
    if not worked:
        return inconclusive(
            f"line {item.line} read the clock before any batch or training step of its function "
            f"ran in {_bounded(payload)}: nothing was timed"
        )
    worst = max(worked, key=lambda r: r["pending_s"])
    pending, interval = worst["pending_s"], worst.get("interval_s")
    measured = (
        f"the reading at line {item.line} says {interval * 1000:.1f} ms"
        if interval is not None
        else f"the clock read at line {item.line}"
    )
    compared = (
        f"{measured}; mx.nd.waitall() moved in front of it (the rewrite) waits another "
        f"{pending * 1000:.1f} ms for queued work (threaded engine)"
    )
    share = pending / (pending + interval) if interval else None
    if pending >= PENDING_FLOOR and (share is None or share >= PENDING_SHARE):
        missed = f": the reading misses {100 * share:.0f}% of the work" if share else ""
        return Verdict("confirmed", compared + missed, basis="measured")
    if interval is not None and interval < INTERVAL_FLOOR:
        return inconclusive(
            f"{measured}: too little MXNet work was timed to judge (the loop it times did "
            f"not run in {_bounded(payload)})"
        )
    return Verdict(
        "refuted",
        f"{compared}: the engine had kept up, the reading is accurate here",
        basis="measured",
    )
