"""MXL602 sync-in-training-loop: finds `.asscalar()`, `.asnumpy()` and `.item()` of a tensor that
run unconditionally on every iteration of a training loop (a loop over a data pipeline that
calls `backward()`) before the iteration's last `backward()`/`trainer.step()`.

The functions after the class decide and word its findings; the family's checker
(`rules/memory/checker.py`) runs them. Its tests are the
examples below (run by `tests/test_rule_examples.py`), `tests/test_memory.py` and
`tests/snapshots/MXL602.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mxlint import knowledge
from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.walker import LOOPS, NESTED_SCOPES

if TYPE_CHECKING:
    from mxlint.rules.memory.checker import MemoryChecker


class SyncEveryStep(Rule):
    code = "MXL602"
    name = "sync-in-training-loop"
    message = (
        "`{expr}` waits, on every training step, for the work queued so far before "
        "the rest of the step (`backward()`, `trainer.step()`) is queued: the device "
        "idles while Python catches up; read values back after `trainer.step()`, or "
        "every N steps (`if i % 50 == 0:`)"
    )
    default_enabled = False
    runtime = Runtime("sync")
    what = """
        Finds `.asscalar()`, `.asnumpy()` and `.item()` of a tensor that run unconditionally on
        every iteration of a training loop (a loop over a data pipeline that calls
        `backward()`) before the iteration's last `backward()`/`trainer.step()`. Off by
        default: it is about throughput, not correctness.
    """
    why = """
        MXNet's engine runs operators asynchronously; a readback blocks Python until every
        operator it depends on has run. In the middle of a step (logging the loss right after
        the forward pass, a NumPy metric before `backward()`), it means the backward pass and
        the optimizer update are queued only once the forward pass has finished, so the
        device waits for Python on every step. One readback per step after
        `trainer.step()` (as MXL401 suggests) keeps the engine's queue bounded at little cost;
        reading back every N steps costs even less.
    """
    example = """
        for data, label in loader:
            with autograd.record():
                loss = loss_fn(net(data), label)
            print("loss", loss.mean().asscalar())
            loss.backward()
            trainer.step(batch_size)
    """
    use_instead = """
        for data, label in loader:
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(batch_size)
            print("loss", loss.mean().asscalar())
    """
    fix_safety = """
        No automatic fix: how often to read the value back is a trade-off between the engine's
        queue length (memory) and overlap.
    """
    invalid = (
        Example(
            """
from mxnet import autograd

def train(net, loss_fn, trainer, loader):
    total = 0.0
    for data, label in loader:
        with autograd.record():
            loss = loss_fn(net(data), label)
        total += loss.mean().asscalar()
        loss.backward()
        trainer.step(data.shape[0])
    return total
""",
            line=9,
        ),
        Example(
            """
import mxnet as mx

def train(net, loss_fn, trainer, train_data):
    for i, (x, y) in enumerate(train_data):
        with mx.autograd.record():
            out = net(x)
            loss = loss_fn(out, y)
            print(i, loss.mean().asnumpy())
        loss.backward()
        trainer.step(x.shape[0])
""",
            line=9,
        ),
    )
    valid = (
        Valid("""
import mxnet as mx
from mxnet import autograd

def train(net, loss_fn, trainer, loader, ctx):
    running = mx.nd.zeros(1, ctx=ctx)
    for i, (data, label) in enumerate(loader):
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(data.shape[0])
        running += loss.mean()
        if i % 50 == 0:
            print(running.asscalar() / (i + 1))
"""),
        Valid("""
from mxnet import autograd

def evaluate(net, loader):
    scores = []
    for data, label in loader:
        scores.append(net(data).asnumpy())
    return scores
"""),
        Valid("""
from mxnet import autograd

def train(net, loss_fn, trainer, loader):
    total = 0.0
    for data, label in loader:
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(data.shape[0])
        total += loss.mean().asscalar()
    return total
"""),
    )


def check_every_step(checker: MemoryChecker, loop: cst.For, tensors: set[str]) -> None:
    """`.asscalar()`/`.asnumpy()`/`.item()` of a tensor on every iteration of a training
    loop, before the step's `backward()`/`trainer.step()` (the last of them) is queued;
    a sync under `if` (every N steps) or after the step is not reported."""
    if type(loop.body) is not cst.IndentedBlock:
        return
    body = list(loop.body.body)
    last = max((i for i, stmt in enumerate(body) if checker._queues_step(stmt)), default=None)
    if last is None:
        return
    stack: list[cst.CSTNode] = list(reversed(body[:last]))
    while stack:
        node = stack.pop()
        if isinstance(
            node,
            (*NESTED_SCOPES, *LOOPS, cst.If, cst.Try, cst.IfExp, cst.ListComp, cst.GeneratorExp),
        ):
            continue
        if (
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and node.func.attr.value in knowledge.READBACK_METHODS
            and checker._is_tensor(node.func.value, tensors, node)
        ):
            checker.ctx.report(
                node, SyncEveryStep, SyncEveryStep.format(expr=checker.ctx.code(node).strip())
            )
            continue
        from mxlint.walker import children

        stack.extend(reversed(list(children(node))))
