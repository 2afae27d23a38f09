"""MXL705 parameter-format-mismatch: checks a parameter file read by an API that cannot read the
format the project's writer of that file used (`save_parameters` read by
`SymbolBlock.imports`, an `export` read by `load_parameters`, ...).

The functions after the class decide and word its findings; the family's checker
(`rules/lifecycle/checker.py`) runs them, on the files `_files.py` matches (in one file, and
across the files of a run for plain paths). Its tests are the examples below (run by
`tests/test_rule_examples.py`), `tests/test_lifecycle.py` and `tests/snapshots/MXL705.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.lifecycle._files import ACCEPTS, Written

#: How each format names the parameters, for messages.
_NAMING = {
    "gluon": "structural names (`0.weight`)",
    "legacy": "names relative to the block's prefix (`dense0_weight`)",
    "full": "the parameters' full names (`hybridsequential0_dense0_weight`)",
    "checkpoint": "`arg:`/`aux:` names",
}
#: What reading goes wrong with, per reader.
_FAILS = {
    "load_parameters": "MXNet 1.9.1 raises \"Parameter '...' is missing in file\"",
    "imports": "MXNet 1.9.1 raises \"Parameter '...' is missing in file\"",
    "checkpoint": (
        "MXNet 1.9.1 raises `ValueError: not enough values to unpack` (it splits each name at `:`)"
    ),
    "collect_load": "MXNet 1.9.1 raises \"Parameter '...' is missing in file\"",
}
#: What to do instead, per reader and format.
_ADVICE = {
    ("load_parameters", "checkpoint"): (
        "load the exported model with `SymbolBlock.imports`, or write the file with "
        "`save_parameters`"
    ),
    ("load_parameters", "full"): "write the file with `save_parameters`",
    ("imports", "gluon"): (
        "write the graph and its parameters with `export()` and import those, or load the "
        "file into the network with `load_parameters`"
    ),
    ("checkpoint", "gluon"): "write the model with `export()` (symbol and `arg:`/`aux:` names)",
    ("collect_load", "gluon"): "read it with `load_parameters`",
}


class ParameterFormatMismatch(Rule):
    code = "MXL705"
    name = "parameter-format-mismatch"
    mxnet = "1"
    fixable = "safe"
    runtime = Runtime("raise", loud=True, error=r"is missing in file|not enough values to unpack")
    message = (
        "`{reader}` reads `{path}`, which `{writer}` (line {line}{where}) writes with "
        "{naming}: {fails}; {advice}"
    )
    what = """
        Checks a parameter file read by an API that cannot read the format the project's
        writer of that file (the same path, in this file or another file of the run) used.
    """
    why = """
        MXNet 1.x has four parameter file formats, and each reader takes only some (each pair
        checked on MXNet 1.9.1). `save_parameters` writes structural names (`0.weight`), which
        `load_parameters` reads and `SymbolBlock.imports`, `collect_params().load` and
        `mx.model.load_checkpoint` do not; `export` and `save_checkpoint` write `arg:`/`aux:`
        names, which `SymbolBlock.imports` and `load_checkpoint` read and `load_parameters`
        does not; `collect_params().save` writes full names, which `load_parameters` does not
        read. A wrong pair raises when the model is loaded — in the serving code, long after
        training wrote the file. Mixing the deprecated `save_params`/`load_params` with
        `save_parameters`/`load_parameters` is not reported: in 1.9.1 `load_params` is
        `load_parameters`, which reads `save_params` files through its legacy fallback.
        Receivers that may be a Module (whose `save_params`/`load_params` use `arg:`/`aux:`
        names) or a Gluon block are not judged.
    """
    example = """
        net.save_parameters("model.params")
        ...
        deployed = gluon.SymbolBlock.imports("model-symbol.json", ["data"], "model.params")
    """
    use_instead = """
        net.export("model")
        ...
        deployed = gluon.SymbolBlock.imports("model-symbol.json", ["data"], "model-0000.params")
    """
    fix_safety = """
        `net.collect_params().load(f, ...)` of a file `save_parameters` or `save_params` wrote
        becomes `net.load_parameters(f, ...)`, which takes the same first four arguments and
        reads that format; the fix is safe. The other pairs need a change of the file's writer
        and have no fix.
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
net.save_parameters("mlp.params")
net.export("mlp")
deployed = gluon.SymbolBlock.imports("mlp-symbol.json", ["data"], "mlp.params")
""",
            line=11,
        ),
        Example(
            """from mxnet import gluon


def finetune(net, prefix):
    net.export(prefix)
    student = gluon.nn.HybridSequential()
    student.add(gluon.nn.Dense(10))
    student.load_parameters(prefix + "-0000.params")
""",
            line=8,
        ),
        Example(
            """from mxnet import gluon

net = gluon.nn.Dense(10)
net.initialize()
net.save_parameters("dense.params")
clone = gluon.nn.Dense(10)
clone.collect_params().load("dense.params", ctx=None)
""",
            line=7,
            expected_fix="""from mxnet import gluon

net = gluon.nn.Dense(10)
net.initialize()
net.save_parameters("dense.params")
clone = gluon.nn.Dense(10)
clone.load_parameters("dense.params", ctx=None)
""",
        ),
        Example(
            """import mxnet as mx


def serve(net, epoch):
    net.save_parameters("model-%04d.params" % epoch)
    return mx.model.load_checkpoint("model", epoch)
""",
            line=6,
        ),
    )

    valid = (
        """from mxnet import gluon

net = gluon.nn.Dense(10)
net.initialize()
net.save_parameters("dense.params")
clone = gluon.nn.Dense(10)
clone.load_parameters("dense.params")
""",
        # 1.9.1's load_parameters reads what the deprecated save_params wrote, and load_params
        # is load_parameters.
        """from mxnet import gluon

net = gluon.nn.HybridSequential()
with net.name_scope():
    net.add(gluon.nn.Dense(10))
net.initialize()
net.save_params("old.params")
net.save_parameters("new.params")
clone = gluon.nn.HybridSequential()
with clone.name_scope():
    clone.add(gluon.nn.Dense(10))
clone.load_parameters("old.params")
clone.load_params("new.params")
""",
        """import mxnet as mx
from mxnet import gluon

net = gluon.nn.Dense(10)
net.initialize()
net.hybridize()
net(mx.nd.ones((1, 20)))
net.export("dense", epoch=2)
deployed = gluon.SymbolBlock.imports("dense-symbol.json", ["data"], "dense-0002.params")
sym, args, aux = mx.model.load_checkpoint("dense", 2)
""",
        # Different files.
        """from mxnet import gluon


def save(net):
    net.save_parameters("a.params")


def load(net):
    net.load_parameters("b.params")
    return gluon.SymbolBlock.imports("c-symbol.json", ["data"], "c-0000.params")
""",
        # A Module's save_params writes arg:/aux: names, which load_checkpoint reads.
        Valid(
            """import mxnet as mx

mod = mx.mod.Module(mx.sym.var("data"), label_names=None)
mod.bind([("data", (1, 2))], for_training=False)
mod.init_params()
mod.save_params("m-0000.params")
sym, arg_params, aux_params = mx.model.load_checkpoint("m", 0)
"""
        ),
        # One of the writers of the path writes a format the reader takes.
        """from mxnet import gluon


def save(net, legacy):
    if legacy:
        net.collect_params().save("w.params")
    else:
        net.save_parameters("w.params")


def load(net):
    net.load_parameters("w.params")
""",
    )


def judge(reader: str, writers: list[Written]) -> Written | None:
    """The writer whose format `reader` cannot read, when none of the file's writers writes
    one it can; None otherwise."""
    accepted = ACCEPTS.get(reader)
    params = [w for w in writers if w.fmt != "symbol"]
    if accepted is None or not params or any(w.fmt in accepted for w in params):
        return None
    return params[0]


def wording(reader: str, writer: Written) -> dict[str, str]:
    """The message's parts for a reader and the writer it cannot read."""
    fmt = writer.fmt
    advice = _ADVICE.get((reader, fmt)) or _ADVICE.get((reader, "gluon"), "")
    if reader == "load_parameters" and fmt == "full":
        advice = _ADVICE[("load_parameters", "full")]
    return {"naming": _NAMING[fmt], "fails": _FAILS[reader], "advice": advice}
