"""What the memory and sync checkers share: a function's tensor names, loops and the statements
of each `autograd.record()` block, read once for every rule of both families.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import libcst as cst

from mxlint import knowledge
from mxlint.flow import post_order_calls
from mxlint.names import assignment_targets, name_tokens, target_names
from mxlint.semantic.dataflow import Dataflow
from mxlint.walker import CALLS, LOOPS, NESTED_SCOPES, iter_nodes, typed_nodes

if TYPE_CHECKING:
    from mxlint.rules.memory.checker import RecordChecker


_NESTED = NESTED_SCOPES
#: Spellings of the symbolic execution API (Module, Executor).
_SYMBOLIC_API = re.compile(
    r"\bmod\.Module\b|\bBucketingModule\b|\bsimple_bind\(|\.bind\(|"
    r"\bmx\.module\b|\bExecutor\b"
)
_LOOPS = LOOPS
_LOOP_TYPES = frozenset(_LOOPS)
_NESTED_TYPES = frozenset(_NESTED)
_COMPREHENSIONS = (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)
#: What the per-scope passes (tensor names, loops, MXL403, timing) look at.
_COMPREHENSION_TYPES = frozenset(_COMPREHENSIONS)
_SCOPE_KINDS = frozenset({cst.Assign, cst.Call, cst.IndentedBlock, *_LOOPS, *_COMPREHENSIONS})
#: The node types `_Scope`'s passes read (with `walker.CALLS`).
_NAME_TYPES = frozenset({cst.Name})
_ASSIGN_TYPES = frozenset({cst.Assign})
_SOURCE_TYPES = frozenset(
    {cst.For, cst.CompFor, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.WithItem}
)
_FLOW_TYPES = frozenset({cst.For, cst.CompFor, cst.Assign, cst.AugAssign})


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


_IN_GRAPH = "`{name}` is already in the recorded graph"
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


#: `X_val` -> ["x", "val"] (the rules of this family match words of names).
_tokens = name_tokens


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
    while type(node) is cst.Attribute or type(node) is cst.Subscript:
        node = node.value
    return node.value if type(node) is cst.Name else None


def _self_attr(node: cst.BaseExpression) -> str | None:
    """`self.history` -> "history"."""
    if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self":
        return node.attr.value
    return None


def _chain_names(node: cst.BaseExpression) -> list[str]:
    names: list[str] = []
    while type(node) is cst.Attribute or type(node) is cst.Subscript:
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


_targets = assignment_targets


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Descendants, not entering nested functions, classes or lambdas."""
    return iter_nodes(node, stop=_NESTED)


#: Binding kinds `_Scope.assigns` holds.
_ASSIGNING = frozenset({"assignment", "loop", "with"})


class _Scope:
    """Facts about the function (or module) around a record block, computed once."""

    def __init__(self, checker: RecordChecker, node: cst.Module | cst.FunctionDef) -> None:
        self.checker = checker
        self.node = node
        bound = checker.ctx.bindings.scope(node)
        assert bound is not None
        self.params: set[str] = set(bound.params)
        #: The nodes of each requested set of types in this scope, in pre-order.
        self._typed: dict[frozenset[type], list[cst.CSTNode]] = {}
        #: Names bound in this scope by an assignment, a loop or a `with`, with the value bound
        #: when the target is the name itself.
        self.assigns: dict[str, list[tuple[cst.CSTNode, cst.BaseExpression | None]]] = {
            name: [(b.node, b.value) for b in found]
            for name, bindings in bound.names.items()
            if (found := [b for b in bindings if b.kind in _ASSIGNING])
        }
        self.globals: set[str] = set(bound.globals)
        #: Names `x.attach_grad()` is called on: variables of the graph.
        self.grad_names: set[str] = set()
        for n in self.of(CALLS):
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

    def of(self, types: frozenset[type]) -> list[cst.CSTNode]:
        """The scope's nodes of `types` (not inside nested functions, classes or lambdas)."""
        found = self._typed.get(types)
        if found is None:
            found = self._typed[types] = typed_nodes(self.node, types, _NESTED)
        return found

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
        for n in self.of(_SOURCE_TYPES):
            if type(n) is cst.For or type(n) is cst.CompFor:
                loop_bound.update(target_names(n.target))
                for name in target_names(n.target):
                    sources.setdefault(name, []).append(n.iter)
            elif type(n) is cst.Assign or type(n) is cst.AnnAssign or type(n) is cst.AugAssign:
                for t in _targets(n):
                    for name in target_names(t):
                        sources.setdefault(name, []).append(n.value)
            elif type(n) is cst.WithItem and n.asname is not None:
                for name in target_names(n.asname.name):
                    sources.setdefault(name, []).append(None)
        if type(fn) is cst.FunctionDef:
            p = fn.params
            for param in (*p.posonly_params, *p.params, *p.kwonly_params):
                sources.setdefault(param.name.value, []).append(None)
        names: set[str] = set()
        for n in self.of(_NAME_TYPES):
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
        if type(expr) is cst.Tuple or type(expr) is cst.List:
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
                (type(v) is cst.List or type(v) is cst.Tuple)
                and v.elements
                and all(self.checker.is_metric_ctor(e.value) for e in v.elements)
                for v in values
            ):
                lists.add(name)
        for n in self.of(_ASSIGN_TYPES):
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
                names.update(target_names(n.target))
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
        return self.reaches_backward({name for t in _targets(stmt) for name in target_names(t)})

    def reaches_backward(self, names: set[str], ignore: set[cst.CSTNode] | None = None) -> bool:
        """Whether these names, or what is computed from them, are backpropagated (by a
        call not in `ignore`)."""
        if not names:
            return False
        names = set(names)
        for _ in range(4):
            before = len(names)
            for n in self.of(_FLOW_TYPES):
                source = (
                    n.value
                    if (type(n) is cst.Assign or type(n) is cst.AugAssign)
                    else n.iter
                    if (type(n) is cst.For or type(n) is cst.CompFor)
                    else None
                )
                if source is not None and any(
                    type(x) is cst.Name and x.value in names for x in _walk(source)
                ):
                    for t in _targets(n):
                        names.update(target_names(t))
            if len(names) == before:
                break
        return any(
            self._backward_in(n, names)
            for n in self.of(CALLS)
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


Facts = frozenset[str]
_NO_FACTS: Facts = frozenset()
#: What a name may hold inside a record block.
RECORDED = "recorded"  # the output of a recorded operator
IN_GRAPH = "in_graph"  # an array of the graph: recorded, or read by a recorded operator
FRESH = "fresh"  # an NDArray outside the graph
SYNCED = "synced"  # a recorded value copied back to Python
GROUP = "group"  # a Python container holding recorded tensors (`losses.append(l)`)


_RECORDED: Facts = frozenset({RECORDED})
_RECORDED_IN_GRAPH: Facts = frozenset({RECORDED, IN_GRAPH})


class _Holding:
    """The names that may hold one fact, read and written as a set."""

    __slots__ = ("rec", "fact")

    def __init__(self, rec: _Record, fact: str) -> None:
        self.rec = rec
        self.fact = fact

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.fact in self.rec.env.get(name, _NO_FACTS)

    def __iter__(self) -> Iterator[str]:
        return (name for name, facts in self.rec.env.items() if self.fact in facts)

    def add(self, name: str) -> None:
        env = self.rec.env
        env[name] = env.get(name, _NO_FACTS) | {self.fact}

    def update(self, names: Iterable[str]) -> None:
        for name in names:
            self.add(name)

    def discard(self, name: str) -> None:
        env = self.rec.env
        facts = env.get(name)
        if facts is not None and self.fact in facts:
            env[name] = facts - {self.fact}

    def clear(self) -> None:
        env = self.rec.env
        for name, facts in list(env.items()):
            if self.fact in facts:
                env[name] = facts - {self.fact}


class _Record(Dataflow[Facts]):
    """One `with autograd.record():` block, read on the shared dataflow engine.

    A name's value is the set of facts it may hold (`RECORDED`, `IN_GRAPH`, `FRESH`, `SYNCED`,
    `GROUP`), joined at branches; loops inside the block run to a fixpoint, as their second
    iteration sees what the first one recorded. `recorded`, `in_graph`, `fresh`, `synced` and
    `groups` read and write the names holding each fact.
    """

    def __init__(self, checker: RecordChecker, with_node: cst.With, predict: bool) -> None:
        super().__init__()
        self.checker = checker
        self.ctx = checker.ctx
        self.with_node = with_node
        self.scope = checker.scope()
        self.loops = list(self.ctx.loops())
        self.iteration_loop = next(
            (lp for lp in self.loops if not checker.is_shard_loop(lp, self.scope)), None
        )
        self.recorded = _Holding(self, RECORDED)
        self.in_graph = _Holding(self, IN_GRAPH)
        self.fresh = _Holding(self, FRESH)
        self.synced = _Holding(self, SYNCED)
        self.groups = _Holding(self, GROUP)
        self.in_graph.update(self.scope.grad_names)
        self.fresh.update(self._fresh_arrays())
        self.recording = True
        self.predict = predict
        self.eval_function = self._in_eval_function()
        self.containers = {
            name
            for name, bindings in self.scope.assigns.items()
            if any(checker.is_container(v) for _, v in bindings if v is not None)
        }
        #: The statement being read (where an expression's findings are reported).
        self._current: cst.CSTNode = with_node

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
        for n in self.scope.of(CALLS):
            if type(n) is not cst.Call:
                continue
            func = n.func
            if (
                type(func) is cst.Attribute
                and func.attr.value in knowledge.ndarray_only_methods()
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

    # -- the domain --------------------------------------------------------------------------------

    def top(self) -> Facts:
        return _NO_FACTS

    def join(self, a: Facts, b: Facts) -> Facts:
        return a | b

    def expr(self, node: cst.BaseExpression) -> Facts:
        """Report on the calls of `node` (in evaluation order), then what it holds."""
        self.effects(node, self._current)
        return _RECORDED if self.recorded_expr(node) else _NO_FACTS

    # -- walking -----------------------------------------------------------------------------------

    def run_block(self) -> None:
        self.block(self.with_node.body)

    def stmt(self, node: cst.CSTNode) -> bool:
        if type(node) is not cst.SimpleStatementLine:
            self._current = node
        return super().stmt(node)

    def with_items(self, node: cst.With) -> object:
        saved = self.recording, self.predict
        for item in node.items:
            resolved = self.ctx.resolve(item.item.func) if type(item.item) is cst.Call else None
            if resolved == knowledge.AUTOGRAD_PAUSE_RECORDING:
                self.recording = False
            elif resolved in knowledge.AUTOGRAD_PAUSE:
                self.predict = True
            else:
                self.effects(item.item, node)
        return saved

    def leave_with(self, node: cst.With, token: object) -> None:
        self.recording, self.predict = token  # type: ignore[misc]

    def assign(
        self,
        target: cst.BaseExpression,
        value_node: cst.BaseExpression | None,
        value: Facts,
        stmt: cst.CSTNode,
    ) -> None:
        if value_node is not None and isinstance(stmt, (cst.Assign, cst.AnnAssign)):
            self.store(target, value_node, stmt)
        self.bind(target, RECORDED in value, value_node)

    def augassign(self, node: cst.AugAssign) -> None:
        self.effects(node.value, node)
        self._augassign(node)

    def loop_item(self, node: cst.For | cst.CompFor, value: Facts) -> Facts:
        return value

    # -- what is recorded ------------------------------------------------------------------

    def bind(
        self, target: cst.BaseExpression, recorded: bool, value: cst.BaseExpression | None = None
    ) -> None:
        for name in target_names(target):
            if recorded and self.recording:
                self.env[name] = _RECORDED_IN_GRAPH
                continue
            facts: set[str] = set()
            if value is not None and type(target) is cst.Name:
                if self.checker.creates_array(value):
                    facts.add(FRESH)
                if self.readback(value):
                    facts.add(SYNCED)
            self.env[name] = frozenset(facts)

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
        if type(expr) is cst.Tuple or type(expr) is cst.List or type(expr) is cst.Set:
            return any(self.recorded_expr(e.value) for e in expr.elements)
        if type(expr) is cst.Dict:
            return any(
                type(e) is cst.DictElement and self.recorded_expr(e.value) for e in expr.elements
            )
        if type(expr) is cst.StarredElement:
            return self.recorded_expr(expr.value)
        if type(expr) is cst.IfExp:
            return self.recorded_expr(expr.body) or self.recorded_expr(expr.orelse)
        if (
            type(expr) is cst.ListComp
            or type(expr) is cst.GeneratorExp
            or type(expr) is cst.SetComp
            or type(expr) is cst.DictComp
        ):
            saved = self.env
            self.env = dict(saved)
            try:
                comp: cst.CompFor | None = expr.for_in
                while comp is not None:
                    if self.recorded_expr(comp.iter):
                        self.recorded.update(target_names(comp.target))
                        self.in_graph.update(target_names(comp.target))
                    comp = comp.inner_for_in
                return self.recorded_expr(
                    expr.value if isinstance(expr, cst.DictComp) else expr.elt
                )
            finally:
                self.env = saved
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
        """The calls `expr` makes as it is evaluated (a lambda's body runs later)."""
        if isinstance(expr, _NESTED):
            return []
        return post_order_calls(expr)

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
        if type(target) is cst.Tuple or type(target) is cst.List:
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

    def _augassign(self, node: cst.AugAssign) -> None:
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
