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

from mxlint import knowledge
from mxlint.names import dotted_name, names_a_network
from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.memory._analysis import _COMPREHENSION_TYPES, _comprehension_calls
from mxlint.semantic.effects import Effects
from mxlint.walker import iter_nodes

if TYPE_CHECKING:
    from mxlint.rules.memory.checker import MemoryChecker


#: The loss is recorded but its network output is not.
UNRECORDED_FORWARD = (
    "`{name}` is computed inside `autograd.record()` from `{out}`, a network output computed "
    "before the block (`{forward}`): no recorded operator leads back to the parameters, so "
    '`{name}.backward()` raises "Cannot differentiate node because it is not in a '
    'computational graph"; run the forward pass inside the `with autograd.record():` block'
)


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
        outside any `with autograd.record():` block, or inside it but only from a network
        output computed before the block (`out = net(x)` outside, `loss = loss_fn(out, y)`
        inside), also through a helper of the file that returns what the network it is given
        computes (`out = forward(net, x)`) or, in a method, a method of the class that returns
        what a network the object holds computes (`logits = self._forward(batch)`). A loss
        returned by a helper that runs the network without recording (`loss, out =
        compute(net, x, y)`) is one computed outside the block; one returned by a helper that
        records itself (a `with autograd.record():` inside it, or in a helper it calls; of
        another file, as far as the run shows) is not reported. An output whose gradient is
        asked for (`out.attach_grad()`) and targets of a frozen teacher beside a recorded
        student are not reported, nor a loss computed from another autograd library's tensors
        (`torch.autograd.Variable(x)` in a script that compares PyTorch with MXNet), whose
        `backward()` is that library's.
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
        # The forward pass ran before the block: the recorded loss leads to no parameter.
        Example(
            """from mxnet import autograd


def train(net, loader, trainer, loss_fn):
    for data, label in loader:
        out = net(data)
        with autograd.record():
            loss = loss_fn(out, label)
        loss.backward()
        trainer.step(data.shape[0])
""",
            line=9,
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
        # PyTorch beside MXNet (a comparison of the two): a loss computed from torch tensors
        # is PyTorch's, recorded without `autograd.record()`.
        Valid("""
import torch
from mxnet import autograd, nd

def compare(torch_net, mx_net, criterion, mx_loss, data, label):
    x = torch.autograd.Variable(torch.from_numpy(data), requires_grad=False)
    out = torch_net(x)
    loss = criterion(out, torch.from_numpy(label))
    loss.backward()
    with autograd.record():
        mx_l = mx_loss(mx_net(nd.array(data)), nd.array(label))
    mx_l.backward()
"""),
        # A frozen teacher's targets are computed outside on purpose; the student is recorded.
        Valid("""
from mxnet import autograd

def distill(student, teacher, loader, trainer, kd_loss):
    for data, label in loader:
        soft = teacher(data)
        with autograd.record():
            loss = kd_loss(student(data), soft)
        loss.backward()
        trainer.step(data.shape[0])
"""),
    )


def check_backward(checker: MemoryChecker, nodes: list[cst.CSTNode]) -> None:
    """MXL403: the last assignment of `x` before `x.backward()` ran outside record().
    `nodes`: the scope's nodes of the kinds `_SCOPE_KINDS` lists, in source order."""
    last: dict[str, cst.CSTNode] = {}
    #: Assignments from a function of another file: reported if the run shows it never records.
    helpers: dict[cst.CSTNode, str] = {}
    attached: set[str] = set()
    #: `.backward()` calls on a comprehension's own variable (`[l.backward() for l in ls]`).
    shadowed: set[cst.CSTNode] = set()
    #: Every name's last bound value, for where a loss comes from (`_other_framework`).
    values: dict[str, cst.BaseExpression] = {}
    for node in nodes:
        for target, value in checker._bindings(node):
            values[target] = value
            # Only `loss = f(...)`: a tuple unpacked from a helper may be anything (an
            # Executor, a Module) unless the helper is one of the file's that runs the network
            # it is given; `autograd.grad(create_graph=True)` is recorded, and so is what a
            # helper that records itself returns.
            simple = type(node) is cst.Assign and type(node.targets[0].target) is cst.Name
            effects = (
                checker.ctx.effects.of_call(value, checker.scope_class)
                if type(value) is cst.Call
                else None
            )
            if isinstance(effects, Effects) and effects.records:
                last.pop(target, None)
            elif (
                simple
                and type(value) in (cst.Call, cst.BinaryOperation)
                and not (type(value) is cst.Call and checker._not_a_loss(value))
            ) or (
                type(node) is cst.Assign and isinstance(effects, Effects) and effects.runs_forward
            ):
                last[target] = node
                if isinstance(effects, str):
                    helpers[node] = effects
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
            if where is not None and _other_framework(checker, where, values):
                pass  # a PyTorch loss beside MXNet code (a side-by-side comparison)
            elif (
                where is not None
                and where not in checker._recording
                and node not in checker._recording
                and not checker._symbolic(where)
            ):
                callee = helpers.get(where)
                checker.ctx.report(
                    node,
                    BackwardWithoutRecord,
                    BackwardWithoutRecord.format(name=name),
                    requires=("no-record", callee) if callee is not None else None,
                )
            elif where is not None and where in checker._recording:
                _unrecorded_forward(checker, node, name, where, last, attached)
        if (
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and node.func.attr.value == "attach_grad"
            and type(node.func.value) is cst.Name
        ):
            attached.add(node.func.value.value)


def _unrecorded_forward(
    checker: MemoryChecker,
    backward: cst.Call,
    name: str,
    where: cst.CSTNode,
    last: dict[str, cst.CSTNode],
    attached: set[str],
) -> None:
    """The loss is computed under record() from names only, and every network output among
    them was computed before the block: nothing recorded leads back to the parameters."""
    value = where.value if type(where) is cst.Assign else None
    if type(value) is not cst.Call or not value.args:
        return
    outside: list[tuple[str, cst.CSTNode]] = []
    for arg in value.args:
        if type(arg.value) is not cst.Name:
            return  # an expression computed here may be recorded
        source = last.get(arg.value.value)
        if source is None:
            continue
        if source in checker._recording or arg.value.value in attached:
            return  # a recorded input (or one whose gradient is asked for)
        bound = source.value if type(source) is cst.Assign else None
        if type(bound) is cst.Call and (_network_call(bound) or _forward_helper(checker, bound)):
            outside.append((arg.value.value, source))
    if not outside:
        return
    out, source = outside[0]
    checker.ctx.report(
        backward,
        BackwardWithoutRecord,
        UNRECORDED_FORWARD.format(name=name, out=out, forward=checker.ctx.code(source).strip()),
    )


def _other_framework(
    checker: MemoryChecker, where: cst.CSTNode, values: dict[str, cst.BaseExpression]
) -> bool:
    """The loss is computed from a value of another autograd library (`torch.tensor(...)`,
    `torch.autograd.Variable(x)`), directly or through the names it is computed from: its
    `backward()` is that library's, which records without `autograd.record()`."""
    todo = [where.value] if type(where) is cst.Assign else []
    seen: set[str] = set()
    while todo:
        for node in iter_nodes(todo.pop(), stop=(cst.Lambda,)):
            if type(node) is cst.Call:
                name = checker.ctx.resolve(node.func)
                if name is not None and name.split(".", 1)[0] in knowledge.OTHER_AUTOGRAD_ROOTS:
                    return True
            elif type(node) is cst.Name and node.value not in seen and node.value in values:
                seen.add(node.value)
                todo.append(values[node.value])
    return False


def _forward_helper(checker: MemoryChecker, call: cst.Call) -> bool:
    """`forward(net, x)`: a function of this file that returns what the network it is given
    computes, called with a network; or `self._forward(x)`, a method that returns what a
    network of its object computes."""
    effects = checker.ctx.effects.of_call(call, checker.scope_class)
    if not isinstance(effects, Effects):
        return False
    if effects.returns_own_forward:
        # `self._forward(batch)`: a method running the network its object holds.
        func = call.func
        return (
            type(func) is cst.Attribute
            and type(func.value) is cst.Name
            and func.value.value == "self"
        )
    return effects.returns_forward and any(
        (key := dotted_name(a.value)) is not None and names_a_network(key) for a in call.args
    )


def _network_call(call: cst.Call) -> bool:
    """`net(x)`, `self.model(x)`, `net.forward(x)`: a network run on data."""
    func = call.func
    if type(func) is cst.Attribute and func.attr.value == "forward":
        func = func.value
    key = dotted_name(func)
    return key is not None and names_a_network(key)
