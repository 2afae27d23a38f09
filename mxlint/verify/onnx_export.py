"""ONNX export harness (runs inside the verify subprocess): build the flagged block, run it once
hybridized, `export()` it, and convert the files with `mx.onnx.export_model` — with the export
call's own literal arguments when the finding is about them, and with the shapes the block was
run on — then check the model with `onnx.checker.check_model`.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

import mxnet as mx
import numpy as np
from mxnet import gluon

from mxlint.verify.block import Spec, find_input, n_inputs
from mxlint.verify.harness import exception_info


def _literal(onnx_args: dict[str, Any], key: str) -> tuple[bool, Any]:
    """Whether the export call gave `key` (as a literal), and its value."""
    arg = onnx_args.get(key)
    if not isinstance(arg, dict) or not arg.get("literal"):
        return False, None
    return True, arg.get("value")


def _shape_list(value: Any) -> list[tuple[int, ...]] | None:
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(s, (list, tuple)) for s in value)
        and all(all(isinstance(d, int) for d in s) for s in value)
    ):
        return [tuple(s) for s in value]
    return None


def _convert(prefix: str, kwargs: dict[str, Any], out: str) -> tuple[list[str], list[list[Any]]]:
    """`export_model` on the exported files, then the onnx checker; the ONNX graph's ops and
    the dimensions of its data inputs (an int where fixed, the symbol's name or None where
    not; the parameters, which the exporter also lists as inputs, left out)."""
    import onnx

    mx.onnx.export_model(
        f"{prefix}-symbol.json", f"{prefix}-0000.params", onnx_file_path=out, **kwargs
    )
    model = onnx.load(out)
    onnx.checker.check_model(model)
    weights = {init.name for init in model.graph.initializer}
    dims = [
        [
            d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
            for d in graph_input.type.tensor_type.shape.dim
        ]
        for graph_input in model.graph.input
        if graph_input.name not in weights
    ]
    return sorted({node.op_type for node in model.graph.node}), dims


def _stage(
    result: dict[str, Any], name: str, prefix: str, kwargs: dict[str, Any], tmp: str
) -> None:
    try:
        ops, dims = _convert(prefix, kwargs, os.path.join(tmp, f"{name}.onnx"))
        result["stages"][name] = {
            "ok": True,
            "onnx_ops": ops,
            "input_dims": dims,
            "kwargs": repr(kwargs),
        }
    except Exception as exc:  # noqa: BLE001 - the exception is the evidence
        result["stages"][name] = {
            "ok": False,
            "exception": exception_info(exc),
            "kwargs": repr(kwargs),
        }


def _keywords(job: dict[str, Any]) -> dict[str, Any]:
    """The exporter the call names, called on a one-operator graph with the call's unknown
    keywords, then without them."""
    exporter = mx.contrib.onnx.export_model if "contrib" in job.get("callee", "") else None
    exporter = exporter or mx.onnx.export_model
    sym = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    params = {"fc_weight": mx.nd.ones((2, 4)), "fc_bias": mx.nd.zeros((2,))}
    keywords: dict[str, Any] = dict(job["keywords"])
    result: dict[str, Any] = {"status": "ok", "stages": {}, "exporter": exporter.__module__}
    with tempfile.TemporaryDirectory() as tmp:
        for name, extra in (("keyword-call", keywords), ("keyword-free", {})):
            try:
                exporter(
                    sym, params, [(1, 4)], np.float32, os.path.join(tmp, f"{name}.onnx"), **extra
                )
                result["stages"][name] = {"ok": True, "kwargs": repr(extra)}
            except Exception as exc:  # noqa: BLE001 - the exception is the evidence
                info = exception_info(exc)
                result["stages"][name] = {"ok": False, "exception": info, "kwargs": repr(extra)}
    return result


def run(job: dict[str, Any]) -> dict[str, Any]:
    try:
        import onnx  # noqa: F401
    except ImportError as exc:
        return {"status": "no-onnx", "reason": f"onnx does not import here: {exc}"}
    if job.get("keywords"):
        return _keywords(job)
    spec = Spec(job)
    probe = spec.make()
    if not isinstance(probe, gluon.HybridBlock):
        return {"status": "not-hybrid", "reason": f"{job['class']} is not a HybridBlock"}
    onnx_args: dict[str, Any] = job.get("onnx") or {}
    given, value = _literal(onnx_args, "in_shapes")
    call_shapes = _shape_list(value) if given else None
    if call_shapes is not None and len(call_shapes) == n_inputs(probe):
        spec.job["input_shapes"] = spec.job.get("input_shapes") or [list(s) for s in call_shapes]
    error = find_input(spec, mx.cpu())
    if error is not None:
        return {"status": "no-input", "reason": f"no input shape ran imperatively ({error})"}
    result: dict[str, Any] = {"status": "ok", "stages": {}, "input_shapes": spec.shapes}
    mx.random.seed(0)
    block = spec.make()
    block.initialize(ctx=mx.cpu())
    block(*spec.inputs(mx.cpu()))  # imperatively first: deferred parameter shapes are set
    block.hybridize()
    block(*spec.inputs(mx.cpu()))
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "net")
        block.export(prefix)
        with open(f"{prefix}-symbol.json", encoding="utf-8") as handle:
            nodes = json.load(handle)["nodes"]
        result["graph_ops"] = sorted({n["op"] for n in nodes if n["op"] != "null"})
        assert spec.shapes is not None
        probed = {"in_shapes": [tuple(s) for s in spec.shapes], "in_types": np.float32}
        _stage(result, "onnx-probed", prefix, probed, tmp)
        if job.get("export"):
            call: dict[str, Any] = {}
            for key in ("in_shapes", "in_types", "dynamic", "dynamic_input_shapes"):
                given, value = _literal(onnx_args, key)
                if given:
                    call[key] = value
                elif key in onnx_args:
                    return dict(result, status="not-literal", reason=f"`{key}` is not a literal")
            _stage(result, "onnx-call", prefix, call, tmp)
    return result
