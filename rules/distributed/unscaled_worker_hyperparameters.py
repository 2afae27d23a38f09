"""MXL805 unscaled-worker-hyperparameters: advice (off by default) for a file that trains across
workers while nothing in it adjusts the learning rate or the batch size to the number of
workers.

The function after the class decides and words its findings; the family's checker
(`rules/distributed/checker.py`) runs it. Its tests are the examples below (run by
`tests/test_rule_examples.py`), `tests/test_distributed.py` and `tests/snapshots/MXL805.txt`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from mxlint.rule import Example, Rule, Runtime
from mxlint.rules.distributed._analysis import COLLECTIVES, KV_CREATE
from mxlint.walker import iter_nodes

if TYPE_CHECKING:
    from mxlint.checker import FileContext
    from mxlint.rules.distributed._analysis import FileModel

#: Names that hold the number of workers (or of processes) of the job.
_COUNT_NAMES = re.compile(r"world_?size|num_?parts|n_?workers|num_?nodes|num_?procs", re.I)
_SYNC = frozenset({"dist_sync", "dist_device_sync", "dist_sync_device"})


class UnscaledWorkerHyperparameters(Rule):
    code = "MXL805"
    name = "unscaled-worker-hyperparameters"
    message = "{detail}"
    default_enabled = False
    runtime = Runtime(
        "static",
        reason=(
            "a tuning advice: the learning rate for a larger global batch is a choice, and "
            "training with it computes without error either way"
        ),
    )
    what = """
        Reports the trainer of a file that trains across workers while nothing in the file
        reads the number of workers (advice, off by default). The trainer is Horovod's or
        BytePS's `DistributedTrainer`/`DistributedOptimizer`, or a `gluon.Trainer` on a
        synchronous distributed kvstore (`dist_sync`, `dist_device_sync`) written in the file
        and stepped in it; the number of workers is `hvd.size()`, `kv.num_workers`, a
        `world_size`. Without it, neither the learning rate nor the batch size can be adjusted
        to the number of workers.
    """
    why = """
        With N workers the global batch is N times the per-worker batch, and how the update
        relates to it depends on the trainer. Horovod's and BytePS's trainers average the
        workers' gradients: each update is the mean over the global batch, taken with the
        single-machine learning rate, which the linear scaling rule (Goyal et al., 2017)
        multiplies by N — training that converged on one machine converges more slowly, or
        to another accuracy, on N. MXNet's `gluon.Trainer` on `dist_sync` does the opposite:
        the servers sum the N workers' gradients and `trainer.step(batch_size)` divides by one
        worker's batch, so each update is N times the mean gradient — an N-fold learning rate
        nobody chose, which grows with the cluster. Either may be intended, which is why this
        is advice; code that never reads the number of workers cannot have chosen it.
    """
    example = """
        hvd.init()
        trainer = hvd.DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    """
    use_instead = """
        hvd.init()
        trainer = hvd.DistributedTrainer(net.collect_params(), "sgd",
                                         {"learning_rate": 0.1 * hvd.size()})
    """
    fix_safety = """
        No automatic fix: the learning rate (and its warm-up) for a larger global batch is a
        tuning decision.
    """
    invalid = (
        Example(
            """import horovod.mxnet as hvd
import mxnet as mx
from mxnet import gluon

hvd.init()
net = gluon.nn.Dense(10)
net.initialize(ctx=mx.gpu(hvd.local_rank()))
hvd.broadcast_parameters(net.collect_params(), root_rank=0)
trainer = hvd.DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
""",
            line=9,
        ),
        Example(
            """import mxnet as mx
from mxnet import autograd, gluon

net = gluon.nn.Dense(10)
net.initialize()
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1},
                        kvstore="dist_sync")


def train(loader, loss_fn, batch_size):
    for x, y in loader:
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch_size)
""",
            line=6,
        ),
    )
    valid = (
        """import horovod.mxnet as hvd
from mxnet import gluon

hvd.init()
net = gluon.nn.Dense(10)
net.initialize()
trainer = hvd.DistributedTrainer(net.collect_params(), "sgd",
                                 {"learning_rate": 0.1 * hvd.size()})
""",
        """import mxnet as mx
from mxnet import gluon

kv = mx.kv.create("dist_sync")
net = gluon.nn.Dense(10)
net.initialize()
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, kvstore=kv)


def step(batch_size):
    trainer.step(batch_size * kv.num_workers)
""",
        # Asynchronous updates apply each worker's gradient on its own.
        """from mxnet import gluon

net = gluon.nn.Dense(10)
net.initialize()
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1},
                        kvstore="dist_async")
""",
    )


def _reads_worker_count(ctx: FileContext, model: FileModel) -> bool:
    for node in iter_nodes(ctx.module):
        kind = type(node)
        if kind is cst.Name:
            assert isinstance(node, cst.Name)
            if _COUNT_NAMES.search(node.value):
                return True
        elif kind is cst.Attribute:
            assert isinstance(node, cst.Attribute)
            if node.attr.value in ("num_workers", "size") and _counts_workers(ctx, model, node):
                return True
        elif kind is cst.SimpleString:
            assert isinstance(node, cst.SimpleString)
            if "DMLC_NUM_WORKER" in node.value:
                return True
    return False


def _counts_workers(ctx: FileContext, model: FileModel, node: cst.Attribute) -> bool:
    """`hvd.size`, `kv.num_workers`, `trainer._kvstore.num_workers`."""
    name = ctx.resolve(node)
    if name is not None and name.startswith(COLLECTIVES):
        return node.attr.value == "size"
    if node.attr.value != "num_workers":
        return False
    receiver = ctx.code(node.value).lower()
    if "kv" in receiver or "store" in receiver:
        return True
    found = model.bindings_of(node.value)
    return bool(found) and any(
        type(b.value) is cst.Call and ctx.resolve(b.value.func) in KV_CREATE for b in found or ()
    )


def check(ctx: FileContext, model: FileModel) -> None:
    averaging = [
        c
        for c in model.collectives
        if (ctx.resolve(c.func) or "").rsplit(".", 1)[-1]
        in ("DistributedTrainer", "DistributedOptimizer")
    ]
    stepped = {id(t) for _, method, ts in model.trainer_calls if method == "step" for t in ts}
    summing = [
        t
        for t in model.trainers
        if t.kvstore and t.kvstore <= _SYNC and id(t) in stepped and not averaging
    ]
    if not averaging and not summing:
        return
    if _reads_worker_count(ctx, model):
        return
    if averaging:
        call = averaging[0]
        framework = "BytePS" if (ctx.resolve(call.func) or "").startswith("byteps") else "Horovod"
        detail = (
            f"`{ctx.code(call.func)}` averages the workers' gradients, so each update is the "
            "mean over the global batch (N times the per-worker batch), but nothing in this "
            f"file reads the number of workers ({'`hvd.size()`' if framework == 'Horovod' else '`bps.size()`'}): "
            "the learning rate is the single-machine one; the linear scaling rule multiplies "
            "it by N (with a warm-up), or the per-worker batch can be divided by N"
        )
    else:
        trainer = summing[0]
        call = trainer.call
        kind = sorted(trainer.kvstore or ())[0]
        detail = (
            f"with the `{kind}` kvstore the servers sum the N workers' gradients and "
            "`trainer.step(batch_size)` divides by one worker's batch: each update is N times "
            "the mean gradient, an N-fold learning rate that grows with the cluster, and "
            "nothing in this file reads the number of workers (`kv.num_workers`); pass the "
            "global batch to `step()` (`batch_size * kv.num_workers`), or scale the learning "
            "rate on purpose"
        )
    ctx.report(
        call, UnscaledWorkerHyperparameters, UnscaledWorkerHyperparameters.format(detail=detail)
    )
