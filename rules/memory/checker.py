"""The memory and sync checkers (MXL4xx autograd and memory, MXL6xx sync and timing): the
asynchronous engine in training loops.

MXNet's engine returns from every operator at once and computes later. A loop that only keeps
NDArrays (a running `total += loss`, a list of outputs) never waits for the engine, so the Python
side runs ahead and the pending work and its buffers pile up; a timer read without a sync
measures how fast operators were *queued*, not run. Both end at the first synchronising call.

Inside `with autograd.record():` (MXL402, MXL404, MXL405) a block is read statement by
statement, tracking which names hold outputs of recorded operators and which arrays a recorded
operator has read (MXNet gives both autograd information): recorded outputs kept beyond the
step pile up (with their whole graph when they are not backpropagated), writing into an array
with autograd information raises, and evaluation recorded there is never backpropagated.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import libcst as cst
from mxlint.rules.memory.accumulated_ndarray_without_sync import AccumulatedWithoutSync
from mxlint.rules.memory.backward_without_record import BackwardWithoutRecord
from mxlint.rules.memory.evaluation_in_record import EvaluationInRecord
from mxlint.rules.memory.inplace_write_in_record import InplaceWriteInRecord
from mxlint.rules.memory.outputs_kept_in_record import OutputsKeptInRecord
from mxlint.rules.sync.sync_in_training_loop import SyncEveryStep
from mxlint.rules.sync.timing_without_sync import TimingWithoutSync

from mxlint import knowledge
from mxlint.checker import Checker
from mxlint.names import last_name
from mxlint.rule import Rule
from mxlint.walker import iter_nodes, subtree_nodes

_NESTED = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
#: Spellings of the symbolic execution API (Module, Executor).
_SYMBOLIC_API = re.compile(
    r"\bmod\.Module\b|\bBucketingModule\b|\bsimple_bind\(|\.bind\(|"
    r"\bmx\.module\b|\bExecutor\b"
)
_LOOPS = (cst.For, cst.While)
_LOOP_TYPES = frozenset(_LOOPS)
_NESTED_TYPES = frozenset(_NESTED)
_COMPREHENSIONS = (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)
#: What the per-scope passes (tensor names, loops, MXL403, timing) look at.
_COMPREHENSION_TYPES = frozenset(_COMPREHENSIONS)
_SCOPE_KINDS = frozenset({cst.Assign, cst.Call, cst.IndentedBlock, *_LOOPS, *_COMPREHENSIONS})


def _comprehension_calls(node: cst.CSTNode) -> set[cst.CSTNode]:
    """Method calls inside a comprehension on one of its own loop variables."""
    names: set[str] = set()
    comp = getattr(node, "for_in", None)
    while type(comp) is cst.CompFor:
        names.update(n.value for n in iter_nodes(comp.target) if type(n) is cst.Name)
        comp = comp.inner_for_in
    return {
        n
        for n in iter_nodes(node, stop=_NESTED)
        if type(n) is cst.Call
        and type(n.func) is cst.Attribute
        and type(n.func.value) is cst.Name
        and n.func.value.value in names
    }


class MemoryChecker(Checker):
    rules = (AccumulatedWithoutSync, BackwardWithoutRecord, TimingWithoutSync, SyncEveryStep)
    name = "memory"

    def visit_Module(self, node: cst.Module) -> None:
        self._scopes.append(node.body)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if type(node.body) is cst.IndentedBlock:
            self._scopes.append(node.body.body)

    def end(self) -> None:
        # After the walk: every `autograd.record()` block is known by then.
        for body in self._scopes:
            self._scope(body)

    # -- one function (or the module's top level) ----------------------------------------

    def _scope(self, body: tuple[cst.BaseStatement, ...] | list[cst.BaseStatement]) -> None:
        if not self._mentions_mxnet():
            return
        # A function or class at this level is a scope of its own (visited on its own).
        body = [stmt for stmt in body if type(stmt) not in _NESTED_TYPES]
        # Only the kinds of node the passes below look at, in source order.
        kinds = _SCOPE_KINDS
        nodes = [n for stmt in body for n in subtree_nodes(stmt, stop=_NESTED) if type(n) in kinds]
        tensors = self._tensor_names(body, nodes=[n for n in nodes if type(n) is cst.Assign])
        for node in nodes:
            if type(node) in _LOOP_TYPES:
                self._loop(node, tensors)  # type: ignore[arg-type]
        if self._starts_timer(body):
            self._timing(body)
        self._backward(nodes)
        for node in nodes:
            if type(node) is cst.IndentedBlock and self._starts_timer(node.body):
                self._timing(list(node.body))

    def _starts_timer(self, body: Sequence[cst.BaseStatement]) -> bool:
        """Whether a statement of this block reads a clock (`_timing` needs one to start)."""
        for stmt in body:
            if type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    if type(small) is cst.Assign and self._timer(small.value):
                        return True
        return False

    def _mentions_mxnet(self) -> bool:
        return self.ctx.imports.mentions_mxnet()

    def _tensor_names(
        self,
        body: tuple | list,
        seed: set[str] | None = None,
        nodes: list[cst.CSTNode] | None = None,
    ) -> set[str]:
        """Names bound to NDArrays in this scope: results of networks and losses run under
        `autograd.record()`, of `nd.*` calls, of loops over data loaders, and what is computed
        from them by operators and tensor methods."""
        if nodes is None:
            nodes = [
                n
                for stmt in body
                for n in subtree_nodes(stmt, stop=_NESTED)
                if type(n) is cst.Assign
            ]
        bindings = [
            (target, value, node) for node in nodes for target, value in self._bindings(node)
        ]
        names: set[str] = set(seed or ())
        changed = True
        while changed:
            changed = False
            for target, value, node in bindings:
                if target not in names and self._is_tensor(value, names, node):
                    names.add(target)
                    changed = True
        return names

    def _bindings(self, node: cst.CSTNode) -> Iterator[tuple[str, cst.BaseExpression]]:
        if type(node) is cst.Assign and len(node.targets) == 1:
            target = node.targets[0].target
            if type(target) is cst.Name:
                yield target.value, node.value
            elif type(target) is cst.Tuple and type(node.value) is cst.Call:
                for el in target.elements:
                    if type(el.value) is cst.Name:
                        yield el.value.value, node.value

    def _backward(self, nodes: list[cst.CSTNode]) -> None:
        """MXL403: the last assignment of `x` before `x.backward()` ran outside record().
        `nodes`: the scope's nodes of the kinds `_SCOPE_KINDS` lists, in source order."""
        last: dict[str, cst.CSTNode] = {}
        #: `.backward()` calls on a comprehension's own variable (`[l.backward() for l in ls]`).
        shadowed: set[cst.CSTNode] = set()
        for node in nodes:
            for target, value in self._bindings(node):
                # Only `loss = f(...)`: a tuple unpacked from a helper may be anything (an
                # Executor, a Module), and `autograd.grad(create_graph=True)` is recorded.
                simple = type(node) is cst.Assign and type(node.targets[0].target) is cst.Name
                if (
                    simple
                    and type(value) in (cst.Call, cst.BinaryOperation)
                    and not (type(value) is cst.Call and self._not_a_loss(value))
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
                and self._uses_autograd()
            ):
                name = node.func.value.value
                where = last.get(name)
                if (
                    where is not None
                    and where not in self._recording
                    and node not in self._recording
                    and not self._symbolic(where)
                ):
                    self.ctx.report(
                        node, BackwardWithoutRecord, BackwardWithoutRecord.format(name=name)
                    )

    _autograd: bool | None = None

    def _uses_autograd(self) -> bool:
        """False for a file on the symbolic API only (Module/Executor `backward()`, no
        `record()` anywhere): its `x.backward()` calls are not autograd's."""
        if self._autograd is None:
            self._autograd = bool(self._record_nodes) or not _SYMBOLIC_API.search(self.ctx.source)
        return self._autograd

    def _not_a_loss(self, call: cst.Call) -> bool:
        """`autograd.grad(create_graph=True)` (recorded), or an object built from a class
        (`Base(...)`, `Module(...)`): its `backward()` is its own."""
        name = self.ctx.resolve(call.func)
        if name == "mxnet.autograd.grad":
            return True
        if name is not None and knowledge.in_namespace(name, knowledge.TENSOR_NAMESPACES):
            return False
        last = last_name(call.func)
        return bool(last) and last[0].isupper()

    def _symbolic(self, binding: cst.CSTNode) -> bool:
        """A Module or an Executor (`mx.mod.Module(...)`, `sym.bind(...)`), not a loss."""
        for node in iter_nodes(binding, stop=_NESTED):
            if type(node) is cst.Call:
                name = self.ctx.resolve(node.func) or ""
                if knowledge.in_namespace(name, knowledge.SYMBOLIC_EXECUTION) or (
                    type(node.func) is cst.Attribute
                    and node.func.attr.value in knowledge.EXECUTOR_METHODS
                ):
                    return True
        return False

    def _in_record(self, node: cst.CSTNode) -> bool:
        return node in self._record_nodes

    def begin(self) -> None:
        self._record_nodes: set[cst.CSTNode] = set()
        #: Nodes inside `autograd.record()` proper (train_mode() does not record).
        self._recording: set[cst.CSTNode] = set()
        self._scopes: list = []
        self._autograd = None

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            call = item.item
            if type(call) is not cst.Call:
                continue
            name = self.ctx.resolve(call.func)
            if name == "mxnet.contrib.autograd.train_section" or (
                name is None and last_name(call.func) in ("record", "train_section")
            ):
                # `from mxnet.autograd import *`: an unknown `record()` is taken at its word,
                # so that what it records is never reported as computed outside it.
                name = "mxnet.autograd.record"
            if name in knowledge.AUTOGRAD_RECORD:
                recording = name == "mxnet.autograd.record"
                for inner in iter_nodes(node.body, stop=_NESTED):
                    self._record_nodes.add(inner)
                    if recording:
                        self._recording.add(inner)

    def _is_tensor(
        self, value: cst.BaseExpression, names: set[str], stmt: cst.CSTNode | None = None
    ) -> bool:
        if type(value) is cst.Name:
            return value.value in names
        if type(value) is cst.BinaryOperation:
            return self._is_tensor(value.left, names) or self._is_tensor(value.right, names)
        if type(value) is cst.IfExp:
            return self._is_tensor(value.body, names) or self._is_tensor(value.orelse, names)
        if type(value) is cst.Call:
            func = value.func
            resolved = self.ctx.resolve(func)
            if resolved is not None:
                return knowledge.in_namespace(
                    resolved, knowledge.TENSOR_NAMESPACES
                ) and not resolved.endswith(("waitall", "save", "load"))
            if type(func) is cst.Attribute:
                method = func.attr.value
                if method in knowledge.TO_PYTHON_METHODS:
                    return False
                return method in knowledge.TENSOR_RESULT_METHODS and self._is_tensor(
                    func.value, names
                )
            if type(func) is cst.Name:
                if func.value in ("float", "int", "len", "str", "range", "list", "dict"):
                    return False
                # A network or loss called under autograd.record(), or on tensors.
                if stmt is not None and self._in_record(stmt):
                    return True
                return any(self._is_tensor(a.value, names) for a in value.args)
        return False

    # -- MXL401 --------------------------------------------------------------------------

    def _loop(self, loop: cst.For | cst.While, tensors: set[str]) -> None:
        if type(loop) is not cst.For or not self._iterates_data(loop):
            return
        loop_names = set(tensors)
        for node in iter_nodes(loop.target):
            if type(node) is cst.Name:
                loop_names.add(node.value)
        body = list(loop.body.body) if type(loop.body) is cst.IndentedBlock else []
        loop_names = self._tensor_names(body, loop_names)
        if self.ctx.settings.enabled(SyncEveryStep, self.ctx.path):
            self._every_step(loop, loop_names)
        if not loop_names or self._syncs(loop):
            return
        assigned_inside = {
            t for node in iter_nodes(loop.body, stop=_NESTED) for t, _ in self._bindings(node)
        }
        for node in self._direct_statements(loop):
            found = self._accumulation(node, assigned_inside)
            if found is None:
                continue
            target, value, shape = found
            if self._is_tensor(value, loop_names, node) and not self._has_sync(value):
                self.ctx.report(
                    node,
                    AccumulatedWithoutSync,
                    AccumulatedWithoutSync.format(
                        target=target, hint=self._python_value_hint(shape, value)
                    ),
                    data={"function": self.ctx.symbol() or "<module>", "loop_line": 0},
                )

    def _python_value_hint(self, shape: str, value: cst.BaseExpression) -> str:
        """The statement (`shape`, see `_accumulation`) accumulating a Python value:
        `.asscalar()` of a reduction (one number), `.asnumpy()` of anything else (the same
        values, elementwise)."""
        code = self.ctx.code(value).strip()
        if "\n" in code or len(code) > 40:
            code = "(...)"
        elif type(value) not in (cst.Name, cst.Attribute, cst.Call, cst.Subscript):
            code = f"({code})"
        sync = "asscalar" if self._reduces_to_one_number(value) else "asnumpy"
        return shape.format(value=code, kept=f"{code}.{sync}()")

    def _reduces_to_one_number(self, value: cst.BaseExpression) -> bool:
        """`x.mean()`, `nd.sum(x)`: a reduction over every axis."""
        if (
            type(value) is not cst.Call
            or type(value.func) is not cst.Attribute
            or value.func.attr.value not in knowledge.SCALAR_REDUCTIONS
        ):
            return False
        if any(a.keyword is not None or a.star for a in value.args):
            return False  # axis=..., keepdims=..., or unknown
        resolved = self.ctx.resolve(value.func)
        function = resolved is not None and knowledge.in_namespace(
            resolved, knowledge.TENSOR_NAMESPACES
        )
        return len(value.args) == (1 if function else 0)

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

    def _accumulation(
        self, node: cst.CSTNode, assigned_inside: set[str]
    ) -> tuple[str, cst.BaseExpression, str] | None:
        """(target, accumulated value, the statement's shape with `{kept}` for the value made
        a Python value, `{value}` for the value as written), or None."""
        if (
            type(node) is cst.AugAssign
            and type(node.target) is cst.Name
            and type(node.operator) in (cst.AddAssign, cst.MultiplyAssign)
        ):
            target = node.target.value
            op = "+=" if type(node.operator) is cst.AddAssign else "*="
            return target, node.value, f"{target} {op} {{kept}}"
        if (
            type(node) is cst.Assign
            and len(node.targets) == 1
            and type(node.targets[0].target) is cst.Name
        ):
            name = node.targets[0].target.value
            value = node.value
            branches = [value.body, value.orelse] if type(value) is cst.IfExp else [value]
            for branch in branches:
                if (
                    type(branch) is cst.BinaryOperation
                    and type(branch.left) is cst.Name
                    and branch.left.value == name
                ):
                    op = self.ctx.code(branch.operator).strip()
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

    # -- MXL602 --------------------------------------------------------------------------

    def _every_step(self, loop: cst.For, tensors: set[str]) -> None:
        """`.asscalar()`/`.asnumpy()`/`.item()` of a tensor on every iteration of a training
        loop, before the step's `backward()`/`trainer.step()` (the last of them) is queued;
        a sync under `if` (every N steps) or after the step is not reported."""
        if type(loop.body) is not cst.IndentedBlock:
            return
        body = list(loop.body.body)
        last = max((i for i, stmt in enumerate(body) if self._queues_step(stmt)), default=None)
        if last is None:
            return
        stack: list[cst.CSTNode] = list(reversed(body[:last]))
        while stack:
            node = stack.pop()
            if isinstance(
                node,
                (*_NESTED, *_LOOPS, cst.If, cst.Try, cst.IfExp, cst.ListComp, cst.GeneratorExp),
            ):
                continue
            if (
                type(node) is cst.Call
                and type(node.func) is cst.Attribute
                and node.func.attr.value in knowledge.READBACK_METHODS
                and self._is_tensor(node.func.value, tensors, node)
            ):
                self.ctx.report(
                    node, SyncEveryStep, SyncEveryStep.format(expr=self.ctx.code(node).strip())
                )
                continue
            from mxlint.walker import children

            stack.extend(reversed(list(children(node))))

    def _queues_step(self, stmt: cst.CSTNode) -> bool:
        """The statement runs `backward()` or an optimizer step."""
        for n in iter_nodes(stmt, stop=_NESTED):
            if type(n) is cst.Call:
                if type(n.func) is cst.Attribute and n.func.attr.value in ("backward", "step"):
                    return True
                if self.ctx.resolve(n.func) in knowledge.AUTOGRAD_BACKWARD:
                    return True
        return False

    _DATA_WORDS = (
        "loader",
        "data_iter",
        "dataiter",
        "train_data",
        "val_data",
        "test_data",
        "train_iter",
        "val_iter",
        "batches",
    )

    def _iterates_data(self, loop: cst.For) -> bool:
        """A loop over batches of a data pipeline (a DataLoader, a data iterator), not over a
        bounded list such as per-device shards or layers."""
        it = loop.iter
        while (
            type(it) is cst.Call
            and type(it.func) is cst.Name
            and it.func.value in ("enumerate", "tqdm", "iter")
            and it.args
        ):
            it = it.args[0].value
        if type(it) is cst.Call:
            resolved = self.ctx.resolve(it.func)
            return resolved in (knowledge.DATALOADER, "mxnet.io.NDArrayIter")
        from mxlint.names import dotted_name

        name = (dotted_name(it) or "").rsplit(".", 1)[-1].lower()
        return any(word in name for word in self._DATA_WORDS)

    def _has_sync(self, node: cst.CSTNode) -> bool:
        for inner in iter_nodes(node, stop=_NESTED):
            if type(inner) is cst.Call:
                func = inner.func
                if type(func) is cst.Attribute:
                    if func.attr.value in knowledge.SYNC_METHODS:
                        return True
                    # EvalMetric.update(labels, preds) reads its inputs with asnumpy().
                    if func.attr.value == "update" and len(inner.args) >= 2:
                        return True
                resolved = self.ctx.resolve(func)
                if resolved in knowledge.SYNC_FUNCTIONS:
                    return True
                if type(func) is cst.Name and func.value in ("float", "int") and inner.args:
                    return True
        return False

    def _syncs(self, loop: cst.For | cst.While) -> bool:
        return self._has_sync(loop.body)

    # -- MXL601 --------------------------------------------------------------------------

    _TIMERS = frozenset(
        {
            "time.time",
            "time.perf_counter",
            "time.monotonic",
            "timeit.default_timer",
            "time.process_time",
        }
    )

    def _timer(self, node: cst.BaseExpression) -> bool:
        return (
            type(node) is cst.Call and not node.args and self.ctx.resolve(node.func) in self._TIMERS
        )

    def _timing(self, body: list[cst.BaseStatement]) -> None:
        starts: dict[str, int] = {}
        for index, stmt in enumerate(body):
            for node in iter_nodes(stmt, stop=_NESTED):
                if (
                    type(node) is cst.BinaryOperation
                    and type(node.operator) is cst.Subtract
                    and self._timer(node.left)
                    and type(node.right) is cst.Name
                    and node.right.value in starts
                ):
                    begin = starts[node.right.value]
                    between = body[begin + 1 : index]
                    if self._mxnet_work(between) and not any(self._has_sync(s) for s in between):
                        self.ctx.report(
                            node,
                            TimingWithoutSync,
                            TimingWithoutSync.format(expr=self.ctx.code(node).strip()),
                        )
            if type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    if (
                        type(small) is cst.Assign
                        and len(small.targets) == 1
                        and type(small.targets[0].target) is cst.Name
                        and self._timer(small.value)
                    ):
                        starts[small.targets[0].target.value] = index

    def _mxnet_work(self, stmts: list[cst.BaseStatement]) -> bool:
        """Operators were queued: a backward, an optimizer step, an nd.* call, a network run
        under record() or on an NDArray."""
        for stmt in stmts:
            for node in iter_nodes(stmt, stop=_NESTED):
                if type(node) is not cst.Call:
                    continue
                func = node.func
                if type(func) is cst.Attribute and func.attr.value in ("backward", "step"):
                    return True
                resolved = self.ctx.resolve(func)
                if knowledge.in_namespace(resolved, knowledge.TENSOR_NAMESPACES):
                    return True
                if (
                    type(func) is cst.Name
                    and resolved is None
                    and func.value in ("net", "model", "network")
                ):
                    return True
                if node in self._record_nodes:
                    return True
        return False


_IN_GRAPH = "`{name}` is already in the recorded graph"
_TOKEN_SPLIT = re.compile(r"[^A-Za-z0-9]+")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
#: Builtins whose result is a tensor when an argument is one (`sum(losses)`).
_TENSOR_BUILTINS = frozenset(
    {
        "sum",
        "min",
        "max",
        "abs",
        "list",
        "tuple",
        "sorted",
        "reversed",
        "zip",
        "map",
        "filter",
        "iter",
        "enumerate",
    }
)
_PYTHON_BUILTINS = frozenset(
    {
        "len",
        "int",
        "float",
        "str",
        "bool",
        "range",
        "print",
        "isinstance",
        "getattr",
        "hasattr",
        "setattr",
        "dict",
        "set",
        "round",
        "type",
        "id",
        "repr",
        "format",
        "next",
        "open",
        "super",
        "vars",
        "callable",
        "divmod",
        "hash",
        "any",
        "all",
        "ord",
        "chr",
        "input",
    }
)
_SYNC_BUILTINS = frozenset({"float", "int", "bool"})
#: Methods of `self` that are not a forward pass.
_SELF_NON_FORWARD = knowledge.NON_TENSOR_CALL_METHODS | frozenset({"save", "load", "print"})
_METRIC_WORDS = frozenset({"metric", "metrics", "acc", "accuracy"})
_EVAL_FUNCTION_WORDS = frozenset(
    {
        "evaluate",
        "eval",
        "evaluation",
        "validate",
        "validation",
        "val",
        "valid",
        "predict",
        "prediction",
        "inference",
        "infer",
    }
)
_TRAIN_FUNCTION_WORDS = frozenset(
    {
        "train",
        "training",
        "fit",
        "step",
        "update",
        "backward",
        "grad",
        "gradient",
        "gradients",
        "optimize",
    }
)


def _tokens(name: str) -> list[str]:
    """`X_val` -> ["x", "val"], `valData2` -> ["val", "data"]."""
    return [
        t.rstrip("0123456789").lower()
        for t in _TOKEN_SPLIT.split(_CAMEL.sub(r"\1_\2", name))
        if t.rstrip("0123456789")
    ]


def _is_validation_name(name: str, tests: bool = False) -> bool:
    toks = _tokens(name)
    words = (
        knowledge.VALIDATION_WORDS - {"test", "testing"} if tests else knowledge.VALIDATION_WORDS
    )
    if not words.intersection(toks):
        return False
    if len(toks) == 1:
        return toks[0] in ("val", "validation", "test", "holdout")
    return bool(knowledge.DATA_WORDS.intersection(toks))


def _root_name(node: cst.BaseExpression) -> str | None:
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if type(node) is cst.Name else None


def _self_attr(node: cst.BaseExpression) -> str | None:
    """`self.history` -> "history"."""
    if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self":
        return node.attr.value
    return None


def _chain_names(node: cst.BaseExpression) -> list[str]:
    names: list[str] = []
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        if type(node) is cst.Attribute:
            names.append(node.attr.value)
        node = node.value
    if type(node) is cst.Name:
        names.append(node.value)
    return names


def _full_slice(target: cst.Subscript) -> bool:
    """`y[:]` / `y[...]`: a copy into the whole array."""
    if len(target.slice) != 1:
        return False
    sl = target.slice[0].slice
    if type(sl) is cst.Slice:
        return sl.lower is None and sl.upper is None and sl.step is None
    return type(sl) is cst.Index and type(sl.value) is cst.Ellipsis


def _call_args(call: cst.Call) -> list[cst.BaseExpression]:
    return [a.value for a in call.args]


def _keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def _targets(node: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    """Assignment targets of a small statement or a compound header."""
    if type(node) is cst.Assign:
        for t in node.targets:
            yield t.target
    elif isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor)):
        yield node.target
    elif type(node) is cst.WithItem and node.asname is not None:
        yield node.asname.name


def _bound_names(target: cst.BaseExpression) -> Iterator[str]:
    if type(target) is cst.Name:
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from _bound_names(el.value)
    elif type(target) is cst.StarredElement:
        yield from _bound_names(target.value)


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Descendants, not entering nested functions, classes or lambdas."""
    return iter_nodes(node, stop=_NESTED)


class _Scope:
    """Facts about the function (or module) around a record block, computed once."""

    def __init__(self, checker: RecordChecker, node: cst.Module | cst.FunctionDef) -> None:
        self.checker = checker
        self.node = node
        self.params: set[str] = set()
        if type(node) is cst.FunctionDef:
            p = node.params
            for param in (*p.posonly_params, *p.params, *p.kwonly_params):
                self.params.add(param.name.value)
            for star in (p.star_arg, p.star_kwarg):
                if type(star) is cst.Param:
                    self.params.add(star.name.value)
        self.nodes = list(_walk(node))
        self.assigns: dict[str, list[tuple[cst.CSTNode, cst.BaseExpression | None]]] = {}
        self.globals: set[str] = set()
        for n in self.nodes:
            if type(n) is cst.Global:
                self.globals.update(x.name.value for x in n.names)
            value = n.value if isinstance(n, (cst.Assign, cst.AnnAssign)) else None
            if type(n) in (cst.Assign, cst.AnnAssign, cst.For, cst.WithItem):
                for target in _targets(n):
                    for name in _bound_names(target):
                        self.assigns.setdefault(name, []).append(
                            (n, value if type(target) is cst.Name else None)
                        )
        #: Names `x.attach_grad()` is called on: variables of the graph.
        self.grad_names: set[str] = set()
        for n in self.nodes:
            if (
                type(n) is cst.Call
                and type(n.func) is cst.Attribute
                and n.func.attr.value == "attach_grad"
            ):
                root = _root_name(n.func.value)
                if root is not None:
                    self.grad_names.add(root)
        self.python_values = {
            name
            for name, bindings in self.assigns.items()
            if all(self._python_binding(n, v) for n, v in bindings)
        }
        self.val_names = self._validation_names()
        self.metrics = self._metric_names()

    @staticmethod
    def _python_binding(node: cst.CSTNode, value: cst.BaseExpression | None) -> bool:
        """A binding to a Python number or string (`t = 0`, `for i in range(n)`)."""
        if type(node) is cst.For:
            it = node.iter
            return type(it) is cst.Call and type(it.func) is cst.Name and it.func.value == "range"
        if value is None:
            return False
        if type(value) is cst.UnaryOperation:
            value = value.expression
        if type(value) in (
            cst.Integer,
            cst.Float,
            cst.SimpleString,
            cst.ConcatenatedString,
            cst.FormattedString,
        ):
            return True
        if type(value) is cst.Name:
            return value.value in ("True", "False", "None")
        return (
            type(value) is cst.Call
            and type(value.func) is cst.Name
            and value.func.value in ("int", "float", "len", "str", "bool", "round")
        )

    # -- validation data -----------------------------------------------------------------------

    def _validation_names(self) -> set[str]:
        """Names of validation data: named so (`val_data`, `X_test`), or bound only from
        validation data (`for data, label in val_data`, `x = val_x.as_in_context(ctx)`)."""
        fn = self.node
        # In a pytest test (`def test_op():`), "test data" is the data of the test case.
        tests = any(
            type(n) is cst.FunctionDef and n.name.value.startswith("test")
            for n in self.checker.ctx.stack
        )
        sources: dict[str, list[cst.BaseExpression | None]] = {}
        loop_bound: set[str] = set()
        for n in self.nodes:
            if isinstance(n, (cst.For, cst.CompFor)):
                loop_bound.update(_bound_names(n.target))
                for name in _bound_names(n.target):
                    sources.setdefault(name, []).append(n.iter)
            elif isinstance(n, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                for t in _targets(n):
                    for name in _bound_names(t):
                        sources.setdefault(name, []).append(n.value)
            elif type(n) is cst.WithItem and n.asname is not None:
                for name in _bound_names(n.asname.name):
                    sources.setdefault(name, []).append(None)
        if type(fn) is cst.FunctionDef:
            p = fn.params
            for param in (*p.posonly_params, *p.params, *p.kwonly_params):
                sources.setdefault(param.name.value, []).append(None)
        names: set[str] = set()
        for n in self.nodes:
            if (
                type(n) is cst.Name
                and _is_validation_name(n.value, tests=tests)
                and (len(_tokens(n.value)) > 1 or n.value not in loop_bound)
            ):
                names.add(n.value)
        for _ in range(4):
            before = len(names)
            for name, values in sources.items():
                if name not in names and all(
                    v is not None and self.is_validation(v, names) for v in values
                ):
                    names.add(name)
            if len(names) == before:
                break
        return names

    def is_validation(self, expr: cst.BaseExpression, names: set[str] | None = None) -> bool:
        """Validation data, or what moving/splitting/indexing it gives."""
        names = self.val_names if names is None else names
        if type(expr) is cst.Name:
            return expr.value in names
        if type(expr) is cst.Attribute:
            return _is_validation_name(expr.attr.value) or self.is_validation(expr.value, names)
        if type(expr) is cst.Subscript:
            return self.is_validation(expr.value, names)
        if isinstance(expr, (cst.Tuple, cst.List)):
            return any(self.is_validation(e.value, names) for e in expr.elements)
        if type(expr) is cst.StarredElement:
            return self.is_validation(expr.value, names)
        if type(expr) is cst.Call:
            func = expr.func
            resolved = self.checker.ctx.resolve(func)
            if resolved in knowledge.SPLIT_AND_LOAD or resolved in knowledge.SPLIT_DATA:
                return bool(expr.args) and self.is_validation(expr.args[0].value, names)
            if type(func) is cst.Name and func.value in (
                "enumerate",
                "zip",
                "iter",
                "tqdm",
                "list",
            ):
                return any(self.is_validation(a, names) for a in _call_args(expr))
            if type(func) is cst.Attribute and func.attr.value in knowledge.DATA_METHODS:
                return self.is_validation(func.value, names)
        return False

    # -- evaluation metrics --------------------------------------------------------------------

    def _metric_names(self) -> set[str]:
        names = set(self.checker.module_metrics)
        lists: set[str] = set()
        for name, bindings in self.assigns.items():
            values = [v for _, v in bindings]
            if values and all(v is not None and self.checker.is_metric_ctor(v) for v in values):
                names.add(name)
            elif values and all(
                isinstance(v, (cst.List, cst.Tuple))
                and v.elements
                and all(self.checker.is_metric_ctor(e.value) for e in v.elements)
                for v in values
            ):
                lists.add(name)
        for n in self.nodes:
            if type(n) is cst.Assign and type(n.value) is cst.Tuple:
                for t in n.targets:
                    if type(t.target) is cst.Tuple and len(t.target.elements) == len(
                        n.value.elements
                    ):
                        for el, val in zip(t.target.elements, n.value.elements):
                            if type(el.value) is cst.Name and self.checker.is_metric_ctor(
                                val.value
                            ):
                                names.add(el.value.value)
            if type(n) is cst.For and type(n.iter) is cst.Name and n.iter.value in lists:
                names.update(_bound_names(n.target))
        for name, bindings in self.assigns.items():
            if (
                name in names
                and any(
                    v is None or not self.checker.is_metric_ctor(v)
                    for _, v in bindings
                    if type(v) is not cst.Tuple
                )
                and not any(type(n) is cst.For for n, _ in bindings)
            ):
                names.discard(name)
        return names

    # -- backward -----------------------------------------------------------------------------

    def feeds_backward(self, stmt: cst.CSTNode) -> bool:
        """Whether what `stmt` computes reaches a `backward()`/`autograd.grad()` (a gradient
        with respect to the inputs, as for adversarial examples or saliency maps)."""
        if self._backward_in(stmt, set()):
            return True
        return self.reaches_backward({name for t in _targets(stmt) for name in _bound_names(t)})

    def reaches_backward(self, names: set[str], ignore: set[cst.CSTNode] | None = None) -> bool:
        """Whether these names, or what is computed from them, are backpropagated (by a
        call not in `ignore`)."""
        if not names:
            return False
        names = set(names)
        for _ in range(4):
            before = len(names)
            for n in self.nodes:
                source = (
                    n.value
                    if isinstance(n, (cst.Assign, cst.AugAssign))
                    else n.iter
                    if isinstance(n, (cst.For, cst.CompFor))
                    else None
                )
                if source is not None and any(
                    type(x) is cst.Name and x.value in names for x in _walk(source)
                ):
                    for t in _targets(n):
                        names.update(_bound_names(t))
            if len(names) == before:
                break
        return any(
            self._backward_in(n, names)
            for n in self.nodes
            if type(n) is cst.Call and (ignore is None or n not in ignore)
        )

    def _backward_in(self, node: cst.CSTNode, names: set[str]) -> bool:
        for n in _walk(node):
            if type(n) is not cst.Call:
                continue
            func = n.func
            if self.checker.ctx.resolve(func) in knowledge.AUTOGRAD_BACKWARD:
                if not names or any(type(x) is cst.Name and x.value in names for x in _walk(n)):
                    return True
            elif (
                type(func) is cst.Attribute
                and func.attr.value == "backward"
                and (
                    not names
                    or any(type(x) is cst.Name and x.value in names for x in _walk(func.value))
                )
            ):
                return True
        return False

    def has_gradient_work(self) -> bool:
        return self._backward_in(self.node, set())

    def attaches_grad(self, name: str) -> bool:
        return name in self.grad_names


class _Record:
    """One `with autograd.record():` block, read statement by statement.

    `recorded` holds names bound to outputs of recorded operators; `in_graph` also the arrays
    recorded operators read (MXNet gives them autograd information too); `fresh` names known
    to be NDArrays outside the graph. Loops inside the block run twice, as their second
    iteration sees what the first one recorded.
    """

    def __init__(self, checker: RecordChecker, with_node: cst.With, predict: bool) -> None:
        self.checker = checker
        self.ctx = checker.ctx
        self.with_node = with_node
        self.scope = checker.scope()
        self.loops = list(self.ctx.loops())
        self.iteration_loop = next(
            (lp for lp in self.loops if not checker.is_shard_loop(lp, self.scope)), None
        )
        self.recorded: set[str] = set()
        self.in_graph: set[str] = set(self.scope.grad_names)
        self.fresh: set[str] = self._fresh_arrays()
        self.synced: set[str] = set()
        #: Python containers holding recorded tensors (`losses.append(l)`).
        self.groups: set[str] = set()
        self.recording = True
        self.predict = predict
        self.eval_function = self._in_eval_function()
        self.containers = {
            name
            for name, bindings in self.scope.assigns.items()
            if any(checker.is_container(v) for _, v in bindings if v is not None)
        }

    # -- set-up ----------------------------------------------------------------------------------

    def _fresh_arrays(self) -> set[str]:
        """Names known to hold NDArrays: made by `nd.*`/`np.*` calls, or parameters used as
        NDArrays (`x.as_in_context(ctx)`, `nd.relu(x)`)."""
        out = set()
        for name, bindings in self.scope.assigns.items():
            values = [v for _, v in bindings]
            if values and all(v is not None and self.checker.creates_array(v) for v in values):
                out.add(name)
        params = self.scope.params - set(self.scope.assigns)
        for n in self.scope.nodes:
            if type(n) is not cst.Call:
                continue
            func = n.func
            if (
                type(func) is cst.Attribute
                and func.attr.value in knowledge.NDARRAY_ONLY_METHODS
                and type(func.value) is cst.Name
                and func.value.value in params
            ):
                out.add(func.value.value)
            elif knowledge.in_namespace(self.ctx.resolve(func), knowledge.TENSOR_NAMESPACES):
                out.update(
                    a.value for a in _call_args(n) if type(a) is cst.Name and a.value in params
                )
        return out

    def _in_eval_function(self) -> bool:
        fn = self.scope.node
        if type(fn) is not cst.FunctionDef:
            return False
        name = fn.name.value
        toks = set(_tokens(name))
        if toks & {"test", "testing"} and (
            name in ("test", "testing") or not name.startswith("test")
        ):
            toks.add("eval")  # `def test(net, loader)`, `def run_test(...)`; not `def test_x()`
        return (
            bool(toks & _EVAL_FUNCTION_WORDS)
            and not toks & _TRAIN_FUNCTION_WORDS
            and not self.scope.has_gradient_work()
        )

    # -- walking -----------------------------------------------------------------------------------

    def run(self) -> None:
        self.block(self.with_node.body)

    def block(self, suite: cst.BaseSuite) -> None:
        for stmt in suite.body:
            self.stmt(stmt)

    def stmt(self, node: cst.CSTNode) -> None:
        if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in node.body:
                self.small(small)
        elif type(node) is cst.If:
            self.effects(node.test, node)
            self.block(node.body)
            if type(node.orelse) is cst.If:
                self.stmt(node.orelse)
            elif type(node.orelse) is cst.Else:
                self.block(node.orelse.body)
        elif type(node) is cst.For:
            self.effects(node.iter, node)
            for _ in range(2):
                self.bind(node.target, self.recorded_expr(node.iter))
                self.block(node.body)
            if node.orelse is not None:
                self.block(node.orelse.body)
        elif type(node) is cst.While:
            for _ in range(2):
                self.effects(node.test, node)
                self.block(node.body)
        elif type(node) is cst.With:
            self.nested_with(node)
        elif isinstance(node, (cst.Try, cst.TryStar)):
            self.block(node.body)
            for handler in node.handlers:
                self.block(handler.body)
            if node.orelse is not None:
                self.block(node.orelse.body)
            if node.finalbody is not None:
                self.block(node.finalbody.body)

    def nested_with(self, node: cst.With) -> None:
        saved = self.recording, self.predict
        for item in node.items:
            resolved = self.ctx.resolve(item.item.func) if type(item.item) is cst.Call else None
            if resolved == knowledge.AUTOGRAD_PAUSE_RECORDING:
                self.recording = False
            elif resolved in knowledge.AUTOGRAD_PAUSE:
                self.predict = True
            else:
                self.effects(item.item, node)
        try:
            self.block(node.body)
        finally:
            self.recording, self.predict = saved

    def small(self, node: cst.BaseSmallStatement) -> None:
        if type(node) is cst.Assign:
            self.effects(node.value, node)
            value_recorded = self.recorded_expr(node.value)
            for t in node.targets:
                self.store(t.target, node.value, node)
            for t in node.targets:
                self.bind(t.target, value_recorded, node.value)
        elif type(node) is cst.AnnAssign and node.value is not None:
            self.effects(node.value, node)
            self.store(node.target, node.value, node)
            self.bind(node.target, self.recorded_expr(node.value), node.value)
        elif type(node) is cst.AugAssign:
            self.effects(node.value, node)
            self.augassign(node)
        elif isinstance(node, (cst.Expr, cst.Return)) and node.value is not None:
            self.effects(node.value, node)

    # -- what is recorded ------------------------------------------------------------------

    def bind(
        self, target: cst.BaseExpression, recorded: bool, value: cst.BaseExpression | None = None
    ) -> None:
        for name in _bound_names(target):
            self.synced.discard(name)
            self.groups.discard(name)
            if recorded and self.recording:
                self.recorded.add(name)
                self.in_graph.add(name)
                self.fresh.discard(name)
            else:
                self.recorded.discard(name)
                self.in_graph.discard(name)
                if (
                    value is not None
                    and type(target) is cst.Name
                    and self.checker.creates_array(value)
                ):
                    self.fresh.add(name)
                else:
                    self.fresh.discard(name)
                if value is not None and type(target) is cst.Name and self.readback(value):
                    self.synced.add(name)

    def graph_expr(self, expr: cst.BaseExpression) -> bool:
        if type(expr) is cst.Name:
            return expr.value in self.in_graph
        return self.recorded_expr(expr)

    def recorded_expr(self, expr: cst.BaseExpression | None) -> bool:
        """Whether `expr` is (or holds) the output of a recorded operator."""
        if expr is None or not self.recording:
            return False
        if type(expr) is cst.Name:
            return expr.value in self.recorded or expr.value in self.groups
        if type(expr) is cst.Call:
            return self.recorded_call(expr)
        if type(expr) is cst.Attribute:
            return expr.attr.value == "T" and self.recorded_expr(expr.value)
        if type(expr) is cst.Subscript:
            return self.recorded_expr(expr.value)
        if type(expr) is cst.BinaryOperation:
            return self.graph_expr(expr.left) or self.graph_expr(expr.right)
        if type(expr) is cst.UnaryOperation:
            return type(expr.operator) is not cst.Not and self.graph_expr(expr.expression)
        if type(expr) is cst.Comparison:
            return self.graph_expr(expr.left) or any(
                self.graph_expr(c.comparator) for c in expr.comparisons
            )
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            return any(self.recorded_expr(e.value) for e in expr.elements)
        if type(expr) is cst.Dict:
            return any(
                type(e) is cst.DictElement and self.recorded_expr(e.value) for e in expr.elements
            )
        if type(expr) is cst.StarredElement:
            return self.recorded_expr(expr.value)
        if type(expr) is cst.IfExp:
            return self.recorded_expr(expr.body) or self.recorded_expr(expr.orelse)
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)):
            saved = set(self.recorded), set(self.in_graph)
            comp: cst.CompFor | None = expr.for_in
            while comp is not None:
                if self.recorded_expr(comp.iter):
                    self.recorded.update(_bound_names(comp.target))
                    self.in_graph.update(_bound_names(comp.target))
                comp = comp.inner_for_in
            try:
                return self.recorded_expr(
                    expr.value if isinstance(expr, cst.DictComp) else expr.elt
                )
            finally:
                self.recorded, self.in_graph = saved
        return False

    def recorded_call(self, call: cst.Call) -> bool:
        func = call.func
        args = _call_args(call)
        resolved = self.ctx.resolve(func)
        if resolved is not None and self.checker.known_module(resolved):
            if not knowledge.in_namespace(resolved, knowledge.TENSOR_NAMESPACES):
                return False
            if resolved.rsplit(".", 1)[-1] in knowledge.DETACHING_OPS:
                return False
            return any(self.graph_expr(a) for a in args)
        if type(func) is cst.Name and resolved is None:
            name = func.value
            if name in _TENSOR_BUILTINS:
                return any(self.recorded_expr(a) for a in args)
            # A network or loss run under record(); not a builtin or a class.
            return name not in _PYTHON_BUILTINS and not name[:1].isupper()
        if type(func) is cst.Attribute:
            method = func.attr.value
            if (
                method in knowledge.DETACHING_METHODS
                or method in knowledge.NON_TENSOR_CALL_METHODS
                or method in knowledge.NON_TENSOR_METHODS
            ):
                return False
            receiver = func.value
            if self.graph_expr(receiver) or any(self.graph_expr(a) for a in args):
                return True
            return self.forward_like(call)
        return resolved is None  # `heads[i](x)`, `Loss()(out, y)`

    def forward_like(self, call: cst.Call) -> bool:
        """A call that runs a network or a loss (not a data utility, a builtin or a logger)."""
        func = call.func
        resolved = self.ctx.resolve(func)
        if resolved is not None:
            return not self.checker.known_module(resolved)
        if type(func) is cst.Name:
            return (
                func.value not in _PYTHON_BUILTINS
                and func.value not in _TENSOR_BUILTINS
                and not func.value[:1].isupper()
            )
        if type(func) is cst.Attribute:
            method = func.attr.value
            if (
                method in _SELF_NON_FORWARD
                or method in knowledge.DETACHING_METHODS
                or method in knowledge.DATA_METHODS
            ):
                return False
            receiver = func.value
            if method in ("forward", "hybrid_forward", "__call__"):
                return True
            if type(receiver) is cst.Name and receiver.value == "self":
                return True
            if _self_attr(receiver) is not None:
                return True
            names = _chain_names(receiver)
            return any(knowledge.NETWORK_WORDS.intersection(_tokens(n)) for n in names)
        return type(func) in (cst.Call, cst.Subscript)

    def readback(self, expr: cst.BaseExpression) -> bool:
        """A recorded value copied to Python (`loss.mean().asscalar()`, `float(loss)`)."""
        for n in _walk(expr):
            if type(n) is cst.Name and n.value in self.synced:
                return True
            if type(n) is not cst.Call:
                continue
            func = n.func
            if (
                type(func) is cst.Attribute
                and func.attr.value in knowledge.SYNC_METHODS
                and self.recorded_expr(func.value)
            ):
                return True
            if (
                type(func) is cst.Name
                and func.value in _SYNC_BUILTINS
                and n.args
                and self.recorded_expr(n.args[0].value)
            ):
                return True
        return False

    # -- effects of evaluating an expression ------------------------------------------------------

    def effects(self, expr: cst.BaseExpression, stmt: cst.CSTNode) -> None:
        """Calls in evaluation order: report, and mark the inputs of recorded ones."""
        if not self.recording:
            return
        for call in self._calls_post_order(expr):
            self.call(call, stmt)

    def _calls_post_order(self, expr: cst.CSTNode) -> list[cst.Call]:
        out: list[cst.Call] = []

        def visit(node: cst.CSTNode) -> None:
            if isinstance(node, _NESTED):
                return
            from mxlint.walker import children

            for child in children(node):
                visit(child)
            if type(node) is cst.Call:
                out.append(node)

        visit(expr)
        return out

    def call(self, call: cst.Call, stmt: cst.CSTNode) -> None:
        self.checker.check_store_call(self, call, stmt)
        self.checker.check_evaluation(self, call, stmt)
        self.checker.check_out_keyword(self, call)
        func = call.func
        if (
            type(func) is cst.Attribute
            and func.attr.value == "backward"
            or self.ctx.resolve(func) in knowledge.AUTOGRAD_BACKWARD
        ):
            # backward() frees the graph: its arrays lose their autograd information.
            self.recorded.clear()
            self.in_graph.clear()
            self.groups.clear()
            return
        if (
            type(func) is cst.Attribute
            and func.attr.value in knowledge.STORING_METHODS
            and type(func.value) is cst.Name
            and call.args
            and self.recorded_expr(call.args[-1].value)
        ):
            self.groups.add(func.value.value)
        if self.recorded_call(call):
            for arg in [*_call_args(call), func.value if type(func) is cst.Attribute else None]:
                if (
                    type(arg) is cst.Name
                    and arg.value not in ("self", "F")
                    and arg.value not in self.groups
                    and arg.value not in self.containers
                    and arg.value not in self.scope.python_values
                ):
                    self.in_graph.add(arg.value)
                    self.fresh.discard(arg.value)

    # -- writes --------------------------------------------------------------------------------------

    def store(
        self, target: cst.BaseExpression, value: cst.BaseExpression, stmt: cst.CSTNode
    ) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self.store(el.value, value, stmt)
            return
        if type(target) is not cst.Subscript or not self.recording:
            return
        base = target.value
        while type(base) is cst.Subscript:
            base = base.value
        if type(base) is cst.Name:
            name = base.value
            if self.checker.check_slice_write(self, stmt, target, name, value):
                return
        self.checker.check_subscript_store(self, stmt, target, value)

    def augassign(self, node: cst.AugAssign) -> None:
        target = node.target
        if type(target) is cst.Subscript:
            self.store(target, node.value, node)
            return
        if not self.recording:
            return
        if _self_attr(target) is not None and type(node.value) in (
            cst.List,
            cst.Tuple,
            cst.ListComp,
        ):
            self.checker.check_list_extend(self, node)
            return
        if type(target) is not cst.Name:
            return
        name = target.value
        if self.checker.check_augassign(self, node, name):
            return
        if name in self.containers or type(node.value) in (cst.List, cst.Tuple, cst.ListComp):
            self.checker.check_list_extend(self, node)
            return
        if self.graph_expr(node.value):
            self.recorded.add(name)
            self.in_graph.add(name)
            self.fresh.discard(name)


#: Data-pipeline words: a `zip` over one of these is a loop over batches, not over devices.
_PIPELINE_WORDS = (
    "loader",
    "data_iter",
    "dataiter",
    "train_data",
    "val_data",
    "test_data",
    "train_iter",
    "val_iter",
    "batches",
    "dataset",
)
#: Words of a loop's iterable that make it a loop over training steps.
_STEP_WORDS = frozenset(
    {
        "loader",
        "iter",
        "iterator",
        "batches",
        "dataset",
        "epoch",
        "epochs",
        "step",
        "steps",
        "iteration",
        "iterations",
        "iters",
    }
)


class RecordChecker(Checker):
    """What runs inside `with autograd.record():` blocks: outputs kept beyond the step
    (MXL402), in-place writes into recorded arrays (MXL404), evaluation work (MXL405)."""

    rules = (OutputsKeptInRecord, InplaceWriteInRecord, EvaluationInRecord)
    name = "record"

    def begin(self) -> None:
        self._scopes: dict[cst.CSTNode, _Scope] = {}
        self._reported: set[cst.CSTNode] = set()
        #: Statements with a reported forward pass on validation data (one per statement).
        self._evaluated: set[cst.CSTNode] = set()
        self._classes: dict[cst.ClassDef, dict[str, set[str]]] = {}
        self._module_facts: tuple[set[str], set[str], set[str]] | None = None
        self._loop_nodes: dict[cst.CSTNode, set[cst.CSTNode]] = {}

    # -- entry ---------------------------------------------------------------------------------

    def _record_mode(self, node: cst.With) -> str | None:
        """ "train" for `record()`, "predict" for `record(train_mode=False)`, else None."""
        for item in node.items:
            call = item.item
            if type(call) is cst.Call and self.ctx.resolve(call.func) == "mxnet.autograd.record":
                flag = _keyword(call, "train_mode")
                if flag is None and call.args and call.args[0].keyword is None:
                    flag = call.args[0].value
                if type(flag) is cst.Name and flag.value == "False":
                    return "predict"
                return "train"
        return None

    def visit_With(self, node: cst.With) -> None:
        mode = self._record_mode(node)
        if mode is None:
            return
        if any(type(n) is cst.With and self._record_mode(n) for n in self.ctx.stack):
            return  # the outer block reads this one
        _Record(self, node, predict=mode == "predict").run()

    def scope(self) -> _Scope:
        fn = self.ctx.enclosing_function()
        node: cst.Module | cst.FunctionDef = fn if fn is not None else self.ctx.module
        scope = self._scopes.get(node)
        if scope is None:
            scope = self._scopes[node] = _Scope(self, node)
        return scope

    def _report(self, node: cst.CSTNode, rule: type[Rule], **kwargs: object) -> None:
        if node in self._reported:
            return
        self._reported.add(node)
        self.ctx.report(node, rule, rule.format(**kwargs))

    # -- knowledge ------------------------------------------------------------------------------

    def known_module(self, resolved: str) -> bool:
        return knowledge.is_library(resolved)

    def creates_array(self, value: cst.BaseExpression) -> bool:
        if type(value) is not cst.Call:
            return False
        resolved = self.ctx.resolve(value.func)
        return (
            knowledge.in_namespace(resolved, knowledge.IMPERATIVE_NAMESPACES)
            and resolved is not None
            and not resolved.endswith(("waitall", "save", "load", "seed", "load_frombuffer"))
        )

    def is_container(self, value: cst.BaseExpression) -> bool:
        if type(value) in (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp):
            return True
        if type(value) is cst.BinaryOperation:
            return type(value.left) is cst.List or type(value.right) is cst.List
        if type(value) is cst.Call:
            resolved = self.ctx.resolve(value.func)
            if resolved in knowledge.CONTAINER_FACTORIES:
                return True
            return (
                type(value.func) is cst.Name
                and resolved is None
                and value.func.value in knowledge.CONTAINER_FACTORIES
            )
        return False

    def _module(self) -> tuple[set[str], set[str], set[str]]:
        """(metric names, container names, local EvalMetric subclasses) at module level."""
        if self._module_facts is None:
            metric_classes: set[str] = set()
            for stmt in self.ctx.module.body:
                if type(stmt) is cst.ClassDef:
                    for base in stmt.bases:
                        resolved = self.ctx.resolve(base.value)
                        if (
                            resolved in knowledge.METRIC_BASES
                            or knowledge.in_namespace(resolved, knowledge.METRIC_NAMESPACES)
                            or (type(base.value) is cst.Name and base.value.value in metric_classes)
                        ):
                            metric_classes.add(stmt.name.value)
            self._module_facts = (set(), set(), metric_classes)
            metrics, containers, _ = self._module_facts
            for stmt in self.ctx.module.body:
                if type(stmt) is cst.SimpleStatementLine:
                    for small in stmt.body:
                        if type(small) is cst.Assign:
                            for t in small.targets:
                                if type(t.target) is cst.Name:
                                    if self.is_metric_ctor(small.value):
                                        metrics.add(t.target.value)
                                    if self.is_container(small.value):
                                        containers.add(t.target.value)
        return self._module_facts

    @property
    def module_metrics(self) -> set[str]:
        return self._module()[0]

    def is_metric_ctor(self, value: cst.BaseExpression) -> bool:
        if type(value) is not cst.Call:
            return False
        resolved = self.ctx.resolve(value.func)
        if knowledge.in_namespace(resolved, knowledge.METRIC_NAMESPACES):
            return True
        return (
            type(value.func) is cst.Name
            and resolved is None
            and self._module_facts is not None
            and value.func.value in self._module_facts[2]
        )

    def _class(self, cls: cst.ClassDef) -> dict[str, set[str]]:
        """Attributes of `self` in a class: metrics, containers made in `__init__` (or the
        class body), and attributes reset or cleared outside `__init__`."""
        info = self._classes.get(cls)
        if info is not None:
            return info
        self._module()
        info = {"metrics": set(), "containers": set(), "reset": set()}
        for node in iter_nodes(cls.body, stop=(cst.ClassDef,)):
            if type(node) is not cst.FunctionDef:
                continue
            init = node.name.value == "__init__"
            for n in _walk(node):
                if isinstance(n, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                    value = n.value
                    for t in _targets(n):
                        base = t.value if type(t) is cst.Subscript else t
                        attr = _self_attr(base)
                        if attr is None:
                            continue
                        if type(t) is cst.Subscript:
                            if _full_slice(t) and not init:
                                info["reset"].add(attr)
                            continue
                        if value is not None and self.is_metric_ctor(value):
                            info["metrics"].add(attr)
                        if init and value is not None and self.is_container(value):
                            info["containers"].add(attr)
                        if not init and type(n) is not cst.AugAssign:
                            info["reset"].add(attr)
                elif (
                    type(n) is cst.Call
                    and type(n.func) is cst.Attribute
                    and n.func.attr.value == "clear"
                ):
                    attr = _self_attr(n.func.value)
                    if attr is not None:
                        info["reset"].add(attr)
                elif type(n) is cst.Del:
                    for el in iter_nodes(n.target):
                        attr = _self_attr(el) if isinstance(el, cst.BaseExpression) else None
                        if attr is not None:
                            info["reset"].add(attr)
        for stmt in cls.body.body:
            if type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    if type(small) is cst.Assign and self.is_container(small.value):
                        for assigned in small.targets:
                            if type(assigned.target) is cst.Name:
                                info["containers"].add(assigned.target.value)
        self._classes[cls] = info
        return info

    def is_shard_loop(self, loop: cst.For | cst.While, scope: _Scope) -> bool:
        """A loop over the devices or shards of one batch (`for x, y in zip(data, label)`),
        which runs inside one training step."""
        if type(loop) is not cst.For:
            return False
        it = loop.iter
        while (
            type(it) is cst.Call
            and type(it.func) is cst.Name
            and it.func.value in ("enumerate", "tqdm", "list", "iter")
            and it.args
        ):
            it = it.args[0].value
        if type(it) is cst.Call and type(it.func) is cst.Name and it.func.value == "zip":
            names = [n.value for a in it.args for n in _walk(a.value) if type(n) is cst.Name]
            return not any(w in name.lower() for name in names for w in _PIPELINE_WORDS)
        if type(it) is cst.Call and type(it.func) is cst.Name and it.func.value == "range":
            names = [n.value for a in it.args for n in _walk(a.value) if type(n) is cst.Name]
            return any(self._shardish(name, scope) for name in names)
        if type(it) in (cst.Name, cst.Attribute):
            names = _chain_names(it)
            return bool(names) and self._shardish(names[0], scope)
        return False

    def is_step_loop(self, loop: cst.For | cst.While) -> bool:
        """A loop over training steps: batches of a data pipeline, epochs, iterations."""
        if isinstance(loop, cst.While):
            return True
        it = loop.iter
        while (
            type(it) is cst.Call
            and type(it.func) is cst.Name
            and it.func.value in ("enumerate", "tqdm", "list", "iter")
            and it.args
        ):
            it = it.args[0].value
        if type(it) is cst.Call:
            resolved = self.ctx.resolve(it.func)
            if resolved is not None and (
                resolved == knowledge.DATALOADER
                or any(resolved.startswith(p) for p in knowledge.DATA_SOURCE_PREFIXES)
            ):
                return True
        names = [n.value for n in _walk(it) if type(n) is cst.Name]
        names += [n.attr.value for n in _walk(it) if type(n) is cst.Attribute]
        return any(w in name.lower() for name in names for w in _PIPELINE_WORDS) or any(
            _STEP_WORDS.intersection(_tokens(name)) for name in names
        )

    def _shardish(self, name: str, scope: _Scope) -> bool:
        if knowledge.SHARD_WORDS.intersection(_tokens(name)):
            return True
        for _, value in scope.assigns.get(name, []):
            if type(value) is cst.Call:
                resolved = self.ctx.resolve(value.func)
                if resolved in knowledge.SPLIT_AND_LOAD or resolved in knowledge.SPLIT_DATA:
                    return True
        return False

    def _inside(self, loop: cst.CSTNode) -> set[cst.CSTNode]:
        nodes = self._loop_nodes.get(loop)
        if nodes is None:
            nodes = self._loop_nodes[loop] = set(_walk(loop))
        return nodes

    # -- MXL402 ---------------------------------------------------------------------------------

    def _resets(self, region: cst.CSTNode, name: str, *, reads: bool) -> bool:
        """Whether `name` is rebound or cleared in `region` (or, with `reads`, read there other
        than by the stores this rule looks at)."""
        stores: set[cst.CSTNode] = set()
        for n in _walk(region):
            if type(n) in (cst.Assign, cst.AnnAssign, cst.For, cst.WithItem, cst.CompFor):
                for t in _targets(n):
                    if name in _bound_names(t):
                        return True
                    if (
                        type(t) is cst.Subscript
                        and _full_slice(t)
                        and type(t.value) is cst.Name
                        and t.value.value == name
                    ):
                        return True
                    if type(t) is cst.Subscript:
                        stores.add(t.value)
            elif type(n) is cst.Del:
                if any(type(x) is cst.Name and x.value == name for x in _walk(n.target)):
                    return True
            elif (
                type(n) is cst.Call
                and type(n.func) is cst.Attribute
                and type(n.func.value) is cst.Name
                and n.func.value.value == name
            ):
                if n.func.attr.value in ("clear", "popleft", "pop"):
                    return True
                stores.add(n.func.value)
            elif type(n) is cst.AugAssign:
                stores.add(n.target)
        if reads:
            return any(
                type(n) is cst.Name and n.value == name and n not in stores for n in _walk(region)
            )
        return False

    def _lifetime(self, rec: _Record, container: cst.BaseExpression, *, reads: bool) -> str | None:
        """How the container outlives one training step, or None."""
        loop = rec.iteration_loop
        scope = rec.scope
        attr = _self_attr(container)
        if attr is not None:
            cls = self.ctx.enclosing_class()
            if cls is None or scope.node is self.ctx.module:
                return None
            info = self._class(cls)
            if attr not in info["containers"] or attr in info["reset"]:
                return None
            return "is an attribute of `self` created in `__init__` and never cleared"
        if type(container) is not cst.Name:
            return None
        name = container.value
        if name in scope.params:
            return None
        local = name in scope.assigns and name not in scope.globals
        loops = rec.loops
        reset_at = next(
            (i for i, lp in enumerate(loops) if self._resets(lp, name, reads=reads)), None
        )
        if reset_at == 0:
            return None  # re-created (or cleared) every iteration
        if reset_at is not None:
            # Re-created in an outer loop: it only outlives the inner ones. A bug if one of
            # them is a loop over training steps, not over the devices of one batch.
            survived = loops[:reset_at]
            if not any(self.is_step_loop(lp) for lp in survived):
                return None
            if scope.reaches_backward({name}, ignore=self._inside(survived[-1])):
                return None
            return "is created outside the loop and never cleared in it"
        if loop is not None:
            if local:
                inside = self._inside(loops[-1])
                outside = [v for n, v in scope.assigns[name] if n not in inside]
                if outside and any(v is not None and self.is_container(v) for v in outside):
                    if scope.reaches_backward({name}, ignore=inside):
                        return None  # kept on purpose: backpropagated after the loop
                    return "is created before the loop and never cleared in it"
                return None
        elif local:
            return None  # one call, one step
        if scope.node is self.ctx.module or name not in self._module()[1]:
            return None
        if (
            type(scope.node) is cst.FunctionDef
            and reads
            and self._resets(scope.node, name, reads=True)
        ):
            return None
        return "is module-level and never cleared"

    def check_store_call(self, rec: _Record, call: cst.Call, stmt: cst.CSTNode) -> None:
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
        where = self._lifetime(rec, container, reads=False)
        if where is not None:
            self._report(
                call,
                OutputsKeptInRecord,
                value=rec.ctx.code(value).strip(),
                container=rec.ctx.code(func.value).strip(),
                where=where,
            )

    def check_list_extend(self, rec: _Record, node: cst.AugAssign) -> None:
        """`outputs += [out]`."""
        if not rec.recorded_expr(node.value):
            return
        where = self._lifetime(rec, node.target, reads=False)
        if where is not None:
            self._report(
                node,
                OutputsKeptInRecord,
                value=rec.ctx.code(node.value).strip(),
                container=rec.ctx.code(node.target).strip(),
                where=where,
            )

    def check_subscript_store(
        self, rec: _Record, stmt: cst.CSTNode, target: cst.Subscript, value: cst.BaseExpression
    ) -> None:
        container = target.value
        if type(container) is cst.Name and (
            container.value in rec.fresh or container.value in rec.in_graph
        ):
            return
        if not rec.recorded_expr(value):
            return
        where = self._lifetime(rec, container, reads=True)
        if where is not None:
            self._report(
                stmt,
                OutputsKeptInRecord,
                value=rec.ctx.code(value).strip(),
                container=rec.ctx.code(container).strip(),
                where=where,
            )

    # -- MXL404 ---------------------------------------------------------------------------------

    def check_slice_write(
        self,
        rec: _Record,
        stmt: cst.CSTNode,
        target: cst.Subscript,
        name: str,
        value: cst.BaseExpression,
    ) -> bool:
        if name in rec.in_graph:
            self._report(
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
                    self._report(
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

    def check_augassign(self, rec: _Record, node: cst.AugAssign, name: str) -> bool:
        op = rec.ctx.code(node.operator).strip()
        write = f"`{name} {op} ...`"
        if name in rec.in_graph:
            self._report(
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
            self._report(
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
        inside = self._inside(loop)
        bindings = rec.scope.assigns.get(name, [])
        if bindings and not any(n in inside for n, _ in bindings):
            self._report(
                node,
                InplaceWriteInRecord,
                target=name,
                write=write,
                reason=f"from the second iteration on, `{name}` is the NDArray "
                "recorded by the previous one",
            )
            return True
        return False

    def check_out_keyword(self, rec: _Record, call: cst.Call) -> None:
        out = _keyword(call, "out")
        if type(out) is not cst.Name:
            return
        resolved = self.ctx.resolve(call.func)
        if (
            resolved is not None
            and self.known_module(resolved)
            and not knowledge.is_mxnet(resolved)
        ):
            return
        name = out.value
        write = f"`out={name}`"
        if name in rec.in_graph:
            self._report(
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
            self._report(
                call,
                InplaceWriteInRecord,
                target=name,
                write=write,
                reason="the operator reads and overwrites it while recording",
            )

    # -- MXL405 ---------------------------------------------------------------------------------

    def _is_metric(self, rec: _Record, receiver: cst.BaseExpression, call: cst.Call) -> bool:
        if type(receiver) is cst.Name:
            name = receiver.value
            if name in rec.scope.metrics:
                return True
            unknown = name in rec.scope.params or name not in rec.scope.assigns
            return unknown and self._metric_like(name, call)
        attr = _self_attr(receiver)
        if attr is not None:
            cls = self.ctx.enclosing_class()
            if cls is not None and attr in self._class(cls)["metrics"]:
                return True
            return self._metric_like(attr, call)
        return False

    @staticmethod
    def _metric_like(name: str, call: cst.Call) -> bool:
        """`train_metric.update(labels, preds)` on an object of unknown origin: named like a
        metric, or called with the two lists `EvalMetric.update` takes."""
        if len(call.args) != 2:
            return False
        if _METRIC_WORDS.intersection(_tokens(name)):
            return True
        return all(type(a.value) is cst.List for a in call.args)

    def _is_logging(self, call: cst.Call) -> bool:
        func = call.func
        resolved = self.ctx.resolve(func)
        if resolved is not None:
            return resolved in knowledge.LOGGING_FUNCTIONS or resolved.startswith("logging.")
        if type(func) is cst.Name:
            return func.value == "print"
        if type(func) is cst.Attribute and func.attr.value in knowledge.LOGGING_METHODS:
            return any(
                knowledge.LOGGER_WORDS.intersection(_tokens(n)) for n in _chain_names(func.value)
            )
        return False

    def check_evaluation(self, rec: _Record, call: cst.Call, stmt: cst.CSTNode) -> None:
        func = call.func
        code = rec.ctx.code(call).strip()
        short = code if len(code) <= 60 else code[:57] + "..."
        if (
            type(func) is cst.Attribute
            and func.attr.value == "update"
            and self._is_metric(rec, func.value, call)
        ):
            self._report(
                call,
                EvaluationInRecord,
                what=f"`{short}` updates an evaluation metric",
                why="it reads the outputs back (a sync) and any operator it runs is "
                "recorded into a graph that is never backpropagated",
                advice="move it after the `with` block, next to `trainer.step()`",
            )
            return
        if self._is_logging(call):
            if any(rec.readback(a) for a in _call_args(call)):
                self._report(
                    call,
                    EvaluationInRecord,
                    what=f"`{short}` reads a recorded value back for logging",
                    why="it blocks until the forward pass has run, before "
                    "`backward()` is even queued, and records the reductions "
                    "it logs",
                    advice="log after the `with` block (after `backward()`)",
                )
            return
        if rec.predict or stmt in self._evaluated or not rec.forward_like(call):
            return
        args = _call_args(call)
        if any(rec.graph_expr(a) for a in args):
            return
        validation = [a for a in args if rec.scope.is_validation(a)]
        if not validation and not (rec.eval_function and args):
            return
        if rec.scope.feeds_backward(stmt):
            return
        if any(rec.scope.attaches_grad(n) for a in validation for n in _chain_names(a)):
            return
        self._evaluated.add(stmt)
        what = (
            f"`{short}` runs the network on validation data"
            if validation
            else f"`{short}` runs the network in an evaluation function"
        )
        self._report(
            call,
            EvaluationInRecord,
            what=what,
            why="its graph is recorded but never backpropagated (memory, time) and "
            "Dropout/BatchNorm run in training mode",
            advice="run it outside `autograd.record()` (after the `with` block, in "
            "its own loop; Gluon layers default to inference mode there, or "
            "use `autograd.predict_mode()`)",
        )
