"""Verdicts of block tasks (hybridization, and context findings inside a forward) from what the
block harness saw: the hybridized stages' exceptions, the tolerant trace past the first break,
what the trace did silently (`observe`), outputs, output structure and state compared with the
imperative reference, and which lines each run reached.

A line no run reached is inconclusive with that reason; a line only the imperative path reaches
is refuted (hybridized, the trace never gets there)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from mxlint.knowledge.api import api
from mxlint.rule import FindingKey
from mxlint.verify.evidence import (
    CTX_ERROR,
    exc_text,
    expected,
    failure,
    frames_hit,
    is_context,
    source,
)
from mxlint.verify.model import Rewrite, Verdict, inconclusive
from mxlint.verify.plan import Item, runtime

HYBRID_STAGES = ("hybridize", "hybridize-train", "static", "export")
STAGE_TEXT = {
    "hybridize": "hybridize()",
    "hybridize-train": "hybridize() in training mode",
    "static": "hybridize(static_alloc=True, static_shape=True)",
    "export": "export()",
}
SYMBOL_REPR = re.compile(r"<Symbol\b")
INFERRED = "inferred past an earlier break (tolerant Symbol)"
OBSERVED = "observed while hybridize() traced the graph"

#: MXL115's message names the operator as NDArray spells it ("NDArray's `-` broadcasts").
_BROADCAST_OPERATOR = re.compile(r"NDArray's `([^`]+)` broadcasts")
#: The attribute an MXL113 finding is about: the first `self.<name>` its message quotes.
_SELF_ATTR = re.compile(r"`self\.(\w+)")


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


def _raised_after(code: str, exc: dict[str, Any]) -> bool:
    """A loud hybrid rule's failure raised after its line ran, outside the forward (MXNet
    checking what the forward returned): its `error` must match, a bare `loud` is not enough."""
    how = runtime(code)
    return how is not None and how.loud and how.error is not None and expected(code, exc)


def _shows(code: str) -> tuple[str, ...]:
    how = runtime(code)
    return how.shows if how is not None else ()


def _lines(payload: dict[str, Any], *keys: str) -> set[tuple[str, int]]:
    out = set()
    for key in keys:
        value = payload.get(key)
        if isinstance(value, dict):
            value = value.get("lines", [])
        for f, ln in value or []:
            out.add((os.path.realpath(f), int(ln)))
    return out


class _Run:
    """One block payload, read once for all the task's findings."""

    def __init__(self, payload: dict[str, Any]) -> None:
        self.payload = payload
        stages = payload.get("stages", {})
        self.stages = stages
        probe = payload.get("probe") or {"ok": True}
        self.imperative_ok = bool(probe.get("ok")) and stages.get("imperative", {}).get("ok", False)
        self.probe = probe
        self.hybrid = _lines(payload, "lines_hybrid")
        self.imperative = _lines(payload, "lines_imperative", "probe")
        self.broken = next(
            ((s, stages[s]) for s in HYBRID_STAGES if s in stages and not stages[s].get("ok")),
            None,
        )
        self.mismatch = next(((s, d) for s, d in payload.get("compare", {}).items() if d), None)
        self.events = list(payload.get("observed", [])) + list(payload.get("tolerant", []))
        shapes = payload.get("input_shapes")
        self.where = f"inputs {shapes}" if shapes else "the probe input"
        if payload.get("guessed_ctor"):
            self.where += f"; constructor arguments guessed: {payload['guessed_ctor']}"
        if payload.get("all_inputs"):
            self.where += "; optional inputs given too, the only way the line runs"
        if payload.get("ctor_override"):
            flags = ", ".join(f"{k}={v}" for k, v in payload["ctor_override"].items())
            self.where += f"; constructed with {flags}, the only way the line runs"

    def reference(self) -> str:
        """How the imperative reference fared, when it did not run through."""
        if self.imperative_ok:
            return ""
        exc = self.probe.get("exception") or self.stages.get("imperative", {}).get("exception")
        if self.probe.get("timeout"):
            return "; the imperative reference did not finish within its time limit"
        if exc:
            lines = [ln for f, ln in exc.get("frames", []) if os.path.realpath(f) in self.files()]
            at = f" at line {lines[-1]}" if lines else ""
            return f"; imperatively the block fails{at} for another reason ({exc_text(exc)})"
        return ""

    def files(self) -> set[str]:
        return {f for f, _ in self.hybrid | self.imperative}

    def event(self, item: Item, kinds: tuple[str, ...]) -> dict[str, Any] | None:
        """The first event of these kinds at the item's line, or in what that line called."""
        here = [item.path, item.line]
        return next(
            (
                e
                for e in self.events
                if e.get("kind", "raise") in kinds
                and (
                    [e.get("file"), e.get("line")] == here
                    or here in [list(s) for s in e.get("stack", [])]
                )
            ),
            None,
        )


def block_verdicts(items: Sequence[Item], payload: dict[str, Any]) -> dict[FindingKey, Verdict]:
    why = failure(payload)
    if why:
        return {it.key: inconclusive(why) for it in items}
    run = _Run(payload)
    if any(is_context(it.finding.code) for it in items):
        return _ctx_block(items, run)
    out = {it.key: _one(it, run) for it in items}
    _rewrite(items, payload, out)
    _fixed_alone(items, run, out)
    return out


def _fixed_alone(items: Sequence[Item], run: _Run, out: dict[FindingKey, Verdict]) -> None:
    """A break raised at another line, when the task's only fix removes it: with that line's
    fix alone the block hybridizes and matches the imperative run, so the line is the cause."""
    fixed = [it for it in items if it.finding.fix is not None]
    rewrite = run.payload.get("rewrite") or {}
    if len(fixed) != 1 or run.broken is None or rewrite.get("verified") is not True:
        return
    it = fixed[0]
    found = out[it.key]
    if found.verdict != "inconclusive":
        return
    stage, info = run.broken
    exc = info.get("exception", {})
    lines = [ln for f, ln in exc.get("frames", []) if os.path.realpath(f) == it.path]
    at = f" at line {lines[-1]}" if lines else ""
    out[it.key] = Verdict(
        "confirmed",
        f"{STAGE_TEXT[stage]} raised {exc_text(exc)}{at} ({run.where}); with line {it.line}'s "
        "fix alone the block hybridizes, exports and matches the imperative run: the line is "
        "the cause",
        basis="compared",
        rewrite=found.rewrite,
    )


def _one(it: Item, run: _Run) -> Verdict:
    where = run.where
    line = it.line
    ran_h = (it.path, line) in run.hybrid
    ran_i = (it.path, line) in run.imperative
    shows = _shows(it.finding.code)
    if run.broken is not None:
        stage, info = run.broken
        exc = info.get("exception", {})
        if info.get("timeout"):
            pass
        elif frames_hit(exc, it):
            probe_exc = run.probe.get("exception") or {}
            both = not run.imperative_ok and frames_hit(probe_exc, it)
            if both and not expected(it.finding.code, exc):
                return inconclusive(
                    f"line {line} fails in both modes ({exc_text(exc)}): not a hybridization "
                    f"break ({where})"
                )
            basis, said = source(exc, run.payload)
            mode = " (imperatively too)" if both else ""
            return Verdict(
                "confirmed",
                f"{STAGE_TEXT[stage]} raised {exc_text(exc)} at line {line}{mode} ({where}); "
                f"{said}{run.reference() if not both else ''}",
                basis=basis,
            )
        elif ran_h and _raised_after(it.finding.code, exc):
            basis, said = source(exc, run.payload)
            return Verdict(
                "confirmed",
                f"{STAGE_TEXT[stage]} raised {exc_text(exc)} after line {line} ran ({where}); "
                f"{said}{run.reference()}",
                basis=basis,
            )
    if run.broken is not None:
        shown = _shown(it, run, shows, ran_h, ran_i)
        if shown is not None:
            return shown
        stage, info = run.broken
        exc = info.get("exception", {})
        if info.get("timeout"):
            return inconclusive(
                f"timeout: {STAGE_TEXT[stage]} did not finish within its time limit"
            )
        lines = [ln for f, ln in exc.get("frames", []) if os.path.realpath(f) == it.path]
        at = f" at line {lines[-1]}" if lines else ""
        kind = "print" if it.finding.code == "MXL106" else "raise"
        later = run.event(it, (kind,))
        if later is not None:
            does = "fails" if kind == "raise" else "misbehaves"
            return Verdict(
                "confirmed",
                f"masked by the break{at}; with that break answered, line {line} {does} too "
                f"under {STAGE_TEXT[stage]}: {later['what']} ({where}); {INFERRED}",
                basis="inferred",
            )
        if run.imperative_ok and not ran_i and not ran_h:
            return _never(it, run, f"; hybridize() fails{at} first")
        node = _shape_error_node(exc, it)
        if node is not None:
            basis, said = source(exc, run.payload)
            return Verdict(
                "confirmed",
                f"{STAGE_TEXT[stage]} raised {exc_text(exc)} ({where}): the graph node "
                f"`{node}` is the flagged operator, which a Symbol does not broadcast; {said}",
                basis=basis,
            )
        return inconclusive(
            f"{STAGE_TEXT[stage]} fails{at} for another reason first ({exc_text(exc)}); "
            f"this line is masked{run.reference()}"
        )
    if not run.imperative_ok:
        shown = _shown(it, run, shows, ran_h, ran_i)
        if shown is not None:
            return shown
        return inconclusive(
            f"hybridize() ran, but the imperative reference did not{run.reference()}: "
            "nothing to compare"
        )
    printed = SYMBOL_REPR.search(run.payload.get("stdout_hybrid", "") or "")
    if it.finding.code == "MXL106" and ran_h and printed:
        text = next(ln for ln in run.payload["stdout_hybrid"].splitlines() if "<Symbol" in ln)
        return Verdict(
            "confirmed",
            f"under hybridize() print() showed {text.strip()[:80]!r} (a graph node), not values",
            basis="observed",
        )
    if run.mismatch is not None and ran_h:
        stage, detail = run.mismatch
        return Verdict(
            "confirmed",
            f"silent graph break: imperative and {STAGE_TEXT[stage]} results differ: {detail} "
            f"({where})",
            basis="compared",
        )
    shown = _shown(it, run, shows, ran_h, ran_i)
    if shown is not None:
        return shown
    if not ran_h and not ran_i:
        return _never(it, run)
    if not ran_h:
        return Verdict(
            "refuted",
            f"line {line} runs only imperatively: hybridized, the trace never reaches it "
            f"({where}); hybridized results equal imperative ones",
            basis="compared",
        )
    return Verdict(
        "refuted",
        "ran hybridized (plain and static_alloc) and exported; outputs and gradients equal "
        f"the imperative run ({where})",
        basis="compared",
    )


def _never(it: Item, run: _Run, extra: str = "") -> Verdict:
    return inconclusive(
        f"line {it.line} never ran, imperatively or hybridized ({run.where}): the code path "
        f"it is on was not taken{extra}"
    )


def _shown(it: Item, run: _Run, shows: tuple[str, ...], ran_h: bool, ran_i: bool) -> Verdict | None:
    """A verdict from what the rule's `shows` declares: silent Symbol misuse seen in the
    trace, a mode read frozen by it, a different output structure or block state."""
    line = it.line
    if "silent" in shows:
        seen = run.event(it, ("silent",))
        if seen is not None:
            how = INFERRED if seen.get("stage") == "tolerant" else OBSERVED
            return Verdict(
                "confirmed",
                f"line {line}: {seen['what']} ({run.where}); {how}",
                basis="inferred" if seen.get("stage") == "tolerant" else "observed",
            )
    if "mode" in shows:
        traced = [
            e
            for e in run.events
            if e.get("kind") == "mode"
            and e.get("file") == it.path
            and e.get("line") == line
            and e.get("stage") in ("hybridize", "tolerant")
        ]
        trained = [
            e
            for e in run.events
            if e.get("kind") == "mode"
            and e.get("file") == it.path
            and e.get("line") == line
            and e.get("stage") == "imperative-train"
        ]
        if traced and trained and traced[0].get("value") != trained[0].get("value"):
            t, i = traced[0], trained[0]
            return Verdict(
                "confirmed",
                f"line {line} read {t['what']} = {t['value']} once, while hybridize() traced "
                f"the graph; an imperative training step reads {i['value']} there, so the "
                f"hybridized block keeps the {t['value']} branch in training too ({run.where})",
                basis="observed",
            )
    if "structure" in shows and ran_h:
        structure = run.payload.get("structure") or {}
        imp, hyb = structure.get("imperative"), structure.get("hybridized")
        if imp and hyb and _plain(imp) != _plain(hyb):
            return Verdict(
                "confirmed",
                f"the forward returns {imp} imperatively but {hyb} hybridized (line {line} "
                f"ran): code reading the result by name or type breaks ({run.where})",
                basis="compared",
            )
    if "state" in shows:
        return _state(it, run, ran_i)
    return None


def _plain(structure: str) -> str:
    """A plain list and a plain tuple are one kind of output (unpacking and indexing read
    both alike); a namedtuple, a dict or a dataclass is not."""
    return re.sub(r"\b(list|tuple)\(", "seq(", structure)


def _state(it: Item, run: _Run, ran_i: bool) -> Verdict | None:
    state = run.payload.get("state") or {}
    found = _SELF_ATTR.search(it.finding.message)
    if not found or not state:
        return None
    attr = found.group(1)
    imp = (state.get("imperative") or {}).get("state", {})
    hyb = (state.get("hybridized") or {}).get("state", {})
    if attr not in imp and attr not in hyb:
        return None
    a, b = imp.get(attr, "(unset)"), hyb.get(attr, "(unset)")
    calls = "two predictions and one recorded training forward"
    if a != b:
        return Verdict(
            "confirmed",
            f"after the same calls ({calls}) self.{attr} is {a} imperatively but {b} "
            f"hybridized: line {it.line} ran only while the graph was traced ({run.where})",
            basis="compared",
        )
    errors = [(state.get(m) or {}).get("error") for m in ("imperative", "hybridized")]
    if ran_i and not any(errors):
        return Verdict(
            "refuted",
            f"after the same calls ({calls}) self.{attr} is {a} both imperatively and "
            f"hybridized ({run.where})",
            basis="compared",
        )
    return None


def _rewrite(items: Sequence[Item], payload: dict[str, Any], out: dict[FindingKey, Verdict]):
    rewrite = payload.get("rewrite")
    if not rewrite:
        return
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


def _ctx_block(items: Sequence[Item], run: _Run) -> dict[FindingKey, Verdict]:
    out: dict[FindingKey, Verdict] = {}
    failed = next(((s, v) for s, v in run.stages.items() if not v.get("ok")), None)
    for it in items:
        if failed is None:
            out[it.key] = Verdict(
                "refuted",
                "forward and backward ran with parameters and "
                f"input on gpu(0) ({run.where}) without a context error (gpu(i) emulated as "
                "cpu(i+1))"
                if run.payload.get("env", {}).get("ctx_map")
                else f"forward and backward ran with parameters and input on gpu(0) "
                f"({run.where}) without a context error",
                basis="compared",
            )
            continue
        exc = failed[1].get("exception", {})
        in_file = [ln for f, ln in exc.get("frames", []) if os.path.realpath(f) == it.path]
        # Parameters and input were placed on the device: a context error inside this
        # block's forward comes from a tensor the forward created on the default context.
        if in_file and CTX_ERROR.search(str(exc.get("message", ""))):
            at = "" if in_file[-1] == it.line else f" (raised at line {in_file[-1]})"
            basis, said = source(exc, run.payload)
            out[it.key] = Verdict(
                "confirmed",
                f"with parameters and input on gpu(0): {exc_text(exc)}{at}; {said}",
                basis=basis,
            )
        else:
            out[it.key] = inconclusive(f"the block fails on gpu(0) elsewhere: {exc_text(exc)}")
    return out
