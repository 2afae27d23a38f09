"""Which values of imperative code are NDArrays, as far as MXNet's own facts prove it.

A name bound once in its scope to a call of an `mx.nd` operator (one MXNet's registry lists
with array inputs, an arithmetic function, or a creator of several elements) holds an
NDArray; `nd.load` (a dict or list), `nd.waitall` and private helpers do not make one. Read by
MXL117 (truth values) and MXL110 (members NDArray does not have).
"""

from __future__ import annotations

import functools
import re

import libcst as cst

from mxlint import knowledge
from mxlint.checker import FileContext
from mxlint.knowledge.api import api

#: Reductions that, called without an axis, return one element (`nd.sum(x)` has shape (1,)).
_FULL_REDUCTIONS = frozenset(
    {"sum", "mean", "max", "min", "prod", "nansum", "nanprod", "norm", "argmax", "argmin"}
)


#: `name = <something>nd.` or `ndarray.`: an assignment that may bind an NDArray, at the
#: start of a line (a literal `\n` first: `^` in MULTILINE mode is tried at every character).
_ND_ASSIGNMENT = re.compile(r"\n[ \t]*(\w+)[ \t]*=[ \t]*[\w.]*\bnd(?:array)?\.")


def nd_assigned_names(ctx: FileContext) -> frozenset[str]:
    """Names the file assigns from a call spelt with `nd.` (`x = mx.nd.ones(...)`): the only
    names `array_origin` can prove to be NDArrays (found textually, so that the other names
    cost nothing; once per file for the checkers that ask); empty for MXNet 2 code."""
    return frozenset() if ctx.mxnet_line == "2" else _nd_assigned(ctx.source)


@functools.lru_cache(maxsize=2)
def _nd_assigned(source: str) -> frozenset[str]:
    return frozenset(_ND_ASSIGNMENT.findall("\n" + source))


def array_origin(ctx: FileContext, node: cst.BaseExpression, several: bool = True) -> str | None:
    """How `node` is known to be an NDArray (`several`: of possibly several elements): the
    `mx.nd` call that makes it, itself or through the one binding of its name; None if not
    known."""
    if type(node) is cst.Name:
        scope = ctx.bindings.scope_at(node).lookup(node.value)
        found = scope.bindings(node.value) if scope is not None else []
        if len(found) != 1 or found[0].kind != "assignment" or found[0].value is None:
            return None
        node = found[0].value
    if type(node) is not cst.Call:
        return None
    name = ctx.resolve(node.func)
    if name is None or not name.startswith("mxnet.nd."):
        return None
    # An operator of MXNet's registry (it takes arrays), an arithmetic function or a creator
    # returns an NDArray; `nd.load` (a dict or list), `nd.waitall` and helpers do not.
    facts = api()
    sig = facts.signatures.get(name[len("mxnet.") :])
    op = name.rsplit(".", 1)[-1]
    creator = name in knowledge.ndarray_creators()
    if not creator and op not in facts.broadcasts and (sig is None or not sig.tensors):
        return None
    positional = [a for a in node.args if a.keyword is None and not a.star]
    keywords = {a.keyword.value for a in node.args if a.keyword is not None}
    if several and op in _FULL_REDUCTIONS and len(positional) < 2 and "axis" not in keywords:
        return None
    if several and creator and not _several(op, positional):
        return None
    return f"made by `{ctx.code(node.func)}(...)`"


def _several(op: str, positional: list[cst.Arg]) -> bool:
    """A creator's literal shape or data with more than one element."""
    if not positional:
        return False
    first = positional[0].value
    if op == "array":
        return type(first) in (cst.List, cst.Tuple) and len(first.elements) > 1  # type: ignore[attr-defined]
    if type(first) is cst.Tuple and all(type(e.value) is cst.Integer for e in first.elements):
        size = 1
        for element in first.elements:
            size *= element.value.evaluated_value  # type: ignore[attr-defined]
        return size > 1
    return type(first) is cst.Integer and first.evaluated_value > 1
