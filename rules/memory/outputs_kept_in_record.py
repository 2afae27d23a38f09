"""MXL402 outputs-kept-in-record: finds a tensor computed inside `with autograd.record():` (a
network output, a loss) stored into a container that outlives the training step:
`outputs.append(out)`, `losses.extend(...)`, `cache[k] = out`, `self.history.append(loss)`,
where the list or dict is created before the training loop (or is an attribute of `self` or a
module global) and is not re-created or cleared in the loop.

The functions after the class decide and word its findings; the family's checker
(`rules/memory/checker.py`) runs them. Its tests are the
examples below (run by `tests/test_rule_examples.py`), `tests/test_memory.py` and
`tests/snapshots/MXL402.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mxlint import knowledge
from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.memory._analysis import _Record

if TYPE_CHECKING:
    from mxlint.rules.memory.checker import RecordChecker


class OutputsKeptInRecord(Rule):
    code = "MXL402"
    name = "outputs-kept-in-record"
    runtime = Runtime("memory")
    supersedes = ("MXL401",)
    message = (
        "`{value}` is recorded inside `autograd.record()` and kept in `{container}`, "
        "which {where}: every step adds a tensor that still references its autograd "
        "graph (all of whose buffers stay alive when it is not backpropagated); keep "
        "`.detach()` or a Python value (`.asscalar()`, `.asnumpy()`), or create the "
        "container inside the loop"
    )
    what = """
        Finds a tensor computed inside `with autograd.record():` (a network output, a loss)
        stored into a container that outlives the training step: `outputs.append(out)`,
        `losses.extend(...)`, `cache[k] = out`, `self.history.append(loss)`, where the list or
        dict is created before the training loop (or is an attribute of `self` or a module
        global) and is not re-created or cleared in the loop. Where MXL401 (accumulated without
        a sync) would report the same statement, only this finding is shown.
    """
    why = """
        A recorded NDArray references the autograd node that produced it. `backward()` frees
        the buffers of the graph it runs through, but a kept output that is not backpropagated
        (a side output, a prediction kept for later, a step whose backward is skipped) keeps
        every input and intermediate buffer of its forward pass alive — measured on MXNet
        1.9.1, a whole activation set per step — and even a backpropagated one stays in the
        container: it grows for the rest of training. The multi-GPU idiom (`losses = []`
        inside the loop, `losses.append(l)` under `record()`, then `autograd.backward(losses)`)
        is fine: the list is new every step; so is a list of micro-batch losses that is
        backpropagated once after its loop.
    """
    example = """
        outputs = []
        for data, label in loader:
            with autograd.record():
                out = net(data)
                loss = loss_fn(out, label)
                outputs.append(out)
            loss.backward()
            trainer.step(batch_size)
    """
    use_instead = """
        outputs = []
        for data, label in loader:
            with autograd.record():
                out = net(data)
                loss = loss_fn(out, label)
            loss.backward()
            trainer.step(batch_size)
            outputs.append(out.asnumpy())  # or process it here and keep nothing
    """
    fix_safety = """
        No automatic fix: whether the caller needs the tensor (`.detach()`, still a device
        buffer per step), a NumPy copy or nothing at all depends on what the container is for.
    """
    invalid = (
        Example(
            """
from mxnet import autograd

def train(net, loss_fn, trainer, loader):
    outputs = []
    for data, label in loader:
        with autograd.record():
            out = net(data)
            loss = loss_fn(out, label)
            outputs.append(out)
        loss.backward()
        trainer.step(data.shape[0])
    return outputs
""",
            line=10,
        ),
        Example(
            """
from mxnet import autograd as ag, gluon

class Learner:
    def __init__(self, net):
        self.net = net
        self.loss_fn = gluon.loss.L2Loss()
        self.history = []

    def step(self, data, label):
        with ag.record():
            loss = self.loss_fn(self.net(data), label)
            self.history.append(loss)
        loss.backward()
""",
            line=13,
        ),
        Example(
            """
import mxnet as mx

def train(net, loss_fn, loader):
    cache = {}
    for i, (x, y) in enumerate(loader):
        with mx.autograd.record(train_mode=True):
            out = net(x)
            cache[i] = out
            loss = loss_fn(out, y)
        loss.backward()
""",
            line=9,
        ),
    )
    valid = (
        Valid("""
from mxnet import autograd, gluon

def train(net, loss_fn, trainer, loader, ctx):
    for batch in loader:
        data = gluon.utils.split_and_load(batch[0], ctx)
        label = gluon.utils.split_and_load(batch[1], ctx)
        losses = []
        with autograd.record():
            for x, y in zip(data, label):
                losses.append(loss_fn(net(x), y))
        autograd.backward(losses)
        trainer.step(batch[0].shape[0])
"""),
        Valid("""
from mxnet import autograd

def train(net, loss_fn, trainer, loader):
    history = []
    for data, label in loader:
        with autograd.record():
            loss = loss_fn(net(data), label)
            history.append(loss.mean().asscalar())
        loss.backward()
        trainer.step(data.shape[0])
    return history
"""),
        Valid("""
from mxnet import autograd

def train(net, loss_fn, trainer, loader):
    outputs = []
    for data, label in loader:
        with autograd.record():
            out = net(data)
            loss = loss_fn(out, label)
            outputs.append(out.detach())
        loss.backward()
        trainer.step(data.shape[0])
"""),
        Valid("""
from mxnet import autograd

def step(net, loss_fn, data, label):
    outs = []
    with autograd.record():
        for x, y in zip(data, label):
            outs.append(net(x))
        losses = [loss_fn(o, y) for o, y in zip(outs, label)]
    autograd.backward(losses)
    return outs
"""),
        Valid("""
from mxnet import autograd

def train(model, loss_fn, trainer, loader, hiddens, detach):
    for data, target in loader:
        hiddens = detach(hiddens)
        with autograd.record():
            for j, (x, y) in enumerate(zip(data, target)):
                out, h = model(x, hiddens[j])
                hiddens[j] = h
                loss = loss_fn(out, y)
        loss.backward()
"""),
    )


def check_store_call(
    checker: RecordChecker, rec: _Record, call: cst.Call, stmt: cst.CSTNode
) -> None:
    func = call.func
    if (
        type(func) is not cst.Attribute
        or func.attr.value not in knowledge.STORING_METHODS
        or not call.args
    ):
        return
    value = call.args[-1].value
    if not rec.recorded_expr(value):
        return
    container = func.value
    if type(container) is cst.Subscript:  # `history["loss"].append(loss)`
        container = container.value
    where = checker._lifetime(rec, container, reads=False)
    if where is not None:
        checker._report(
            call,
            OutputsKeptInRecord,
            value=rec.ctx.code(value).strip(),
            container=rec.ctx.code(func.value).strip(),
            where=where,
        )


def check_list_extend(checker: RecordChecker, rec: _Record, node: cst.AugAssign) -> None:
    """`outputs += [out]`."""
    if not rec.recorded_expr(node.value):
        return
    where = checker._lifetime(rec, node.target, reads=False)
    if where is not None:
        checker._report(
            node,
            OutputsKeptInRecord,
            value=rec.ctx.code(node.value).strip(),
            container=rec.ctx.code(node.target).strip(),
            where=where,
        )


def check_subscript_store(
    checker: RecordChecker,
    rec: _Record,
    stmt: cst.CSTNode,
    target: cst.Subscript,
    value: cst.BaseExpression,
) -> None:
    container = target.value
    if type(container) is cst.Name and (
        container.value in rec.fresh or container.value in rec.in_graph
    ):
        return
    if not rec.recorded_expr(value):
        return
    where = checker._lifetime(rec, container, reads=True)
    if where is not None:
        checker._report(
            stmt,
            OutputsKeptInRecord,
            value=rec.ctx.code(value).strip(),
            container=rec.ctx.code(container).strip(),
            where=where,
        )
