"""`mxlint --verify`: prove each finding on real MXNet, running the project's code in sandboxed
subprocesses.

The static linter never imports mxnet; everything here that touches MXNet runs in a child
process (`mxlint.verify.child`) with NaiveEngine, a timeout and a memory limit.
"""

from __future__ import annotations

from typing import Any

#: The sandboxes of the verify jobs (`--verify-sandbox`); "auto" takes the strongest that works.
#: Here, not in `isolation`, so that building the command line does not load the sandboxes.
SANDBOXES = ("auto", "bubblewrap", "unshare", "none")

#: Imported on first use: `mxlint check` without --verify never pays for this package.
_LAZY = {
    "Rewrite": "model",
    "Verdict": "model",
    "VerifyOptions": "runner",
    "VerifyResult": "runner",
    "verify": "runner",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"mxlint.verify.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Rewrite", "Verdict", "VerifyOptions", "VerifyResult", "verify"]
