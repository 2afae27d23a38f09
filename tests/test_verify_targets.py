"""Static parts of reaching findings without an entry script, and the verdict logic fed by the
new observations (state, structure, training-mode reads, silent Symbol use, placement, timing,
AMP, seeds by themselves). None of these start MXNet."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import Any

from mxlint.rule import Edit, Finding, Fix, Location
from mxlint.verify import block_verdicts, callsites, ctxmap, interpret, plan, targets


def _finding(path: Path, line: int, code: str, message: str = "", **data: Any) -> Finding:
    return Finding(
        code, message or code, str(path), Location(line, 1), Location(line, 2), data=data or None
    )


def _item(path: Path, line: int, code: str, message: str = "") -> plan.Item:
    return plan.Item(0, _finding(path, line, code, message), str(path), line)


def _roles(source: str, line: int) -> dict[str, Any]:
    found = targets.enclosing(ast.parse(textwrap.dedent(source)), line)
    assert found is not None
    return {p["name"]: p for p in found.params}


TRAIN = """
import mxnet as mx
from mxnet import autograd

def train(net, train_loader, trainer, loss_fn, metric, epochs, lr=0.1, ctx=mx.gpu(0)):
    for epoch in range(epochs):
        for i, (data, label) in enumerate(train_loader):
            data = data.as_in_context(ctx)
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(data.shape[0])
            metric.update([label], [net(data)])
"""


def test_parameter_roles_come_from_how_the_body_uses_them() -> None:
    roles = _roles(TRAIN, 9)
    assert {k: v["role"] for k, v in roles.items()} == {
        "net": "net",
        "train_loader": "loader",
        "trainer": "trainer",
        "loss_fn": "loss",
        "metric": "metric",
        "epochs": "int",
        "lr": "float",
        "ctx": "ctx",
    }
    assert roles["train_loader"]["batch"] == {
        "kind": "tuple",
        "size": 2,
        "names": ["data", "label"],
    }
    assert roles["epochs"]["value"] == 2
    assert roles["lr"]["default"] and roles["ctx"]["default"]
    assert not roles["net"]["default"]


def test_batches_read_as_databatch_parts_and_names() -> None:
    roles = _roles(
        """
        def step(net, it, data, label, temperature, ctx_list):
            for batch in it:
                x = batch.data[0]
            it.reset()
            for x, y in zip(data, label):
                net(x)
            out = nd.broadcast_div(net(x), temperature)
            return [o.as_in_context(c) for o, c in zip([out], ctx_list)]
        """,
        3,
    )
    assert roles["it"]["batch"] == {"kind": "databatch"}
    assert roles["data"]["role"] == roles["label"]["role"] == "parts"
    assert roles["temperature"]["role"] == "scalar_tensor"
    assert roles["ctx_list"]["role"] == "ctx_list"


def test_a_method_gets_its_constructor_roles_through_self_attributes() -> None:
    source = """
    class Fitter:
        def __init__(self, net, ctx, ignore=0):
            self.model = net
            self.ctx = ctx
        def fit(self, loader):
            for x, y in loader:
                self.model(x.as_in_context(self.ctx))
    """
    found = targets.enclosing(ast.parse(textwrap.dedent(source)), 8)
    assert found is not None and found.qualname == "Fitter.fit" and found.cls == "Fitter"
    assert {p["name"]: p["role"] for p in found.ctor or []} == {
        "net": "net",
        "ctx": "ctx",
        "ignore": "tensor",
    }
    assert "self.model" in found.uses["called"]


def test_module_level_lines_have_no_target() -> None:
    assert targets.enclosing(ast.parse("x = 1\ndef f():\n    return 2\n"), 1) is None


def test_a_file_no_script_runs_becomes_a_call_task(tmp_path: Path) -> None:
    lib = tmp_path / "loops.py"
    lib.write_text(textwrap.dedent(TRAIN), encoding="utf-8")
    finding = _finding(lib, 10, "MXL201", ctx="ctx")
    tasks, skipped = plan.build([finding], [lib], {})
    assert not skipped
    (task,) = tasks
    assert task.key == f"call:{lib.resolve()}:train"
    assert task.job["kind"] == "call" and task.job["target"]["qualname"] == "train"
    assert task.job["contexts"] is True and task.job["ctx_exprs"] == ["ctx"]
    assert task.job["watch"] == [[str(lib.resolve()), 10]]
    module_level = _finding(lib, 2, "MXL302")
    _, skipped = plan.build([module_level], [lib], {})
    assert [s.reason for s in skipped] == [
        "module-level code of a file no entry script of the run runs"
    ]


def test_guard_flags_and_script_arguments(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            """
            import argparse

            def main(args):
                if args.amp:
                    amp.init()
                if args.fast_mode:
                    go()

            if __name__ == "__main__":
                parser = argparse.ArgumentParser()
                parser.add_argument("--amp", action="store_true")
                parser.add_argument("--fast-mode", action="store_true")
                parser.add_argument("--epochs", type=int, default=3)
                main(parser.parse_args())
            """
        ),
        encoding="utf-8",
    )
    tree = ast.parse(script.read_text(encoding="utf-8"))
    assert plan.guard_flags(tree, 6, tree) == ["--amp"]
    assert plan.guard_flags(tree, 8, tree) == ["--fast-mode"]
    assert plan.guard_flags(tree, 4, tree) == []
    config = {"argv": ["--epochs", 1], "scripts": {"train.py": {"argv": ["--data", "x"]}}}
    assert plan.argv_for(script, config) == ["--epochs", "1", "--data", "x"]
    assert plan.argv_for(tmp_path / "eval.py", config) == ["--epochs", "1"]
    tasks, _ = plan.build([_finding(script, 6, "MXL702")], [script], {"config": config})
    assert tasks[0].job["argv"] == ["--epochs", "1", "--data", "x", "--amp"]


def test_statement_span_covers_a_call_over_several_lines(tmp_path: Path) -> None:
    path = tmp_path / "loaders.py"
    path.write_text(
        "def f(ds):\n    a = 1\n    loader = make(\n        ds, shuffle=True\n    )\n"
        "    for x in loader:\n        pass\n",
        encoding="utf-8",
    )
    assert plan.statement_span(str(path), 4) == (3, 5)
    assert plan.statement_span(str(path), 6) == (6, 6)
    assert plan.statement_span(str(path), 2) == (2, 2)


def test_call_sites_give_literal_input_shapes() -> None:
    tree = ast.parse(
        textwrap.dedent(
            """
            def main():
                net = Head(4)
                mask = nd.zeros((2, 1))
                print(net(nd.ones((2, 4)), mask))
                Head()(nd.array([[1, 2, 3]]), nd.random.uniform(shape=(3,)))
                other = Head()
                other(x, mask)
            """
        )
    )
    assert callsites.block_inputs("Head", tree) == [
        [
            {"shape": [2, 4], "integer": False, "high": 5},
            {"shape": [2, 1], "integer": False, "high": 5},
        ],
        [
            {"shape": [1, 3], "integer": True, "high": 5},
            {"shape": [3], "integer": False, "high": 5},
        ],
    ]


def test_emulated_device_types_compare_as_mxnet_does() -> None:
    assert ctxmap._emulated_type(1, 0) == "cpu"
    assert ctxmap._emulated_type(1, 1) == ctxmap._emulated_type(1, 2) == "gpu"
    assert ctxmap._emulated_type(2, 3) == "gpu"


# -- block verdicts from the new observations -------------------------------------------------


def _block_payload(path: str, **extra: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "status": "ok",
        "stages": {"imperative": {"ok": True}, "hybridize": {"ok": True}},
        "compare": {"hybridize": None},
        "probe": {"ok": True, "lines": [[path, 5], [path, 6], [path, 7]]},
        "lines_imperative": [[path, 5], [path, 6], [path, 7]],
        "lines_hybrid": [[path, 5], [path, 6]],
        "input_shapes": "[[2, 8]]",
    }
    payload.update(extra)
    return payload


def test_state_structure_mode_and_silent_use_decide_block_verdicts(tmp_path: Path) -> None:
    path = str(tmp_path / "net.py")
    state = _item(Path(path), 5, "MXL113", "`self.steps += 1` changes the block's state")
    same = _item(Path(path), 6, "MXL113", "`self.scale = 2` changes the block's state")
    mode = _item(Path(path), 5, "MXL108")
    structure = _item(Path(path), 6, "MXL114")
    silent = _item(Path(path), 6, "MXL104")
    only_imperative = _item(Path(path), 7, "MXL101")
    never = _item(Path(path), 9, "MXL101")
    payload = _block_payload(
        path,
        state={
            "imperative": {"state": {"steps": "3", "scale": "2"}, "error": None},
            "hybridized": {"state": {"steps": "1", "scale": "2"}, "error": None},
        },
        structure={"imperative": "Outputs(T, T)", "hybridized": "list(T, T)"},
        observed=[
            {
                "file": path,
                "line": 5,
                "kind": "mode",
                "what": "autograd.is_training()",
                "value": False,
                "stage": "hybridize",
            },
            {
                "file": path,
                "line": 5,
                "kind": "mode",
                "what": "autograd.is_training()",
                "value": True,
                "stage": "imperative-train",
            },
            {
                "file": path,
                "line": 6,
                "kind": "silent",
                "stage": "hybridize",
                "what": "indexing a Symbol with one output ([0]) selects output 0",
            },
        ],
    )
    items = [state, same, mode, structure, silent, only_imperative, never]
    verdicts = block_verdicts.block_verdicts(items, payload)
    got = {it.finding.code + str(it.line): verdicts[it.key] for it in items}
    assert got["MXL1135"].verdict == "confirmed" and "self.steps is 3" in got["MXL1135"].evidence
    assert got["MXL1136"].verdict == "refuted" and "self.scale is 2 both" in got["MXL1136"].evidence
    assert got["MXL1085"].verdict == "confirmed" and got["MXL1085"].basis == "observed"
    assert "keeps the False branch" in got["MXL1085"].evidence
    assert (
        got["MXL1146"].verdict == "confirmed" and "list(T, T) hybridized" in got["MXL1146"].evidence
    )
    assert got["MXL1046"].verdict == "confirmed" and "selects output 0" in got["MXL1046"].evidence
    assert (
        got["MXL1017"].verdict == "refuted" and "runs only imperatively" in got["MXL1017"].evidence
    )
    assert got["MXL1019"].verdict == "inconclusive" and "never ran" in got["MXL1019"].reason


def test_a_break_at_another_line_is_the_only_fixed_line_s_when_its_fix_alone_works(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "net.py")
    edit = Edit("F.random.normal", Location(5, 1), Location(5, 2))
    finding = Finding(
        "MXL105", "x", path, Location(5, 1), Location(5, 2), fix=Fix("unsafe", "F", (edit,))
    )
    item = plan.Item(0, finding, path, 5)
    payload = _block_payload(
        path,
        stages={
            "imperative": {"ok": True},
            "hybridize": {
                "ok": False,
                "exception": {"type": "AssertionError", "message": "x", "frames": [[path, 6]]},
            },
        },
        rewrite={"verified": True, "evidence": "outputs and gradients equal"},
    )
    verdict = block_verdicts.block_verdicts([item], payload)[item.key]
    assert verdict.verdict == "confirmed" and "line 5's fix alone" in verdict.evidence
    assert verdict.rewrite is not None and verdict.rewrite.verified is True


def test_emulated_checks_and_mxnet_errors_are_told_apart(tmp_path: Path) -> None:
    path = str(tmp_path / "loop.py")
    item = _item(Path(path), 4, "MXL201")
    watch = [{"file": path, "line": 4, "runs": 1, "recording": 0, "exception": None}]
    ours = {
        "type": "MXNetError",
        "message": "Operator pick require all inputs live on the same context. "
        "But the first argument is on gpu(0) while the 2-th argument is on cpu(0)",
        "frames": [[path, 4], ["/x/mxlint/verify/ctxmap.py", 90]],
    }
    theirs = dict(ours, frames=[[path, 4]])
    env = {"env": {"ctx_map": True}, "watch": watch, "status": "error"}
    emulated = interpret.loud_verdict(item, dict(env, exception=ours))
    raised = interpret.loud_verdict(item, dict(env, exception=theirs))
    assert emulated.basis == "emulated" and "same-device check" in emulated.evidence
    assert raised.basis == "raised" and "raised by MXNet (gpu(i) emulated" in raised.evidence


def test_placement_confirms_a_layer_left_on_the_host(tmp_path: Path) -> None:
    path = str(tmp_path / "finetune.py")
    item = _item(Path(path), 11, "MXL203")
    payload = {
        "status": "finished",
        "watch": [{"file": path, "line": 11, "runs": 1, "recording": 0, "exception": None}],
        "placement": [
            {
                "file": path,
                "line": 11,
                "stack": [[path, 11]],
                "block": "Dense",
                "devices": ["cpu"],
                "network": "ResNetV2",
                "network_devices": ["gpu(0)"],
            }
        ],
    }
    verdict = interpret.loud_verdict(item, payload)
    assert verdict.verdict == "confirmed" and verdict.basis == "observed"
    assert "Dense's parameters are on cpu while the rest of ResNetV2 is on gpu(0)" in (
        verdict.evidence
    )
    payload["placement"][0]["devices"] = ["gpu(0)"]  # type: ignore[index]
    assert interpret.loud_verdict(item, payload).verdict == "refuted"


def test_timing_verdicts_need_queued_work_within_the_users_interval(tmp_path: Path) -> None:
    path = str(tmp_path / "epoch.py")
    item = _item(Path(path), 9, "MXL601")

    def payload(pending: float, interval: float | None) -> dict[str, Any]:
        reads = [{"pending_s": pending, "interval_s": interval}]
        return {"status": "finished", "timing": [{"file": path, "line": 9, "reads": reads}]}

    confirmed = interpret.timing_verdict(item, payload(0.9, 0.1))
    assert confirmed.verdict == "confirmed" and "misses 90% of the work" in confirmed.evidence
    assert interpret.timing_verdict(item, payload(0.0001, 0.5)).verdict == "refuted"
    assert interpret.timing_verdict(item, payload(0.0001, 0.001)).verdict == "inconclusive"
    unreached = interpret.timing_verdict(item, {"status": "finished", "timing": []})
    assert unreached.verdict == "inconclusive" and "not reached" in unreached.reason


def test_a_seed_finding_by_itself(tmp_path: Path) -> None:
    path = str(tmp_path / "augment.py")
    item = _item(Path(path), 10, "MXL303")
    watch = [{"file": path, "line": 10, "runs": 1, "recording": 0, "exception": None}]

    def run(stdout: str, result: str | None = None) -> dict[str, Any]:
        return {
            "status": "finished",
            "watch": watch,
            "steps": 0,
            "fingerprint": {"stdout": stdout, "result": result},
        }

    fixed = [run("s"), run("s")]
    differ = interpret.seed_verdict(item, "random", [run("a"), run("b")], fixed, "fix", True)
    assert differ.verdict == "confirmed" and "only line 10's random draws" in differ.evidence
    assert differ.rewrite is not None and differ.rewrite.verified is True
    same = interpret.seed_verdict(item, "random", [run("a"), run("a")], None, "", True)
    assert same.verdict == "refuted" and "do not reach the results" in same.evidence
    # Printed output that differs with the rewrite applied too (timings) explains nothing.
    noisy = [run("t1", "r"), run("t2", "r")]
    other = interpret.seed_verdict(item, "random", [run("a", "r"), run("b", "r")], noisy, "f", True)
    assert other.verdict == "inconclusive" and "other nondeterminism" in other.reason
    both = interpret.seed_verdict(item, "random", [run("a", "r"), run("b", "q")], noisy, "f", True)
    assert both.verdict == "confirmed" and both.evidence.endswith("differ in their returned value")
    unreached = dict(run("a"), watch=[])
    assert interpret.seed_reached(item, unreached) is not None


def test_an_options_object_is_built_from_the_modules_parser_defaults() -> None:
    source = """
    import argparse

    def main(args):
        for epoch in range(args.epochs):
            step(args.lr, args.schedule)

    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--epochs", type=int, default=3)
        parser.add_argument("--no-aug", dest="aug", action="store_false")
        main(parser.parse_args())
    """
    tree = ast.parse(textwrap.dedent(source))
    assert targets.parser_defaults(tree) == {"epochs": 3, "aug": True}
    found = targets.enclosing(tree, 6)
    assert found is not None
    (args,) = found.params
    assert args["role"] == "namespace"
    assert args["values"] == {"epochs": 3, "lr": 0.01, "schedule": None}
