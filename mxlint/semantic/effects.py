"""Function summaries: what calling a function does, so a rule looking at a call site knows.

A rule that stops at a call it cannot see into guesses, and guesses wrong both ways: a loop whose
helper reads the loss back (`return loss.mean().asscalar()`) does synchronise; a network built
by a helper that hybridizes it is hybridized; an evaluation function that wraps its forward
passes in `autograd.pause()` records nothing. Each function is summarised once, on first use,
from its own statements (nested definitions are their own functions); calls into functions of
the same file are folded in here, calls into other files of the run by the project index.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import libcst as cst

from mxlint import knowledge
from mxlint.names import ImportMap, dotted_name, last_name
from mxlint.walker import NESTED_SCOPES, iter_nodes

#: In `Effects.hybridizes`: the function returns a network it hybridized.
RETURNED = "<return>"

#: Methods of MXNet metrics and Module that read values back to the host.
_METRIC_READS = frozenset({"update_metric", "get_name_value"})


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
    #: Calls into other files of the run (resolved names), whose effects add to these.
    external: tuple[str, ...] = field(default=(), compare=False)

    def union(self, other: Effects) -> Effects:
        """What either of two functions may do (a name that could be either)."""
        return Effects(
            syncs=self.syncs or other.syncs,
            hybridizes=self.hybridizes | other.hybridizes,
            inference=self.inference or other.inference,
            returns_forward=self.returns_forward or other.returns_forward,
            external=tuple(dict.fromkeys(self.external + other.external)),
        )

    def merged(self, other: Effects) -> Effects:
        """These effects after a call whose effects are `other` (only synchronisation carries
        over: what a callee hybridizes or pauses is its own)."""
        if other.syncs and not self.syncs:
            return replace(self, syncs=True)
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


def summarise(fn: cst.FunctionDef, imports: ImportMap, local: frozenset[str]) -> Effects:
    """The effects of `fn` from its own statements (one walk); `local` names the functions of
    its file (their calls are folded in by `FileEffects`, not here)."""
    params = set(_params(fn))
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
    for node in _own_nodes(fn):
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
            if (
                len(node.targets) == 1
                and type(target) is cst.Name
                and node not in paused
                and _runs_parameter(node.value, params)
            ):
                outputs.add(target.value)
            continue
        if type(node) is not cst.Call:
            continue
        func = node.func
        if not syncs and (is_sync_call(node, imports) or _converts_tensor(node, params)):
            syncs = True
        if type(func) is cst.Attribute and func.attr.value == "hybridize":
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
        external=tuple(dict.fromkeys(external)),
    )


def _runs_parameter(value: cst.BaseExpression | None, params: set[str]) -> bool:
    """`net(x)` / `net.forward(x)` where `net` is a parameter."""
    if type(value) is not cst.Call:
        return False
    func = value.func
    if type(func) is cst.Attribute and func.attr.value == "forward":
        func = func.value
    return type(func) is cst.Name and func.value in params


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
        self._own: dict[str, Effects] = {}
        self._folded: dict[str, Effects] = {}

    def own(self, name: str) -> Effects | None:
        """What the function's own statements do (calls within the file not followed)."""
        if name not in self.functions:
            return None
        if name not in self._own:
            self._own[name] = summarise(self.functions[name], self.imports, self._local)
        return self._own[name]

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
        while todo and not effects.syncs:
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

    def of_call(self, call: cst.Call) -> Effects | str | None:
        """What a call does: a function of this file gives its effects; a function of another
        file of the project gives its resolved name (the run resolves it); a library or an
        unknown callable gives None."""
        func = call.func
        if type(func) is cst.Name and func.value in self._local:
            return self.of(func.value)
        name = self.imports.resolve(func)
        if name is None or knowledge.is_library(name):
            return None
        return name
