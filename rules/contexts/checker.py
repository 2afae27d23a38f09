"""The contexts checker (MXL2xx): parameters and data on different device contexts.

The analysis (where each value lives) is in `mxlint.placement`; this module decides which of
its events are findings, and spells messages and fixes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

import libcst as cst
from mxlint.rules.contexts.data_context_mismatch import DataContextMismatch
from mxlint.rules.contexts.initialize_without_ctx import InitializeWithoutCtx
from mxlint.rules.contexts.param_data_without_ctx import ParamDataWithoutCtx
from mxlint.rules.contexts.tensor_created_without_ctx import TensorCreatedWithoutCtx

from mxlint import knowledge
from mxlint.checker import Checker, FixSpec, NodeEdit
from mxlint.names import dotted_name
from mxlint.placement import (
    Ctx,
    Env,
    ForwardCreations,
    InitNoCtx,
    LossCall,
    Net,
    NetCall,
    ParamRead,
    Scope,
    Tensor,
    context_helpers,
    module_env_copy,
    parameter_env,
    tensor_parameters,
)
from mxlint.walker import iter_nodes

#: Attributes that place parameters somewhere (`net.initialize`, `SymbolBlock.imports`).
_PLACING_ATTRS = knowledge.PARAM_PLACING_METHODS | {"imports"}
#: `gpu|cuda|context(|try_all` in any case, spelled out: IGNORECASE makes the search slower.
_GPU_TEXT = re.compile(
    r"[gG][pP][uU]|[cC][uU][dD][aA]|[cC][oO][nN][tT][eE][xX][tT]\(|"
    r"[tT][rR][yY]_[aA][lL][lL]"
)
_CONST_CTX = re.compile(r"^[A-Za-z_][\w.]*\(\s*\d*\s*\)$")


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

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in _PLACING_ATTRS:
            self._mark_placing()

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None and node.keyword.value == "pretrained":
            self._mark_placing()

    def _mark_placing(self) -> None:
        self.any_placing = True
        for scope in self.ctx.stack:
            if type(scope) is cst.FunctionDef:
                self.placing.add(id(scope))

    def end(self) -> None:
        ctx = self.ctx
        module = ctx.module
        wants_placement = any(
            ctx.settings.enabled(r, ctx.path)
            for r in (DataContextMismatch, InitializeWithoutCtx, ParamDataWithoutCtx)
        )
        self.functions = list(_functions(module.body, []))
        if wants_placement and self.any_placing:
            self._placement(module)
        if ctx.settings.enabled(TensorCreatedWithoutCtx, ctx.path) and (
            "cpu(" not in ctx.source or _GPU_TEXT.search(ctx.source)
        ):
            for path, cls, fn in self.functions:
                if cls is not None and fn.name.value in ("forward", "hybrid_forward"):
                    self._forward(path, cls, fn)

    # -- MXL201, MXL203, MXL204 ----------------------------------------------------------------

    def _placement(self, module: cst.Module) -> None:
        code = self.ctx.code
        helpers = context_helpers(module, self.ctx.imports, code)
        top = Scope(self.ctx.imports, code, {}, helpers)
        top.run(module.body)
        self._judge(top, None)
        members: dict[int, Env] = {}
        global_nets = _has_net(top.env)
        replaced = self._replaced_globals(top.env) if global_nets else {}
        for path, cls, fn in self.functions:
            member_env: Env = {}
            if cls is not None and fn.name.value != "__init__":
                if id(cls) not in members:
                    members[id(cls)] = self._members(cls, top.env, helpers)
                member_env = members[id(cls)]
            if id(fn) not in self.placing and not global_nets and not _has_net(member_env):
                continue
            env: Env = module_env_copy(top.env)
            for key, placer in replaced.items():
                value = env.get(key)
                if isinstance(value, Net) and placer is not fn:
                    # another function moves this network: its context here is unknown
                    value.ctx, value.placed = None, False
            env.update(module_env_copy(member_env))
            scope = self._run_function(fn, env, helpers)
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

    def _run_function(self, fn: cst.FunctionDef, env: Env, helpers: dict[str, Ctx]) -> Scope:
        scope = Scope(self.ctx.imports, self.ctx.code, env, helpers)
        scope.env.update(parameter_env(scope, fn.params))
        scope.events.clear()
        scope.run(fn.body.body)
        return scope

    def _members(self, cls: cst.ClassDef, module_env: Env, helpers: dict[str, Ctx]) -> Env:
        """`self.*` values set up by `__init__` (a trainer's `self.net`, `self.ctx`), seen
        by the other methods of the class."""
        for stmt in cls.body.body:
            if (
                type(stmt) is cst.FunctionDef
                and stmt.name.value == "__init__"
                and id(stmt) in self.placing
            ):
                scope = self._run_function(stmt, module_env_copy(module_env), helpers)
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

    def _net_call(self, scope: Scope, event: NetCall, symbol: str | None, data_fn: str) -> None:
        net = event.net
        if not net.placed or net.ctx is None:
            return
        net_name = _callee_name(self.ctx.code, event.node)
        for arg, value in event.args:
            if not isinstance(value, Tensor):
                continue
            if net.ctx.gpu is True and value.on_gpu() is False:
                self._report_unmoved(scope, arg, value, net.ctx, net_name, symbol, data_fn)
            elif (
                net.ctx.gpu is False
                and value.where == "placed"
                and value.ctx is not None
                and value.ctx.gpu is True
                and net.fresh
            ):
                src = value.ctx.src or "ctx"
                self.ctx.report(
                    arg,
                    DataContextMismatch,
                    f"`{net_name}`'s parameters are on the cpu (placed with no `ctx`) but "
                    f"`{self.ctx.code(arg)}` was moved to `{src}`; place the network there "
                    f"too: `{net_name}.initialize(ctx={src})` or "
                    f"`{net_name}.collect_params().reset_ctx({src})`",
                    symbol=symbol,
                    data={"function": data_fn, "ctx": src},
                )

    def _report_unmoved(
        self,
        scope: Scope,
        arg: cst.BaseExpression,
        value: Tensor,
        ctx: Ctx,
        net_name: str,
        symbol: str | None,
        data_fn: str,
        what: str | None = None,
    ) -> None:
        src = ctx.src or "ctx"
        arg_code = self.ctx.code(arg)
        origin = what or (f"`{arg_code}` ({value.origin})" if value.origin else f"`{arg_code}`")
        short_arg = arg_code if len(arg_code) <= 30 else "data"
        message = DataContextMismatch.format(net=net_name, ctx=src, origin=origin, arg=short_arg)
        if ctx.multi:
            message = (
                f"`{net_name}` has its parameters on `{src}` but {origin} is fed to it "
                f"unmoved; split the batch with `gluon.utils.split_and_load({short_arg}, "
                f"{src})` and call `{net_name}` on each slice"
            )
        mover = self._mover()
        message = message.replace(".as_in_context(", f".{mover}(")
        fix = None
        spelled = _spelled_ctx(scope, ctx)
        if spelled is not None and not ctx.multi:
            wrapped = (
                arg_code
                if type(arg) in (cst.Name, cst.Attribute, cst.Call, cst.Subscript)
                else f"({arg_code})"
            )
            fix = FixSpec(
                "unsafe",
                f"Move `{arg_code}` to `{spelled}`",
                (NodeEdit(arg, f"{wrapped}.{mover}({spelled})"),),
            )
        self.ctx.report(
            arg,
            DataContextMismatch,
            message,
            fix=fix,
            symbol=symbol,
            data={"function": data_fn, "ctx": src},
        )

    def _mover(self) -> str:
        """The method that moves a tensor: `as_in_context` (1.x), `to_device` (MXNet 2)."""
        return "to_device" if self.ctx.mxnet_line == "2" else "as_in_context"

    def _loss_call(self, scope: Scope, event: LossCall, symbol: str | None, data_fn: str) -> None:
        tensors = [(a, v) for a, v in event.args[:2] if isinstance(v, Tensor)]
        gpu = [
            v for _, v in tensors if v.where == "placed" and v.ctx is not None and v.ctx.gpu is True
        ]
        if not gpu:
            return
        for arg, value in tensors:
            if value.on_gpu() is False:
                ctx = gpu[0].ctx
                assert ctx is not None
                src = _spelled_ctx(scope, ctx) or ctx.src or "ctx"
                loss_name = _callee_name(self.ctx.code, event.node)
                arg_code = self.ctx.code(arg)
                origin = f" ({value.origin})" if value.origin else ""
                message = (
                    f"`{loss_name}` compares a prediction on a GPU context with "
                    f"`{arg_code}`{origin}, which is still on the cpu; move it with "
                    f"`{arg_code}.{self._mover()}({src})` or "
                    f"`gluon.utils.split_and_load({arg_code}, {src})`"
                )
                spelled = _spelled_ctx(scope, ctx)
                fix = None
                if spelled is not None and type(arg) in (
                    cst.Name,
                    cst.Attribute,
                    cst.Call,
                    cst.Subscript,
                ):
                    fix = FixSpec(
                        "unsafe",
                        f"Move `{arg_code}` to `{spelled}`",
                        (NodeEdit(arg, f"{arg_code}.{self._mover()}({spelled})"),),
                    )
                self.ctx.report(
                    arg,
                    DataContextMismatch,
                    message,
                    fix=fix,
                    symbol=symbol,
                    data={"function": data_fn, "ctx": src},
                )

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

    def _report_init(
        self, scope: Scope, event: InitNoCtx, target: Ctx, symbol: str | None, data_fn: str
    ) -> None:
        node = event.node
        func = node.func
        block = self.ctx.code(func.value) if type(func) is cst.Attribute else "layer"
        src = target.src or "ctx"
        fix = None
        spelled = _spelled_ctx(scope, target)
        if spelled is not None:
            fix = FixSpec(
                "unsafe",
                f"Initialise on `{spelled}`",
                (NodeEdit(node, _add_keyword(self.ctx.code, node, "ctx", spelled)),),
            )
        self.ctx.report(
            node,
            InitializeWithoutCtx,
            InitializeWithoutCtx.format(block=block, ctx=src),
            fix=fix,
            symbol=symbol,
            data={"function": data_fn, "ctx": src},
        )

    def _param_read(self, scope: Scope, event: ParamRead, symbol: str | None, data_fn: str) -> None:
        node = event.node
        net_ctx = event.net.ctx
        if node.args or event.default_ctx is not None or net_ctx is None:
            return
        if not (net_ctx.multi and net_ctx.gpu is True and event.net.placed):
            return
        func = node.func
        method = func.attr.value if type(func) is cst.Attribute else "data"
        src = net_ctx.src or "ctx"
        ctx0 = f"{src}[0]" if src.isidentifier() else "ctx[0]"
        fix = None
        if src.isidentifier() and isinstance(scope.env.get(src), Ctx):
            fix = FixSpec(
                "unsafe",
                f"Read the copy on `{ctx0}`",
                (NodeEdit(node, f"{self.ctx.code(func)}({ctx0})"),),
            )
        self.ctx.report(
            node,
            ParamDataWithoutCtx,
            ParamDataWithoutCtx.format(method=method, ctx=src, ctx0=ctx0),
            fix=fix,
            symbol=symbol,
            data={"function": data_fn, "ctx": src},
        )

    # -- MXL202 --------------------------------------------------------------------------------

    def _forward(self, path: list[str], cls: cst.ClassDef, fn: cst.FunctionDef) -> None:
        hybrid = fn.name.value == "hybrid_forward"
        positional = [*fn.params.posonly_params, *fn.params.params]
        f_name = positional[1].name.value if hybrid and len(positional) > 1 else None
        params = tensor_parameters(fn, 2 if hybrid else 1)
        if not params:
            return
        found = ForwardCreations(self.ctx.imports, f_name).run(fn, params)
        if not found:
            return
        arg = params[0]
        symbol = ".".join(path)
        cls_path = path[:-1]
        requires = None if hybrid else ("block", self.ctx.qualname(".".join(cls_path)))
        if not hybrid and not _has_bases(cls):
            return
        hybrid_forward_2 = not hybrid and self._hybrid_base(cls)
        for node in found:
            name = self.ctx.imports.resolve(node.func) or ""
            numpy_style = name.startswith("mxnet.np.")
            if hybrid_forward_2 and (numpy_style or self.ctx.mxnet_line == "2"):
                # MXNet 2 hybridizes `forward`: like `F.zeros`, bound on the inputs' device
                continue
            if numpy_style and self.ctx.mxnet_line == "2":
                keyword, value = "device", f"{arg}.device"
            elif numpy_style:
                keyword, value = "ctx", f"{arg}.ctx"
            else:
                keyword, value = "ctx", f"{arg}.context"
            fix = (
                FixSpec(
                    "unsafe",
                    f"Create it on `{value}`",
                    (NodeEdit(node, _add_keyword(self.ctx.code, node, keyword, value)),),
                )
                if node.args
                else None
            )
            message = TensorCreatedWithoutCtx.format(
                creator=f"{self.ctx.code(node.func)}(...)", method=fn.name.value, arg=arg
            )
            if keyword == "device":
                message = message.replace(f"ctx={arg}.context", f"device={arg}.device")
            self.ctx.report(
                node,
                TensorCreatedWithoutCtx,
                message,
                fix=fix,
                symbol=symbol,
                data={"function": self.ctx.qualname(symbol), "ctx": value},
                requires=requires,
            )

    def _hybrid_base(self, cls: cst.ClassDef) -> bool:
        for base in cls.bases:
            name = self.ctx.resolve(base.value) or ""
            if name in knowledge.HYBRID_BLOCK_CLASSES or "Hybrid" in name.rsplit(".", 1)[-1]:
                return True
        return False


def _has_net(env: Env) -> bool:
    return any(isinstance(v, Net) for v in env.values())


def _has_bases(cls: cst.ClassDef) -> bool:
    return bool(cls.bases)


def _functions(
    body: Sequence[cst.CSTNode], path: list[str], cls: cst.ClassDef | None = None
) -> Iterator[tuple[list[str], cst.ClassDef | None, cst.FunctionDef]]:
    """Every function (methods and nested ones too) with its qualified path and class."""
    for stmt in body:
        if type(stmt) is cst.FunctionDef:
            here = [*path, stmt.name.value]
            yield here, cls, stmt
            if type(stmt.body) is cst.IndentedBlock:
                yield from _functions(stmt.body.body, here, None)
        elif type(stmt) is cst.ClassDef:
            if type(stmt.body) is cst.IndentedBlock:
                yield from _functions(stmt.body.body, [*path, stmt.name.value], stmt)
        elif type(stmt) in (cst.If, cst.Try, cst.With, cst.For, cst.While):
            inner: list[cst.CSTNode] = []
            for suite in _suites(stmt):
                inner.extend(suite.body)
            yield from _functions(inner, path, cls)


def _suites(stmt: cst.CSTNode) -> Iterator[cst.IndentedBlock]:
    body = getattr(stmt, "body", None)
    if type(body) is cst.IndentedBlock:
        yield body
    orelse = getattr(stmt, "orelse", None)
    if type(orelse) is cst.If:
        yield from _suites(orelse)
    elif type(orelse) is cst.Else and type(orelse.body) is cst.IndentedBlock:
        yield orelse.body
    for handler in getattr(stmt, "handlers", ()):
        if type(handler.body) is cst.IndentedBlock:
            yield handler.body
    final = getattr(stmt, "finalbody", None)
    if final is not None and type(final.body) is cst.IndentedBlock:
        yield final.body


def _callee_name(code: Callable[[cst.CSTNode], str], call: cst.Call) -> str:
    func = call.func
    if type(func) is cst.Attribute and func.attr.value == "forward":
        func = func.value
    text = code(func)
    return text if len(text) <= 40 else "net"


def _spelled_ctx(scope: Scope, ctx: Ctx) -> str | None:
    """How a fix can name `ctx` at this point: a variable still bound to it, or a constant
    expression like `mx.gpu(0)`."""
    src = ctx.src
    if src is None:
        return None
    if all(part.isidentifier() for part in src.split(".")):
        return src if isinstance(scope.env.get(src), Ctx) else None
    if _CONST_CTX.match(src) and "gpu" in src:
        return src
    return None


def _add_keyword(
    code: Callable[[cst.CSTNode], str], call: cst.Call, keyword: str, value: str
) -> str:
    """The source of `call` with `keyword=value` appended to its arguments."""
    args = list(call.args)
    if args and isinstance(args[-1].comma, cst.MaybeSentinel):
        args[-1] = args[-1].with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
    args.append(
        cst.Arg(
            value=cst.parse_expression(value),
            keyword=cst.Name(keyword),
            equal=cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""),
                whitespace_after=cst.SimpleWhitespace(""),
            ),
        )
    )
    return code(call.with_changes(args=args))


__all__ = [
    "ContextChecker",
    "DataContextMismatch",
    "InitializeWithoutCtx",
    "ParamDataWithoutCtx",
    "TensorCreatedWithoutCtx",
]
