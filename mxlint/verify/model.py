"""Verdicts: what --verify attaches to each finding (the `verify` object of the JSON output)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

VerdictKind = Literal["confirmed", "refuted", "inconclusive"]


@dataclass
class Rewrite:
    """The suggested fix, run on MXNet: results equal to the original's and, if so, timed."""

    verified: bool | None  # None: no rewrite could be run
    evidence: str = ""
    #: Median of paired original/rewrite step-time ratios on process CPU time (>1: rewrite faster).
    ratio: float | None = None
    #: Spread of the ratio: (low, high) over the benchmark processes' medians.
    spread: tuple[float, float] | None = None
    wall_ratio: float | None = None
    within_noise: bool | None = None
    #: Per-step CPU times (seconds) for the report's distributions.
    samples: dict[str, list[float]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "verified": self.verified,
            "ratio": self.ratio,
            "spread": list(self.spread) if self.spread else None,
        }
        if self.evidence:
            out["evidence"] = self.evidence
        if self.wall_ratio is not None:
            out["wall_ratio"] = self.wall_ratio
        if self.within_noise is not None:
            out["within_noise"] = self.within_noise
        return out


@dataclass
class Verdict:
    verdict: VerdictKind
    evidence: str = ""
    reason: str = ""
    rewrite: Rewrite | None = None
    #: Per-step series for the HTML report (e.g. {"storage_kib": [...], "live_ndarrays": [...]}).
    series: dict[str, list[float]] = field(default_factory=dict)
    job: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "evidence": self.evidence,
            "reason": self.reason,
            "rewrite": self.rewrite.to_json() if self.rewrite else None,
        }


def inconclusive(reason: str) -> Verdict:
    return Verdict("inconclusive", reason=reason)
