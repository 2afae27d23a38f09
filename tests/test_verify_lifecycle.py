"""`--verify` on the lifecycle family (MXL701-MXL708) on real MXNet (CPU): the verdict of each
line of `fixtures/lifecycle`, and the checks behind them — the program that writes a model
file runs before the line that reads it, a stand-in for that file never refutes, and missing
loss scaling is measured on the gradients of the flagged backward pass."""

from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from mxlint.api import check_paths
from mxlint.rule import Finding
from mxlint.verify import plan, targets
from mxlint.verify.runner import VerifyOptions, verify

ROOT = Path(__file__).resolve().parent.parent
LIFECYCLE = ROOT / "fixtures" / "lifecycle"
MISSING = "is missing in file"
EXPORT = "line {line} raised RuntimeError: Please first call block.hybridize()"

#: (file under fixtures/lifecycle, line, code) -> verdict, basis, what the evidence or reason
#: says, and how the line was reached.
EXPECTED: dict[tuple[str, int, str], tuple[str, str | None, str, str]] = {
    ("bad/amp_classifier.py", 26, "MXL706"): (
        "confirmed",
        "raised",
        "line 26 raised AttributeError: 'Trainer' object has no attribute '_amp_loss_scaler' "
        "(AMP's float16 ran as bfloat16",
        "ran the entry script amp_classifier.py",
    ),
    ("bad/amp_finetune.py", 23, "MXL707"): (
        "inconclusive",
        None,
        "0 of the 409404 nonzero gradient values of 3 backward passes at line 23 (0 %) lie "
        "below float16's smallest value",
        "ran the entry script amp_finetune.py",
    ),
    ("bad/builder_chain/serve.py", 22, "MXL701"): (
        "confirmed",
        "raised",
        EXPORT.format(line=22),
        "called Exporter.export_head(x) with ctx: cpu(0); x=NDArray(4, 8)@cpu(0)",
    ),
    ("bad/builder_chain/serve.py", 38, "MXL701"): (
        "confirmed",
        "raised",
        EXPORT.format(line=38),
        "ran the entry script serve.py",
    ),
    # Lines 43 and 53 never run after line 38 raised: the function is called again with the
    # earlier findings' lines skipped.
    ("bad/builder_chain/serve.py", 43, "MXL701"): (
        "confirmed",
        "raised",
        EXPORT.format(line=43),
        "called export_all(loader, ctx) with loader: 12 batches [4, 8], class labels; "
        "ctx: cpu(0) with line(s) 38 skipped (another finding's line, which raised there first",
    ),
    ("bad/builder_chain/serve.py", 53, "MXL701"): (
        "confirmed",
        "raised",
        EXPORT.format(line=53),
        "called export_all(loader, ctx) with loader: 12 batches [4, 8], class labels; "
        "ctx: cpu(0) with line(s) 38, 43 skipped",
    ),
    ("bad/builders/train.py", 25, "MXL701"): (
        "confirmed",
        "raised",
        EXPORT.format(line=25),
        "called train(loader, epochs, ctx) with loader: 12 batches [4, 8], class labels",
    ),
    ("bad/builders/train.py", 36, "MXL701"): (
        "confirmed",
        "raised",
        EXPORT.format(line=36),
        "called train_small(loader, ctx) with loader: 12 batches [4, 8], class labels",
    ),
    ("bad/deploy/serve.py", 10, "MXL704"): (
        "confirmed",
        "raised",
        "line 10 raised AssertionError: Parameter 'data0' is missing in file: fusion-0005.params",
        "ran the entry script serve.py, after export_model.py (the writer, line 22) ran first "
        "in the same directory and wrote fusion-0005.params, fusion-symbol.json, fusion.params",
    ),
    ("bad/deploy/serve.py", 16, "MXL705"): (
        "confirmed",
        "raised",
        f"line 16 raised AssertionError: Parameter 'dense0_weight' {MISSING}: fusion-0005.params",
        "called load_for_finetuning(ctx) with ctx: cpu(0), after export_model.py (the writer, "
        "line 22) ran first",
    ),
    ("bad/export_script.py", 9, "MXL701"): (
        "confirmed",
        "raised",
        EXPORT.format(line=9),
        "ran the entry script export_script.py",
    ),
    ("bad/mlp_checkpoint.py", 29, "MXL708"): (
        "confirmed",
        "raised",
        "line 29 raised AttributeError: 'ValueError' object has no attribute 'message'",
        "ran the entry script mlp_checkpoint.py",
    ),
    ("bad/resume.py", 14, "MXL705"): (
        "confirmed",
        "raised",
        "line 14 raised AssertionError: Parameter 'mobilenetv20_features_conv0_weight' "
        f"{MISSING}: ./best.params",
        "ran the entry script resume.py, after resume.py (the writer, line 26) ran first in "
        "the same directory and wrote best.params",
    ),
    ("bad/resume.py", 31, "MXL705"): (
        "confirmed",
        "raised",
        "line 31 raised ValueError: not enough values to unpack (expected 2, got 1)",
        "called deploy(net, prefix, epoch) with net: a stand-in dense network",
    ),
    ("bad/train.py", 29, "MXL702"): (
        "confirmed",
        "observed",
        "when `amp.init()` ran at line 29, 1 network(s) had already been hybridized and run",
        "ran the entry script train.py",
    ),
    ("bad/train.py", 37, "MXL701"): (
        "confirmed",
        "raised",
        EXPORT.format(line=37),
        "called export_fresh(path) with path='mxlint-verify-path'",
    ),
}


@pytest.fixture(scope="module")
def family() -> tuple[dict[tuple[str, int, str], dict[str, Any]], float]:
    """The family's verify run through the real CLI, and its wall time."""
    start = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mxlint",
            "--verify",
            "--no-benchmark",
            "--output-format",
            "json",
            "fixtures/lifecycle",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    wall = time.monotonic() - start
    assert proc.returncode == 1, proc.stderr
    found = {}
    for item in json.loads(proc.stdout):
        path = Path(item["filename"])
        rel = (path if path.is_absolute() else ROOT / path).resolve().relative_to(LIFECYCLE)
        found[(rel.as_posix(), item["location"]["row"], item["code"])] = item["verify"]
    return found, wall


@pytest.mark.slow
def test_each_lifecycle_fixture_line_gets_its_verdict(
    family: tuple[dict[tuple[str, int, str], dict[str, Any]], float],
) -> None:
    found, _ = family
    assert sorted(found) == sorted(EXPECTED)
    for key, (verdict, basis, said, reached) in EXPECTED.items():
        got = found[key]
        assert got["verdict"] == verdict, (key, got)
        assert got.get("basis") == basis, (key, got)
        assert said in (got["evidence"] or got["reason"]), (key, got)
        assert got["reached"].startswith(reached), (key, got)
    definite = sum(1 for v in found.values() if v["verdict"] != "inconclusive")
    assert (definite, len(found)) == (15, 16)


@pytest.mark.slow
def test_the_writer_s_files_are_read_not_stand_ins(
    family: tuple[dict[tuple[str, int, str], dict[str, Any]], float],
) -> None:
    found, _ = family
    for key in (("bad/deploy/serve.py", 10, "MXL704"), ("bad/resume.py", 14, "MXL705")):
        assert not found[key].get("standins"), found[key]
    # A graph nobody wrote stands in, so `load_checkpoint` reads the parameter file.
    assert found[("bad/resume.py", 31, "MXL705")]["standins"] == [
        "missing symbol file 'mxlint-verify-prefix-symbol.json': a one-layer stand-in graph instead"
    ]


@pytest.mark.slow
def test_a_read_of_a_stand_in_file_is_never_a_refutation() -> None:
    """Without its writer the line reads a randomly initialised stand-in, which loads: that
    says nothing about the file's format."""
    path = LIFECYCLE / "bad" / "deploy" / "serve.py"
    [finding] = [f for f in check_paths([path.parent]).findings if f.location.row == 16]
    alone = dataclasses.replace(finding, data={})
    verdict = verify([alone], [path], VerifyOptions(bench=False)).verdicts[alone.key()]
    assert verdict.verdict == "inconclusive", verdict
    assert (
        "line 16 ran without an error, but on a stand-in (missing parameter file "
        "'fusion-0005.params': random initialisation instead), not on the file its writer writes"
    ) in verdict.reason


SMALL_LOSS = """
import mxnet as mx
from mxnet import autograd, gluon
from mxnet.contrib import amp


def main():
    amp.init(target_dtype="float16")
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(64, activation="relu"), gluon.nn.Dense(10))
    net.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    x = mx.nd.random.normal(shape=(32, 100))
    y = mx.nd.random.randint(0, 10, shape=(32,)).astype("float32")
    for _ in range(3):
        with autograd.record():
            loss = loss_fn(net(x), y).mean() * {weight}
        loss.backward()
        trainer.step(1)


if __name__ == "__main__":
    main()
"""


@pytest.mark.slow
def test_gradients_float16_would_flush_confirm_missing_loss_scaling(tmp_path: Path) -> None:
    tiny, plain = tmp_path / "tiny.py", tmp_path / "plain.py"
    tiny.write_text(textwrap.dedent(SMALL_LOSS.replace("{weight}", "1e-6")), encoding="utf-8")
    plain.write_text(textwrap.dedent(SMALL_LOSS.replace("{weight}", "1.0")), encoding="utf-8")
    findings: list[Finding] = [f for f in check_paths([tiny, plain]).findings if f.code == "MXL707"]
    assert [(Path(f.filename).name, f.location.row) for f in findings] == [
        ("plain.py", 19),
        ("tiny.py", 19),
    ]
    result = verify(findings, [tiny, plain], VerifyOptions(bench=False))
    unscaled, small = (result.verdicts[f.key()] for f in findings)
    assert small.verdict == "confirmed" and small.basis == "measured", small
    assert "nonzero gradient values of 3 backward passes at line 19" in small.evidence
    assert "lie below float16's smallest value (about 6e-8): a float16 backward pass" in (
        small.evidence
    )
    assert "at AMP's initial loss scale (2**16)" in small.evidence
    # Gradients well inside float16's range: nothing lost on this run, which refutes nothing.
    assert unscaled.verdict == "inconclusive", unscaled
    assert "on this run's inputs and weights no learning is lost" in unscaled.reason


def _item(path: Path, finding: Finding) -> plan.Item:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    holder = targets.enclosing(tree, finding.location.row)
    item = plan.Item(0, finding, str(path.resolve()), finding.location.row)
    item.target = holder.to_json() if holder is not None else None
    return item


def test_the_writer_runs_first_unless_it_writes_earlier_in_the_same_function() -> None:
    deploy = LIFECYCLE / "bad" / "deploy"
    sources = sorted(deploy.glob("*.py"))
    [names] = [f for f in check_paths([deploy]).findings if f.code == "MXL704"]
    tree = ast.parse((deploy / "serve.py").read_text(encoding="utf-8"))
    writer = plan.writer_run(_item(deploy / "serve.py", names), tree, sources, {}, {})
    assert writer is not None
    assert (Path(writer["file"]).name, writer["line"], writer["argv"]) == (
        "export_model.py",
        22,
        [],
    )
    resume = LIFECYCLE / "bad" / "resume.py"
    tree = ast.parse(resume.read_text(encoding="utf-8"))
    lines = {f.location.row: f for f in check_paths([resume]).findings}
    # Line 14 reads what line 26 writes later (an earlier run): the script runs first.
    first = plan.writer_run(_item(resume, lines[14]), tree, [resume], {}, {})
    assert first is not None and (Path(first["file"]).name, first["line"]) == ("resume.py", 26)
    # Line 31 reads what line 30 of the same function has just written.
    assert plan.writer_run(_item(resume, lines[31]), tree, [resume], {}, {}) is None


def test_an_argument_fed_to_a_built_network_is_a_batch() -> None:
    code = textwrap.dedent(
        """
        def export_head(self, x, images):
            head = self.build()
            head(x)
            return images
        """
    )
    fn = ast.parse(code).body[0]
    assert isinstance(fn, ast.FunctionDef)
    usage = targets.collect(fn, {"x": "x", "images": "images"})
    assert targets.role("x", usage["x"])["role"] == "tensor"
    assert targets.role("images", usage["images"])["role"] == "array"
