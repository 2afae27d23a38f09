"""Probes for the sync family (run inside the verify subprocess): count the synchronisations each
watched line makes per training step, and follow MXNet's profiler — its state, and how many
operators a read of it missed because they were still queued.

Both wrap MXNet's Python API before user code runs: a readback (`asnumpy`, `asscalar`,
`wait_to_read`, `item`, `float()` of an array, `waitall`) is counted once, at the user line that
called it (a readback that calls another inside MXNet counts once).
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any

#: Operators the engine runs for itself rather than for the program: `DeleteVariable` frees the
#: memory of an array the program dropped (a garbage collection during a read can queue one).
BOOKKEEPING = frozenset({"DeleteVariable"})

#: Rows of the "operator" table of `mx.profiler.dumps()`: `name  count  time ...`.
_OPERATOR_ROW = re.compile(r"^\s*(\S+)\s+(\d+)\s+[\d.]+\s")


class SyncCounter:
    """Synchronisations per (file, line) and per training step, for the watched lines."""

    def __init__(self, lines: list[tuple[str, int]], step: Callable[[], int]) -> None:
        self.lines = {(os.path.realpath(f), int(n)) for f, n in lines}
        self.step = step
        #: "file:line" -> {step index: syncs}
        self.counts: dict[str, dict[int, int]] = {}
        self._depth = 0
        self._files: dict[str, str] = {}

    def install(self) -> None:
        import mxnet as mx

        targets: list[tuple[Any, str]] = [
            (mx.nd.NDArray, "asnumpy"),
            (mx.nd.NDArray, "asscalar"),
            (mx.nd.NDArray, "wait_to_read"),
            (mx.nd, "waitall"),
        ]
        np_array = getattr(getattr(mx, "np", None), "ndarray", None)
        if np_array is not None:
            for name in ("asnumpy", "item", "tolist", "wait_to_read", "__float__", "__int__"):
                if hasattr(np_array, name):
                    targets.append((np_array, name))
        for owner, name in targets:
            setattr(owner, name, self._wrap(getattr(owner, name)))

    def _wrap(self, original: Any) -> Any:
        counter = self

        def counted(*args: Any, **kwargs: Any) -> Any:
            if counter._depth == 0:
                counter._record(sys._getframe(1))
            counter._depth += 1
            try:
                return original(*args, **kwargs)
            finally:
                counter._depth -= 1

        return counted

    def _record(self, frame: Any) -> None:
        filename = frame.f_code.co_filename
        real = self._files.get(filename)
        if real is None:
            real = self._files[filename] = os.path.realpath(filename)
        key = (real, frame.f_lineno)
        if key not in self.lines:
            return
        per_step = self.counts.setdefault(f"{real}:{frame.f_lineno}", {})
        step = self.step()
        per_step[step] = per_step.get(step, 0) + 1

    def to_json(self) -> dict[str, dict[str, int]]:
        return {line: {str(k): v for k, v in steps.items()} for line, steps in self.counts.items()}


class BlockedTimer:
    """Time the Python thread spends inside MXNet's training calls (a network's forward,
    `backward()`, `trainer.step()`) while `active()`: with an asynchronous engine they return
    once the operators are queued; with `NaiveEngine` they return once the operators ran."""

    def __init__(self, active: Callable[[], bool]) -> None:
        self.active = active
        self.seconds = 0.0
        self._depth = 0

    def install(self) -> None:
        import mxnet as mx
        from mxnet import autograd, gluon

        for owner, name in (
            (gluon.Block, "__call__"),
            (mx.nd.NDArray, "backward"),
            (autograd, "backward"),
            (gluon.Trainer, "step"),
            (gluon.Trainer, "update"),
        ):
            setattr(owner, name, self._wrap(getattr(owner, name)))

    def _wrap(self, original: Any) -> Any:
        timer = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            if timer._depth or not timer.active():
                timer._depth += 1
                try:
                    return original(*args, **kwargs)
                finally:
                    timer._depth -= 1
            timer._depth += 1
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                timer.seconds += time.perf_counter() - start
                timer._depth -= 1

        return timed


def operator_calls(text: str) -> int:
    """Operator executions counted in `mx.profiler.dumps()` (the rows of its "operator"
    table, which ends at the first blank line after them)."""
    return sum(operator_rows(text).values())


def operator_rows(text: str) -> dict[str, int]:
    """Executions per operator name in the "operator" table of `mx.profiler.dumps()`."""
    total: dict[str, int] = {}
    section = ""
    rows = False
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            if rows:
                section, rows = "", False
            continue
        if not section and stripped == "operator":
            section = stripped
            continue
        if section != "operator" or stripped.startswith(("=", "-", "Name")):
            continue
        found = _OPERATOR_ROW.match(line)
        if found:
            total[found.group(1)] = total.get(found.group(1), 0) + int(found.group(2))
            rows = True
    return total


class ProfilerWatch:
    """MXNet's profiler as the program drives it: the state it leaves it in, the lines that
    started, stopped or dumped it, and, at each read of it (`dump`, `dumps`), the operators
    that were still queued (counted again after `waitall()`)."""

    def __init__(self) -> None:
        self.state = "stop"
        #: (event, "file:line"): run, stop, pause, resume, dump, dumps.
        self.events: list[tuple[str, str]] = []
        #: "file:line" of a read -> operators still queued when it read (largest seen).
        self.missed: dict[str, int] = {}
        self.started_at: str | None = None
        #: "file:line" of a read -> the queued operators by name, for that largest count.
        self.late: dict[str, dict[str, int]] = {}

    def install(self) -> None:
        import mxnet as mx

        profiler = mx.profiler
        set_config, set_state = profiler.set_config, profiler.set_state
        dump, dumps = profiler.dump, profiler.dumps
        pause, resume = profiler.pause, profiler.resume
        watch = self

        def where() -> str:
            frame = sys._getframe(2)
            return f"{os.path.realpath(frame.f_code.co_filename)}:{frame.f_lineno}"

        def config(*args: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("aggregate_stats", True)  # so a read can be counted
            return set_config(*args, **kwargs)

        def state(state: str = "stop", profile_process: str = "worker") -> Any:
            watch.events.append((str(state), where()))
            if state == "run":
                watch.state = "run"
                watch.started_at = where()
            elif state == "stop":
                watch.state = "stop"
            return set_state(state, profile_process)

        def read(original: Any, kind: str) -> Any:
            def reading(*args: Any, **kwargs: Any) -> Any:
                at = where()
                watch.events.append((kind, at))
                if watch.state == "run":
                    before = operator_rows(dumps(reset=False))
                    mx.nd.waitall()
                    after = operator_rows(dumps(reset=False))
                    late = {
                        name: n - before.get(name, 0)
                        for name, n in after.items()
                        if n > before.get(name, 0) and name not in BOOKKEEPING
                    }
                    if sum(late.values()) >= watch.missed.get(at, 0):
                        watch.missed[at] = sum(late.values())
                        watch.late[at] = late
                if kind == "dump" and kwargs.get("finished", args[0] if args else True):
                    watch.state = "stop"
                return original(*args, **kwargs)

            return reading

        def pausing(*args: Any, **kwargs: Any) -> Any:
            watch.events.append(("pause", where()))
            watch.state = "paused" if watch.state == "run" else watch.state
            return pause(*args, **kwargs)

        def resuming(*args: Any, **kwargs: Any) -> Any:
            watch.events.append(("resume", where()))
            watch.state = "run" if watch.state == "paused" else watch.state
            return resume(*args, **kwargs)

        profiler.set_config = config
        profiler.set_state = state
        profiler.profiler_set_state = state
        profiler.dump = read(dump, "dump")
        profiler.dump_profile = read(dump, "dump")
        profiler.dumps = read(dumps, "dumps")
        profiler.pause = pausing
        profiler.resume = resuming

    def held_events(self) -> int | None:
        """Operator events the running profiler holds, when it is running."""
        if self.state != "run":
            return None
        import mxnet as mx

        try:
            return operator_calls(mx.profiler.dumps(reset=False))
        except Exception:  # noqa: BLE001 - the profiler could not be read
            return None

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "started_at": self.started_at,
            "events": self.events,
            "missed": self.missed,
            "late": self.late,
            "held": self.held_events(),
        }
