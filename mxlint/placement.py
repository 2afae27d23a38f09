"""Which context does a value live on? A domain of the shared dataflow engine, over one scope.

MXNet puts every NDArray and every Parameter on a context, and an operator whose inputs live on
different contexts fails (or silently copies). Whether `net(data)` is a mismatch depends on
where `net`'s parameters were placed (`initialize(ctx=...)`, `load_parameters(..., ctx=...)`,
`reset_ctx`, a model-zoo factory) and where `data` came from (a DataLoader batch, `nd.array`
without `ctx`, `as_in_context`, `split_and_load`...). This module gives the values and their
transfer functions; `mxlint.semantic.dataflow` follows one function body (or module-level script
code) statement by statement, joins branches and settles loops; the *events* the context rules
judge are recorded on the way: network calls, loss calls, initialisation of new layers and
parameter reads. Anything it cannot see through is `None` (unknown), and unknown never reports.
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, Union

import libcst as cst

from mxlint import knowledge
from mxlint.names import ImportMap, dotted_name, names_a_network
from mxlint.semantic.dataflow import Dataflow
from mxlint.walker import CALLS, NESTED_SCOPES, children, typed_nodes

# --- abstract values ----------------------------------------------------------------------


@dataclass(frozen=True)
class Ctx:
    """A context value. `gpu`: True = possibly a GPU, False = provably CPU, None = unknown."""

    gpu: bool | None
    multi: bool = False
    #: How to spell it in a message or fix (a variable name or a pure expression), if known.
    src: str | None = None
    #: The caller that passed it (or the network placed on it) when it came in as an
    #: argument: `src` is spelled in that caller.
    via: str | None = None
    #: One context of a list (`split_and_load(data, ctx_list)` puts a slice on each): how the
    #: list is spelled.
    shard_of: str | None = None

    def off_host(self) -> bool:
        """On a GPU, or one of a list of contexts not known to be cpus: a batch split across
        a context list is multi-device training, whatever the list holds."""
        return self.gpu is True or (self.shard_of is not None and self.gpu is None)


CPU_DEFAULT = Ctx(False, False, "mx.cpu()")


@dataclass(frozen=True)
class Tensor:
    """An NDArray (or a list/batch of them). `ctx` None = the default context (cpu)."""

    where: Literal["host", "placed"]
    ctx: Ctx | None = None
    #: What made it, for messages ("a DataLoader batch", "nd.array(...) without ctx").
    origin: str = ""
    #: The project function (qualified name, defined in another file) that returned it, when
    #: only the run can tell that it returns an array made without `ctx`: a finding about it
    #: requires that (`("host-array", helper)`).
    helper: str | None = None

    def on_gpu(self) -> bool | None:
        if self.where == "host":
            return False
        return self.ctx.gpu if self.ctx is not None else None


@dataclass(eq=False)
class Net:
    """A Block whose parameters may have been placed. Mutable and shared by every name bound
    to it, so `net.initialize(...)` is seen through aliases."""

    ctx: Ctx | None = None
    #: Constructed in this scope (so an `initialize()` without ctx really lands on cpu).
    fresh: bool = False
    placed: bool = False
    children: list[Net] = field(default_factory=list)
    parent: Net | None = None
    #: Initialised with no ctx (node of the call) and the GPU placement seen before it.
    init_without_ctx: cst.Call | None = None
    #: Moved by a later `reset_ctx`/`initialize(force_reinit=True)` of itself or a parent.
    reset_later: bool = False

    def __deepcopy__(self, memo: dict[int, object]) -> Net:
        # Shares the syntax node (identity matters for reports); copies the graph of blocks.
        new = Net(
            self.ctx, self.fresh, self.placed, [], None, self.init_without_ctx, self.reset_later
        )
        memo[id(self)] = new
        new.children = [copy.deepcopy(c, memo) for c in self.children]
        new.parent = copy.deepcopy(self.parent, memo) if self.parent is not None else None
        return new


@dataclass(frozen=True)
class Loader:
    """An iterable of host batches (DataLoader, mx.io iterator, dataset)."""


@dataclass(frozen=True)
class Loss:
    """A gluon loss object."""


@dataclass(frozen=True)
class Transform:
    """A callable that returns its input on the input's context."""


@dataclass(frozen=True)
class Params:
    """`net.collect_params()`, one of its parameters, or an iteration over them."""

    net: Net


@dataclass(frozen=True)
class Each:
    """A list/generator whose elements are all `elem`."""

    elem: Val


@dataclass(frozen=True)
class Seq:
    """A tuple/list literal (element-wise, for unpacking)."""

    items: tuple[Val, ...]


@dataclass(frozen=True)
class Instance:
    """An object of a class of this module: the calls of its methods are followed (what they
    pass is what the methods' parameters hold)."""

    cls: str


@dataclass(frozen=True)
class GivenCtx:
    """What a call given a context returned, bound to a loader's name
    (`data_iter = d2l.data_iter_consecutive(corpus, batch_size, steps, ctx)`): an iterator
    that may make its batches on that context, so they are not known to be on the host."""


Val = Union[Ctx, Tensor, Net, Loader, Loss, Transform, Params, Each, Seq, Instance, GivenCtx, None]
Env = dict[str, Val]

# --- events -------------------------------------------------------------------------------


@dataclass
class NetCall:
    """A forward pass of a network, with where its tensor arguments are."""

    node: cst.Call
    net: Net
    #: (argument expression, its value) for the tensor arguments
    args: list[tuple[cst.BaseExpression, Val]]
    #: Where the network's parameters were when it was called (`net.ctx` is where they end
    #: up: a `reset_ctx` after this call does not move the data this call saw).
    ctx: Ctx | None = None


@dataclass
class LossCall:
    """A loss computed on tensors, with where they are."""

    node: cst.Call
    args: list[tuple[cst.BaseExpression, Val]]


@dataclass
class InitNoCtx:
    """A block initialized on the default context after a GPU placement was seen."""

    node: cst.Call
    block: Net
    #: The possibly-GPU placement seen earlier in the scope, if any.
    gpu_ctx: Ctx | None


@dataclass
class ParamRead:
    """A read of one copy of a network's parameters (`.data()`, `.grad()`), and the context
    current there."""

    node: cst.Call
    net: Net
    #: The context made current by an enclosing `with ctx:`, if any.
    default_ctx: Ctx | None


@dataclass
class MixedOp:
    """An operator (`a * b`, `a == b`, `nd.concat(a, b)`) on a tensor on a GPU and one on the
    cpu: MXNet requires every input of an operator on one context."""

    node: cst.CSTNode
    gpu: cst.BaseExpression
    gpu_value: Tensor
    host: cst.BaseExpression
    host_value: Tensor


Event = Union[NetCall, LossCall, InitNoCtx, ParamRead, MixedOp]


def join(a: Val, b: Val) -> Val:
    """The value of a variable after two branches bound it to `a` and `b`."""
    if a is b or a == b:
        return a
    if isinstance(a, Ctx) and isinstance(b, Ctx):
        gpu = (
            True
            if True in (a.gpu, b.gpu)
            else (False if a.gpu is False and b.gpu is False else None)
        )
        src = a.src if a.src == b.src else None
        return Ctx(gpu, a.multi or b.multi, src)
    if isinstance(a, Ctx) and b is None and a.gpu:
        return a
    if isinstance(b, Ctx) and a is None and b.gpu:
        return b
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a.where == b.where:
        if a.where == "host":
            return a
        if a.ctx is not None and b.ctx is not None:
            joined = join(a.ctx, b.ctx)
            return Tensor("placed", joined if isinstance(joined, Ctx) else None)
        return Tensor("placed", None)
    if isinstance(a, Each) and isinstance(b, Each):
        inner = join(a.elem, b.elem)
        return Each(inner) if inner is not None else None
    if isinstance(a, Seq) and isinstance(b, Seq) and len(a.items) == len(b.items):
        items = tuple(join(x, y) for x, y in zip(a.items, b.items))
        return Seq(items) if any(i is not None for i in items) else None
    if type(a) is type(b) and isinstance(a, (Loader, Loss, Transform)):
        return a
    return None


# --- the domain -------------------------------------------------------------------------

_LOADER_NAME = re.compile(
    r"(?:^|[._])(?:\w*loader|\w*_iter|data_iter|train_data|val_data|valid_data|test_data|"
    r"eval_data)$"
)
_PARAM_ATTRS = frozenset(
    {
        "weight",
        "bias",
        "params",
        "gamma",
        "beta",
        "running_mean",
        "running_var",
        "i2h_weight",
        "h2h_weight",
        "i2h_bias",
        "h2h_bias",
    }
)
_ITER_PASSTHROUGH = frozenset({"tqdm", "iter", "list", "tuple", "sorted", "reversed"})
#: NDArray methods that run one operator on the array and the arrays they are given (fluent
#: forms of `nd.take`, `nd.pick`, ...): all of them must live on one context.
_OPERAND_METHODS = frozenset({"take", "pick", "reshape_like", "slice_like", "broadcast_like"})
_TO_PYTHON = knowledge.TO_PYTHON_METHODS | {"asnumpy", "shape", "dtype"}
_NON_TENSOR_ATTRS = knowledge.VALUE_ATTRIBUTES - {"grad"}


def _kwarg(call: cst.Call, names: Sequence[str]) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in names:
            return arg.value
    return None


def _literal_index(node: cst.Subscript) -> int | None:
    """`batch[0]`, `batch[-1]`: the integer a subscript indexes with, if it is a literal."""
    if len(node.slice) != 1:
        return None
    index = node.slice[0].slice
    if type(index) is not cst.Index:
        return None
    value = index.value
    sign = 1
    if type(value) is cst.UnaryOperation and type(value.operator) is cst.Minus:
        sign, value = -1, value.expression
    if type(value) is not cst.Integer:
        return None
    return sign * int(value.evaluated_value)


def _positional(call: cst.Call, index: int) -> cst.BaseExpression | None:
    pos = [a for a in call.args if a.keyword is None and not a.star]
    if any(a.star for a in call.args if a.keyword is None):
        return None
    return pos[index].value if index < len(pos) else None


def ctx_argument(
    call: cst.Call, method: str, keywords: Sequence[str] = knowledge.CTX_KEYWORDS
) -> cst.BaseExpression | None:
    """The expression passed as the context of `call` (keyword or positional), if any."""
    found = _kwarg(call, keywords)
    if found is not None:
        return found
    index = knowledge.CTX_POSITION.get(method)
    return _positional(call, index) if index is not None else None


def creator_ctx_argument(call: cst.Call, name: str) -> cst.BaseExpression | None:
    """`ctx` of an NDArray creator: keyword, or where MXNet's signature takes it positionally."""
    found = _kwarg(call, knowledge.CTX_KEYWORDS)
    if found is not None:
        return found
    index = knowledge.ctx_position(name)
    return _positional(call, index) if index is not None else None


def _is_none(node: cst.BaseExpression | None) -> bool:
    return type(node) is cst.Name and node.value == "None"


def _is_false(node: cst.BaseExpression | None) -> bool:
    return type(node) is cst.Name and node.value == "False"


def _is_true(node: cst.BaseExpression | None) -> bool:
    return type(node) is cst.Name and node.value == "True"


def _data_source(name: str) -> bool:
    if name in knowledge.DATA_SOURCE_FUNCS:
        return True
    if any(name.startswith(p) for p in knowledge.DATA_SOURCE_EXCLUDED):
        return False
    if not any(name.startswith(p) for p in knowledge.DATA_SOURCE_PREFIXES):
        return False
    leaf = name.rsplit(".", 1)[-1]
    return leaf[:1].isupper()  # a class (loader, iterator, dataset), not a helper function


class Scope(Dataflow[Val]):
    """Interpret one body on the shared dataflow engine; collect `events`.

    `imports` resolves names, `env` is the starting environment (module-level values visible to
    a function, and its parameters), `helpers` maps local function names to what they return
    (`def try_gpu(): return mx.gpu() if ... else mx.cpu()`).
    """

    def __init__(
        self,
        imports: ImportMap,
        code: Callable[[cst.CSTNode], str],
        env: Env | None = None,
        helpers: Mapping[str, Val] | None = None,
    ) -> None:
        super().__init__()
        self.imports = imports
        self.code = code
        if env is not None:
            self.env = env
        self.helpers = helpers or {}
        #: One event per syntax node and kind: a loop body runs until its values settle, and
        #: the last pass (the settled values) is what an event reports.
        self._events: dict[tuple[type, int], Event] = {}
        self.default_ctx: list[Ctx] = []
        #: The context `mx.test_utils.set_default_context(ctx)` made the process default (here
        #: or, for a function, at module level): arrays created without `ctx` land there.
        self.global_default: Ctx | None = None
        #: The first possibly-GPU placement of parameters seen in this scope.
        self.gpu_placement: Ctx | None = None
        #: The values this body returns (a helper's summary).
        self.returns: list[Val] = []
        #: Functions of the module by name (its classes' `__init__` by the class's name, their
        #: methods as `Class.method`), and the calls of them this body makes (with the values
        #: of their arguments): what a function's parameters hold at its call sites.
        self.local_functions: Mapping[str, cst.FunctionDef] = {}
        #: The module's classes that derive from nothing (no Block): calling one makes an
        #: `Instance`.
        self.local_classes: frozenset[str] = frozenset()
        #: The class whose method this body is: `self.method(...)` calls `Class.method`.
        self.self_class: str | None = None
        self.local_calls: dict[int, tuple[str, cst.Call, list[tuple[cst.BaseExpression, Val]]]] = {}
        #: Reading a function for what one call of it returns (its own calls are not read).
        self.inlined = False
        self._inline_cache: dict[object, Val] = {}
        #: Calls (by id) given a context whose value is not known (`GivenCtx`).
        self._given_ctx: set[int] = set()

    @property
    def events(self) -> list[Event]:
        return list(self._events.values())

    def clear_events(self) -> None:
        self._events.clear()

    def _emit(self, event: Event) -> None:
        self._events[type(event), id(event.node)] = event

    # -- the domain ----------------------------------------------------------------------------

    def top(self) -> Val:
        return None

    def join(self, a: Val, b: Val) -> Val:
        return join(a, b)

    def expr(self, node: cst.BaseExpression) -> Val:
        return self.ev(node)

    # -- statements ----------------------------------------------------------------------------

    def assign(
        self,
        target: cst.BaseExpression,
        value_node: cst.BaseExpression | None,
        value: Val,
        stmt: cst.CSTNode,
    ) -> None:
        self.bind(target, value, value_node)

    def augassign(self, node: cst.AugAssign) -> None:
        right = self.ev(node.value)
        left = self.ev(node.target)
        self.bind(node.target, _combine([left, right]), None)

    def loop_item(self, node: cst.For | cst.CompFor, value: Val) -> Val:
        if type(node) is cst.For:
            return self.element(self._iterable(node.iter, value))
        return self.element(value)

    def with_items(self, node: cst.With) -> object:
        pushed = 0
        for item in node.items:
            value = self.ev(item.item)
            if isinstance(value, Ctx):
                self.default_ctx.append(value)
                pushed += 1
            if item.asname is not None:
                self.bind(item.asname.name, None, None)
        return pushed

    def leave_with(self, node: cst.With, token: object) -> None:
        assert isinstance(token, int)
        del self.default_ctx[len(self.default_ctx) - token :]

    def returned(self, node: cst.Return, value: Val) -> None:
        self.returns.append(value)

    # -- binding -------------------------------------------------------------------------------

    def bind(
        self, target: cst.BaseExpression, value: Val, source: cst.BaseExpression | None
    ) -> None:
        if type(target) is cst.Tuple or type(target) is cst.List:
            elements = [e.value for e in target.elements]
            if (
                isinstance(value, Seq)
                and len(value.items) == len(elements)
                and not any(type(e) is cst.StarredElement for e in target.elements)
            ):
                for element, item in zip(elements, value.items):
                    self.bind(element, item, None)
                return
            item_value = self.unpacked(value)
            for element in elements:
                self.bind(element, item_value, None)
            return
        if type(target) is cst.StarredElement:
            self.bind(target.value, None, None)
            return
        if type(target) is cst.Subscript:
            self.ev(target)
            return
        key = dotted_name(target)
        if key is None:
            return
        if (
            value is None
            and source is not None
            and id(source) in self._given_ctx
            and _LOADER_NAME.search(key)
        ):
            value = GivenCtx()
        prefix = key + "."
        for stale in [k for k in self.env if k.startswith(prefix)]:
            del self.env[stale]
        self.env[key] = value
        if type(target) is cst.Attribute and isinstance(value, Net):
            parent = self.env.get(dotted_name(target.value) or "")
            if isinstance(parent, Net):
                self.attach(parent, value)

    def attach(self, parent: Net, child: Net) -> None:
        if child not in parent.children:
            parent.children.append(child)
        child.parent = parent

    def _iterable(self, node: cst.BaseExpression, value: Val) -> Val:
        """The value iterated by a loop (`value` is what `node` evaluated to); an unknown name
        spelled like a data loader (`train_loader`, `val_data`, `data_iter`) is one, also when
        another file's function returned it (whether that returns an array is not known)."""
        if value is not None and not _tentative(value):
            return value
        wrapper = None
        inner = node
        if (
            type(node) is cst.Call
            and type(node.func) is cst.Name
            and node.func.value in ("enumerate", "tqdm")
            and node.args
        ):
            wrapper, inner = node.func.value, node.args[0].value
        if not _LOADER_NAME.search(dotted_name(inner) or "") or not _tentative_or_none(
            self.ev(inner)
        ):
            return value
        if wrapper == "enumerate":
            return Each(Seq((None, self.element(Loader()))))
        return Loader()

    def unpacked(self, value: Val) -> Val:
        """The value of each name when `value` is unpacked into a tuple of names."""
        if isinstance(value, Tensor):
            return value
        if isinstance(value, Each):
            return value.elem
        if isinstance(value, Loader):
            return value
        if isinstance(value, Seq) and value.items:
            out = value.items[0]
            for item in value.items[1:]:
                out = join(out, item)
            return out
        return None

    def element(self, value: Val) -> Val:
        """The value of the loop variable when iterating over `value`."""
        if isinstance(value, Loader):
            if self.default_ctx:
                # Under `with ctx:` a loader that makes its batches as it is iterated (a
                # DataLoader batchifying NumPy samples, `nd.array` in a loader's `__iter__`)
                # makes them on that context: where is not known.
                return None
            return Tensor("host", None, "a batch from the data loader")
        if isinstance(value, Tensor):
            return value
        if isinstance(value, Each):
            return value.elem
        if isinstance(value, Params):
            return value
        if isinstance(value, Ctx) and value.multi:
            return Ctx(value.gpu, False, None)
        if isinstance(value, Seq):
            return self.unpacked(value)
        return None

    # -- expressions ---------------------------------------------------------------------------

    def ev(self, node: cst.BaseExpression) -> Val:
        """The value of `node`; also records the events found inside it."""
        if type(node) is cst.Name or type(node) is cst.Attribute:
            return self._name(node)
        if type(node) is cst.Call:
            return self._call(node)
        if type(node) is cst.Subscript:
            base = self.ev(node.value)
            for element in node.slice:
                self._walk_children(element)
            if isinstance(base, Tensor):
                return base
            if isinstance(base, Ctx) and base.multi:
                return Ctx(base.gpu, False, None)
            if isinstance(base, Each):
                return base.elem
            if isinstance(base, Seq):
                index = _literal_index(node)
                if index is not None and -len(base.items) <= index < len(base.items):
                    return base.items[index]
                return self.unpacked(base)
            if isinstance(base, Net):
                # `net[-1]` right after `net.add(layer)`: the layer this scope appended (a
                # Sequential indexes its children in the order they were registered).
                index = _literal_index(node)
                if index is not None and -len(base.children) <= index < 0:
                    return base.children[index]
            if isinstance(base, (Params, Net)):
                return base  # a parameter of the dict, or a child block of a Sequential
            return None
        if type(node) is cst.BinaryOperation:
            operands = [(node.left, self.ev(node.left)), (node.right, self.ev(node.right))]
            if type(node.operator) is not cst.MatrixMultiply:
                self._mixed(node, operands)
            return _combine([v for _, v in operands])
        if type(node) is cst.Comparison and len(node.comparisons) == 1:
            right = node.comparisons[0].comparator
            operands = [(node.left, self.ev(node.left)), (right, self.ev(right))]
            if type(node.comparisons[0].operator) in _ELEMENTWISE_COMPARISONS:
                self._mixed(node, operands)
            return _combine([v for _, v in operands])
        if type(node) is cst.UnaryOperation:
            return _combine([self.ev(node.expression)])
        if type(node) is cst.IfExp:
            self.ev(node.test)
            return join(self.ev(node.body), self.ev(node.orelse))
        if type(node) is cst.Tuple or type(node) is cst.List:
            items = tuple(self.ev(e.value) for e in node.elements)
            if items and all(isinstance(i, Ctx) for i in items):
                ctxs = [i for i in items if isinstance(i, Ctx)]
                # A list mixing cpu and gpu holds a copy on cpu(0): neither rule applies.
                gpu = (
                    False
                    if all(c.gpu is False for c in ctxs)
                    else (
                        None
                        if any(c.gpu is False for c in ctxs)
                        else (True if any(c.gpu for c in ctxs) else None)
                    )
                )
                return Ctx(gpu, len(items) > 1, self.code(node))
            return Seq(items)
        if type(node) is cst.ListComp or type(node) is cst.GeneratorExp:
            return self._comprehension(node)
        if isinstance(node, (cst.DictComp, cst.SetComp)):
            self.comprehension(node)  # its loop variables bound, as a list's are
            return None
        if type(node) is cst.NamedExpr:
            value = self.ev(node.value)
            self.bind(node.target, value, node.value)
            return value
        if type(node) is cst.Lambda:
            return None
        self._walk_children(node)
        return None

    def _mixed(self, node: cst.CSTNode, operands: list[tuple[cst.BaseExpression, Val]]) -> None:
        gpu = [(e, v) for e, v in operands if isinstance(v, Tensor) and v.on_gpu() is True]
        host = [(e, v) for e, v in operands if isinstance(v, Tensor) and v.on_gpu() is False]
        if gpu and host:
            (g, gv), (h, hv) = gpu[0], host[0]
            self._emit(MixedOp(node, g, gv, h, hv))  # type: ignore[arg-type]

    def _walk_children(self, node: cst.CSTNode) -> None:
        for child in children(node):
            # By MRO: ABCMeta's first isinstance answer for a node type walks every subclass
            # of the base (milliseconds, paid again in every one-file run).
            mro = type(child).__mro__
            if cst.BaseExpression in mro:
                self.ev(child)  # type: ignore[arg-type]
            elif cst.BaseStatement not in mro and cst.BaseSmallStatement not in mro:
                self._walk_children(child)

    def _comprehension(self, node: cst.ListComp | cst.GeneratorExp) -> Val:
        elem, _ = self.comprehension(node)
        if isinstance(elem, Ctx):
            return Ctx(elem.gpu, True, self.code(node))
        return Each(elem) if elem is not None else None

    def _name(self, node: cst.Name | cst.Attribute) -> Val:
        key = dotted_name(node)
        if key is not None and key in self.env:
            return self.env[key]
        if type(node) is cst.Attribute:
            base = (
                self._name(node.value)
                if (type(node.value) is cst.Name or type(node.value) is cst.Attribute)
                else self.ev(node.value)
            )
            attr = node.attr.value
            if isinstance(base, Tensor):
                if attr in ("context", "ctx", "device"):
                    return Ctx(base.on_gpu(), False, self.code(node))
                if attr in _NON_TENSOR_ATTRS:
                    return None
                return base
            if isinstance(base, Net):
                if attr in _PARAM_ATTRS:
                    return Params(base)
                return base  # a child block lives where its parent was placed
            if isinstance(base, Params):
                return base
            return None
        return None

    def ctx_value(self, node: cst.BaseExpression | None) -> Ctx | None:
        if node is None or _is_none(node):
            return None
        value = self.ev(node)
        if isinstance(value, Ctx):
            if type(node) in (cst.Name, cst.Attribute):
                return Ctx(value.gpu, value.multi, self.code(node))
            return value
        if type(node) in (cst.Name, cst.Attribute):
            return Ctx(None, False, self.code(node))
        return Ctx(None, False, None)

    def _current_default(self) -> Ctx | None:
        if self.default_ctx:
            return self.default_ctx[-1]
        return self.global_default

    def _creator(self, node: cst.Call, name: str, origin: str) -> Tensor:
        ctx = self.ctx_value(creator_ctx_argument(node, name))
        if ctx is None:
            ctx = self._current_default()
            if ctx is None:
                return Tensor("host", None, origin)
        if ctx.gpu is False:
            return Tensor("host", ctx, origin)
        return Tensor("placed", ctx)

    def _call(self, node: cst.Call) -> Val:
        func = node.func
        bound = self.env.get(dotted_name(func) or "")
        if type(func) is cst.Attribute and not isinstance(bound, (Net, Loss, Transform)):
            return self._method(node, func)
        callee = self.ev(func) if type(func) in (cst.Name, cst.Attribute) else None
        name = self.imports.resolve(func)
        arg_vals = [(a.value, self.ev(a.value)) for a in node.args]
        if isinstance(callee, Net):
            return self._net_call(node, callee, arg_vals)
        if isinstance(callee, Loss):
            self._emit(LossCall(node, arg_vals))
            return _loss_output(arg_vals)
        if isinstance(callee, Transform):
            return arg_vals[0][1] if arg_vals else None
        if type(func) is cst.Name and name is None:
            if func.value in self.helpers:
                return self.helpers[func.value]
            if func.value in self.local_functions:
                returned = self._local_call(func.value, node, arg_vals)
                if returned is not None:
                    return returned
            if func.value == "enumerate" and arg_vals:
                return Each(Seq((None, self.element(arg_vals[0][1]))))
            if func.value == "zip":
                return Each(Seq(tuple(self.element(v) for _, v in arg_vals)))
            if func.value in _ITER_PASSTHROUGH and arg_vals:
                return (
                    arg_vals[0][1]
                    if func.value != "list" or not isinstance(arg_vals[0][1], Loader)
                    else None
                )
        if name in _SETS_DEFAULT_CONTEXT and arg_vals:
            self.global_default = self.ctx_value(arg_vals[0][0])
            return None
        if name is None:
            if callee is None and _loss_name(func):
                self._emit(LossCall(node, arg_vals))
                return _loss_output(arg_vals)
            if callee is None and _network_name(func):
                return _unknown_net_output(arg_vals)
            if type(func) is cst.Name and func.value in self.local_classes:
                return Instance(func.value)
            return self._maybe_block(node)
        return self._qualified(node, name, arg_vals)

    def _qualified(
        self, node: cst.Call, name: str, arg_vals: list[tuple[cst.BaseExpression, Val]]
    ) -> Val:
        short = name.rsplit(".", 1)[-1]
        if name in knowledge.GPU_CONTEXT_HELPERS:
            return Ctx(True, knowledge.GPU_CONTEXT_HELPERS[name], self.code(node))
        if name in knowledge.CONTEXT_CONSTRUCTORS:
            return _context(name, node, self.code(node))
        if name in knowledge.ndarray_creators():
            return self._creator(node, name, f"`{self.code(node.func)}(...)` without ctx")
        if name in knowledge.like_creators():
            return arg_vals[0][1] if arg_vals else None
        if name in knowledge.NDARRAY_LOADERS:
            return self._loaded(node, f"`{self.code(node.func)}(...)`")
        if name.startswith(knowledge.GLUONCV_PRESETS) and short in knowledge.HOST_IMAGE_FUNCS:
            return Tensor("host", None, f"`{self.code(node.func)}(...)`")
        if name in knowledge.SPLIT_AND_LOAD:
            ctx = self.ctx_value(ctx_argument(node, "split_and_load", knowledge.CTX_LIST_KEYWORDS))
            return Each(
                Tensor("placed", Ctx(ctx.gpu, False, None, shard_of=ctx.src) if ctx else None)
            )
        if name in knowledge.SPLIT_DATA:
            return Each(Tensor("host", None, "`split_data(...)` (which does not move data)"))
        if _data_source(name):
            if self._collates_onto_device(node):
                # Batches of unknown placement (not None: a loop over an unknown value named
                # like a loader takes it for one).
                return Each(None)
            return Loader()
        if name.startswith(knowledge.LOSS_NAMESPACE):
            return Loss()
        if any(name.startswith(p) for p in knowledge.TRANSFORM_PREFIXES):
            return Transform()
        if any(name.startswith(p) for p in knowledge.MODEL_FACTORIES_WITH_CTX):
            return self._model_factory(node)
        if name in knowledge.SYMBOL_BLOCK_IMPORTS:
            ctx = self.ctx_value(ctx_argument(node, "imports")) or CPU_DEFAULT
            return self._placed_net(Net(fresh=True), ctx)
        if any(name.startswith(ns) for ns in knowledge.BLOCK_NAMESPACES) and short[:1].isupper():
            return Net(fresh=True)
        if knowledge.in_namespace(name, knowledge.TENSOR_NAMESPACES) or (
            name.startswith(knowledge.CTX_PRESERVING_PREFIXES) and not short[:1].isupper()
        ):
            if knowledge.in_namespace(name, knowledge.TENSOR_NAMESPACES):
                self._mixed(node, arg_vals)
            return _combine([v for _, v in arg_vals])
        if not knowledge.is_mxnet(name) and short[:1].isupper():
            # A class of another file given a context places its own parameters (as
            # `_maybe_block` says of one of this file): where is not known here.
            if _kwarg(node, knowledge.CTX_KEYWORDS) is not None or any(
                isinstance(v, Ctx) for _, v in arg_vals
            ):
                return Net()
            return Net(fresh=True)
        if (
            not knowledge.is_mxnet(name)
            and not knowledge.is_library(name)
            and not _HELPER_NAME.search(short)
            and not any(
                a.keyword is not None and _HELPER_NAME.search(a.keyword.value) for a in node.args
            )
            and not any(isinstance(v, Ctx) for _, v in arg_vals)
        ):
            # A function of another file of the project (`from utils import make_mask`): if it
            # makes the array it returns without `ctx`, that array is on the cpu. The run
            # decides (`ProjectIndex`: the finding requires it).
            return Tensor(
                "host", None, f"from `{short}()`, which makes it without ctx", helper=name
            )
        if any(isinstance(v, Ctx) for _, v in arg_vals):
            self._given_ctx.add(id(node))
        return None

    def _loaded(self, node: cst.Call, origin: str) -> Tensor:
        ctx = self.ctx_value(_kwarg(node, knowledge.CTX_KEYWORDS))
        if ctx is None or ctx.gpu is False:
            return Tensor("host", ctx, origin)
        return Tensor("placed", ctx)

    def _maybe_block(self, node: cst.Call) -> Val:
        """`Net()` for a class defined in this file: a fresh block (if it is one at all, only
        a later `initialize` makes that matter). A class given a context (`Net(ctx=ctx)`)
        places its own parameters: where is not known here."""
        key = dotted_name(node.func)
        if key is not None and key.rsplit(".", 1)[-1][:1].isupper() and not key.startswith("self."):
            if _kwarg(node, knowledge.CTX_KEYWORDS) is not None:
                return Net()
            return Net(fresh=True)
        return None

    def _model_factory(self, node: cst.Call) -> Net:
        pretrained = _kwarg(node, ("pretrained",))
        net = Net(fresh=True)
        if pretrained is None or _is_false(pretrained):
            return net
        ctx = self.ctx_value(_kwarg(node, knowledge.CTX_KEYWORDS)) or CPU_DEFAULT
        return self._placed_net(net, ctx)

    def _placed_net(self, net: Net, ctx: Ctx) -> Net:
        net.ctx = ctx
        net.placed = True
        if ctx.gpu and self.gpu_placement is None:
            self.gpu_placement = ctx
        return net

    def _net_call(
        self, node: cst.Call, net: Net, arg_vals: list[tuple[cst.BaseExpression, Val]]
    ) -> Val:
        self._emit(NetCall(node, net, arg_vals, net.ctx if net.placed else None))
        if net.placed and net.ctx is not None:
            if net.ctx.gpu and any(
                isinstance(v, Tensor) and v.on_gpu() is False and v.helper is None
                for _, v in arg_vals
            ):
                return None  # this call already fails: one finding, not one per consequence
            if net.ctx.gpu is False:
                return Tensor("host", net.ctx, "the network's output")
            # On a list of contexts, each call runs on one of them (a slice's).
            shard = net.ctx.src if net.ctx.multi else net.ctx.shard_of
            # One context: the output is on it, spelled as the network's placement spells it.
            src = net.ctx.src if shard is None else None
            return Tensor("placed", Ctx(net.ctx.gpu, False, src, shard_of=shard))
        return None

    def _receiver_net(self, receiver: cst.BaseExpression) -> tuple[str | None, Val]:
        """The key and value a placement method acts on (`net`, `net.collect_params()`)."""
        if (
            type(receiver) is cst.Call
            and type(receiver.func) is cst.Attribute
            and receiver.func.attr.value == "collect_params"
        ):
            inner = receiver.func.value
            return dotted_name(inner), self.ev(inner)
        return dotted_name(receiver), self.ev(receiver)

    def _method(self, node: cst.Call, func: cst.Attribute) -> Val:
        method = func.attr.value
        if method in knowledge.PARAM_PLACING_METHODS:
            return self._placing(node, func, method)
        receiver = self.ev(func.value)
        name = self.imports.resolve(func)
        arg_vals = [(a.value, self.ev(a.value)) for a in node.args]
        if isinstance(receiver, Instance):
            key = f"{receiver.cls}.{method}"
            if key in self.local_functions:
                return self._local_call(key, node, arg_vals, bound=True)
            return None
        if (
            self.self_class is not None
            and type(func.value) is cst.Name
            and func.value.value == "self"
            and f"{self.self_class}.{method}" in self.local_functions
        ):
            # Another method of this object: what it is passed is what its parameters hold.
            return self._local_call(f"{self.self_class}.{method}", node, arg_vals, bound=True)
        if name is not None and not isinstance(receiver, (Tensor, Net, Params)):
            return self._qualified(node, name, arg_vals)
        # `.to(ctx)`: MXNet's arrays have no `.to`; a DGL graph's (or another library's
        # object's) `.to(device)` moves it there. Given a context value, or a name for one.
        moves = method in knowledge.CTX_MOVING_METHODS or (
            method == "to"
            and len(arg_vals) == 1
            and node.args[0].keyword is None
            and (
                isinstance(arg_vals[0][1], Ctx) or type(arg_vals[0][0]) in (cst.Name, cst.Attribute)
            )
        )
        if moves and not isinstance(receiver, (Net, Params)):
            receiver = Tensor("placed", None)  # whatever it was, it is where it was sent now
        if isinstance(receiver, Tensor):
            if moves:
                target = arg_vals[0][1] if arg_vals else None
                if isinstance(target, Tensor):
                    return Tensor("placed", None) if target.where == "placed" else target
                where = node.args[0].value if method == "to" else ctx_argument(node, method)
                ctx = self.ctx_value(where)
                if ctx is None or ctx.gpu is not False:
                    return Tensor("placed", ctx)
                return Tensor("host", ctx, f"`.{method}({ctx.src})`")
            if method in _TO_PYTHON:
                return None
            if method in ("as_nd_ndarray", "as_np_ndarray", "detach", "copy"):
                return receiver
            if method in _OPERAND_METHODS:
                # `weights.take(label)` is `nd.take(weights, label)`: one operator's inputs.
                self._mixed(node, [(func.value, receiver), *arg_vals])
            return _combine([receiver, *[v for _, v in arg_vals]])
        if isinstance(receiver, Net):
            if method == "forward":
                return self._net_call(node, receiver, arg_vals)
            if method == "collect_params":
                return Params(receiver)
            if method in ("add", "register_child"):
                for _, value in arg_vals:
                    if isinstance(value, Net):
                        self.attach(receiver, value)
            if method in knowledge.INERT_BLOCK_METHODS:
                return None
            # A child block (`net.features(x)`) or a method of the project's block
            # (`net.encode(x)`) computes where the data it is given was moved to.
            return _unknown_net_output(arg_vals)
        if isinstance(receiver, Params):
            if method in knowledge.PARAM_VALUE_METHODS:
                self._emit(ParamRead(node, receiver.net, self._current_default()))
                return (
                    Tensor("placed", Ctx(receiver.net.ctx.gpu, False, None))
                    if receiver.net.ctx
                    else None
                )
            if method in ("items", "values", "get", "__getitem__"):
                return (
                    Each(Seq((None, receiver)))
                    if method == "items"
                    else (Each(receiver) if method == "values" else receiver)
                )
            return None
        return None

    def _local_call(
        self,
        name: str,
        node: cst.Call,
        arg_vals: list[tuple[cst.BaseExpression, Val]],
        *,
        bound: bool = False,
    ) -> Val:
        """Keep what a call of a function (or method) of the module passes; return what it
        returns when it is given an array on the cpu (`data = self.preprocess(img)`) or a
        context (`net = get_net(ctx)`, a builder placing the network it returns)."""
        # Networks as they are at this call (a later `reset_ctx` does not move them for the
        # call that already ran).
        passed = [(e, copy.deepcopy(v) if isinstance(v, Net) else v) for e, v in arg_vals]
        self.local_calls[id(node)] = (name, node, passed)
        fn = self.local_functions[name]
        if (
            self.inlined
            or fn.name.value == "__init__"
            or not any(_holds_host_array(v) or isinstance(v, Ctx) for _, v in arg_vals)
        ):
            return None
        value = self._returned_for(name, fn, node, arg_vals, bound)
        # Each call builds its own networks.
        return _copied(value, {}) if isinstance(value, (Net, Seq)) else value

    def _collates_onto_device(self, node: cst.Call) -> bool:
        """A loader whose `batchify_fn` is given a context (`batchify_fn=batcher(ctx)`, as
        DGL's examples build theirs) or is a function of this module that moves arrays
        (`knowledge.CTX_MOVING_METHODS`, a graph's `.to(...)`, `split_and_load`): its batches
        are not host batches."""
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value not in _COLLATE_KEYWORDS:
                continue
            fn = arg.value
            if type(fn) is cst.Call:
                if any(isinstance(self.ev(a.value), Ctx) for a in fn.args):
                    return True
                fn = fn.func
            local = self.local_functions.get(dotted_name(fn) or "")
            if local is not None and any(self._moves(call) for call in typed_nodes(local, CALLS)):
                return True
        return False

    def _moves(self, call: cst.CSTNode) -> bool:
        func = call.func  # type: ignore[attr-defined]
        if type(func) is cst.Attribute and (
            func.attr.value in knowledge.CTX_MOVING_METHODS or func.attr.value == "to"
        ):
            return True
        return self.imports.resolve(func) in knowledge.SPLIT_AND_LOAD

    def _returned_for(
        self,
        name: str,
        fn: cst.FunctionDef,
        node: cst.Call,
        arg_vals: list[tuple[cst.BaseExpression, Val]],
        bound: bool,
    ) -> Val:
        """What `fn` returns given the arrays, tuples of them and contexts this call passes
        (its other parameters unknown), read once per such set of values: an array, a tuple,
        a network it builds (placed where it places it); unknown when any path returns
        something unknown, or `fn` is a generator."""
        if typed_nodes(fn.body, (cst.Yield, cst.Await), NESTED_SCOPES):
            return None
        positional, names = _parameters(fn, bound)
        given: list[tuple[str, Val]] = []
        for param in names:
            passed = _passed(node, arg_vals, positional, param)
            if isinstance(passed, Ctx):
                # Spelled as the caller spells it (`get_net(device)`: `device`).
                expr = _argument_for(node, positional, param)
                if type(expr) is cst.Name or type(expr) is cst.Attribute:
                    passed = replace(passed, src=self.code(expr))
            if isinstance(passed, (Tensor, Ctx, Seq)):
                given.append((param, passed))
        key = (name, tuple(given), tuple(self.default_ctx), self.global_default)
        if key in self._inline_cache:
            return self._inline_cache[key]
        probe = Scope(self.imports, self.code, {}, self.helpers)
        probe.inlined = True
        probe.default_ctx = list(self.default_ctx)
        probe.global_default = self.global_default
        probe.env = parameter_env(probe, fn.params)
        probe.env.update(given)
        leaves = probe.block(fn.body)
        returns = probe.returns if leaves else [*probe.returns, None]
        value: Val = returns[0] if returns else None
        for other in returns[1:]:
            value = join(value, other) if value is not None and other is not None else None
        if isinstance(value, Tensor) and value.where == "host":
            short = name.rsplit(".", 1)[-1]
            made = f"{value.origin}, " if value.origin else ""
            value = replace(value, origin=f"{made}returned by `{short}()`")
        elif not isinstance(value, (Tensor, Seq, Net)):
            value = None
        # A network placed on a context parameter is on what the caller passed, as spelled there.
        spelled = {param: v.src for param, v in given if isinstance(v, Ctx) and v.src}
        for net in value.items if isinstance(value, Seq) else (value,):
            if isinstance(net, Net) and net.ctx is not None and net.ctx.src in spelled:
                net.ctx = replace(net.ctx, src=spelled[net.ctx.src])
        self._inline_cache[key] = value
        return value

    def _placing(self, node: cst.Call, func: cst.Attribute, method: str) -> Val:
        key, value = self._receiver_net(func.value)
        for arg in node.args:
            self.ev(arg.value)
        if isinstance(value, Params):
            net: Net = value.net
        elif isinstance(value, Net):
            net = value
        elif key is not None and value is None and not key.startswith("self"):
            net = Net()
            self.env[key] = net
        elif (
            key is not None
            and value is None
            and key.count(".") == 1
            and self.ctx_value(ctx_argument(node, method)) is not None
        ):
            # `self.gen.initialize(ctx=ctx)` on a block the object was given (only blocks and
            # their parameters take a ctx there): placed where the call says, never "fresh".
            net = Net()
            self.env[key] = net
        else:
            return None
        ctx = self.ctx_value(ctx_argument(node, method))
        if method in ("reset_ctx", "reset_device"):
            if ctx is not None:
                self._placed_net(net, ctx)
                _mark_reset(net)
            return None
        force = _is_true(_kwarg(node, ("force_reinit",)))
        if ctx is None:
            default = self._current_default()
            if default is not None:
                ctx = default
            elif method == "initialize":
                if net.fresh and not net.placed:
                    net.init_without_ctx = node
                    self._emit(InitNoCtx(node, net, self.gpu_placement))
                    self._placed_net(net, CPU_DEFAULT)
                return None
            else:  # load_parameters without ctx keeps an existing placement
                if net.fresh and not net.placed:
                    self._placed_net(net, CPU_DEFAULT)
                return None
        if method == "initialize" and net.placed and not force:
            return None  # already initialised: a second initialize() is a no-op
        self._placed_net(net, ctx)
        if force or method != "initialize":
            _mark_reset(net)
        return None


#: Functions that change the process's default context (MXNet's test utilities).
_SETS_DEFAULT_CONTEXT = frozenset({"mxnet.test_utils.set_default_context"})
#: A data loader's collate function (gluon's `batchify_fn`; `collate_fn` in ports of PyTorch's).
_COLLATE_KEYWORDS = frozenset({"batchify_fn", "collate_fn"})


def _network_name(func: cst.BaseExpression) -> bool:
    """`net`, `model`, `self.encoder`: a name that says it holds a network whose placement
    this scope does not know (a parameter, an attribute)."""
    key = dotted_name(func)
    return key is not None and names_a_network(key)


_LOSS_NAME = re.compile(r"(?:^|_)(?:loss|criterion)(?:_?fn|_?func|_?function)?$", re.IGNORECASE)


def _loss_name(func: cst.BaseExpression) -> bool:
    """`loss_fn`, `criterion`, `self.loss`: a loss this scope did not build (a parameter, an
    attribute); called with a prediction and a label like any gluon loss."""
    key = dotted_name(func)
    return key is not None and bool(_LOSS_NAME.search(key.rsplit(".", 1)[-1]))


def _unknown_net_output(arg_vals: list[tuple[cst.BaseExpression, Val]]) -> Val:
    """A network of unknown placement run on data moved to a GPU, or on one slice of a batch
    split across a list of contexts: its output is where that input is (a network computes
    where its inputs are, or the call itself fails)."""
    for _, value in arg_vals:
        if not isinstance(value, Tensor) or value.where != "placed" or value.ctx is None:
            continue
        ctx = value.ctx
        if ctx.off_host():
            return Tensor("placed", Ctx(ctx.gpu, False, None, shard_of=ctx.shard_of))
    return None


def _tentative(value: Val) -> bool:
    """What a function of another file returned (or a list, tuple or enumeration of it): an
    array made without ctx only if the run shows it."""
    if isinstance(value, Tensor):
        return value.helper is not None
    if isinstance(value, Each):
        return _tentative(value.elem)
    if isinstance(value, Seq):
        return any(_tentative(item) for item in value.items)
    return False


def _tentative_or_none(value: Val) -> bool:
    return value is None or _tentative(value)


def _holds_host_array(value: Val) -> bool:
    """An array on the cpu, or a tuple holding one."""
    if isinstance(value, Tensor):
        return value.where == "host"
    if isinstance(value, Seq):
        return any(_holds_host_array(item) for item in value.items)
    return False


def _loss_output(arg_vals: list[tuple[cst.BaseExpression, Val]]) -> Val:
    """A loss of a prediction on a GPU (or on one slice of a batch split across a context
    list) is computed there, when every array it is given is there too (otherwise the call
    fails, and is reported, already)."""
    tensors = [v for _, v in arg_vals if isinstance(v, Tensor)]
    if not tensors or not isinstance(arg_vals[0][1], Tensor):
        return None
    ctx = arg_vals[0][1].ctx
    if arg_vals[0][1].where != "placed" or ctx is None or not ctx.off_host():
        return None
    if any(t.on_gpu() is False and t.helper is None for t in tensors):
        return None
    return Tensor("placed", Ctx(ctx.gpu, False, None, shard_of=ctx.shard_of))


def _mark_reset(net: Net) -> None:
    stack = list(net.children)
    while stack:
        child = stack.pop()
        child.reset_later = True
        if child.ctx is not None and net.ctx is not None:
            child.ctx = net.ctx
        stack.extend(child.children)


_ELEMENTWISE_COMPARISONS = (
    cst.Equal,
    cst.NotEqual,
    cst.LessThan,
    cst.LessThanEqual,
    cst.GreaterThan,
    cst.GreaterThanEqual,
)


def _combine(values: Sequence[Val]) -> Val:
    """The placement of an operator's result from its operands'."""
    unwrapped = [v.elem if isinstance(v, Each) else v for v in values]
    tensors = [v for v in unwrapped if isinstance(v, Tensor)]
    if not tensors:
        return None
    known = [t for t in tensors if t.helper is None]
    if known:
        tensors = known  # what another file's function returns is not known to be an array
    placed = [t for t in tensors if t.where == "placed"]
    if placed:
        return placed[0] if len(placed) == len(tensors) else Tensor("placed", None)
    return tensors[0]


def _context(name: str, node: cst.Call, src: str) -> Ctx:
    if name in knowledge.GPU_CONSTRUCTORS:
        return Ctx(True, False, src)
    if name == "mxnet.Context":
        first = _positional(node, 0) or _kwarg(node, ("device_type",))
        if type(first) is cst.SimpleString:
            kind = first.evaluated_value
            if isinstance(kind, str):
                gpu = True if kind == "gpu" else (False if kind == "cpu" else None)
                return Ctx(gpu, False, src)
        return Ctx(None, False, src)
    return Ctx(False, False, src)


# --- scopes of a module ---------------------------------------------------------------------


def parameter_env(scope: Scope, params: cst.Parameters) -> dict[str, Val]:
    """Parameters shadow outer names; a ctx-like parameter with a GPU default is a GPU ctx."""
    env: dict[str, Val] = {}
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    for param in every:
        value: Val = None
        if param.default is not None:
            default = scope.ev(param.default)
            if isinstance(default, Ctx):
                value = Ctx(default.gpu, default.multi, param.name.value)
        env[param.name.value] = value
    for star in (params.star_arg, params.star_kwarg):
        if type(star) is cst.Param:
            env[star.name.value] = None
    return env


def call_site_env(
    fn: cst.FunctionDef,
    sites: Sequence[tuple[cst.Call, list[tuple[cst.BaseExpression, Val]], str]],
    *,
    bound: bool = False,
) -> Env:
    """What `fn`'s parameters hold when every call of it in the file passes a known network,
    context, data loader or array on the cpu for them, or a tuple of such (a batch handed
    over as `(data, label)`), joined over the calls. Contexts (and networks' contexts) say
    which caller spelled them, arrays which caller made them.
    `bound`: the calls construct `fn`'s class (`fn` is its `__init__`; `self` is not passed)."""
    env: Env = {}
    if not sites:
        return env
    positional, names = _parameters(fn, bound)
    callers = sorted({caller for _, _, caller in sites})
    via = callers[0] if len(callers) == 1 else "its callers"
    for param in names:
        value: Val = None
        for k, (call, arg_vals, _) in enumerate(sites):
            passed = _followed(_passed(call, arg_vals, positional, param))
            if passed is None:
                value = None
                break
            value = passed if k == 0 else _same_placement(value, passed)
        if value is not None:
            env[param] = value
    env = module_env_copy(env)  # the networks copied; the frozen values shared
    for value in env.values():
        for net in value.items if isinstance(value, Seq) else (value,):
            if isinstance(net, Net) and net.ctx is not None and net.ctx.via is None:
                net.ctx = replace(net.ctx, via=via)
    return {k: _from_caller(v, via) for k, v in env.items()}


def _followed(value: Val) -> Val:
    """What a parameter is known to hold when a call passes `value`: a network, a context, a
    loader, an array on the cpu or one moved to a GPU (a placed array whose context is not
    known to be off the host is not followed), or a tuple holding some of these (the rest of
    it unknown)."""
    if (
        isinstance(value, Tensor)
        and value.where != "host"
        and (value.ctx is None or not value.ctx.off_host())
    ):
        return None
    if isinstance(value, (Net, Ctx, Loader, Tensor)):
        return value
    if isinstance(value, Seq):
        items = tuple(_followed(item) for item in value.items)
        return Seq(items) if any(item is not None for item in items) else None
    return None


def _from_caller(value: Val, via: str) -> Val:
    """A value a parameter holds, saying which caller passed it."""
    if isinstance(value, Ctx) and value.via is None:
        return replace(value, via=via)
    if isinstance(value, Tensor) and value.where == "placed" and value.ctx is not None:
        return replace(value, ctx=replace(value.ctx, via=value.ctx.via or via))
    if isinstance(value, Tensor):
        made = f"{value.origin}, " if value.origin else ""
        return replace(value, origin=f"{made}passed by {via}")
    if isinstance(value, Seq):
        return Seq(tuple(_from_caller(item, via) for item in value.items))
    return value


def _same_placement(a: Val, b: Val) -> Val:
    """`a` when two calls pass equally placed networks (copies taken at each call), else their
    join."""
    if isinstance(a, Net) and isinstance(b, Net):
        return a if (a.ctx, a.placed) == (b.ctx, b.placed) else None
    return join(a, b)


def _parameters(fn: cst.FunctionDef, bound: bool) -> tuple[list[str], list[str]]:
    """`fn`'s parameters a call passes by position (without `self` when `bound`: a method
    called on an object, a class constructed), and those with the keyword-only ones."""
    params = fn.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    if bound:
        positional = positional[1:]
    return positional, [*positional, *(p.name.value for p in params.kwonly_params)]


def _passed(
    call: cst.Call, arg_vals: list[tuple[cst.BaseExpression, Val]], positional: list[str], name: str
) -> Val:
    """The value a call passes for parameter `name` (None: not passed, or not knowable)."""
    expr = _argument_for(call, positional, name)
    for arg, (_, value) in zip(call.args, arg_vals):
        if arg.value is expr:
            return value
    return None


def _argument_for(call: cst.Call, positional: list[str], name: str) -> cst.BaseExpression | None:
    """The expression a call passes for parameter `name` (None: not passed, or not knowable)."""
    index = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            if arg.keyword.value == name:
                return arg.value
            continue
        if index < len(positional) and positional[index] == name:
            return arg.value
        index += 1
    return None


_HELPER_NAME = re.compile(r"gpu|ctx|context|device", re.IGNORECASE)


def _calls_any(fn: cst.FunctionDef, imports: ImportMap, names: frozenset[str]) -> bool:
    """Whether `fn`'s body calls one of `names` (what makes reading its body worthwhile)."""
    return any(
        type(n) is cst.Call and imports.resolve(n.func) in names
        for n in typed_nodes(fn.body, (cst.Call,), NESTED_SCOPES)
    )


def _returned(
    fn: cst.FunctionDef, imports: ImportMap, code: Callable[[cst.CSTNode], str]
) -> list[Val]:
    """What `fn` returns, read on its own body with its parameters unknown (a bare `return` or
    falling off the end returns None, which is unknown too)."""
    probe = Scope(imports, code)
    p = fn.params
    probe.env = {
        param.name.value: None
        for param in (*p.posonly_params, *p.params, *p.kwonly_params, p.star_arg, p.star_kwarg)
        if isinstance(param, cst.Param)
    }
    leaves = probe.block(fn.body)
    return probe.returns if leaves else [*probe.returns, None]


def context_helpers(
    module: cst.Module, imports: ImportMap, code: Callable[[cst.CSTNode], str]
) -> dict[str, Ctx]:
    """Module-level functions that return a context (`def try_gpu(): ...`)."""
    out: dict[str, Ctx] = {}
    for stmt in module.body:
        if type(stmt) is not cst.FunctionDef or not _HELPER_NAME.search(stmt.name.value):
            continue
        if not _calls_any(stmt, imports, knowledge.CONTEXT_CONSTRUCTORS):
            continue
        values = [v for v in _returned(stmt, imports, code) if v is not None]
        if not values:
            continue
        value: Val = values[0]
        for other in values[1:]:
            value = join(value, other)
        if isinstance(value, Ctx) and value.gpu is not None:
            out[stmt.name.value] = Ctx(value.gpu, value.multi, None)
    return out


def tensor_helpers(
    module: cst.Module, imports: ImportMap, code: Callable[[cst.CSTNode], str]
) -> dict[str, Val]:
    """Module-level functions that return an array made on the default context (`def
    make_mask(n): m = nd.zeros(n); ...; return m`) and take no context: what they return is on
    the cpu."""
    out: dict[str, Val] = {}
    for stmt in module.body:
        if type(stmt) is not cst.FunctionDef or _HELPER_NAME.search(stmt.name.value):
            continue
        params = [p.name.value for p in (*stmt.params.params, *stmt.params.kwonly_params)]
        if any(_HELPER_NAME.search(p) for p in params):
            continue
        if not _calls_any(stmt, imports, knowledge.ndarray_creators()):
            continue
        made = _returned(stmt, imports, code)
        if made and all(
            isinstance(t, Tensor) and t.where == "host" and t.ctx is None and t.helper is None
            for t in made
        ):
            origin = made[0].origin  # type: ignore[union-attr]
            out[stmt.name.value] = Tensor(
                "host", None, f"from `{stmt.name.value}()`, which returns {origin}"
            )
    return out


def module_env_copy(env: Env) -> Env:
    """A function sees the module's final values; its own mutations stay its own.

    `copy.deepcopy(env)` as far as anything can tell: networks (the only mutable values) are
    copied as a graph, once each however they are reached; the frozen values that hold no
    network are shared instead of rebuilt field by field (they compare equal either way)."""
    memo: dict[int, object] = {}
    return {key: _copied(value, memo) for key, value in env.items()}


#: Values with nothing mutable inside: a copy would only be equal to them.
_IMMUTABLE: frozenset[type] = frozenset({type(None), Ctx, Tensor, Loader, Loss, Transform})


def _copied(value: Val, memo: dict[int, object]) -> Val:
    typ = type(value)
    if typ in _IMMUTABLE:
        return value
    known = memo.get(id(value))
    if known is not None:
        return known  # type: ignore[return-value]
    new: Val
    if typ is Params:
        new = Params(_copied(value.net, memo))  # type: ignore[union-attr,arg-type]
    elif typ is Each:
        new = Each(_copied(value.elem, memo))  # type: ignore[union-attr]
    elif typ is Seq:
        new = Seq(tuple(_copied(item, memo) for item in value.items))  # type: ignore[union-attr]
    else:
        return copy.deepcopy(value, memo)  # a network (it keeps its own memo entry)
    memo[id(value)] = new
    return new


# --- tensors created inside a forward ----------------------------------------------------

#: One possibility for a value in a forward: derived from an input?, the creators it holds.
_Kind = tuple[bool, frozenset[cst.Call]]
_NEUTRAL: _Kind = (False, frozenset())
#: The possibilities on the paths that reach a name.
_Alternatives = frozenset[_Kind]
_NEUTRAL_ALTERNATIVES: _Alternatives = frozenset({_NEUTRAL})
_INPUT: _Alternatives = frozenset({(True, frozenset())})
#: Beyond this many possibilities a value is summarised as one (their union).
_MAX_ALTERNATIVES = 8


def _capped(alternatives: _Alternatives) -> _Alternatives:
    return alternatives if len(alternatives) <= _MAX_ALTERNATIVES else _summary(alternatives)


def _choices(kinds: Sequence[_Alternatives]) -> Iterator[tuple[_Kind, ...]]:
    """One possibility of each operand, for every combination (operands with many
    possibilities are summarised first, so that a long expression stays linear)."""
    size = 1
    for k in kinds:
        size *= len(k)
    if size > _MAX_ALTERNATIVES * _MAX_ALTERNATIVES:
        kinds = [_summary(k) for k in kinds]
    return itertools.product(*kinds)


def _summary(alternatives: _Alternatives) -> _Alternatives:
    """All possibilities as one: derived from an input if any is, holding every creator."""
    return frozenset(
        {(any(k[0] for k in alternatives), frozenset().union(*(k[1] for k in alternatives)))}
    )


_LITERALS = (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


def _mentions_ctx(node: cst.BaseExpression) -> bool:
    """An argument that passes a context along (`x.context`, `ctx`, `self.device`)."""
    name = dotted_name(node) or ""
    return name.rsplit(".", 1)[-1] in knowledge.CTX_KEYWORDS + ("ctx_list",)


def _is_ctx_call(node: cst.BaseExpression) -> bool:
    """`mx.gpu(0)`, `mx.cpu()`, `mx.Context(...)` spelled in a `with` (not resolved: cheap)."""
    if type(node) is not cst.Call:
        return False
    name = dotted_name(node.func) or ""
    return name.rsplit(".", 1)[-1] in ("gpu", "cpu", "Context", "Device")


def tensor_parameters(fn: cst.FunctionDef, skip: int) -> list[str]:
    """Parameters of a forward that hold tensors: all but `self` (and `F`), minus those with
    a literal default (`axis=1`, `training=False`)."""
    params = fn.params
    positional = [*params.posonly_params, *params.params][skip:]
    out = []
    for param in [*positional, *params.kwonly_params]:
        default = param.default
        if default is not None and (
            isinstance(default, _LITERALS)
            or (type(default) is cst.Name and default.value in ("True", "False"))
        ):
            continue
        out.append(param.name.value)
    for star in (params.star_arg, params.star_kwarg):
        if type(star) is cst.Param:
            out.append(star.name.value)
    return out


class ForwardCreations(Dataflow[_Alternatives]):
    """Tensors made without `ctx` inside a forward and combined with its tensor inputs.

    A creator without `ctx` (`nd.zeros(shape)`) lands on the default context (cpu); the
    inputs of a forward live wherever the caller put them, so combining the two fails on a
    GPU. `F.zeros` in `hybrid_forward` is not a creator here: hybridized, it is bound on the
    inputs' context, and it cannot take `ctx` symbolically.

    Runs on the shared dataflow engine. A name's value is the set of what it may be on the
    paths that reach it, each a pair (derived from an input?, creators it holds), so that a
    state that is either an input or a fresh zeros array is not taken for their combination.
    """

    def __init__(self, imports: ImportMap, f_name: str | None) -> None:
        super().__init__()
        self.imports = imports
        self.f_name = f_name
        self.found: list[cst.Call] = []
        self.under_ctx = 0

    def run_function(self, fn: cst.FunctionDef, params: list[str]) -> list[cst.Call]:
        self.env = {name: _INPUT for name in params}
        self.block(fn.body)
        seen: set[int] = set()
        out = []
        for node in self.found:
            if id(node) not in seen:
                seen.add(id(node))
                out.append(node)
        return out

    # -- the domain ----------------------------------------------------------------------------

    def top(self) -> _Alternatives:
        return _NEUTRAL_ALTERNATIVES

    def join(self, a: _Alternatives, b: _Alternatives) -> _Alternatives:
        return _capped(a | b)

    def join_envs(
        self, base: dict[str, _Alternatives], envs: Sequence[dict[str, _Alternatives]]
    ) -> dict[str, _Alternatives]:
        # A name missing on a path is neither an input nor a creation there.
        out: dict[str, _Alternatives] = {}
        for env in envs:
            for name in env:
                if name not in out:
                    values = [e.get(name, _NEUTRAL_ALTERNATIVES) for e in envs]
                    joined = values[0]
                    for other in values[1:]:
                        joined = joined | other
                    out[name] = _capped(joined)
        return out

    def expr(self, node: cst.BaseExpression) -> _Alternatives:
        return self.kind(node)

    def assign(
        self,
        target: cst.BaseExpression,
        value_node: cst.BaseExpression | None,
        value: _Alternatives,
        stmt: cst.CSTNode,
    ) -> None:
        self._bind(target, value)

    def augassign(self, node: cst.AugAssign) -> None:
        self._bind(node.target, self._combine([self.kind(node.target), self.kind(node.value)]))

    def loop_item(self, node: cst.For | cst.CompFor, value: _Alternatives) -> _Alternatives:
        return value

    def define(self, node: cst.FunctionDef | cst.ClassDef) -> None:
        """A nested definition is not read."""

    def with_items(self, node: cst.With) -> object:
        if any(_mentions_ctx(i.item) or _is_ctx_call(i.item) for i in node.items):
            self.under_ctx += 1  # `with x.context:` makes it the default context
            return True
        for item in node.items:
            self.kind(item.item)
        return False

    def leave_with(self, node: cst.With, token: object) -> None:
        if token:
            self.under_ctx -= 1

    def _bind(self, target: cst.BaseExpression, kind: _Alternatives) -> None:
        if type(target) is cst.Tuple or type(target) is cst.List:
            for element in target.elements:
                self._bind(element.value, kind)
            return
        if type(target) is cst.StarredElement:
            self._bind(target.value, kind)
            return
        if type(target) is cst.Subscript:
            self._combine([self.kind(target.value), kind])
            return
        if type(target) is cst.Name:
            self.env[target.value] = kind

    def _combine(self, kinds: Sequence[_Alternatives]) -> _Alternatives:
        """Operands combined by one operator: on every path where one is derived from an input
        and another holds a creator without ctx, that creator meets the input's context."""
        out = set()
        for choice in _choices(kinds):
            is_arg = any(k[0] for k in choice)
            made: frozenset[cst.Call] = frozenset().union(*(k[1] for k in choice))
            if is_arg and made:
                self.found.extend(sorted(made, key=id))
            out.add((is_arg, made))
        return _capped(frozenset(out))

    def _union(self, kinds: Sequence[_Alternatives]) -> _Alternatives:
        """Values held side by side (a tuple, either branch of a conditional expression)."""
        return _capped(
            frozenset(
                (any(k[0] for k in choice), frozenset().union(*(k[1] for k in choice)))
                for choice in _choices(kinds)
            )
        )

    def kind(self, node: cst.BaseExpression) -> _Alternatives:
        if type(node) is cst.Name:
            return self.env.get(node.value, _NEUTRAL_ALTERNATIVES)
        if type(node) is cst.Attribute:
            if node.attr.value in _NON_TENSOR_ATTRS:
                return _NEUTRAL_ALTERNATIVES
            dotted = dotted_name(node)
            if dotted is not None and dotted.startswith("self."):
                return _NEUTRAL_ALTERNATIVES
            return self.kind(node.value)
        if type(node) is cst.Call:
            return self._call(node)
        if type(node) is cst.BinaryOperation:
            return self._combine([self.kind(node.left), self.kind(node.right)])
        if type(node) is cst.Comparison:
            return self._combine(
                [self.kind(node.left), *[self.kind(c.comparator) for c in node.comparisons]]
            )
        if type(node) is cst.UnaryOperation:
            return self.kind(node.expression)
        if type(node) is cst.Subscript:
            for element in node.slice:
                self._walk(element)
            return self.kind(node.value)
        if type(node) is cst.IfExp:
            self.kind(node.test)
            return self._union([self.kind(node.body), self.kind(node.orelse)])
        if type(node) is cst.Tuple or type(node) is cst.List:
            return self._union([self.kind(e.value) for e in node.elements])
        if type(node) is cst.Lambda:
            return _NEUTRAL_ALTERNATIVES
        self._walk(node)
        return _NEUTRAL_ALTERNATIVES

    def _walk(self, node: cst.CSTNode) -> None:
        for child in children(node):
            if isinstance(child, cst.BaseExpression):
                self.kind(child)
            else:
                self._walk(child)

    def _call(self, node: cst.Call) -> _Alternatives:
        func = node.func
        method = func.attr.value if type(func) is cst.Attribute else None
        arg_kinds = [self.kind(a.value) for a in node.args]
        if method in _TO_PYTHON:
            self.kind(func)
            return _NEUTRAL_ALTERNATIVES
        if method in knowledge.CTX_MOVING_METHODS:
            self.kind(func)
            return _NEUTRAL_ALTERNATIVES
        name = self.imports.resolve(func)
        dotted = dotted_name(func) or ""
        is_f = self.f_name is not None and dotted.startswith(self.f_name + ".")
        if name in knowledge.ndarray_creators():
            if creator_ctx_argument(node, name) is None and not self.under_ctx:
                return frozenset({(False, frozenset({node}))})
            return _NEUTRAL_ALTERNATIVES
        if (
            method in knowledge.STATE_CREATING_METHODS
            and name is None
            and type(func) is cst.Attribute
            and dotted_name(func.value) != "self"
        ):
            # `self.rnn.begin_state(batch)` makes zeros with `nd.zeros` on the default context
            maker = dotted_name(_kwarg(node, ("func",)) or cst.Name("nd")) or ""
            symbolic = self.f_name is not None and maker.startswith(self.f_name + ".")
            if (
                _kwarg(node, knowledge.CTX_KEYWORDS) is None
                and not self.under_ctx
                and not symbolic
                and not any(a.star == "**" or _mentions_ctx(a.value) for a in node.args)
            ):
                return frozenset({(False, frozenset({node}))})
            return _NEUTRAL_ALTERNATIVES
        if name in knowledge.like_creators() or (is_f and dotted.endswith("_like")):
            return arg_kinds[0] if arg_kinds else _NEUTRAL_ALTERNATIVES
        if (
            name is not None
            and knowledge.in_namespace(name, knowledge.TENSOR_NAMESPACES)
            or is_f
            or dotted.startswith("self.")
        ):
            return self._combine(arg_kinds)
        if type(func) is cst.Attribute and name is None:
            receiver = self.kind(func.value)
            if any(k[0] or k[1] for k in receiver):
                return self._combine([receiver, *arg_kinds])
        return _NEUTRAL_ALTERNATIVES
