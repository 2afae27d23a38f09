"""What a hybridized trace does that raises nothing (runs inside the verify subprocess).

Silent graph breaks leave no exception: `x[0]`, `len(x)` and `for row in x` on a Symbol with
one output select, count and iterate *outputs* (the whole tensor, 1, one item), and
`autograd.is_training()` read while the graph is traced is frozen into it. While observing,
these are recorded with the project line that did them; nothing changes behaviour.
Also here: a description of a block's Python-side state and of a forward's output structure,
compared between an imperative and a hybridized run.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import mxnet as mx
from mxnet import autograd, gluon


def project_stack(files: set[str], depth: int = 2) -> list[tuple[str, int]]:
    """The frames (from `depth` up, innermost first) in the project `files`."""
    frame: Any = sys._getframe(depth)
    out = []
    while frame is not None:
        real = os.path.realpath(frame.f_code.co_filename)
        if real in files:
            out.append((real, frame.f_lineno))
        frame = frame.f_back
    return out


class Observer:
    """Events (file, line, kind, what) seen while a stage runs; `stage` names the stage."""

    def __init__(self, files: set[str]) -> None:
        self.files = {os.path.realpath(f) for f in files}
        self.stage = ""
        self.events: list[dict[str, Any]] = []
        #: Tolerant: an index past a one-output Symbol's end returns the Symbol (goes on).
        self.answer = False

    def add(self, kind: str, what: str, **extra: Any) -> None:
        stack = project_stack(self.files, 3)
        if not stack:
            return
        event = {"file": stack[0][0], "line": stack[0][1], "kind": kind, "what": what}
        event.update(stage=self.stage, stack=[list(s) for s in stack], **extra)
        if event not in self.events:
            self.events.append(event)


def _single_output(sym: Any) -> bool:
    try:
        return len(sym.list_outputs()) == 1
    except Exception:  # noqa: BLE001 - a symbol we cannot ask is not judged
        return False


@contextmanager
def observing(observer: Observer) -> Iterator[None]:
    """Record silent Symbol misuse and mode reads while the body runs."""
    Symbol = mx.symbol.Symbol
    get, length, iterate = Symbol.__getitem__, Symbol.__len__, Symbol.__iter__
    is_training, is_recording = autograd.is_training, autograd.is_recording

    def getitem(self: Any, index: Any) -> Any:
        if isinstance(index, int) and _single_output(self):
            observer.add(
                "silent",
                f"indexing a Symbol with one output ([{index}]) selects output {index}, "
                f"the whole tensor {self.name}, not row {index}",
            )
            if observer.answer and index not in (0, -1):
                return self
        return get(self, index)

    def size(self: Any) -> int:
        value = length(self)
        if value == 1:
            observer.add("silent", f"len() of the Symbol {self.name} is 1 (its outputs), not rows")
        return value

    def items(self: Any) -> Any:
        if _single_output(self):
            observer.add(
                "silent",
                f"iterating the Symbol {self.name} yields its one output, not its rows",
            )
        return iterate(self)

    def training() -> bool:
        value = is_training()
        observer.add("mode", "autograd.is_training()", value=value)
        return value

    def recording() -> bool:
        value = is_recording()
        observer.add("mode", "autograd.is_recording()", value=value)
        return value

    Symbol.__getitem__ = getitem  # type: ignore[method-assign]
    Symbol.__len__ = size  # type: ignore[method-assign]
    Symbol.__iter__ = items  # type: ignore[method-assign]
    autograd.is_training = training
    autograd.is_recording = recording
    try:
        yield
    finally:
        Symbol.__getitem__ = get  # type: ignore[method-assign]
        Symbol.__len__ = length  # type: ignore[method-assign]
        Symbol.__iter__ = iterate  # type: ignore[method-assign]
        autograd.is_training = is_training
        autograd.is_recording = is_recording


# -- state and structure ----------------------------------------------------------------------

_GLUON_ATTRS = frozenset(gluon.HybridBlock().__dict__) | {"_reg_params", "_children"}


def describe_value(value: Any, depth: int = 0) -> str:
    """A short, comparable description: kind and shape for tensors, values for plain data."""
    if isinstance(value, mx.nd.NDArray):
        return f"NDArray{tuple(value.shape)}"
    if isinstance(value, mx.sym.Symbol):
        return "Symbol"
    if isinstance(value, (bool, int, float, str, type(None))):
        return repr(value)[:40]
    if isinstance(value, (list, tuple)):
        if depth > 1:
            return f"{type(value).__name__}[{len(value)}]"
        inner = ", ".join(describe_value(v, depth + 1) for v in list(value)[:4])
        more = ", ..." if len(value) > 4 else ""
        return f"{type(value).__name__}[{len(value)}]({inner}{more})"
    if isinstance(value, dict):
        if depth > 1:
            return f"dict[{len(value)}]"
        inner = ", ".join(
            f"{k!r}: {describe_value(v, depth + 1)}" for k, v in list(value.items())[:4]
        )
        return f"dict[{len(value)}]({inner})"
    if isinstance(value, gluon.Parameter):
        try:
            return f"Parameter{describe_value(value.data().asnumpy().round(4).tolist())}"[:80]
        except Exception:  # noqa: BLE001 - uninitialised
            return "Parameter(uninitialised)"
    return type(value).__name__


def state(block: gluon.Block) -> dict[str, str]:
    """The block's own attributes (not Gluon's bookkeeping, children or methods), described."""
    out = {}
    for name, value in vars(block).items():
        if name in _GLUON_ATTRS or isinstance(value, gluon.Block) or callable(value):
            continue
        out[name] = describe_value(value)
    for name, param in block._reg_params.items():
        out[name] = describe_value(param)
    return out


def structure(value: Any) -> str:
    """The container types of a forward's output, tensors as `T`."""
    if isinstance(value, (mx.nd.NDArray, mx.sym.Symbol)):
        return "T"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(structure(v) for v in value)
        return f"{type(value).__name__}({inner})"
    if isinstance(value, dict):
        return f"{type(value).__name__}({', '.join(map(str, value))})"
    return type(value).__name__
