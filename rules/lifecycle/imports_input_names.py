"""MXL704 imports-input-names: checks `SymbolBlock.imports(symbol_file, input_names, ...)` on a
graph a Gluon `export()` of the same project wrote, with input names other than the ones
`export` gives the inputs.

The functions after the class decide and word its findings; the family's checker
(`rules/lifecycle/checker.py`) runs them, on the files `_files.py` matches (in one file, and
across the files of a run for plain paths). Its tests are the examples below (run by
`tests/test_rule_examples.py`), `tests/test_lifecycle.py` and `tests/snapshots/MXL704.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.lifecycle._files import Written


class ImportsInputNames(Rule):
    code = "MXL704"
    name = "imports-input-names"
    mxnet = "1"
    fixable = "unsafe"
    runtime = Runtime("raise", loud=True, error=r"is missing in file|differ after the round trip")
    message = (
        "`SymbolBlock.imports` names the inputs {given}, but `{writer}` (line {line}{where}) "
        "wrote the graph with its inputs named {expected}: {consequence}"
    )
    what = """
        Checks `SymbolBlock.imports(symbol_file, input_names, ...)` on a graph that a Gluon
        `export()` of the same project wrote (the same path, in this file or another file
        of the run), with input names other than the ones `export` gives the inputs.
    """
    why = """
        `HybridBlock.export` names the graph's inputs itself: `data` when the network takes one
        input, `data0`, `data1`, ... in the order of the forward's arguments when it takes
        several (MXNet 1.9.1; nested lists are flattened in order). `imports` looks the given
        names up in the graph: a name the graph does not have leaves the real input as a free
        variable, which `imports` takes for a parameter, and loading the parameter file raises
        `Parameter 'data' is missing in file`. Names listed in another order
        (`["data1", "data0"]`) load, but the imported block then feeds each array to the other
        input: a shape error at best, silently wrong outputs when the shapes agree. Graphs
        written by `export_block` (gluon-cv) count as exports; graphs of a SymbolBlock or of
        the Module API keep their own names and are not judged, nor are names that are not
        literal strings.
    """
    example = """
        net.export("model")
        ...
        deployed = gluon.SymbolBlock.imports("model-symbol.json", ["input"], "model-0000.params")
    """
    use_instead = """
        net.export("model")
        ...
        deployed = gluon.SymbolBlock.imports("model-symbol.json", ["data"], "model-0000.params")
    """
    fix_safety = """
        The fix writes the names `export` gave the inputs, in order. It is unsafe: with names in
        another order, the code that calls the imported block may pass its arrays in that
        order, which the fix does not change.
    """

    invalid = (
        Example(
            """import mxnet as mx
from mxnet import gluon

net = gluon.nn.HybridSequential()
net.add(gluon.nn.Dense(10))
net.initialize()
net.hybridize()
net(mx.nd.ones((1, 20)))
net.export("mlp")
deployed = gluon.SymbolBlock.imports("mlp-symbol.json", ["input"], "mlp-0000.params")
""",
            line=10,
            expected_fix="""import mxnet as mx
from mxnet import gluon

net = gluon.nn.HybridSequential()
net.add(gluon.nn.Dense(10))
net.initialize()
net.hybridize()
net(mx.nd.ones((1, 20)))
net.export("mlp")
deployed = gluon.SymbolBlock.imports("mlp-symbol.json", ["data"], "mlp-0000.params")
""",
        ),
        Example(
            """import os

from mxnet import gluon


def roundtrip(net, image, mask, folder):
    prefix = os.path.join(folder, "seg")
    net.hybridize()
    net(image, mask)
    net.export(prefix, epoch=3)
    return gluon.SymbolBlock.imports(
        prefix + "-symbol.json", ["data1", "data0"], prefix + "-0003.params"
    )
""",
            line=12,
        ),
        Example(
            """import mxnet as mx
from mxnet import gluon


def save(net, args):
    net.hybridize()
    net(mx.nd.ones((1, 3)), mx.nd.ones((1, 4)))
    net.export(args.prefix)


def load(args):
    return gluon.SymbolBlock.imports(
        "{}-symbol.json".format(args.prefix), ["data"], "{}-0000.params".format(args.prefix)
    )
""",
            line=13,
        ),
    )

    valid = (
        """import mxnet as mx
from mxnet import gluon

net = gluon.nn.Dense(10)
net.initialize()
net.hybridize()
net(mx.nd.ones((1, 20)))
net.export("mlp")
deployed = gluon.SymbolBlock.imports("mlp-symbol.json", ["data"], "mlp-0000.params")
""",
        # Several inputs, in order.
        """from mxnet import gluon


def roundtrip(net, image, mask):
    net.hybridize()
    net(image, mask)
    net.export("seg")
    return gluon.SymbolBlock.imports("seg-symbol.json", ["data0", "data1"], "seg-0000.params")
""",
        # No export of this project wrote the file: its names are whatever its author chose.
        """from mxnet import gluon

net = gluon.SymbolBlock.imports("resnet-symbol.json", ["input_1"], "resnet-0000.params")
""",
        # A SymbolBlock re-exported keeps the input names of its own graph.
        """import mxnet as mx
from mxnet import gluon

block = gluon.SymbolBlock.imports("a-symbol.json", ["image"], "a-0000.params")
block.hybridize()
block(mx.nd.ones((1, 3)))
block.export("b")
again = gluon.SymbolBlock.imports("b-symbol.json", ["image"], "b-0000.params")
""",
        # Names computed at run time are not judged.
        """from mxnet import gluon


def load(net, names):
    net.export("m")
    return gluon.SymbolBlock.imports("m-symbol.json", names, "m-0000.params")
""",
        # A graph the Module API wrote names its inputs as its symbol does.
        Valid(
            """import mxnet as mx

sym = mx.sym.FullyConnected(mx.sym.var("pixels"), num_hidden=10)
mod = mx.mod.Module(sym, data_names=["pixels"], label_names=None)
mod.bind([("pixels", (1, 20))], for_training=False)
mod.init_params()
mod.save_checkpoint("fc", 0)
net = mx.gluon.SymbolBlock.imports("fc-symbol.json", ["pixels"], "fc-0000.params")
"""
        ),
    )


def expected_names(count: int) -> tuple[str, ...]:
    """The input names `export` writes for a network of `count` inputs."""
    return ("data",) if count == 1 else tuple(f"data{i}" for i in range(count))


def judge(names: tuple[str, ...], writer: Written) -> tuple[tuple[str, ...], str] | None:
    """(the names `export` wrote, what goes wrong) when `names` cannot be them; None when
    they can (or nothing is known)."""
    if not names or not writer.gluon_graph:
        return None
    count = len(names)
    if names == expected_names(count):
        if writer.inputs is not None and writer.inputs >= 2 and count < writer.inputs:
            # Called with more positional arrays than names: at least that many inputs.
            expected = expected_names(writer.inputs)
            return expected, _missing(expected[0])
        return None
    if count >= 2 and sorted(names) == sorted(expected_names(count)):
        expected = expected_names(count)
        return expected, (
            "listed in another order, the imported block feeds each array to another input "
            "(a shape error, or silently wrong outputs when the shapes agree); list them in "
            "the order the network takes its inputs"
        )
    expected = expected_names(count)
    graph = set(expected_names(writer.inputs)) if writer.inputs else {"data", "data0"}
    missing = next((n for n in expected if n in graph), expected[0])
    return expected, _missing(missing)


def _missing(name: str) -> str:
    return (
        f"`imports` takes the graph's `{name}` for a parameter and MXNet raises "
        f"\"Parameter '{name}' is missing in file\""
    )


def spelled(names: tuple[str, ...]) -> str:
    return "[" + ", ".join(f'"{n}"' for n in names) + "]"
