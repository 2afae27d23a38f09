"""Unit tests of the verify stage's static parts: planning, verdict logic, statistics, CLI
parsing. None of these start MXNet."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

from mxlint.rule import Finding, Location
from mxlint.verify import bench, block_verdicts, interpret, plan
from mxlint.verify.cli import _shard
from mxlint.verify.doctor import verify_python_check
from mxlint.verify.model import Rewrite


def _finding(path: Path, line: int, code: str) -> Finding:
    return Finding(code, code, str(path), Location(line, 1), Location(line, 2))


def test_module_of_walks_packages(tmp_path: Path) -> None:
    pkg = tmp_path / "proj" / "models"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "net.py").write_text("x = 1\n")
    module, roots = plan.module_of(pkg / "net.py")
    assert module == "models.net"
    assert roots == [str((tmp_path / "proj").resolve()), str(pkg.resolve())]


def test_enclosing_class_and_runnable() -> None:
    tree = ast.parse(
        "class A:\n    class B:\n        def f(self):\n            pass\ndef g():\n    pass\n"
    )
    assert plan.enclosing_class(tree, 4) == "A.B"
    assert plan.enclosing_class(tree, 6) is None
    assert not plan.is_runnable(tree)
    assert plan.is_runnable(
        ast.parse("def main():\n    pass\nif __name__ == '__main__':\n    main()\n")
    )
    assert plan.is_runnable(ast.parse("import os\nprint(os.sep)\n"))
    assert not plan.is_runnable(ast.parse('"""doc"""\nimport os\n'))


def test_constructor_args_from_project(tmp_path: Path) -> None:
    src = tmp_path / "train.py"
    src.write_text("net = Net(classes=10, dims=(2, 3))\nother = Net(size)\n")
    cache: dict[Path, ast.Module | None] = {}
    assert plan.constructor_args("Net", [src], cache) == {
        "args": [],
        "kwargs": {"classes": 10, "dims": (2, 3)},
    }
    assert plan.constructor_args("Missing", [src], cache) is None


@pytest.mark.parametrize(
    "line,code,rng",
    [
        ("loader = DataLoader(ds, shuffle=True)", "MXL301", "numpy"),
        ("x = np.random.rand(3)", "MXL302", "numpy"),
        ("scale = random.uniform(0, 1)", "MXL303", "random"),
        ("w = mx.nd.random.normal(shape=(2,))", "MXL304", "mxnet"),
    ],
)
def test_rng_of(line: str, code: str, rng: str) -> None:
    assert plan.rng_of(line, code) == rng


def test_build_groups_by_class_and_script(tmp_path: Path) -> None:
    mod = tmp_path / "blocks.py"
    mod.write_text(
        "class Net:\n    def hybrid_forward(self, F, x):\n        return x.shape\n"
        "    def other(self, F, x):\n        return x.asnumpy()\n"
    )
    script = tmp_path / "train.py"
    script.write_text("import numpy as np\nx = np.random.rand(2)\nprint(x)\n")
    findings = [
        _finding(mod, 3, "MXL103"),
        _finding(mod, 5, "MXL102"),
        _finding(script, 2, "MXL302"),
        _finding(script, 1, "MXL501"),
    ]
    tasks, skipped = plan.build(findings, [mod, script], {})
    kinds = sorted((t.kind, len(t.items)) for t in tasks)
    assert kinds == [("block", 2), ("script", 1)]
    assert [s.item.finding.code for s in skipped] == ["MXL501"]
    block = next(t for t in tasks if t.kind == "block")
    assert block.job["class"] == "Net" and block.job["module"] == "blocks"


def test_module_finding_runs_through_an_importing_script(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text("def step(net, x):\n    net(x).backward()\n")
    (tmp_path / "main.py").write_text("from helpers import step\nstep(None, None)\n")
    tasks, skipped = plan.build(
        [_finding(tmp_path / "helpers.py", 2, "MXL403")],
        [tmp_path / "helpers.py", tmp_path / "main.py"],
        {},
    )
    assert not skipped
    assert tasks[0].job["file"] == str((tmp_path / "main.py").resolve())
    assert tasks[0].job["watch"] == [[str((tmp_path / "helpers.py").resolve()), 2]]


def test_shards_partition_the_tasks(tmp_path: Path) -> None:
    findings = []
    for i in range(12):
        path = tmp_path / f"s{i}.py"
        path.write_text("import numpy as np\nprint(np.random.rand())\n")
        findings.append(_finding(path, 2, "MXL302"))
    tasks, _ = plan.build(findings, [], {})
    parts = [plan.shard(tasks, i, 3) for i in (1, 2, 3)]
    keys = sorted(t.key for part in parts for t in part)
    assert keys == sorted(t.key for t in tasks)
    assert all(part for part in parts)


def test_growth_needs_a_steady_rise() -> None:
    assert interpret.growth([5, 5, 5, 6, 7, 8, 9, 10]) == pytest.approx(1.0)
    assert interpret.growth([5, 5, 5, 5, 5, 5, 5]) is None
    assert interpret.growth([5, 9, 5, 9, 5, 9, 5, 9]) is None
    assert interpret.growth([1, 2, 3]) is None  # too short to tell


def test_fingerprint_diff_compares_common_parts() -> None:
    a = {"fingerprint": {"first_batch": "aa", "losses": ["1", "2"], "params": None}}
    b = {"fingerprint": {"first_batch": "aa", "losses": ["1", "3", "4"], "params": "p"}}
    assert interpret.fingerprint_diff(a, b) == (True, "losses")
    assert interpret.fingerprint_diff(a, a) == (False, "first batch, losses")
    assert interpret.fingerprint_diff({"fingerprint": {}}, a) == (None, "")


def test_benchmark_summary_pools_paired_ratios() -> None:
    def proc(orig: float, new: float) -> dict[str, object]:
        times = {"original": [orig] * 10, "rewrite": [new] * 10}
        return {"status": "ok", "cpu": times, "wall": times, "gpu": False}

    rewrite = bench.summarize([proc(3.0, 2.0), proc(3.2, 2.0)], Rewrite(True, "ok"))
    assert rewrite.ratio == pytest.approx(1.55, abs=0.06)
    assert rewrite.spread == (1.5, 1.6)
    assert rewrite.within_noise is False
    noisy = bench.summarize([proc(2.0, 2.0), proc(2.02, 2.0)], Rewrite(True, "ok"))
    assert noisy.within_noise is True
    failed = bench.summarize([{"status": "no-input", "reason": "x"}], Rewrite(True, "ok"))
    assert failed.ratio is None and "benchmark failed" in failed.evidence


def test_shard_argument() -> None:
    assert _shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "x", "1/0"):
        with pytest.raises(argparse.ArgumentTypeError):
            _shard(bad)


def test_a_loud_hybrid_rule_is_confirmed_by_its_error_after_its_line_ran(tmp_path: Path) -> None:
    path = str(tmp_path / "net.py")
    items = [
        plan.Item(i, _finding(Path(path), line, code), path, line)
        for i, (line, code) in enumerate([(9, "MXL114"), (9, "MXL101"), (12, "MXL114")])
    ]
    error = "When hybridized, the input of HybridBlock output must be (nested) list of Symbol"
    payload = {
        "status": "ok",
        "stages": {
            "imperative": {"ok": True},
            "hybridize": {
                "ok": False,
                "exception": {"type": "ValueError", "message": error, "frames": []},
            },
        },
        "compare": {},
        "lines_hybrid": [[path, 8], [path, 9]],
    }
    verdicts = block_verdicts.block_verdicts(items, payload)
    first, other, unreached = (verdicts[it.key] for it in items)
    assert first.verdict == "confirmed" and "after line 9 ran" in first.evidence
    # A rule without a predicted error, and a line that never ran, are not confirmed by it.
    assert other.verdict == "inconclusive"
    assert unreached.verdict == "inconclusive"
    payload["stages"]["hybridize"]["exception"]["message"] = "shape mismatch"  # type: ignore[index]
    assert block_verdicts.block_verdicts(items[:1], payload)[items[0].key].verdict == "inconclusive"


def test_doctor_explains_the_python_limit_of_verify() -> None:
    """numpy<1.24, which MXNet 1.9.1 needs, has no wheels past Python 3.11."""
    check = verify_python_check((3, 12), mxnet_imports=False)
    assert check is not None
    assert (check.status, check.name) == ("fail", "python for --verify")
    assert check.detail == (
        "Python 3.12: the [verify] extra (mxnet==1.9.1, numpy<1.24) cannot install here: "
        "numpy 1.23, the last numpy MXNet 1.9 imports, has no wheels for Python 3.12 or later "
        "and does not build on them; static checks (`mxlint check`) work on Python 3.12"
    )
    assert check.fix == (
        "run --verify from a Python 3.9-3.11 virtualenv: `python3.11 -m venv .venv-verify`, "
        "then install mxlint there with the [verify] extra"
    )
    assert verify_python_check((3, 13, 1), mxnet_imports=False).detail.startswith("Python 3.13:")
    # Nothing to say where it installs, or where an MXNet imports all the same.
    assert verify_python_check((3, 11), mxnet_imports=False) is None
    assert verify_python_check((3, 9), mxnet_imports=False) is None
    assert verify_python_check((3, 12), mxnet_imports=True) is None


def _item(path: Path, line: int, code: str) -> plan.Item:
    return plan.Item(0, _finding(path, line, code), str(path.resolve()), line)


def _ran(path: Path, line: int, **lifecycle: object) -> dict[str, object]:
    return {
        "status": "finished",
        "watch": [{"file": str(path.resolve()), "line": line, "runs": 1, "exception": None}],
        "lifecycle": lifecycle,
    }


def test_an_import_is_judged_by_its_round_trip(tmp_path: Path) -> None:
    script = tmp_path / "serve.py"
    item = _item(script, 12, "MXL704")
    where = [str(script.resolve()), 11, 13]  # a call written over three lines
    differ = _ran(script, 12, roundtrips=[{"where": where, "equal": False, "detail": "off"}])
    assert interpret.roundtrip_verdict(item, differ).verdict == "confirmed"
    same = _ran(script, 12, roundtrips=[{"where": where, "equal": True, "detail": "1 equal"}])
    assert interpret.roundtrip_verdict(item, same).verdict == "refuted"
    # Imported without an error, but no export of this run to compare with.
    verdict = interpret.roundtrip_verdict(item, _ran(script, 12, roundtrips=[]))
    assert verdict.verdict == "inconclusive"
    assert "not exported in this run" in verdict.reason


def test_amp_init_is_judged_by_the_networks_cached_before_it(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    item = _item(script, 7, "MXL702")
    at = [str(script.resolve()), 7, 7]
    stale = _ran(script, 7, amp_inits=[{"where": at, "cached": 1}], stale_outputs={"float32": 2})
    verdict = interpret.amp_verdict(item, stale)
    assert verdict.verdict == "confirmed"
    assert "2x float32" in verdict.evidence
    fresh = _ran(script, 7, amp_inits=[{"where": at, "cached": 0}])
    assert interpret.amp_verdict(item, fresh).verdict == "refuted"
    assert interpret.amp_verdict(item, _ran(script, 7)).verdict == "inconclusive"


def test_missing_loss_scaling_is_judged_by_the_share_float16_flushes(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    item = _item(script, 9, "MXL707")
    at = [str(script.resolve()), 9, 9]
    inits = [{"where": at, "cached": 0, "target": "float16"}]

    def passes(flushed: int, vanished: list[str]) -> list[dict[str, object]]:
        one = {"nonzero": 1000, "flushed_scaled": 0, "smallest": 1e-9, "vanished": vanished}
        return [{"where": at, **one, "flushed": flushed}] * 2

    lost = _ran(script, 9, amp_inits=inits, amp_mapped=True, gradients=passes(10, []))
    verdict = interpret.underflow_verdict(item, lost)
    assert (verdict.verdict, verdict.basis) == ("confirmed", "measured")
    assert verdict.evidence.startswith(
        "20 of the 2000 nonzero gradient values of 2 backward passes at line 9 (1 %) lie "
        "below float16's smallest value (about 6e-8)"
    )
    # A few values near zero are in any gradient: below 1 %, nothing is shown either way.
    few = _ran(script, 9, amp_inits=inits, amp_mapped=True, gradients=passes(9, []))
    assert interpret.underflow_verdict(item, few).verdict == "inconclusive"
    # ... unless they are all a parameter has.
    whole = _ran(script, 9, amp_inits=inits, amp_mapped=True, gradients=passes(1, ["bias"]))
    assert (
        "every gradient of bias is among them" in interpret.underflow_verdict(item, whole).evidence
    )
    # A real float16 run has flushed them already: zeros cannot be told from inactive units.
    real = _ran(script, 9, amp_inits=inits, amp_mapped=False, gradients=passes(0, []))
    assert "AMP ran in float16 here" in interpret.underflow_verdict(item, real).reason
    assert "did not run before line 9" in interpret.underflow_verdict(item, _ran(script, 9)).reason


def test_a_static_runtime_gives_its_reason(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import mxnet\n")
    tasks, skipped = plan.build([_finding(script, 1, "MXL703")], [script], {})
    assert tasks == []
    assert "a speed and memory advice" in skipped[0].reason


def test_earlier_breaks_are_skipped_only_where_nothing_else_changes() -> None:
    from mxlint.verify.skips import skip_statements

    source = (
        "def export_all(a, b):\n"
        "    a.export('a')  # raises first\n"
        "    n = b.export('b')\n"
        "    b.export(\n"
        "        'b',\n"
        "    )\n"
        "    a.export('c'); b.export('d')\n"
        "    return n\n"
    )
    text, skipped = skip_statements(source, [2, 3, 4, 7])
    # A call whose value is used (3) and one sharing its line (7) stay; the others become
    # `pass`, and every line keeps its number.
    assert skipped == [2, 4]
    assert text == (
        "def export_all(a, b):\n"
        "    pass\n"
        "    n = b.export('b')\n"
        "    pass\n"
        "\n"
        "\n"
        "    a.export('c'); b.export('d')\n"
        "    return n\n"
    )
    assert skip_statements("def (:\n", [1]) == ("def (:\n", [])


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_stage_timeout_a_finalizer_swallows_is_raised_again() -> None:
    """The limit fires while a finalizer runs (as `NDArray.__del__` does for the array a
    loop just replaced); Python discards what a finalizer raises, so the timer fires again and
    the stage still ends, long before the loop's own end."""
    import time

    from mxlint.verify.stages import StageTimeout, time_limit

    class Slow:
        def __del__(self) -> None:
            time.sleep(0.5)  # the limit expires in here

    start = time.monotonic()
    with pytest.raises(StageTimeout), time_limit(0.1):
        Slow()
        while time.monotonic() - start < 10:
            pass
    assert time.monotonic() - start < 5
