"""What one Python file sets up for distributed training, as the MXL802-MXL806 rules read it:
the kvstores it creates (with the types they can have), its `gluon.Trainer`s (kvstore,
`update_on_kvstore`, compression, optimizer arguments) and the calls made on them, Horovod (or
BytePS) use, and the `os.environ` writes of kvstore variables.

Values are followed through the file's bindings (`mxlint.semantic.bindings`): a kvstore type is
known when every assignment that can reach the argument is a literal (`kv = mx.kv.create(
"dist_sync")`, `KV = "dist_async"`, a conditional between literals); a command-line flag
(`args.kvstore`), a parameter or anything computed is unknown, and the rules stay silent on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from mxlint.names import dotted_name
from mxlint.walker import iter_nodes, nodes_of

if TYPE_CHECKING:
    from mxlint.checker import FileContext
    from mxlint.semantic.bindings import Binding, Scope

#: `mx.kv.create` and its other spellings (`knowledge.canonical` keeps `kvstore` apart).
KV_CREATE = frozenset(
    {
        "mxnet.kv.create",
        "mxnet.kvstore.create",
        "mxnet.kvstore.base.create",
        "mxnet.kvstore.kvstore.create",
    }
)
TRAINER = "mxnet.gluon.Trainer"
#: `gluon.Trainer(params, optimizer, optimizer_params, kvstore, compression_params,
#: update_on_kvstore)` in MXNet 1.9.1.
TRAINER_PARAMS = (
    "params",
    "optimizer",
    "optimizer_params",
    "kvstore",
    "compression_params",
    "update_on_kvstore",
)
#: Horovod and BytePS front ends for MXNet: their trainers reduce across workers themselves.
COLLECTIVES = ("horovod.mxnet", "byteps.mxnet")
_COLLECTIVE_CALLS = frozenset(
    {"DistributedTrainer", "DistributedOptimizer", "broadcast_parameters"}
)
#: Trainer methods whose use with a kvstore that updates on the servers MXNet rejects.
LOCAL_UPDATE_METHODS = frozenset({"allreduce_grads", "update"})
STATE_METHODS = frozenset({"save_states", "load_states"})
_DEPTH = 6


def is_dist(kind: str) -> bool:
    return kind.startswith("dist")


@dataclass(frozen=True)
class Given:
    """An argument as written: the node a finding points at (the `Arg`, or the entry of a
    `**kwargs` dict) and its value."""

    node: cst.CSTNode
    value: cst.BaseExpression


@dataclass
class TrainerCall:
    """One `gluon.Trainer(...)`: what its arguments can be (None: unknown)."""

    call: cst.Call
    args: dict[str, Given]
    #: Possible kvstore types ("device" by default, "none" for None); None when unknown.
    kvstore: frozenset[str] | None
    #: Possible `update_on_kvstore` values (None: the default).
    update: frozenset[object] | None
    #: `**kwargs` in the call: any argument not written may be in it.
    open: bool = False


@dataclass
class FileModel:
    """The distributed-training facts of one file."""

    ctx: FileContext
    trainers: list[TrainerCall] = field(default_factory=list)
    #: `mx.kv.create(...)` calls with their possible types.
    creates: list[tuple[cst.Call, frozenset[str] | None]] = field(default_factory=list)
    #: Calls of Horovod/BytePS's trainer, optimizer or broadcast.
    collectives: list[cst.Call] = field(default_factory=list)
    #: `X.method(...)` calls whose receiver is one of the file's Trainers, with it.
    trainer_calls: list[tuple[cst.Call, str, list[TrainerCall]]] = field(default_factory=list)
    calls: list[cst.Call] = field(default_factory=list)
    _by_call: dict[int, TrainerCall] = field(default_factory=dict)

    # -- values --------------------------------------------------------------------------

    def bindings_of(self, node: cst.BaseExpression) -> list[Binding] | None:
        """What `node` (a name, or `self.attr` in a method) may have been bound to; None when
        a binding is not an assignment of a known expression."""
        ctx = self.ctx
        if type(node) is cst.Name:
            scope = ctx.bindings.scope_at(node).lookup(node.value)
            if scope is None:
                return None
            found = scope.names.get(node.value, [])
        elif (
            type(node) is cst.Attribute
            and type(node.value) is cst.Name
            and node.value.value == "self"
        ):
            cls = _class_scope(ctx.bindings.scope_at(node))
            if cls is None:
                return None
            found = cls.attributes.get(node.attr.value, [])
        else:
            return None
        if not found or any(b.kind not in ("assignment", "attribute") for b in found):
            return None
        if any(b.value is None for b in found):
            return None
        return found

    def literals(self, node: cst.BaseExpression, depth: int = 0) -> frozenset[object] | None:
        """The Python literals `node` can evaluate to (strings, numbers, True/False/None)."""
        if depth > _DEPTH:
            return None
        kind = type(node)
        if kind is cst.SimpleString:
            assert isinstance(node, cst.SimpleString)
            value = node.evaluated_value
            return frozenset({value if isinstance(value, str) else value.decode()})
        if kind is cst.Integer:
            assert isinstance(node, cst.Integer)
            return frozenset({node.evaluated_value})
        if kind is cst.Name:
            assert isinstance(node, cst.Name)
            if node.value in ("True", "False", "None"):
                return frozenset({{"True": True, "False": False, "None": None}[node.value]})
        if kind is cst.Subscript:
            assert isinstance(node, cst.Subscript)
            entry = self._entry(node, depth)
            return self.literals(entry, depth + 1) if entry is not None else None
        if kind is cst.IfExp:
            assert isinstance(node, cst.IfExp)
            body = self.literals(node.body, depth + 1)
            orelse = self.literals(node.orelse, depth + 1)
            return body | orelse if body is not None and orelse is not None else None
        found = self.bindings_of(node)
        if found is None:
            return None
        out: frozenset[object] = frozenset()
        for b in found:
            assert b.value is not None
            one = self.literals(b.value, depth + 1)
            if one is None:
                return None
            out |= one
        return out

    def _entry(self, node: cst.Subscript, depth: int) -> cst.BaseExpression | None:
        """`CONFIG["kvstore"]` where the file binds CONFIG once to a dict literal."""
        if len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
            return None
        key = node.slice[0].slice.value
        if type(key) is not cst.SimpleString or depth > _DEPTH:
            return None
        entries = _dict_entries(self, node.value)
        given = entries.get(str(key.evaluated_value)) if entries else None
        return given.value if given is not None else None

    def kv_types(self, node: cst.BaseExpression, depth: int = 0) -> frozenset[str] | None:
        """The kvstore types `node` can be: a type string, `mx.kv.create(...)`, None, or a name
        bound to those."""
        if depth > _DEPTH:
            return None
        if type(node) is cst.Call:
            if self.ctx.resolve(node.func) not in KV_CREATE:
                return None
            arg = argument(node, ("name",))
            if arg is None:
                return frozenset({"local"})
            return self._type_strings(arg.value, depth + 1)
        if type(node) is cst.IfExp:
            body = self.kv_types(node.body, depth + 1)
            orelse = self.kv_types(node.orelse, depth + 1)
            return body | orelse if body is not None and orelse is not None else None
        literal = self._type_strings(node, depth + 1)
        if literal is not None:
            return literal
        found = self.bindings_of(node)
        if found is None:
            return None
        out: frozenset[str] = frozenset()
        for b in found:
            assert b.value is not None
            one = self.kv_types(b.value, depth + 1)
            if one is None:
                return None
            out |= one
        return out

    def _type_strings(self, node: cst.BaseExpression, depth: int) -> frozenset[str] | None:
        values = self.literals(node, depth)
        if values is None:
            return None
        out: set[str] = set()
        for v in values:
            if v is None:
                out.add("none")
            elif isinstance(v, str):
                out.add(v.lower())
            else:
                return None
        return frozenset(out)

    # -- the file ------------------------------------------------------------------------

    def trainer_of(self, call: cst.Call) -> TrainerCall | None:
        return self._by_call.get(id(call))

    def receivers(self, node: cst.BaseExpression) -> list[TrainerCall] | None:
        """The file's Trainers `node` is bound to, when every binding is one."""
        found = self.bindings_of(node)
        if found is None:
            return None
        out: list[TrainerCall] = []
        for b in found:
            value = b.value
            trainer = self._by_call.get(id(value)) if type(value) is cst.Call else None
            if trainer is None:
                return None
            out.append(trainer)
        return out

    def uses_collective(self) -> bool:
        return bool(self.collectives)


def _class_scope(scope: Scope) -> Scope | None:
    """The class of the method `scope` is in."""
    while scope.parent is not None and scope.kind != "function":
        scope = scope.parent
    parent = scope.parent
    return parent if parent is not None and parent.kind == "class" else None


def argument(call: cst.Call, names: tuple[str, ...], position: int = 0) -> cst.Arg | None:
    """The argument for parameter `names[0]` at `position` (or by any of `names`)."""
    positional = 0
    for arg in call.args:
        if arg.star:
            continue
        if arg.keyword is None:
            if positional == position:
                return arg
            positional += 1
        elif arg.keyword.value in names:
            return arg
    return None


def trainer_arguments(model: FileModel, call: cst.Call) -> tuple[dict[str, Given], bool]:
    """Trainer arguments by parameter name (a `**kwargs` dict the file writes included), and
    whether `*args`/other `**kwargs` may hide others."""
    out: dict[str, Given] = {}
    hidden = False
    positional = 0
    for arg in call.args:
        if arg.star == "**":
            entries = _dict_entries(model, arg.value)
            if entries is None:
                hidden = True
            else:
                out.update(entries)
            continue
        if arg.star:
            hidden = True
            continue
        if arg.keyword is None:
            if positional < len(TRAINER_PARAMS):
                out[TRAINER_PARAMS[positional]] = Given(arg, arg.value)
            positional += 1
        else:
            out[arg.keyword.value] = Given(arg, arg.value)
    return out, hidden


def _dict_entries(model: FileModel, node: cst.BaseExpression) -> dict[str, Given] | None:
    """The entries of a dict literal, `dict(k=v)`, or a name bound once to one of those."""
    if type(node) is cst.Dict:
        out: dict[str, Given] = {}
        for el in node.elements:
            if type(el) is not cst.DictElement or type(el.key) is not cst.SimpleString:
                return None
            key = el.key.evaluated_value
            if not isinstance(key, str):
                return None
            out[key] = Given(el, el.value)
        return out
    if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "dict":
        out = {}
        for arg in node.args:
            if arg.keyword is None or arg.star:
                return None
            out[arg.keyword.value] = Given(arg, arg.value)
        return out
    found = model.bindings_of(node)
    if found is None or len(found) != 1 or found[0].value is None:
        return None
    return _dict_entries(model, found[0].value)


def build(ctx: FileContext) -> FileModel:
    """Read the file's kvstores, Trainers, Horovod calls and Trainer method calls."""
    model = FileModel(ctx)
    calls = nodes_of(ctx.module, cst.Call)
    model.calls = calls  # type: ignore[assignment]
    for call in calls:
        assert isinstance(call, cst.Call)
        name = ctx.resolve(call.func)
        if name is None:
            continue
        if name == TRAINER:
            args, hidden = trainer_arguments(model, call)
            kv_arg = args.get("kvstore")
            if kv_arg is not None:
                kvstore = model.kv_types(kv_arg.value)
            else:
                kvstore = None if hidden else frozenset({"device"})
            update_arg = args.get("update_on_kvstore")
            if update_arg is not None:
                update = model.literals(update_arg.value)
            else:
                update = None if hidden else frozenset({None})
            trainer = TrainerCall(call, args, kvstore, update, hidden)
            model.trainers.append(trainer)
            model._by_call[id(call)] = trainer
        elif name in KV_CREATE:
            model.creates.append((call, model.kv_types(call)))
        elif name.startswith(COLLECTIVES) and name.rsplit(".", 1)[-1] in _COLLECTIVE_CALLS:
            model.collectives.append(call)
    # The trainer or optimizer names the framework better than a broadcast does.
    model.collectives.sort(key=lambda c: "broadcast" in (ctx.resolve(c.func) or ""))
    if model.trainers:
        for call in calls:
            assert isinstance(call, cst.Call)
            func = call.func
            if type(func) is not cst.Attribute:
                continue
            found = model.receivers(func.value)
            if found:
                model.trainer_calls.append((call, func.attr.value, found))
    return model


def environ_writes(ctx: FileContext) -> list[tuple[str, cst.CSTNode]]:
    """(variable, node of its name) for each `os.environ[...] = `, `os.environ.update(...)`,
    `os.environ.setdefault(...)` and `os.putenv(...)` with a literal name."""
    out: list[tuple[str, cst.CSTNode]] = []
    for node in iter_nodes(ctx.module):
        if type(node) is cst.Assign:
            assert isinstance(node, cst.Assign)
            for target in node.targets:
                t = target.target
                if type(t) is cst.Subscript and ctx.resolve(t.value) == "os.environ":
                    element = t.slice[0].slice if len(t.slice) == 1 else None
                    if type(element) is cst.Index and type(element.value) is cst.SimpleString:
                        value = element.value.evaluated_value
                        if isinstance(value, str):
                            out.append((value, element.value))
        elif type(node) is cst.Call:
            assert isinstance(node, cst.Call)
            func = node.func
            if type(func) is not cst.Attribute:
                continue
            owner = ctx.resolve(func.value)
            method = func.attr.value
            if (owner == "os.environ" and method == "setdefault") or (
                owner == "os" and method == "putenv"
            ):
                if node.args and type(node.args[0].value) is cst.SimpleString:
                    value = node.args[0].value.evaluated_value  # type: ignore[union-attr]
                    if isinstance(value, str):
                        out.append((value, node.args[0].value))
            elif owner == "os.environ" and method == "update":
                for arg in node.args:
                    if arg.keyword is not None:
                        out.append((arg.keyword.value, arg.keyword))
                    elif type(arg.value) is cst.Dict:
                        for el in arg.value.elements:
                            if type(el) is cst.DictElement and type(el.key) is cst.SimpleString:
                                value = el.key.evaluated_value
                                if isinstance(value, str):
                                    out.append((value, el.key))
    return out


def callee_name(call: cst.Call) -> str | None:
    """`trainer.step` for `trainer.step(...)`, the dotted text of any call target."""
    return dotted_name(call.func)
