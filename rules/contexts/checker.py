"""The contexts checker (MXL2xx): reads each function once, over the placement analysis of
`mxlint/placement.py`, and runs the decisions of the four rules' files on what it finds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import libcst as cst

from mxlint import knowledge
from mxlint.checker import Checker
from mxlint.names import dotted_name
from mxlint.placement import (
    Ctx,
    Env,
    InitNoCtx,
    LossCall,
    MixedOp,
    Net,
    NetCall,
    ParamRead,
    Scope,
    Tensor,
    Val,
    call_site_env,
    context_helpers,
    module_env_copy,
    parameter_env,
    tensor_helpers,
)
from mxlint.rules.contexts import (
    data_context_mismatch,
    initialize_without_ctx,
    param_data_without_ctx,
    tensor_created_without_ctx,
)
from mxlint.rules.contexts._analysis import (
    _PLACING_ATTRS,
    GPU_WORDS,
    _functions,
    _has_gpu_array,
    _has_net,
)
from mxlint.rules.contexts.data_context_mismatch import DataContextMismatch
from mxlint.rules.contexts.initialize_without_ctx import InitializeWithoutCtx
from mxlint.rules.contexts.param_data_without_ctx import ParamDataWithoutCtx
from mxlint.rules.contexts.tensor_created_without_ctx import TensorCreatedWithoutCtx
from mxlint.text_search import contains_ascii_word
from mxlint.walker import NESTED_SCOPES, TreeIndex, iter_nodes, locate, typed_nodes

Sites = dict[str, list[tuple[cst.Call, list[tuple[cst.BaseExpression, Val]], str]]]
_CALL = (cst.Call,)


def _collect_sites(scope: Scope, caller: str, sites: Sites) -> None:
    """The calls `scope` makes of the module's functions, as made by `caller`."""
    for name, call, arg_vals in scope.local_calls.values():
        sites.setdefault(name, []).append((call, arg_vals, caller))


def _calls_local(fn: cst.FunctionDef, names: frozenset[str]) -> bool:
    """`fn` calls one of `names` (the functions of the module that place a network, and the
    classes whose `__init__` does): what it passes (the arrays it makes, a context) is what
    their parameters hold."""
    return bool(names) and any(
        type(node) is cst.Call and type(node.func) is cst.Name and node.func.value in names
        for node in typed_nodes(fn.body, _CALL, NESTED_SCOPES)
    )


def _callers_first(
    functions: Sequence[tuple[list[str], cst.ClassDef | None, cst.FunctionDef]],
) -> list[tuple[list[str], cst.ClassDef | None, cst.FunctionDef]]:
    """Module-level functions and the methods of module-level classes ordered so that a
    function's callers in the file are read before it (what they pass is known when it is
    read): a call of a module-level function by name, `self.method(...)` in a method of the
    same class, `obj.method(...)` of a method some class of the file defines, and `Class(...)`
    before every method of the class (what the construction passes to `__init__` is what the
    methods' `self.` members hold). Nested functions after, in file order."""
    keyed = {
        ".".join(path): (path, cls, fn)
        for path, cls, fn in functions
        if len(path) == 1 or (cls is not None and len(path) == 2)
    }
    by_method: dict[str, list[str]] = {}
    by_class: dict[str, list[str]] = {}
    for key, (path, cls, _fn) in keyed.items():
        if cls is not None:
            by_method.setdefault(path[1], []).append(key)
            by_class.setdefault(path[0], []).append(key)
    calls: dict[str, list[str]] = {}
    for key, (path, cls, fn) in keyed.items():
        out: list[str] = []
        for n in iter_nodes(fn.body):
            if type(n) is not cst.Call:
                continue
            func = n.func
            if type(func) is cst.Name:
                if func.value in keyed:
                    out.append(func.value)
                out.extend(by_class.get(func.value, ()))
            elif type(func) is cst.Attribute and func.attr.value in by_method:
                if type(func.value) is cst.Name and func.value.value == "self":
                    if cls is not None and f"{path[0]}.{func.attr.value}" in keyed:
                        out.append(f"{path[0]}.{func.attr.value}")
                else:
                    out.extend(by_method[func.attr.value])
        calls[key] = out
    done: set[str] = set()
    post: list[str] = []

    def visit(name: str) -> None:
        done.add(name)
        for callee in calls[name]:
            if callee not in done:
                visit(callee)
        post.append(name)

    for name in keyed:
        if name not in done:
            visit(name)
    ordered = [keyed[name] for name in reversed(post)]
    return ordered + [f for f in functions if ".".join(f[0]) not in keyed]


class ContextChecker(Checker):
    """Placement analysis of every scope (module script code, each function)."""

    rules = (
        DataContextMismatch,
        TensorCreatedWithoutCtx,
        InitializeWithoutCtx,
        ParamDataWithoutCtx,
    )
    name = "contexts"

    def begin(self) -> None:
        #: Functions that place parameters (only they, and users of placed module-level or
        #: `self.` networks, are interpreted: most functions of a file never place anything).
        self.placing: set[int] = set()
        self.any_placing = False
        #: The module's classes that derive from nothing (not Blocks): calling one makes an
        #: object whose method calls are followed.
        self.local_classes: frozenset[str] = frozenset()

    def _find_placing(self, module: cst.Module) -> None:
        """The functions around a placing attribute (`.initialize`, `.reset_ctx`...) or a
        `pretrained=` argument, read from the file's index (no handler on every attribute)."""
        found = locate(module)
        index = found[0] if found is not None else TreeIndex(module)
        order, end, by_type = index.order, index.end, index.by_type
        hits = [i for i in by_type.get(cst.Attribute, ()) if order[i].attr.value in _PLACING_ATTRS]  # type: ignore[attr-defined]
        hits.extend(
            i
            for i in by_type.get(cst.Arg, ())
            if order[i].keyword is not None and order[i].keyword.value == "pretrained"  # type: ignore[attr-defined]
        )
        if not hits:
            return
        self.any_placing = True
        functions = by_type.get(cst.FunctionDef, ())
        for i in hits:
            for j in functions:
                if j >= i:
                    break
                if i < end[j]:
                    self.placing.add(id(order[j]))

    def end(self) -> None:
        ctx = self.ctx
        module = ctx.module
        self._find_placing(module)
        wants_placement = any(
            ctx.settings.enabled(r, ctx.path)
            for r in (DataContextMismatch, InitializeWithoutCtx, ParamDataWithoutCtx)
        )
        self.functions = list(_functions(module.body, []))
        if wants_placement and self.any_placing:
            self._placement(module)
        if ctx.settings.enabled(TensorCreatedWithoutCtx, ctx.path) and (
            "cpu(" not in ctx.source or contains_ascii_word(ctx.source, GPU_WORDS)
        ):
            for path, cls, fn in self.functions:
                if cls is not None and fn.name.value in ("forward", "hybrid_forward"):
                    self._forward(path, cls, fn)

    # -- MXL201, MXL203, MXL204 ----------------------------------------------------------------

    def _placement(self, module: cst.Module) -> None:
        code = self.ctx.code
        helpers: dict[str, Val] = {
            **tensor_helpers(module, self.ctx.imports, code),
            **context_helpers(module, self.ctx.imports, code),
        }
        local = {fn.name.value: fn for path, cls, fn in self.functions if len(path) == 1}
        # What a call passes is kept for the module's functions, its classes' __init__ (by
        # the class's name) and their methods (`Class.method`, called on an object of it).
        methods = {
            ".".join(path): fn
            for path, cls, fn in self.functions
            if cls is not None and len(path) == 2
        }
        inits = {key.split(".")[0]: fn for key, fn in methods.items() if key.endswith(".__init__")}
        callable_ = {**methods, **inits, **local}
        self.local_classes = frozenset(
            cls.name.value
            for path, cls, fn in self.functions
            if cls is not None
            and len(path) == 2
            and all(type(b.value) is cst.Name and b.value.value == "object" for b in cls.bases)
        )
        placing = frozenset(name for name, f in callable_.items() if id(f) in self.placing)
        top = Scope(self.ctx.imports, code, {}, helpers)
        top.local_functions = callable_
        top.local_classes = self.local_classes
        top.run(module.body)
        self._judge(top, None)
        sites: Sites = {}
        _collect_sites(top, "the module's code", sites)
        members: dict[int, Env] = {}
        global_nets = _has_net(top.env)
        replaced = self._replaced_globals(top.env) if global_nets else {}
        for path, cls, fn in _callers_first(self.functions):
            member_env: Env = {}
            if cls is not None and fn.name.value != "__init__":
                if id(cls) not in members:
                    init = inits.get(cls.name.value) if len(path) == 2 else None
                    made = (
                        call_site_env(init, sites.get(cls.name.value, []), bound=True)
                        if init
                        else {}
                    )
                    members[id(cls)] = self._members(cls, top.env, helpers, made)
                member_env = members[id(cls)]
            passed: Env = {}
            if len(path) == 1:
                passed = call_site_env(fn, sites.get(fn.name.value, []))
            elif cls is not None and len(path) == 2 and fn.name.value != "__init__":
                passed = call_site_env(fn, sites.get(".".join(path), []), bound=True)
            if (
                id(fn) not in self.placing
                and not global_nets
                and not _has_net(member_env)
                and not _has_net(passed)
                and not _has_gpu_array(passed)
                and not _calls_local(fn, placing)
            ):
                continue
            env: Env = module_env_copy(top.env)
            for key, placer in replaced.items():
                value = env.get(key)
                if isinstance(value, Net) and placer is not fn:
                    # another function moves this network: its context here is unknown
                    value.ctx, value.placed = None, False
            env.update(module_env_copy(member_env))
            scope = self._run_function(fn, env, helpers, passed, callable_, top.global_default, cls)
            _collect_sites(scope, f"`{path[-1]}()`", sites)
            self._judge(scope, ".".join(path))

    def _replaced_globals(self, module_env: Env) -> dict[str, cst.FunctionDef]:
        """Module-level networks that some function places again (`net.initialize`,
        `net.collect_params().reset_ctx` inside `train()`): key -> that function."""
        out: dict[str, cst.FunctionDef] = {}
        for _path, _cls, fn in self.functions:
            if id(fn) not in self.placing:
                continue
            for node in iter_nodes(fn.body):
                if not (
                    type(node) is cst.Call
                    and type(node.func) is cst.Attribute
                    and node.func.attr.value in knowledge.PARAM_PLACING_METHODS
                ):
                    continue
                receiver = node.func.value
                if type(receiver) is cst.Call and type(receiver.func) is cst.Attribute:
                    receiver = receiver.func.value
                key = dotted_name(receiver)
                if key is not None and isinstance(module_env.get(key), Net):
                    out.setdefault(key, fn)
        return out

    def _run_function(
        self,
        fn: cst.FunctionDef,
        env: Env,
        helpers: Mapping[str, Val],
        passed: Env | None = None,
        local: Mapping[str, cst.FunctionDef] | None = None,
        default: Ctx | None = None,
        cls: cst.ClassDef | None = None,
    ) -> Scope:
        """Read `fn` with the module's values, its parameters' defaults, what its callers in
        this file pass (`passed`) and the default context the module set (`default`); `cls`:
        the class `fn` is a method of (its `self.method(...)` calls are followed)."""
        scope = Scope(self.ctx.imports, self.ctx.code, env, helpers)
        scope.local_classes = self.local_classes
        scope.self_class = cls.name.value if cls is not None else None
        scope.global_default = default
        scope.env.update(parameter_env(scope, fn.params))
        scope.env.update(passed or {})
        scope.local_functions = local or {}
        scope.clear_events()
        scope.run(fn.body.body)
        return scope

    def _members(
        self, cls: cst.ClassDef, module_env: Env, helpers: Mapping[str, Val], made: Env
    ) -> Env:
        """`self.*` values set up by `__init__` (a trainer's `self.net`, `self.ctx`), seen
        by the other methods of the class; `made`: what the constructions of the class in this
        file pass to `__init__`."""
        for stmt in cls.body.body:
            if (
                type(stmt) is cst.FunctionDef
                and stmt.name.value == "__init__"
                and id(stmt) in self.placing
            ):
                scope = self._run_function(stmt, module_env_copy(module_env), helpers, made)
                return {k: v for k, v in scope.env.items() if k.startswith("self.")}
        return {}

    def _judge(self, scope: Scope, symbol: str | None) -> None:
        data_fn = self.ctx.qualname(symbol) if symbol else (self.ctx.imports.module or "<module>")
        late: set[int] = set()
        calls_by_net: dict[int, list[NetCall]] = {}
        for event in scope.events:
            if isinstance(event, NetCall):
                calls_by_net.setdefault(id(event.net), []).append(event)
        for event in scope.events:
            if isinstance(event, InitNoCtx):
                target = self._init_target(event, calls_by_net.get(id(event.block), []))
                if target is not None:
                    late.add(id(event.block))
                    self._report_init(scope, event, target, symbol, data_fn)
        for event in scope.events:
            if isinstance(event, NetCall) and id(event.net) not in late:
                self._net_call(scope, event, symbol, data_fn)
            elif isinstance(event, LossCall):
                self._loss_call(scope, event, symbol, data_fn)
            elif isinstance(event, ParamRead):
                self._param_read(scope, event, symbol, data_fn)
            elif isinstance(event, MixedOp):
                self._mixed_op(scope, event, symbol, data_fn)

    _net_call = data_context_mismatch.check_net_call
    _report_unmoved = data_context_mismatch.report_unmoved

    def _mover(self) -> str:
        """The method that moves a tensor: `as_in_context` (1.x), `to_device` (MXNet 2)."""
        return "to_device" if self.ctx.mxnet_line == "2" else "as_in_context"

    _loss_call = data_context_mismatch.check_loss_call
    _mixed_op = data_context_mismatch.check_mixed_op

    def _init_target(self, event: InitNoCtx, calls: Sequence[NetCall]) -> Ctx | None:
        """The GPU context the freshly initialised layer should have been placed on."""
        block = event.block
        if block.reset_later or (block.ctx is not None and block.ctx.gpu is not False):
            return None
        parent = block.parent
        while parent is not None:
            if parent.reset_later:
                return None
            if parent.ctx is not None and parent.ctx.gpu is True:
                return parent.ctx
            parent = parent.parent
        for call in calls:
            for _, value in call.args:
                if (
                    isinstance(value, Tensor)
                    and value.where == "placed"
                    and value.ctx is not None
                    and value.ctx.gpu is True
                    and event.gpu_ctx
                ):
                    return event.gpu_ctx
        return None

    _report_init = initialize_without_ctx.report_init
    _param_read = param_data_without_ctx.check_param_read
    _forward = tensor_created_without_ctx.check_forward

    def _hybrid_base(self, cls: cst.ClassDef) -> bool:
        for base in cls.bases:
            name = self.ctx.resolve(base.value) or ""
            if name in knowledge.HYBRID_BLOCK_CLASSES or "Hybrid" in name.rsplit(".", 1)[-1]:
                return True
        return False


__all__ = [
    "ContextChecker",
    "DataContextMismatch",
    "InitializeWithoutCtx",
    "ParamDataWithoutCtx",
    "TensorCreatedWithoutCtx",
]
