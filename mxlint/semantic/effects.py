"""Function summaries: what calling a function does, so a rule looking at a call site knows.

A rule that stops at a call it cannot see into guesses, and guesses wrong both ways: a loop whose
helper reads the loss back (`return loss.mean().asscalar()`) does synchronise; a network built
by a helper that hybridizes it is hybridized; an evaluation function that wraps its forward
passes in `autograd.pause()` records nothing. Each function is summarised once, on first use,
from its own statements (nested definitions are their own functions); calls into functions of
the same file are folded in here, calls into other files of the run by the project index.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Protocol, Union

import libcst as cst

from mxlint import knowledge
from mxlint.names import ImportMap, dotted_name, last_name, names_a_network, target_names
from mxlint.walker import NESTED_SCOPES, iter_nodes

#: In `Effects.hybridizes`: the function returns a network it hybridized.
RETURNED = "<return>"

#: Methods of MXNet metrics and Module that read values back to the host.
_METRIC_READS = frozenset({"update_metric", "get_name_value"})

#: Where a value comes from, or the function a value is handed to: ("local", name) a function
#: or method (`Class.method`) of the same file, ("class", name) a class of the same file
#: constructed, ("project", resolved name) a function or class of another file of the run,
#: ("library", resolved name) a library's, ("method", name) a method of that name called on
#: an object of unknown class (the run asks the project's classes), ("unknown", "") anything
#: no summary shows (a parameter, an attribute, a callable it cannot resolve).
Origin = tuple[str, str]
UNKNOWN: Origin = ("unknown", "")
#: A slot of a callee: its positional parameter index, or the keyword an argument is passed by.
Slot = Union[int, str]

_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class Effects:
    """What one call of a function does, as far as its own code shows."""

    #: It blocks until MXNet has computed something: a readback (`.asscalar()`, `.asnumpy()`,
    #: `float(x)` of a tensor), `waitall()`, a metric update.
    syncs: bool = False
    #: Parameters whose network it hybridizes, and `RETURNED` when it returns one it hybridized.
    hybridizes: frozenset[str] = frozenset()
    #: Its network calls run under `autograd.pause()` / `predict_mode()`: nothing it computes is
    #: recorded, and layers run in inference mode.
    inference: bool = False
    #: It returns what a network it was given computes (`return net(x)`), outside any pause:
    #: a caller's "forward" helper.
    returns_forward: bool = False
    #: A method that returns what a network the object holds computes (`return self.net(x)`),
    #: outside any pause: `self._forward(batch)` is a forward pass.
    returns_own_forward: bool = False
    #: It records (a `with autograd.record():` block): what it returns may be in a graph.
    records: bool = False
    #: It runs a network it was given outside any pause (`net(x)` on a parameter).
    runs_forward: bool = False
    #: Parameters it calls `.update(labels, preds)` on outside any pause: what a caller
    #: passes there is updated as an evaluation metric (`def log_stats(metric, y, out)`).
    updates_metric: frozenset[str] = frozenset()
    #: Calls into other files of the run (resolved names), whose effects add to these.
    external: tuple[str, ...] = field(default=(), compare=False)
    #: Its positional parameters, in order (how a caller's argument maps to `hybridizes`).
    params: tuple[str, ...] = field(default=(), compare=False)
    #: How each value it returns is made (a call's `Origin`; UNKNOWN for a parameter, an
    #: attribute, any other expression): a network made by a function that hybridizes it
    #: comes back hybridized.
    returned_from: tuple[Origin, ...] = field(default=(), compare=False)
    #: (name, callee, slot): a parameter (by name) or a returned value (`RETURNED`) handed to
    #: a callee, which may hybridize it (a callee UNKNOWN: an unknown method called on it).
    hands: tuple[tuple[str, Origin, Slot], ...] = field(default=(), compare=False)

    def union(self, other: Effects) -> Effects:
        """What either of two functions may do (a name that could be either)."""
        return Effects(
            syncs=self.syncs or other.syncs,
            hybridizes=self.hybridizes | other.hybridizes,
            inference=self.inference or other.inference,
            returns_forward=self.returns_forward or other.returns_forward,
            returns_own_forward=self.returns_own_forward or other.returns_own_forward,
            records=self.records or other.records,
            runs_forward=self.runs_forward or other.runs_forward,
            external=tuple(dict.fromkeys(self.external + other.external)),
        )

    def merged(self, other: Effects) -> Effects:
        """These effects after a call whose effects are `other` (only synchronisation and
        recording carry over: what a callee hybridizes or pauses is its own)."""
        if (other.syncs and not self.syncs) or (other.records and not self.records):
            return replace(
                self, syncs=self.syncs or other.syncs, records=self.records or other.records
            )
        return self


def _params(fn: cst.FunctionDef) -> list[str]:
    p = fn.params
    out = [x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)]
    for star in (p.star_arg, p.star_kwarg):
        if isinstance(star, cst.Param):
            out.append(star.name.value)
    return out


def _own_nodes(fn: cst.FunctionDef) -> Iterator[cst.CSTNode]:
    """The nodes of a function's body, not of functions or classes defined inside it."""
    yield from iter_nodes(fn.body, stop=NESTED_SCOPES)


def _returned_names(values: list[cst.BaseExpression]) -> set[str]:
    """Names returned as such or as an element of a returned tuple."""
    out: set[str] = set()
    for value in values:
        items = value.elements if type(value) is cst.Tuple else ()
        for expr in [value, *(el.value for el in items)]:
            if type(expr) is cst.Name:
                out.add(expr.value)
    return out


def _recording(call: cst.BaseExpression, imports: ImportMap) -> bool:
    """`autograd.record()` (see `knowledge.recording_block`)."""
    if type(call) is not cst.Call:
        return False
    return knowledge.recording_block(imports.resolve(call.func), last_name(call.func)) is not None


def _pausing(call: cst.BaseExpression, imports: ImportMap) -> bool:
    if type(call) is not cst.Call:
        return False
    name = imports.resolve(call.func)
    if name is None:
        return last_name(call.func) in ("pause", "predict_mode")
    return name in knowledge.AUTOGRAD_PAUSE


def is_sync_call(call: cst.Call, imports: ImportMap) -> bool:
    """A call that waits for MXNet's engine by itself (whatever it is called on)."""
    func = call.func
    if type(func) is cst.Attribute:
        method = func.attr.value
        if method in knowledge.SYNC_METHODS or method in _METRIC_READS:
            return True
        # EvalMetric.update(labels, preds) reads its inputs with asnumpy().
        if method == "update" and len(call.args) >= 2:
            return True
    return imports.resolve(func) in knowledge.SYNC_FUNCTIONS


def _converts_tensor(call: cst.Call, params: set[str]) -> bool:
    """`float(loss)` / `int(x.sum())` on a parameter or a computed value: a readback when it is
    a tensor. `float(args.lr)` (an attribute) or a literal is not taken for one."""
    func = call.func
    if type(func) is not cst.Name or func.value not in ("float", "int") or len(call.args) != 1:
        return False
    arg = call.args[0].value
    if type(arg) is cst.Name:
        return arg.value in params
    if type(arg) is cst.Subscript:
        return type(arg.value) is cst.Name and arg.value.value in params
    return type(arg) is cst.Call and type(arg.func) is cst.Attribute


def call_origin(
    call: cst.Call,
    imports: ImportMap,
    local: frozenset[str] = frozenset(),
    methods: frozenset[str] = frozenset(),
    cls: str | None = None,
) -> tuple[Origin, bool]:
    """Where `call`'s result comes from, and whether it is a method called on an instance
    (`self.build()`: its first parameter is implicit). `local` names the file's functions,
    `methods` its methods (`Class.name`) and classes (`Class`), `cls` the class around."""
    func = call.func
    if type(func) is cst.Name:
        if func.value in local:
            return ("local", func.value), False
        if func.value in methods:
            return ("class", func.value), False
    elif type(func) is cst.Attribute and type(func.value) is cst.Name:
        owner, attr = func.value.value, func.attr.value
        if owner == "self" and cls is not None and f"{cls}.{attr}" in methods:
            return ("local", f"{cls}.{attr}"), True
        if owner in methods and f"{owner}.{attr}" in methods:
            return ("local", f"{owner}.{attr}"), False
    name = imports.resolve(func)
    if name is None:
        if type(func) is cst.Name and func.value in _BUILTINS:
            return ("library", f"builtins.{func.value}"), False
        return UNKNOWN, False
    if knowledge.is_library(name):
        return ("library", name), False
    return ("project", name), False


def summarise(
    fn: cst.FunctionDef,
    imports: ImportMap,
    local: frozenset[str],
    methods: frozenset[str] = frozenset(),
    cls: str | None = None,
) -> Effects:
    """The effects of `fn` from its own statements (one walk); `local` names the functions of
    its file (their calls are folded in by `FileEffects`, not here), `methods` its methods
    and classes, `cls` the class `fn` is a method of."""
    positional = _params(fn)
    params = set(positional)
    #: How each name of the function was bound: the call it holds the result of, or UNKNOWN.
    made: dict[str, list[Origin]] = {name: [UNKNOWN] for name in positional}
    #: Names handed to callees (as an argument, or an unknown method called on them).
    handed: list[tuple[str, Origin, Slot]] = []
    syncs = False
    hybridized: list[str] = []
    external: list[str] = []
    paused: set[cst.CSTNode] = set()
    forward_outside = False
    has_pause = False
    returns: list[cst.BaseExpression] = []
    #: Returned values outside any pause, and names bound to a parameter network's output.
    live_returns: list[cst.BaseExpression] = []
    outputs: set[str] = set()
    #: Names bound to the output of a network the object holds (a method's `self.net(x)`).
    own_outputs: set[str] = set()
    metric_params: set[str] = set()
    records = False
    for node in _own_nodes(fn):
        if type(node) is cst.With and any(_recording(item.item, imports) for item in node.items):
            records = True
        if type(node) is cst.With and any(_pausing(item.item, imports) for item in node.items):
            has_pause = True
            paused.update(iter_nodes(node.body, stop=NESTED_SCOPES))
            continue
        if type(node) is cst.Return:
            if node.value is not None:
                returns.append(node.value)
                if node not in paused:
                    live_returns.append(node.value)
            continue
        if type(node) is cst.Assign:
            target = node.targets[0].target
            if len(node.targets) == 1 and type(target) is cst.Name and node not in paused:
                if _runs_parameter(node.value, params):
                    outputs.add(target.value)
                elif cls is not None and _runs_member(node.value):
                    own_outputs.add(target.value)
            for each in node.targets:
                origin = UNKNOWN
                if type(each.target) is cst.Name and type(node.value) is cst.Call:
                    origin = call_origin(node.value, imports, local, methods, cls)[0]
                for bound in target_names(each.target):
                    made.setdefault(bound, []).append(origin)
            continue
        if type(node) is not cst.Call:
            continue
        func = node.func
        if (
            type(func) is cst.Attribute
            and func.attr.value == "update"
            and type(func.value) is cst.Name
            and func.value.value in params
            and len(node.args) == 2
            and node not in paused
        ):
            metric_params.add(func.value.value)
        _note_hands(node, imports, local, methods, cls, handed)
        if not syncs and (is_sync_call(node, imports) or _converts_tensor(node, params)):
            syncs = True
        if type(func) is cst.Attribute and func.attr.value == "hybridize" and not _inactive(node):
            owner = dotted_name(func.value)
            if owner is not None:
                hybridized.append(owner)
        if type(func) is cst.Name and func.value in params and node not in paused:
            forward_outside = True  # `net(x)` on a network the caller passed in
        if type(func) is cst.Name and func.value in local:
            continue
        name = imports.resolve(func)
        if name is not None and not knowledge.is_library(name):
            external.append(name)
    returned = _returned_names(returns)
    hybridizes = {owner for owner in hybridized if owner in params}
    if any(owner in returned for owner in hybridized):
        hybridizes.add(RETURNED)
    returned_from: list[Origin] = []
    for value in returns:
        if type(value) is cst.Call:
            returned_from.append(call_origin(value, imports, local, methods, cls)[0])
        elif type(value) is cst.Name:
            returned_from.extend(made.get(value.value, [UNKNOWN]))
        else:
            returned_from.append(UNKNOWN)
    returned_names = {v.value for v in returns if type(v) is cst.Name}
    hands: list[tuple[str, Origin, Slot]] = []
    for name, callee, slot in handed:
        if name in returned_names:
            hands.append((RETURNED, callee, slot))
        if name in params:
            hands.append((name, callee, slot))
    return Effects(
        syncs=syncs,
        hybridizes=frozenset(hybridizes),
        inference=has_pause and not forward_outside,
        # A "forward" helper: everything it returns is what the network it was given computes.
        returns_forward=bool(live_returns)
        and all(
            _runs_parameter(value, params) or (type(value) is cst.Name and value.value in outputs)
            for value in live_returns
        ),
        returns_own_forward=cls is not None
        and bool(live_returns)
        and all(
            _runs_member(value) or (type(value) is cst.Name and value.value in own_outputs)
            for value in live_returns
        ),
        records=records,
        runs_forward=forward_outside,
        updates_metric=frozenset(metric_params),
        external=tuple(dict.fromkeys(external)),
        params=tuple(positional),
        returned_from=tuple(dict.fromkeys(returned_from)),
        hands=tuple(dict.fromkeys(hands)),
    )


def _inactive(call: cst.Call) -> bool:
    """`hybridize(active=False)` (or `hybridize(False)`): turns hybridization off."""
    for i, arg in enumerate(call.args):
        if (arg.keyword is not None and arg.keyword.value == "active") or (
            arg.keyword is None and i == 0
        ):
            return type(arg.value) is cst.Name and arg.value.value == "False"
    return False


#: Methods called on a network that neither hybridize it nor hand it to code that might.
_INERT_ON_NETWORK = knowledge.INERT_BLOCK_METHODS | knowledge.FORWARD_METHODS


def _note_hands(
    call: cst.Call,
    imports: ImportMap,
    local: frozenset[str],
    methods: frozenset[str],
    cls: str | None,
    handed: list[tuple[str, Origin, Slot]],
) -> None:
    """Names `call` hands on: passed as an argument to a callee that is not a library's, or
    receiving a method call that is neither `hybridize` nor one that leaves a network as it is."""
    func = call.func
    if type(func) is cst.Attribute and type(func.value) is cst.Name:
        method = func.attr.value
        if method != "hybridize" and method not in _INERT_ON_NETWORK:
            origin, bound = call_origin(call, imports, local, methods, cls)
            if bound:  # `self.setup()`: the method's own first parameter
                handed.append((func.value.value, origin, 0))
            elif origin[0] != "local":  # `Class.create(...)` is a call, not a method of it
                handed.append((func.value.value, ("method", method), 0))
    if not any(type(arg.value) is cst.Name for arg in call.args):
        return
    origin, bound = call_origin(call, imports, local, methods, cls)
    if origin[0] == "library":
        return
    if origin[0] == "class":
        bound = True  # `Class(net)`: the argument is `__init__`'s second parameter
    first = 1 if bound else 0
    for arg in call.args:
        if arg.star or type(arg.value) is not cst.Name:
            continue
        slot = argument_slot(call, arg, first)
        if slot is not None:
            handed.append((arg.value.value, origin, slot))
        else:
            handed.append((arg.value.value, UNKNOWN, 0))


def argument_slot(call: cst.Call, arg: cst.Arg, first: int = 0) -> Slot | None:
    """The slot of the callee `arg` fills: its keyword, or its position counted from `first`
    (1 for a method's bound `self`); None for a position after `*args`."""
    if arg.keyword is not None:
        return arg.keyword.value
    position = first
    for each in call.args:
        if each is arg:
            return position
        if each.star:
            return None
        if each.keyword is None:
            position += 1
    return None


def _runs_parameter(value: cst.BaseExpression | None, params: set[str]) -> bool:
    """`net(x)` / `net.forward(x)` where `net` is a parameter."""
    if type(value) is not cst.Call:
        return False
    func = value.func
    if type(func) is cst.Attribute and func.attr.value == "forward":
        func = func.value
    return type(func) is cst.Name and func.value in params


def _runs_member(value: cst.BaseExpression | None) -> bool:
    """`self.net(x)` / `self.model.forward(x)`: a network the object holds, run on data."""
    if type(value) is not cst.Call:
        return False
    func = value.func
    if type(func) is cst.Attribute and func.attr.value == "forward":
        func = func.value
    if type(func) is not cst.Attribute or type(func.value) is not cst.Name:
        return False
    return func.value.value == "self" and names_a_network(func.attr.value)


class FileEffects:
    """The effects of the functions of one file (module-level functions and methods, by
    `name` or `Class.name`), summarised on first use; calls within the file are followed."""

    def __init__(self, module: cst.Module, imports: ImportMap) -> None:
        self.imports = imports
        self.functions: dict[str, cst.FunctionDef] = {}
        for stmt in module.body:
            if type(stmt) is cst.FunctionDef:
                self.functions[stmt.name.value] = stmt
            elif type(stmt) is cst.ClassDef and type(stmt.body) is cst.IndentedBlock:
                for inner in stmt.body.body:
                    if type(inner) is cst.FunctionDef:
                        self.functions[f"{stmt.name.value}.{inner.name.value}"] = inner
        self._local = frozenset(n for n in self.functions if "." not in n)
        #: Methods (`Class.name`) and classes of the file.
        self._methods = frozenset(n for n in self.functions if "." in n) | frozenset(
            stmt.name.value for stmt in module.body if type(stmt) is cst.ClassDef
        )
        self._own: dict[str, Effects] = {}
        self._folded: dict[str, Effects] = {}

    def own(self, name: str) -> Effects | None:
        """What the function's own statements do (calls within the file not followed)."""
        if name not in self.functions:
            return None
        if name not in self._own:
            cls = name.rpartition(".")[0] or None
            self._own[name] = summarise(
                self.functions[name], self.imports, self._local, self._methods, cls
            )
        return self._own[name]

    def origin(self, call: cst.Call, cls: str | None = None) -> Origin:
        """Where the result of `call` (in this file, inside class `cls`) comes from."""
        return call_origin(call, self.imports, self._local, self._methods, cls)[0]

    def of(self, name: str) -> Effects | None:
        """The function's effects with those of the functions of this file it calls."""
        if name in self._folded:
            return self._folded[name]
        effects = self.own(name)
        if effects is None:
            return None
        seen = {name}
        todo = [name]
        external = list(effects.external)
        while todo and not (effects.syncs and effects.records):
            current = todo.pop()
            for callee in self._local_calls(current):
                if callee in seen:
                    continue
                seen.add(callee)
                inner = self.own(callee)
                if inner is not None:
                    effects = effects.merged(inner)
                    external.extend(inner.external)
                    todo.append(callee)
        effects = replace(effects, external=tuple(dict.fromkeys(external)))
        self._folded[name] = effects
        return effects

    def _local_calls(self, name: str) -> list[str]:
        fn = self.functions[name]
        return [
            node.func.value
            for node in _own_nodes(fn)
            if type(node) is cst.Call
            and type(node.func) is cst.Name
            and node.func.value in self._local
        ]

    def of_call(self, call: cst.Call, cls: str | None = None) -> Effects | str | None:
        """What a call does: a function of this file gives its effects (and `self.m(...)` in
        a method of class `cls`, that class's method); a function of another file of the
        project gives its resolved name (the run resolves it); a library or an unknown
        callable gives None."""
        func = call.func
        if type(func) is cst.Name and func.value in self._local:
            return self.of(func.value)
        if (
            cls is not None
            and type(func) is cst.Attribute
            and type(func.value) is cst.Name
            and func.value.value == "self"
            and f"{cls}.{func.attr.value}" in self.functions
        ):
            return self.of(f"{cls}.{func.attr.value}")
        name = self.imports.resolve(func)
        if name is None or knowledge.is_library(name):
            return None
        return name

    # -- what comes back hybridized --------------------------------------------------------

    def result_hybridized(
        self, name: str, project: HybridizedAcrossFiles | None = None
    ) -> bool | None:
        """Whether what calling the function `name` returns is a network hybridized on the way
        (by it, by the function it got the network from, or by a helper it handed it to): True
        when some way does; False when every way the value is made is seen and none does;
        None when something no summary shows made or handled it. Other files' functions are
        asked of `project` (None: unknown)."""
        return _Resolver(self, project).result(name)

    def origin_hybridized(
        self, origin: Origin, project: HybridizedAcrossFiles | None = None
    ) -> bool | None:
        """The same for a value made by a call of this file whose origin is `origin`."""
        return _Resolver(self, project).origin(origin)

    def param_hybridized(
        self, name: str, slot: Slot, project: HybridizedAcrossFiles | None = None
    ) -> bool | None:
        """Whether calling the function `name` hybridizes the network passed in `slot`."""
        return _Resolver(self, project).param(name, slot)


class HybridizedAcrossFiles(Protocol):
    """The run's answers for functions of other files (`ProjectIndex`)."""

    def result_hybridized(self, name: str) -> bool | None: ...

    def param_hybridized(self, name: str, slot: Slot) -> bool | None: ...

    def method_hybridized(self, method: str) -> bool | None: ...


def _any(verdicts: Iterable[bool | None]) -> bool | None:
    """True if one is True; else None if one is None or there are none; else False."""
    seen = False
    unknown = False
    for verdict in verdicts:
        if verdict:
            return True
        seen = True
        unknown = unknown or verdict is None
    return None if unknown or not seen else False


class _Resolver:
    """One question about a file's functions, followed through the file (and, through
    `project`, other files), each function asked once (a cycle is unknown)."""

    def __init__(self, effects: FileEffects, project: HybridizedAcrossFiles | None) -> None:
        self.effects = effects
        self.project = project
        self.active: set[tuple[str, Slot | None]] = set()

    def result(self, name: str) -> bool | None:
        own = self.effects.own(name)
        if own is None or (name, None) in self.active:
            return None
        if RETURNED in own.hybridizes:
            return True
        self.active.add((name, None))
        try:
            return _any(
                [self.origin(origin) for origin in own.returned_from]
                + [self.handed(callee, slot) for who, callee, slot in own.hands if who == RETURNED]
            )
        finally:
            self.active.discard((name, None))

    def origin(self, origin: Origin) -> bool | None:
        kind, name = origin
        if kind == "local":
            return self.result(name)
        if kind == "class":
            # A project network comes back hybridized when its `__init__` hybridizes itself.
            init = f"{name}.__init__"
            return self.param(init, 0) if init in self.effects.functions else False
        if kind == "project":
            return self.project.result_hybridized(name) if self.project is not None else None
        if kind == "library":
            return False if knowledge.builds_network(name) else None
        return None

    def handed(self, callee: Origin, slot: Slot) -> bool | None:
        kind, name = callee
        if kind == "local":
            return self.param(name, slot)
        if kind == "class":
            init = f"{name}.__init__"
            return self.param(init, slot) if init in self.effects.functions else False
        if kind == "project":
            if self.project is None:
                return None
            return self.project.param_hybridized(name, slot)
        if kind == "library":
            return False
        if kind == "method":
            return self.project.method_hybridized(name) if self.project is not None else None
        return None

    def param(self, name: str, slot: Slot) -> bool | None:
        own = self.effects.own(name)
        if own is None or (name, slot) in self.active:
            return None
        if isinstance(slot, int):
            if slot >= len(own.params):
                return None
            param = own.params[slot]
        else:
            param = slot
            if param not in own.params:
                return None
        if param in own.hybridizes:
            return True
        self.active.add((name, slot))
        try:
            return _any(
                [False] + [self.handed(callee, at) for who, callee, at in own.hands if who == param]
            )
        finally:
            self.active.discard((name, slot))
