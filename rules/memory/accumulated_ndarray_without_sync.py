"""MXL401 accumulated-ndarray-without-sync: finds NDArrays accumulated across loop iterations
(`total = total + loss`, `total += loss`, `outputs.append(out)`) in a loop that never
synchronises with the engine (`.asscalar()`, `.asnumpy()`, `.item()`, `.wait_to_read()`,
`mx.nd.waitall()`, `metric.update(...)`).

The functions after the class decide and word its findings; the family's checker
(`rules/memory/checker.py`) runs them. Its tests are the
examples below (run by `tests/test_rule_examples.py`), `tests/test_memory.py` and
`tests/snapshots/MXL401.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mxlint import knowledge
from mxlint.rule import Example, Rule, Runtime, Valid

if TYPE_CHECKING:
    from mxlint.rules.memory.checker import MemoryChecker


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
        `metric.update(...)`). A running total the object keeps (`self.total_loss +=
        loss.mean()`) is accumulated like a name, and the losses of networks and loss
        functions the object holds (`self.loss_fn(self.net(x), y)`) are tensors. A tensor
        recorded under `autograd.record()` and kept in a
        container is reported as MXL402 instead, which says more about it.
    """
    why = """
        Every MXNet operator returns immediately and runs later on the engine's threads. A loop
        that only chains NDArrays never waits, so Python queues iteration after iteration and
        the engine keeps every pending operator's inputs and outputs alive: memory grows until
        the loop ends (or the GPU runs out). The first synchronising call bounds the queue:
        a readback, a metric update, or a helper (of this file or another) that does one.
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
        # The helper returns a Python number: every step waits for the loss.
        Valid("""
from mxnet import autograd

def as_float(loss):
    return loss.mean().asscalar()

def train(net, loss_fn, trainer, train_data):
    total = 0.0
    for data, label in train_data:
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(data.shape[0])
        total += as_float(loss)
    return total
"""),
    )


def python_value_hint(checker: MemoryChecker, shape: str, value: cst.BaseExpression) -> str:
    """The statement (`shape`, see `_accumulation`) accumulating a Python value:
    `.asscalar()` of a reduction (one number), `.asnumpy()` of anything else (the same
    values, elementwise)."""
    code = checker.ctx.code(value).strip()
    if "\n" in code or len(code) > 40:
        code = "(...)"
    elif type(value) not in (cst.Name, cst.Attribute, cst.Call, cst.Subscript):
        code = f"({code})"
    sync = "asscalar" if checker._reduces_to_one_number(value) else "asnumpy"
    return shape.format(value=code, kept=f"{code}.{sync}()")


def reduces_to_one_number(checker: MemoryChecker, value: cst.BaseExpression) -> bool:
    """`x.mean()`, `nd.sum(x)`: a reduction over every axis."""
    if (
        type(value) is not cst.Call
        or type(value.func) is not cst.Attribute
        or value.func.attr.value not in knowledge.SCALAR_REDUCTIONS
    ):
        return False
    if any(a.keyword is not None or a.star for a in value.args):
        return False  # axis=..., keepdims=..., or unknown
    resolved = checker.ctx.resolve(value.func)
    function = resolved is not None and knowledge.in_namespace(
        resolved, knowledge.TENSOR_NAMESPACES
    )
    return len(value.args) == (1 if function else 0)


def _object_member(target: cst.BaseExpression) -> bool:
    """`self.total_loss`: a running total the object keeps across the loop's iterations."""
    return (
        type(target) is cst.Attribute
        and type(target.value) is cst.Name
        and target.value.value == "self"
    )


def accumulation(
    checker: MemoryChecker, node: cst.CSTNode, assigned_inside: set[str]
) -> tuple[str, cst.BaseExpression, str] | None:
    """(target, accumulated value, the statement's shape with `{kept}` for the value made
    a Python value, `{value}` for the value as written), or None."""
    if (
        type(node) is cst.AugAssign
        and (type(node.target) is cst.Name or _object_member(node.target))
        and type(node.operator) in (cst.AddAssign, cst.MultiplyAssign)
    ):
        target = checker.ctx.code(node.target).strip()
        op = "+=" if type(node.operator) is cst.AddAssign else "*="
        return target, node.value, f"{target} {op} {{kept}}"
    if (
        type(node) is cst.Assign
        and len(node.targets) == 1
        and (type(node.targets[0].target) is cst.Name or _object_member(node.targets[0].target))
    ):
        name = checker.ctx.code(node.targets[0].target).strip()
        value = node.value
        branches = [value.body, value.orelse] if type(value) is cst.IfExp else [value]
        for branch in branches:
            if (
                type(branch) is cst.BinaryOperation
                and (type(branch.left) is cst.Name or _object_member(branch.left))
                and checker.ctx.code(branch.left).strip() == name
            ):
                op = checker.ctx.code(branch.operator).strip()
                return name, branch.right, f"{name} = {name} {op} {{kept}}"
    if type(node) is cst.Expr and type(node.value) is cst.Call:
        call = node.value
        if (
            type(call.func) is cst.Attribute
            and call.func.attr.value in ("append", "extend")
            and type(call.func.value) is cst.Name
            and call.func.value.value not in assigned_inside
            and len(call.args) == 1
        ):
            name = call.func.value.value
            shape = (
                f"{name}.append({{kept}})"
                if call.func.attr.value == "append"
                else f"{name}.extend(x.asnumpy() for x in {{value}})"
            )
            return name, call.args[0].value, shape
    return None
