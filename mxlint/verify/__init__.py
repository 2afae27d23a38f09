"""`mxlint --verify`: prove each finding on real MXNet in isolated subprocesses.

The static linter never imports mxnet; everything here that touches MXNet runs in a child
process (`mxlint.verify.child`) with NaiveEngine, a timeout and a memory limit.
"""

from __future__ import annotations

from mxlint.verify.model import Rewrite, Verdict
from mxlint.verify.runner import VerifyOptions, VerifyResult, verify

__all__ = ["Rewrite", "Verdict", "VerifyOptions", "VerifyResult", "verify"]
