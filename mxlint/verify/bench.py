"""Paired benchmark of a verified block rewrite.

What is compared is said with the figure: the original runs imperatively (it cannot be
hybridized: that is the finding), the rewrite hybridized with static_alloc — the speed the fix
makes available — and, second, the rewrite imperatively against the original imperatively,
what the rewrite costs by itself. Wall time on shared CPUs is noisy and drifts; per-process CPU
time is stable. The three alternate every iteration (the order rotated each round) after a
warm-up, each step ending in `nd.waitall()`; the figure is the median of paired ratios
original/rewrite (> 1: the rewrite is faster) on CPU time, with wall time second (on a GPU,
wall time is the one that matters). The parent runs two benchmark processes and pools them.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

from mxlint.verify.model import Rewrite


def run(job: dict[str, Any]) -> dict[str, Any]:  # inside the subprocess
    import random

    import mxnet as mx
    import numpy as np

    from mxlint.verify import block

    random.seed(0)
    np.random.seed(0)
    mx.random.seed(0)
    spec = block.Spec(job)
    error = block.find_input(spec, mx.cpu())
    if error is not None:
        return {"status": "no-input", "reason": error}
    ctx = block.device()
    original = spec.make()
    original.initialize(ctx=ctx)
    xs = spec.inputs(ctx)
    original(*xs)
    first = block.Runner(original, xs, ctx)
    rewrite = block.build_rewrite(spec, first, ctx)
    rewrite.block.hybridize(static_alloc=True, static_shape=True)
    plain = block.build_rewrite(spec, first, ctx)  # the rewrite, imperatively
    bench = job.get("bench", {})
    pairs, warmup = int(bench.get("pairs", 30)), int(bench.get("warmup", 5))
    runners = [("original", first), ("rewrite", rewrite), ("rewrite_imperative", plain)]
    for _ in range(warmup):
        for _name, runner in runners:
            runner.step()
    cpu: dict[str, list[float]] = {name: [] for name, _ in runners}
    wall: dict[str, list[float]] = {name: [] for name, _ in runners}
    for i in range(pairs):
        order = runners[i % 3 :] + runners[: i % 3]
        for name, runner in order:
            c0, w0 = time.process_time(), time.perf_counter()
            runner.step()
            cpu[name].append(time.process_time() - c0)
            wall[name].append(time.perf_counter() - w0)
    return {"status": "ok", "cpu": cpu, "wall": wall, "gpu": bool(mx.context.num_gpus())}


def _ratios(times: dict[str, list[float]], rewrite: str = "rewrite") -> list[float]:
    return [a / b for a, b in zip(times["original"], times.get(rewrite, [])) if b > 0]


def summarize(results: Sequence[dict[str, Any]], rewrite: Rewrite) -> Rewrite:
    """Pool the processes' paired ratios into the rewrite's ratio, spread and samples."""
    ok = [r for r in results if r.get("status") == "ok"]
    if not ok:
        reasons = "; ".join(str(r.get("reason") or r.get("status")) for r in results)
        rewrite.evidence += f"; benchmark failed ({reasons})"
        return rewrite
    gpu = any(r.get("gpu") for r in ok)
    key = "wall" if gpu else "cpu"
    pooled = [x for r in ok for x in _ratios(r[key])]
    per_process = [statistics.median(_ratios(r[key])) for r in ok]
    wall = [x for r in ok for x in _ratios(r["wall"])]
    q = statistics.quantiles(pooled, n=4) if len(pooled) >= 4 else [min(pooled), 0, max(pooled)]
    rewrite.ratio = round(statistics.median(pooled), 3)
    rewrite.spread = (round(min(per_process + [q[0]]), 3), round(max(per_process + [q[2]]), 3))
    rewrite.wall_ratio = round(statistics.median(wall), 3) if wall else None
    rewrite.within_noise = (
        rewrite.spread[0] <= 1.0 <= rewrite.spread[1] or abs(rewrite.ratio - 1) < 0.03
    )
    rewrite.samples = {
        name: [x for r in ok for x in r[key][name]] for name in ("original", "rewrite")
    }
    measure = "wall time with waitall" if gpu else "process CPU time"
    plain = [x for r in ok for x in _ratios(r[key], "rewrite_imperative")]
    alone = (
        f"; the rewrite imperatively against the original imperatively: median ratio "
        f"{statistics.median(plain):.3f} (its own cost)"
        if plain
        else ""
    )
    verdict = (
        "within noise"
        if rewrite.within_noise
        else (
            f"rewrite {rewrite.ratio:.2f}x faster"
            if rewrite.ratio > 1
            else f"rewrite {1 / rewrite.ratio:.2f}x slower"
        )
    )
    rewrite.evidence += (
        f"; benchmark ({measure}, {len(pooled)} paired training steps from {len(ok)} "
        "processes) of the original imperatively (it does not hybridize) against the rewrite "
        f"hybridized with static_alloc: median ratio {rewrite.ratio} "
        f"[{rewrite.spread[0]}, {rewrite.spread[1]}], {verdict}{alone}"
    )
    return rewrite
