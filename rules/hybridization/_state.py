"""Block state a hybridized forward pass changes (MXL113).

Imperatively the forward's Python code runs on every call; hybridized, only while the graph is
traced. A write to the block's attributes is a finding unless it leaves the same state either
way: on an imperative-only path (the hooks are silent there), in a one-time initialisation of a
non-tensor (`if self.size is None: self.size = ...`, the interpreter's `once`), a value that is
the same on every call assigned at the top of the forward (`self.head.start = 0`, `= len(ys)`)
and read nowhere else in it, or attributes the forward binds afresh and returns (a list of
outputs built in place: its caller gets the same tensors from the return value).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from mxlint.checker import shortened
from mxlint.names import dotted_name
from mxlint.rules.hybridization._taint import TENSORISH, Kind
from mxlint.rules.hybridization.block_state_in_forward import (
    PARAM_ADVICE,
    STATE_ADVICE,
    TENSOR_STATE_ADVICE,
)
from mxlint.walker import iter_nodes

#: Methods that change the list, dict, set or deque they are called on.
MUTATORS = frozenset(
    {
        "append",
        "appendleft",
        "extend",
        "insert",
        "pop",
        "popitem",
        "remove",
        "clear",
        "update",
        "setdefault",
        "add",
        "discard",
    }
)
#: Kinds of a value that holds tensors.
_HOLDS_TENSORS = TENSORISH | {Kind.GROUP, Kind.OPTIONAL}
#: Builtins whose result depends only on their arguments.
_STEADY_BUILTINS = frozenset(
    {"len", "int", "float", "bool", "str", "tuple", "list", "min", "max", "abs", "round", "sum"}
)
_NESTED = (cst.FunctionDef, cst.ClassDef, cst.Lambda)

Code = Callable[[cst.CSTNode], str]


@dataclass(frozen=True)
class Change:
    """One change of the block's state: the message, what a call site says, the node."""

    message: str
    what: str
    node: cst.CSTNode


@dataclass(frozen=True)
class Forward:
    """What the hybridized method's own body says about the attributes it writes."""

    #: Attributes it binds afresh before reading them and returns (a list of outputs).
    scratch: frozenset[str]
    #: Its top-level assignments of a value that is the same on every call (constants,
    #: locals, builtins of them) to attributes it reads nowhere else.
    steady: frozenset[int]

    @classmethod
    def of(cls, fn: cst.FunctionDef) -> Forward:
        body = fn.body.body if type(fn.body) is cst.IndentedBlock else ()
        reads = _reads(fn)
        seen: set[str] = set()
        fresh: set[str] = set()
        steady: set[int] = set()
        for stmt in body:
            smalls = stmt.body if type(stmt) is cst.SimpleStatementLine else (stmt,)
            for small in smalls:
                if type(small) is not cst.Assign:
                    seen |= _mentioned(small)
                    continue
                targets = [t.target for t in small.targets]
                spelled = [dotted_name(t) for t in targets]
                if (
                    all(s is not None and s.startswith("self.") for s in spelled)
                    and _same_every_call(small.value)
                    and not any(s in reads for s in spelled)
                ):
                    steady.add(id(small))
                if len(targets) == 1:
                    parts = (
                        [e.value for e in targets[0].elements]
                        if isinstance(targets[0], (cst.Tuple, cst.List))
                        else targets[0:1]
                    )
                    attrs = [block_attribute(part, direct=True) for part in parts]
                    value_mentions = _mentioned(small.value)
                    fresh.update(
                        a for a in attrs if a and a not in seen and a not in value_mentions
                    )
                seen |= _mentioned(small)
        returned: set[str] = set()
        for node in iter_nodes(fn.body, stop=_NESTED):
            if type(node) is cst.Return and node.value is not None:
                value = node.value
                parts = (
                    [e.value for e in value.elements]
                    if isinstance(value, (cst.Tuple, cst.List))
                    else [value]
                )
                returned.update(a for p in parts if (a := block_attribute(p, direct=True)))
        return cls(frozenset(fresh & returned), frozenset(steady))


def read_attributes(module: cst.Module) -> frozenset[str]:
    """Attribute names read anywhere in the module, or declared by a constructor: every
    `x.name` but the targets of
    assignments (`x.name = v`, `x.name += v`), methods called (`x.name(...)`) and the receivers
    of container updates (`x.name.append(v)`). One scan per module: `FileAnalysis` keeps it
    for the module's other blocks."""
    counts: dict[str, int] = {}
    for node in iter_nodes(module, stop=(cst.Import, cst.ImportFrom)):  # module paths
        kind = type(node)
        if kind is cst.Attribute:
            name = node.attr.value  # type: ignore[attr-defined]
            counts[name] = counts.get(name, 0) + 1
            continue
        written: list[cst.BaseExpression] = []
        if kind is cst.Assign:
            written = [t.target for t in node.targets]  # type: ignore[attr-defined]
        elif kind in (cst.AugAssign, cst.AnnAssign):
            written = [node.target]  # type: ignore[attr-defined]
        elif kind is cst.Call and type(node.func) is cst.Attribute:  # type: ignore[attr-defined]
            # `other.name(...)` calls a method of that name: not a read of the state.
            written = [node.func]  # type: ignore[attr-defined]
            if node.func.attr.value in MUTATORS:  # type: ignore[attr-defined]
                written.append(node.func.value)  # type: ignore[attr-defined]
        for target in written:
            parts = target.elements if isinstance(target, (cst.Tuple, cst.List)) else ()
            for t in [e.value for e in parts] or [target]:
                if type(t) is cst.Attribute:
                    counts[t.attr.value] = counts.get(t.attr.value, 0) - 1
    # State a constructor declares (`self.mode = "eval"` in `__init__`) is the block's state,
    # read or not here: other modules read it.
    declared = {
        target.attr.value
        for fn in iter_nodes(module)
        if type(fn) is cst.FunctionDef and fn.name.value == "__init__"
        for node in iter_nodes(fn.body, stop=_NESTED)
        if type(node) in (cst.Assign, cst.AnnAssign, cst.AugAssign)
        for target in (
            [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]  # type: ignore[attr-defined]
        )
        if type(target) is cst.Attribute
    }
    read = frozenset(name for name, count in counts.items() if count > 0) | declared
    return read


def block_attribute(node: cst.BaseExpression, direct: bool = False) -> str | None:
    """The attribute of `self` that a write through `node` changes: `a` for `self.a`, and
    (unless `direct`) for `self.a.b` and `self.a[k]`."""
    while True:
        if type(node) is cst.Attribute:
            if type(node.value) is cst.Name and node.value.value == "self":
                return node.attr.value
            if direct:
                return None
            node = node.value
        elif type(node) is cst.Subscript and not direct:
            node = node.value
        else:
            return None


def _rooted_at_self(node: cst.BaseExpression) -> bool:
    """`self.w`, `self.params.get('w')`, `self.collect_params()['w']`: reached from `self`."""
    while type(node) in (cst.Attribute, cst.Subscript, cst.Call):
        node = node.func if type(node) is cst.Call else node.value  # type: ignore[attr-defined]
    return type(node) is cst.Name and node.value == "self"


def _mentioned(node: cst.CSTNode) -> set[str]:
    return {
        n.attr.value
        for n in iter_nodes(node, stop=_NESTED)
        if type(n) is cst.Attribute and type(n.value) is cst.Name and n.value.value == "self"
    }


def _reads(fn: cst.FunctionDef) -> set[str]:
    """`self.a.b` chains the body reads (every spelling but as an assignment's target)."""
    spelled: list[str] = []
    targets: list[str] = []
    for node in iter_nodes(fn.body, stop=_NESTED):
        if type(node) is cst.Attribute:
            name = dotted_name(node)
            if name is not None and name.startswith("self."):
                spelled.append(name)
        elif type(node) is cst.Assign:
            targets.extend(n for t in node.targets if (n := dotted_name(t.target)) is not None)
    for name in targets:
        if name in spelled:
            spelled.remove(name)
    return set(spelled)


def _same_every_call(node: cst.BaseExpression) -> bool:
    """Constants, locals and builtins of them (`0`, `len(ys)`, `(h, w)`): nothing that reads
    the block, a tensor's value or the outside world."""
    for part in iter_nodes(node, stop=_NESTED):
        kind = type(part)
        if kind is cst.Name and part.value == "self":  # type: ignore[attr-defined]
            return False
        if kind is cst.Call and not (
            type(part.func) is cst.Name  # type: ignore[attr-defined]
            and part.func.value in _STEADY_BUILTINS  # type: ignore[attr-defined]
        ):
            return False
        if kind in (cst.Await, cst.Yield, cst.Lambda):
            return False
    return True


def written(
    target: cst.BaseExpression,
    value: Kind,
    stmt: cst.CSTNode,
    *,
    once: bool,
    forward: Forward | None,
    code: Code,
    read: frozenset[str],
) -> Change | None:
    """An assignment through `target` (`value` being what it assigns) in analysed code;
    `read` holds the attribute names the file reads (`read_attributes`)."""
    attr = block_attribute(target)
    if attr is None or type(stmt) in (cst.For, cst.CompFor, cst.With):
        return None
    tensor = value in _HOLDS_TENSORS
    if forward is not None and (
        attr in forward.scratch or (id(stmt) in forward.steady and not tensor)
    ):
        return None
    if not tensor and type(stmt) is cst.Assign and attr not in read:
        return None  # a plain value the file never reads back: writing it changes nothing
    return _change(attr, tensor, stmt, once, code)


def called(
    node: cst.Call,
    args: list[tuple[cst.Arg, Kind]],
    *,
    once: bool,
    forward: Forward | None,
    code: Code,
) -> Change | None:
    """A call that changes the block: a container it holds, or one of its parameters."""
    func = node.func
    if type(func) is not cst.Attribute:
        return None
    method = func.attr.value
    if method == "set_data" and _rooted_at_self(func.value):
        param = shortened(code(func.value), 30)
        return Change(
            PARAM_ADVICE.format(code=shortened(code(node), 40)),
            f"sets parameter `{param}`",
            node,
        )
    if method not in MUTATORS:
        return None
    attr = block_attribute(func.value)
    if attr is None or (forward is not None and attr in forward.scratch):
        return None
    return _change(attr, any(k in _HOLDS_TENSORS for _, k in args), node, once, code)


def _change(attr: str, tensor: bool, node: cst.CSTNode, once: bool, code: Code) -> Change | None:
    if once and not tensor:
        return None  # a one-time initialisation runs once either way
    text = shortened(code(node), 40)
    if tensor:
        return Change(
            TENSOR_STATE_ADVICE.format(code=text), f"keeps a tensor in `self.{attr}`", node
        )
    return Change(STATE_ADVICE.format(code=text), f"changes `self.{attr}`", node)
