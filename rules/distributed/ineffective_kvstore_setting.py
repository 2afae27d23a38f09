"""MXL806 ineffective-kvstore-setting: checks for kvstore settings that cannot take effect with the
kvstore the file uses — gradient compression on a `local` kvstore (or none at all), and
`MXNET_KVSTORE_BIGARRAY_BOUND` set for a program whose kvstores never read it (`device`,
`nccl`, Horovod).

The function after the class decides and words its findings; the family's checker
(`rules/distributed/checker.py`) runs it. Its tests are the examples below (run by
`tests/test_rule_examples.py`), `tests/test_distributed.py` and `tests/snapshots/MXL806.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mxlint.rule import Example, Rule, Runtime
from mxlint.rules.distributed._analysis import environ_writes

if TYPE_CHECKING:
    from mxlint.checker import FileContext
    from mxlint.rules.distributed._analysis import FileModel

#: Kvstore types whose `set_gradient_compression` raises ("Gradient compression is not
#: supported for this type of kvstore"): only `device` and `dist*` types compress.
_NO_COMPRESSION = frozenset({"local", "nccl"})
#: Read by CommCPU (the `local` kvstore's reduction) and by the distributed kvstore
#: (partitioning big arrays across servers); the `device` and `nccl` kvstores never read it.
BIGARRAY_BOUND = "MXNET_KVSTORE_BIGARRAY_BOUND"
_IGNORE_BIGARRAY = frozenset({"device", "nccl", "none"})


class IneffectiveKvstoreSetting(Rule):
    code = "MXL806"
    name = "ineffective-kvstore-setting"
    message = "{detail}"
    runtime = Runtime("dist", loud=True, error=r"Gradient compression is not supported")
    what = """
        Checks for kvstore settings that cannot take effect with the kvstore the file uses.
        They are `compression_params` given to a `gluon.Trainer` whose kvstore is `local`, `nccl` or
        None, `kv.set_gradient_compression(...)` on a `local` or `nccl` kvstore, and
        `MXNET_KVSTORE_BIGARRAY_BOUND` set in `os.environ` by a program whose kvstores are all
        `device` or `nccl` (or that trains with Horovod's or BytePS's trainer and creates no
        kvstore). The kvstore types must be known from the file (literals).
    """
    why = """
        MXNet 1.9.1 compresses gradients only in the `device` and distributed kvstores:
        `set_gradient_compression` on a `local` or `nccl` kvstore raises "Gradient
        compression is not supported for this type of kvstore". A Trainer on one device with
        a non-distributed kvstore creates no kvstore at all, so its `compression_params` are
        silently dropped; with several devices and `kvstore="local"` it raises at the first
        `step()`. Either way the 2-bit compression the code asks for never happens.

        `MXNET_KVSTORE_BIGARRAY_BOUND` is read by the `local` kvstore (to reduce big arrays
        on several CPU threads) and by the distributed kvstores (to split big arrays across
        the servers); the `device` and `nccl` kvstores, and Horovod, never read it, so tuning
        it there changes nothing.
    """
    example = """
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1},
                                kvstore="local",
                                compression_params={"type": "2bit", "threshold": 0.5})
    """
    use_instead = """
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1},
                                kvstore="device",
                                compression_params={"type": "2bit", "threshold": 0.5})
    """
    fix_safety = """
        No automatic fix: compressing gradients needs another kvstore (`device` on several
        GPUs, `dist_*` across machines), which changes where gradients are summed.
    """
    invalid = (
        Example(
            """from mxnet import gluon

net = gluon.nn.Dense(2)
net.initialize()
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1},
                        kvstore="local",
                        compression_params={"type": "2bit", "threshold": 0.5})
""",
            line=7,
        ),
        Example(
            """import mxnet as mx

kv = mx.kv.create("local")
kv.set_gradient_compression({"type": "2bit", "threshold": 1.0})
""",
            line=4,
        ),
        Example(
            """import os

import mxnet as mx
from mxnet import gluon

os.environ["MXNET_KVSTORE_BIGARRAY_BOUND"] = "10000000"
net = gluon.nn.Dense(2)
net.initialize(ctx=[mx.gpu(0), mx.gpu(1)])
trainer = gluon.Trainer(net.collect_params(), "sgd", kvstore="nccl")
""",
            line=6,
        ),
    )
    valid = (
        """from mxnet import gluon

net = gluon.nn.Dense(2)
net.initialize()
trainer = gluon.Trainer(net.collect_params(), "sgd", kvstore="dist_sync",
                        compression_params={"type": "2bit", "threshold": 0.5})
""",
        """import mxnet as mx

kv = mx.kv.create("device")
kv.set_gradient_compression({"type": "2bit"})
""",
        # The kvstore comes from the command line.
        """import os

import mxnet as mx

os.environ["MXNET_KVSTORE_BIGARRAY_BOUND"] = "10000000"


def main(args):
    kv = mx.kv.create(args.kv_store)
    return kv
""",
        # Compression only when a flag asks for it, on a kvstore chosen elsewhere.
        """from mxnet import gluon


def make(net, args):
    compression = None if args.gc == "none" else {"type": args.gc}
    return gluon.Trainer(net.collect_params(), "sgd", compression_params=compression)
""",
    )


def check(ctx: FileContext, model: FileModel) -> None:
    for trainer in model.trainers:
        arg = trainer.args.get("compression_params")
        kinds = trainer.kvstore
        if arg is None or kinds is None or not kinds:
            continue
        if not kinds <= (_NO_COMPRESSION | {"none"}):
            continue
        if not _may_compress(model, arg.value):
            continue
        shown = " or ".join(f"`{k}`" if k != "none" else "None" for k in sorted(kinds))
        detail = (
            f"`compression_params` with the {shown} kvstore: MXNet 1.9.1 compresses gradients "
            "only in the `device` and `dist_*` kvstores; on one device this Trainer creates no "
            'kvstore and drops the setting, on several `local` raises "Gradient compression '
            'is not supported for this type of kvstore"; use `kvstore="device"` (several '
            "GPUs) or a `dist_*` kvstore, or remove the setting"
        )
        ctx.report(
            arg.node, IneffectiveKvstoreSetting, IneffectiveKvstoreSetting.format(detail=detail)
        )
    for call in model.calls:
        func = call.func
        if type(func) is not cst.Attribute or func.attr.value != "set_gradient_compression":
            continue
        kinds = model.kv_types(func.value)
        if not kinds or not kinds <= _NO_COMPRESSION:
            continue
        shown = " or ".join(f"`{k}`" for k in sorted(kinds))
        detail = (
            f"`set_gradient_compression()` on the {shown} kvstore: MXNet 1.9.1 raises "
            '"Gradient compression is not supported for this type of kvstore" (only the '
            "`device` and `dist_*` kvstores compress)"
        )
        ctx.report(call, IneffectiveKvstoreSetting, IneffectiveKvstoreSetting.format(detail=detail))
    _bigarray(ctx, model)


def _may_compress(model: FileModel, node: cst.BaseExpression) -> bool:
    """A dict literal (or `dict(...)`), or a name some assignment binds to one."""
    if type(node) is cst.Dict:
        return bool(node.elements)
    if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "dict":
        return bool(node.args)
    if type(node) is cst.IfExp:
        return _may_compress(model, node.body) or _may_compress(model, node.orelse)
    found = model.bindings_of(node)
    return bool(found) and any(
        b.value is not None and _may_compress(model, b.value) for b in found or ()
    )


def _bigarray(ctx: FileContext, model: FileModel) -> None:
    if BIGARRAY_BOUND not in ctx.source:
        return
    kinds: set[str] = set()
    for trainer in model.trainers:
        if trainer.kvstore is None:
            return
        kinds |= trainer.kvstore
    for _, created in model.creates:
        if created is None:
            return
        kinds |= created
    if not kinds and not model.collectives:
        return  # no kvstore in sight: the setting may be for a program this file starts
    if not kinds <= _IGNORE_BIGARRAY:
        return
    if kinds == {"none"} and not model.collectives:
        return
    reader = "Horovod's allreduce" if not kinds - {"none"} else _kinds_text(kinds - {"none"})
    for name, node in environ_writes(ctx):
        if name != BIGARRAY_BOUND:
            continue
        detail = (
            f"`{BIGARRAY_BOUND}` has no effect here: it is read by the `local` and `dist_*` "
            f"kvstores only, and this program uses {reader}; remove it, or tune the kvstore "
            "that is used"
        )
        ctx.report(node, IneffectiveKvstoreSetting, IneffectiveKvstoreSetting.format(detail=detail))


def _kinds_text(kinds: set[str]) -> str:
    names = sorted(kinds)
    return (
        "the "
        + " and ".join(f"`{k}`" for k in names)
        + (" kvstore" if len(names) == 1 else " kvstores")
    )
