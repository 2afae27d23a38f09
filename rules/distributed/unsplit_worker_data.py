"""MXL804 unsplit-worker-data: checks for a training data loader or iterator that every worker
of a distributed job reads in full — the file trains with a distributed kvstore or with
Horovod/BytePS, and nothing that flows into the loader depends on the worker's rank.

The function after the class decides and words its findings (with `_split.py`, which follows
the loader's arguments through the file); the family's checker
(`rules/distributed/checker.py`) runs it. Its tests are the examples below (run by
`tests/test_rule_examples.py`), `tests/test_distributed.py` and `tests/snapshots/MXL804.txt`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from mxlint.names import dotted_name
from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.distributed._analysis import argument, is_dist
from mxlint.rules.distributed._split import SIGNAL, Slice
from mxlint.walker import iter_nodes

if TYPE_CHECKING:
    from mxlint.checker import FileContext
    from mxlint.rules.distributed._analysis import FileModel

#: Iterators that read a shard when given `num_parts`/`part_index`.
PARTED_ITERATORS = frozenset(
    {
        "mxnet.io.ImageRecordIter",
        "mxnet.io.ImageRecordIter_v1",
        "mxnet.io.ImageRecordUInt8Iter",
        "mxnet.io.ImageRecordInt8Iter",
        "mxnet.io.ImageDetRecordIter",
        "mxnet.io.CSVIter",
        "mxnet.io.LibSVMIter",
        "mxnet.io.MNISTIter",
        "mxnet.image.ImageIter",
        "mxnet.image.ImageDetIter",
    }
)
LOADERS = frozenset({"mxnet.gluon.data.DataLoader", "mxnet.io.NDArrayIter"}) | PARTED_ITERATORS
#: Samplers that take every index of their length: a loader with one of these is not split.
_WHOLE_SAMPLERS = frozenset(
    {"mxnet.gluon.data.RandomSampler", "mxnet.gluon.data.SequentialSampler"}
)
#: DataLoader(dataset, batch_size, shuffle, sampler, last_batch, batch_sampler, ...)
_SAMPLER_POSITIONS = {"sampler": 3, "batch_sampler": 5}
_EVALUATION = re.compile(r"val|test|eval|dev(?!ice)|infer|pred|calib", re.I)
_TRAINING = re.compile(r"train", re.I)


class UnsplitWorkerData(Rule):
    code = "MXL804"
    name = "unsplit-worker-data"
    message = (
        "every worker reads the whole training data: this file trains with {evidence}, but "
        "nothing that builds `{loader}` depends on the worker's rank, so each of the N workers "
        "goes through all of it and one epoch is N passes; {advice}"
    )
    runtime = Runtime("dist")
    what = """
        Checks for a training data loader that every worker of a distributed job reads in
        full. The loader (`gluon.data.DataLoader`, `mx.io.NDArrayIter`,
        `mx.io.ImageRecordIter` and the other record iterators, `mx.image.ImageIter`) is in a
        file that trains with a distributed kvstore (`dist_sync`, `dist_device_sync`,
        `dist_async`, written in the file) or with Horovod's or BytePS's trainer, when nothing
        that flows into the loader — its dataset, sampler, arguments, the functions of the file
        that build them — depends on the worker's rank: no `kv.rank`, `hvd.rank()`,
        `part_index`, `SplitSampler`, `dataset.shard(...)`. Evaluation loaders (named for
        validation or test data) are not reported; a loader built from something the file
        cannot show (a function of another module, a custom sampler defined elsewhere) is not
        judged. The parameters of a callback the file hands to the data pipeline (a dataset
        `transform`, a `batchify_fn` lambda) are the samples the pipeline passes it, not a
        rank.
    """
    why = """
        Data parallelism only divides the work when each worker reads a different part of the
        data. A loader built the same way on every worker gives every worker the whole
        dataset: with `dist_sync` the servers sum N gradients of the same samples (in another
        order when shuffled), so an "epoch" is N passes over the data, the learning-rate
        schedule written per epoch runs N times too long, and the N machines cost N times as
        much for the progress of one. MXNet does not warn: the kvstore cannot know where the
        batches came from.
    """
    example = """
        kv = mx.kv.create("dist_sync")
        train_data = gluon.data.DataLoader(train_set, batch_size=64, shuffle=True)
    """
    use_instead = """
        kv = mx.kv.create("dist_sync")
        sampler = SplitSampler(len(train_set), num_parts=kv.num_workers, part_index=kv.rank)
        train_data = gluon.data.DataLoader(train_set, batch_size=64, sampler=sampler)
    """
    fix_safety = """
        No automatic fix: how to split (a `SplitSampler`, `num_parts`/`part_index` of a record
        iterator, sharded files) depends on the dataset and on the shuffling wanted.
    """
    invalid = (
        Example(
            """import mxnet as mx
from mxnet import autograd, gluon

kv = mx.kv.create("dist_sync")
train_set = gluon.data.ArrayDataset(mx.nd.ones((100, 4)), mx.nd.zeros((100,)))
train_data = gluon.data.DataLoader(train_set, batch_size=10, shuffle=True)
net = gluon.nn.Dense(1)
net.initialize()
trainer = gluon.Trainer(net.collect_params(), "sgd", kvstore=kv)
for x, y in train_data:
    with autograd.record():
        loss = (net(x) - y).square().mean()
    loss.backward()
    trainer.step(1)
""",
            line=6,
        ),
        Example(
            """import horovod.mxnet as hvd
import mxnet as mx


def main(args):
    hvd.init()
    ctx = mx.gpu(hvd.local_rank())
    train_iter = mx.io.ImageRecordIter(
        path_imgrec=args.rec, data_shape=(3, 224, 224), batch_size=32, shuffle=True
    )
    opt = mx.optimizer.SGD(learning_rate=0.1 * hvd.size())
    opt = hvd.DistributedOptimizer(opt)
    return train_iter, opt, ctx
""",
            line=8,
        ),
    )
    valid = (
        """import mxnet as mx
from mxnet import gluon
from gluonnlp.data.sampler import SplitSampler

kv = mx.kv.create("dist_sync")
train_set = gluon.data.ArrayDataset(mx.nd.ones((100, 4)))
sampler = SplitSampler(len(train_set), num_parts=kv.num_workers, part_index=kv.rank)
train_data = gluon.data.DataLoader(train_set, batch_size=10, sampler=sampler)
""",
        """import horovod.mxnet as hvd
import mxnet as mx


def main(args):
    hvd.init()
    train_iter = mx.io.ImageRecordIter(
        path_imgrec=args.rec, data_shape=(3, 224, 224), batch_size=32,
        num_parts=hvd.size(), part_index=hvd.rank(),
    )
    return train_iter
""",
        # Every worker evaluates on the whole validation set: intended.
        """import mxnet as mx
from mxnet import gluon

kv = mx.kv.create("dist_sync")
val_set = gluon.data.ArrayDataset(mx.nd.ones((100, 4)))
val_data = gluon.data.DataLoader(val_set, batch_size=10)
""",
        # The kvstore comes from a flag: maybe not distributed at all.
        """import mxnet as mx
from mxnet import gluon


def main(args):
    kv = mx.kv.create(args.kvstore)
    train_set = gluon.data.ArrayDataset(mx.nd.ones((100, 4)))
    return gluon.data.DataLoader(train_set, batch_size=10, shuffle=True), kv
""",
        # The dataset is built by another module, which may shard it.
        Valid("""import mxnet as mx
from mxnet import gluon
from data import load_train_set

kv = mx.kv.create("dist_sync")
train_data = gluon.data.DataLoader(load_train_set(kv), batch_size=10)
"""),
    )


def _evidence(ctx: FileContext, model: FileModel) -> str | None:
    """How the file trains across workers, as the message names it (None: it does not)."""
    for trainer in model.trainers:
        if trainer.kvstore and any(is_dist(k) for k in trainer.kvstore):
            return f"the `{sorted(k for k in trainer.kvstore if is_dist(k))[0]}` kvstore"
    for _, kinds in model.creates:
        if kinds and any(is_dist(k) for k in kinds):
            return f"the `{sorted(k for k in kinds if is_dist(k))[0]}` kvstore"
    for call in model.calls:
        func = call.func
        if type(func) is cst.Attribute and func.attr.value == "fit":
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value == "kvstore":
                    fitted = model.kv_types(arg.value)
                    if fitted and any(is_dist(k) for k in fitted):
                        return f"the `{sorted(k for k in fitted if is_dist(k))[0]}` kvstore"
    if model.collectives:
        name = ctx.resolve(model.collectives[0].func) or ""
        framework = "BytePS" if name.startswith("byteps") else "Horovod"
        return f"{framework} (`{ctx.code(model.collectives[0].func)}`)"
    return None


def _assigned_name(ctx: FileContext, call: cst.Call) -> str | None:
    """The name (or `self.attr`) the loader is assigned to, when it is."""
    for node in iter_nodes(ctx.module):
        if type(node) is cst.Assign and node.value is call:
            names: list[str] = []
            for target in node.targets:
                names.extend(dotted_name(t) or "" for t in _flatten(target.target))
            return " ".join(names)
    return None


def _flatten(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return [x for el in target.elements for x in _flatten(el.value)]
    return [target]


def _dataset_arg(call: cst.Call) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value in ("dataset", "data", "path_imgrec"):
            return arg
    return None


def _names(ctx: FileContext, model: FileModel, call: cst.Call) -> list[str]:
    """What the loader and its data are called: the name it is assigned to and its dataset
    argument, or — returned by a function of the file — the names the function's callers give
    the result and pass as that dataset."""
    texts: list[str] = []
    assigned = _assigned_name(ctx, call)
    dataset = _dataset_arg(call)
    if assigned:
        texts.append(assigned)
    if dataset is not None:
        texts.append(ctx.code(dataset.value))
    function = ctx.bindings.scope_at(call).node
    if assigned or type(function) is not cst.FunctionDef:
        return texts
    params = [p.name.value for p in function.params.params]
    position = None
    if dataset is not None and type(dataset.value) is cst.Name and dataset.value.value in params:
        position = params.index(dataset.value.value)
    for site in model.calls:
        func = site.func
        name = (
            func.value
            if type(func) is cst.Name
            else (func.attr.value if type(func) is cst.Attribute else None)
        )
        if name != function.name.value:
            continue
        texts.append(_assigned_name(ctx, site) or "")
        if position is not None:
            offset = 1 if type(func) is cst.Attribute and params[:1] == ["self"] else 0
            passed = argument(site, (params[position],), position - offset)
            if passed is not None:
                texts.append(ctx.code(passed.value))
    return [t for t in texts if t]


def _loops_over(ctx: FileContext, call: cst.Call, assigned: str | None) -> list[cst.For]:
    """The `for` loops of the loader's scope over its name (or `enumerate(name)`...)."""
    if not assigned or " " in assigned or "." in assigned:
        return []
    loops = []
    for node in iter_nodes(ctx.bindings.scope_at(call).node):
        if type(node) is not cst.For:
            continue
        source = node.iter
        if type(source) is cst.Call and source.args:
            source = source.args[0].value  # enumerate(loader), tqdm(loader)
        if type(source) is cst.Name and source.value == assigned:
            loops.append(node)
    return loops


def _trains_in(loops: list[cst.For]) -> bool:
    """A loop that runs `backward()` or `step()`."""
    return any(
        type(inner) is cst.Call
        and type(inner.func) is cst.Attribute
        and inner.func.attr.value in ("backward", "step")
        for loop in loops
        for inner in iter_nodes(loop.body)
    )


def _skips_by_rank(loops: list[cst.For]) -> bool:
    """`if i % kv.num_workers != kv.rank: continue`: each worker keeps its own batches."""
    for loop in loops:
        for node in iter_nodes(loop.body):
            if type(node) is not cst.If:
                continue
            names = [
                n.value if isinstance(n, cst.Name) else n.attr.value
                for n in iter_nodes(node.test)
                if isinstance(n, (cst.Name, cst.Attribute))
            ]
            if any(SIGNAL.search(n) for n in names) and any(
                type(n) is cst.Continue for n in iter_nodes(node.body)
            ):
                return True
    return False


def _is_training(texts: list[str]) -> bool | None:
    """Named for training data (True), for evaluation (False), or neither (None)."""
    if any(_EVALUATION.search(t) for t in texts):
        return False
    if any(_TRAINING.search(t) for t in texts):
        return True
    return None


def _samplers_take_all(ctx: FileContext, model: FileModel, call: cst.Call) -> bool:
    """A DataLoader's explicit `sampler`/`batch_sampler`, if any, takes the whole dataset: a
    `RandomSampler`/`SequentialSampler` (without `start`), or a `BatchSampler` of one. Any
    other sampler (a split sampler, a custom one, `IntervalSampler`) may be the split."""
    for name, position in _SAMPLER_POSITIONS.items():
        arg = argument(call, (name,), position)
        if arg is None:
            continue
        if not _whole(ctx, model, arg.value, 0):
            return False
    return True


def _whole(ctx: FileContext, model: FileModel, node: cst.BaseExpression, depth: int) -> bool:
    if depth > 4:
        return False
    if type(node) is cst.Name and node.value == "None":
        return True
    if type(node) is cst.Call:
        name = ctx.resolve(node.func)
        if name in _WHOLE_SAMPLERS:
            return (
                not any(a.keyword is not None and a.keyword.value == "start" for a in node.args)
                and len([a for a in node.args if a.keyword is None]) <= 1
            )
        if name == "mxnet.gluon.data.BatchSampler" and node.args:
            return _whole(ctx, model, node.args[0].value, depth + 1)
        return False
    found = model.bindings_of(node)
    return bool(found) and all(
        b.value is not None and _whole(ctx, model, b.value, depth + 1) for b in found or ()
    )


def _advice(name: str, evidence: str) -> str:
    horovod = "Horovod" in evidence or "BytePS" in evidence
    rank, count = ("hvd.rank()", "hvd.size()") if horovod else ("kv.rank", "kv.num_workers")
    if name in PARTED_ITERATORS:
        return f"pass `num_parts={count}, part_index={rank}`"
    if name == "mxnet.io.NDArrayIter":
        return f"give each worker its slice of the arrays (`data[{rank}::{count}]`)"
    return (
        f"give it a sampler that takes the worker's share (`SplitSampler(len(dataset), "
        f"num_parts={count}, part_index={rank})` from gluonnlp/gluoncv, or your own)"
    )


def check(ctx: FileContext, model: FileModel) -> None:
    evidence = _evidence(ctx, model)
    if evidence is None:
        return
    for call in model.calls:
        name = ctx.resolve(call.func)
        if name not in LOADERS:
            continue
        if name in PARTED_ITERATORS and any(
            a.keyword is not None and a.keyword.value in ("num_parts", "part_index")
            for a in call.args
        ):
            continue
        if name == "mxnet.gluon.data.DataLoader" and not _samplers_take_all(ctx, model, call):
            continue
        loops = _loops_over(ctx, call, _assigned_name(ctx, call))
        training = _is_training(_names(ctx, model, call))
        if training is None:
            training = _trains_in(loops)
        if not training or _skips_by_rank(loops):
            continue
        walk = Slice(ctx, model)
        walk.run([a.value for a in call.args])
        if walk.split or walk.unknown:
            continue
        loader = ctx.code(call.func)
        ctx.report(
            call,
            UnsplitWorkerData,
            UnsplitWorkerData.format(
                evidence=evidence, loader=f"{loader}(...)", advice=_advice(name, evidence)
            ),
        )
