"""MXL401 accumulated-ndarray-without-sync: finds NDArrays accumulated across loop iterations
(`total = total + loss`, `total += loss`, `outputs.append(out)`) in a loop that never
synchronises with the engine (`.asscalar()`, `.asnumpy()`, `.item()`, `.wait_to_read()`,
`mx.nd.waitall()`, `metric.update(...)`).

Its findings are decided by the memory checkers (`rules/memory/checker.py`); its tests are the
examples below (run by `tests/test_rule_examples.py`), `tests/test_memory.py` and
`tests/snapshots/MXL401.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime, Valid


class AccumulatedWithoutSync(Rule):
    code = "MXL401"
    name = "accumulated-ndarray-without-sync"
    runtime = Runtime("memory")
    message = (
        "`{target}` accumulates NDArrays across iterations of a loop that never "
        "synchronises: the asynchronous engine runs ahead and memory grows; accumulate "
        "Python values (`{hint}`) or call `mx.nd.waitall()` in the loop"
    )
    what = """
        Finds NDArrays accumulated across loop iterations (`total = total + loss`,
        `total += loss`, `outputs.append(out)`) in a loop that never synchronises with the
        engine (`.asscalar()`, `.asnumpy()`, `.item()`, `.wait_to_read()`, `mx.nd.waitall()`,
        `metric.update(...)`). A tensor recorded under `autograd.record()` and kept in a
        container is reported as MXL402 instead, which says more about it.
    """
    why = """
        Every MXNet operator returns immediately and runs later on the engine's threads. A loop
        that only chains NDArrays never waits, so Python queues iteration after iteration and
        the engine keeps every pending operator's inputs and outputs alive: memory grows until
        the loop ends (or the GPU runs out). The first synchronising call bounds the queue.
    """
    example = """
        for data, label in loader:
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(batch_size)
            total_loss += loss.mean()
    """
    use_instead = """
        for data, label in loader:
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(batch_size)
            total_loss += loss.mean().asscalar()
    """
    fix_safety = """
        No automatic fix: where to synchronise (every step, every N steps) is a trade-off
        between pipeline stalls and memory.
    """
    invalid = (
        Example(
            """
import mxnet as mx
from mxnet import autograd

def train(net, loss_fn, trainer, loader):
    total = 0
    for data, label in loader:
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(64)
        total += loss.mean()
    return total
""",
            line=12,
        ),
        Example(
            """
from mxnet import nd

def collect(net, loader):
    outputs = []
    for batch in loader:
        out = net(batch)
        outputs.append(out)
    return nd.concat(*outputs, dim=0)
""",
            line=8,
        ),
        Example(
            """
from mxnet import autograd

def train(net, loss_fn, loader):
    running = None
    for x, y in loader:
        with autograd.record():
            l = loss_fn(net(x), y)
        l.backward()
        running = l.sum() if running is None else running + l.sum()
""",
            line=10,
        ),
    )
    valid = (
        Valid("""
from mxnet import autograd

def train(net, loss_fn, trainer, loader):
    total = 0.0
    for data, label in loader:
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(64)
        total += loss.mean().asscalar()
"""),
        Valid("""
import mxnet as mx
from mxnet import autograd

def train(net, loss_fn, trainer, loader):
    total = 0
    for i, (data, label) in enumerate(loader):
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(64)
        total = total + loss.mean()
        if i % 50 == 0:
            mx.nd.waitall()
"""),
        Valid("""
from mxnet import autograd, metric

def train(net, loss_fn, trainer, loader):
    acc = metric.Accuracy()
    losses = []
    for data, label in loader:
        with autograd.record():
            out = net(data)
            loss = loss_fn(out, label)
        loss.backward()
        trainer.step(64)
        acc.update(label, out)
        losses.append(loss)
"""),
        Valid("""
from mxnet.gluon import nn

def build(n):
    layers = []
    for i in range(n):
        layer = nn.Dense(16)
        layers.append(layer)
    return layers
"""),
        Valid("""
def total(values):
    s = 0
    for v in values:
        s += v
    return s
"""),
        Valid("""
from mxnet import nd

def scores(net, loader):
    out = []
    for batch in loader:
        out.append(net(batch).asnumpy())
    return out
"""),
    )
