"""MXL404 inplace-write-in-record: finds in-place writes inside `with autograd.record():` that
MXNet's autograd rejects: a slice assignment (`x[...] = v`), an `out=` argument or an augmented
assignment (`x += v`) whose target is already part of the recorded graph (the output of a
recorded operator, or an array a recorded operator has read), a partial write or `+=` of a
recorded value into an NDArray, and `x += v` that makes `x` a recorded array on one iteration
and writes into it on the next.

The functions after the class decide and word its findings; the family's checker
(`rules/memory/checker.py`) runs them. Its tests are the
examples below (run by `tests/test_rule_examples.py`), `tests/test_memory.py` and
`tests/snapshots/MXL404.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mxlint import knowledge
from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.memory._analysis import _IN_GRAPH, _full_slice, _keyword, _Record

if TYPE_CHECKING:
    from mxlint.rules.memory.checker import RecordChecker


class InplaceWriteInRecord(Rule):
    code = "MXL404"
    name = "inplace-write-in-record"
    runtime = Runtime("memory", loud=True, error=r"computational graph|in-?place")
    message = (
        "{write} writes into `{target}` in place inside `autograd.record()`, and "
        '{reason}: MXNet raises "Inplace operations (+=, -=, x[:]=, etc) are not '
        'supported when recording with autograd"; compute a new array instead '
        "(`{target} = ...`, `nd.where(mask, a, b)` for masked updates) or write outside "
        "the `with` block"
    )
    what = """
        Finds in-place writes inside `with autograd.record():` that MXNet's autograd rejects:
        a slice assignment (`x[...] = v`), an `out=` argument or an augmented assignment
        (`x += v`) whose target is already part of the recorded graph (the output of a
        recorded operator, or an array a recorded operator has read), a partial write or
        `+=` of a recorded value into an NDArray, and `x += v` that makes `x` a recorded
        array on one iteration and writes into it on the next.
    """
    why = """
        Autograd keeps every recorded array's producer and consumers; overwriting one would
        make the saved graph compute wrong gradients, so MXNet 1.x checks every write while
        recording and raises "Assigning to NDArrays that are already in a computational graph"
        or "Inplace operations (+=, -=, x[:]=, etc) are not supported when recording with
        autograd" — at run time, after data loading and the first forward pass. Writing into a
        fresh array that no recorded operator has touched (`buf[:] = out`,
        `nd.relu(h, out=buf)`, filling a mask with constants) is a plain copy and works; so is
        `total += loss.mean().asscalar()` (a Python float). A write where the error is
        expected (in the body of a `try` that catches `MXNetError`, or of `pytest.raises()` /
        `assertRaises()`: a test that MXNet rejects it) is not reported.
    """
    example = """
        with autograd.record():
            out = net(data)
            out[:, 0] = 0
            loss = loss_fn(out, label)
    """
    use_instead = """
        with autograd.record():
            out = net(data)
            mask = nd.ones(out.shape, ctx=out.context)
            mask[:, 0] = 0
            loss = loss_fn(out * mask, label)
    """
    fix_safety = """
        No automatic fix: the functional rewrite (a mask, `nd.where`, a new array) depends on
        what the write is for.
    """
    invalid = (
        Example(
            """
from mxnet import autograd, nd

def step(net, x):
    with autograd.record():
        out = net(x)
        out[:] = nd.relu(out)
        loss = out.sum()
    loss.backward()
""",
            line=7,
        ),
        Example(
            """
import mxnet as mx

def step(net, x, bias):
    with mx.autograd.record():
        h = net(x)
        mx.nd.elemwise_add(h, bias, out=h)
        loss = h.sum()
    loss.backward()
""",
            line=7,
        ),
        Example(
            """
from mxnet import autograd

def step(net, loss_fn, data, label):
    with autograd.record():
        loss = 0
        for x, y in zip(data, label):
            loss += loss_fn(net(x), y)
    loss.backward()
""",
            line=8,
        ),
    )
    valid = (
        Valid(
            """
import mxnet as mx
import pytest


def test_setitem_while_recording_raises():
    x = mx.nd.zeros((2, 3))
    y = mx.nd.ones((3,))
    y.attach_grad()
    try:
        with mx.autograd.record():
            x[0] = y
    except mx.base.MXNetError:
        pass
    with pytest.raises(mx.base.MXNetError):
        with mx.autograd.record():
            out = y * 2
            out[:] = 0
""",
            filename="tests/test_autograd.py",
        ),
        Valid("""
from mxnet import autograd, nd

def step(net, x):
    with autograd.record():
        out = nd.relu(net(x))
        loss = out.sum()
    loss.backward()
"""),
        Valid("""
import numpy as np
from mxnet import autograd

def train(net, loss_fn, loader, n):
    scores = np.zeros(n)
    total = 0.0
    for i, (x, y) in enumerate(loader):
        with autograd.record():
            loss = loss_fn(net(x), y)
            scores[i] = loss.mean().asscalar()
            total += loss.mean().asscalar()
        loss.backward()
"""),
        Valid("""
from mxnet import autograd, nd

def step(net, loss_fn, x, y):
    with autograd.record():
        out = net(x)
        mask = nd.ones(out.shape, ctx=out.context)
        mask[:, 0] = 0
        loss = loss_fn(nd.where(mask, out, nd.zeros_like(out)), y)
    loss.backward()
"""),
        Valid("""
from mxnet import autograd

def step(net, loss_fn, data, label):
    with autograd.record():
        loss = 0
        for x, y in zip(data, label):
            loss = loss + loss_fn(net(x), y)
    loss.backward()
"""),
        Valid("""
from mxnet import autograd, nd

def step(net, x):
    x[:] = x / 255
    with autograd.record():
        loss = net(x).sum()
    loss.backward()
    x[:] = 0
"""),
    )


def check_slice_write(
    checker: RecordChecker,
    rec: _Record,
    stmt: cst.CSTNode,
    target: cst.Subscript,
    name: str,
    value: cst.BaseExpression,
) -> bool:
    if name in rec.in_graph:
        checker._report(
            stmt,
            InplaceWriteInRecord,
            target=name,
            write=f"`{name}[...] = ...`",
            reason=_IN_GRAPH.format(name=name),
        )
        return True
    if name in rec.fresh:
        if rec.graph_expr(value):
            if not _full_slice(target):
                checker._report(
                    stmt,
                    InplaceWriteInRecord,
                    target=name,
                    write=f"`{name}[...] = ...`",
                    reason="a recorded value is written into part of it",
                )
            else:
                rec.recorded.add(name)
                rec.in_graph.add(name)
                rec.fresh.discard(name)
        return True
    return False


def check_augassign(checker: RecordChecker, rec: _Record, node: cst.AugAssign, name: str) -> bool:
    op = rec.ctx.code(node.operator).strip()
    write = f"`{name} {op} ...`"
    if name in rec.in_graph:
        checker._report(
            node,
            InplaceWriteInRecord,
            target=name,
            write=write,
            reason=_IN_GRAPH.format(name=name),
        )
        return True
    if name in rec.containers or type(node.value) in (
        cst.List,
        cst.Tuple,
        cst.ListComp,
        cst.GeneratorExp,
    ):
        return False
    if not rec.recorded_expr(node.value):
        return False
    if name in rec.fresh:
        checker._report(
            node,
            InplaceWriteInRecord,
            target=name,
            write=write,
            reason=f"`{name}` is an NDArray and the value added is recorded",
        )
        return True
    loop = rec.loops[0] if rec.loops else None
    if loop is None or name in rec.scope.params:
        return False
    inside = checker._inside(loop)
    bindings = rec.scope.assigns.get(name, [])
    if bindings and not any(n in inside for n, _ in bindings):
        checker._report(
            node,
            InplaceWriteInRecord,
            target=name,
            write=write,
            reason=f"from the second iteration on, `{name}` is the NDArray "
            "recorded by the previous one",
        )
        return True
    return False


def check_out_keyword(checker: RecordChecker, rec: _Record, call: cst.Call) -> None:
    out = _keyword(call, "out")
    if type(out) is not cst.Name:
        return
    resolved = checker.ctx.resolve(call.func)
    if resolved is not None and checker.known_module(resolved) and not knowledge.is_mxnet(resolved):
        return
    name = out.value
    write = f"`out={name}`"
    if name in rec.in_graph:
        checker._report(
            call,
            InplaceWriteInRecord,
            target=name,
            write=write,
            reason=_IN_GRAPH.format(name=name),
        )
        return
    inputs = [a.value for a in call.args if a.keyword is None or a.keyword.value != "out"]
    if any(type(a) is cst.Name and a.value == name for a in inputs) and any(
        rec.graph_expr(a) for a in inputs
    ):
        checker._report(
            call,
            InplaceWriteInRecord,
            target=name,
            write=write,
            reason="the operator reads and overwrites it while recording",
        )
