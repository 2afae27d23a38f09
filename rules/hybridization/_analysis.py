"""The hybridization analysis: which statements of a hybridized method break the graph.

`HybridHooks` plugs MXNet knowledge into the tensor-taint interpreter (`_taint.py`): `F.*`
calls, tensor methods and child-block calls make tensors; `.shape`, `.asnumpy()`, `len()`,
branching... on tensors are breaks. The same hooks summarise helper functions (which
parameters, if tensors, reach which break) so that calls from `hybrid_forward` into helpers are
judged with the taint of their arguments, in this file or, through `finalize`, across files.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst

from mxlint import knowledge
from mxlint.checker import FileContext, shortened
from mxlint.knowledge.api import api
from mxlint.names import dotted_name
from mxlint.rules.hybridization import (
    one_namespace_function,
    reshape_varargs,
    unknown_mxnet_member,
)
from mxlint.rules.hybridization._outputs import (
    MAPPING_TYPES,
    non_tensor_output,
    placeholder_forward,
    record_types,
)
from mxlint.rules.hybridization._state import (
    Forward,
    block_attribute,
    called,
    read_attributes,
    written,
)
from mxlint.rules.hybridization._taint import TENSORISH, Env, Hooks, Interpreter, Kind, params_of
from mxlint.rules.hybridization.autograd_state_in_hybrid import (
    AUTOGRAD_ADVICE,
    mode_selects_inputs,
)
from mxlint.rules.hybridization.imperative_op_in_hybrid import (
    CONSTANT_ADVICE,
    CONSTANT_NO_TWIN_ADVICE,
    IMPERATIVE_ADVICE,
    LEGACY_ADVICE,
    NO_TWIN_ADVICE,
)
from mxlint.rules.hybridization.inplace_op_in_hybrid import INPLACE_ADVICE
from mxlint.rules.hybridization.print_tensor_in_hybrid import PRINT_ADVICE
from mxlint.rules.hybridization.tensor_as_sequence import (
    INDEX_ADVICE,
    ITER_ADVICE,
    LEN_ADVICE,
    SLICE_ADVICE,
    UNPACK_ADVICE,
)
from mxlint.rules.hybridization.tensor_attribute import member_advice
from mxlint.rules.hybridization.tensor_control_flow import CONTROL_ADVICE
from mxlint.rules.hybridization.tensor_to_python import TO_PYTHON_ADVICE
from mxlint.walker import NESTED_SCOPES, iter_nodes, typed_nodes

#: Parameter names that usually carry a list of tensors (recurrent states, extra inputs).
_LISTY = ("state", "hidden", "args", "list", "mem", "cache", "past")
#: Prefix of a pending callee that is a `self.method` to look up along the class's bases.
INHERITED = "self@"


@dataclass(frozen=True)
class Break:
    """One graph break: the code, what happens, and where (for messages at call sites)."""

    code: str
    what: str
    file: str
    line: int


@dataclass(frozen=True)
class Pending:
    """A call to a function of another file, with the argument key a tainted value reaches."""

    callee: str
    key: str  # "0", "1"... for positional arguments, the name for keywords


@dataclass
class Summary:
    """What a helper does to tensors passed to it."""

    name: str
    params: tuple[str, ...]
    bound: bool  # a method: the first parameter is `self`
    always: tuple[Break, ...] = ()
    per_param: dict[str, tuple[Break, ...]] = field(default_factory=dict)
    pending: dict[str, tuple[Pending, ...]] = field(default_factory=dict)
    returns: frozenset[str] = frozenset()  # parameters whose tensors reach the return value

    def param_for(self, key: str) -> str | None:
        """The parameter an argument key (position or keyword) binds."""
        if key.isdigit():
            index = int(key) + (1 if self.bound else 0)
            return self.params[index] if index < len(self.params) else None
        return key if key in self.params else None


@dataclass(frozen=True)
class Event:
    """A finding of the analysis, before it is reported (with its fix, if any)."""

    code: str
    node: cst.CSTNode
    message: str
    what: str
    fix: tuple[str, str, cst.CSTNode, str] | None = None  # (applicability, message, node, text)


@dataclass(frozen=True)
class HelperCall:
    """A call from analysed code into a helper whose summary decides the findings."""

    node: cst.Call
    callee: str
    keys: tuple[str, ...]  # argument keys holding tensors


Emit = Callable[[Event], None]


def _attr_chain_root(node: cst.BaseExpression) -> str | None:
    while type(node) is cst.Attribute:
        node = node.value
    return node.value if type(node) is cst.Name else None


def child_kinds(ctx: FileContext, cls: cst.ClassDef) -> dict[str, Kind]:
    """`self.x = nn.Dense(...)` in the class: what calling `self.x(...)` returns; and under
    `x[]`, what calling one of the layers `self.x.add(...)` put in a container returns
    (`self.branches[i](x)`), when every layer added is known."""
    out: dict[str, Kind] = {}
    added: dict[str, list[Kind]] = {}
    containers: set[str] = set()
    for stmt in cls.body.body:
        if type(stmt) is not cst.FunctionDef or stmt.name.value != "__init__":
            continue
        for node in iter_nodes(stmt.body, stop=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            if type(node) is cst.Call and type(node.func) is cst.Attribute:
                owner = node.func.value
                if (
                    node.func.attr.value == "add"
                    and type(owner) is cst.Attribute
                    and type(owner.value) is cst.Name
                    and owner.value.value == "self"
                ):
                    added.setdefault(owner.attr.value, []).extend(
                        _layer_kind(ctx.resolve(a.value.func))
                        if type(a.value) is cst.Call and a.keyword is None and not a.star
                        else Kind.MAYBE_GROUP
                        for a in node.args
                    )
                continue
            if type(node) is not cst.Assign or type(node.value) is not cst.Call:
                continue
            for target in node.targets:
                t = target.target
                if (
                    type(t) is cst.Attribute
                    and type(t.value) is cst.Name
                    and t.value.value == "self"
                ):
                    resolved = ctx.resolve(node.value.func)
                    out[t.attr.value] = _layer_kind(resolved)
                    if resolved in _SEQUENTIALS:
                        containers.add(t.attr.value)
    for name, kinds in added.items():
        if name in containers and kinds and all(k is Kind.TENSOR for k in kinds):
            out[f"{name}[]"] = Kind.TENSOR
    return out


#: Containers whose elements are the layers `add()` put in them, in order.
_SEQUENTIALS = frozenset(
    {
        "mxnet.gluon.nn.Sequential",
        "mxnet.gluon.nn.HybridSequential",
        "mxnet.gluon.nn.basic_layers.Sequential",
        "mxnet.gluon.nn.basic_layers.HybridSequential",
    }
)


def _layer_kind(name: str | None) -> Kind:
    if name is None:
        return Kind.MAYBE_GROUP
    if name in knowledge.MAYBE_TUPLE_LAYERS:
        return Kind.MAYBE_GROUP
    if name.startswith(knowledge.RNN_CELL_PREFIX) and name.endswith("Cell"):
        return Kind.GROUP
    if name.startswith(("mxnet.gluon.nn.", knowledge.LOSS_NAMESPACE)):
        return Kind.TENSOR
    return Kind.MAYBE_GROUP


_LIST_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "pop",
        "index",
        "count",
        "copy",
        "sort",
        "reverse",
        "remove",
        "clear",
    }
)


def _plural(name: str) -> bool:
    low = name.lower()
    return any(s in low for s in _LISTY) or (
        len(low) > 2 and low.endswith("s") and not low.endswith("ss")
    )


@dataclass
class Uses:
    """How the body uses each name: as a tensor, as a sequence, or as a list for sure."""

    tensor: set[str] = field(default_factory=set)
    sequence: set[str] = field(default_factory=set)
    listy: set[str] = field(default_factory=set)


def _is_seq_literal(node: cst.BaseExpression) -> bool:
    return type(node) in (cst.List, cst.Tuple, cst.ListComp)


def name_uses(fn: cst.FunctionDef, f_name: str | None) -> Uses:
    """Tensor evidence (methods, arithmetic, `F.op(name)`), sequence use (`name[i]`, `len`,
    iteration) and list evidence (`name[i] = v`, `.append`, `isinstance(name, list)`,
    `zip(..., name)`, `[a] + name`, `*name`): what tells a list of tensors passed as an
    argument (HRNet branches, recurrent states) from a tensor."""
    uses = Uses()
    stop = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
    for node in iter_nodes(fn.body, stop=stop):
        if type(node) is cst.Attribute and type(node.value) is cst.Name:
            bucket = uses.listy if node.attr.value in _LIST_METHODS else uses.tensor
            bucket.add(node.value.value)
        elif type(node) is cst.BinaryOperation:
            sides = (node.left, node.right)
            seq = any(_is_seq_literal(s) for s in sides)
            for side in sides:
                if type(side) is cst.Name:
                    (uses.listy if seq else uses.tensor).add(side.value)
        elif type(node) is cst.Subscript and type(node.value) is cst.Name:
            uses.sequence.add(node.value.value)
        elif isinstance(node, (cst.For, cst.CompFor)) and type(node.iter) is cst.Name:
            uses.sequence.add(node.iter.value)
        elif type(node) is cst.Assign:
            if type(node.value) is cst.Name and any(
                type(t.target) in (cst.Tuple, cst.List) for t in node.targets
            ):
                uses.sequence.add(node.value.value)  # `h, c = hc`
            for target in node.targets:
                t = target.target
                if (
                    type(t) is cst.Subscript
                    and type(t.value) is cst.Name
                    and len(t.slice) == 1
                    and type(t.slice[0].slice) is cst.Index
                ):
                    uses.listy.add(t.value.value)  # `x[i] = v`; `x[:, 0] = v` is a tensor
        elif type(node) is cst.Call:
            func = node.func
            names = [a.value.value for a in node.args if type(a.value) is cst.Name]
            if any(a.star == "*" and type(a.value) is cst.Name for a in node.args):
                uses.listy.update(
                    a.value.value
                    for a in node.args  # type: ignore[attr-defined]
                    if a.star == "*" and type(a.value) is cst.Name
                )
            if type(func) is cst.Name:
                if func.value in ("zip", "list", "tuple", "type", "isinstance"):
                    uses.listy.update(names[:1] if func.value in ("type", "isinstance") else names)
                elif func.value == "len":
                    uses.sequence.update(names[:1])
            elif (
                f_name is not None
                and _attr_chain_root(func) == f_name
                and node.args
                and not node.args[0].star
                and type(node.args[0].value) is cst.Name
            ):
                uses.tensor.add(node.args[0].value.value)
    return uses


def may_be_list(name: str, uses: Uses, first: bool) -> bool:
    """Whether an argument may hold a list of tensors rather than one tensor."""
    return name in uses.listy or (
        name not in uses.tensor and (_plural(name) or (not first and name in uses.sequence))
    )


def param_env(fn: cst.FunctionDef, first_tensor: int, f_name: str | None) -> Env:
    """Kinds of a hybridized method's parameters: tensors after `self`/`F`, except those
    the body treats as lists (see `name_uses`), those with a plural name (`layers`,
    `states`) never used as a tensor, and extra arguments used only as sequences
    (`out_size[0]`, `h[i]`)."""
    env: Env = {}
    params = params_of(fn)
    uses = name_uses(fn, f_name)
    first = True
    for index, param in enumerate(params):
        name = param.name.value
        if name == f_name:
            continue
        if index < first_tensor:
            env[name] = Kind.UNKNOWN
            continue
        default = param.default
        maybe_list = may_be_list(name, uses, first)
        if default is None:
            env[name] = Kind.MAYBE_GROUP if maybe_list else Kind.TENSOR
            first = False
        elif type(default) is cst.Name and default.value == "None":
            env[name] = Kind.UNKNOWN if maybe_list else Kind.OPTIONAL
        else:
            env[name] = Kind.PYTHON
    star = fn.params.star_arg
    if type(star) is cst.Param:
        env[star.name.value] = Kind.GROUP
    if fn.params.star_kwarg is not None:
        env[fn.params.star_kwarg.name.value] = Kind.UNKNOWN
    return env


class HybridHooks(Hooks):
    """MXNet semantics for the taint interpreter, reporting through `emit`."""

    def __init__(
        self,
        analysis: FileAnalysis,
        emit: Emit,
        *,
        f_name: str | None,
        mxnet: str,
        children: dict[str, Kind],
        cls: str | None,
        on_helper: Callable[[HelperCall, Interpreter], Kind | None],
    ) -> None:
        self.analysis = analysis
        self.ctx = analysis.ctx
        self.emit_event = emit
        self.f_name = f_name
        self.mxnet = mxnet
        self.children = children
        self.cls = cls
        self.on_helper = on_helper
        self.silent = False
        self.fallback = False
        #: Calls of functions of other files: (call, qualified name, tensor argument keys,
        #: inside a None fallback).
        self.pending_calls: list[tuple[cst.Call, str, tuple[str, ...], bool]] = []

    def emit(
        self,
        code: str,
        node: cst.CSTNode,
        message: str,
        what: str,
        fix: tuple[str, str, cst.CSTNode, str] | None = None,
    ) -> None:
        if not self.silent:
            self.emit_event(Event(code, node, message, what, fix))

    # -- names and attributes ------------------------------------------------------------------

    def attribute(self, node: cst.Attribute, base: Kind) -> Kind | None:
        attr = node.attr.value
        if type(node.value) is cst.Name and node.value.value == "self":
            return Kind.PYTHON
        if base in TENSORISH and attr in api().ndarray_only_members:
            if self.mxnet == "1" and not self.fallback:
                self.emit(
                    "MXL103",
                    node,
                    member_advice(attr, self.ctx.code(node)),
                    f"reads `.{attr}`",
                )
            return None if attr == "T" else Kind.PYTHON
        if base is Kind.TENSOR and self.mxnet == "1":
            self._typo(node, attr)
        return None

    # -- calls ---------------------------------------------------------------------------------

    def call(
        self, node: cst.Call, func_kind: Kind, args: list[tuple[cst.Arg, Kind]], interp: Interpreter
    ) -> Kind | None:
        func = node.func
        dotted = dotted_name(func)
        root = _attr_chain_root(func)
        tensor_args = [(a, k) for a, k in args if k in TENSORISH]
        if self.f_name is not None and root == self.f_name and dotted is not None and "." in dotted:
            self._out_keyword(node, args)
            op = dotted.split(".", 1)[1]
            if self.mxnet == "1" and type(func) is cst.Attribute:
                self._f_function(node, func, op, args)
            return op_kind(op, node)
        resolved = self.ctx.resolve(func) if root is not None and root not in interp.env else None
        if resolved is not None:
            answer = self._resolved_call(node, resolved, args, tensor_args)
            if answer is not None:
                return answer
        if type(func) is cst.Name and func.value not in interp.env:
            answer = self._builtin_call(node, func.value, args, tensor_args)
            if answer is not None:
                return answer
        if type(func) is cst.Attribute:
            answer = self._method_call(node, func, func_kind, args, interp)
            if answer is not None:
                return answer
        if (
            type(func) is cst.Subscript
            and type(func.value) is cst.Attribute
            and type(func.value.value) is cst.Name
            and func.value.value.value == "self"
            and f"{func.value.attr.value}[]" in self.children
        ):
            return self.children[f"{func.value.attr.value}[]"]  # `self.branches[i](x)`
        if type(func) is cst.Name and func.value not in interp.env and resolved is None:
            local = self.analysis.functions.get(func.value)
            if local is not None:
                keys = _tensor_keys(args)
                return self.on_helper(HelperCall(node, self.ctx.qualname(func.value), keys), interp)
        return None

    def _out_keyword(self, node: cst.Call, args: list[tuple[cst.Arg, Kind]]) -> None:
        for arg, kind in args:
            if (
                arg.keyword is not None
                and arg.keyword.value == "out"
                and kind not in (Kind.NONE, Kind.PYTHON)
            ):
                self.emit(
                    "MXL107",
                    arg,
                    "`out=` writes into an existing array in place, which "
                    "a Symbol cannot do and autograd rejects; assign the result instead "
                    "(`y = F.op(...)`)",
                    "writes with `out=`",
                )

    def _resolved_call(
        self,
        node: cst.Call,
        name: str,
        args: list[tuple[cst.Arg, Kind]],
        tensor_args: list[tuple[cst.Arg, Kind]],
    ) -> Kind | None:
        if name in knowledge.AUTOGRAD_STATE:
            short = name.rsplit(".", 1)[1]
            if not self._mode_selects_inputs():
                self.emit(
                    "MXL108",
                    node,
                    AUTOGRAD_ADVICE.format(fn=short),
                    f"reads `autograd.{short}()`",
                )
            return Kind.PYTHON
        imperative = ("mxnet.nd",) if self.mxnet == "2" else knowledge.IMPERATIVE_NAMESPACES
        if knowledge.in_namespace(name, imperative) and name not in knowledge.IMPERATIVE_TYPES:
            op = name.split(".", 2)[2] if name.count(".") >= 2 else name
            kind = op_kind(op, node)
            inputs = _array_inputs(args)
            if self.mxnet == "1" and inputs and all(k is Kind.CONSTANT for k in inputs):
                # An operator on arrays the method built imperatively: NDArrays in both
                # modes, no Symbol reaches it (their creation is what is reported).
                self._out_keyword(node, args)
                return Kind.CONSTANT if kind is Kind.TENSOR else Kind.UNKNOWN
            constant = (
                self.mxnet == "1"
                and not inputs
                and kind is Kind.TENSOR
                and (name in knowledge.ndarray_creators() or op.startswith("random."))
            )  # `nd.arange(n)`: built from Python values
            self._imperative(node, name, constant)
            self._out_keyword(node, args)
            return Kind.CONSTANT if constant else kind
        if knowledge.in_namespace(name, knowledge.TENSOR_NAMESPACES):
            return op_kind(name.split(".", 2)[2] if name.count(".") >= 2 else name, node)
        if name in knowledge.NUMPY_CONVERTERS and tensor_args:
            self.emit(
                "MXL102",
                node,
                TO_PYTHON_ADVICE.format(call=self.ctx.code(node.func)),
                f"calls `{self.ctx.code(node.func)}()` on a tensor",
            )
            return Kind.PYTHON
        if knowledge.is_library(name) or knowledge.is_mxnet(name):
            return Kind.UNKNOWN if not tensor_args else None
        self.pending_calls.append((node, name, _tensor_keys(args), self.fallback))
        return Kind.MAYBE_GROUP if tensor_args else Kind.UNKNOWN

    def _imperative(self, node: cst.Call, name: str, constant: bool = False) -> None:
        """MXL105 at an `nd.*` call (`constant`: a creator given only Python values)."""
        spelled = self.ctx.code(node.func)
        ns, _, op = name.partition(".")[2].partition(".")
        fix = None
        if self.mxnet == "2":
            message = LEGACY_ADVICE.format(call=spelled, op=op)
        else:
            f = self.f_name or "F"
            twin = not (ns == "nd" and op and not _symbolic_twin(op))
            if constant:
                advice = CONSTANT_ADVICE if twin else CONSTANT_NO_TWIN_ADVICE
            else:
                advice = IMPERATIVE_ADVICE if twin else NO_TWIN_ADVICE
            message = advice.format(call=spelled, f=f, op=op)
            if ns == "nd" and self.f_name is not None and op:
                creator = name in knowledge.ndarray_creators() or op.split(".")[0] == "random"
                has_ctx = any(
                    a.keyword is not None and a.keyword.value in knowledge.CTX_KEYWORDS
                    for a in node.args
                )
                if api().same_signature(op):
                    fix = ("safe", f"Replace `{spelled}` with `{f}.{op}`", node.func, f"{f}.{op}")
                elif (
                    not has_ctx
                    and op != "array"
                    and (creator or op.replace(".", "_").isidentifier())
                    and _symbolic_twin(op)
                ):
                    fix = ("unsafe", f"Replace `{spelled}` with `{f}.{op}`", node.func, f"{f}.{op}")
        self.emit("MXL105", node, message, f"calls `{spelled}()`", fix)

    def _builtin_call(
        self,
        node: cst.Call,
        name: str,
        args: list[tuple[cst.Arg, Kind]],
        tensor_args: list[tuple[cst.Arg, Kind]],
    ) -> Kind | None:
        positional = [k for a, k in args if a.keyword is None and a.star == ""]
        if name == "print":
            if tensor_args and not self._shows_modes():
                self.emit("MXL106", node, PRINT_ADVICE, "prints a tensor")
            return Kind.NONE
        if name == "getattr" and len(positional) >= 2 and positional[0] in TENSORISH:
            # `getattr(x, "shape")` is `x.shape` spelt with a string.
            attr = node.args[1].value
            if type(attr) is cst.SimpleString and self.mxnet == "1" and not self.fallback:
                member = attr.evaluated_value
                if isinstance(member, str) and member in api().ndarray_only_members:
                    self.emit(
                        "MXL103",
                        node,
                        member_advice(member, self.ctx.code(node)),
                        f"reads `.{member}`",
                    )
                    return Kind.PYTHON
            return Kind.UNKNOWN
        if name == "len":
            if positional and positional[0] is Kind.TENSOR and self.mxnet == "1":
                self.emit(
                    "MXL104",
                    node,
                    LEN_ADVICE.format(code=self.ctx.code(node)),
                    "takes `len()` of a tensor",
                )
            return Kind.PYTHON
        if name in knowledge.TO_PYTHON_BUILTINS:
            if positional and positional[0] in TENSORISH:
                self.emit(
                    "MXL102",
                    node,
                    TO_PYTHON_ADVICE.format(call=name),
                    f"calls `{name}()` on a tensor",
                )
            return Kind.PYTHON
        if name in knowledge.ITERATING_BUILTINS:
            if (
                self.mxnet == "1"
                and len(positional) >= 1
                and (len(positional) == 1 or name in ("zip", "map"))
                and any(k is Kind.TENSOR for k in positional[1 if name == "map" else 0 :])
            ):
                self.emit("MXL104", node, ITER_ADVICE, f"iterates a tensor with `{name}()`")
            return Kind.UNKNOWN
        return None

    def _method_call(
        self,
        node: cst.Call,
        func: cst.Attribute,
        base: Kind,
        args: list[tuple[cst.Arg, Kind]],
        interp: Interpreter,
    ) -> Kind | None:
        method = func.attr.value
        receiver = func.value
        if type(receiver) is cst.Name and receiver.value == "self":
            return self._self_call(node, method, args, interp)
        if (
            type(receiver) is cst.Attribute
            and type(receiver.value) is cst.Name
            and receiver.value.value == "self"
            and method in ("data", "var")
        ):
            return Kind.TENSOR
        if base in TENSORISH:
            if method in knowledge.TO_PYTHON_METHODS:
                self.emit(
                    "MXL102",
                    node,
                    TO_PYTHON_ADVICE.format(call=f".{method}()"),
                    f"calls `.{method}()`",
                )
                return Kind.PYTHON
            if self.mxnet == "1":
                answer = self._tensor_method(node, func, method, base)
                if answer is not None:
                    return answer
            if method in knowledge.MULTI_OUTPUT_METHODS:
                return Kind.MAYBE_GROUP
            if method in knowledge.SIZE_ATTRIBUTES:  # `x.size()`: not an MXNet API
                return Kind.UNKNOWN
            if method in knowledge.NON_TENSOR_METHODS:
                return Kind.UNKNOWN
            return Kind.TENSOR
        if (
            method in ("append", "extend", "insert")
            and type(receiver) is cst.Name
            and any(k in TENSORISH or k is Kind.GROUP for _, k in args)
        ):
            interp.env[receiver.value] = Kind.GROUP
            return Kind.NONE
        return None

    def _f_function(
        self, node: cst.Call, func: cst.Attribute, op: str, args: list[tuple[cst.Arg, Kind]]
    ) -> None:
        """`F.<name>` that only one of `mx.nd`/`mx.sym` has (MXL111), or neither (MXL110)."""
        sub, _, name = op.rpartition(".")
        if sub not in _F_SUBSPACES or name.startswith("_"):
            return
        facts, suffix, f = api(), f".{sub}" if sub else "", self.f_name or "F"
        in_nd, in_sym = name in facts.names("nd" + suffix), name in facts.names("sym" + suffix)
        spelled = f"{f}{suffix}.{name}"
        if in_nd and in_sym:
            return
        if in_nd or in_sym:
            template = (
                one_namespace_function.IMPERATIVE_ONLY
                if in_nd
                else (one_namespace_function.SYMBOLIC_ONLY)
            )
            twin = one_namespace_function.BROADCAST_TWINS.get(name) if not sub else None
            tensors = [k for a, k in args if a.keyword is None and not a.star]
            fix = None
            if twin is not None and len(args) == 2 and tensors == [Kind.TENSOR, Kind.TENSOR]:
                fix = ("safe", f"Replace `{spelled}` with `{f}.{twin}`", func.attr, twin)
            message = template.format(
                f=f + suffix, name=name, advice=one_namespace_function.advice(name, f)
            )
            self.emit("MXL111", node, message, f"calls `{spelled}`", fix)
            return
        close = unknown_mxnet_member.closest(
            name, facts.names("nd" + suffix) | facts.names("sym" + suffix)
        )
        self.emit(
            "MXL110",
            node,
            unknown_mxnet_member.UNKNOWN_FUNCTION.format(
                f=f + suffix,
                name=name,
                suggestion=unknown_mxnet_member.suggestion(
                    f"{f}{suffix}.{close}" if close else None
                ),
            ),
            f"calls `{spelled}`, which MXNet does not have",
            ("unsafe", f"Replace `{name}` with `{close}`", func.attr, close) if close else None,
        )

    def _tensor_method(
        self, node: cst.Call, func: cst.Attribute, method: str, base: Kind
    ) -> Kind | None:
        """A 1.x tensor's method that a Symbol lacks (MXL103), a reshape spelt with separate
        arguments (MXL112), or a typo of a tensor method (MXL110)."""
        facts = api()
        # `.copy()` is also a dict's and a list's: a parameter holding one is not a Symbol bug.
        if (
            method in facts.ndarray_only_members
            and method not in unknown_mxnet_member.PYTHON_MEMBERS
        ):
            self.emit(
                "MXL103",
                node,
                member_advice(method, self.ctx.code(func)),
                f"calls `.{method}()`",
            )
            return Kind.TENSOR if method in _TENSOR_RETURNING else Kind.UNKNOWN
        if method == "reshape" and not facts.reshape_forms["varargs"]["symbol"]:
            self._reshape(node, func)
            return None
        if base is Kind.TENSOR:
            self._typo(func, method)
        return None

    def _reshape(self, node: cst.Call, func: cst.Attribute) -> None:
        positional = [a for a in node.args if a.keyword is None and not a.star]
        if len(positional) < 2 or any(a.star for a in node.args):
            return
        if any(a.keyword is not None and a.keyword.value == "shape" for a in node.args):
            return
        code = self.ctx.code
        rest = [code(a.value) if a.keyword is None else code(a).rstrip(", ") for a in node.args]
        shape, others = rest[: len(positional)], rest[len(positional) :]
        fixed = f"{code(func)}(({', '.join(shape)}){''.join(', ' + o for o in others)})"
        self.emit(
            "MXL112",
            node,
            reshape_varargs.RESHAPE_ADVICE.format(code=_short(code(node)), fixed=_short(fixed)),
            "passes reshape's shape as separate arguments",
            ("safe", "Pass the shape as one tuple", node, fixed),
        )

    def _typo(self, node: cst.Attribute, name: str) -> None:
        """A tensor member one typo away from a member NDArray or Symbol has (MXL110)."""
        if not unknown_mxnet_member.unknown_member(name):
            return
        facts = api()
        close = unknown_mxnet_member.closest(name, facts.ndarray.all | facts.symbol.all)
        if close is None:
            return
        self.emit(
            "MXL110",
            node,
            unknown_mxnet_member.typo_message(_short(self.ctx.code(node)), name, close),
            f"uses `.{name}`, which MXNet tensors do not have",
            ("unsafe", f"Replace `{name}` with `{close}`", node.attr, close),
        )

    def _self_call(
        self, node: cst.Call, method: str, args: list[tuple[cst.Arg, Kind]], interp: Interpreter
    ) -> Kind | None:
        if self.cls is not None:
            qual = self.analysis.method_qualname(self.cls, method)
            if qual is not None:
                return self.on_helper(HelperCall(node, qual, _tensor_keys(args)), interp)
        if method in self.children:
            return self.children[method]
        if self.cls is not None:  # maybe inherited from a base class in another file
            self.pending_calls.append(
                (
                    node,
                    f"{INHERITED}{self.ctx.qualname(self.cls)}.{method}",
                    _tensor_keys(args),
                    self.fallback,
                )
            )
        return Kind.MAYBE_GROUP if any(k in TENSORISH for _, k in args) else Kind.UNKNOWN

    # -- statements ----------------------------------------------------------------------------

    def test(self, node: cst.BaseExpression, kind: Kind) -> None:
        if kind in TENSORISH:
            self.emit(
                "MXL101",
                node,
                CONTROL_ADVICE.format(code=_short(self.ctx.code(node))),
                "branches on a tensor value",
            )

    def subscript(self, node: cst.Subscript, base: Kind, interp: Interpreter) -> None:
        if base is not Kind.TENSOR or self.mxnet != "1":
            return
        code = _short(self.ctx.code(node))
        element = node.slice[0].slice if len(node.slice) == 1 else None
        # `x[None]` and `x[...]` are not output numbers: Symbol raises as for a slice.
        if type(element) is cst.Index and not (
            type(element.value) is cst.Ellipsis
            or (type(element.value) is cst.Name and element.value.value == "None")
        ):
            self.emit("MXL104", node, INDEX_ADVICE.format(code=code), "indexes a tensor")
        else:
            self.emit("MXL104", node, SLICE_ADVICE.format(code=code), "slices a tensor")

    def iterate(self, node: cst.CSTNode, iterable: cst.BaseExpression, kind: Kind) -> None:
        if kind is Kind.TENSOR and self.mxnet == "1":
            self.emit("MXL104", iterable, ITER_ADVICE, "iterates over a tensor")

    def unpack(self, node: cst.CSTNode, value: cst.BaseExpression, kind: Kind) -> None:
        if kind is Kind.TENSOR and self.mxnet == "1":
            self.emit("MXL104", value, UNPACK_ADVICE, "unpacks a tensor")

    def store_subscript(self, node: cst.Subscript, base: Kind) -> None:
        if base is Kind.TENSOR:
            self.emit(
                "MXL107",
                node,
                INPLACE_ADVICE.format(code=_short(self.ctx.code(node))),
                "assigns into a tensor slice",
            )

    def augassign(self, node: cst.AugAssign, target: Kind, value: Kind) -> None:
        # A child block's output may be a tuple, but a tuple or list updated with a tensor
        # (`out = self.body(x); out += x`) or a float is no Python idiom: it is the tensor.
        if target is Kind.TENSOR or (
            target is Kind.MAYBE_GROUP and (value is Kind.TENSOR or type(node.value) is cst.Float)
        ):
            self.emit(
                "MXL107",
                node,
                INPLACE_ADVICE.format(code=_short(self.ctx.code(node))),
                "updates a tensor in place",
            )

    def guard(self, test: cst.BaseExpression) -> str | None:
        verdict = imperative_guard(test, self.f_name, self.ctx)
        if verdict is None and self.cls is not None:
            verdict = flag_guard(test, self.analysis.imperative_flags(self.cls))
        return verdict

    # -- block state and outputs (MXL113, MXL114) ------------------------------------------------

    #: The hybridized method being analysed; None while summarising a helper (whose returns
    #: are not the block's outputs).
    forward_fn: cst.FunctionDef | None = None
    _forward: Forward | None = None

    @property
    def forward(self) -> Forward | None:
        """The hybridized method's own facts, read when a write first needs them."""
        if self.forward_fn is None:
            return None
        if self._forward is None:
            self._forward = Forward.of(self.forward_fn)
        return self._forward

    _mode_selected: bool | None = None
    _placeholder_forward: bool | None = None

    def _mode_selects_inputs(self) -> bool:
        """`mode_selects_inputs` of the 1.x hybridized method, read once."""
        if self._mode_selected is None:
            fn = self.forward_fn
            self._mode_selected = (
                self.mxnet == "1" and fn is not None and mode_selects_inputs(fn, self.ctx.resolve)
            )
        return self._mode_selected

    def _placeholder(self) -> bool:
        """`placeholder_forward` of the hybridized method, read once."""
        if self._placeholder_forward is None:
            fn = self.forward_fn
            self._placeholder_forward = fn is not None and placeholder_forward(fn)
        return self._placeholder_forward

    _modes_shown: bool | None = None

    def _shows_modes(self) -> bool:
        """The hybridized method prints its namespace `F` (`print('F:', F)`): it shows which
        mode runs (the tutorial's `nd` module, then a Symbol once hybridized), so the tensors
        it prints beside are meant to show a Symbol, not lost debugging output."""
        if self._modes_shown is None:
            fn, f = self.forward_fn, self.f_name
            self._modes_shown = (
                fn is not None
                and f is not None
                and any(
                    type(node) is cst.Call
                    and type(node.func) is cst.Name
                    and node.func.value == "print"
                    and any(type(a.value) is cst.Name and a.value.value == f for a in node.args)
                    for node in iter_nodes(fn.body, stop=(cst.FunctionDef, cst.ClassDef))
                )
            )
        return self._modes_shown

    def write(self, target: cst.BaseExpression, value: Kind, stmt: cst.CSTNode) -> None:
        attr = block_attribute(target)
        if attr is None:
            return  # a local name: not the block's state
        if self.cls is not None and attr in self.analysis.step_state(self.cls):
            return  # a recurrent cell's per-sequence state, cleared by its `reset()`
        change = written(
            target,
            value,
            stmt,
            once=self.once,
            forward=self.forward,
            code=self.ctx.code,
            read=self.analysis.read_attributes,
        )
        if change is not None:
            self.emit("MXL113", change.node, change.message, change.what)

    def observe_call(self, node: cst.Call, args: list[tuple[cst.Arg, Kind]]) -> None:
        func = node.func
        if (
            self.cls is not None
            and type(func) is cst.Attribute
            and block_attribute(func.value) in self.analysis.step_state(self.cls)
        ):
            return  # a container of a recurrent cell's per-sequence state
        change = called(node, args, once=self.once, forward=self.forward, code=self.ctx.code)
        if change is not None:
            self.emit("MXL113", change.node, change.message, change.what)

    def makes_mapping(self, node: cst.Call, interp: Interpreter) -> bool:
        return super().makes_mapping(node, interp) or self.ctx.resolve(node.func) in MAPPING_TYPES

    def returned(self, node: cst.Return, kind: Kind, interp: Interpreter) -> None:
        if self.forward_fn is None or self._placeholder():
            return
        found = non_tensor_output(
            node,
            interp.env,
            mxnet=self.mxnet,
            resolve=self.ctx.resolve,
            records=lambda: self.analysis.record_types,
            code=self.ctx.code,
        )
        if found is not None:
            self.emit("MXL114", found[0], found[1], "returns a value that is not a tensor")


#: `F.<sub>.<name>` namespaces whose names are known for both `mx.nd` and `mx.sym`.
_F_SUBSPACES = ("", "contrib", "linalg", "random", "image", "sparse", "np", "npx")
#: NDArray-only methods that return a tensor (the finding is reported; the flow goes on).
_TENSOR_RETURNING = frozenset({"as_in_context", "copyto", "detach", "tostype"})


#: Kinds of arguments that are no array (sizes, options, contexts, dtypes).
_NOT_ARRAYS = frozenset({Kind.PYTHON, Kind.NONE, Kind.MAPPING})
#: Keywords of an `nd.*` call that never take an array.
_OPTION_KEYWORDS = frozenset({*knowledge.CTX_KEYWORDS, "dtype", "name"})


def _array_inputs(args: list[tuple[cst.Arg, Kind]]) -> list[Kind]:
    """The kinds of the arguments of an `nd.*` call that may be arrays."""
    return [
        kind
        for arg, kind in args
        if kind not in _NOT_ARRAYS
        and not (arg.keyword is not None and arg.keyword.value in _OPTION_KEYWORDS)
    ]


def op_kind(op: str, node: cst.Call) -> Kind:
    """An operator's result: one tensor for known single-output operators and creators, a
    possible group for multi-output or unknown ones (`F.contrib.box_encode` returns two)."""
    if op in knowledge.MULTI_OUTPUT_OPS or any(
        a.keyword is not None and a.keyword.value == "num_outputs" for a in node.args
    ):
        return Kind.MAYBE_GROUP
    leaf = op.rsplit(".", 1)[-1]
    if leaf in knowledge.SINGLE_OUTPUT_OPS or op.startswith("random."):
        return Kind.TENSOR
    return Kind.MAYBE_GROUP


def imperative_guard(test: cst.BaseExpression, f_name: str | None, ctx: FileContext) -> str | None:
    """ "body" for `if F is nd:`/`isinstance(x, nd.NDArray)`, "orelse" for the symbolic twins."""
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        # `F is nd and ...`: the whole test, and the body, run imperatively only.
        if "body" in (
            imperative_guard(test.left, f_name, ctx),
            imperative_guard(test.right, f_name, ctx),
        ):
            return "body"
        return None
    negate = False
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        negate, test = True, test.expression
    verdict: str | None = None
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        sides = (test.left, comp.comparator)
        if f_name is not None and any(type(s) is cst.Name and s.value == f_name for s in sides):
            other = (
                sides[1] if type(sides[0]) is cst.Name and sides[0].value == f_name else sides[0]
            )
            target = ctx.resolve(other)
            if target in knowledge.IMPERATIVE_MODULES:
                verdict = "body"
            elif target in knowledge.SYMBOLIC_MODULES:
                verdict = "orelse"
            if verdict is not None and type(comp.operator) in (cst.IsNot, cst.NotEqual):
                verdict = "orelse" if verdict == "body" else "body"
            elif type(comp.operator) not in (cst.Is, cst.Equal):
                verdict = None
    elif (
        type(test) is cst.Call
        and type(test.func) is cst.Name
        and test.func.value == "isinstance"
        and len(test.args) == 2
    ):
        types = test.args[1].value
        names = [e.value for e in types.elements] if type(types) is cst.Tuple else [types]
        resolved = {ctx.resolve(n) for n in names}
        if resolved & knowledge.IMPERATIVE_TYPES:
            verdict = "body"
        elif resolved & knowledge.SYMBOLIC_TYPES:
            verdict = "orelse"
    if verdict is not None and negate:
        verdict = "orelse" if verdict == "body" else "body"
    return verdict


#: What `FileAnalysis._read_flags` reads of a constructor.
_ASSIGN_OR_ASSERT = frozenset({cst.Assign, cst.Assert})
#: A block attribute that says whether the block can be hybridized (imgclsmob's
#: `hybridizable=True` selects between a graph path and an imperative-only one).
HYBRIDIZABLE_FLAG = re.compile(r"(?:is_)?hybridi[sz]able")


def flag_guard(test: cst.BaseExpression, flags: frozenset[str]) -> str | None:
    """ "orelse" for `if self.hybridizable:` (and an attribute the constructor asserts the
    block needs to be hybridizable, `flags`), "body" for `if not self.hybridizable:`: the
    branch the flag being off selects runs only in a block built not to be hybridized."""
    negate = type(test) is cst.UnaryOperation and type(test.operator) is cst.Not
    if negate:
        test = test.expression  # type: ignore[attr-defined]
    attr = block_attribute(test, direct=True)
    if attr is None or attr not in flags:
        return None
    return "body" if negate else "orelse"


def _tensor_keys(args: list[tuple[cst.Arg, Kind]]) -> tuple[str, ...]:
    keys: list[str] = []
    position = 0
    for arg, kind in args:
        if arg.star:
            continue
        if arg.keyword is not None:
            if kind in TENSORISH:
                keys.append(arg.keyword.value)
            continue
        if kind in TENSORISH:
            keys.append(str(position))
        position += 1
    return tuple(keys)


def _short(code: str) -> str:
    return shortened(code, 40)


class FileAnalysis:
    """Per-file tables the hooks consult: functions, classes and their methods."""

    @functools.cached_property
    def record_types(self) -> dict[str, str]:
        """The file's dataclasses and namedtuples (MXL114), read once, on first need."""
        return record_types(self.ctx.module, self.ctx.resolve)

    @functools.cached_property
    def read_attributes(self) -> frozenset[str]:
        """The attribute names the file reads back (MXL113), scanned on first need."""
        return read_attributes(self.ctx.module)

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.functions: dict[str, cst.FunctionDef] = {}
        self.classes: dict[str, cst.ClassDef] = {}  # dotted name within the file
        self.methods: dict[str, dict[str, cst.FunctionDef]] = {}
        self.bases: dict[str, list[str]] = {}
        self._step_state: dict[str, frozenset[str]] = {}
        self._flags: dict[str, frozenset[str]] = {}
        for stmt in ctx.module.body:
            if type(stmt) is cst.FunctionDef:
                self.functions[stmt.name.value] = stmt
            elif type(stmt) is cst.ClassDef:
                self._add_class(stmt, "")

    def _add_class(self, cls: cst.ClassDef, outer: str) -> None:
        name = f"{outer}.{cls.name.value}" if outer else cls.name.value
        self.classes[name] = cls
        self.methods[name] = {}
        self.bases[name] = [d for d in (dotted_name(a.value) for a in cls.bases) if d]
        for stmt in cls.body.body:
            if type(stmt) is cst.FunctionDef:
                self.methods[name][stmt.name.value] = stmt
            elif type(stmt) is cst.ClassDef:
                self._add_class(stmt, name)

    def step_state(self, cls: str) -> frozenset[str]:
        """Attributes a recurrent cell keeps between the steps of one sequence and clears in
        its `reset()` (MXNet's `ZoneoutCell._prev_output`, a dropout mask shared by the steps):
        `unroll()` resets the cell first, and inside a hybridized network every step runs in
        one trace, so the state is part of that graph, not left over from another call."""
        found = self._step_state.get(cls)
        if found is None:
            found = self._step_state[cls] = self._reset_writes(cls)
        return found

    def _reset_writes(self, cls: str) -> frozenset[str]:
        chain = self._class_chain(cls)
        if not any(
            base.rsplit(".", 1)[-1].endswith("Cell") for name in chain for base in self.bases[name]
        ):
            return frozenset()
        reset = next((self.methods[c]["reset"] for c in chain if "reset" in self.methods[c]), None)
        if reset is None:
            return frozenset()
        attrs: set[str] = set()
        for node in iter_nodes(reset.body, stop=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            if type(node) is cst.Assign:
                for target in node.targets:
                    attr = block_attribute(target.target, direct=True)
                    if attr is not None:
                        attrs.add(attr)
        return frozenset(attrs)

    def imperative_flags(self, cls: str) -> frozenset[str]:
        """The block's attributes that must be true for it to be hybridizable: one named so
        (`HYBRIDIZABLE_FLAG`), and one its constructor asserts is set whenever that flag is
        (`assert use_batch_box_nms or not hybridizable`). A branch where one is false is the
        imperative path of a block built not to be hybridized, like `if F is nd:`."""
        found = self._flags.get(cls)
        if found is None:
            found = self._flags[cls] = self._read_flags(cls)
        return found

    def _read_flags(self, cls: str) -> frozenset[str]:
        init = next(
            (
                self.methods[c]["__init__"]
                for c in self._class_chain(cls)
                if "__init__" in self.methods[c]
            ),
            None,
        )
        if init is None:
            return frozenset()
        # The switch's own attributes, and the attributes set from the constructor's names.
        stored: dict[str, set[str]] = {}
        flags: set[str] = set()
        asserts: list[cst.Assert] = []
        for node in typed_nodes(init.body, _ASSIGN_OR_ASSERT, NESTED_SCOPES):
            if type(node) is cst.Assert:
                asserts.append(node)
                continue
            for target in node.targets:  # type: ignore[attr-defined]
                attr = block_attribute(target.target, direct=True)
                if attr is None:
                    continue
                if HYBRIDIZABLE_FLAG.fullmatch(attr):
                    flags.add(attr)
                if type(node.value) is cst.Name:  # type: ignore[attr-defined]
                    stored.setdefault(node.value.value, set()).add(attr)  # type: ignore[attr-defined]
        if not flags:
            return frozenset()
        switches = {p for p, attrs in stored.items() if attrs & flags} | flags

        def flag_off(node: cst.BaseExpression) -> bool:
            if type(node) is not cst.UnaryOperation or type(node.operator) is not cst.Not:
                return False
            inner = node.expression
            name = inner.value if type(inner) is cst.Name else block_attribute(inner, direct=True)
            return name in switches

        # `assert needed or not hybridizable`: `needed` is on whenever the switch is.
        for node in asserts:
            test = node.test
            if type(test) is not cst.BooleanOperation or type(test.operator) is not cst.Or:
                continue
            sides = (test.left, test.right)
            needed = next((a for a, b in (sides, sides[::-1]) if flag_off(b)), None)
            if type(needed) is cst.Name:
                flags.update(stored.get(needed.value, ()))
            elif needed is not None and (attr := block_attribute(needed, direct=True)):
                flags.add(attr)
        return frozenset(flags)

    def _class_chain(self, cls: str) -> list[str]:
        """`cls` and its same-file base classes, nearest first."""
        chain: list[str] = []
        todo = [cls]
        while todo:
            name = todo.pop(0)
            if name in self.methods and name not in chain:
                chain.append(name)
                todo.extend(self.bases.get(name, ()))
        return chain

    def method_qualname(
        self, cls: str, method: str, seen: frozenset[str] = frozenset()
    ) -> str | None:
        """`self.method` of `cls`, looked up along same-file base classes."""
        if cls in seen or cls not in self.methods:
            return None
        if method in self.methods[cls]:
            return self.ctx.qualname(f"{cls}.{method}")
        for base in self.bases.get(cls, ()):
            found = self.method_qualname(base, method, seen | {cls})
            if found is not None:
                return found
        return None

    def function_for(self, qual: str) -> tuple[cst.FunctionDef, str | None] | None:
        """The definition of a same-file function or method (and its class) by qualname."""
        prefix = self.ctx.qualname("")
        local = qual[len(prefix) :] if prefix and qual.startswith(prefix) else qual
        if local in self.functions:
            return self.functions[local], None
        cls, _, method = local.rpartition(".")
        if cls in self.methods and method in self.methods[cls]:
            return self.methods[cls][method], cls
        return None


def _symbolic_twin(op: str) -> bool:
    """Whether `mx.sym` has the operator (`random.uniform` in `sym.random`): with no twin, the
    `F.` spelling fails once hybridized (MXL111), so it is no fix."""
    sub, _, leaf = op.rpartition(".")
    return leaf in api().names(f"sym.{sub}" if sub else "sym")
