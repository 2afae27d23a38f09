"""MXL603 sync-per-element: finds `.asscalar()`, `.asnumpy()`, `.item()`, `.tolist()`, `float(x)`
and `int(x)` of one element of a batch tensor inside a training loop: in an inner loop over the
batch's elements (`for i in range(data.shape[0])`, `for x in pred`) or a comprehension over them
(`[l.asscalar() for l in loss]`). Each is a blocking synchronisation: many per training step.

The functions after the class decide and word its findings; the family's checker
(`rules/memory/checker.py`) runs them on each training loop. Its tests are the examples below
(run by `tests/test_rule_examples.py`), `tests/test_sync.py` and `tests/snapshots/MXL603.txt`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from mxlint import knowledge
from mxlint.checker import FixSpec, NodeEdit
from mxlint.names import target_names
from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.walker import NESTED_SCOPES, iter_nodes

#: Nodes an inner loop's search does not enter: another scope, or work done on some steps.
_SKIPPED_STEPS = frozenset({*NESTED_SCOPES, cst.If, cst.IfExp, cst.While})

if TYPE_CHECKING:
    from mxlint.rules.memory.checker import MemoryChecker


class SyncPerElement(Rule):
    code = "MXL603"
    name = "sync-per-element"
    message = (
        "`{expr}` reads one element of `{tensor}` back {where}: one blocking sync per element, "
        "many per training step; read the whole array once (`{tensor}.asnumpy()`) and index "
        "the NumPy array"
    )
    runtime = Runtime("sync")
    what = """
        Finds `.asscalar()`, `.asnumpy()`, `.item()`, `.tolist()`, `float(x)` and `int(x)` of one
        element of a batch tensor inside a training loop (a loop over a data pipeline that calls
        `backward()` or `trainer.step()`): in an inner loop over the batch's elements (`for i
        in range(data.shape[0])` reading `pred[i]`, `for x in pred`) or in a comprehension over
        them (`[l.asscalar() for l in loss]`). A loop over the per-device shards of a batch
        (`for l in losses` after `split_and_load`) is not one over elements, and an inner loop
        that runs only every N steps (under an `if` in the training loop) is not reported.
    """
    why = """
        Each readback blocks Python until MXNet's engine has computed the value, and each
        `pred[i]` first queues a slicing operator of its own: a loop over 128 samples is 128
        round trips through the engine per step, while the device and the engine's worker sit
        idle between them. Reading the array back once (`pred.asnumpy()`) is one round trip and
        one copy; indexing the NumPy array costs nothing. Unlike MXL602 (one readback of the
        loss per step, off by default), this multiplies the cost by the batch size.
    """
    example = """
        for data, label in train_loader:
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(data.shape[0])
            losses.extend([l.asscalar() for l in loss])
    """
    use_instead = """
        for data, label in train_loader:
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(data.shape[0])
            losses.extend(list(loss.asnumpy().reshape(-1)))
    """
    fix_safety = """
        A comprehension that reads each element with `.asscalar()` (`[l.asscalar() for l in
        loss]`, `sum(l.asscalar() for l in loss)`) is rewritten to one readback of the array
        (`list(loss.asnumpy().reshape(-1))`, `sum(loss.asnumpy().reshape(-1))`): the same
        NumPy scalars in the same order, wherever the original does not raise. It is unsafe:
        for an array whose rows hold more than one value the original raises and the rewrite
        does not. Other forms get no fix. `--verify` counts the synchronisations of the
        flagged line per training step, checks that the rewrite gives the same losses and
        parameters, and times the step before and after it on the threaded engine.
    """
    fixable = "unsafe"
    invalid = (
        Example(
            """
from mxnet import autograd, gluon

loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()


def train(net, trainer, train_loader, history):
    for data, label in train_loader:
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(data.shape[0])
        history.extend([l.asscalar() for l in loss])
""",
            line=13,
            expected_fix="""
from mxnet import autograd, gluon

loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()


def train(net, trainer, train_loader, history):
    for data, label in train_loader:
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(data.shape[0])
        history.extend(list(loss.asnumpy().reshape(-1)))
""",
        ),
        Example(
            """
from mxnet import autograd


def train(net, loss_fn, trainer, train_data):
    correct = 0
    for i, (data, label) in enumerate(train_data):
        with autograd.record():
            output = net(data)
            loss = loss_fn(output, label)
        loss.backward()
        trainer.step(data.shape[0])
        pred = output.argmax(axis=1)
        for j in range(data.shape[0]):
            if pred[j].asscalar() == label[j].asscalar():
                correct += 1
    return correct
""",
            line=15,
        ),
    )
    valid = (
        Valid("""
from mxnet import autograd, gluon


def train(net, loss_fn, trainer, train_data, ctx):
    total = 0.0
    for batch in train_data:
        data = gluon.utils.split_and_load(batch[0], ctx)
        label = gluon.utils.split_and_load(batch[1], ctx)
        with autograd.record():
            losses = [loss_fn(net(x), y) for x, y in zip(data, label)]
        for l in losses:
            l.backward()
        trainer.step(batch[0].shape[0])
        total += sum([l.mean().asscalar() for l in losses])
    return total
"""),
        Valid("""
from mxnet import autograd


def train(net, loss_fn, trainer, train_loader):
    correct = 0
    for data, label in train_loader:
        with autograd.record():
            output = net(data)
            loss = loss_fn(output, label)
        loss.backward()
        trainer.step(data.shape[0])
        pred = output.argmax(axis=1).asnumpy()
        truth = label.asnumpy()
        for j in range(data.shape[0]):
            correct += int(pred[j] == truth[j])
    return correct
"""),
        Valid("""
def evaluate(net, val_loader):
    scores = []
    for data, label in val_loader:
        out = net(data)
        scores.extend([o.asscalar() for o in out])
    return scores
"""),
        Valid("""
from mxnet import autograd


def train(net, loss_fn, trainer, train_loader, log):
    for i, (data, label) in enumerate(train_loader):
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(data.shape[0])
        if i % 100 == 0:
            log([l.asscalar() for l in loss])
"""),
    )


#: Conversions of a tensor to a Python or NumPy value. `asscalar`/`asnumpy` exist on MXNet
#: arrays only; `item`, `tolist`, `float()` and `int()` also on NumPy values, so their receiver
#: must be known to be an MXNet array.
_MXNET_READS = frozenset({"asscalar", "asnumpy"})
_READ_METHODS = _MXNET_READS | {"item", "tolist"}
_READ_FUNCTIONS = frozenset({"float", "int"})
#: NDArray methods that return an array: a value they are called on is an array, not a list.
_ARRAY_METHODS = knowledge.TENSOR_RESULT_METHODS
#: Attributes of an array that a list or tuple does not have.
_ARRAY_EVIDENCE = (_ARRAY_METHODS - {"copy"}) | {
    "backward",
    "asnumpy",
    "asscalar",
    "wait_to_read",
    "attach_grad",
    "shape",
    "dtype",
    "context",
    "ndim",
    "size",
}
_BATCH_SIZE = re.compile(r"(?:^|_)(?:batch_?size|bs)$", re.I)
#: Calls whose result is no tensor (a tensor's length, Python conversions).
_PYTHON_CALLS = frozenset({"len", "float", "int", "str", "range", "list", "dict", "tuple", "zip"})


@dataclass
class _Inner:
    """An iteration over the elements of a batch inside a training loop."""

    node: cst.For | cst.BaseComp
    #: Names bound to one element (`x` in `for x in pred`) or to its index (`i` in
    #: `for i in range(len(pred))`).
    elements: set[str]
    indices: set[str]
    #: What it iterates over, for the message (`pred`, `range(data.shape[0])`).
    source: str
    #: What runs per element: the loop body, or the comprehension's parts.
    body: list[cst.CSTNode]


class _Values:
    """What the names of a training loop hold: MXNet values (`device`: arrays, or lists and
    tuples of them, such as a network's outputs or per-device losses) and, among them, names
    known to hold one array (`arrays`: the batch's data and label, what tensor operators and
    array methods return), whose iteration walks the batch's elements."""

    def __init__(
        self,
        checker: MemoryChecker,
        loop: cst.For,
        body: Sequence[cst.BaseStatement],
        tensors: set[str],
    ) -> None:
        self.checker = checker
        self.batches = _whole_batches(loop)
        self.device = (tensors | _target_names(loop)) - self.batches
        self.arrays = _unpacked_batch(loop)
        self.losses = _loss_objects(checker)
        assigns: list[tuple[str, cst.BaseExpression, cst.CSTNode]] = []
        for stmt in body:
            for node in iter_nodes(stmt, stop=NESTED_SCOPES):
                if type(node) is cst.Assign and len(node.targets) == 1:
                    target = node.targets[0].target
                    if type(target) is cst.Name:
                        assigns.append((target.value, node.value, node))
                    elif type(target) is cst.Tuple and type(node.value) is cst.Call:
                        for name in target_names(target):
                            assigns.append((name, node.value, node))
        changed = True
        while changed:
            changed = False
            for name, value, node in assigns:
                if name not in self.device and self.on_device(value, node):
                    self.device.add(name)
                    changed = True
        # A name the loop uses as an array (`loss.backward()`, `out.argmax(1)`, `x.shape`) is
        # one: a list or tuple of arrays has none of these.
        for stmt in body:
            for node in iter_nodes(stmt, stop=NESTED_SCOPES):
                if (
                    type(node) is cst.Attribute
                    and type(node.value) is cst.Name
                    and node.value.value in self.device
                    and node.attr.value in _ARRAY_EVIDENCE
                ):
                    self.arrays.add(node.value.value)
        changed = True
        while changed:
            changed = False
            for name, value, node in assigns:
                if name not in self.arrays and self.is_array(value, node):
                    self.arrays.add(name)
                    changed = True

    def on_device(self, value: cst.BaseExpression, stmt: cst.CSTNode | None = None) -> bool:
        """`value` is an MXNet value computed from the loop's tensors (not read back)."""
        if type(value) is cst.Name:
            return value.value in self.device
        viewed = _viewed(value)
        if viewed is not None:
            return self.on_device(viewed)
        operands = _operands(value)
        if operands is not None:
            return any(self.on_device(o) for o in operands)
        if type(value) is not cst.Call:
            return False
        func = value.func
        resolved = self.checker.ctx.resolve(func)
        if resolved is not None:
            return _tensor_call(resolved)
        if type(func) is cst.Attribute:
            method = func.attr.value
            if method in _READ_METHODS or method in knowledge.NON_TENSOR_CALL_METHODS:
                return False
            return self.on_device(func.value)
        if type(func) is cst.Name:
            if func.value in _PYTHON_CALLS:
                return False
            if stmt is not None and self.checker._in_record(stmt):
                return True
            return any(self.on_device(a.value) for a in value.args)
        return False

    def is_array(self, value: cst.BaseExpression, stmt: cst.CSTNode | None = None) -> bool:
        """`value` is one MXNet array: not a list or tuple of arrays, not a NumPy value."""
        if type(value) is cst.Name:
            return value.value in self.arrays
        viewed = _viewed(value)
        if viewed is not None:
            return self.on_device(viewed)
        operands = _operands(value)
        if operands is not None:
            return any(self.is_array(o) for o in operands)
        if type(value) is not cst.Call:
            return False
        func = value.func
        resolved = self.checker.ctx.resolve(func)
        if resolved is not None:
            # `split` gives a list of arrays, not one.
            return _tensor_call(resolved) and not resolved.endswith(("split", "SliceChannel"))
        if type(func) is cst.Attribute:
            return func.attr.value in _ARRAY_METHODS and self.on_device(func.value)
        # A Gluon loss object: one loss per sample.
        return type(func) is cst.Name and func.value in self.losses and self.on_device(value)

    def batch_array(self, node: cst.BaseExpression) -> bool:
        """`node` is one array of the step (not the whole batch), iterated over its rows."""
        if type(node) is cst.Name:
            return node.value in self.arrays and node.value not in self.batches
        return type(node) is cst.Call and self.is_array(node)


def _viewed(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """The value `x[i]` or `x.T` is read from, else None."""
    if type(value) is cst.Subscript or (type(value) is cst.Attribute and value.attr.value == "T"):
        return value.value
    return None


def _operands(value: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """The operands an arithmetic, unary or comparison expression is computed from, in order;
    None for any other expression."""
    if type(value) is cst.BinaryOperation:
        return [value.left, value.right]
    if type(value) is cst.UnaryOperation:
        return [value.expression]
    if type(value) is cst.Comparison:
        return [value.left, *(c.comparator for c in value.comparisons)]
    return None


def check_per_element(checker: MemoryChecker, loop: cst.For, tensors: set[str]) -> None:
    """Per-element readbacks in one training loop (a data loop that queues a step)."""
    if type(loop.body) is not cst.IndentedBlock:
        return
    if not any(checker._queues_step(stmt) for stmt in loop.body.body):
        return
    body = list(loop.body.body)
    values = _Values(checker, loop, body, tensors)
    reported: set[cst.CSTNode] = set()
    for inner in _inner_iterations(checker, body, values):
        for call, tensor in _readbacks(checker, inner, values):
            if call in reported:
                continue
            reported.add(call)
            expr = " ".join(checker.ctx.code(call).split())
            over = "a loop" if type(inner.node) is cst.For else "a comprehension"
            checker.ctx.report(
                call,
                SyncPerElement,
                SyncPerElement.format(
                    expr=expr, tensor=tensor, where=f"in {over} over `{inner.source}`"
                ),
                fix=_fix(inner, call),
                data={"function": checker.ctx.symbol() or "<module>"},
            )


def _target_names(loop: cst.For) -> set[str]:
    return {n.value for n in iter_nodes(loop.target) if type(n) is cst.Name}


def _whole_batches(loop: cst.For) -> set[str]:
    """Names bound to a whole batch (`batch` in `for batch in loader` or `for i, batch in
    enumerate(loader)`): a list of arrays (data, label), whose iteration is not per element."""
    target = loop.target
    if type(target) is cst.Name:
        return {target.value}
    enumerated = (
        type(loop.iter) is cst.Call
        and type(loop.iter.func) is cst.Name
        and loop.iter.func.value == "enumerate"
    )
    if enumerated and type(target) is cst.Tuple and len(target.elements) == 2:
        second = target.elements[1].value
        if type(second) is cst.Name:
            return {second.value}
    return set()


def _unpacked_batch(loop: cst.For) -> set[str]:
    """The batch's arrays when the loop unpacks them: `data, label` of `for data, label in
    loader` or of `for i, (data, label) in enumerate(loader)`."""
    target = loop.target
    if type(target) is not cst.Tuple:
        return set()
    items = [el.value for el in target.elements]
    if len(items) == 2 and type(items[1]) is cst.Tuple:
        items = [el.value for el in items[1].elements]  # enumerate(loader): (i, (data, label))
    elif (
        type(loop.iter) is cst.Call
        and type(loop.iter.func) is cst.Name
        and loop.iter.func.value == "enumerate"
    ):
        return set()
    return {item.value for item in items if type(item) is cst.Name}


def _loss_objects(checker: MemoryChecker) -> set[str]:
    """Names the file binds to a Gluon loss (`loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()`),
    whose call returns one loss per sample."""
    if checker._loss_objects is not None:
        return checker._loss_objects
    out: set[str] = set()
    for node in iter_nodes(checker.ctx.module):
        if type(node) is cst.Assign and len(node.targets) == 1 and type(node.value) is cst.Call:
            target = node.targets[0].target
            resolved = checker.ctx.resolve(node.value.func)
            if type(target) is cst.Name and knowledge.in_namespace(resolved, ("mxnet.gluon.loss",)):
                out.add(target.value)
    checker._loss_objects = out
    return out


def _inner_iterations(
    checker: MemoryChecker, body: Sequence[cst.BaseStatement], values: _Values
) -> Iterator[_Inner]:
    """Loops and comprehensions inside the training loop (not under an `if` of it) that iterate
    over the elements of a batch tensor."""
    from mxlint.walker import children

    stack: list[cst.CSTNode] = list(reversed(body))
    while stack:
        node = stack.pop()
        if type(node) in _SKIPPED_STEPS:
            continue  # another scope, or work done only on some steps
        if type(node) is cst.For:
            found = _over_elements(checker, node.target, node.iter, values)
            if found is not None and type(node.body) is cst.IndentedBlock:
                elements, indices, source = found
                yield _Inner(node, elements, indices, source, list(node.body.body))
                continue
        elif (
            type(node) is cst.ListComp
            or type(node) is cst.SetComp
            or type(node) is cst.GeneratorExp
            or type(node) is cst.DictComp
        ):
            comp = node.for_in
            found = _over_elements(checker, comp.target, comp.iter, values)
            if found is not None:
                elements, indices, source = found
                parts: list[cst.CSTNode] = (
                    [node.key, node.value] if isinstance(node, cst.DictComp) else [node.elt]
                )
                parts += list(comp.ifs)
                if comp.inner_for_in is not None:
                    parts.append(comp.inner_for_in)
                yield _Inner(node, elements, indices, source, parts)
                continue
        stack.extend(reversed(list(children(node))))


def _over_elements(
    checker: MemoryChecker,
    target: cst.BaseAssignTargetExpression,
    it: cst.BaseExpression,
    values: _Values,
) -> tuple[set[str], set[str], str] | None:
    """(element names, index names, source) when `for target in it` walks the elements of a
    batch array: the array itself (`pred`, `enumerate(pred)`, `zip(pred, label)`) or the
    indices of its first axis (`range(len(pred))`, `range(data.shape[0])`,
    `range(batch_size)`)."""
    source = " ".join(checker.ctx.code(it).split())
    enumerated = False
    if type(it) is cst.Call and type(it.func) is cst.Name and it.func.value == "enumerate":
        if not it.args:
            return None
        it, enumerated = it.args[0].value, True
    names = list(target_names(target))
    if enumerated:
        if type(target) is not cst.Tuple or len(target.elements) != 2:
            return None
        index = list(target_names(target.elements[0].value))
        rest = set(names) - set(index)
    else:
        index, rest = [], set(names)
    if values.batch_array(it):
        return rest, set(index), source
    if type(it) is cst.Call and type(it.func) is cst.Name and it.func.value == "zip":
        if it.args and all(values.batch_array(a.value) for a in it.args):
            return rest, set(index), source
        return None
    if (
        not enumerated
        and type(it) is cst.Call
        and type(it.func) is cst.Name
        and it.func.value == "range"
        and it.args
        and _batch_count(it.args[1].value if len(it.args) > 1 else it.args[0].value, values)
    ):
        return set(), set(names), source
    return None


def _batch_count(node: cst.BaseExpression, values: _Values) -> bool:
    """The number of elements of a batch: `len(pred)`, `data.shape[0]`, `batch_size`."""
    if (
        type(node) is cst.Call
        and type(node.func) is cst.Name
        and node.func.value == "len"
        and len(node.args) == 1
    ):
        return values.batch_array(node.args[0].value)
    if (
        type(node) is cst.Subscript
        and type(node.value) is cst.Attribute
        and node.value.attr.value == "shape"
        and len(node.slice) == 1
        and type(node.slice[0].slice) is cst.Index
        and type(node.slice[0].slice.value) is cst.Integer
        and node.slice[0].slice.value.value == "0"
    ):
        base = node.value.value
        return type(base) is cst.Name and base.value in values.device
    last = node.attr.value if type(node) is cst.Attribute else None
    if type(node) is cst.Name:
        last = node.value
    return last is not None and _BATCH_SIZE.search(last) is not None


def _readbacks(
    checker: MemoryChecker, inner: _Inner, values: _Values
) -> Iterator[tuple[cst.Call, str]]:
    """Readbacks in the inner iteration of a value that depends on its element: (the call, the
    batch array it reads from)."""
    iteration = inner.node
    it = iteration.iter if isinstance(iteration, cst.For) else iteration.for_in.iter
    sources = _iterated_names(it)
    # An element of one array names that array; of a zip, itself.
    elements = {name: sources[0] if len(sources) == 1 else name for name in inner.elements}
    # Names bound inside the iteration to an element's value (`p = pred[i]`).
    derived: dict[str, str] = {}
    for part in inner.body:
        for node in iter_nodes(part, stop=NESTED_SCOPES):
            if type(node) is cst.Assign and len(node.targets) == 1:
                target = node.targets[0].target
                if type(target) is cst.Name and (
                    values.on_device(node.value) or _mentions(node.value, elements)
                ):
                    tensor = _element_of(node.value, elements, derived, inner.indices, values)
                    if tensor is not None and not _reads_back(node.value):
                        derived[target.value] = tensor
    for part in inner.body:
        for node in iter_nodes(part, stop=NESTED_SCOPES):
            if type(node) is not cst.Call:
                continue
            func = node.func
            if type(func) is cst.Attribute and func.attr.value in _READ_METHODS:
                value: cst.BaseExpression = func.value
                mxnet_only = func.attr.value in _MXNET_READS
            elif (
                type(func) is cst.Name
                and func.value in _READ_FUNCTIONS
                and len(node.args) == 1
                and checker.ctx.resolve(func) is None
            ):
                value, mxnet_only = node.args[0].value, False
            else:
                continue
            if _reads_back(value):
                continue  # `x.asnumpy().tolist()`: the inner call is the readback
            tensor = _element_of(value, elements, derived, inner.indices, values)
            if tensor is None:
                continue
            if mxnet_only or _from_array(value, elements, derived, values):
                yield node, tensor


def _mentions(value: cst.BaseExpression, names: dict[str, str]) -> bool:
    return any(type(n) is cst.Name and n.value in names for n in iter_nodes(value))


def _reads_back(value: cst.BaseExpression) -> bool:
    """`value` contains a readback (`x.asnumpy()[0]`): it is a host value."""
    return any(
        type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value in _READ_METHODS
        for n in iter_nodes(value, stop=NESTED_SCOPES)
    )


def _from_array(
    value: cst.BaseExpression, elements: dict[str, str], derived: dict[str, str], values: _Values
) -> bool:
    """`value` (read by `item()`, `tolist()`, `float()`) is an MXNet array, not a NumPy one:
    an element of a batch array, or an array method or subscript of one."""
    if type(value) is cst.Name:
        return value.value in elements or value.value in derived
    if type(value) is cst.Subscript:
        base = value.value
        while type(base) is cst.Subscript:
            base = base.value
        return type(base) is cst.Name and (base.value in values.device or base.value in elements)
    if type(value) is cst.Call and type(value.func) is cst.Attribute:
        return value.func.attr.value in _ARRAY_METHODS and _from_array(
            value.func.value, elements, derived, values
        )
    return False


def _iterated_names(it: cst.BaseExpression) -> list[str]:
    if type(it) is cst.Call and type(it.func) is cst.Name and it.func.value in ("enumerate", "zip"):
        out: list[str] = []
        for arg in it.args:
            out += _iterated_names(arg.value)
        return out
    return [it.value] if type(it) is cst.Name else []


def _element_of(
    value: cst.BaseExpression,
    elements: dict[str, str],
    derived: dict[str, str],
    indices: set[str],
    values: _Values,
) -> str | None:
    """The batch array whose element `value` reads: it uses an element name, a name derived
    from one, or indexes an MXNet value with the iteration's index (`pred[i]`)."""
    for node in iter_nodes(value, stop=NESTED_SCOPES):
        if type(node) is cst.Name:
            if node.value in elements:
                return elements[node.value]
            if node.value in derived:
                return derived[node.value]
        if type(node) is cst.Subscript and indices:
            base = node.value
            while type(base) is cst.Subscript:
                base = base.value
            if type(base) is cst.Name and base.value in values.device:
                used = {
                    n.value
                    for el in node.slice
                    for n in iter_nodes(el.slice)
                    if type(n) is cst.Name
                }
                if used & indices:
                    return base.value
    return None


def _fix(inner: _Inner, call: cst.Call) -> FixSpec | None:
    """`[x.asscalar() for x in t]` -> `list(t.asnumpy().reshape(-1))`; `sum(x.asscalar() for x
    in t)` -> `sum(t.asnumpy().reshape(-1))`."""
    node = inner.node
    if not isinstance(node, (cst.ListComp, cst.GeneratorExp)):
        return None
    comp, elt = node.for_in, node.elt
    if (
        comp.ifs
        or comp.inner_for_in is not None
        or comp.asynchronous is not None
        or type(comp.target) is not cst.Name
        or type(comp.iter) is not cst.Name
        or elt is not call
        or type(call.func) is not cst.Attribute
        or call.func.attr.value != "asscalar"
        or call.args
        or type(call.func.value) is not cst.Name
        or call.func.value.value != comp.target.value
    ):
        return None
    array = f"{comp.iter.value}.asnumpy().reshape(-1)"
    if type(node) is cst.ListComp:
        return FixSpec("unsafe", "Read the array back once", (NodeEdit(node, f"list({array})"),))
    if node.lpar:
        return None  # `(x.asscalar() for x in t)` with parentheses of its own: not an argument
    return FixSpec("unsafe", "Read the array back once", (NodeEdit(node, array),))


def _tensor_call(resolved: str) -> bool:
    """An MXNet operator call that gives tensors (not `waitall`, `save` or `load`)."""
    return knowledge.in_namespace(resolved, knowledge.TENSOR_NAMESPACES) and not resolved.endswith(
        ("waitall", "save", "load")
    )
