"""`--verify` reaches findings no entry script runs, on real MXNet (CPU): functions called with
arguments built from their roles, lines behind constructor flags, a block whose imperative
reference loops forever, seed findings one by one, clock reads before queued work, networks
run before `amp.init()`, stand-ins for downloads, and the emulated device check."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mxlint.api import check_paths
from mxlint.rule import Finding, Location
from mxlint.verify.runner import VerifyOptions, verify

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

pytestmark = pytest.mark.slow

LOOP = """
import mxnet as mx
from mxnet import autograd


def train(net, train_loader, trainer, loss_fn, ctx=mx.gpu(0)):
    for data, label in train_loader:
        data = data.as_in_context(ctx)
        {label}
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(data.shape[0])
"""


def _at(path: Path, line: int, code: str) -> Finding:
    return Finding(code, code, str(path), Location(line, 1), Location(line, 2))


def _lint(*paths: Path) -> list[Finding]:
    return list(check_paths(list(paths)).findings)


def test_a_function_no_script_runs_is_called_with_built_arguments(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    bad = pkg / "loops.py"
    bad.write_text(textwrap.dedent(LOOP.format(label="pass")), encoding="utf-8")
    good = pkg / "moved.py"
    good.write_text(
        textwrap.dedent(LOOP.format(label="label = label.as_in_context(ctx)")), encoding="utf-8"
    )
    findings = [f for f in _lint(bad) if f.code == "MXL201"]
    assert [f.location.row for f in findings] == [11]
    false_alarm = _at(good, 11, "MXL201")
    result = verify(findings + [false_alarm], [bad, good], VerifyOptions(bench=False))
    confirmed = result.verdicts[findings[0].key()]
    assert confirmed.verdict == "confirmed", confirmed
    assert "line 11 raised MXNetError" in confirmed.evidence
    assert confirmed.reached.startswith("called train(net, train_loader, trainer, loss_fn)")
    assert "train_loader: 12 batches [4, 8], class labels" in confirmed.reached
    refuted = result.verdicts[false_alarm.key()]
    assert refuted.verdict == "refuted" and "without the predicted error" in refuted.evidence


def test_a_line_behind_a_constructor_flag_runs_with_the_flag_flipped() -> None:
    path = FIXTURES / "hybridization" / "bad" / "outputs.py"
    findings = [f for f in _lint(path) if f.location.row in (55, 56)]
    result = verify(findings, [path], VerifyOptions(bench=False))
    named, dataclass = (result.verdicts[f.key()] for f in findings)
    assert named.verdict == "confirmed" and "Outputs(T, T) imperatively but list(T, T)" in (
        named.evidence
    )
    assert dataclass.verdict == "confirmed", dataclass
    assert "constructed with named=False, the only way the line runs" in dataclass.evidence


SPIN = """
from mxnet.gluon import nn


class Spin(nn.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = nn.Dense(4)

    def hybrid_forward(self, F, x):
        y = self.dense(x)
        while y.sum() > -1e9:
            y = y * 1.0
        return y
"""


def test_hybridize_first_when_the_imperative_reference_loops_forever(tmp_path: Path) -> None:
    path = tmp_path / "spin.py"
    path.write_text(SPIN, encoding="utf-8")
    # Through the command, in a process of its own. The job's limit is generous (a loaded
    # machine imports MXNet slowly): what is tested is that the imperative stage is cut by its
    # own stage limit, after hybridize() has raised.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mxlint",
            "--verify",
            "--no-benchmark",
            "--verify-timeout",
            "240",
            "--select",
            "MXL101",
            "--output-format",
            "json",
            "spin.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    [item] = [i for i in json.loads(proc.stdout) if i["location"]["row"] == 12]
    verdict = item["verify"]
    assert verdict["verdict"] == "confirmed", verdict
    assert "hybridize() raised" in verdict["evidence"] and "at line 12" in verdict["evidence"]
    assert "the imperative reference did not finish within its time limit" in verdict["evidence"]


DRAWS = """
import random

used = random.random()
unused = random.random()
print("score", round(used, 6))
"""


def test_each_seed_finding_is_shown_to_matter_by_itself(tmp_path: Path) -> None:
    path = tmp_path / "draws.py"
    path.write_text(DRAWS, encoding="utf-8")
    used, unused = _at(path, 4, "MXL303"), _at(path, 5, "MXL303")
    result = verify([used, unused], [path], VerifyOptions(bench=False))
    first, second = result.verdicts[used.key()], result.verdicts[unused.key()]
    assert first.verdict == "confirmed", first
    assert "only line 4's random draws left random differ in their printed output" in (
        first.evidence
    )
    assert second.verdict == "refuted", second
    assert "the line's draws do not reach the results" in second.evidence


def test_a_clock_read_before_queued_work_is_measured_in_a_called_function() -> None:
    path = FIXTURES / "memory" / "bad" / "helper_no_sync.py"
    findings = [f for f in _lint(path) if f.code == "MXL601" and f.location.row == 24]
    verdict = verify(findings, [path], VerifyOptions(bench=False)).verdicts[findings[0].key()]
    assert verdict.verdict == "confirmed" and verdict.basis == "measured", verdict
    assert "mx.nd.waitall() moved in front of it (the rewrite) waits another" in verdict.evidence
    assert verdict.reached.startswith("called train_epoch(")


def test_a_network_run_before_amp_init_keeps_computing_in_float32() -> None:
    path = FIXTURES / "lifecycle" / "bad" / "train.py"
    findings = [f for f in _lint(path) if f.code == "MXL702"]
    verdict = verify(findings, [path], VerifyOptions(bench=False)).verdicts[findings[0].key()]
    assert verdict.verdict == "confirmed", verdict
    assert "had already been hybridized and run: they keep their cached float32 graph" in (
        verdict.evidence
    )


def test_datasets_that_would_download_are_replaced_and_named() -> None:
    path = FIXTURES / "memory" / "bad" / "train_classifier.py"
    findings = [f for f in _lint(path) if f.location.row == 36]
    verdict = verify(findings, [path], VerifyOptions(bench=False)).verdicts[findings[0].key()]
    assert verdict.verdict == "confirmed", verdict
    assert "CIFAR10 replaced by 256 synthetic images (32, 32, 3) (no download)" in (
        verdict.standins
    )


def test_the_emulated_device_check_compares_device_types() -> None:
    code = textwrap.dedent(
        """
        from mxlint.verify import ctxmap
        import mxnet as mx
        ctxmap.install(2)
        a, b = mx.nd.ones(2, ctx=mx.gpu(0)), mx.nd.ones(2, ctx=mx.gpu(1))
        print((a + b).asnumpy().tolist())
        try:
            a + mx.nd.ones(2)
        except mx.base.MXNetError as exc:
            print("raised:", "on gpu(0) while the 2-th argument is on cpu(0)" in str(exc))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.stdout.split("\n")[:2] == ["[2.0, 2.0]", "raised: True"], proc.stderr
