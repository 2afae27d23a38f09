"""Script harness (runs inside the verify subprocess): a bounded, instrumented run of an entry
script for the context, seed, memory, lifecycle and sync families.

The run stops after N training steps (hooks on `Trainer.step`, `Module.update` and `backward`;
DataLoader iteration bounds loops that never step). It records the exception with its frames,
a fingerprint (first batch, losses, parameters after N steps) and, per step, the MXNet
profiler's storage counter and the number of live NDArrays. On request it also counts the
synchronisations of watched lines per step, follows the profiler (`mxlint.verify.probes`), and
times a window of steps with the engine drained at both ends.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import io
import os
import random
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import mxnet as mx
import numpy as np

from mxlint.verify.harness import StopRun, Watch, exception_info, load_module, trace_lines
from mxlint.verify.probes import BlockedTimer, ProfilerWatch, SyncCounter

_MEMORY = re.compile(r"Memory:\s+(\S+)\s+\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")


def _digest(value: Any) -> str:
    h = hashlib.sha1()

    def feed(v: Any) -> None:
        if isinstance(v, mx.nd.NDArray):
            v = v.asnumpy()
        if isinstance(v, np.ndarray):
            h.update(np.ascontiguousarray(v).tobytes())
        elif isinstance(v, (list, tuple)):
            for x in v:
                feed(x)
        elif isinstance(v, (int, float, str, bytes)):
            h.update(repr(v).encode())

    feed(value)
    return h.hexdigest()[:16]


def _live_ndarrays() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, mx.nd.NDArray))


class Probe:
    """Per-step observations and the bound on the run."""

    def __init__(
        self, steps: int, memory: bool | str, per_batch: bool = False, timed: int = 0
    ) -> None:
        self.limit = steps
        self.memory = memory
        #: Also sample memory at each batch while no training step has run (an evaluation
        #: loop has batches and no steps).
        self.per_batch = per_batch and bool(memory)
        #: Timing: after `timed` warm-up steps and at the last step, wait for the engine and
        #: read the clock; steps in between keep whatever overlap the program has.
        self.timed = timed
        self.reset()
        if memory:
            mx.profiler.set_config(
                profile_memory=True,
                profile_symbolic=False,
                profile_imperative=False,
                profile_api=False,
                aggregate_stats=True,
                filename=os.path.join(tempfile.mkdtemp(prefix="mxlint-prof-"), "profile.json"),
            )
            mx.profiler.set_state("run")
            self._storage = 0.0

    def reset(self) -> None:
        """Forget what was observed (a new attempt of a called function starts)."""
        self.batch_storage_kib: list[float] = []
        self.batch_live: list[int] = []
        self.steps = 0
        self.backwards = 0
        self.batches = 0
        self.first_batch: str | None = None
        self.losses: list[str] = []
        self.storage_kib: list[float] = []
        self.live: list[int] = []
        self.trainers: list[Any] = []
        self.window: list[float] = []
        #: The same window in process CPU time (all threads: Python's and the engine's).
        self.cpu_window: list[float] = []
        self.step_times: list[float] = []
        self.behind_s: float | None = None

    def catch_up(self) -> None:
        """At the end of the run, before anything waits: how far the asynchronous engine is
        behind (on the threaded engine, "light" memory runs only)."""
        if self.memory != "light":
            return
        start = time.perf_counter()
        mx.nd.waitall()
        self.behind_s = time.perf_counter() - start

    def step_ms(self) -> float | None:
        """Median wall time of a training step (ms), from the second step on."""
        gaps = [b - a for a, b in zip(self.step_times, self.step_times[1:])]
        return round(1000 * sorted(gaps)[len(gaps) // 2], 3) if gaps else None

    def observe(self) -> None:
        if not self.memory:
            return
        self._read_storage()
        self.storage_kib.append(self._storage)
        if self.memory == "light":  # no gc pass: it would give the threaded engine time to drain
            return
        self.live.append(_live_ndarrays())

    def _read_storage(self) -> None:
        text = mx.profiler.dumps(reset=True)
        found = _MEMORY.findall(text)
        if found:  # the counter is current usage; its max over the step is the step's peak
            self._storage = sum(float(m[2]) for m in found)

    def on_step(self) -> None:
        self.steps += 1
        self.step_times.append(time.perf_counter())
        if self.timed and self.steps in (self.timed, self.limit) and len(self.window) < 2:
            mx.nd.waitall()
            self.window.append(time.perf_counter())
            self.cpu_window.append(time.process_time())
        if self.steps <= self.limit:
            self.observe()
        if self.steps >= 3 * self.limit:  # loops not driven by a DataLoader/DataIter
            raise StopRun()

    def exhausted(self) -> bool:
        """Data iterators end once the step budget is spent, so code after training still
        runs (export, evaluation) while epoch loops spin through empty epochs."""
        return self.steps >= self.limit or (self.steps == 0 and self.batches >= 2 * self.limit)

    def on_backward(self, loss: Any) -> None:
        self.backwards += 1
        # Reading a loss back synchronises: on the asynchronous engine ("light" memory, the
        # engine's run-ahead is what is measured) losses are not fingerprinted.
        if len(self.losses) < self.limit and self.memory != "light":
            with contextlib.suppress(Exception):  # a loss we cannot read is no fingerprint
                self.losses.append(_digest(loss))
        if self.steps == 0 and self.backwards > self.limit:
            raise StopRun()

    def on_batch(self, batch: Any) -> None:
        self.batches += 1
        if self.first_batch is None and self.memory != "light":
            self.first_batch = _digest(batch)
        if self.per_batch and self.steps == 0:
            mx.nd.waitall()
            self._read_storage()
            self.batch_storage_kib.append(self._storage)
            self.batch_live.append(_live_ndarrays())
        if self.batches > 6 * self.limit + 8:
            raise StopRun()

    def params_digest(self) -> str | None:
        if not self.trainers:
            return None
        arrays = []
        for trainer in self.trainers:
            for p in trainer._params:
                try:
                    arrays.append(p.list_data()[0])
                except Exception:  # noqa: BLE001 - uninitialized parameter
                    continue
        return _digest(arrays) if arrays else None


def install_hooks(probe: Probe, facts: DistFacts | None = None) -> None:
    from mxnet import autograd, gluon

    trainer_init = gluon.Trainer.__init__
    trainer_step = gluon.Trainer.step
    trainer_update = gluon.Trainer.update

    def init(self: Any, *a: Any, **k: Any) -> None:
        trainer_init(self, *a, **k)
        probe.trainers.append(self)

    def step(self: Any, *a: Any, **k: Any) -> Any:
        out = trainer_step(self, *a, **k)
        probe.on_step()
        return out

    def update(self: Any, *a: Any, **k: Any) -> Any:
        out = trainer_update(self, *a, **k)
        probe.on_step()
        return out

    gluon.Trainer.__init__ = init  # type: ignore[method-assign]
    gluon.Trainer.step = step  # type: ignore[method-assign]
    gluon.Trainer.update = update  # type: ignore[method-assign]

    nd_backward = mx.nd.NDArray.backward

    def backward(self: Any, *a: Any, **k: Any) -> Any:
        out = nd_backward(self, *a, **k)
        probe.on_backward(self)
        return out

    mx.nd.NDArray.backward = backward  # type: ignore[method-assign]
    ag_backward = autograd.backward

    def ag(heads: Any, *a: Any, **k: Any) -> Any:
        out = ag_backward(heads, *a, **k)
        probe.on_backward(heads)
        return out

    autograd.backward = ag
    loader_iter = gluon.data.DataLoader.__iter__

    def iterate(self: Any) -> Iterator[Any]:
        if probe.exhausted():
            return
        for batch in loader_iter(self):
            probe.on_batch(batch)
            if facts is not None:
                facts.batch(self, batch)
            yield batch
            if probe.exhausted():
                return

    gluon.data.DataLoader.__iter__ = iterate  # type: ignore[method-assign]
    gluon.data.DataLoader._mxlint_iter = loader_iter  # type: ignore[attr-defined]
    iter_next = mx.io.DataIter.__next__

    def next_(self: Any) -> Any:
        if probe.exhausted():
            raise StopIteration
        batch = iter_next(self)
        probe.on_batch(batch.data if hasattr(batch, "data") else batch)
        if facts is not None:
            facts.batch(self, batch.data if hasattr(batch, "data") else batch)
        return batch

    mx.io.DataIter.__next__ = next_  # type: ignore[method-assign]
    try:
        module_update = mx.mod.Module.update

        def mod_update(self: Any, *a: Any, **k: Any) -> Any:
            out = module_update(self, *a, **k)
            probe.on_step()
            return out

        mx.mod.Module.update = mod_update  # type: ignore[method-assign]
    except AttributeError:  # pragma: no cover - builds without the Module API
        pass


def _site(files: set[str]) -> list[Any] | None:
    """The innermost frame of the user's files on the stack: where a loader or a Trainer is
    made."""
    frame = sys._getframe(2)
    while frame is not None:
        name = os.path.realpath(frame.f_code.co_filename)
        if name in files:
            return [name, frame.f_lineno]
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _indices(loader: Any) -> dict[str, Any] | None:
    """The sample indices one epoch of a DataLoader visits (its batch sampler, enumerated
    with numpy's random state put back so that the run itself is unchanged)."""
    sampler = getattr(loader, "_batch_sampler", None)
    if sampler is None:
        return None
    state = np.random.get_state()
    try:
        seen: list[int] = []
        for batch in sampler:
            seen.extend(int(i) for i in batch)
            if len(seen) > 1_000_000:
                return None
    except Exception:  # noqa: BLE001 - a sampler we cannot enumerate is no fact
        return None
    finally:
        np.random.set_state(state)
    ordered = hashlib.sha1(repr(seen).encode()).hexdigest()[:16]
    distinct = sorted(set(seen))
    return {
        "count": len(seen),
        "distinct": len(distinct),
        "set": hashlib.sha1(repr(distinct).encode()).hexdigest()[:16],
        "order": ordered,
    }


def _samples(dataset: Any) -> list[str | None]:
    """Digests of the dataset's first and last sample (None when it cannot be read)."""
    out: list[str | None] = []
    try:
        n = len(dataset)
    except Exception:  # noqa: BLE001
        return out
    for i in (0, n - 1) if n else ():
        try:
            out.append(_digest(dataset[i]))
        except Exception:  # noqa: BLE001
            out.append(None)
    return out


class DistFacts:
    """What a worker of a local parameter-server job records for the distributed rules:
    each loader's site, size, epoch indices and first batch; each Trainer's kvstore."""

    def __init__(self, files: set[str]) -> None:
        self.files = files
        self.loaders: list[dict[str, Any]] = []
        self.trainers: list[tuple[list[Any] | None, Any]] = []
        self.kvstores: list[str] = []
        self._by_id: dict[int, dict[str, Any]] = {}

    def loader(self, obj: Any, kind: str, site: list[Any] | None) -> None:
        fact: dict[str, Any] = {"site": site, "kind": kind, "first_batch": None}
        self.loaders.append(fact)
        self._by_id[id(obj)] = fact

    def batch(self, obj: Any, batch: Any) -> None:
        fact = self._by_id.get(id(obj))
        if fact is None or fact["first_batch"] is not None:
            return
        with contextlib.suppress(Exception):
            fact["first_batch"] = _digest(batch)
        if isinstance(obj, mx.io.NDArrayIter):  # its arrays and its epoch's order are known
            with contextlib.suppress(Exception):
                fact["length"] = int(obj.num_data)
                idx = [int(i) for i in obj.idx]
                distinct = sorted(set(idx))
                fact["indices"] = {
                    "count": len(idx),
                    "distinct": len(distinct),
                    "set": hashlib.sha1(repr(distinct).encode()).hexdigest()[:16],
                    "order": hashlib.sha1(repr(idx).encode()).hexdigest()[:16],
                }
                arrays = [array for _, array in obj.data]
                fact["samples"] = [
                    _digest([a[0] for a in arrays]),
                    _digest([a[obj.num_data - 1] for a in arrays]),
                ]

    def to_json(self) -> dict[str, Any]:
        trainers = []
        for site, trainer in self.trainers:
            kv = getattr(trainer, "_kvstore", None)
            trainers.append(
                {
                    "site": site,
                    "initialized": bool(getattr(trainer, "_kv_initialized", False)),
                    "kvstore": getattr(kv, "type", None) if kv is not None else None,
                    "update_on_kvstore": getattr(trainer, "_update_on_kvstore", None),
                    "compression": getattr(trainer, "_compression_params", None),
                }
            )
        return {"loaders": self.loaders, "trainers": trainers, "kvstores": self.kvstores}


def install_dist_hooks(facts: DistFacts) -> None:
    from mxnet import gluon

    loader_init = gluon.data.DataLoader.__init__

    def init(self: Any, dataset: Any, *a: Any, **k: Any) -> None:
        loader_init(self, dataset, *a, **k)
        facts.loader(self, "DataLoader", _site(facts.files))
        fact = facts.loaders[-1]
        with contextlib.suppress(Exception):
            fact["length"] = len(dataset)
        fact["indices"] = _indices(self)
        fact["samples"] = _samples(dataset)

    gluon.data.DataLoader.__init__ = init  # type: ignore[method-assign]
    iter_init = mx.io.DataIter.__init__

    def data_iter_init(self: Any, *a: Any, **k: Any) -> None:
        iter_init(self, *a, **k)
        facts.loader(self, type(self).__name__, _site(facts.files))

    mx.io.DataIter.__init__ = data_iter_init  # type: ignore[method-assign]
    trainer_init = gluon.Trainer.__init__

    def trainer(self: Any, *a: Any, **k: Any) -> None:
        trainer_init(self, *a, **k)
        facts.trainers.append((_site(facts.files), self))

    gluon.Trainer.__init__ = trainer  # type: ignore[method-assign]
    create = mx.kvstore.create

    def create_kv(name: str = "local") -> Any:
        kv = create(name)
        facts.kvstores.append(str(getattr(kv, "type", name)))
        return kv

    mx.kvstore.create = create_kv
    mx.kv.create = create_kv


def seed(which: list[str], value: int = 0) -> None:
    if "numpy" in which:
        np.random.seed(value)
    if "random" in which:
        random.seed(value)
    if "mxnet" in which:
        mx.random.seed(value)


class Session:
    """Everything one verify process observes, installed once before the project's code loads:
    the step probe and its hooks, stand-ins, the lifecycle, distributed, sync and profiler
    probes, placements, clock reads and live lines. The script harness runs a program under it
    once; the call harness once per attempt (`reset` between)."""

    def __init__(self, job: dict[str, Any]) -> None:
        from mxlint.verify import standins
        from mxlint.verify.lifecycle import LifecycleProbe
        from mxlint.verify.monitors import Placement, Timing
        from mxlint.verify.seeding import LiveLines

        path = job["file"]
        self.job = job
        self.files = {path} | set(job.get("trace_files", []))
        for root in reversed(job.get("roots", [])):
            if root not in sys.path:
                sys.path.insert(0, root)
        standins.install()
        self.standins = standins.NOTES
        self.probe = probe = Probe(
            int(job.get("steps", 5)),
            job.get("memory") or False,
            bool(job.get("per_batch")),
            int(job.get("timed", 0)),
        )
        self.blocked = None
        if job.get("timed"):  # under the step hooks: the drain at the window's end is not counted
            self.blocked = BlockedTimer(lambda: len(probe.window) == 1)
            self.blocked.install()
        self.facts = None
        if job.get("dist"):
            self.facts = DistFacts({os.path.realpath(f) for f in self.files})
            install_dist_hooks(self.facts)
        install_hooks(probe, self.facts)
        self.lifecycle = LifecycleProbe(
            self.files,
            map_amp=not job.get("gpu"),
            roundtrip=bool(job.get("roundtrip")),
            amp_watch=bool(job.get("amp_watch")),
            grad_watch=bool(job.get("grad_watch")),
            trainers=lambda: probe.trainers,
        )
        self.lifecycle.install()
        self.counter = self.profiler = None
        if job.get("sync_lines"):
            self.counter = SyncCounter([(f, n) for f, n in job["sync_lines"]], lambda: probe.steps)
            self.counter.install()
        if job.get("profiler"):
            self.profiler = ProfilerWatch()
            self.profiler.install()
        self.placement = Placement(self.files) if job.get("contexts") else None
        self.timing = Timing(job.get("timing", []), probe)
        seed(job.get("seed", []))  # before the live lines watch the program seeding
        self.live = LiveLines(
            job.get("live", []), job.get("live_rng"), int(job.get("live_seed", 0))
        )
        self.stdout = io.StringIO()

    def reset(self) -> None:
        """A new attempt: forget the steps, memory, clock reads and output observed so far."""
        self.probe.reset()
        self.timing.reads.clear()
        self.stdout = io.StringIO()
        if self.counter is not None:
            self.counter.counts.clear()

    def tracing(self, watch: Watch) -> contextlib.AbstractContextManager[set[tuple[str, int]]]:
        """Line tracing of the project's files (none for timing runs: it would slow them)."""
        if not self.job.get("trace", True):
            return contextlib.nullcontext(set())
        return trace_lines(self.files, watch, [self.live, self.timing])

    def observed(self) -> dict[str, Any]:
        """What the run showed besides its lines and exception (the payload's other fields)."""
        probe = self.probe
        output = self.stdout.getvalue()
        built = _safe(self.live.built) if self.live.lines else None
        return {
            "steps": probe.steps,
            "step_ms": probe.step_ms(),
            "behind_s": probe.behind_s,
            "backwards": probe.backwards,
            "batches": probe.batches,
            "fingerprint": {
                "first_batch": probe.first_batch,
                "losses": list(probe.losses),
                "params": _safe(probe.params_digest),
                "stdout": hashlib.sha1(output.encode()).hexdigest()[:16] if output else None,
                "built": _digest(built) if built else None,
            },
            "standins": list(self.standins),
            "placement": _safe(self.placement.to_json) if self.placement is not None else [],
            "timing": self.timing.to_json(),
            "lifecycle": self.lifecycle.to_json(),
            "dist": self.facts.to_json() if self.facts is not None else None,
            "window": {
                "seconds": probe.window[1] - probe.window[0],
                "cpu_seconds": probe.cpu_window[1] - probe.cpu_window[0],
                "steps": probe.limit - probe.timed,
                "blocked": self.blocked.seconds if self.blocked is not None else None,
            }
            if len(probe.window) == 2
            else None,
            "syncs": self.counter.to_json() if self.counter is not None else {},
            "profiler": _safe(self.profiler.to_json) if self.profiler is not None else None,
            "memory": {
                "storage_kib": list(probe.storage_kib),
                "live_ndarrays": list(probe.live),
                "batch_storage_kib": list(probe.batch_storage_kib),
                "batch_live_ndarrays": list(probe.batch_live),
            },
        }


def run(job: dict[str, Any]) -> dict[str, Any]:
    session = Session(job)
    path = job["file"]
    source = job.get("rewrite_source")
    if source is None:
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
    sys.argv = [path, *job.get("argv", [])]
    result: dict[str, Any] = {"status": "finished"}

    def runner() -> None:
        if job.get("module") and not job.get("as_main", True):
            load_module(path, job["module"], job.get("roots", []), source=source)
            return
        code = compile(source, path, "exec")
        exec(code, {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__})

    hits: set[tuple[str, int]] = set()
    try:
        watch = Watch(job.get("watch", []))
        with session.tracing(watch) as hits, contextlib.redirect_stdout(session.stdout):
            try:
                runner()
                session.probe.catch_up()
                mx.nd.waitall()
            except StopRun:
                result["status"] = "stopped"
            except SystemExit as exc:
                if exc.code not in (None, 0):
                    result["status"] = "error"
                    result["exception"] = {
                        "type": "SystemExit",
                        "message": str(exc.code),
                        "frames": [],
                    }
            except Exception as exc:  # noqa: BLE001 - the exception is the evidence
                result["status"] = "error"
                result["exception"] = exception_info(exc)
        try:
            mx.nd.waitall()
        except Exception as exc:  # noqa: BLE001 - deferred engine errors surface here
            if "exception" not in result:
                result["status"] = "error"
                result["exception"] = exception_info(exc)
    finally:
        lines = sorted([os.path.realpath(f), ln] for f, ln in hits)
    result.update({"lines": lines, "watch": watch.to_json()})
    result.update(session.observed())
    return result


def _safe(fn: Any) -> Any:
    try:
        return fn()
    except Exception:  # noqa: BLE001
        return None
