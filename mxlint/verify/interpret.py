"""Verdicts from what the verify subprocesses observed. Each rule family has its own notion of
"the predicted failure happened"; everything that could not be observed is inconclusive."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from mxlint.knowledge.api import api
from mxlint.rule import CONTEXT_ERROR, FindingKey
from mxlint.verify.model import Rewrite, Verdict, inconclusive
from mxlint.verify.plan import Item, runtime

HYBRID_STAGES = ("hybridize", "hybridize-train", "static", "export")
STAGE_TEXT = {
    "hybridize": "hybridize()",
    "hybridize-train": "hybridize() in training mode",
    "static": "hybridize(static_alloc=True, static_shape=True)",
    "export": "export()",
}
CTX_ERROR = re.compile(CONTEXT_ERROR, re.I)


def _expected(code: str, exc: dict[str, Any]) -> bool:
    """Whether `exc` is the failure the rule of `code` predicts (its runtime's `error`)."""
    how = runtime(code)
    pattern = how.error if how is not None else None
    text = f"{exc.get('type')}: {exc.get('message')}"
    return pattern is None or re.search(pattern, text, re.I) is not None


def _is_context(code: str) -> bool:
    how = runtime(code)
    return how is not None and how.check == "context"


SYMBOL_REPR = re.compile(r"<Symbol\b")


def _short(path: str) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return path


def _exc_text(exc: dict[str, Any]) -> str:
    return f"{exc.get('type')}: {str(exc.get('message', '')).strip()[:300]}"


#: MXL115's message names the operator as NDArray spells it ("NDArray's `-` broadcasts").
_BROADCAST_OPERATOR = re.compile(r"NDArray's `([^`]+)` broadcasts")


def _shape_error_node(exc: dict[str, Any], item: Item) -> str | None:
    """The graph node of MXNet's shape error when it is the operator an MXL115 finding names:
    shape inference runs after tracing, so no frame points at the line; the node's name does
    (MXNet names `a - b` `<block>__minus<n>`, see `symbol_nodes` in the generated facts)."""
    if item.finding.code != "MXL115":
        return None
    spelled = _BROADCAST_OPERATOR.search(item.finding.message)
    stem = api().symbol_nodes.get(spelled.group(1)) if spelled is not None else None
    if stem is None:
        return None
    # The block's prefix ends in "_": `net0__minus0`, never `net0__not_equal0` for `_equal`.
    found = re.search(
        rf"Incompatible attr in node ((?:\S*_)?{re.escape(stem)}\d+) at",
        str(exc.get("message", "")),
    )
    return found.group(1) if found is not None else None


def _frames_hit(exc: dict[str, Any], item: Item) -> bool:
    return any(
        os.path.realpath(f) == item.path and ln == item.line for f, ln in exc.get("frames", [])
    )


def _raised_after(code: str, exc: dict[str, Any]) -> bool:
    """A loud hybrid rule's failure raised after its line ran, outside the forward (MXNet
    checking what the forward returned): its `error` must match, a bare `loud` is not enough."""
    how = runtime(code)
    return how is not None and how.loud and how.error is not None and _expected(code, exc)


def _failure(payload: dict[str, Any]) -> str | None:
    if payload.get("status") == "harness-error":
        exc = payload.get("exception", {})
        return f"the harness could not run it: {_exc_text(exc)}"
    if payload.get("status") in ("not-hybrid", "no-input"):
        return str(payload.get("reason"))
    return None


# -- hybridization and in-forward contexts ---------------------------------------------------


def block_verdicts(items: Sequence[Item], payload: dict[str, Any]) -> dict[FindingKey, Verdict]:
    failure = _failure(payload)
    if failure:
        return {it.key: inconclusive(failure) for it in items}
    stages = payload.get("stages", {})
    imperative = stages.get("imperative", {})
    mode_ctx = any(_is_context(it.finding.code) for it in items)
    shapes = payload.get("input_shapes")
    where = f"input shape {shapes}" if shapes else "the probe input"
    if payload.get("guessed_ctor"):
        where += f"; constructor arguments guessed: {payload['guessed_ctor']}"
    if mode_ctx:
        return _ctx_block(items, stages, where)
    if not imperative.get("ok", False):
        exc = imperative.get("exception", {})
        return {
            it.key: inconclusive(f"the block fails imperatively: {_exc_text(exc)}") for it in items
        }
    out: dict[FindingKey, Verdict] = {}
    executed = {(os.path.realpath(f), ln) for f, ln in payload.get("lines_hybrid", [])}
    broken = next(
        ((s, stages[s]) for s in HYBRID_STAGES if s in stages and not stages[s].get("ok")), None
    )
    mismatch = next(((s, d) for s, d in payload.get("compare", {}).items() if d), None)
    printed = SYMBOL_REPR.search(payload.get("stdout_hybrid", "") or "")
    for it in items:
        ran = (it.path, it.line) in executed
        if broken is not None:
            stage, info = broken
            exc = info.get("exception", {})
            if _frames_hit(exc, it):
                out[it.key] = Verdict(
                    "confirmed",
                    f"{STAGE_TEXT[stage]} raised {_exc_text(exc)} at line {it.line} ({where})",
                )
                continue
            if ran and _raised_after(it.finding.code, exc):
                out[it.key] = Verdict(
                    "confirmed",
                    f"{STAGE_TEXT[stage]} raised {_exc_text(exc)} after line {it.line} ran "
                    f"({where})",
                )
                continue
            lines = [ln for f, ln in exc.get("frames", []) if os.path.realpath(f) == it.path]
            at = f" at line {lines[-1]}" if lines else ""
            kind = "print" if it.finding.code == "MXL106" else "raise"
            later = next(
                (
                    e
                    for e in payload.get("tolerant", [])
                    if e["file"] == it.path
                    and e["line"] == it.line
                    and e.get("kind", "raise") == kind
                ),
                None,
            )
            if later is not None:
                out[it.key] = Verdict(
                    "confirmed",
                    f"masked by the break{at}; with that "
                    f"break answered, line {it.line} {'fails' if kind == 'raise' else 'misbehaves'} too under "
                    f"{STAGE_TEXT[stage]}: {later['what']}",
                )
                continue
            node = _shape_error_node(exc, it)
            if node is not None:
                out[it.key] = Verdict(
                    "confirmed",
                    f"{STAGE_TEXT[stage]} raised {_exc_text(exc)} ({where}): the graph node "
                    f"`{node}` is the flagged operator, which a Symbol does not broadcast",
                )
                continue
            out[it.key] = inconclusive(
                f"{STAGE_TEXT[stage]} fails{at} for another reason "
                f"first ({_exc_text(exc)}); this line is masked"
            )
            continue
        if it.finding.code == "MXL106" and ran and printed:
            shown = next(ln for ln in payload["stdout_hybrid"].splitlines() if "<Symbol" in ln)
            out[it.key] = Verdict(
                "confirmed",
                "under hybridize() print() showed "
                f"{shown.strip()[:80]!r} (a graph node), not values",
            )
            continue
        if mismatch is not None and ran:
            stage, detail = mismatch
            out[it.key] = Verdict(
                "confirmed",
                f"silent graph break: imperative and "
                f"{STAGE_TEXT[stage]} results differ: {detail} ({where})",
            )
            continue
        if not ran:
            out[it.key] = Verdict(
                "refuted",
                "the line never runs under hybridize() "
                f"({where}); hybridized results equal imperative ones",
            )
            continue
        out[it.key] = Verdict(
            "refuted",
            "ran hybridized (plain and static_alloc) and "
            f"exported; outputs and gradients equal the imperative run "
            f"({where})",
        )
    rewrite = payload.get("rewrite")
    if rewrite:
        verified, evidence = rewrite.get("verified"), str(rewrite.get("evidence", ""))
        unfixed = {it.line for it in items if it.finding.fix is None}
        blocked = [
            ln
            for f, ln in rewrite.get("frames", [])
            if os.path.realpath(f) == items[0].path and ln in unfixed
        ]
        if verified is False and blocked:
            verified = None
            evidence = (
                f"cannot be verified alone: the block still breaks at line {blocked[-1]}"
                f", a finding without a fix ({evidence})"
            )
        for it in items:
            if it.finding.fix is not None and it.key in out:
                out[it.key].rewrite = Rewrite(verified, evidence)
    return out


def _ctx_block(
    items: Sequence[Item], stages: dict[str, Any], where: str
) -> dict[FindingKey, Verdict]:
    out: dict[FindingKey, Verdict] = {}
    failed = next(((s, v) for s, v in stages.items() if not v.get("ok")), None)
    for it in items:
        if failed is None:
            out[it.key] = Verdict(
                "refuted",
                "forward and backward ran with parameters and "
                f"input on gpu(0) ({where}) without a context error",
            )
            continue
        exc = failed[1].get("exception", {})
        in_file = [ln for f, ln in exc.get("frames", []) if os.path.realpath(f) == it.path]
        # Parameters and input were placed on the device: a context error inside this
        # block's forward comes from a tensor the forward created on the default context.
        if in_file and CTX_ERROR.search(str(exc.get("message", ""))):
            at = "" if in_file[-1] == it.line else f" (raised at line {in_file[-1]})"
            out[it.key] = Verdict(
                "confirmed", f"with parameters and input on gpu(0): {_exc_text(exc)}{at}"
            )
        else:
            out[it.key] = inconclusive(f"the block fails on gpu(0) elsewhere: {_exc_text(exc)}")
    return out


# -- scripts: contexts, autograd and memory, lifecycle ---------------------------------------


def _watch(payload: dict[str, Any], item: Item) -> dict[str, Any]:
    for w in payload.get("watch", []):
        if os.path.realpath(w["file"]) == item.path and w["line"] == item.line:
            return dict(w)
    return {"runs": 0, "recording": 0, "exception": None}


def _bounded(payload: dict[str, Any]) -> str:
    steps = payload.get("steps", 0)
    return f"{steps} training step{'s' if steps != 1 else ''}" if steps else "the bounded run"


def loud_verdict(item: Item, payload: dict[str, Any]) -> Verdict:
    """Codes whose failure is an exception at (or, for contexts, after) the flagged line."""
    failure = _failure(payload)
    if failure:
        return inconclusive(failure)
    w = _watch(payload, item)
    code = item.finding.code
    mapped = _amp_mapped(payload)
    if w.get("exception") and _expected(code, w["exception"]):
        return Verdict("confirmed", f"line {item.line} raised {_exc_text(w['exception'])}{mapped}")
    exc = payload.get("exception")
    if exc and _frames_hit(exc, item) and _expected(code, exc):
        return Verdict("confirmed", f"line {item.line} raised {_exc_text(exc)}{mapped}")
    for text in payload.get("unraisable", []):
        if _is_context(code) and CTX_ERROR.search(text):
            return Verdict(
                "confirmed",
                "the kvstore updater raised (swallowed by ctypes, "
                f"'Exception ignored on calling ctypes callback'): {text[:300]}",
            )
    if exc and _is_context(code) and w["runs"] and _expected(code, exc):
        return Verdict(
            "confirmed", f"after line {item.line} ran, the script failed with {_exc_text(exc)}"
        )
    if exc and not w["runs"]:
        return inconclusive(f"the script failed before reaching line {item.line}: {_exc_text(exc)}")
    if not w["runs"]:
        return inconclusive(f"line {item.line} was not reached in {_bounded(payload)}")
    if exc:
        return inconclusive(f"the script failed for another reason first: {_exc_text(exc)}")
    return Verdict(
        "refuted",
        f"line {item.line} ran {w['runs']}x in {_bounded(payload)} without the predicted error",
    )


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
        )
    if trips and all(t.get("equal") for t in trips):
        return Verdict(
            "refuted",
            f"export and re-import at line {item.line}: the imported block and the exported "
            f"network give equal outputs ({trips[0]['detail']})",
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
    failure = _failure(payload)
    if failure:
        return inconclusive(failure)
    inits = [i for i in payload.get("lifecycle", {}).get("amp_inits", []) if _at(i, item)]
    if not inits:
        exc = payload.get("exception")
        why = f"; the script failed: {_exc_text(exc)}" if exc else ""
        return inconclusive(f"`amp.init()` at line {item.line} did not run{why}")
    cached = max(i.get("cached", 0) for i in inits)
    if not cached:
        return Verdict(
            "refuted",
            f"when `amp.init()` ran at line {item.line} no network had been hybridized and run "
            "yet: networks built before it still cast their operators for AMP",
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
    )


_PLURAL = {"step": "steps", "batch": "batches"}


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
    failure = _failure(naive)
    if failure:
        return inconclusive(failure)
    w = _watch(naive, item)
    if not w["runs"]:
        exc = naive.get("exception")
        why = f"; the script failed: {_exc_text(exc)}" if exc else ""
        return inconclusive(f"line {item.line} was not reached in {_bounded(naive)}{why}")
    if code == "MXL405":
        if w["recording"]:
            return Verdict(
                "confirmed",
                f"line {item.line} ran {w['recording']}x inside "
                "autograd.record(): its graph was recorded and layers ran in "
                "training mode (dropout, batch-norm statistics)",
            )
        return Verdict("refuted", f"line {item.line} ran {w['runs']}x, never while recording")
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
        )
        verdict.series = series
        return verdict
    if code == "MXL402" and not w["recording"]:
        return Verdict(
            "refuted", f"line {item.line} never ran inside autograd.record() and memory stays flat"
        )
    if threaded is not None and not _failure(threaded):
        t_storage = threaded.get("memory", {}).get("storage_kib", [])
        series["storage_kib (ThreadedEngine)"] = t_storage
        g = growth(t_storage)
        if g:
            verdict = Verdict(
                "confirmed",
                f"engine run-ahead: MXNet storage grows +{g:.1f} KiB "
                "per step under the threaded engine and stays flat under "
                "NaiveEngine (no synchronisation in the loop)",
            )
            verdict.series = series
            return verdict
    if len(storage) < 6:
        exc = naive.get("exception")
        why = f"; the script failed: {_exc_text(exc)}" if exc else ""
        return inconclusive(
            f"only {len(storage)} training steps ran: too few to measure memory growth{why}"
        )
    flat = f"{storage[-1]:.0f} KiB" if storage else "no allocations"
    verdict = Verdict(
        "refuted",
        f"memory stays flat over {len(storage)} steps under "
        f"NaiveEngine{' and the threaded engine' if threaded else ''} ({flat}, "
        f"{live[-1] if live else 0} live NDArrays)",
    )
    verdict.series = series
    return verdict


# -- seeds -----------------------------------------------------------------------------------


def fingerprint_diff(a: dict[str, Any], b: dict[str, Any]) -> tuple[bool | None, str]:
    """(differ?, what) over the components both runs produced; None when nothing compares."""
    fa, fb = a.get("fingerprint", {}), b.get("fingerprint", {})
    compared = []
    for key, label in (
        ("first_batch", "first batch"),
        ("losses", "losses"),
        ("params", "parameters after the bounded run"),
    ):
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


def seed_verdict(
    item: Item,
    rng: str,
    unseeded: Sequence[dict[str, Any]],
    seeded: Sequence[dict[str, Any]],
    how: str,
) -> Verdict:
    for p in list(unseeded) + list(seeded):
        failure = _failure(p)
        if failure:
            return inconclusive(failure)
    u1, u2 = unseeded
    if not _watch(u1, item)["runs"]:
        exc = u1.get("exception")
        why = f"; the script failed: {_exc_text(exc)}" if exc else ""
        return inconclusive(f"line {item.line} was not reached in {_bounded(u1)}{why}")
    differ, what = fingerprint_diff(u1, u2)
    if differ is None:
        exc = u1.get("exception")
        return inconclusive(
            "nothing to fingerprint (no batches, losses or trainer)"
            + (f"; the script failed: {_exc_text(exc)}" if exc else "")
        )
    if not differ:
        exc = u1.get("exception") or u2.get("exception")
        if exc:
            return inconclusive(
                f"the script failed ({_exc_text(exc)}) before runs without a "
                f"{rng} seed could differ (same {what} so far)"
            )
        if not (u1.get("steps") or u1.get("batches") or u1.get("fingerprint", {}).get("losses")):
            return inconclusive(
                "no training step, batch or loss to compare; only initial "
                f"parameters ({what}) were equal"
            )
        return Verdict("refuted", f"two fresh runs without a {rng} seed give the same {what}")
    s_differ, s_what = fingerprint_diff(*seeded)
    if s_differ:
        return inconclusive(
            f"two runs differ in their {what} without a {rng} seed, but also "
            f"with every RNG seeded ({s_what}): other nondeterminism"
        )
    verdict = Verdict(
        "confirmed", f"two fresh runs (all other RNGs seeded, {rng} not) differ in their {what}"
    )
    verdict.rewrite = Rewrite(
        s_differ is False,
        f"{how}: both runs give the same {s_what}"
        if s_differ is False
        else "the seeded runs had nothing to compare",
    )
    return verdict
