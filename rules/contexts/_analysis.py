"""What the contexts rules share: reading calls, contexts and fixes over the placement analysis
(`mxlint.placement`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

import libcst as cst

from mxlint import knowledge
from mxlint.placement import (
    Ctx,
    Env,
    Net,
    Scope,
    Seq,
    Tensor,
)

#: Attributes that place parameters somewhere (`net.initialize`, `SymbolBlock.imports`).
#: Attributes that mark a function worth interpreting: it places parameters, or it moves data
#: to a device (then a component of the batch it does not move is the bug to look for).
_PLACING_ATTRS = (
    knowledge.PARAM_PLACING_METHODS | knowledge.CTX_MOVING_METHODS | {"imports", "split_and_load"}
)
#: Words of code that may place arrays on a GPU, in any case (`contains_ascii_word`).
GPU_WORDS = ("gpu", "cuda", "context(", "try_all")
_CONST_CTX = re.compile(r"^[A-Za-z_][\w.]*\(\s*\d*\s*\)$")


def _has_net(env: Env) -> bool:
    return any(isinstance(v, Net) for v in env.values())


def _has_gpu_array(env: Env) -> bool:
    """A parameter every caller passes an array moved to a GPU (or a tuple holding one)."""
    values = list(env.values())
    while values:
        value = values.pop()
        if isinstance(value, Seq):
            values.extend(value.items)
        elif isinstance(value, Tensor) and value.on_gpu() is True:
            return True
    return False


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
        if isinstance(scope.env.get(src), Ctx):
            return src
        # A method reading the context its class's `__init__` was given (and kept as the
        # one context member of that kind): `self.ctx`.
        members = [
            k
            for k, v in scope.env.items()
            if k.startswith("self.")
            and isinstance(v, Ctx)
            and (v.gpu, v.multi) == (ctx.gpu, ctx.multi)
        ]
        return members[0] if len(members) == 1 else None
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
