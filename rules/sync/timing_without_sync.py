"""MXL601 timing-without-sync: finds a duration measured with
`time.time()`/`time.perf_counter()`/`time.monotonic()`/ `timeit.default_timer()` around MXNet
work with no synchronising call between the work and the end timestamp.

The functions after the class decide and word its findings; the family's checker
(`rules/memory/checker.py`) runs them. Its tests are the
examples below (run by `tests/test_rule_examples.py`), `tests/test_memory.py` and
`tests/snapshots/MXL601.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.walker import NESTED_SCOPES, iter_nodes

if TYPE_CHECKING:
    from mxlint.rules.memory.checker import MemoryChecker


class TimingWithoutSync(Rule):
    code = "MXL601"
    name = "timing-without-sync"
    runtime = Runtime("timing")
    message = (
        "`{expr}` times MXNet work that may not have run yet: operators return before "
        "they compute; call `mx.nd.waitall()` before reading the end time"
    )
    what = """
        Finds a duration measured with `time.time()`/`time.perf_counter()`/`time.monotonic()`/
        `timeit.default_timer()` around MXNet work with no synchronising call between the work
        and the end timestamp. An interval read again after a synchronising call (a lesson that
        shows operators returning at once, then the real time) is not reported.
    """
    why = """
        MXNet's engine is asynchronous: `net(x)`, `loss.backward()` and `trainer.step()` return
        as soon as the operators are queued. Without `mx.nd.waitall()` (or `.asnumpy()`,
        `.asscalar()`, `.wait_to_read()`) the measured time is how long queuing took, and the
        real cost lands in whatever line synchronises next. A metric update or a helper (of
        this file or another) that reads values back synchronises too.
    """
    example = """
        tic = time.time()
        for data, label in loader:
            ...
            trainer.step(batch_size)
        print("epoch took", time.time() - tic)
    """
    use_instead = """
        tic = time.time()
        for data, label in loader:
            ...
            trainer.step(batch_size)
        mx.nd.waitall()
        print("epoch took", time.time() - tic)
    """
    fix_safety = """
        No automatic fix: the right sync point depends on what the timing is meant to cover.
    """
    invalid = (
        Example(
            """
import time
from mxnet import autograd

def epoch(net, loss_fn, trainer, loader):
    tic = time.time()
    for data, label in loader:
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(64)
    print("took", time.time() - tic)
""",
            line=12,
        ),
        Example(
            """
import time
import mxnet as mx

def bench(net, x):
    start = time.perf_counter()
    for _ in range(10):
        y = net(x)
    elapsed = time.perf_counter() - start
    return elapsed
""",
            line=9,
        ),
    )
    valid = (
        Valid("""
import time
import mxnet as mx
from mxnet import autograd

def epoch(net, loss_fn, trainer, loader):
    tic = time.time()
    for data, label in loader:
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(64)
    mx.nd.waitall()
    print("took", time.time() - tic)
"""),
        Valid("""
import time

def bench(net, x):
    start = time.perf_counter()
    y = net(x).asnumpy()
    return time.perf_counter() - start
"""),
        Valid("""
import time
import mxnet as mx

def load(path):
    tic = time.time()
    with open(path) as fh:
        text = fh.read()
    return text, time.time() - tic
"""),
        # A metric update reads the outputs back every step.
        Valid("""
import time
from mxnet import autograd

def train(net, loss_fn, trainer, loader, metric):
    tic = time.time()
    for data, label in loader:
        with autograd.record():
            out = net(data)
            loss = loss_fn(out, label)
        loss.backward()
        trainer.step(data.shape[0])
        metric.update([label], [out])
    return time.time() - tic
"""),
    )


def check_timing(checker: MemoryChecker, body: list[cst.BaseStatement]) -> None:
    starts: dict[str, int] = {}
    for index, stmt in enumerate(body):
        for node in iter_nodes(stmt, stop=NESTED_SCOPES):
            start = _elapsed_since(checker, node)
            if start is not None and start in starts:
                begin = starts[start]
                between = body[begin + 1 : index]
                if (
                    checker._mxnet_work(between)
                    and not any(checker._has_sync(s) for s in between)
                    and not _measured_again(checker, body, index, start)
                ):
                    checker.ctx.report(
                        node,
                        TimingWithoutSync,
                        TimingWithoutSync.format(expr=checker.ctx.code(node).strip()),
                        requires=checker._unless_helpers_sync(between),
                    )
        if type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                if (
                    type(small) is cst.Assign
                    and len(small.targets) == 1
                    and type(small.targets[0].target) is cst.Name
                    and checker._timer(small.value)
                ):
                    starts[small.targets[0].target.value] = index


def _elapsed_since(checker: MemoryChecker, node: cst.CSTNode) -> str | None:
    """`start` for `time.time() - start` (a timer read minus a name), else None."""
    if (
        type(node) is cst.BinaryOperation
        and type(node.operator) is cst.Subtract
        and checker._timer(node.left)
        and type(node.right) is cst.Name
    ):
        return node.right.value
    return None


def _measured_again(
    checker: MemoryChecker, body: list[cst.BaseStatement], index: int, start: str
) -> bool:
    """The same interval is read again after a synchronising statement (`print(time() -
    start)`, then `y.asnumpy()`, then `print(time() - start)`): the first reading shows, on
    purpose, how fast operators return (a lesson on asynchronous execution), the second the
    real time."""
    for later in range(index + 1, len(body)):
        stmt = body[later]
        for node in iter_nodes(stmt, stop=NESTED_SCOPES):
            if _elapsed_since(checker, node) == start:
                return any(checker._has_sync(s) for s in body[index + 1 : later])
        if _rebinds(stmt, start):
            return False
    return False


def _rebinds(stmt: cst.BaseStatement, name: str) -> bool:
    return type(stmt) is cst.SimpleStatementLine and any(
        type(small) is cst.Assign
        and any(type(t.target) is cst.Name and t.target.value == name for t in small.targets)
        for small in stmt.body
    )
