"""Verdicts of the ONNX checks (MXL9xx): read the export harness's stages (`onnx_export.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mxlint.rule import FindingKey
from mxlint.verify.model import Verdict, inconclusive
from mxlint.verify.plan import Item


def _text(stage: dict[str, Any]) -> str:
    exc = stage.get("exception", {})
    return f"{exc.get('type', 'Exception')}: {str(exc.get('message', ''))[:300]}"


def verdicts(items: Sequence[Item], payload: dict[str, Any]) -> dict[FindingKey, Verdict]:
    if payload.get("status") != "ok":
        reason = payload.get("reason") or payload.get("exception", {}).get("message", "")
        return {it.key: inconclusive(f"the export could not be run: {reason}") for it in items}
    stages = payload.get("stages", {})
    shapes = payload.get("input_shapes")
    out: dict[FindingKey, Verdict] = {}
    for it in items:
        data = it.finding.data or {}
        probed = stages.get("onnx-probed", {})
        keywords = data.get("keywords")
        if isinstance(keywords, dict):
            out[it.key] = _keyword_verdict(stages, keywords)
            continue
        if data.get("export") and it.finding.code == "MXL904":
            out[it.key] = _batch_verdict(stages, data.get("feed_batch"))
            continue
        if data.get("export"):
            out[it.key] = _call_verdict(stages, shapes)
            continue
        listed = data.get("ops", [])
        ops = [str(op) for op in listed] if isinstance(listed, list) else []
        present = [op for op in ops if op in payload.get("graph_ops", [])]
        if not present:
            out[it.key] = inconclusive(
                f"the exported graph does not hold {', '.join(ops)} (input shape {shapes})"
            )
        elif probed.get("ok"):
            out[it.key] = Verdict(
                "refuted",
                evidence=f"`mx.onnx.export_model` converted the graph holding {present[0]} "
                f"(input shape {shapes}) and `onnx.checker.check_model` accepted it",
            )
        else:
            text = _text(probed)
            if it.finding.code == "MXL901" and not any(f"op type {op} " in text for op in ops):
                out[it.key] = inconclusive(f"the export failed on another operator first: {text}")
            else:
                out[it.key] = Verdict(
                    "confirmed",
                    evidence=f"`mx.onnx.export_model` on the exported block (input shape "
                    f"{shapes}, graph holding {present[0]}) raised {text}",
                )
    return out


def _call_verdict(stages: dict[str, Any], shapes: Any) -> Verdict:
    call, probed = stages.get("onnx-call"), stages.get("onnx-probed", {})
    if call is None:
        return inconclusive("the export call's arguments were not run")
    if call.get("ok"):
        return Verdict(
            "refuted",
            evidence=f"`mx.onnx.export_model` with the call's arguments ({call.get('kwargs')}) "
            "converted the block and `onnx.checker.check_model` accepted it",
        )
    if not probed.get("ok"):
        return inconclusive(
            "the export fails with the shapes the block runs on too "
            f"({shapes}: {_text(probed)}): the arguments are not shown to be the cause"
        )
    return Verdict(
        "confirmed",
        evidence=f"with the call's arguments ({call.get('kwargs')}) `mx.onnx.export_model` "
        f"raised {_text(call)}; with one shape per input the block runs on ({shapes}) it "
        "exported and passed `onnx.checker.check_model`",
    )


def _batch_verdict(stages: dict[str, Any], fed: object) -> Verdict:
    """MXL904: the batch dimension the export call's arguments write into the ONNX graph's
    inputs, against the batch size the project runs it on. onnxruntime rejects any fed
    dimension that differs from a fixed one (it cannot be installed beside MXNet 1.9.1: the
    releases matching onnx 1.14 need numpy>=1.24), so the graph's declared dimensions are the
    evidence."""
    call = stages.get("onnx-call")
    if call is None:
        return inconclusive("the export call's arguments were not run")
    if not call.get("ok"):
        return inconclusive(f"the export call itself fails: {_text(call)}")
    dims = call.get("input_dims") or []
    leads = [d[0] if d else None for d in dims]
    fixed = [lead for lead in leads if isinstance(lead, int) and lead > 0]
    if fixed and len(fixed) == len(leads) and all(lead != fed for lead in fixed):
        return Verdict(
            "confirmed",
            evidence=f"with the call's arguments ({call.get('kwargs')}) the ONNX graph's inputs "
            f"have dimensions {dims}: the batch dimension is fixed at {fixed[0]}, and a batch "
            f"of {fed} does not match it",
        )
    return Verdict(
        "refuted",
        evidence=f"with the call's arguments ({call.get('kwargs')}) the ONNX graph's inputs "
        f"have dimensions {dims}: a batch of {fed} is accepted",
    )


def _keyword_verdict(stages: dict[str, Any], keywords: dict[str, Any]) -> Verdict:
    """MXL905: the exporter called with the keyword on a one-operator graph, and without it."""
    call, free = stages.get("keyword-call", {}), stages.get("keyword-free", {})
    names = ", ".join(f"`{k}=`" for k in keywords)
    if call.get("ok"):
        return Verdict("refuted", evidence=f"the exporter accepted {names} ({call.get('kwargs')})")
    text = _text(call)
    if not text.startswith("TypeError") or not all(k in text for k in keywords):
        return inconclusive(f"the exporter failed otherwise with {names}: {text}")
    if not free.get("ok"):
        return inconclusive(f"the exporter fails without {names} too: {_text(free)}")
    return Verdict(
        "confirmed",
        evidence=f"MXNet's exporter called on a one-operator graph with {names} "
        f"({call.get('kwargs')}) raised {text}; without it the graph exported",
    )
