"""Entry point of a verify subprocess: `python -m mxlint.verify.child JOB.json RESULT.json`.

Sets up the runtime (CUDA preload on GPU hosts, gpu->cpu(i+1) mapping on CPU hosts), then runs
the harness the job names and writes a JSON result. Only this process imports mxnet.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

UNRAISABLE: list[str] = []


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
def trace_lines(files: set[str], watch: Watch | None = None) -> Iterator[set[tuple[str, int]]]:
    """Record (file, line) executed in `files` only; other frames are not line-traced."""
    hits: set[tuple[str, int]] = set()
    wanted = {os.path.realpath(f) for f in files} | {f for f, _ in (watch.lines if watch else ())}
    cache: dict[str, str | None] = {}
    from mxnet import autograd

    def local(frame: Any, event: str, arg: Any) -> Any:
        key = (cache[frame.f_code.co_filename] or "", frame.f_lineno)
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


def _setup(job: dict[str, Any]) -> dict[str, Any]:
    info: dict[str, Any] = {}
    if job.get("gpu"):
        from mxlint.verify.gpu import preload_cuda

        info["preload"] = preload_cuda()
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


def limit_memory() -> None:
    """RLIMIT_AS from the parent's setting (MemoryError instead of the host's OOM killer)."""
    import resource

    megabytes = int(os.environ.get("MXLINT_VERIFY_MEMORY_MB", "0") or 0)
    if megabytes > 0:
        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def main(argv: list[str]) -> int:
    limit_memory()
    job_path, out_path = argv[1], argv[2]
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    sys.unraisablehook = lambda u: UNRAISABLE.append(f"{type(u.exc_value).__name__}: {u.exc_value}")
    result: dict[str, Any]
    try:
        info = _setup(job)
        if job["kind"] == "block":
            from mxlint.verify import block

            result = block.run(job)
        elif job["kind"] == "script":
            from mxlint.verify import script

            result = script.run(job)
        elif job["kind"] == "bench":
            from mxlint.verify import bench

            result = bench.run(job)
        else:
            raise ValueError(f"unknown job kind {job['kind']!r}")
        result["env"] = info
    except BaseException as exc:  # noqa: BLE001 - every failure becomes a reason
        result = {
            "status": "harness-error",
            "exception": exception_info(exc),
            "trace": traceback.format_exc()[-2000:],
        }
    if UNRAISABLE:
        from mxlint.verify import ctxmap

        result["unraisable"] = [ctxmap.translate(u)[:500] for u in UNRAISABLE]
    Path(out_path).write_text(json.dumps(result, default=str), encoding="utf-8")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip MXNet's engine shutdown, which can hang after user threads


if __name__ == "__main__":
    sys.exit(main(sys.argv))
