"""The memory and sync checkers (MXL4xx, MXL6xx): `MemoryChecker` reads each loop of a function
once (for MXL401, MXL403 and the sync family), `RecordChecker` each `autograd.record()` block
(for MXL402, MXL404 and MXL405); the rules' files decide and word the findings, and
`_analysis.py` holds what they share.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import libcst as cst

from mxlint import knowledge
from mxlint.checker import Checker
from mxlint.expected_errors import expects_error
from mxlint.names import last_name, target_names
from mxlint.rule import Rule
from mxlint.rules.memory import (
    accumulated_ndarray_without_sync,
    backward_without_record,
    evaluation_in_record,
    inplace_write_in_record,
    outputs_kept_across_loop,
    outputs_kept_in_record,
)
from mxlint.rules.memory._analysis import (
    _LOOP_TYPES,
    _METRIC_WORDS,
    _NESTED,
    _NESTED_TYPES,
    _PIPELINE_WORDS,
    _SCOPE_KINDS,
    _STEP_WORDS,
    _SYMBOLIC_API,
    _chain_names,
    _full_slice,
    _keyword,
    _Record,
    _Scope,
    _self_attr,
    _targets,
    _tokens,
    _walk,
)
from mxlint.rules.memory.accumulated_ndarray_without_sync import AccumulatedWithoutSync
from mxlint.rules.memory.backward_without_record import BackwardWithoutRecord
from mxlint.rules.memory.evaluation_in_record import EvaluationInRecord
from mxlint.rules.memory.inplace_write_in_record import InplaceWriteInRecord
from mxlint.rules.memory.outputs_kept_across_loop import OutputsKeptAcrossLoop
from mxlint.rules.memory.outputs_kept_in_record import OutputsKeptInRecord
from mxlint.rules.sync import (
    sync_in_training_loop,
    sync_per_element,
    timing_without_sync,
    unsynced_device_read,
)
from mxlint.rules.sync.sync_in_training_loop import SyncEveryStep
from mxlint.rules.sync.sync_per_element import SyncPerElement
from mxlint.rules.sync.timing_without_sync import TimingWithoutSync
from mxlint.rules.sync.unsynced_device_read import UnsyncedDeviceRead
from mxlint.semantic.effects import Effects, is_sync_call
from mxlint.walker import children, iter_nodes, typed_nodes

_ASSIGN = (cst.Assign,)


def _self_member(func: cst.Attribute) -> bool:
    """`self.net`: a callable the object holds (not a method chain on some other value)."""
    return type(func.value) is cst.Name and func.value.value == "self"


#: Calls a loop's iterable is wrapped in that still iterate what they are given.
_ITER_WRAPPERS = ("enumerate", "tqdm", "list", "iter")


def _unwrapped(it: cst.BaseExpression, wrappers: tuple[str, ...]) -> cst.BaseExpression:
    """What a loop iterates under `enumerate(...)`, `tqdm(...)` and the other `wrappers`."""
    while (
        type(it) is cst.Call and type(it.func) is cst.Name and it.func.value in wrappers and it.args
    ):
        it = it.args[0].value
    return it


class MemoryChecker(Checker):
    rules = (
        AccumulatedWithoutSync,
        BackwardWithoutRecord,
        OutputsKeptAcrossLoop,
        TimingWithoutSync,
        SyncEveryStep,
        SyncPerElement,
        UnsyncedDeviceRead,
    )
    name = "memory"
    #: The class whose method the scope being read is (its `self.m()` calls are followed).
    scope_class: str | None = None

    def visit_Module(self, node: cst.Module) -> None:
        self._scopes.append(node.body)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if type(node.body) is cst.IndentedBlock:
            self._scopes.append(node.body.body)
            stack = self.ctx.stack
            if stack and type(stack[-1]) is cst.ClassDef:  # a method (not yet on the stack)
                self._classes[id(node.body.body)] = stack[-1].name.value

    def end(self) -> None:
        # After the walk: every `autograd.record()` block is known by then.
        for body in self._scopes:
            self.scope_class = self._classes.get(id(body))
            self._scope(body)

    # -- one function (or the module's top level) ----------------------------------------

    def _scope(self, body: tuple[cst.BaseStatement, ...] | list[cst.BaseStatement]) -> None:
        if not self._mentions_mxnet():
            return
        # A function or class at this level is a scope of its own (visited on its own).
        body = [stmt for stmt in body if type(stmt) not in _NESTED_TYPES]
        # Only the kinds of node the passes below look at, in source order.
        kinds = _SCOPE_KINDS
        nodes = [n for stmt in body for n in typed_nodes(stmt, kinds, _NESTED)]
        tensors = self._tensor_names(body, nodes=[n for n in nodes if type(n) is cst.Assign])
        for node in nodes:
            if type(node) in _LOOP_TYPES:
                self._loop(node, tensors)  # type: ignore[arg-type]
        if self._starts_timer(body):
            self._timing(body)
        if self.ctx.settings.enabled(UnsyncedDeviceRead, self.ctx.path) and (
            unsynced_device_read.reads(self)
        ):
            unsynced_device_read.check_reads(self, body)
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
            nodes = [n for stmt in body for n in typed_nodes(stmt, _ASSIGN, _NESTED)]
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

    _backward = backward_without_record.check_backward

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
        self._classes: dict[int, str] = {}
        self.scope_class = None
        self._autograd = None
        #: Names the file binds to Gluon loss objects (MXL603), read on first use.
        self._loss_objects: set[str] | None = None

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            call = item.item
            if type(call) is not cst.Call:
                continue
            # An unknown `record()` is taken at its word, so that what it records is never
            # reported as computed outside it.
            name = knowledge.recording_block(self.ctx.resolve(call.func), last_name(call.func))
            if name is not None:
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
                if method in knowledge.TENSOR_RESULT_METHODS:
                    return self._is_tensor(func.value, names)
                # A network or loss the object holds (`self.loss_fn(self.net(x), y)`), called
                # under autograd.record() or on tensors, as a name would be.
                if _self_member(func):
                    return (stmt is not None and self._in_record(stmt)) or any(
                        self._is_tensor(a.value, names) for a in value.args
                    )
                return False
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
        if self.ctx.settings.enabled(SyncPerElement, self.ctx.path):
            self._per_element(loop, loop_names)
        if not loop_names:
            return
        if self._syncs(loop):
            if self.ctx.settings.enabled(OutputsKeptAcrossLoop, self.ctx.path):
                outputs_kept_across_loop.check_kept_outputs(self, loop)
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
                    requires=self._unless_helpers_sync([loop.body]),
                )

    _python_value_hint = accumulated_ndarray_without_sync.python_value_hint
    _reduces_to_one_number = accumulated_ndarray_without_sync.reduces_to_one_number

    def _direct_statements(self, loop: cst.For | cst.While) -> Iterator[cst.CSTNode]:
        """Small statements of this loop, not of loops nested in it (they are checked on
        their own)."""
        stack: list[cst.CSTNode] = [loop.body]
        while stack:
            node = stack.pop()
            typ = type(node)
            if typ in _NESTED_TYPES or typ in _LOOP_TYPES:
                continue
            # By MRO, not isinstance: ABCMeta's first answer for a node type walks every
            # subclass of the base.
            if cst.BaseSmallStatement in typ.__mro__:
                yield node
                continue
            stack.extend(reversed(list(children(node))))

    _accumulation = accumulated_ndarray_without_sync.accumulation
    _every_step = sync_in_training_loop.check_every_step
    _per_element = sync_per_element.check_per_element

    def _queues_step(self, stmt: cst.CSTNode) -> bool:
        """The statement runs `backward()` or an optimizer step."""
        for n in iter_nodes(stmt, stop=_NESTED):
            if type(n) is cst.Call:
                if type(n.func) is cst.Attribute and n.func.attr.value in ("backward", "step"):
                    return True
                if self.ctx.resolve(n.func) in knowledge.AUTOGRAD_BACKWARD:
                    return True
        return False

    #: The data-pipeline words but `dataset`: a name with that word alone does not make a
    #: loop over batches here.
    _DATA_WORDS = tuple(w for w in _PIPELINE_WORDS if w != "dataset")

    def _iterates_data(self, loop: cst.For) -> bool:
        """A loop over batches of a data pipeline (a DataLoader, a data iterator), not over a
        bounded list such as per-device shards or layers."""
        it = _unwrapped(loop.iter, ("enumerate", "tqdm", "iter"))
        if type(it) is cst.Call:
            resolved = self.ctx.resolve(it.func)
            return resolved in (knowledge.DATALOADER, "mxnet.io.NDArrayIter")
        from mxlint.names import dotted_name

        name = (dotted_name(it) or "").rsplit(".", 1)[-1].lower()
        return any(word in name for word in self._DATA_WORDS)

    def _has_sync(self, node: cst.CSTNode) -> bool:
        """Whether `node` surely synchronises: a readback, `waitall()`, a metric update, or a
        call into a function of this file that does one of these."""
        for inner in iter_nodes(node, stop=_NESTED):
            if type(inner) is cst.Call:
                if is_sync_call(inner, self.ctx.imports):
                    return True
                func = inner.func
                if type(func) is cst.Name and func.value in ("float", "int") and inner.args:
                    return True
                effects = self.ctx.effects.of_call(inner)
                if isinstance(effects, Effects) and effects.syncs:
                    return True
        return False

    def _helpers(self, nodes: Iterable[cst.CSTNode]) -> tuple[str, ...]:
        """Project functions in other files that `nodes` call: whether they synchronise is
        known once the run has read them (a finding then requires that they do not)."""
        out: list[str] = []
        for node in nodes:
            for inner in iter_nodes(node, stop=_NESTED):
                if type(inner) is cst.Call:
                    effects = self.ctx.effects.of_call(inner)
                    if isinstance(effects, str):
                        out.append(effects)
        return tuple(dict.fromkeys(out))

    def _unless_helpers_sync(self, nodes: Iterable[cst.CSTNode]) -> tuple[str, str] | None:
        helpers = self._helpers(nodes)
        return ("no-sync", " ".join(helpers)) if helpers else None

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

    _timing = timing_without_sync.check_timing

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
        #: The record block being read runs where MXNet's error is expected (a test).
        self._error_expected = False

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
        self._error_expected = expects_error(
            self.ctx.resolve, self.ctx.stack, node, ("MXNetError",)
        )
        try:
            _Record(self, node, predict=mode == "predict").run_block()
        finally:
            self._error_expected = False

    def scope(self) -> _Scope:
        fn = self.ctx.enclosing_function()
        node: cst.Module | cst.FunctionDef = fn if fn is not None else self.ctx.module
        scope = self._scopes.get(node)
        if scope is None:
            scope = self._scopes[node] = _Scope(self, node)
        return scope

    def _report(
        self,
        node: cst.CSTNode,
        rule: type[Rule],
        requires: tuple[str, str] | None = None,
        **kwargs: object,
    ) -> None:
        if node in self._reported or (rule is InplaceWriteInRecord and self._error_expected):
            return
        self._reported.add(node)
        self.ctx.report(node, rule, rule.format(**kwargs), requires=requires)

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
        it = _unwrapped(loop.iter, _ITER_WRAPPERS)
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
        it = _unwrapped(loop.iter, _ITER_WRAPPERS)
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
                    if name in target_names(t):
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

    check_store_call = outputs_kept_in_record.check_store_call
    check_list_extend = outputs_kept_in_record.check_list_extend
    check_subscript_store = outputs_kept_in_record.check_subscript_store
    check_slice_write = inplace_write_in_record.check_slice_write
    check_augassign = inplace_write_in_record.check_augassign
    check_out_keyword = inplace_write_in_record.check_out_keyword

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

    def _metric_object(self, rec: _Record, value: cst.BaseExpression) -> bool:
        """`metric`, `self.train_acc`: an object built as an evaluation metric, or one of
        unknown origin named as one (handed to a helper that updates it)."""
        if type(value) is cst.Name:
            name = value.value
            if name in rec.scope.metrics:
                return True
            unknown = name in rec.scope.params or name not in rec.scope.assigns
            return unknown and bool(_METRIC_WORDS.intersection(_tokens(name)))
        attr = _self_attr(value)
        if attr is not None:
            cls = self.ctx.enclosing_class()
            if cls is not None and attr in self._class(cls)["metrics"]:
                return True
            return bool(_METRIC_WORDS.intersection(_tokens(attr)))
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

    check_evaluation = evaluation_in_record.check_evaluation
