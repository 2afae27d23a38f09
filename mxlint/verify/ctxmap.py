"""Reproduce GPU context bugs on a CPU-only host (runs inside the verify subprocess).

Every `gpu(i)` becomes the distinct context `cpu(i+1)` before user code runs. Gluon's parameter
lookup and CachedOp compare full contexts and raise on their own; raw NDArray operators compare
the device *type* (`dev_mask`), which on the CPU build is "cpu" for every emulated GPU, so a
check at the operator-invoke level compares the emulated types — host vs GPU, never one GPU's id
with another's, as the CUDA build does not either — and raises the error the CUDA build raises.
`cpu_pinned`/`cpu_shared` stay compatible with every context, as on a GPU host. Messages are
translated back (`cpu(1)` -> `gpu(0)`) so the evidence reads as on a GPU.
"""

from __future__ import annotations

import re
import sys
from typing import Any

#: Device type ids (mxnet.context.Context.devtype2str): 1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared.
_PINNED = (3, 5)
_COPY_OPS = ("_copyto", "copyto", "_npi_copyto")
_CPU_N = re.compile(r"cpu\((\d+)\)")
_CPU_SLASH = re.compile(r"cpu/(\d+)")

active = False


def translate(text: str) -> str:
    """`cpu(k)` (k >= 1) back to `gpu(k-1)` in messages, when the mapping is active."""
    if not active:
        return text
    text = _CPU_N.sub(
        lambda m: f"gpu({int(m.group(1)) - 1})" if int(m.group(1)) else m.group(0), text
    )
    return _CPU_SLASH.sub(
        lambda m: f"gpu/{int(m.group(1)) - 1}" if int(m.group(1)) else m.group(0), text
    )


def _emulated_type(typeid: int, dev: int) -> str:
    """The device type a context stands for: cpu(0) is the host, cpu(k >= 1) a GPU."""
    if typeid == 1:
        return "gpu" if dev >= 1 else "cpu"
    return {2: "gpu"}.get(typeid, "cpu")


def _ctx_name(typeid: int, dev: int) -> str:
    names = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    return translate(f"{names.get(typeid, '?')}({dev})")


def install(num_gpus: int = 2) -> None:
    """Map gpu(i) to cpu(i+1), pretend `num_gpus` GPUs exist, and add the strict check."""
    global active
    import mxnet as mx
    from mxnet import context
    from mxnet.base import MXNetError
    from mxnet.ndarray import register

    original_init = context.Context.__init__

    def init(self: Any, device_type: Any, device_id: int = 0) -> None:
        if device_type == "gpu":
            device_type, device_id = "cpu", device_id + 1
        original_init(self, device_type, device_id)

    context.Context.__init__ = init  # type: ignore[method-assign]

    def count() -> int:
        return num_gpus

    context.num_gpus = count
    mx.context.num_gpus = count
    if hasattr(mx, "util") and hasattr(mx.util, "get_gpu_count"):
        mx.util.get_gpu_count = count
    try:
        import mxnet.test_utils as tu

        tu.list_gpus = lambda: list(range(num_gpus))
    except ImportError:  # pragma: no cover - test_utils needs scipy on some installs
        pass

    original_invoke = register._imperative_invoke

    def strict_invoke(handle: Any, ndargs: Any, keys: Any, vals: Any, out: Any, *rest: Any) -> Any:
        arrays = list(ndargs)
        name = sys._getframe(1).f_code.co_name
        if name not in _COPY_OPS:
            if out is not None:
                arrays.extend(out if isinstance(out, (list, tuple)) else [out])
            seen: list[tuple[int, int, int]] = []
            for i, arr in enumerate(arrays):
                ctx = arr.context
                if ctx.device_typeid in _PINNED:
                    continue
                key = (ctx.device_typeid, ctx.device_id, i)
                if seen and _emulated_type(*seen[0][:2]) != _emulated_type(*key[:2]):
                    first = seen[0]
                    raise MXNetError(
                        f"Check failed: inputs[i]->ctx().dev_mask() == ctx.dev_mask(): Operator "
                        f"{name} require all inputs live on the same context. But the first "
                        f"argument is on {_ctx_name(first[0], first[1])} while the {i + 1}-th "
                        f"argument is on {_ctx_name(key[0], key[1])}"
                    )
                seen.append(key)
        return original_invoke(handle, ndargs, keys, vals, out, *rest)

    register._imperative_invoke = strict_invoke
    active = True
