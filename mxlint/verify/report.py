"""`--report FILE.html`: one self-contained page a person reads after a verify run.

At the top, what ran where (the sandbox, the device) and the verdicts per family and per file;
then each finding with its code, its verdict's evidence, what the sandbox blocked, the rewrite
as a diff with its check and timing, and plots drawn by matplotlib as inline SVG (text kept as
text): memory per step on two axes (MXNet storage in KiB, live NDArrays as a count — one
scale would flatten a steady +1 NDArray per step) and the distribution of step times.
"""

from __future__ import annotations

import difflib
import html
import importlib.util
import io
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mxlint.rule import FAMILIES, Finding
from mxlint.verify.escapes import describe as describe_escape
from mxlint.verify.model import Verdict

if TYPE_CHECKING:
    from mxlint.verify.runner import VerifyResult

VERDICTS = ("confirmed", "refuted", "inconclusive")
VERDICT_COLORS = {"confirmed": "#b03a2e", "refuted": "#1e8449", "inconclusive": "#5d6d7e"}
#: Plots need matplotlib (in the `verify` extra); without it the page says they are left out.
HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
#: Lines shown above and below a flagged line.
CONTEXT = 3

STYLE = """
body{font-family:system-ui,sans-serif;max-width:70em;margin:1em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1em}
th,td{border:1px solid #ccc;padding:.2em .6em;text-align:left}
td.n{text-align:right}
section.finding{border-top:1px solid #ccc;padding:.6em 0}
pre{background:#f6f8fa;padding:.4em;overflow-x:auto;font-size:90%}
pre .hit{background:#fde2e1;display:block}
.warning{background:#fff3cd;border:1px solid #e0b000;padding:.5em}
.verdict{font-weight:bold;text-transform:uppercase}
.blocked{color:#7d3c98}
"""


def family_of(code: str) -> str:
    return FAMILIES.get(code[3:4], "other") if len(code) > 3 else "other"


# -- plots ------------------------------------------------------------------------------------


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    import matplotlib.pyplot as plt

    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]  # inline: without the XML prolog and doctype


def _figure(width: float = 6.4, height: float = 3.0) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height))


def _series_label(name: str) -> str:
    """`storage_kib (NaiveEngine)` -> `MXNet storage (NaiveEngine)`."""
    return name.replace("storage_kib", "MXNet storage").replace("live_ndarrays", "live NDArrays")


def memory_plot(series: Mapping[str, Sequence[float]], per: str = "step") -> str:
    """Storage (KiB, left axis) and live NDArrays (count, right axis) per step."""
    import matplotlib
    from matplotlib.ticker import MaxNLocator

    storage = {k: v for k, v in series.items() if "storage" in k and v}
    counts = {k: v for k, v in series.items() if "storage" not in k and v}
    if not storage and not counts:
        return ""
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig, left = _figure()
        handles = []
        colors = iter(("#1f77b4", "#17becf", "#9467bd"))
        for name, values in storage.items():
            steps = range(1, len(values) + 1)
            handles += left.plot(
                steps, values, marker="o", color=next(colors), label=_series_label(name)
            )
        left.set_xlabel(f"training {per}")
        left.set_ylabel("MXNet storage (KiB)")
        left.xaxis.set_major_locator(MaxNLocator(integer=True))
        if counts:
            right = left.twinx()
            for name, values in counts.items():
                steps = range(1, len(values) + 1)
                handles += right.plot(
                    steps,
                    values,
                    marker="s",
                    linestyle="--",
                    color="#d62728",
                    label=_series_label(name),
                )
            right.set_ylabel("live NDArrays (count)", color="#d62728")
            right.yaxis.set_major_locator(MaxNLocator(integer=True))
        left.set_title(f"Memory per {per}")
        left.legend(handles=handles, loc="upper left", fontsize="small")
        left.grid(alpha=0.3)
        return _svg(fig)


def timing_plot(samples: Mapping[str, Sequence[float]]) -> str:
    """Histogram of per-step CPU times (seconds in, milliseconds shown), one per variant."""
    import matplotlib
    from matplotlib.ticker import MaxNLocator

    data = {k: [v * 1000 for v in s] for k, s in samples.items() if s}
    if not data:
        return ""
    values = [v for s in data.values() for v in s]
    lo, hi = min(values), max(values)
    bins = [lo + (hi - lo) * i / 20 for i in range(21)] if hi > lo else 10
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig, ax = _figure()
        colors = iter(("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd"))
        for name, times in data.items():
            median = sorted(times)[len(times) // 2]
            ax.hist(
                times,
                bins=bins,
                alpha=0.55,
                color=next(colors),
                label=f"{name} (n={len(times)}, median {median:.3g} ms)",
            )
        ax.set_xlabel("CPU time per step (ms)")
        ax.set_ylabel("steps (count)")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title("Step time distribution")
        ax.legend(fontsize="small")
        ax.grid(alpha=0.3)
        return _svg(fig)


# -- page parts -------------------------------------------------------------------------------


def _count_table(title: str, head: str, rows: Mapping[str, Counter[str]]) -> str:
    cells = "".join(f"<th>{k}</th>" for k in VERDICTS)
    out = [f"<h2>{html.escape(title)}</h2><table><tr><th>{head}</th>{cells}<th>total</th></tr>"]
    for name, counts in rows.items():
        nums = "".join(f'<td class="n">{counts.get(k, 0)}</td>' for k in VERDICTS)
        total = sum(counts.values())
        out.append(f"<tr><td>{html.escape(name)}</td>{nums}<td class='n'>{total}</td></tr>")
    out.append("</table>")
    return "".join(out)


class _Sources:
    """The checked files' lines, read once."""

    def __init__(self) -> None:
        self.lines: dict[str, list[str] | None] = {}

    def get(self, filename: str) -> list[str] | None:
        if filename not in self.lines:
            try:
                text = Path(filename).read_text(encoding="utf-8")
                self.lines[filename] = text.splitlines()
            except (OSError, UnicodeDecodeError):
                self.lines[filename] = None
        return self.lines[filename]


def excerpt(lines: Sequence[str], row: int, context: int = CONTEXT) -> str:
    """The flagged line with `context` lines around it, numbered, the flagged one marked."""
    first, last = max(1, row - context), min(len(lines), row + context)
    width = len(str(last))
    out = []
    for n in range(first, last + 1):
        text = html.escape(f"{n:>{width}} | {lines[n - 1]}")
        out.append(f'<span class="hit">{text}\n</span>' if n == row else text + "\n")
    return '<pre class="excerpt">' + "".join(out) + "</pre>"


def rewrite_diff(finding: Finding, lines: Sequence[str] | None) -> str:
    """The finding's fix as a unified diff of its file ('' without a fix)."""
    if finding.fix is None or lines is None or finding.cell is not None:
        return ""
    from mxlint.fixes import apply_edits

    source = "\n".join(lines) + "\n"
    try:
        fixed = apply_edits(source, finding.fix.edits)
    except Exception:  # noqa: BLE001 - overlapping edits: no diff to show
        return ""
    diff = difflib.unified_diff(
        source.splitlines(keepends=True),
        fixed.splitlines(keepends=True),
        f"{finding.filename} (original)",
        f"{finding.filename} (rewrite)",
        n=1,
    )
    return '<pre class="diff">' + html.escape("".join(diff)) + "</pre>"


def _rewrite_part(finding: Finding, v: Verdict, lines: Sequence[str] | None) -> str:
    r = v.rewrite
    diff = rewrite_diff(finding, lines)
    if r is None:
        return f"<h4>Suggested rewrite (not run)</h4>{diff}" if diff else ""
    state = {True: "verified", False: "rejected", None: "not run"}[r.verified]
    timing = ""
    if r.ratio is not None:
        low, high = r.spread or (r.ratio, r.ratio)
        noise = " (within noise)" if r.within_noise else ""
        timing = f"; step-time ratio {r.ratio:.2f}× [{low:.2f}, {high:.2f}]{noise}"
    evidence = f"<p>{html.escape(r.evidence)}</p>" if r.evidence else ""
    plot = timing_plot(r.samples) if r.samples and HAVE_MATPLOTLIB else ""
    return f"<h4>Rewrite {state}{html.escape(timing)}</h4>{evidence}{diff}{plot}"


def _finding_part(
    index: int, f: Finding, v: Verdict, sources: _Sources, escaped: Sequence[dict[str, Any]]
) -> str:
    lines = sources.get(f.filename)
    color = VERDICT_COLORS[v.verdict]
    code = excerpt(lines, f.location.row) if lines and 0 < f.location.row <= len(lines) else ""
    label = "Evidence" if v.evidence else "Reason"
    blocked = ""
    if escaped:
        items = "".join(f"<li>{html.escape(describe_escape(r))}</li>" for r in escaped)
        blocked = f'<div class="blocked"><b>Sandbox</b><ul>{items}</ul></div>'
    per = "batch" if any("batch" in k for k in v.series) else "step"
    plot = memory_plot(v.series, per) if v.series and HAVE_MATPLOTLIB else ""
    return (
        f'<section class="finding" id="f{index}">'
        f"<h3>{html.escape(f.filename)}:{f.location.row} {f.code} "
        f'<span class="verdict" style="color:{color}">{v.verdict}</span></h3>'
        f"<p>{html.escape(f.message)}</p>{code}"
        f'<p class="evidence"><b>{label}:</b> {html.escape(v.evidence or v.reason)}</p>'
        f"{blocked}{plot}{_rewrite_part(f, v, lines)}</section>"
    )


def render(findings: Sequence[Finding], result: VerifyResult) -> str:
    verdicts = result.verdicts
    judged = [(f, verdicts[f.key()]) for f in findings if f.key() in verdicts]
    by_family: dict[str, Counter[str]] = {}
    by_file: dict[str, Counter[str]] = {}
    for f, v in judged:
        by_family.setdefault(f"{f.code[:4]}xx {family_of(f.code)}", Counter())[v.verdict] += 1
        by_file.setdefault(f.filename, Counter())[v.verdict] += 1
    counts: Counter[str] = Counter(v.verdict for _, v in judged)
    summary = ", ".join(f"{counts.get(k, 0)} {k}" for k in VERDICTS)
    device = f"{result.gpus} GPU(s)" if result.gpus else "CPU (gpu(i) emulated as cpu(i+1))"
    box = result.sandbox
    warning = (
        f'<p class="warning"><b>Warning:</b> {html.escape(box.warning())}</p>'
        if box.warning()
        else ""
    )
    sources = _Sources()
    parts = [
        _finding_part(i, f, v, sources, result.escapes.get(v.job, []))
        for i, (f, v) in enumerate(judged)
    ]
    blocked = sum(len(r) for r in result.escapes.values())
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>mxlint verify report</title><style>{STYLE}</style></head><body>"
        f"<h1>mxlint --verify</h1>{warning}"
        + ("" if HAVE_MATPLOTLIB else "<p>matplotlib is not installed: plots are left out.</p>")
        + f'<p class="summary">{len(judged)} findings: {summary}. Ran the project\'s code on '
        f"{device} in {result.tasks} tasks.</p>"
        f'<p class="sandbox"><b>Sandbox:</b> {html.escape(box.describe())}'
        + (f"; {blocked} attempt(s) outside it recorded" if blocked else "")
        + "</p>"
        + _count_table("Verdicts per family", "family", dict(sorted(by_family.items())))
        + _count_table("Verdicts per file", "file", dict(sorted(by_file.items())))
        + "<h2>Findings</h2>"
        + "".join(parts)
        + "</body></html>\n"
    )


def write_report(path: Path, findings: Sequence[Finding], result: VerifyResult) -> Path:
    """Write the page to `path` (an existing directory gets `index.html`)."""
    if path.is_dir():
        path = path / "index.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(findings, result), encoding="utf-8")
    return path
