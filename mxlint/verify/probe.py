"""The launch probe (runs inside a worker of a local parameter-server job): what a launch
script's worker would see, without the project's own program.

It creates a `dist_sync` kvstore — where a worker of a misconfigured job blocks, or stops —
then records its rank and the worker and server counts MXNet reports, and does one push and
pull to check that the servers answer. The result file is written at each stage, so a worker
killed while it waits still tells how far it came.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from mxlint.verify.harness import exception_info


def _write(out_path: str, result: dict[str, Any]) -> None:
    tmp = f"{out_path}.tmp"
    Path(tmp).write_text(json.dumps(result, default=str), encoding="utf-8")
    os.replace(tmp, out_path)


def run(job: dict[str, Any], out_path: str) -> dict[str, Any]:
    import mxnet as mx

    result: dict[str, Any] = {"status": "creating", "stage": "kvstore"}
    _write(out_path, result)
    start = time.monotonic()
    try:
        kv = mx.kv.create("dist_sync")
        result.update(
            status="joined",
            stage="push",
            rank=kv.rank,
            num_workers=kv.num_workers,
            seconds=round(time.monotonic() - start, 2),
        )
        _write(out_path, result)
        kv.init(7, mx.nd.zeros((4,)))
        kv.push(7, mx.nd.ones((4,)))
        out = mx.nd.zeros((4,))
        kv.pull(7, out=out)
        result.update(status="finished", stage="done", pulled=float(out.asnumpy()[0]))
    except Exception as exc:  # noqa: BLE001 - the failure is the observation
        result.update(status="error", exception=exception_info(exc))
    _write(out_path, result)
    return result
