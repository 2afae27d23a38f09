"""MXL903 onnx-export-input-mismatch: checks `mx.onnx.export_model` calls whose input shapes and
types cannot describe the exported graph's inputs.

The function after the class decides and words its findings; the family's checker
(`rules/onnx/checker.py`) runs it on every export call. Its tests are the examples below (run
by `tests/test_rule_examples.py`), `tests/test_onnx.py` and `tests/snapshots/MXL903.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mxlint.rule import Edit, Example, Fix, Location, Rule, Runtime, Valid
from mxlint.rules.onnx._report import finding, verify_args

if TYPE_CHECKING:
    from mxlint.rule import Finding
    from mxlint.rules.onnx._export import Arg, ExportSite


class ExportInputMismatch(Rule):
    code = "MXL903"
    name = "onnx-export-input-mismatch"
    mxnet = "1"
    fixable = "safe"
    runtime = Runtime("onnx", loud=True)
    message = "`{callee}(...)` {problem}: {consequence}; {advice}"
    what = """
        Checks `mx.onnx.export_model` calls whose input shapes and types cannot describe the
        exported graph's inputs: no `in_shapes` (`input_shape`), one shape where a list of
        shapes is expected, a number of shapes that differs from the inputs of the exported
        block's `hybrid_forward`, an `in_types` list of another length, or
        `dynamic_input_shapes` without `dynamic=True` or of another length.
    """
    why = """
        MXNet 1.9.1's exporter (the parameters are read from its signature: `in_shapes` and
        `in_types`, with `input_shape`/`input_type` kept as old names) pairs the graph's
        inputs with `in_shapes` one by one: `(1, 3, 224, 224)` is read as four inputs of
        shapes `1`, `3`..., and the export fails with `TypeError: 'int' object is not
        iterable`; a missing `in_shapes` fails on `len(None)`; a list of another length than
        the graph's inputs leaves an input without a shape, or fails shape inference; and the
        exporter asserts that `in_types` and `dynamic_input_shapes` have one entry per shape
        and that `dynamic_input_shapes` comes with `dynamic=True`. The block's inputs are
        counted only when its class and every class it derives from are known (a base class
        could register parameters that `hybrid_forward` takes by name).
    """
    example = """
        mx.onnx.export_model(sym_file, params_file, (1, 3, 224, 224), np.float32, "m.onnx")
    """
    use_instead = """
        mx.onnx.export_model(sym_file, params_file, [(1, 3, 224, 224)], np.float32, "m.onnx")
    """
    fix_safety = """
        Wrapping a single shape in a list is safe: the call as written always fails, and the
        list of one shape is what the exporter reads for a one-input graph. The other cases
        have no automatic fix.
    """
    invalid = (
        Example(
            """import mxnet as mx
import numpy as np

mx.onnx.export_model("m-symbol.json", "m-0000.params", (1, 3, 224, 224), np.float32, "m.onnx")
""",
            line=4,
            expected_fix="""import mxnet as mx
import numpy as np

mx.onnx.export_model("m-symbol.json", "m-0000.params", [(1, 3, 224, 224)], np.float32, "m.onnx")
""",
        ),
        Example(
            """import mxnet as mx
import numpy as np
from mxnet import gluon


class Pair(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.dense = gluon.nn.Dense(4)

    def hybrid_forward(self, F, x, y):
        return self.dense(x) + self.dense(y)


net = Pair()
net.initialize()
net.hybridize()
net(mx.nd.ones((1, 4)), mx.nd.ones((1, 4)))
net.export("pair")
mx.onnx.export_model("pair-symbol.json", "pair-0000.params", [(1, 4)], np.float32, "pair.onnx")
""",
            line=21,
        ),
        Example(
            """import mxnet as mx
import numpy as np

mx.onnx.export_model(
    "m-symbol.json",
    "m-0000.params",
    in_shapes=[(1, 8), (1, 8)],
    in_types=[np.float32],
    onnx_file_path="m.onnx",
)
""",
            line=4,
        ),
        Example(
            """import mxnet as mx
import numpy as np

mx.onnx.export_model(
    "m-symbol.json",
    "m-0000.params",
    [(1, 3, 224, 224)],
    np.float32,
    "m.onnx",
    dynamic_input_shapes=[(None, 3, 224, 224)],
)
""",
            line=4,
        ),
    )
    valid = (
        """import mxnet as mx
import numpy as np

mx.onnx.export_model("m-symbol.json", "m-0000.params", [(1, 3, 224, 224)], np.float32, "m.onnx")
""",
        # The old keyword names of 1.9.1, and dynamic shapes declared as the exporter wants.
        """import mxnet as mx
import numpy as np

mx.onnx.export_model(
    "m-symbol.json",
    "m-0000.params",
    input_shape=[(1, 3, 224, 224)],
    input_type=[np.float32],
    dynamic=True,
    dynamic_input_shapes=[(None, 3, 224, 224)],
)
""",
        # Shapes from a variable: not judged.
        """import mxnet as mx
import numpy as np


def export(sym_file, params_file, shapes):
    mx.onnx.export_model(sym_file, params_file, shapes, np.float32, "m.onnx")
""",
        # A registered parameter is passed by name, not as an input.
        Valid(
            """import mxnet as mx
import numpy as np
from mxnet import gluon


class Scale(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.alpha = self.params.get("alpha", shape=(1,))

    def hybrid_forward(self, F, x, alpha):
        return F.broadcast_mul(x, alpha)


net = Scale()
net.export("scale")
mx.onnx.export_model("scale-symbol.json", "scale-0000.params", [(1, 4)], np.float32)
"""
        ),
    )


def _shapes(arg: Arg) -> list[Any] | None:
    """The literal list of shapes an argument gives, None if not literal."""
    value = arg.value
    if not arg.literal or not isinstance(value, (list, tuple)):
        return None
    return list(value)


def _is_shape(value: object) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(v, int) or v is None for v in value)


def decide(
    site: ExportSite, inputs: tuple[int, int] | None, located: tuple[str, str] | None
) -> list[Finding]:
    problem = _problem(site, inputs)
    if problem is None:
        return []
    text, consequence, advice, fix = problem
    message = ExportInputMismatch.format(
        callee=site.callee, problem=text, consequence=consequence, advice=advice
    )
    data: dict[str, Any] = {"onnx": verify_args(site), "export": True}
    if located is not None:
        data["class"], data["class_file"] = located
    return [finding(ExportInputMismatch, message, site.path, site.span, site.symbol, data, fix)]


def _problem(
    site: ExportSite, inputs: tuple[int, int] | None
) -> tuple[str, str, str, Fix | None] | None:
    args = site.args
    shapes_arg = args["in_shapes"]
    if not shapes_arg.given:
        return (
            "gives no `in_shapes`",
            "the exporter needs one shape per graph input and fails on `len(None)`",
            "pass `in_shapes=[(batch, ...)]`, one tuple per input of the exported block",
            None,
        )
    shapes = _shapes(shapes_arg)
    if shapes is None:
        return None
    if shapes and _is_shape(shapes) and all(isinstance(v, int) for v in shapes):
        fix = None
        if shapes_arg.span is not None:
            sl, sc, el, ec = shapes_arg.span
            sc, ec = sc - shapes_arg.parens, ec + shapes_arg.parens
            fix = Fix(
                "safe",
                "Wrap the shape in a list",
                (
                    Edit("[", Location(sl, sc), Location(sl, sc)),
                    Edit("]", Location(el, ec), Location(el, ec)),
                ),
            )
        return (
            f"passes one shape `{shapes_arg.text}` as `in_shapes`",
            "the exporter reads it as a list of shapes, one per input, and fails with "
            "\"TypeError: 'int' object is not iterable\"",
            f"pass a list of shapes: `[{shapes_arg.text}]`",
            fix,
        )
    if not all(_is_shape(s) for s in shapes):
        return None
    count = len(shapes)
    if inputs is not None:
        required, optional = inputs
        if count < required or count > required + optional:
            want = str(required) if not optional else f"{required} to {required + optional}"
            block = site.block.text if site.block is not None else "the block"
            return (
                f"gives {count} input shape{'s' * (count != 1)} for {block}, whose "
                f"`hybrid_forward` takes {want} input{'s' * (want != '1')}",
                "the exporter pairs the graph's inputs with the shapes one by one and "
                "cannot infer the graph's shapes",
                "give one shape per input the block was run with before `export()`",
                None,
            )
    types = args["in_types"]
    if (
        types.given
        and types.literal
        and isinstance(types.value, list)
        and len(types.value) != count
    ):
        return (
            f"gives {len(types.value)} input type{'s' * (len(types.value) != 1)} for "
            f"{count} input shape{'s' * (count != 1)}",
            'the exporter asserts "The lengths of in_types and in_shapes must equal"',
            "give one dtype per shape, or a single dtype (not a list) for all of them",
            None,
        )
    dyn_shapes = args["dynamic_input_shapes"]
    dynamic = args["dynamic"]
    if dyn_shapes.given and not (dyn_shapes.literal and dyn_shapes.value is None):
        if not dynamic.given or (dynamic.literal and dynamic.value is False):
            return (
                "gives `dynamic_input_shapes` without `dynamic=True`",
                'the exporter asserts "dynamic_input_shapes is specified. Please set '
                'dynamic_input_shapes=True to enable dynamic input shapes"',
                "add `dynamic=True`",
                None,
            )
        declared = _shapes(dyn_shapes)
        if declared is not None and len(declared) != count:
            return (
                f"gives {len(declared)} `dynamic_input_shapes` for {count} input "
                f"shape{'s' * (count != 1)}",
                'the exporter asserts "The length of dynamic_input_shapes must equal to the '
                'length of in_shapes"',
                "give one dynamic shape per input shape",
                None,
            )
    return None
