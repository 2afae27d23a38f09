"""The lean position computation must agree with libcst's PositionProvider."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from mxlint.positions import node_ranges
from mxlint.walker import TreeIndex, iter_nodes, use_index


@pytest.fixture(params=["plain", "indexed"])
def indexed(request):
    """Every position test also runs with the file's tree index in use, as the engine runs:
    then nodes are placed by generating only their innermost statement."""

    def use(module: cst.Module) -> None:
        if request.param == "indexed":
            use_index(TreeIndex(module))

    yield use
    use_index(None)


SOURCES = [
    "import mxnet as mx\n\nclass Net(mx.gluon.HybridBlock):\n    @staticmethod\n"
    "    def hybrid_forward(F, x):\n        if x.sum() > 0:\n            return x\n"
    "        return F.relu(x)  # comment\n",
    "x = (1 +\n     2)\r\ny = [a for a in range(3)]\r\n",
    "def f(a, *, b=1):\n\tif a:\n\t\treturn b\n\treturn 'x\\ny'\n",
    '"""doc\nstring"""\nwith open("f") as fh, open("g") as gh:\n    pass\n',
    # Nested blocks of every kind, decorators with comments between them, `elif` chains,
    # bodies on the header's line, async statements.
    "class A:\n    @dec\n    # c\n    @d2(1)\n    async def f(self):\n        if a:\n"
    "            x = (1,\n                 2)\n        elif b:\n            y = 2  # t\n"
    "        elif c: z = 3\n        else:\n            try:\n                w = 1\n"
    "            except E as e:\n                pass\n            else:\n"
    "                q = 1\n            finally:\n                r = 2\n"
    "        async with a as b:\n            await c\n        async for i in x:\n"
    "            pass\n        else:\n            s = 1\n        while 0:\n            t = 1\n",
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
        assert ours[node] == ((rng.start.line, rng.start.column), (rng.end.line, rng.end.column)), (
            type(node).__name__,
            module.code_for_node(node),
        )


def _sources_with_fixtures() -> list[str]:
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "fixtures"
    files = sorted(root.rglob("*.py"))
    return SOURCES + [
        "@dec\n# between\n@other(1)\ndef f():\n    pass\nx = 1; y = 2\nclass A: pass\n# tail\n",
        *(p.read_text(encoding="utf-8") for p in files),
    ]


@pytest.mark.parametrize("source", _sources_with_fixtures())
def test_statement_by_statement_positions_equal_the_whole_module_pass(source, indexed):
    module = cst.parse_module(source)
    nodes = [n for n in iter_nodes(module) if n is not module]
    whole = node_ranges(module, nodes)
    indexed(module)
    fast = node_ranges(module, nodes, source)
    assert fast == whole
    # and for a handful of nodes, as findings ask for them
    few = nodes[len(nodes) // 2 :: max(1, len(nodes) // 5)]
    assert node_ranges(module, few, source) == {n: whole[n] for n in few}


@pytest.mark.parametrize(
    "source",
    SOURCES
    + [
        "def main():\n    for _ in range(5):\n        with record():\n            loss = f(x)\n"
        "        loss.backward()\n    else:\n        pass\n    try:\n        a = 1\n"
        "    except E:\n        b = 2\n    finally:\n        c = 3\n\n\nif __name__ == '__main__':\n"
        "    main()\n"
    ],
)
def test_a_node_asked_alone_gets_the_range_it_gets_among_all(source, indexed):
    """A compound statement ends where its last inner statement ends, asked alone or not."""
    module = cst.parse_module(source)
    nodes = list(iter_nodes(module))
    together = node_ranges(module, nodes)
    indexed(module)
    for node in nodes:
        assert node_ranges(module, [node]) == {node: together[node]}, type(node).__name__
        if node is not module:
            assert node_ranges(module, [node], source) == {node: together[node]}


@pytest.mark.parametrize("source", _sources_with_fixtures())
def test_indexed_files_place_nodes_by_their_innermost_statement(source):
    """The engine's path: no fallback to generating whole top-level statements."""
    from mxlint import positions

    module = cst.parse_module(source)
    nodes = [n for n in iter_nodes(module) if n is not module]
    whole = node_ranges(module, nodes)
    index = TreeIndex(module)
    use_index(index)
    try:
        assert positions._innermost(module, set(nodes), source, index) == whole
        # A compound statement's header nodes, asked alone, are placed from the header
        # without its blocks, at the rows and columns the whole module gives them.
        for stmt in nodes:
            if isinstance(getattr(stmt, "body", None), cst.IndentedBlock):
                first, body = index.index_of(stmt), index.index_of(stmt.body)
                header = [n for n in nodes if first < index.index_of(n) < body]
                if header:
                    assert node_ranges(module, header, source) == {n: whole[n] for n in header}
    finally:
        use_index(None)
