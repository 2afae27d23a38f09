"""MXL9xx: fixtures match their markers exactly; which block an export reaches; `--verify`
exports the flagged blocks with MXNet 1.9.1's real exporter."""

from __future__ import annotations

import pytest
from expectations import actual, expected

from mxlint.api import check_source
from mxlint.config import Settings
from mxlint.rule import Finding, Location
from mxlint.verify import onnx_verdicts, plan
from mxlint.verify.runner import VerifyOptions, run_block
from mxlint.verify.slots import Slots

SETTINGS = Settings(select=("MXL9",))

HEAD = (
    "import mxnet as mx\nimport numpy as np\nfrom mxnet import gluon\n\n\n"
    "class Head(gluon.HybridBlock):\n"
    "    def hybrid_forward(self, F, x):\n"
    "        return F.cosh(x)\n\n\n"
    "net = Head()\n"
)


def _rows(source: str, project: list[tuple[str, str]] | None = None) -> list[tuple[str, int]]:
    return sorted(
        (f.code, f.location.row)
        for f in check_source(source, "example.py", SETTINGS, project or [])
    )


def test_bad_fixtures_report_exactly_the_marked_findings(fixtures_dir):
    root = fixtures_dir / "onnx" / "bad"
    assert expected(root)
    assert actual(root, prefix="MXL9") == expected(root)


def test_good_twins_are_silent(fixtures_dir):
    assert actual(fixtures_dir / "onnx" / "good", prefix="MXL9") == set()


@pytest.mark.parametrize(
    "export",
    [
        'net.export("m")\nmx.onnx.export_model("m-symbol.json", "m-0000.params", [(1, 4)])\n',
        'p = "out/m"\nnet.export(p, 3)\nmx.onnx.export_model(p + "-symbol.json", "x", [(1, 4)])\n',
        'net.export("m")\nmx.onnx.export_model("%s-symbol.json" % "m", "x", [(1, 4)])\n',
        'net.export("m", 2)\ns, a, b = mx.model.load_checkpoint("m", 2)\n'
        "mx.onnx.export_model(s, [a, b], [(1, 4)])\n",
        's = net(mx.sym.var("data"))\nmx.onnx.export_model(s, {}, [(1, 4)])\n',
    ],
)
def test_the_export_reaches_the_block(export):
    assert _rows(HEAD + export) == [("MXL901", 8)]


@pytest.mark.parametrize(
    "export",
    [
        # Another network's files.
        'other = gluon.nn.Dense(2)\nother.export("m")\nnet.export("n")\n'
        'mx.onnx.export_model("m-symbol.json", "m-0000.params", [(1, 4)])\n',
        # Two networks under one name: which one is converted depends on the run.
        'other = gluon.nn.Dense(2)\nother.export("m")\nnet.export("m")\n'
        'mx.onnx.export_model("m-symbol.json", "m-0000.params", [(1, 4)])\n',
        # Exported for MXNet only.
        'net.export("m")\n',
        # A symbol file named on the command line.
        'net.export("m")\nmx.onnx.export_model(args.sym, args.params, [(1, 4)])\n',
    ],
)
def test_exports_of_other_or_unknown_blocks_are_silent(export):
    assert _rows(HEAD + export) == []


def test_opset_falls_back_as_the_exporter_does():
    # 1.9.1's exporter has no `opset_version` (MXL905); the operator lookup still falls back
    # from the opset written as the exporter's registry does.
    base = HEAD.replace("F.cosh(x)", "F.softmax(x)")
    export = (
        'net.export("m")\nmx.onnx.export_model("m-symbol.json", "p", [(1, 4)], opset_version=13)\n'
    )
    assert _rows(base + export) == [("MXL905", 13)]


def test_unknown_keywords_each_reported_at_the_keyword():
    source = (
        "import mxnet as mx\n\n"
        'mx.onnx.export_model("m-symbol.json", "p", [(1, 4)],\n'
        "                     opset_version=11, dynamic_shapes=True)\n"
    )
    findings = check_source(source, "example.py", SETTINGS, [])
    assert [(f.code, f.location.row, f.location.column) for f in findings] == [
        ("MXL905", 4, 22),
        ("MXL905", 4, 40),
    ]
    assert "did you mean" not in findings[0].message
    assert "remove it (1.9.1 exports at the installed onnx's opset" in findings[0].message
    from mxlint.fixes import apply_edits

    assert findings[0].fix is not None
    assert apply_edits(source, list(findings[0].fix.edits)).endswith(
        '"p", [(1, 4)], dynamic_shapes=True)\n'
    )


def test_unknown_keywords_after_a_starred_argument_or_of_a_wrapper_are_not_judged():
    source = (
        "import mxnet as mx\nfrom mxnet.onnx import export_model as export_model_\n\n\n"
        "def export_model(*args, opset_version=None, **kwargs):\n"
        "    return export_model_(*args, **kwargs)\n\n\n"
        'export_model("m-symbol.json", "p", [(1, 4)], opset_version=11)\n'
    )
    assert _rows(source) == []


def test_block_in_another_file():
    models = HEAD.split("\n\n\nnet")[0] + "\n"
    script = (
        "import mxnet as mx\nfrom models import Head\n\nnet = Head()\n"
        'net.export("m")\nmx.onnx.export_model("m-symbol.json", "m-0000.params", [(1, 4)])\n'
    )
    findings = check_source(models, "models.py", SETTINGS, [("export", script)])
    assert [(f.code, f.location.row) for f in findings] == [("MXL901", 8)]
    assert "exported to ONNX at export.py:6" in findings[0].message


def test_forwarded_arguments_are_not_judged():
    source = (
        "from mxnet.onnx import export_model as export_model_\n\n\n"
        "def export_model(*args, **kwargs):\n    return export_model_(*args, **kwargs)\n"
    )
    assert _rows(source) == []


def test_single_shape_fix_is_exact():
    source = (
        "import mxnet as mx\n\n"
        'mx.onnx.export_model("m-symbol.json", "m-0000.params", (1, 3, 8, 8))\n'
    )
    (finding,) = check_source(source, "example.py", SETTINGS, [])
    assert finding.code == "MXL903" and finding.fix is not None
    from mxlint.fixes import apply_edits

    assert apply_edits(source, list(finding.fix.edits)).endswith(
        '"m-0000.params", [(1, 3, 8, 8)])\n'
    )


# -- --verify: the real exporter --------------------------------------------------------------

VERIFY_MODELS = """from mxnet import gluon


class Soft(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.softmax(F.relu(x))


class Pair(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.dense = gluon.nn.Dense(4)

    def hybrid_forward(self, F, x, y):
        return F.cosh(self.dense(x) + self.dense(y))
"""


def _verify(tmp_path, code: str, line: int, data: dict) -> dict:
    models = tmp_path / "models.py"
    models.write_text(VERIFY_MODELS, encoding="utf-8")
    finding = Finding(code, "", str(models), Location(line, 1), Location(line, 2), data=data)
    tasks, skipped = plan.build([finding], [models], {"config": {}})
    assert not skipped and len(tasks) == 1
    verdicts = run_block(tasks[0], Slots(0, 1), VerifyOptions(timeout=240))
    return {
        "verdict": verdicts[finding.key()].verdict,
        "evidence": verdicts[finding.key()].evidence,
    }


@pytest.mark.slow
def test_verify_confirms_a_missing_converter(tmp_path):
    out = _verify(tmp_path, "MXL901", 16, {"ops": ["cosh"], "onnx": {}})
    assert out["verdict"] == "confirmed"
    assert "No conversion function registered for op type cosh yet." in out["evidence"]


@pytest.mark.slow
def test_verify_refutes_when_the_export_converts_and_checks(tmp_path):
    out = _verify(tmp_path, "MXL901", 6, {"ops": ["softmax"], "onnx": {}})
    assert out["verdict"] == "refuted"
    assert "onnx.checker.check_model" in out["evidence"]


@pytest.mark.slow
def test_verify_confirms_a_shape_list_that_misses_an_input(tmp_path):
    data = {
        "export": True,
        "class": "models.Soft",
        "class_file": str(tmp_path / "models.py"),
        "onnx": {"in_shapes": {"literal": True, "value": [4]}},
    }
    out = _verify(tmp_path, "MXL903", 1, data)
    assert out["verdict"] == "confirmed", out
    assert "TypeError" in out["evidence"]


def test_verdicts_need_the_operator_in_the_graph():
    finding = Finding("MXL901", "", "m.py", Location(1, 1), Location(1, 2), data={"ops": ["cosh"]})
    item = plan.Item(0, finding, "m.py", 1)
    payload = {"status": "ok", "stages": {"onnx-probed": {"ok": True}}, "graph_ops": ["relu"]}
    assert onnx_verdicts.verdicts([item], payload)[finding.key()].verdict == "inconclusive"


# -- MXL904: a fixed batch run on other batch sizes ----------------------------------------------

EXPORT_FIXED = (
    "import mxnet as mx\nimport numpy as np\nimport onnxruntime as ort\n\n"
    'mx.onnx.export_model("m-symbol.json", "m-0000.params", [(1, 8)], np.float32, "m.onnx")\n'
)


@pytest.mark.parametrize(
    "feed",
    [
        's = ort.InferenceSession("m.onnx")\ns.run(None, {"x": np.zeros((4, 8))})\n',
        'ort.InferenceSession("m.onnx").run(None, input_feed={"x": np.ones([2, 8])})\n',
        's = ort.InferenceSession("m.onnx")\nn = 16\ns.run(["y"], {"x": np.random.randn(n, 8)})\n',
        's = ort.InferenceSession("m.onnx")\nfor b in range(1, 5):\n'
        '    s.run(None, {"x": np.random.uniform(0, 1, size=(b, 8)).astype("float32")})\n',
        's = ort.InferenceSession("m.onnx")\nx = mx.nd.ones((3, 8)).asnumpy()\n'
        's.run(None, {"x": x})\n',
    ],
)
def test_fixed_batch_run_on_another_batch(feed):
    assert _rows(EXPORT_FIXED + feed) == [("MXL904", 5)]


@pytest.mark.parametrize(
    "feed",
    [
        # The exported batch, however it is spelled.
        's = ort.InferenceSession("m.onnx")\ns.run(None, {"x": np.zeros((1, 8))})\n',
        's = ort.InferenceSession("m.onnx")\nfor b in (1,):\n    s.run(None, {"x": np.zeros((b, 8))})\n',
        # A loop variable also bound otherwise, a batch from an argument, a reshaped array.
        's = ort.InferenceSession("m.onnx")\nfor b in (4, 8):\n    pass\nb = int(input())\n'
        's.run(None, {"x": np.zeros((b, 8))})\n',
        "import sys\n"
        's = ort.InferenceSession("m.onnx")\ns.run(None, {"x": np.zeros((int(sys.argv[1]), 8))})\n',
        's = ort.InferenceSession("m.onnx")\ns.run(None, {"x": np.zeros(32).reshape(4, 8)})\n',
        # A session passed in: which file it loaded is not known.
        'def serve(s):\n    return s.run(None, {"x": np.zeros((4, 8))})\n',
    ],
)
def test_fixed_batch_traps_are_silent(feed):
    assert _rows(EXPORT_FIXED + feed) == []


def test_fixed_batch_two_exports_of_one_file_are_not_judged():
    second = (
        'mx.onnx.export_model("n-symbol.json", "n-0000.params", [(4, 8)], np.float32, "m.onnx")\n'
        's = ort.InferenceSession("m.onnx")\ns.run(None, {"x": np.zeros((4, 8))})\n'
    )
    assert _rows(EXPORT_FIXED + second) == []


def test_fixed_batch_run_in_another_file_of_the_directory():
    serve = (
        "import numpy as np\nimport onnxruntime as ort\n\n"
        's = ort.InferenceSession("m.onnx")\ns.run(None, {"x": np.zeros((8, 8), np.float32)})\n'
    )
    findings = check_source(EXPORT_FIXED, "export.py", SETTINGS, [("serve", serve)])
    assert [(f.code, f.location.row) for f in findings] == [("MXL904", 5)]
    assert "serve.py:5 runs `m.onnx` on a batch of 8" in findings[0].message
    assert "dynamic_input_shapes=[(None, 8)]" in findings[0].message


def test_fixed_batch_template_paths_pair_within_a_file_only():
    export = EXPORT_FIXED.replace('"m.onnx")', "args.out)")
    serve = (
        "import numpy as np\nimport onnxruntime as ort\n\n"
        's = ort.InferenceSession(args.out)\ns.run(None, {"x": np.zeros((8, 8), np.float32)})\n'
    )
    assert _rows(export + serve[serve.index("s = ") :]) == [("MXL904", 5)]
    assert check_source(export, "export.py", SETTINGS, [("serve", serve)]) == []


@pytest.mark.slow
@pytest.mark.parametrize("callee", ["mx.onnx.export_model", "onnx_mxnet.export_model"])
def test_verify_confirms_an_unknown_keyword(tmp_path, callee):
    models = tmp_path / "convert.py"
    models.write_text("", encoding="utf-8")
    data = {"keywords": {"opset_version": 11}, "callee": callee}
    finding = Finding("MXL905", "", str(models), Location(1, 1), Location(1, 2), data=data)
    tasks, skipped = plan.build([finding], [models], {"config": {}})
    assert not skipped and len(tasks) == 1
    verdicts = run_block(tasks[0], Slots(0, 1), VerifyOptions(timeout=240))
    verdict = verdicts[finding.key()]
    assert verdict.verdict == "confirmed", verdict
    assert "unexpected keyword argument 'opset_version'" in verdict.evidence
    assert "without it the graph exported" in verdict.evidence


def _batch_data(tmp_path, onnx: dict) -> dict:
    return {
        "export": True,
        "class": "models.Soft",
        "class_file": str(tmp_path / "models.py"),
        "onnx": onnx,
        "feed_batch": 8,
    }


@pytest.mark.slow
def test_verify_confirms_a_fixed_batch(tmp_path):
    onnx = {"in_shapes": {"literal": True, "value": [[1, 4]]}}
    out = _verify(tmp_path, "MXL904", 1, _batch_data(tmp_path, onnx))
    assert out["verdict"] == "confirmed", out
    assert "have dimensions [[1, 4]]: the batch dimension is fixed at 1" in out["evidence"]


@pytest.mark.slow
def test_verify_refutes_a_dynamic_batch(tmp_path):
    onnx = {
        "in_shapes": {"literal": True, "value": [[1, 4]]},
        "dynamic": {"literal": True, "value": True},
        "dynamic_input_shapes": {"literal": True, "value": [[None, 4]]},
    }
    out = _verify(tmp_path, "MXL904", 1, _batch_data(tmp_path, onnx))
    assert out["verdict"] == "refuted", out
    assert "[[None, 4]]: a batch of 8 is accepted" in out["evidence"]


def test_fixed_batch_a_run_pairs_with_its_own_files_export_first():
    # Two scripts of one directory export `m.onnx`: each run of a script is judged against
    # that script's export; a third file's run could load either and is not judged.
    feed = 's = ort.InferenceSession("m.onnx")\ns.run(None, {"x": np.zeros((4, 8))})\n'
    other = EXPORT_FIXED.replace("[(1, 8)]", "[(4, 8)]")
    serve = "import numpy as np\nimport onnxruntime as ort\n\n" + feed
    findings = check_source(
        EXPORT_FIXED + feed, "a.py", SETTINGS, [("b", other + feed), ("serve", serve)]
    )
    assert [(f.code, f.filename, f.location.row) for f in findings] == [("MXL904", "a.py", 5)]
    assert "line 7 runs `m.onnx` on a batch of 4" in findings[0].message
