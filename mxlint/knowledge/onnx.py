"""What MXNet 1.9.1's ONNX exporter converts, as generated from the exporter itself
(`generate_onnx.py`), loaded once, when first asked.

Rules ask here which operator a `F.<name>` call or a Gluon layer puts in the graph, whether the
exporter has a converter for it at an opset, which operators make shapes dynamic, and which
parameters `mx.onnx.export_model` takes. `tests/test_onnx_knowledge.py` regenerates the file
from the installed MXNet and onnx and fails on any difference.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mxlint.knowledge import store
from mxlint.knowledge.api import VERSION

#: The lowest opset the exporter converts for: it raises a lower one to this.
LOWEST_OPSET = 12


@dataclass(frozen=True)
class OnnxFacts:
    """What the ONNX exporter of one MXNet release converts, generated from it."""

    version: str
    #: opset -> operators with a converter registered at that opset
    converters: Mapping[int, frozenset[str]]
    #: `F.` spelling (`concat`, `contrib.box_nms`) -> the operators a call puts in the graph
    functions: Mapping[str, tuple[str, ...]]
    #: operator -> "control-flow" or "data-dependent-shape"
    dynamic: Mapping[str, str]
    #: `mxnet.gluon.nn.GroupNorm` -> the operators the layer puts in the graph
    layers: Mapping[str, tuple[str, ...]]
    #: `mx.onnx.export_model`'s parameters, in order, and their defaults
    export_params: tuple[str, ...]
    export_defaults: Mapping[str, Any]

    def converted(self, op: str, opset: int | None = None) -> bool:
        """Whether the exporter converts `op` at `opset` (None: the installed onnx's, the
        newest): as `MXNetGraph.convert_layer` looks it up, from the opset down to 12."""
        top = max(opset, LOWEST_OPSET) if opset is not None else max(self.converters, default=0)
        return any(op in ops for version, ops in self.converters.items() if version <= top)

    def unconverted(self, ops: tuple[str, ...], opset: int | None = None) -> tuple[str, ...]:
        return tuple(op for op in ops if not self.converted(op, opset))


def parse(data: Mapping[str, Any]) -> OnnxFacts:
    return OnnxFacts(
        version=data["mxnet"],
        converters={int(k): frozenset(v) for k, v in data["converters"].items()},
        functions={k: tuple(v) for k, v in data["functions"].items()},
        dynamic=dict(data["dynamic"]),
        layers={k: tuple(v) for k, v in data["layers"].items()},
        export_params=tuple(data["export_model"]["params"]),
        export_defaults=dict(data["export_model"]["defaults"]),
    )


def data_file(version: str = VERSION) -> str:
    return f"data/mxnet_onnx_{version}.json"


@functools.cache
def onnx_facts(version: str = VERSION) -> OnnxFacts:
    """The exporter facts of one MXNet release, read from the package once per process."""
    import json  # only by runs that ask about ONNX export

    return parse(json.loads(store.read_text(data_file(version))))
