"""MXL4xx autograd and memory, MXL6xx sync and timing: the asynchronous engine in training loops.

MXNet's engine returns from every operator at once and computes later. A loop that only keeps
NDArrays (a running `total += loss`, a list of outputs) never waits for the engine, so the Python
side runs ahead and the pending work and its buffers pile up; a timer read without a sync
measures how fast operators were *queued*, not run. Both end at the first synchronising call.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from mxlint import knowledge
from mxlint.checker import Checker
from mxlint.rule import Example, Rule, Valid
from mxlint.walker import iter_nodes

_NESTED = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_LOOPS = (cst.For, cst.While)
_REDUCERS = frozenset({"mean", "sum", "max", "min", "norm", "reshape", "flatten", "square",
                       "sqrt", "abs", "exp", "log", "detach", "copy", "astype", "squeeze"})


class AccumulatedWithoutSync(Rule):
    code = "MXL401"
    name = "accumulated-ndarray-without-sync"
    message = ("`{target}` accumulates NDArrays across iterations of a loop that never "
               "synchronises: the asynchronous engine runs ahead and memory grows; accumulate "
               "a Python number (`{hint}`) or call `mx.nd.waitall()` in the loop")
    what = """
        Finds NDArrays accumulated across loop iterations (`total = total + loss`,
        `total += loss`, `outputs.append(out)`) in a loop that never synchronises with the
        engine (`.asscalar()`, `.asnumpy()`, `.item()`, `.wait_to_read()`, `mx.nd.waitall()`,
        `metric.update(...)`).
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
        Example("""
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
""", line=12),
        Example("""
from mxnet import nd

def collect(net, loader):
    outputs = []
    for batch in loader:
        out = net(batch)
        outputs.append(out)
    return nd.concat(*outputs, dim=0)
""", line=8),
        Example("""
from mxnet import autograd

def train(net, loss_fn, loader):
    running = None
    for x, y in loader:
        with autograd.record():
            l = loss_fn(net(x), y)
        l.backward()
        running = l.sum() if running is None else running + l.sum()
""", line=10),
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


class TimingWithoutSync(Rule):
    code = "MXL601"
    name = "timing-without-sync"
    message = ("`{expr}` times MXNet work that may not have run yet: operators return before "
               "they compute; call `mx.nd.waitall()` before reading the end time")
    what = """
        Finds a duration measured with `time.time()`/`time.perf_counter()`/`time.monotonic()`/
        `timeit.default_timer()` around MXNet work with no synchronising call between the work
        and the end timestamp.
    """
    why = """
        MXNet's engine is asynchronous: `net(x)`, `loss.backward()` and `trainer.step()` return
        as soon as the operators are queued. Without `mx.nd.waitall()` (or `.asnumpy()`,
        `.asscalar()`, `.wait_to_read()`) the measured time is how long queuing took, and the
        real cost lands in whatever line synchronises next.
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
        Example("""
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
""", line=12),
        Example("""
import time
import mxnet as mx

def bench(net, x):
    start = time.perf_counter()
    for _ in range(10):
        y = net(x)
    elapsed = time.perf_counter() - start
    return elapsed
""", line=9),
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
    )


class BackwardWithoutRecord(Rule):
    code = "MXL403"
    name = "backward-without-record"
    message = ("`{name}` was computed outside `autograd.record()`, so `{name}.backward()` has no "
               "graph to differentiate (MXNet raises \"Cannot differentiate node because it is "
               "not in a computational graph\"); compute it inside the `with autograd.record():` "
               "block")
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
        Example("""
from mxnet import autograd

def step(net, loss_fn, trainer, data, label):
    with autograd.record():
        output = net(data)
    loss = loss_fn(output, label)
    loss.backward()
    trainer.step(data.shape[0])
""", line=8),
        Example("""
import mxnet as mx

def step(net, loss_fn, data, label):
    loss = loss_fn(net(data), label)
    loss.backward()
""", line=6),
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


class MemoryChecker(Checker):
    rules = (AccumulatedWithoutSync, BackwardWithoutRecord, TimingWithoutSync)
    name = "memory"

    def visit_Module(self, node: cst.Module) -> None:
        self._scopes.append(node.body)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if isinstance(node.body, cst.IndentedBlock):
            self._scopes.append(node.body.body)

    def end(self) -> None:
        # After the walk: every `autograd.record()` block is known by then.
        for body in self._scopes:
            self._scope(body)

    # -- one function (or the module's top level) ----------------------------------------

    def _scope(self, body: tuple[cst.BaseStatement, ...] | list[cst.BaseStatement]) -> None:
        if not self._mentions_mxnet():
            return
        tensors = self._tensor_names(body)
        for stmt in body:
            for node in iter_nodes(stmt, stop=_NESTED):
                if isinstance(node, _LOOPS):
                    self._loop(node, tensors)
        self._timing(list(body))
        self._backward(body)
        for stmt in body:
            for node in iter_nodes(stmt, stop=_NESTED):
                if isinstance(node, cst.IndentedBlock):
                    self._timing(list(node.body))

    def _mentions_mxnet(self) -> bool:
        return self.ctx.imports.mentions_mxnet()

    def _tensor_names(self, body: tuple | list, seed: set[str] | None = None) -> set[str]:
        """Names bound to NDArrays in this scope: results of networks and losses run under
        `autograd.record()`, of `nd.*` calls, of loops over data loaders, and what is computed
        from them by operators and tensor methods."""
        names: set[str] = set(seed or ())
        changed = True
        while changed:
            changed = False
            for stmt in body:
                for node in iter_nodes(stmt, stop=_NESTED):
                    for target, value in self._bindings(node):
                        if target not in names and self._is_tensor(value, names, node):
                            names.add(target)
                            changed = True
        return names

    def _bindings(self, node: cst.CSTNode) -> Iterator[tuple[str, cst.BaseExpression]]:
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            if isinstance(target, cst.Name):
                yield target.value, node.value
            elif isinstance(target, cst.Tuple) and isinstance(node.value, cst.Call):
                for el in target.elements:
                    if isinstance(el.value, cst.Name):
                        yield el.value.value, node.value

    def _backward(self, body: tuple | list) -> None:
        """MXL403: the last assignment of `x` before `x.backward()` ran outside record()."""
        last: dict[str, cst.CSTNode] = {}
        for stmt in body:
            for node in iter_nodes(stmt, stop=_NESTED):
                for target, value in self._bindings(node):
                    if isinstance(value, (cst.Call, cst.BinaryOperation)):
                        last[target] = node
                    else:
                        last.pop(target, None)
                if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                        node.func.attr.value == "backward" and \
                        isinstance(node.func.value, cst.Name):
                    name = node.func.value.value
                    where = last.get(name)
                    if where is not None and where not in self._recording and \
                            node not in self._recording:
                        self.ctx.report(node, BackwardWithoutRecord,
                                        BackwardWithoutRecord.format(name=name))

    def _in_record(self, node: cst.CSTNode) -> bool:
        return node in self._record_nodes

    def begin(self) -> None:
        self._record_nodes: set[cst.CSTNode] = set()
        #: Nodes inside `autograd.record()` proper (train_mode() does not record).
        self._recording: set[cst.CSTNode] = set()
        self._scopes: list = []

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            call = item.item
            if isinstance(call, cst.Call) and \
                    self.ctx.resolve(call.func) in knowledge.AUTOGRAD_RECORD:
                recording = self.ctx.resolve(call.func) == "mxnet.autograd.record"
                for inner in iter_nodes(node.body, stop=_NESTED):
                    self._record_nodes.add(inner)
                    if recording:
                        self._recording.add(inner)

    def _is_tensor(self, value: cst.BaseExpression, names: set[str],
                   stmt: cst.CSTNode | None = None) -> bool:
        if isinstance(value, cst.Name):
            return value.value in names
        if isinstance(value, cst.BinaryOperation):
            return self._is_tensor(value.left, names) or self._is_tensor(value.right, names)
        if isinstance(value, cst.IfExp):
            return self._is_tensor(value.body, names) or self._is_tensor(value.orelse, names)
        if isinstance(value, cst.Call):
            func = value.func
            resolved = self.ctx.resolve(func)
            if resolved is not None:
                return knowledge.in_namespace(resolved, knowledge.TENSOR_NAMESPACES) and \
                    not resolved.endswith(("waitall", "save", "load"))
            if isinstance(func, cst.Attribute):
                method = func.attr.value
                if method in knowledge.TO_PYTHON_METHODS:
                    return False
                return method in _REDUCERS and self._is_tensor(func.value, names)
            if isinstance(func, cst.Name):
                if func.value in ("float", "int", "len", "str", "range", "list", "dict"):
                    return False
                # A network or loss called under autograd.record(), or on tensors.
                if stmt is not None and self._in_record(stmt):
                    return True
                return any(self._is_tensor(a.value, names) for a in value.args)
        return False

    # -- MXL401 --------------------------------------------------------------------------

    def _loop(self, loop: cst.For | cst.While, tensors: set[str]) -> None:
        if not isinstance(loop, cst.For) or not self._iterates_data(loop):
            return
        loop_names = set(tensors)
        for node in iter_nodes(loop.target):
            if isinstance(node, cst.Name):
                loop_names.add(node.value)
        loop_names = self._tensor_names(list(loop.body.body) if isinstance(
            loop.body, cst.IndentedBlock) else [], loop_names)
        if not loop_names or self._syncs(loop):
            return
        assigned_inside = {t for node in iter_nodes(loop.body, stop=_NESTED)
                           for t, _ in self._bindings(node)}
        for node in self._direct_statements(loop):
            target, value = self._accumulation(node, assigned_inside)
            if target is None or value is None:
                continue
            if self._is_tensor(value, loop_names, node) and not self._has_sync(value):
                self.ctx.report(node, AccumulatedWithoutSync, AccumulatedWithoutSync.format(
                    target=target, hint=f"{target} += ....asscalar()"),
                    data={"function": self.ctx.symbol() or "<module>",
                          "loop_line": 0})

    def _direct_statements(self, loop: cst.For | cst.While) -> Iterator[cst.CSTNode]:
        """Small statements of this loop, not of loops nested in it (they are checked on
        their own)."""
        stack: list[cst.CSTNode] = [loop.body]
        while stack:
            node = stack.pop()
            if isinstance(node, (*_NESTED, *_LOOPS)):
                continue
            if isinstance(node, cst.BaseSmallStatement):
                yield node
                continue
            from mxlint.walker import children

            stack.extend(reversed(list(children(node))))

    def _accumulation(self, node: cst.CSTNode, assigned_inside: set[str]
                      ) -> tuple[str | None, cst.BaseExpression | None]:
        if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name) and \
                isinstance(node.operator, (cst.AddAssign, cst.MultiplyAssign)):
            return node.target.value, node.value
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0].target, cst.Name):
            name = node.targets[0].target.value
            value = node.value
            branches = [value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]
            for branch in branches:
                if isinstance(branch, cst.BinaryOperation) and isinstance(
                        branch.left, cst.Name) and branch.left.value == name:
                    return name, branch.right
        if isinstance(node, cst.Expr) and isinstance(node.value, cst.Call):
            call = node.value
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in (
                    "append", "extend") and isinstance(call.func.value, cst.Name) and \
                    call.func.value.value not in assigned_inside and len(call.args) == 1:
                return call.func.value.value, call.args[0].value
        return None, None

    _DATA_WORDS = ("loader", "data_iter", "dataiter", "train_data", "val_data", "test_data",
                   "train_iter", "val_iter", "batches")

    def _iterates_data(self, loop: cst.For) -> bool:
        """A loop over batches of a data pipeline (a DataLoader, a data iterator), not over a
        bounded list such as per-device shards or layers."""
        it = loop.iter
        while isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and \
                it.func.value in ("enumerate", "tqdm", "iter") and it.args:
            it = it.args[0].value
        if isinstance(it, cst.Call):
            resolved = self.ctx.resolve(it.func)
            return resolved in (knowledge.DATALOADER, "mxnet.io.NDArrayIter")
        from mxlint.names import dotted_name

        name = (dotted_name(it) or "").rsplit(".", 1)[-1].lower()
        return any(word in name for word in self._DATA_WORDS)

    def _has_sync(self, node: cst.CSTNode) -> bool:
        for inner in iter_nodes(node, stop=_NESTED):
            if isinstance(inner, cst.Call):
                func = inner.func
                if isinstance(func, cst.Attribute):
                    if func.attr.value in knowledge.SYNC_METHODS:
                        return True
                    # EvalMetric.update(labels, preds) reads its inputs with asnumpy().
                    if func.attr.value == "update" and len(inner.args) >= 2:
                        return True
                resolved = self.ctx.resolve(func)
                if resolved in knowledge.SYNC_FUNCTIONS:
                    return True
                if isinstance(func, cst.Name) and func.value in ("float", "int") \
                        and inner.args:
                    return True
        return False

    def _syncs(self, loop: cst.For | cst.While) -> bool:
        return self._has_sync(loop.body)

    # -- MXL601 --------------------------------------------------------------------------

    _TIMERS = frozenset({"time.time", "time.perf_counter", "time.monotonic",
                         "timeit.default_timer", "time.process_time"})

    def _timer(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Call) and not node.args and \
            self.ctx.resolve(node.func) in self._TIMERS

    def _timing(self, body: list[cst.BaseStatement]) -> None:
        starts: dict[str, int] = {}
        for index, stmt in enumerate(body):
            for node in iter_nodes(stmt, stop=_NESTED):
                if isinstance(node, cst.BinaryOperation) and isinstance(
                        node.operator, cst.Subtract) and self._timer(node.left) and isinstance(
                        node.right, cst.Name) and node.right.value in starts:
                    begin = starts[node.right.value]
                    between = body[begin + 1:index]
                    if self._mxnet_work(between) and not any(self._has_sync(s)
                                                             for s in between):
                        self.ctx.report(node, TimingWithoutSync, TimingWithoutSync.format(
                            expr=self.ctx.code(node).strip()))
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                            isinstance(small.targets[0].target, cst.Name) and \
                            self._timer(small.value):
                        starts[small.targets[0].target.value] = index

    def _mxnet_work(self, stmts: list[cst.BaseStatement]) -> bool:
        """Operators were queued: a backward, an optimizer step, an nd.* call, a network run
        under record() or on an NDArray."""
        for stmt in stmts:
            for node in iter_nodes(stmt, stop=_NESTED):
                if not isinstance(node, cst.Call):
                    continue
                func = node.func
                if isinstance(func, cst.Attribute) and func.attr.value in ("backward", "step"):
                    return True
                resolved = self.ctx.resolve(func)
                if knowledge.in_namespace(resolved, knowledge.TENSOR_NAMESPACES):
                    return True
                if isinstance(func, cst.Name) and resolved is None and func.value in (
                        "net", "model", "network"):
                    return True
                if node in self._record_nodes:
                    return True
        return False
