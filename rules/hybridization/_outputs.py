"""Outputs a hybridized forward pass cannot return (MXL114).

A hybridized block flattens its forward's return value into graph outputs: tensors and
(nested) lists or tuples of them. This finds, in a `return`, the first part that is provably
something else: a dict (a display, `dict(...)`, a name holding one on every path), a literal
number, bool or string, an instance of a dataclass or namedtuple defined in the file, and in
MXNet 1.x `None`. Anything the analysis cannot see into is left alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

import libcst as cst

from mxlint.checker import shortened
from mxlint.rules.hybridization._taint import Env, Kind
from mxlint.rules.hybridization.non_tensor_output import (
    ADVICE,
    NAMEDTUPLE_ADVICE,
    NONE_ERROR,
    OUTPUT_ADVICE,
    VALUE_ERROR,
)
from mxlint.walker import NESTED_SCOPES, typed_nodes

#: Classes whose instances are dicts.
MAPPING_TYPES = frozenset({"collections.OrderedDict", "collections.defaultdict"})
_DATACLASS = frozenset({"dataclasses.dataclass"})
_NAMEDTUPLE = frozenset({"collections.namedtuple", "typing.NamedTuple"})

#: A runtime alias: `str | None` would not evaluate on Python 3.9.
Resolve = Callable[[cst.BaseExpression], Optional[str]]


def record_types(module: cst.Module, resolve: Resolve) -> dict[str, str]:
    """Top-level dataclasses and namedtuples of the file: name -> "dataclass"/"namedtuple"."""
    out: dict[str, str] = {}
    for stmt in module.body:
        if type(stmt) is cst.ClassDef:
            decorators = [d.decorator for d in stmt.decorators]
            decorators = [d.func if type(d) is cst.Call else d for d in decorators]
            if any(resolve(d) in _DATACLASS for d in decorators):
                out[stmt.name.value] = "dataclass"
            elif any(
                resolve(b.value.func if type(b.value) is cst.Call else b.value) in _NAMEDTUPLE
                for b in stmt.bases
            ):
                out[stmt.name.value] = "namedtuple"
        elif type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                if (
                    type(small) is cst.Assign
                    and len(small.targets) == 1
                    and type(small.targets[0].target) is cst.Name
                    and type(small.value) is cst.Call
                    and resolve(small.value.func) in _NAMEDTUPLE
                ):
                    out[small.targets[0].target.value] = "namedtuple"
    return out


def placeholder_forward(fn: cst.FunctionDef) -> bool:
    """Whether every `return` of the forward pass returns None: a block with no output by
    design (a break in an hourglass's skip path, whose parent reads None as "no branch").
    Hybridized with its parent, the None stays a Python value of the trace; such a block is
    never hybridized alone."""
    returns = [r for r in typed_nodes(fn.body, _RETURN, NESTED_SCOPES) if type(r) is cst.Return]
    return bool(returns) and all(
        r.value is None or (type(r.value) is cst.Name and r.value.value == "None") for r in returns
    )


_RETURN = frozenset({cst.Return})


def non_tensor_output(
    node: cst.Return,
    env: Env,
    *,
    mxnet: str,
    resolve: Resolve,
    records: Callable[[], dict[str, str]],
    code: Callable[[cst.CSTNode], str],
) -> tuple[cst.CSTNode, str] | None:
    """The first part of what `node` returns that is not a tensor, and the message for it."""
    if node.value is None:
        found: tuple[cst.CSTNode, str] | None = (node, "None") if mxnet == "1" else None
    else:
        found = _find(node.value, env, mxnet, resolve, records)
    if found is None:
        return None
    part, what = found
    text = shortened(code(node), 50)
    if what == "a namedtuple":
        return part, NAMEDTUPLE_ADVICE.format(code=text)
    error = NONE_ERROR if what == "None" else VALUE_ERROR
    return part, OUTPUT_ADVICE.format(code=text, what=what, error=error, advice=ADVICE[what])


def _find(
    node: cst.BaseExpression,
    env: Env,
    mxnet: str,
    resolve: Resolve,
    records: Callable[[], dict[str, str]],
) -> tuple[cst.CSTNode, str] | None:
    kind = type(node)
    if kind in (cst.Tuple, cst.List):
        for element in node.elements:  # type: ignore[attr-defined]
            if type(element) is cst.StarredElement:
                continue
            found = _find(element.value, env, mxnet, resolve, records)
            if found is not None:
                return found
        return None
    if kind in (cst.Dict, cst.DictComp):
        return node, "a dict"
    number = (cst.Integer, cst.Float, cst.Imaginary)
    if kind in number or (
        kind is cst.UnaryOperation and type(node.expression) in number  # type: ignore[attr-defined]
    ):
        return node, "a number"
    if kind in (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString):
        return node, "a string"
    if kind is cst.Name:
        name = node.value  # type: ignore[attr-defined]
        if name in ("True", "False"):
            return node, "a bool"
        held = Kind.NONE if name == "None" else env.get(name)
        if held is Kind.MAPPING:
            return node, "a dict"
        if held is Kind.NONE and mxnet == "1":
            return node, "None"
        return None
    if kind is cst.Call:
        func = node.func  # type: ignore[attr-defined]
        if type(func) is cst.Name and func.value == "dict" and "dict" not in env:
            return node, "a dict"
        if resolve(func) in MAPPING_TYPES:
            return node, "a dict"
        if type(func) is cst.Name and func.value not in env:
            record = records().get(func.value)
            if record is not None:
                return node, f"a {record}" + (" instance" if record == "dataclass" else "")
    return None
