"""MXL802 async-without-update-on-kvstore: checks for a `gluon.Trainer` whose kvstore can be
`dist_async` (a literal, or a kvstore made by `mx.kv.create("dist_async")`) created with
`update_on_kvstore=False`.

The function after the class decides and words its findings; the family's checker
(`rules/distributed/checker.py`) runs it. Its tests are the examples below (run by
`tests/test_rule_examples.py`), `tests/test_distributed.py` and `tests/snapshots/MXL802.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mxlint.checker import FixSpec, NodeEdit
from mxlint.rule import Example, Rule, Runtime
from mxlint.rules.distributed._analysis import LOCAL_UPDATE_METHODS

if TYPE_CHECKING:
    from mxlint.checker import FileContext
    from mxlint.rules.distributed._analysis import FileModel


class AsyncWithoutUpdateOnKvstore(Rule):
    code = "MXL802"
    name = "async-without-update-on-kvstore"
    message = (
        "`update_on_kvstore=False` with the `dist_async` kvstore{where}: MXNet 1.9.1 raises "
        '"ValueError: Please set update_on_kvstore=True when training in async mode" at the '
        "first `trainer.step()`; pass `update_on_kvstore=True` or leave it out (asynchronous "
        "training updates the weights on the servers)"
    )
    fixable = "unsafe"
    runtime = Runtime("dist", loud=True, error=r"update_on_kvstore=True when training in async")
    what = """
        Checks for a `gluon.Trainer` created with `update_on_kvstore=False` whose kvstore can
        be `dist_async`: the literal `kvstore="dist_async"`, a kvstore made by
        `mx.kv.create("dist_async")`, or a name that can only hold one of those (a choice
        between literals included). A kvstore type read from a command-line flag or a
        parameter is not known, and not reported.
    """
    why = """
        In asynchronous mode each server applies every gradient it receives as soon as it
        arrives, so the optimizer must run on the servers. MXNet 1.9.1's Trainer checks this
        lazily, when it creates its kvstore at the first `step()` (or `allreduce_grads()`,
        `update()`, `save_states()`), and raises `ValueError: Please set update_on_kvstore=True
        when training in async mode` — on every worker, after the job has started on the
        cluster. Setting `update_on_kvstore=False` usually comes with gradient clipping through
        `allreduce_grads()` + `update()`, which asynchronous training cannot do: the servers
        never hold the summed gradient.
    """
    example = """
        kv = mx.kv.create("dist_async")
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1},
                                kvstore=kv, update_on_kvstore=False)
    """
    use_instead = """
        kv = mx.kv.create("dist_async")
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1},
                                kvstore=kv)
    """
    fix_safety = """
        The fix passes `update_on_kvstore=True`: the optimizer then runs on the servers. It is
        unsafe because the optimizer state moves to the servers (`trainer.save_states()` no
        longer works on the workers), and it is not offered when the file calls
        `allreduce_grads()` or `update()` on the Trainer, which need local updates: that code
        must be rewritten for asynchronous training, or the kvstore made `dist_sync`.
    """
    invalid = (
        Example(
            """import mxnet as mx
from mxnet import gluon

net = gluon.nn.Dense(10)
net.initialize()
kv = mx.kv.create("dist_async")
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1},
                        kvstore=kv, update_on_kvstore=False)
""",
            line=8,
            expected_fix="""import mxnet as mx
from mxnet import gluon

net = gluon.nn.Dense(10)
net.initialize()
kv = mx.kv.create("dist_async")
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1},
                        kvstore=kv, update_on_kvstore=True)
""",
        ),
        Example(
            """from mxnet import gluon

KVSTORE = "dist_async"


def make_trainer(net, clip):
    return gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 1e-3},
                         KVSTORE, None, False)
""",
            line=8,
        ),
    )
    valid = (
        # The default lets MXNet choose (updates on the servers for dist_async).
        """import mxnet as mx
from mxnet import gluon

net = gluon.nn.Dense(10)
net.initialize()
kv = mx.kv.create("dist_async")
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, kvstore=kv)
""",
        # Synchronous training may update locally.
        """import mxnet as mx
from mxnet import gluon

net = gluon.nn.Dense(10)
net.initialize()
trainer = gluon.Trainer(net.collect_params(), "sgd", kvstore="dist_sync",
                        update_on_kvstore=False)
""",
        # The kvstore comes from a flag: its type is not known here.
        """import argparse
import mxnet as mx
from mxnet import gluon

parser = argparse.ArgumentParser()
parser.add_argument("--kvstore", default="device")
args = parser.parse_args()
net = gluon.nn.Dense(10)
net.initialize()
kv = mx.kv.create(args.kvstore)
trainer = gluon.Trainer(net.collect_params(), "sgd", kvstore=kv, update_on_kvstore=False)
""",
    )


def check(ctx: FileContext, model: FileModel) -> None:
    """Report each Trainer whose kvstore can be dist_async with update_on_kvstore=False."""
    local_updates = {
        id(t) for _, method, ts in model.trainer_calls if method in LOCAL_UPDATE_METHODS for t in ts
    }
    for trainer in model.trainers:
        if trainer.kvstore is None or "dist_async" not in trainer.kvstore:
            continue
        if trainer.update != frozenset({False}):
            continue
        arg = trainer.args["update_on_kvstore"]
        where = ""
        if trainer.kvstore != frozenset({"dist_async"}):
            where = " (one of the kvstores this Trainer can get)"
        fix = None
        if id(trainer) not in local_updates and type(arg.value) is cst.Name:
            fix = FixSpec(
                "unsafe",
                "Pass `update_on_kvstore=True`",
                (NodeEdit(arg.value, "True"),),
            )
        ctx.report(
            arg.node,
            AsyncWithoutUpdateOnKvstore,
            AsyncWithoutUpdateOnKvstore.format(where=where),
            fix=fix,
        )
