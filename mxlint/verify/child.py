"""Entry point of a verify subprocess: `python -m mxlint.verify.child JOB.json RESULT.json`.

Sets up the runtime (CUDA preload on GPU hosts, gpu->cpu(i+1) mapping on CPU hosts), then runs
the harness the job names and writes a JSON result. Only this process imports mxnet.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from mxlint.verify.harness import exception_info

UNRAISABLE: list[str] = []


def _setup(job: dict[str, Any]) -> dict[str, Any]:
    info: dict[str, Any] = {}
    if job.get("gpu"):
        from mxlint.verify.gpu import preload_cuda

        info["preload"] = preload_cuda()
        info["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    import numpy as np

    if not hasattr(np, "bool"):  # numpy >= 1.24 removed the alias mxnet 1.9 uses
        np.bool = bool  # type: ignore[attr-defined]
    import mxnet as mx

    info["mxnet"] = mx.__version__
    info["num_gpus"] = mx.context.num_gpus()
    if job.get("ctx_map") and not info["num_gpus"]:
        from mxlint.verify import ctxmap

        ctxmap.install(int(job.get("mapped_gpus", 2)))
        info["ctx_map"] = True
    return info


def limit_memory() -> str:
    """The parent's resource limits (`limits`: RLIMIT_AS on CPU, RLIMIT_DATA on GPU jobs)."""
    from mxlint.verify import limits

    return limits.apply_from_env()


def _ps_node(out_path: str) -> None:
    """A scheduler or server of a local parameter-server job: importing mxnet with DMLC_ROLE
    set runs its loop (`mxnet.kvstore.kvstore_server`), which exits when the job ends."""
    Path(out_path).write_text(json.dumps({"status": "started"}), encoding="utf-8")
    import numpy as np

    if not hasattr(np, "bool"):
        np.bool = bool  # type: ignore[attr-defined]
    with contextlib.suppress(SystemExit):
        import mxnet  # noqa: F401 - runs the node, then exits
    Path(out_path).write_text(json.dumps({"status": "finished"}), encoding="utf-8")
    os._exit(0)


def main(argv: list[str]) -> int:
    memory_limit = limit_memory()
    from mxlint.verify import escapes

    monitor = escapes.install()
    job_path, out_path = argv[1], argv[2]
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    if job["kind"] == "ps-node":
        _ps_node(out_path)
    sys.unraisablehook = lambda u: UNRAISABLE.append(f"{type(u.exc_value).__name__}: {u.exc_value}")
    result: dict[str, Any]
    written: list[dict[str, Any]] = []
    try:
        if job.get("before") and job["kind"] in ("script", "call"):
            from mxlint.verify import writers

            written = writers.run(job)
        info = _setup(job)
        if job["kind"] == "block" and job.get("mode") == "onnx":
            from mxlint.verify import onnx_export

            result = onnx_export.run(job)
        elif job["kind"] == "block":
            from mxlint.verify import block

            result = block.run(job)
        elif job["kind"] == "script":
            from mxlint.verify import script

            result = script.run(job)
        elif job["kind"] == "probe":
            from mxlint.verify import probe

            result = probe.run(job, out_path)
        elif job["kind"] == "call":
            from mxlint.verify import call

            result = call.run(job)
        elif job["kind"] == "bench":
            from mxlint.verify import bench

            result = bench.run(job)
        else:
            raise ValueError(f"unknown job kind {job['kind']!r}")
        result["env"] = dict(info, memory_limit=memory_limit)
    except BaseException as exc:  # noqa: BLE001 - every failure becomes a reason
        result = {
            "status": "harness-error",
            "exception": exception_info(exc),
            "trace": traceback.format_exc()[-2000:],
        }
    if written:
        result["before"] = written
    if monitor is not None:
        result["sandbox_events"] = monitor.records + [
            e for w in written for e in w.pop("sandbox_events", []) if e not in monitor.records
        ]
    if UNRAISABLE:
        from mxlint.verify import ctxmap

        result["unraisable"] = [ctxmap.translate(u)[:500] for u in UNRAISABLE]
    Path(out_path).write_text(json.dumps(result, default=str), encoding="utf-8")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip MXNet's engine shutdown, which can hang after user threads


if __name__ == "__main__":
    sys.exit(main(sys.argv))
