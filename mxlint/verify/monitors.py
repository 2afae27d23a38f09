"""Observations at flagged lines that are neither exceptions nor fingerprints (runs inside the
verify subprocess).

`Timing`: on the asynchronous engine, when a flagged line is about to read the clock, how much
queued MXNet work is still running — `mx.nd.waitall()` is timed right there (the rewrite the
rule suggests, moved in front of the read). `Placement`: where `initialize()` put a layer's
parameters, and where the network it ends up in lives.
"""

from __future__ import annotations

import gc
import os
import time
from typing import Any

import mxnet as mx

CLOCKS = (time.time, time.perf_counter, time.monotonic)


def _elapsed(frame: Any, start: str) -> float | None:
    """Seconds since the user's start timestamp (`tic`, `self.start`), on whichever clock
    it was read from."""
    if not start:
        return None
    head, _, rest = start.partition(".")
    value = frame.f_locals.get(head, frame.f_globals.get(head))
    for part in rest.split(".") if rest else []:
        value = getattr(value, part, None)
    if not isinstance(value, (int, float)):
        return None
    spans = [clock() - value for clock in CLOCKS]
    plausible = [s for s in spans if 0 <= s < 1e5]
    return min(plausible) if plausible else None


class Timing:
    """Queued work at each flagged clock read: [{"pending_s", "interval_s"}] per line, the
    interval being what the user's timer measures there (None when its start is unknown)."""

    def __init__(self, lines: list[list[Any]], probe: Any = None) -> None:
        self.lines = {(os.path.realpath(e[0]), int(e[1])) for e in lines}
        self.starts = {
            (os.path.realpath(e[0]), int(e[1])): (e[2] if len(e) > 2 else "") for e in lines
        }
        self.reads: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self.probe = probe
        #: Batches and steps seen when each traced frame started (work done inside it).
        self.frames: dict[int, int] = {}

    def _work(self) -> int:
        return (self.probe.batches + self.probe.steps) if self.probe is not None else 0

    def on_line(self, frame: Any, key: tuple[str, int]) -> None:
        if not self.lines:
            return
        self.frames.setdefault(id(frame), self._work())
        if key not in self.lines:
            return
        interval = _elapsed(frame, self.starts.get(key, ""))
        before = time.perf_counter()
        mx.nd.waitall()
        after = time.perf_counter()
        work = self._work() - self.frames[id(frame)] if self.probe is not None else None
        self.reads.setdefault(key, []).append(
            {"pending_s": after - before, "interval_s": interval, "work": work}
        )

    def leave(self, frame: Any) -> None:
        self.frames.pop(id(frame), None)

    def to_json(self) -> list[dict[str, Any]]:
        return [{"file": f, "line": n, "reads": r} for (f, n), r in sorted(self.reads.items())]


def _descendants(block: Any) -> list[Any]:
    out = []
    for child in block._children.values():
        out.append(child)
        out.extend(_descendants(child))
    return out


class Placement:
    """Where `initialize()` put each network's parameters, and where the network it ends up
    in lives: a layer initialised on the host inside a model on a GPU fails at the first
    forward pass, whether or not the program gets that far."""

    lines: set[tuple[str, int]] = set()

    def __init__(self, files: set[str]) -> None:
        import weakref

        self.files = {os.path.realpath(f) for f in files}
        self.calls: list[tuple[Any, list[list[Any]], Any]] = []
        self.intent: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._install()

    def _install(self) -> None:
        from mxnet import gluon

        monitor = self
        initialize = gluon.Block.initialize

        def watched(block: Any, *args: Any, **kwargs: Any) -> Any:
            from mxlint.verify.observe import project_stack

            value = initialize(block, *args, **kwargs)
            ctx = kwargs.get("ctx", args[1] if len(args) > 1 else None)
            monitor.intent[block] = ctx
            stack = project_stack(monitor.files, 2)
            if stack:
                monitor.calls.append((block, [list(s) for s in stack], ctx))
            return value

        gluon.Block.initialize = watched  # type: ignore[method-assign]

    def to_json(self) -> list[dict[str, Any]]:
        """For each project `initialize()` call: its block's devices and its enclosing
        network's (its other parameters', else what that network was initialised on)."""
        from mxnet import gluon

        blocks = [b for b in gc.get_objects() if isinstance(b, gluon.Block)]
        out = []
        for block, stack, _ctx in self.calls:
            own = _devices(block)
            parent = next((b for b in blocks if b is not block and block in _descendants(b)), None)
            theirs: set[str] = set()
            if parent is not None:
                mine = {id(p) for p in block.collect_params().values()}
                for param in parent.collect_params().values():
                    if id(param) not in mine:
                        theirs |= _param_devices(param)
                if not theirs and self.intent.get(parent) is not None:
                    theirs = {_kind(c) for c in _as_list(self.intent[parent])}
            out.append(
                {
                    "file": stack[0][0],
                    "line": stack[0][1],
                    "stack": stack,
                    "block": type(block).__name__,
                    "devices": sorted(own),
                    "network": type(parent).__name__ if parent is not None else None,
                    "network_devices": sorted(theirs),
                }
            )
        return out


def _as_list(ctx: Any) -> list[Any]:
    return list(ctx) if isinstance(ctx, (list, tuple)) else [ctx]


def _kind(ctx: Any) -> str:
    """`gpu(i)` for a GPU, emulated (cpu(i+1)) or real; `cpu` for the host."""
    if ctx is None:
        return "cpu"
    from mxlint.verify import ctxmap

    text = ctxmap.translate(str(ctx)) if ctxmap.active else str(ctx)
    return text if text.startswith("gpu") else "cpu"


def _param_devices(param: Any) -> set[str]:
    try:
        return {_kind(c) for c in param.list_ctx()}
    except Exception:  # noqa: BLE001 - not initialised
        return set()


def _devices(block: Any) -> set[str]:
    out: set[str] = set()
    for param in block.collect_params().values():
        out |= _param_devices(param)
    return out
