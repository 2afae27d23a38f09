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
        """The event at the innermost project line, with the project lines that called it."""
        from mxlint.verify.observe import project_stack

        stack = project_stack(self.files, 3)
        if stack:
            file, line = stack[0]
            self.events.append(
                {"file": file, "line": line, "what": what, "kind": kind, "stack": stack}
            )

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

    asked: set[int] = set()

    def truth(self: Any) -> bool:
        """True the first time a line asks, False after: a `while` on a value ends."""
        tracer.record('Function __bool__ (namely operator "bool") is not implemented for Symbol')
        line = sys._getframe(1).f_lineno
        first = line not in asked
        asked.add(line)
        return first

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

    def number(kind: type) -> Any:
        def convert(self: Any) -> Any:
            tracer.record(
                f"{kind.__name__}() argument must be a string or a real number, not 'Symbol'"
            )
            return kind(0)

        return convert

    def transposed(self: Any) -> Any:
        tracer.record("'Symbol' object has no attribute 'T'")
        return self.transpose()

    for name, value in (
        ("__int__", number(int)),
        ("__float__", number(float)),
        ("T", property(transposed)),
    ):
        saved[name] = Symbol.__dict__.get(name, None)
        setattr(Symbol, name, value)
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
    from mxnet import gluon

    set_data = gluon.Parameter.set_data

    def set_symbol(self: Any, data: Any) -> None:
        if isinstance(data, Symbol):
            tracer.record(f"Parameter.set_data() of {self.name} got a Symbol, which has no values")
            return None
        return set_data(self, data)

    gluon.Parameter.set_data = set_symbol  # type: ignore[method-assign]
    register._verify_all_legacy_ndarrays = lenient_verify
    register._imperative_invoke = symbolic_invoke
    try:
        yield
    finally:
        gluon.Parameter.set_data = set_data  # type: ignore[method-assign]
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
    """Build the block's graph with misuse recorded; the events, first break first. Silent
    misuse seen on the way (`observe`) is recorded too, as events of kind "silent"/"mode"."""
    from mxlint.verify import observe

    shapes: dict[str, tuple[int, ...]] = {}
    inputs: list[Any] = []
    single = len(xs) == 1 and not isinstance(xs[0], (list, tuple))
    for i, x in enumerate(xs):
        name = "data" if single else f"data{i}"
        if isinstance(x, (list, tuple)):
            parts = [f"{name}_{j}" for j in range(len(x))]
            shapes.update({p: tuple(a.shape) for p, a in zip(parts, x)})
            inputs.append([mx.sym.var(p) for p in parts])
        else:
            shapes[name] = tuple(x.shape)
            inputs.append(mx.sym.var(name))
    for p in block.collect_params().values():
        if p.shape and all(d > 0 for d in p.shape):
            shapes[p.name] = tuple(p.shape)
    tracer = Tracer(files, shapes)
    observer = observe.Observer(files)
    observer.stage = "tolerant"
    observer.answer = True
    params = {k: v.var() for k, v in block._reg_params.items()}
    with tolerant(tracer), observe.observing(observer), block.name_scope():
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
    return tracer.events + observer.events
