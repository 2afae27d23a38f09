"""Lifecycle probes of a script run (runs inside the verify subprocess, beside `script.py`).

- AMP on a CPU host: MXNet 1.9.1 has no float16 kernels on CPU (`FP16 gemm on cpu not
  implemented`), so `amp.init()` with a float16 target runs as bfloat16, which it has; how AMP
  wires a trainer (`init_trainer`, `scale_loss`) and casts operators is the same for both.
- `amp.init()`: which networks already had a cached graph when it ran (they keep running it,
  in float32) and what dtype they return afterwards.
- `export` then `SymbolBlock.imports` of the same graph: the imported block and the network
  that was exported are run on the arrays the network last saw, and their outputs compared.
- Gradients after `amp.init()`: after each of the first backward passes, how many of the
  trainers' nonzero gradient values lie below float16's smallest subnormal (2**-24, about 6e-8;
  half of it rounds to zero), which a float16 backward pass makes zero, and how many still would
  with AMP's initial loss scale (2**16).
"""

from __future__ import annotations

import os
import sys
import weakref
from collections.abc import Callable
from typing import Any

import mxnet as mx
import numpy as np

from mxlint.verify.harness import exception_info


class LifecycleProbe:
    """Installed before the user's script runs; `to_json` is the payload's `lifecycle`."""

    def __init__(
        self,
        files: set[str],
        *,
        map_amp: bool,
        roundtrip: bool,
        amp_watch: bool,
        grad_watch: bool = False,
        trainers: Callable[[], list[Any]] | None = None,
    ):
        self.files = {os.path.realpath(f) for f in files}
        self.grad_watch = grad_watch
        #: The trainers of the run (the step probe's list), whose gradients are read.
        self._trainers: Callable[[], list[Any]] = trainers or list
        #: One entry per backward pass read after `amp.init()` (`GRADIENT_PASSES` at most).
        self.gradients: list[dict[str, Any]] = []
        self.map_amp = map_amp
        self.roundtrip = roundtrip
        self.amp_watch = amp_watch
        self.amp_mapped = False
        #: Each `amp.init()`: where it ran, how many networks had a cached graph then.
        self.amp_inits: list[dict[str, Any]] = []
        #: Calls, after `amp.init()`, of networks cached before it, by output dtype.
        self.stale_outputs: dict[str, int] = {}
        self.roundtrips: list[dict[str, Any]] = []
        self._blocks: weakref.WeakSet[Any] = weakref.WeakSet()
        self._stale: weakref.WeakSet[Any] = weakref.WeakSet()
        self._inputs: weakref.WeakKeyDictionary[Any, tuple[Any, ...]] = weakref.WeakKeyDictionary()
        self._exported: dict[str, tuple[weakref.ref[Any], tuple[Any, ...]]] = {}

    # -- where in the user's code ----------------------------------------------------------

    def _user_line(self) -> list[Any] | None:
        """[file, first line, last line] of the user's call that is running (a call written
        over several lines spans them)."""
        frame = sys._getframe(2)
        while frame is not None:
            path = os.path.realpath(frame.f_code.co_filename)
            if path in self.files:
                return [path, *_call_lines(frame)]
            frame = frame.f_back  # type: ignore[assignment]
        return None

    # -- installing ------------------------------------------------------------------------

    def install(self) -> None:
        from mxnet import gluon

        hybrid = gluon.HybridBlock
        if self.amp_watch or self.roundtrip:
            original_init = hybrid.__init__
            original_call = hybrid.__call__
            probe = self

            def init(block: Any, *a: Any, **k: Any) -> None:
                original_init(block, *a, **k)
                probe._blocks.add(block)

            def call(block: Any, *args: Any, **kwargs: Any) -> Any:
                out = original_call(block, *args, **kwargs)
                if probe.roundtrip and args and all(isinstance(a, mx.nd.NDArray) for a in args):
                    probe._inputs[block] = args
                if block in probe._stale:
                    first = out[0] if isinstance(out, (list, tuple)) and out else out
                    dtype = getattr(first, "dtype", None)
                    key = np.dtype(dtype).name if dtype is not None else "unknown"
                    probe.stale_outputs[key] = probe.stale_outputs.get(key, 0) + 1
                return out

            hybrid.__init__ = init  # type: ignore[method-assign]
            hybrid.__call__ = call  # type: ignore[method-assign]
        self._install_amp()
        if self.roundtrip:
            self._install_roundtrip(gluon)
        if self.grad_watch:
            self._install_gradients()

    def _install_gradients(self) -> None:
        from mxnet import autograd

        nd_backward = mx.nd.NDArray.backward
        ag_backward = autograd.backward
        probe = self

        def backward(array: Any, *a: Any, **k: Any) -> Any:
            out = nd_backward(array, *a, **k)
            probe._read_gradients()
            return out

        def ag(heads: Any, *a: Any, **k: Any) -> Any:
            out = ag_backward(heads, *a, **k)
            probe._read_gradients()
            return out

        mx.nd.NDArray.backward = backward  # type: ignore[method-assign]
        autograd.backward = ag

    def _read_gradients(self) -> None:
        """The trainers' gradients after a backward pass run under AMP."""
        if not self.amp_inits or len(self.gradients) >= GRADIENT_PASSES:
            return
        entry: dict[str, Any] = {"where": self._user_line()}
        try:
            entry.update(_underflow(self._trainers()))
        except Exception as exc:  # noqa: BLE001 - a probe failure must not end the run
            entry["error"] = f"{type(exc).__name__}: {exc}"
        self.gradients.append(entry)

    def _install_amp(self) -> None:
        try:
            from mxnet.contrib import amp
            from mxnet.contrib.amp import amp as amp_impl
        except ImportError:  # pragma: no cover - builds without AMP
            return
        original = amp_impl.init
        probe = self

        def init(target_dtype: Any = "float16", *a: Any, **k: Any) -> Any:
            cached = [b for b in list(probe._blocks) if getattr(b, "_cached_graph", ())]
            for block in cached:
                probe._stale.add(block)
            probe.amp_inits.append(
                {"where": probe._user_line(), "cached": len(cached), "target": str(target_dtype)}
            )
            if probe.map_amp and target_dtype in ("float16", np.float16):
                target_dtype = "bfloat16"
                probe.amp_mapped = True
            return original(target_dtype, *a, **k)

        amp_impl.init = init
        amp.init = init

    def _install_roundtrip(self, gluon: Any) -> None:
        export = gluon.HybridBlock.export
        imports = gluon.SymbolBlock.imports
        probe = self

        def exported(block: Any, path: str, epoch: int = 0, *a: Any, **k: Any) -> Any:
            out = export(block, path, epoch, *a, **k)
            seen = probe._inputs.get(block)
            if seen is not None:
                key = os.path.realpath(f"{path}-symbol.json")
                probe._exported[key] = (weakref.ref(block), seen)
            return out

        def imported(symbol_file: str, input_names: Any, *a: Any, **k: Any) -> Any:
            block = imports(symbol_file, input_names, *a, **k)
            source = probe._exported.get(os.path.realpath(symbol_file))
            if source is not None:
                probe._compare(block, source, input_names)
            return block

        gluon.HybridBlock.export = exported
        gluon.SymbolBlock.imports = staticmethod(imported)

    def _compare(
        self, imported: Any, source: tuple[weakref.ref[Any], tuple[Any, ...]], names: Any
    ) -> None:
        """Run the imported block and the exported network on the arrays the network last saw,
        in its order, and record whether the outputs agree."""
        ref, args = source
        network = ref()
        entry: dict[str, Any] = {"where": self._user_line(), "names": _names(names)}
        if network is None:
            return
        try:
            with mx.autograd.pause():
                expected = _arrays(network(*args))
                try:
                    got = _arrays(imported(*[a.as_in_context(_context(imported, a)) for a in args]))
                except Exception as exc:  # noqa: BLE001 - the failure is the evidence
                    info = exception_info(exc)
                    entry.update(
                        equal=False,
                        detail=f"the imported block raised {info['type']}: {info['message'][:200]}",
                    )
                    self.roundtrips.append(entry)
                    return
            entry.update(_agreement(expected, got))
        except Exception as exc:  # noqa: BLE001 - a probe failure must not end the run
            entry.update(equal=None, detail=f"could not compare: {type(exc).__name__}: {exc}")
        self.roundtrips.append(entry)

    def to_json(self) -> dict[str, Any]:
        return {
            "amp_mapped": self.amp_mapped,
            "amp_inits": self.amp_inits,
            "stale_outputs": self.stale_outputs,
            "roundtrips": self.roundtrips,
            "gradients": self.gradients,
        }


#: Backward passes whose gradients are read.
GRADIENT_PASSES = 3
#: AMP's initial dynamic loss scale (`mxnet.contrib.amp.LossScaler`).
LOSS_SCALE = 2.0**16


def _underflow(trainers: list[Any]) -> dict[str, Any]:
    """Nonzero gradient values, those float16 makes zero (unscaled and at AMP's initial scale),
    the smallest magnitude, and the parameters all of whose nonzero gradients vanish."""
    nonzero = flushed = still = 0
    smallest = None
    vanished: list[str] = []
    seen: set[int] = set()
    for trainer in trainers:
        for param in getattr(trainer, "_params", []):
            if id(param) in seen or param.grad_req == "null" or param._grad is None:
                continue
            seen.add(id(param))
            for grad in param.list_grad():
                g = grad.asnumpy().astype(np.float32).ravel()
                live = g[g != 0]
                if not live.size:
                    continue
                lost = np.count_nonzero(live.astype(np.float16) == 0)
                nonzero += int(live.size)
                flushed += int(lost)
                still += int(np.count_nonzero((live * LOSS_SCALE).astype(np.float16) == 0))
                low = float(np.abs(live).min())
                smallest = low if smallest is None else min(smallest, low)
                if lost == live.size and param.name not in vanished:
                    vanished.append(param.name)
    return {
        "nonzero": nonzero,
        "flushed": flushed,
        "flushed_scaled": still,
        "smallest": smallest,
        "vanished": vanished,
    }


def _call_lines(frame: Any) -> tuple[int, int]:
    """The lines of the instruction a frame is at (Python 3.11+ knows its span)."""
    line = frame.f_lineno
    positions = getattr(frame.f_code, "co_positions", None)
    if positions is not None:
        for i, (start, end, _, _) in enumerate(positions()):
            if i == frame.f_lasti // 2 and start is not None and end is not None:
                return start, end
    return line, line


def _names(names: Any) -> list[str]:
    return [names] if isinstance(names, str) else [str(n) for n in names]


def _context(block: Any, array: Any) -> Any:
    """The context of the imported block's parameters (it was loaded on one)."""
    for param in block.collect_params().values():
        try:
            return param.list_ctx()[0]
        except Exception:  # noqa: BLE001 - deferred or uninitialized
            continue
    return array.context


def _arrays(out: Any) -> list[np.ndarray]:
    if isinstance(out, (list, tuple)):
        return [a for o in out for a in _arrays(o)]
    return [out.asnumpy()]


def _agreement(expected: list[np.ndarray], got: list[np.ndarray]) -> dict[str, Any]:
    if len(expected) != len(got):
        return {"equal": False, "detail": f"{len(got)} outputs instead of {len(expected)}"}
    for i, (a, b) in enumerate(zip(expected, got)):
        if a.shape != b.shape:
            return {"equal": False, "detail": f"output {i} has shape {b.shape}, not {a.shape}"}
        if not np.allclose(a, b, rtol=1e-4, atol=1e-5):
            diff = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
            return {"equal": False, "detail": f"output {i} differs by up to {diff:.3g}"}
    return {"equal": True, "detail": f"{len(got)} output(s) equal"}
