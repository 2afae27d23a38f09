"""`mxlint --verify` on real MXNet (CPU): every runnable fixture gets the expected verdict.

`fixtures/verify/<family>/bad` holds the broken programs, with `# expect: CODE` on the lines
the rules flag; `good` holds their clean twins, with `# refute: CODE` on the lines a too eager
rule could flag. The whole tree is run once through the real CLI; markers no registered rule
reports are verified through the Python API with findings built from the markers, so the
harnesses are tested even for rules still being written.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mxlint.rule import Edit, Finding, Fix, Location
from mxlint.verify.gpu import nvidia_smi_gpus
from mxlint.verify.isolation import detect
from mxlint.verify.runner import VerifyOptions, verify

ROOT = Path(__file__).resolve().parent.parent
VERIFY = ROOT / "fixtures" / "verify"
MARKER = re.compile(r"#\s*(expect|refute):\s*(.*)$")
FAMILIES = ("hybrid", "contexts", "seeds", "memory", "lifecycle", "sync")

pytestmark = pytest.mark.slow


def markers() -> dict[tuple[str, int, str], str]:
    """(real path, line, code) -> "confirmed" | "refuted"."""
    out = {}
    for path in sorted(VERIFY.rglob("*.py")):
        for row, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = MARKER.search(line)
            if m:
                for code in re.findall(r"MXL\d{3}", m.group(2)):
                    verdict = "confirmed" if m.group(1) == "expect" else "refuted"
                    out[(str(path.resolve()), row, code)] = verdict
    return out


def _key(item: dict[str, Any]) -> tuple[str, int, str]:
    path = Path(item["filename"])
    path = path if path.is_absolute() else ROOT / path
    return (str(path.resolve()), item["location"]["row"], item["code"])


@pytest.fixture(scope="module")
def verdicts() -> dict[tuple[str, int, str], dict[str, Any]]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mxlint",
            "--verify",
            "--no-benchmark",
            "--output-format",
            "json",
            "--verify-timeout",
            "120",
            "fixtures/verify",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    reported = json.loads(proc.stdout)
    found: dict[tuple[str, int, str], dict[str, Any]] = {}
    for item in reported:
        assert "verify" in item, item
        found.setdefault(_key(item), item["verify"])
    missing = [k for k in markers() if k not in found]
    if missing:
        findings = [
            Finding(code, code, path, Location(row, 1), Location(row, 2))
            for path, row, code in missing
        ]
        options = VerifyOptions(
            bench=False, timeout=120, config={"blocks": {"LoopRNN": {"input-shapes": [[8, 4, 32]]}}}
        )
        result = verify(findings, sorted(VERIFY.rglob("*.py")), options)
        for i, key in enumerate(missing):
            found[key] = result.verdicts[findings[i].key()].to_json()
    return found


@pytest.mark.parametrize("family", FAMILIES)
def test_family_fixtures_get_the_expected_verdicts(
    family: str, verdicts: dict[tuple[str, int, str], dict[str, Any]]
) -> None:
    expected = {k: v for k, v in markers().items() if f"/verify/{family}/" in k[0]}
    assert expected
    wrong = {
        f"{Path(k[0]).relative_to(VERIFY)}:{k[1]} {k[2]}": (
            v,
            verdicts[k]["verdict"],
            verdicts[k]["evidence"] or verdicts[k]["reason"],
        )
        for k, v in expected.items()
        if verdicts[k]["verdict"] != v
    }
    assert not wrong
    for key in expected:
        v = verdicts[key]
        assert v["evidence"], key


def test_api_mismatches_are_confirmed_by_the_exceptions_mxnet_raises() -> None:
    """MXL103/MXL110-MXL112/MXL115-MXL118 (names, forms, broadcasting and array parameters from
    the generated MXNet facts): each marked line raises on real MXNet, hybridized or at the
    first call, and the safe rewrites run."""
    bad = ROOT / "fixtures" / "hybridization" / "bad"
    proc = subprocess.run(
        [sys.executable, "-m", "mxlint", "--verify", "--no-benchmark", "--output-format", "json"]
        + [
            "--verify-timeout",
            "120",
            str(bad / "api_mismatch.py"),
            str(bad / "positional_axis.py"),
            str(bad / "truth_value.py"),
            str(bad / "imperative_typo.py"),
            str(bad / "operator_keyword.py"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    got = {
        (Path(item["filename"]).name, item["location"]["row"], item["code"]): item["verify"][
            "verdict"
        ]
        for item in json.loads(proc.stdout)
    }
    assert got == {
        ("api_mismatch.py", 16, "MXL112"): "confirmed",
        ("api_mismatch.py", 22, "MXL111"): "confirmed",
        ("api_mismatch.py", 27, "MXL103"): "confirmed",
        ("api_mismatch.py", 32, "MXL111"): "confirmed",
        ("api_mismatch.py", 38, "MXL110"): "confirmed",
        # by the graph node MXNet's shape error names; line 45 once line 44's rewrite is applied
        ("api_mismatch.py", 44, "MXL115"): "confirmed",
        ("api_mismatch.py", 45, "MXL115"): "confirmed",
        ("positional_axis.py", 14, "MXL116"): "confirmed",
        ("positional_axis.py", 26, "MXL116"): "confirmed",
        ("truth_value.py", 9, "MXL117"): "confirmed",
        ("imperative_typo.py", 11, "MXL110"): "confirmed",
        ("operator_keyword.py", 14, "MXL118"): "confirmed",
    }


def test_no_finding_on_a_clean_twin_is_confirmed(
    verdicts: dict[tuple[str, int, str], dict[str, Any]],
) -> None:
    confirmed = [k for k, v in verdicts.items() if "/good/" in k[0] and v["verdict"] == "confirmed"]
    assert not confirmed


def _fix_finding(path: Path, code: str, old: str, new: str) -> Finding:
    for row, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        col = line.find(old)
        if col >= 0:
            start, end = Location(row, col + 1), Location(row, col + 1 + len(old))
            return Finding(
                code,
                code,
                str(path),
                start,
                end,
                fix=Fix("unsafe", "rewrite", (Edit(new, start, end),)),
            )
    raise AssertionError(f"{old!r} not in {path}")


def test_rewrites_are_verified_and_benchmarked() -> None:
    bad = VERIFY / "hybrid" / "bad"
    findings = [
        _fix_finding(bad / "blocks.py", "MXL105", "nd.relu(", "F.relu("),
        _fix_finding(
            bad / "rnn.py",
            "MXL104",
            "for xt in x:",
            "for xt in F.split(x, num_outputs=self.steps, axis=0, squeeze_axis=True):",
        ),
    ]
    options = VerifyOptions(
        bench=True,
        bench_pairs=6,
        timeout=120,
        config={"blocks": {"LoopRNN": {"input-shapes": [[8, 4, 32]]}}},
    )
    result = verify(findings, [bad / "blocks.py", bad / "rnn.py"], options)
    for i in range(2):
        v = result.verdicts[findings[i].key()]
        assert v.verdict == "confirmed", v
        assert v.rewrite is not None and v.rewrite.verified is True, v.rewrite
        assert v.rewrite.ratio is not None and v.rewrite.ratio > 0
        assert v.rewrite.spread is not None and v.rewrite.spread[0] <= v.rewrite.spread[1]
        assert len(v.rewrite.samples["original"]) == 12


def test_a_rewrite_that_changes_results_is_rejected_and_not_timed() -> None:
    bad = VERIFY / "hybrid" / "bad" / "blocks.py"
    finding = _fix_finding(bad, "MXL105", "nd.relu(", "F.sigmoid(")
    result = verify([finding], [bad], VerifyOptions(bench=True, timeout=120))
    rewrite = result.verdicts[finding.key()].rewrite
    assert rewrite is not None and rewrite.verified is False
    assert "changes results" in rewrite.evidence and rewrite.ratio is None


HANG = """
from mxnet.gluon import nn


class Hang(nn.HybridBlock):
    def hybrid_forward(self, F, x):
        while True:
            pass


class Crash(nn.HybridBlock):
    def hybrid_forward(self, F, x):
        import ctypes
        ctypes.string_at(0)
        return x
"""


def test_hanging_and_crashing_blocks_end_inconclusive(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text(HANG, encoding="utf-8")
    findings = [
        Finding("MXL101", "x", str(path), Location(7, 9), Location(7, 10)),
        Finding("MXL102", "x", str(path), Location(14, 9), Location(14, 10)),
    ]
    start = time.monotonic()
    result = verify(findings, [path], VerifyOptions(timeout=8, bench=False, jobs=2))
    elapsed = time.monotonic() - start
    hang, crash = (result.verdicts[f.key()] for f in findings)
    assert hang.verdict == "inconclusive" and hang.reason.startswith("timeout"), hang
    assert crash.verdict == "inconclusive" and "SIGSEGV" in crash.reason, crash
    assert elapsed < 30


def test_memory_limit_ends_inconclusive(tmp_path: Path) -> None:
    path = tmp_path / "hog.py"
    path.write_text(
        "import numpy as np\nimport mxnet as mx\n"
        "block = [np.empty((1024, 1024, 64)) for _ in range(64)]\n"
        "x = np.random.rand(3)\nprint(x)\n",
        encoding="utf-8",
    )
    finding = Finding("MXL302", "x", str(path), Location(4, 5), Location(4, 6))
    options = VerifyOptions(timeout=60, bench=False, memory_mb=3072)
    verdict = verify([finding], [path], options).verdicts[finding.key()]
    assert verdict.verdict == "inconclusive"
    assert "MemoryError" in verdict.reason or "memory" in verdict.reason, verdict


def test_report_and_json_from_the_cli(tmp_path: Path) -> None:
    out = tmp_path / "reports" / "verify.html"
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
            "MXL3",
            "fixtures/verify/seeds/bad/train_shuffle.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert "CONFIRMED" in proc.stdout and "Verify summary:" in proc.stdout
    page = out.read_text(encoding="utf-8")
    assert "confirmed" in page and "MXL301" in page


def test_doctor_reports_the_environment() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mxlint", "doctor", "--output-format", "json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    checks = {c["name"]: c for c in json.loads(proc.stdout)}
    assert checks["mxnet"]["status"] == "ok" and "1.9.1" in checks["mxnet"]["detail"]
    assert checks["python"]["detail"] == sys.version.split()[0]
    assert "python for --verify" not in checks  # this Python installs the [verify] extra
    box = detect("auto")
    assert checks["sandbox"]["status"] == ("warn" if box.warning() else "ok")
    assert checks["sandbox"]["detail"].startswith(box.warning()[:40] or box.describe())
    assert proc.returncode == 0


@pytest.mark.gpu
@pytest.mark.skipif(nvidia_smi_gpus() == 0, reason="needs a CUDA GPU and mxnet-cu112")
def test_context_bug_confirmed_on_a_real_gpu() -> None:
    path = VERIFY / "contexts" / "bad" / "train_gpu.py"
    row = next(i for i, line in enumerate(path.read_text().splitlines(), 1) if "expect" in line)
    finding = Finding("MXL201", "x", str(path), Location(row, 1), Location(row, 2))
    verdict = verify([finding], [path], VerifyOptions(timeout=300, bench=False)).verdicts[
        finding.key()
    ]
    assert verdict.verdict == "confirmed" and "gpu(0)" in verdict.evidence


def test_static_lint_never_imports_mxnet() -> None:
    code = (
        "import sys, mxlint.api, mxlint.verify, mxlint.cli\n"
        "mxlint.api.check_paths(['fixtures/verify'])\n"
        "assert 'mxnet' not in sys.modules, 'mxnet imported'\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=dict(os.environ),
    )
    assert proc.returncode == 0, proc.stderr


TWO_BREAKS = """
from mxnet import nd
from mxnet.gluon import nn


class TwoBreaks(nn.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = nn.Dense(4, in_units=8)

    def hybrid_forward(self, F, x):
        y = nd.relu(self.dense(x))
        return y[0]
"""


def test_a_fixed_break_unmasks_a_silent_finding(tmp_path: Path) -> None:
    """A silent break behind a loud one needs the loud one fixed before outputs compare."""
    path = tmp_path / "two.py"
    path.write_text(TWO_BREAKS, encoding="utf-8")
    first = _fix_finding(path, "MXL105", "nd.relu(", "F.relu(")
    second = Finding("MXL104", "x", str(path), Location(13, 16), Location(13, 20))
    result = verify([first, second], [path], VerifyOptions(bench=False, timeout=120))
    assert result.verdicts[first.key()].verdict == "confirmed"
    later = result.verdicts[second.key()]
    assert later.verdict == "confirmed" and "(2, 4) hybridized" in later.evidence, later
    assert "after applying the fixes at lines 12" in later.evidence


MANY_BREAKS = """
from mxnet.gluon import nn


class ManyBreaks(nn.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = nn.Dense(4, in_units=8)

    def hybrid_forward(self, F, x):
        y = self.dense(x).reshape((x.shape[0], -1))
        print(y)
        if y.sum() > 0:
            y = y * 2
        return y
"""


def test_breaks_behind_a_loud_break_are_attributed(tmp_path: Path) -> None:
    path = tmp_path / "many.py"
    path.write_text(MANY_BREAKS, encoding="utf-8")
    findings = [
        Finding(code, "x", str(path), Location(row, 9), Location(row, 10))
        for code, row in (("MXL103", 11), ("MXL106", 12), ("MXL101", 13))
    ]
    result = verify(findings, [path], VerifyOptions(bench=False, timeout=120))
    shape, printed, branch = (result.verdicts[f.key()] for f in findings)
    assert shape.verdict == "confirmed" and "'shape'" in shape.evidence
    assert printed.verdict == "confirmed" and "<Symbol" in printed.evidence, printed
    assert branch.verdict == "confirmed" and "__bool__" in branch.evidence, branch
