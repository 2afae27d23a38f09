"""MXL803 trainer-kvstore-conflict: checks for `gluon.Trainer` options and calls that MXNet 1.9.1
rejects in combination — `allreduce_grads()`/`update()` or `save_states()`/`load_states()` on a
Trainer whose distributed kvstore updates the weights on the servers, `update_on_kvstore=True`
with `kvstore=None`, and an `Optimizer` instance passed together with `optimizer_params`.

The function after the class decides and words its findings; the family's checker
(`rules/distributed/checker.py`) runs it. Its tests are the examples below (run by
`tests/test_rule_examples.py`), `tests/test_distributed.py` and `tests/snapshots/MXL803.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.distributed._analysis import LOCAL_UPDATE_METHODS, STATE_METHODS, is_dist

if TYPE_CHECKING:
    from mxlint.checker import FileContext
    from mxlint.rules.distributed._analysis import FileModel, TrainerCall


class TrainerKvstoreConflict(Rule):
    code = "MXL803"
    name = "trainer-kvstore-conflict"
    message = "{detail}"
    runtime = Runtime(
        "dist",
        loud=True,
        error=r"updated on kvstore is not supported|Cannot (save|load) states for distributed"
        r"|has no attribute 'is_capable'|optimizer_params must be None",
    )
    what = """
        Checks for `gluon.Trainer` options and calls that MXNet 1.9.1 rejects together. They
        are `trainer.allreduce_grads()` or `trainer.update()`, and `trainer.save_states()` or
        `load_states()`, on a Trainer whose kvstore is distributed (`dist_sync`,
        `dist_device_sync`, `dist_async`) while `update_on_kvstore` is left to its default or
        `True`; `update_on_kvstore=True` with `kvstore=None`; and an `Optimizer` instance
        (`mx.optimizer.SGD(...)`) passed with a non-empty `optimizer_params`. The kvstore must
        be known from the file (a literal, `mx.kv.create("dist_sync")`); a type read from a
        flag is not judged, nor is a file that sets `MXNET_UPDATE_ON_KVSTORE`.
    """
    why = """
        With a distributed kvstore and `update_on_kvstore` unset, MXNet 1.9.1 updates the
        weights on the servers (`MXNET_UPDATE_ON_KVSTORE` defaults to 1; `dist_async` forces
        it). The workers then never hold the reduced gradients nor the optimizer's state, and
        the Trainer refuses what needs them: `allreduce_grads()` and `update()` raise
        `AssertionError: allreduce_grads() when parameters are updated on kvstore is not
        supported`, and `save_states()`/`load_states()` raise `AssertionError: Cannot save
        states for distributed training` — typically at the first gradient clipping step or
        the first checkpoint of a job already running on a cluster. `update_on_kvstore=True`
        with `kvstore=None` fails at the first `step()` with `AttributeError: 'NoneType' object
        has no attribute 'is_capable'`, and an `Optimizer` instance with `optimizer_params`
        fails when the Trainer is created (`optimizer_params must be None if optimizer is an
        instance of Optimizer`).
    """
    example = """
        trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 1e-4},
                                kvstore="dist_sync")
        ...
        trainer.allreduce_grads()
        gluon.utils.clip_global_norm(grads, 1.0)
        trainer.update(batch_size)
    """
    use_instead = """
        trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 1e-4},
                                kvstore="dist_sync", update_on_kvstore=False)
        ...
        trainer.allreduce_grads()
        gluon.utils.clip_global_norm(grads, 1.0)
        trainer.update(batch_size)
    """
    fix_safety = """
        No automatic fix: updating locally (`update_on_kvstore=False`) changes where the
        optimizer state lives and what `save_states()` writes, and with `dist_async` it is not
        possible at all (MXL802).
    """
    invalid = (
        Example(
            """import mxnet as mx
from mxnet import autograd, gluon


def train(net, loader, loss_fn, batch_size):
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 1e-4},
                            kvstore="dist_sync")
    params = [p for p in net.collect_params().values() if p.grad_req != "null"]
    for data, label in loader:
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.allreduce_grads()
        gluon.utils.clip_global_norm([p.grad() for p in params], 1.0)
        trainer.update(batch_size)
""",
            line=13,
        ),
        Example(
            """import mxnet as mx
from mxnet import gluon

kv = mx.kv.create("dist_device_sync")


class Task:
    def __init__(self, net):
        self.trainer = gluon.Trainer(net.collect_params(), "sgd", kvstore=kv)

    def checkpoint(self, path):
        self.trainer.save_states(path + ".states")
""",
            line=12,
        ),
        Example(
            """import mxnet as mx
from mxnet import gluon

net = gluon.nn.Dense(2)
net.initialize()
opt = mx.optimizer.Adam(learning_rate=1e-3)
trainer = gluon.Trainer(net.collect_params(), opt, {"wd": 1e-4})
""",
            line=7,
        ),
        Example(
            """from mxnet import gluon

net = gluon.nn.Dense(2)
net.initialize()
trainer = gluon.Trainer(net.collect_params(), "sgd", kvstore=None, update_on_kvstore=True)
""",
            line=5,
        ),
    )
    valid = (
        """import mxnet as mx
from mxnet import gluon


def step(net, batch_size):
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 1e-4},
                            kvstore="dist_sync", update_on_kvstore=False)
    trainer.allreduce_grads()
    trainer.update(batch_size)
    trainer.save_states("trainer.states")
""",
        # Single machine: the Trainer updates locally.
        """from mxnet import gluon


def step(net, batch_size):
    trainer = gluon.Trainer(net.collect_params(), "adam", kvstore="device")
    trainer.allreduce_grads()
    trainer.update(batch_size)
    trainer.save_states("trainer.states")
""",
        # The kvstore is chosen on the command line.
        """import mxnet as mx
from mxnet import gluon


def step(net, args, batch_size):
    kv = mx.kv.create(args.kvstore)
    trainer = gluon.Trainer(net.collect_params(), "adam", kvstore=kv)
    trainer.save_states("trainer.states")
""",
        Valid("""import mxnet as mx
from mxnet import gluon

net = gluon.nn.Dense(2)
net.initialize()
trainer = gluon.Trainer(net.collect_params(), mx.optimizer.Adam(learning_rate=1e-3), None)
"""),
    )


def _updates_on_servers(trainer: TrainerCall) -> bool:
    kinds = trainer.kvstore
    if kinds is None or not kinds or not all(is_dist(k) for k in kinds):
        return False
    return trainer.update is not None and trainer.update <= {None, True}


def _kvstore_text(trainer: TrainerCall) -> str:
    kinds = sorted(trainer.kvstore or ())
    return " or ".join(f"`{k}`" for k in kinds)


def check(ctx: FileContext, model: FileModel) -> None:
    """Report the Trainer calls and arguments MXNet 1.9.1 rejects in combination."""
    server_updates = "MXNET_UPDATE_ON_KVSTORE" not in ctx.source
    for call, method, trainers in model.trainer_calls:
        if not server_updates or not all(_updates_on_servers(t) for t in trainers):
            continue
        kinds = _kvstore_text(trainers[0])
        if method in LOCAL_UPDATE_METHODS:
            detail = (
                f"`{ctx.code(call.func)}()` on a Trainer whose {kinds} kvstore updates the "
                "weights on the servers (`update_on_kvstore` is not False): MXNet 1.9.1 raises "
                '"AssertionError: allreduce_grads() when parameters are updated on kvstore is '
                'not supported"; create the Trainer with `update_on_kvstore=False`'
            )
        elif method in STATE_METHODS:
            detail = (
                f"`{ctx.code(call.func)}()` on a Trainer whose {kinds} kvstore keeps the "
                "optimizer state on the servers (`update_on_kvstore` is not False): MXNet "
                '1.9.1 raises "AssertionError: Cannot save states for distributed training"; '
                "create the Trainer with `update_on_kvstore=False` to keep the state on the "
                "workers, or checkpoint the parameters only"
            )
        else:
            continue
        ctx.report(call, TrainerKvstoreConflict, TrainerKvstoreConflict.format(detail=detail))
    for trainer in model.trainers:
        update_arg = trainer.args.get("update_on_kvstore")
        if (
            update_arg is not None
            and trainer.update == frozenset({True})
            and trainer.kvstore == frozenset({"none"})
        ):
            detail = (
                "`update_on_kvstore=True` with `kvstore=None`: there is no kvstore to update "
                'on, and MXNet 1.9.1 fails at the first `step()` with "AttributeError: '
                "'NoneType' object has no attribute 'is_capable'\"; leave `update_on_kvstore` "
                "out"
            )
            ctx.report(
                update_arg.node,
                TrainerKvstoreConflict,
                TrainerKvstoreConflict.format(detail=detail),
            )
        _optimizer_with_params(ctx, model, trainer)


def _optimizer_with_params(ctx: FileContext, model: FileModel, trainer: TrainerCall) -> None:
    optimizer = trainer.args.get("optimizer")
    params = trainer.args.get("optimizer_params")
    if optimizer is None or params is None or not _is_optimizer(ctx, model, optimizer.value):
        return
    if not _non_empty_dict(model, params.value):
        return
    detail = (
        "an `Optimizer` instance with `optimizer_params`: MXNet 1.9.1 raises "
        '"AssertionError: optimizer_params must be None if optimizer is an instance of '
        'Optimizer instead of str" when the Trainer is created; pass the options to the '
        "optimizer's constructor, or the optimizer's name with `optimizer_params`"
    )
    ctx.report(params.node, TrainerKvstoreConflict, TrainerKvstoreConflict.format(detail=detail))


def _is_optimizer(ctx: FileContext, model: FileModel, node: cst.BaseExpression) -> bool:
    """`mx.optimizer.Adam(...)`, `mx.optimizer.create(...)`, or a name bound only to those."""
    if type(node) is cst.Call:
        name = ctx.resolve(node.func) or ""
        head, _, last = name.rpartition(".")
        return head in ("mxnet.optimizer", "mxnet.optimizer.optimizer") and (
            last == "create" or (last[:1].isupper() and last not in ("Optimizer", "Updater"))
        )
    found = model.bindings_of(node)
    if not found:
        return False
    return all(b.value is not None and _is_optimizer(ctx, model, b.value) for b in found)


def _non_empty_dict(model: FileModel, node: cst.BaseExpression) -> bool:
    if type(node) is cst.Dict:
        return bool(node.elements)
    if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "dict":
        return bool(node.args)
    found = model.bindings_of(node)
    if not found:
        return False
    return all(b.value is not None and _non_empty_dict(model, b.value) for b in found)
