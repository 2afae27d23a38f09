"""A tolerant symbolic trace (inside the verify subprocess): every Symbol misuse that would
raise under hybridize() is recorded with its line instead, and the trace goes on.

One loud graph break hides every later one in the same forward. Replaying the trace with the
breaking operations answered (a shape from shape inference, True for `bool`, zeros for
`asnumpy`, the symbolic operator for an `nd.*` call) shows which flagged lines would raise next.
Only raise-type breaks are attributed this way; outputs of a tolerant trace are meaningless.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import mxnet as mx
import numpy as np

_ATTRS = ("shape", "dtype", "ndim", "size", "context", "ctx")
_METHODS = ("asnumpy", "asscalar", "item", "tolist", "wait_to_read")


class Tracer:
    def __init__(self, files: set[str], shapes: dict[str, tuple[int, ...]]) -> None:
        self.files = {os.path.realpath(f) for f in files}
        self.shapes = shapes
        self.events: list[dict[str, Any]] = []

    def record(self, what: str, kind: str = "raise") -> None:
        frame = sys._getframe(2)
        while frame is not None:
            real = os.path.realpath(frame.f_code.co_filename)
            if real in self.files:
                self.events.append(
                    {"file": real, "line": frame.f_lineno, "what": what, "kind": kind}
                )
                return
            frame = frame.f_back  # type: ignore[assignment]

    def shape_of(self, sym: Any) -> tuple[int, ...]:
        try:
            known = {k: v for k, v in self.shapes.items() if k in sym.list_arguments()}
            _, out, _ = sym.infer_shape_partial(**known)
            if out and out[0]:
                return tuple(int(d) for d in out[0])
        except Exception:  # noqa: BLE001 - any shape keeps the trace going
            pass
        return (1,)


@contextmanager
def tolerant(tracer: Tracer) -> Iterator[None]:
    from mxnet.ndarray import register

    Symbol = mx.symbol.Symbol
    saved: dict[str, Any] = {}
    for name in ("__bool__", "__setitem__", *_ATTRS, *_METHODS):
        saved[name] = Symbol.__dict__.get(name, None)

    def attr(name: str) -> property:
        def get(self: Any) -> Any:
            tracer.record(f"'Symbol' object has no attribute '{name}'")
            shape = tracer.shape_of(self)
            return {
                "shape": shape,
                "dtype": np.float32,
                "ndim": len(shape),
                "size": int(np.prod(shape)),
                "context": mx.cpu(),
                "ctx": mx.cpu(),
            }[name]

        return property(get)

    def method(name: str) -> Any:
        def call(self: Any, *a: Any, **k: Any) -> Any:
            tracer.record(f"Function {name} is not implemented for Symbol")
            value = np.zeros(tracer.shape_of(self), dtype="float32")
            return value if name == "asnumpy" else (value.tolist() if name == "tolist" else 0.0)

        return call

    def truth(self: Any) -> bool:
        tracer.record('Function __bool__ (namely operator "bool") is not implemented for Symbol')
        return True

    def setitem(self: Any, key: Any, value: Any) -> None:
        tracer.record("'Symbol' object does not support item assignment")

    def inplace(name: str, op: str) -> Any:
        def call(self: Any, other: Any) -> Any:
            tracer.record(
                f'Function {name} (namely operator "{op}=") is not implemented for Symbol'
            )
            return getattr(self, name.replace("__i", "__", 1))(other)

        return call

    for name, op in (
        ("__iadd__", "+"),
        ("__isub__", "-"),
        ("__imul__", "*"),
        ("__itruediv__", "/"),
        ("__idiv__", "/"),
    ):
        saved[name] = Symbol.__dict__.get(name, None)
        setattr(Symbol, name, inplace(name, op))
    original_str = Symbol.__str__

    def shown(self: Any) -> str:
        text = original_str(self)
        tracer.record(f"print() shows {text} (a graph node), not values", kind="print")
        return text

    saved["__str__"] = Symbol.__dict__.get("__str__", None)
    Symbol.__str__ = shown  # type: ignore[method-assign]
    Symbol.__bool__ = truth  # type: ignore[method-assign]
    Symbol.__setitem__ = setitem  # type: ignore[attr-defined]
    for name in _ATTRS:
        setattr(Symbol, name, attr(name))
    for name in _METHODS:
        setattr(Symbol, name, method(name))
    verify = register._verify_all_legacy_ndarrays
    invoke = register._imperative_invoke

    def lenient_verify(op_name: str, func_name: str, args: Any, out: Any) -> None:
        if any(isinstance(a, Symbol) for a in args):
            return
        verify(op_name, func_name, args, out)

    def symbolic_invoke(
        handle: Any, ndargs: Any, keys: Any, vals: Any, out: Any, *rest: Any
    ) -> Any:
        if any(isinstance(a, Symbol) for a in ndargs):
            name = sys._getframe(1).f_code.co_name
            tracer.record(f"Argument data must have NDArray type (nd.{name} on a Symbol)")
            op = getattr(mx.sym, name, None) or getattr(mx.sym.contrib, name, None)
            if op is None:
                raise TypeError(f"nd.{name} has no symbolic twin")
            return op(*ndargs, **dict(zip(keys, vals)))
        return invoke(handle, ndargs, keys, vals, out, *rest)

    real_base = register.NDArrayBase

    class _Either(type):
        """`isinstance(sym, NDArrayBase)` passes, so generated nd.* functions reach invoke."""

        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, (real_base, Symbol))

    register.NDArrayBase = _Either("NDArrayBase", (), {})
    register._verify_all_legacy_ndarrays = lenient_verify
    register._imperative_invoke = symbolic_invoke
    try:
        yield
    finally:
        register.NDArrayBase = real_base
        register._verify_all_legacy_ndarrays = verify
        register._imperative_invoke = invoke
        for name, value in saved.items():
            if value is None:
                if name in Symbol.__dict__:
                    delattr(Symbol, name)
            else:
                setattr(Symbol, name, value)


def trace(block: Any, xs: list[Any], files: set[str]) -> list[dict[str, Any]]:
    """Build the block's graph with misuse recorded; the events, first break first."""
    n = len(xs)
    names = ["data"] if n == 1 else [f"data{i}" for i in range(n)]
    shapes = {name: tuple(x.shape) for name, x in zip(names, xs)}
    for p in block.collect_params().values():
        if p.shape and all(d > 0 for d in p.shape):
            shapes[p.name] = tuple(p.shape)
    tracer = Tracer(files, shapes)
    inputs = [mx.sym.var(name) for name in names]
    params = {k: v.var() for k, v in block._reg_params.items()}
    with tolerant(tracer), block.name_scope():
        try:
            block.hybrid_forward(mx.sym, *inputs, **params)
        except Exception as exc:  # noqa: BLE001 - a break we cannot answer ends the trace
            import traceback

            frames = [
                f
                for f in traceback.extract_tb(exc.__traceback__)
                if os.path.realpath(f.filename) in tracer.files
            ]
            if frames:
                tracer.events.append(
                    {
                        "file": os.path.realpath(frames[-1].filename),
                        "line": frames[-1].lineno,
                        "end": True,
                        "what": f"{type(exc).__name__}: {exc}"[:200],
                    }
                )
    return tracer.events
