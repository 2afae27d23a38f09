"""`--report DIR`: a self-contained HTML page (inline SVG, no plotting library) with each
finding's verdict, memory per iteration and the step-time distributions of original vs rewrite."""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from mxlint.rule import Finding, FindingKey
from mxlint.verify.model import Verdict

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")
VERDICT_COLORS = {"confirmed": "#c0392b", "refuted": "#27ae60", "inconclusive": "#7f8c8d"}


def line_plot(series: dict[str, list[float]], width: int = 420, height: int = 160) -> str:
    """Each series against the iteration number."""
    values = [v for s in series.values() for v in s]
    if not values:
        return ""
    lo, hi = min(values), max(values)
    hi = hi if hi > lo else lo + 1
    n = max(len(s) for s in series.values())
    pad = 30

    def xy(i: int, v: float) -> str:
        x = pad + (width - 2 * pad) * (i / max(1, n - 1))
        y = height - pad - (height - 2 * pad) * ((v - lo) / (hi - lo))
        return f"{x:.1f},{y:.1f}"

    parts = [
        f'<svg width="{width}" height="{height}" role="img">',
        f'<text x="2" y="12" font-size="10">{hi:.4g}</text>',
        f'<text x="2" y="{height - pad + 4}" font-size="10">{lo:.4g}</text>',
        f'<text x="{width / 2 - 20:.0f}" y="{height - 4}" font-size="10">iteration</text>',
    ]
    for k, (name, s) in enumerate(series.items()):
        points = " ".join(xy(i, v) for i, v in enumerate(s))
        color = COLORS[k % len(COLORS)]
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{points}"/>')
        parts.append(
            f'<text x="{pad + 5}" y="{14 + 12 * k}" font-size="10" fill="{color}">'
            f"{html.escape(name)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def histogram(
    samples: dict[str, list[float]], width: int = 420, height: int = 160, bins: int = 20
) -> str:
    """Step-time distributions (milliseconds), overlaid."""
    values = [v * 1000 for s in samples.values() for v in s]
    if not values:
        return ""
    lo, hi = min(values), max(values)
    hi = hi if hi > lo else lo + 1e-6
    step = (hi - lo) / bins
    counts = {
        name: Counter(min(bins - 1, int((v * 1000 - lo) / step)) for v in s)
        for name, s in samples.items()
    }
    top = max(c for cs in counts.values() for c in cs.values())
    pad = 30
    bw = (width - 2 * pad) / bins
    parts = [
        f'<svg width="{width}" height="{height}" role="img">',
        f'<text x="{pad}" y="{height - 4}" font-size="10">{lo:.3g} ms</text>',
        f'<text x="{width - pad - 40}" y="{height - 4}" font-size="10">{hi:.3g} ms</text>',
    ]
    for k, (name, cs) in enumerate(counts.items()):
        color = COLORS[k % len(COLORS)]
        for b, c in cs.items():
            h = (height - 2 * pad) * c / top
            parts.append(
                f'<rect x="{pad + b * bw:.1f}" y="{height - pad - h:.1f}" '
                f'width="{bw:.1f}" height="{h:.1f}" fill="{color}" opacity="0.5"/>'
            )
        parts.append(
            f'<text x="{pad + 5}" y="{14 + 12 * k}" font-size="10" fill="{color}">'
            f"{html.escape(name)} (CPU time per step)</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def render(findings: Sequence[Finding], verdicts: Mapping[FindingKey, Verdict], gpus: int) -> str:
    counts: Counter[str] = Counter(v.verdict for v in verdicts.values())
    rows = []
    for f in findings:
        v = verdicts.get(f.key())
        if v is None:
            continue
        plots = line_plot(v.series) if v.series else ""
        rewrite = ""
        if v.rewrite is not None:
            r = v.rewrite
            state = {True: "verified", False: "rejected", None: "not run"}[r.verified]
            ratio = (
                f"; ratio {r.ratio} [{r.spread[0]}, {r.spread[1]}]"
                if r.ratio is not None and r.spread
                else ""
            )
            rewrite = (
                f"<p><b>Rewrite {state}</b>{ratio}: {html.escape(r.evidence)}</p>"
                + histogram(r.samples)
            )
        color = VERDICT_COLORS[v.verdict]
        rows.append(
            f"<section><h3>{html.escape(f.filename)}:{f.location.row} {f.code} "
            f'<span style="color:{color}">{v.verdict}</span></h3>'
            f"<p>{html.escape(f.message)}</p>"
            f"<p><i>{html.escape(v.evidence or v.reason)}</i></p>{plots}{rewrite}</section>"
        )
    summary = ", ".join(f"{counts.get(k, 0)} {k}" for k in VERDICT_COLORS)
    device = f"{gpus} GPU(s)" if gpus else "CPU (gpu(i) mapped to cpu(i+1))"
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>mxlint verify</title>"
        "<style>body{font-family:sans-serif;max-width:60em;margin:auto}"
        "section{border-top:1px solid #ccc;padding:.5em 0}</style></head><body>"
        f"<h1>mxlint --verify</h1><p>{summary} · ran on {device}</p>"
        + "".join(rows)
        + "</body></html>\n"
    )


def write_report(
    directory: Path, findings: Sequence[Finding], verdicts: Mapping[FindingKey, Verdict], gpus: int
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "index.html"
    path.write_text(render(findings, verdicts, gpus), encoding="utf-8")
    return path
