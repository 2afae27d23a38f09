"""`--report FILE.html`, checked for what a person sees: the summary tables, each finding's code
excerpt, evidence, sandbox notes and rewrite diff, and plots with labelled axes, ticks and
counts — by parsing the page, and by rendering it in a headless Chromium where one is
installed. One report comes from a real verify run on MXNet.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from mxlint.rule import Edit, Finding, Fix, Location
from mxlint.verify.isolation import Sandbox
from mxlint.verify.model import Rewrite, Verdict
from mxlint.verify.report import excerpt, render, write_report
from mxlint.verify.runner import VerifyResult

ROOT = Path(__file__).resolve().parent.parent


class Page(HTMLParser):
    """The parts of the page a reader looks at, as text."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.excerpts: list[str] = []
        self.hits: list[str] = []
        self.diffs: list[str] = []
        self.svgs: list[list[str]] = []  # the text elements of each plot
        self.classes: dict[str, list[str]] = {}
        self._stack: list[tuple[str, str]] = []
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        cls = dict(attrs).get("class") or ""
        if tag in ("br", "meta", "path", "use", "rect", "line", "circle"):
            return  # void or self-closing: never on the stack
        self._stack.append((tag, cls))
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "svg":
            self.svgs.append([])
        elif tag == "pre" and cls == "excerpt":
            self.excerpts.append("")
        elif tag == "pre" and cls == "diff":
            self.diffs.append("")
        elif cls:
            self.classes.setdefault(cls, []).append("")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        """`<path/>` and the like hold no text."""

    def handle_endtag(self, tag: str) -> None:
        if tag not in (t for t, _ in self._stack):
            return
        while self._stack:
            open_tag, _ = self._stack.pop()
            if open_tag == tag:
                break
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        tags = [t for t, _ in self._stack]
        classes = [c for _, c in self._stack if c]
        if self._cell is not None:
            self._cell.append(data)
        if "svg" in tags and tags[-1] == "text" and data.strip():
            self.svgs[-1].append(data.strip())
        if "excerpt" in classes:
            self.excerpts[-1] += data
            if "hit" in classes:
                self.hits.append(data)
        if "diff" in classes:
            self.diffs[-1] += data
        if classes and classes[-1] in self.classes and classes[-1] not in ("excerpt", "diff"):
            self.classes[classes[-1]][-1] += data


SOURCE = """\
from mxnet import nd
from mxnet.gluon import nn


class Net(nn.HybridBlock):
    def hybrid_forward(self, F, x):
        y = nd.relu(x)
        return y.asnumpy()


def train(net, data):
    outputs = []
    for x in data:
        outputs.append(net(x))
"""


def _result(tmp_path: Path) -> tuple[list[Finding], VerifyResult]:
    path = tmp_path / "model.py"
    path.write_text(SOURCE, encoding="utf-8")
    fix = Fix(
        "safe",
        "use F.relu",
        (Edit("F.relu", Location(7, 13), Location(7, 20)),),
    )
    findings = [
        Finding(
            "MXL105",
            "`nd.relu(...)` runs imperatively",
            str(path),
            Location(7, 13),
            Location(7, 20),
            fix=fix,
        ),
        Finding(
            "MXL102", "`.asnumpy()` copies a tensor", str(path), Location(8, 16), Location(8, 27)
        ),
        Finding(
            "MXL402", "outputs kept across steps", str(path), Location(14, 9), Location(14, 31)
        ),
        Finding(
            "MXL301", "unseeded shuffle", str(tmp_path / "train.py"), Location(3, 1), Location(3, 2)
        ),
    ]
    rewrite = Rewrite(
        True,
        "outputs and gradients equal to the original's",
        ratio=1.18,
        spread=(1.1, 1.3),
        within_noise=False,
        samples={"original": [0.0012, 0.0013, 0.0013, 0.0014], "rewrite": [0.001, 0.0011, 0.001]},
    )
    memory = Verdict(
        "confirmed",
        "memory grows every step under NaiveEngine: +8.2 KiB and +1.0 live NDArrays per step",
    )
    memory.series = {
        "storage_kib (NaiveEngine)": [100.0 + 8.2 * i for i in range(8)],
        "live_ndarrays (NaiveEngine)": [40.0 + i for i in range(8)],
    }
    verdicts = [
        Verdict("confirmed", "hybridize() raised AssertionError at line 7", rewrite=rewrite),
        Verdict("inconclusive", reason="line 8 was masked by an earlier break"),
        memory,
        Verdict("refuted", "two fresh runs give the same first batch"),
    ]
    for v, job in zip(verdicts, ("block:a", "block:a", "script:t", "script:u")):
        v.job = job
    result = VerifyResult(
        {f.key(): v for f, v in zip(findings, verdicts)},
        tasks=3,
        gpus=0,
        sandbox=Sandbox("unshare", "/usr/bin/unshare", fallback=("bubblewrap is not installed",)),
        escapes={"block:a": [{"what": "connect", "target": "127.0.0.1:80", "blocked": True}]},
    )
    return findings, result


def test_the_page_shows_tables_excerpts_evidence_and_labelled_plots(tmp_path: Path) -> None:
    findings, result = _result(tmp_path)
    page = Page(render(findings, result))
    family, files = page.tables
    assert family == [
        ["family", "confirmed", "refuted", "inconclusive", "total"],
        ["MXL1xx hybridization", "1", "0", "1", "2"],
        ["MXL3xx reproducibility", "0", "1", "0", "1"],
        ["MXL4xx autograd and memory", "1", "0", "0", "1"],
    ]
    assert files == [
        ["file", "confirmed", "refuted", "inconclusive", "total"],
        [str(tmp_path / "model.py"), "2", "0", "1", "3"],
        [str(tmp_path / "train.py"), "0", "1", "0", "1"],
    ]
    assert page.classes["warning"][0].startswith("Warning: no bubblewrap sandbox")
    assert page.classes["summary"] == [
        "4 findings: 2 confirmed, 1 refuted, 1 inconclusive. Ran the project's code on CPU "
        "(gpu(i) emulated as cpu(i+1)) in 3 tasks."
    ]
    # The excerpt of each finding in a readable file, its flagged line marked.
    assert page.excerpts[0] == "".join(
        f"{n:>2} | {line}\n" for n, line in enumerate(SOURCE.splitlines()[3:10], 4)
    )
    assert page.hits == [
        " 7 |         y = nd.relu(x)\n",
        " 8 |         return y.asnumpy()\n",
        "14 |         outputs.append(net(x))\n",
    ]
    assert len(page.excerpts) == 3  # train.py does not exist: no excerpt, the verdict stays
    assert page.classes["evidence"] == [
        "Evidence: hybridize() raised AssertionError at line 7",
        "Reason: line 8 was masked by an earlier break",
        "Evidence: memory grows every step under NaiveEngine: +8.2 KiB and +1.0 live NDArrays "
        "per step",
        "Evidence: two fresh runs give the same first batch",
    ]
    assert page.classes["blocked"] == [
        "Sandboxblocked: connect to 127.0.0.1:80",
        "Sandboxblocked: connect to 127.0.0.1:80",
    ]
    (diff,) = page.diffs
    assert "-        y = nd.relu(x)\n+        y = F.relu(x)\n" in diff
    timing, memory = page.svgs  # in the order of the findings
    assert {
        "Memory per step",
        "training step",
        "MXNet storage (KiB)",
        "live NDArrays (count)",
    } <= set(memory)
    assert {"MXNet storage (NaiveEngine)", "live NDArrays (NaiveEngine)"} <= set(memory)
    assert {"1", "8", "40", "47"} <= set(memory)  # step and count ticks
    assert {
        "Step time distribution",
        "CPU time per step (ms)",
        "steps (count)",
        "original (n=4, median 1.3 ms)",
        "rewrite (n=3, median 1 ms)",
    } <= set(timing)


def test_excerpt_numbers_lines_at_the_edges_of_a_file() -> None:
    lines = ["a = 1", "b = 2"]
    assert excerpt(lines, 1) == (
        '<pre class="excerpt"><span class="hit">1 | a = 1\n</span>2 | b = 2\n</pre>'
    )


def test_report_is_written_to_the_file_named_or_into_an_existing_directory(
    tmp_path: Path,
) -> None:
    findings, result = _result(tmp_path)
    target = tmp_path / "out" / "verify.html"
    assert write_report(target, findings, result) == target and target.is_file()
    folder = tmp_path / "existing"
    folder.mkdir()
    assert write_report(folder, findings, result) == folder / "index.html"


def test_report_without_verify_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "mxlint", "check", "--report", "r.html", "a.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr == "mxlint: error: --report writes the verify report: it needs --verify\n"
    assert proc.stdout == "" and not (tmp_path / "r.html").exists()


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "chromium-headless-shell", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    shell = Path("/usr/lib/chromium/chromium-headless-shell")
    return str(shell) if shell.is_file() else None


@pytest.fixture(scope="module")
def real_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report of a real verify run: hybridization findings with a benchmarked rewrite, and a
    memory finding with its per-step series."""
    out = tmp_path_factory.mktemp("report") / "verify.html"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mxlint",
            "check",
            "--verify",
            "--report",
            str(out),
            "--select",
            "MXL102,MXL105,MXL402",
            "fixtures/verify/hybrid/bad/blocks.py",
            "fixtures/verify/memory/bad/keep_outputs.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert f"mxlint: verify report written to {out}" in proc.stderr
    return out


@pytest.mark.slow
def test_a_real_run_writes_a_report_a_person_can_read(real_report: Path) -> None:
    page = Page(real_report.read_text(encoding="utf-8"))
    family, files = page.tables
    assert family[1:] == [
        ["MXL1xx hybridization", "2", "0", "0", "2"],
        ["MXL4xx autograd and memory", "1", "0", "0", "1"],
    ]
    assert [row[0] for row in files[1:]] == [
        "fixtures/verify/hybrid/bad/blocks.py",
        "fixtures/verify/memory/bad/keep_outputs.py",
    ]
    assert [h.split("|")[0].strip() for h in page.hits] == ["34", "44", "16"]
    assert page.hits[2].endswith("outputs.append(out)  # expect: MXL402\n")
    (diff,) = page.diffs
    assert "+" in diff and "F.relu" in diff
    timing, memory = page.svgs  # in the order of the findings
    assert {"training step", "MXNet storage (KiB)", "live NDArrays (count)"} <= set(memory)
    assert {"CPU time per step (ms)", "steps (count)"} <= set(timing)
    assert any(t.startswith("original (n=") for t in timing)
    assert page.classes["sandbox"][0].startswith("Sandbox: ")


@pytest.mark.slow
def test_the_report_renders_in_a_headless_browser(real_report: Path, tmp_path: Path) -> None:
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium on this host (Debian: apt-get install chromium-headless-shell)")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    url = real_report.as_uri()
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120
    )
    page = Page(dom.stdout)
    assert page.tables[0][1] == ["MXL1xx hybridization", "2", "0", "0", "2"]
    assert {"training step", "live NDArrays (count)"} <= set(page.svgs[1])
    shot = tmp_path / "report.png"
    subprocess.run(
        [browser, *flags, "--window-size=1200,2400", f"--screenshot={shot}", url],
        capture_output=True,
        timeout=120,
        check=False,
    )
    import matplotlib.image

    pixels = matplotlib.image.imread(str(shot))
    assert pixels.shape[:2] == (2400, 1200)
    ink = (pixels[..., :3].mean(axis=2) < 0.5).mean()  # dark pixels: text, axes, lines
    assert 0.005 < ink < 0.5, ink
