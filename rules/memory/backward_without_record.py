"""MXL403 backward-without-record: finds `loss.backward()` where `loss` was last assigned, in the
same function or script, outside any `with autograd.record():` block.

The functions after the class decide and word its findings; the family's checker
(`rules/memory/checker.py`) runs them. Its tests are the
examples below (run by `tests/test_rule_examples.py`), `tests/test_memory.py` and
`tests/snapshots/MXL403.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.memory._analysis import _COMPREHENSION_TYPES, _comprehension_calls

if TYPE_CHECKING:
    from mxlint.rules.memory.checker import MemoryChecker


class BackwardWithoutRecord(Rule):
    code = "MXL403"
    name = "backward-without-record"
    runtime = Runtime(
        "memory", loud=True, error=r"not in a computational graph|is_recording|record\(\)"
    )
    message = (
        "`{name}` was computed outside `autograd.record()`, so `{name}.backward()` has no "
        'graph to differentiate (MXNet raises "Cannot differentiate node because it is '
        'not in a computational graph"); compute it inside the `with autograd.record():` '
        "block"
    )
    what = """
        Finds `loss.backward()` where `loss` was last assigned, in the same function or script,
        outside any `with autograd.record():` block.
    """
    why = """
        MXNet records operators for differentiation only inside `autograd.record()`. A loss
        computed after the block (a common slip: only the network call is inside) is not part of
        any graph, and `backward()` raises at run time — often after a long data-loading start-up.
        Calling `loss.backward()` *after* the block is fine and idiomatic, as long as the loss was
        computed inside it.
    """
    example = """
        with autograd.record():
            output = net(data)
        loss = loss_fn(output, label)
        loss.backward()
    """
    use_instead = """
        with autograd.record():
            output = net(data)
            loss = loss_fn(output, label)
        loss.backward()
    """
    fix_safety = """
        No automatic fix: moving statements into the block can change what is recorded.
    """
    invalid = (
        Example(
            """
from mxnet import autograd

def step(net, loss_fn, trainer, data, label):
    with autograd.record():
        output = net(data)
    loss = loss_fn(output, label)
    loss.backward()
    trainer.step(data.shape[0])
""",
            line=8,
        ),
        Example(
            """
import mxnet as mx

def step(net, loss_fn, data, label):
    loss = loss_fn(net(data), label)
    loss.backward()
""",
            line=6,
        ),
    )
    valid = (
        Valid("""
from mxnet import autograd

def step(net, loss_fn, trainer, data, label):
    with autograd.record():
        output = net(data)
        loss = loss_fn(output, label)
    loss.backward()
    trainer.step(data.shape[0])
"""),
        Valid("""
import mxnet as mx

def train(sym, batch):
    mod = mx.mod.Module(sym, context=mx.cpu())
    mod.bind(data_shapes=batch.provide_data, label_shapes=batch.provide_label)
    mod.init_params()
    mod.forward(batch, is_train=True)
    mod.backward()
    mod.update()
"""),
        Valid("""
import mxnet as mx
from mxnet import autograd

def sgld(sym, data, grads):
    exe = sym.simple_bind(ctx=mx.cpu(), data=data.shape)
    exe.forward(is_train=True, data=data)
    exe.backward()
    with autograd.record():
        y = data * 2
    y.backward()
"""),
        Valid("""
from mxnet import autograd

def step(loss):
    loss.backward()
"""),
        Valid("""
from mxnet import autograd

def step(net, loss_fn, data, label):
    with autograd.record():
        loss = loss_fn(net(data), label)
        loss.backward()
"""),
        Valid("""
from mxnet import autograd

def step(net, loss_fn, data, label, compute):
    with autograd.record():
        loss = compute(net, data, label)
    loss.backward()
"""),
    )


def check_backward(checker: MemoryChecker, nodes: list[cst.CSTNode]) -> None:
    """MXL403: the last assignment of `x` before `x.backward()` ran outside record().
    `nodes`: the scope's nodes of the kinds `_SCOPE_KINDS` lists, in source order."""
    last: dict[str, cst.CSTNode] = {}
    #: `.backward()` calls on a comprehension's own variable (`[l.backward() for l in ls]`).
    shadowed: set[cst.CSTNode] = set()
    for node in nodes:
        for target, value in checker._bindings(node):
            # Only `loss = f(...)`: a tuple unpacked from a helper may be anything (an
            # Executor, a Module), and `autograd.grad(create_graph=True)` is recorded.
            simple = type(node) is cst.Assign and type(node.targets[0].target) is cst.Name
            if (
                simple
                and type(value) in (cst.Call, cst.BinaryOperation)
                and not (type(value) is cst.Call and checker._not_a_loss(value))
            ):
                last[target] = node
            else:
                last.pop(target, None)
        if type(node) in _COMPREHENSION_TYPES:
            shadowed.update(_comprehension_calls(node))
        if (
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and node.func.attr.value == "backward"
            and node not in shadowed
            and type(node.func.value) is cst.Name
            and checker._uses_autograd()
        ):
            name = node.func.value.value
            where = last.get(name)
            if (
                where is not None
                and where not in checker._recording
                and node not in checker._recording
                and not checker._symbolic(where)
            ):
                checker.ctx.report(
                    node, BackwardWithoutRecord, BackwardWithoutRecord.format(name=name)
                )
