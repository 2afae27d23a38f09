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


#: What a definite verdict rests on: an exception MXNet raised ("raised"), one raised by
#: mxlint's same-device check on an emulated GPU ("emulated"), a failure inferred past an
#: earlier break by the tolerant Symbol ("inferred"), something the hybridized trace was seen
#: doing ("observed"), a comparison of two runs' results or state ("compared"), or a measured
#: series ("measured").
Basis = Literal["", "raised", "emulated", "inferred", "observed", "compared", "measured"]


@dataclass
class Verdict:
    verdict: VerdictKind
    evidence: str = ""
    reason: str = ""
    rewrite: Rewrite | None = None
    #: Per-step series for the HTML report (e.g. {"storage_kib": [...], "live_ndarrays": [...]}).
    series: dict[str, list[float]] = field(default_factory=dict)
    job: str = ""
    basis: Basis = ""
    #: How the code was reached: the entry script, or the function called directly with
    #: arguments mxlint built (what they were).
    reached: str = ""
    #: What stood in for data, weights or files the run could not have (named).
    standins: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "verdict": self.verdict,
            "evidence": self.evidence,
            "reason": self.reason,
            "rewrite": self.rewrite.to_json() if self.rewrite else None,
        }
        if self.basis:
            out["basis"] = self.basis
        if self.reached:
            out["reached"] = self.reached
        if self.standins:
            out["standins"] = list(self.standins)
        return out


def inconclusive(reason: str) -> Verdict:
    return Verdict("inconclusive", reason=reason)
