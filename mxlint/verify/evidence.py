"""What the verdict modules share: whether an exception is the one a rule predicts, how to
quote it, and where it came from — MXNet itself, or mxlint's same-device check standing in for
the CUDA build's on an emulated GPU."""

from __future__ import annotations

import os
import re
from typing import Any

from mxlint.rule import CONTEXT_ERROR
from mxlint.verify.model import Basis
from mxlint.verify.plan import Item, runtime, statement_span

CTX_ERROR = re.compile(CONTEXT_ERROR, re.I)
#: Errors Python itself raises on MXNet's objects (a Symbol without `.shape`, unpacking it).
_PYTHON_LEVEL = re.compile(
    r"object has no attribute|values to unpack|argument must be|object is not|not subscriptable"
)
#: The emulation's own check (mxlint/verify/ctxmap.py) raised, not MXNet.
_CTXMAP = os.sep + os.path.join("verify", "ctxmap.py")


def expected(code: str, exc: dict[str, Any]) -> bool:
    """Whether `exc` is the failure the rule of `code` predicts (its runtime's `error`)."""
    how = runtime(code)
    pattern = how.error if how is not None else None
    text = f"{exc.get('type')}: {exc.get('message')}"
    return pattern is None or re.search(pattern, text, re.I) is not None


def is_context(code: str) -> bool:
    how = runtime(code)
    return how is not None and how.check == "context"


def exc_text(exc: dict[str, Any]) -> str:
    return f"{exc.get('type')}: {str(exc.get('message', '')).strip()[:300]}"


def frames_hit(exc: dict[str, Any], item: Item) -> bool:
    """The exception passed through the flagged line's statement (a call written over several
    lines is on the traceback at its first line, which need not be the flagged one)."""
    first, last = statement_span(item.path, item.line)
    return any(
        os.path.realpath(f) == item.path and first <= ln <= last for f, ln in exc.get("frames", [])
    )


def failure(payload: dict[str, Any]) -> str | None:
    if payload.get("status") == "harness-error":
        exc = payload.get("exception", {})
        return f"the harness could not run it: {exc_text(exc)}"
    if payload.get("status") in ("not-hybrid", "no-input", "no-target"):
        return str(payload.get("reason"))
    return None


def emulated(payload: dict[str, Any]) -> bool:
    """GPUs were emulated (gpu(i) as cpu(i+1)) in this run."""
    return bool((payload.get("env") or {}).get("ctx_map"))


def source(exc: dict[str, Any], payload: dict[str, Any]) -> tuple[Basis, str]:
    """Where a raised exception came from, as a verdict basis and the words for it."""
    if any(str(f).endswith(_CTXMAP) for f, _ in exc.get("frames", [])):
        return (
            "emulated",
            "raised by mxlint's same-device check standing in for the CUDA build's "
            "(gpu(i) emulated as cpu(i+1))",
        )
    said = (
        "raised by Python on MXNet's objects"
        if exc.get("type") != "MXNetError" and _PYTHON_LEVEL.search(str(exc.get("message", "")))
        else "raised by MXNet"
    )
    if emulated(payload) and "gpu(" in str(exc.get("message", "")):
        return "raised", f"{said} (gpu(i) emulated as cpu(i+1))"
    return "raised", said
