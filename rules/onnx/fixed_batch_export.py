"""MXL904 onnx-fixed-batch: finds an `mx.onnx.export_model` call whose ONNX graph has a fixed
batch size while the project runs the exported file with onnxruntime on batches of another size.

The function after the class decides and words its findings; the family's checker
(`rules/onnx/checker.py`) pairs each export with the `session.run` calls of the model file it
writes (`rules/onnx/_feeds.py`). Its tests are the examples below (run by
`tests/test_rule_examples.py`), `tests/test_onnx.py` and `tests/snapshots/MXL904.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mxlint.rule import Example, Rule, Runtime
from mxlint.rules.onnx._report import finding, verify_args

if TYPE_CHECKING:
    from mxlint.rule import Finding
    from mxlint.rules.onnx._export import ExportSite
    from mxlint.rules.onnx._feeds import Feed

_EXPORT = """import mxnet as mx
import numpy as np
import onnxruntime as ort

mx.onnx.export_model("m-symbol.json", "m-0000.params", [(1, 3, 224, 224)], np.float32, "m.onnx")
"""


class FixedBatchExport(Rule):
    code = "MXL904"
    name = "onnx-fixed-batch"
    mxnet = "1"
    runtime = Runtime("onnx", loud=True)
    message = (
        "`{callee}(...)` exports a graph whose batch size is fixed at {batch} ({how}), but "
        "{where} runs `{model}` on a batch of {fed}: onnxruntime rejects the input "
        '("Got invalid dimensions for input ... Expected: {batch}"); {advice}'
    )
    what = """
        Finds `mx.onnx.export_model` calls that write an ONNX graph with a fixed batch size
        (`dynamic=False`, the default, with a literal `in_shapes`; or `dynamic=True` with a
        literal batch in `dynamic_input_shapes`) when the project itself runs the written
        file with onnxruntime on another batch size: an `onnxruntime.InferenceSession` of the
        same path (in the same file, or a file of the same directory for a plain path; a run
        is paired with an export of its own file first, and a run that exports of two files
        may have written is not judged) whose `run` feeds an array with a literal leading
        dimension that differs
        (`np.zeros((8, 3, 224, 224))`, `np.random.rand(batch, ...)` in a `for batch in (1,
        8)` loop).
    """
    why = """
        With `dynamic=False` MXNet 1.9.1's exporter writes every input dimension of the graph
        as a fixed value taken from `in_shapes`; onnxruntime checks each fed array against the
        graph's input dimensions and raises `INVALID_ARGUMENT: Got invalid dimensions for
        input` for any other batch size. Only evidence in the project counts: an export with a
        fixed shape is the common and correct way to export for one batch size, so batches
        from a loader or an argument (unknown sizes), a loader with `last_batch='keep'` used
        in training, sessions of another file, and files rewritten after the export
        (`onnx.save` to the same path, which may set `dim_param`) are not reported.
    """
    example = """
        mx.onnx.export_model(sym, params, [(1, 3, 224, 224)], np.float32, "m.onnx")
        sess = ort.InferenceSession("m.onnx")
        sess.run(None, {"data": np.zeros((8, 3, 224, 224), np.float32)})
    """
    use_instead = """
        mx.onnx.export_model(
            sym, params, [(1, 3, 224, 224)], np.float32, "m.onnx",
            dynamic=True, dynamic_input_shapes=[(None, 3, 224, 224)],
        )
        sess = ort.InferenceSession("m.onnx")
        sess.run(None, {"data": np.zeros((8, 3, 224, 224), np.float32)})
    """
    fix_safety = """
        No automatic fix: `dynamic=True` changes how some operators are converted (shapes
        are computed in the graph), and which dimensions should stay fixed is the author's
        choice.
    """
    invalid = (
        Example(
            _EXPORT
            + """
sess = ort.InferenceSession("m.onnx")
batch = np.random.rand(8, 3, 224, 224).astype(np.float32)
print(sess.run(None, {"data": batch}))
""",
            line=5,
        ),
        Example(
            """import mxnet as mx
import numpy as np
import onnxruntime as ort

mx.onnx.export_model(
    "m-symbol.json",
    "m-0000.params",
    [(1, 16)],
    np.float32,
    "m.onnx",
)
sess = ort.InferenceSession("m.onnx")
for size in (1, 4, 16):
    sess.run(None, {"data": np.zeros((size, 16), dtype=np.float32)})
""",
            line=5,
        ),
    )
    valid = (
        # The batch the graph was exported with.
        _EXPORT
        + """
sess = ort.InferenceSession("m.onnx")
sess.run(None, {"data": np.zeros((1, 3, 224, 224), np.float32)})
""",
        # A dynamic batch.
        _EXPORT.replace('"m.onnx")', '"m.onnx", dynamic=True)')
        + """
sess = ort.InferenceSession("m.onnx")
sess.run(None, {"data": np.zeros((8, 3, 224, 224), np.float32)})
""",
        # Batches of unknown size (from a loader): not judged.
        _EXPORT
        + """

def serve(loader):
    sess = ort.InferenceSession("m.onnx")
    for batch, _label in loader:
        sess.run(None, {"data": batch.asnumpy()})
""",
        # Another model file.
        _EXPORT
        + """
sess = ort.InferenceSession("other.onnx")
sess.run(None, {"data": np.zeros((8, 3, 224, 224), np.float32)})
""",
        # The file is rewritten (its batch dimension made symbolic) before it is run.
        _EXPORT
        + """import onnx

model = onnx.load("m.onnx")
model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
onnx.save(model, "m.onnx")
sess = ort.InferenceSession("m.onnx")
sess.run(None, {"data": np.zeros((8, 3, 224, 224), np.float32)})
""",
    )


def graph_batch(site: ExportSite) -> int | None:
    """The batch size the export writes into the graph's inputs; None when it is dynamic or
    not known from literal arguments (or the inputs' leading dimensions differ)."""
    args = site.args
    shapes = args["in_shapes"]
    if not shapes.literal or not _shape_list(shapes.value):
        return None
    dynamic = args["dynamic"]
    if dynamic.given and not (dynamic.literal and isinstance(dynamic.value, bool)):
        return None
    declared: Any = shapes.value
    if dynamic.given and dynamic.value:
        dyn = args["dynamic_input_shapes"]
        if not dyn.given or not dyn.literal or not _shape_list(dyn.value):
            return None
        declared = dyn.value
    leads = {shape[0] if shape else None for shape in declared}
    if len(leads) != 1:
        return None
    lead = next(iter(leads))
    return lead if isinstance(lead, int) else None


def _shape_list(value: object) -> bool:
    return (
        isinstance(value, (list, tuple))
        and bool(value)
        and all(
            isinstance(s, (list, tuple)) and all(isinstance(d, int) or d is None for d in s)
            for s in value
        )
    )


def decide(
    site: ExportSite,
    feeds: list[Feed],
    located: tuple[str, str] | None,
) -> list[Finding]:
    """`feeds`: the runs of the file this export writes (paired by the checker)."""
    batch = graph_batch(site)
    if batch is None:
        return []
    for feed in feeds:
        other = [b for b in feed.batches if b != batch]
        if not other:
            continue
        dynamic = site.args["dynamic"]
        how = (
            "`dynamic_input_shapes`"
            if dynamic.given and dynamic.value
            else "`in_shapes` without `dynamic=True`"
        )
        row = feed.span[0]
        where = f"line {row}" if feed.path == site.path else f"{feed.path}:{row}"
        shapes = site.args["in_shapes"].value
        assert isinstance(shapes, (list, tuple))
        open_shapes = ", ".join(
            "("
            + ", ".join(["None", *(str(d) for d in shape[1:])])
            + (",)" if len(shape) == 1 else ")")
            for shape in shapes
        )
        advice = (
            f"pass `dynamic=True, dynamic_input_shapes=[{open_shapes}]` to leave the batch "
            "dimension open"
        )
        message = FixedBatchExport.format(
            callee=site.callee,
            batch=batch,
            how=how,
            where=where,
            model=site.output,
            fed=other[0],
            advice=advice,
        )
        data: dict[str, Any] = {"onnx": verify_args(site), "export": True, "feed_batch": other[0]}
        if located is not None:
            data["class"], data["class_file"] = located
        return [finding(FixedBatchExport, message, site.path, site.span, site.symbol, data)]
    return []
