"""Where verify jobs run: one slot per parallel job, each GPU owned by the slots assigned to it.

On a GPU host slot i runs on GPU i mod gpus (CUDA_VISIBLE_DEVICES), so `--verify-jobs` above
the GPU count shares GPUs evenly instead of naming GPUs that do not exist; every job of a
slot is a GPU job (CUDA libraries preloaded, the sandbox's NVIDIA devices, a data-segment
memory limit). On a CPU host the slots are cores. The jobs a task runs are collected with what
their code tried outside the sandbox.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from mxlint.verify.sandbox import ChildResult, Confinement, run_job

if TYPE_CHECKING:
    from mxlint.verify.runner import VerifyOptions


class Slots:
    def __init__(self, gpus: int, jobs: int, confinement: Confinement | None = None) -> None:
        self.gpus = gpus
        self.jobs = jobs
        self.confinement = confinement
        self.free: queue.Queue[int] = queue.Queue()
        for i in range(jobs):
            self.free.put(i)
        #: Task key -> escape records of its jobs (`escapes`), in the order they ran.
        self.escapes: dict[str, list[dict[str, Any]]] = {}
        self._task = threading.local()
        self._lock = threading.Lock()

    def env_for(self, slot: int) -> dict[str, str]:
        """The variables that pin a slot's jobs to its device."""
        return {"CUDA_VISIBLE_DEVICES": str(slot % self.gpus)} if self.gpus else {}

    @contextmanager
    def slot(self) -> Iterator[int]:
        """A free slot for the duration of one job (blocks while all are busy)."""
        slot = self.free.get()
        try:
            yield slot
        finally:
            self.free.put(slot)

    @contextmanager
    def reserved(self) -> Iterator[None]:
        """Hold one slot while a multi-process job (a local parameter-server job) runs."""
        with self.slot():
            yield

    def current_task(self) -> str | None:
        """The task this thread's jobs are attributed to."""
        return getattr(self._task, "key", None)

    @contextmanager
    def task(self, key: str | None) -> Iterator[None]:
        """Attribute the jobs this thread runs to the task `key`."""
        self._task.key = key
        try:
            yield
        finally:
            self._task.key = None

    def run(
        self, job: dict[str, Any], options: VerifyOptions, engine: str = "NaiveEngine"
    ) -> ChildResult:
        with self.slot() as slot:
            # `budget`: the job's stage limits follow its timeout
            job = dict(job, gpu=bool(self.gpus), budget=options.timeout)
            result = run_job(
                job,
                timeout=options.timeout,
                memory_mb=options.memory_mb,
                engine=engine,
                # the slot's device, and settings a run is about (a sync-family engine check)
                env={**self.env_for(slot), **(job.get("env") or {})},
                confinement=self.confinement,
            )
        key = getattr(self._task, "key", None)
        if key is not None and result.escapes:
            with self._lock:
                seen = self.escapes.setdefault(key, [])
                seen.extend(r for r in result.escapes if r not in seen)
        return result
