"""What the harnesses of a verify subprocess share (`block`, `script`, and `child`, which runs
them): loading a project file as its module, tracing the lines a run reaches, and describing an
exception as JSON. Runs in the child process only.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any


class StopRun(BaseException):
    """Raised by the step hooks to end a bounded run (a BaseException: user `except Exception`
    blocks must not swallow it)."""


def exception_info(exc: BaseException) -> dict[str, Any]:
    from mxlint.verify import ctxmap

    frames = [[f.filename, f.lineno] for f in traceback.extract_tb(exc.__traceback__)]
    message = str(exc).strip()
    # MXNetError messages carry a C++ traceback first; the check that failed is the last line.
    lines = [ln for ln in message.splitlines() if ln.strip()]
    starts = [i for i, ln in enumerate(lines) if ln.startswith("MXNetError:")]
    if starts:
        message = " ".join(lines[starts[-1] :])[len("MXNetError: ") :]
    elif len(lines) > 3 or (lines and lines[0].startswith("Traceback")):
        message = lines[-1]
    return {
        "type": type(exc).__name__,
        "message": ctxmap.translate(message)[:1000],
        "frames": frames,
    }


def load_module(
    path: str, module: str, roots: list[str], source: str | None = None, alias: str | None = None
) -> types.ModuleType:
    """Import a project file by its dotted name (so relative imports work), optionally from a
    rewritten source under another name in the same package."""
    for root in reversed(roots):
        if root not in sys.path:
            sys.path.insert(0, root)
    name = alias or module
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    if "." in module:
        mod.__package__ = module.rpartition(".")[0]
        importlib.import_module(mod.__package__)
    sys.modules[name] = mod
    if source is None:
        spec.loader.exec_module(mod)
    else:
        exec(compile(source, path, "exec"), mod.__dict__)  # the rewrite, in place of the file
    return mod


class Watch:
    """What happened on the watched lines: runs, runs while autograd was recording, and the
    first exception that passed through each (caught by user code or not)."""

    def __init__(self, lines: list[tuple[str, int]]) -> None:
        self.lines = {(os.path.realpath(f), int(n)) for f, n in lines}
        self.runs: dict[tuple[str, int], int] = {}
        self.recording: dict[tuple[str, int], int] = {}
        self.exceptions: dict[tuple[str, int], dict[str, Any]] = {}

    def to_json(self) -> list[dict[str, Any]]:
        return [
            {
                "file": f,
                "line": n,
                "runs": self.runs.get((f, n), 0),
                "recording": self.recording.get((f, n), 0),
                "exception": self.exceptions.get((f, n)),
            }
            for f, n in sorted(self.lines)
        ]


@contextmanager
def trace_lines(
    files: set[str], watch: Watch | None = None, hooks: Sequence[Any] = ()
) -> Iterator[set[tuple[str, int]]]:
    """Record (file, line) executed in `files` only; other frames are not line-traced. Each
    of `hooks` (with `lines`, `on_line(frame, key)`, `leave(frame)`) is told the lines that
    start and the frames that return in its lines' files."""
    hits: set[tuple[str, int]] = set()
    wanted = {os.path.realpath(f) for f in files} | {f for f, _ in (watch.lines if watch else ())}
    active = [h for h in hooks if h is not None and h.lines]
    for hook in active:
        wanted |= {f for f, _ in hook.lines}
    cache: dict[str, str | None] = {}
    from mxnet import autograd

    def local(frame: Any, event: str, arg: Any) -> Any:
        key = (cache[frame.f_code.co_filename] or "", frame.f_lineno)
        for hook in active:
            if event == "line":
                hook.on_line(frame, key)
            elif event == "return":
                hook.leave(frame)
        if event == "line":
            hits.add(key)
            if watch is not None and key in watch.lines:
                watch.runs[key] = watch.runs.get(key, 0) + 1
                if autograd.is_recording():
                    watch.recording[key] = watch.recording.get(key, 0) + 1
        elif (
            event == "exception"
            and watch is not None
            and key in watch.lines
            and key not in watch.exceptions
            and not isinstance(arg[1], (StopRun, StopIteration, GeneratorExit))
        ):
            watch.exceptions[key] = exception_info(arg[1])
        return local

    def global_(frame: Any, event: str, arg: Any) -> Any:
        fn = frame.f_code.co_filename
        if fn not in cache:
            real = os.path.realpath(fn)
            cache[fn] = real if real in wanted else None
        if cache[fn] is not None:
            hits.add((cache[fn] or "", frame.f_lineno))
            return local
        return None

    old = sys.gettrace()
    sys.settrace(global_)
    try:
        yield hits
    finally:
        sys.settrace(old)
