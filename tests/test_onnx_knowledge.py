"""The ONNX exporter facts rules read are the exporter's own: regenerated from the installed
MXNet and onnx, they match the committed data file; and what rules ask of them says what the
exporter does."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mxlint.knowledge.api import VERSION
from mxlint.knowledge.onnx import onnx_facts


def _installed(dist: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:
        return None


@pytest.mark.skipif(
    _installed("mxnet") != VERSION or _installed("onnx") is None,
    reason=f"needs mxnet=={VERSION} and onnx installed",
)
def test_committed_onnx_facts_match_the_installed_exporter() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "mxlint.knowledge.generate_onnx", "--check"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"matches MXNet {VERSION}" in run.stdout


def test_converters_per_opset_fall_back_as_the_exporter_does() -> None:
    facts = onnx_facts()
    assert set(facts.converters) == {12, 13}
    assert facts.converted("Concat") and facts.converted("Concat", 12)
    assert facts.converted("softmax", 11)  # below 12 the exporter uses 12
    assert facts.converted("softmax", 17)  # falls back to the newest opset at or below
    assert not facts.converted("GroupNorm") and not facts.converted("broadcast_maximum")
    assert facts.converted("broadcast_minimum") and facts.converted("where")


def test_spellings_name_the_graph_operator() -> None:
    functions = onnx_facts().functions
    assert functions["concat"] == ("Concat",)  # an alias: the node records the real name
    assert functions["split"] == ("SliceChannel",)
    assert functions["contrib.box_nms"] == ("_contrib_box_nms",)
    assert functions["identity"] == ("_copy",)
    assert functions["contrib.foreach"] == ("_foreach",)
    assert "random.uniform" not in functions  # builds _random_ or _sample_ by its arguments


def test_dynamic_operators_and_layers() -> None:
    facts = onnx_facts()
    assert facts.dynamic == {
        "_contrib_boolean_mask": "data-dependent-shape",
        "_cond": "control-flow",
        "_foreach": "control-flow",
        "_while_loop": "control-flow",
    }
    assert facts.layers["mxnet.gluon.nn.GroupNorm"] == ("GroupNorm",)
    assert facts.layers["mxnet.gluon.nn.Dense"] == ("FullyConnected",)
    assert facts.layers["mxnet.gluon.contrib.nn.SyncBatchNorm"] == ("_contrib_SyncBatchNorm",)


def test_export_model_signature() -> None:
    facts = onnx_facts()
    assert facts.export_params[:5] == ("sym", "params", "in_shapes", "in_types", "onnx_file_path")
    assert "opset_version" not in facts.export_params
    assert facts.export_defaults["dynamic"] is False
