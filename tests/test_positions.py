"""The lean position computation must agree with libcst's PositionProvider."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from mxlint.positions import node_ranges
from mxlint.walker import iter_nodes

SOURCES = [
    "import mxnet as mx\n\nclass Net(mx.gluon.HybridBlock):\n    @staticmethod\n"
    "    def hybrid_forward(F, x):\n        if x.sum() > 0:\n            return x\n"
    "        return F.relu(x)  # comment\n",
    "x = (1 +\n     2)\r\ny = [a for a in range(3)]\r\n",
    "def f(a, *, b=1):\n\tif a:\n\t\treturn b\n\treturn 'x\\ny'\n",
    '"""doc\nstring"""\nwith open("f") as fh, open("g") as gh:\n    pass\n',
]


@pytest.mark.parametrize("source", SOURCES)
def test_positions_match_position_provider(source):
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    expected = wrapper.resolve(PositionProvider)
    nodes = list(iter_nodes(module))
    ours = node_ranges(module, nodes)
    for node in nodes:
        rng = expected[node]
        assert ours[node] == ((rng.start.line, rng.start.column),
                              (rng.end.line, rng.end.column)), (type(node).__name__,
                                                                module.code_for_node(node))
