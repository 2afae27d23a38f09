"""The command-line options of a script that hold a Python number once parsed (MXL109).

Read from the file's own `argparse` parsers: `p = argparse.ArgumentParser(...)` (and its
argument groups), each `p.add_argument(...)` with literal option strings, and the names bound
to `p.parse_args()` / `p.parse_known_args()` — directly, or through a function of the file that
returns the parsed namespace (`args = parse_args()`). An option holds a number when its
`type=` is `int` or `float`, or when it has no `type=` and its default is a number literal; an
option with `nargs=`, an `action=` other than `store`, or any other type (`str`, a function) is
not a number. A dest two options spell differently is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from mxlint.checker import FileContext
from mxlint.names import dotted_name
from mxlint.walker import typed_nodes

_GROUPS = frozenset({"add_argument_group", "add_mutually_exclusive_group"})
_PARSE = frozenset({"parse_args", "parse_known_args"})
_ONE = frozenset({"parse_args"})
_NUMBER_TYPES = frozenset({"int", "float"})


@dataclass
class NumberOptions:
    #: Names the parsed namespace is bound to (`args`, `opt`).
    namespaces: set[str] = field(default_factory=set)
    #: dest -> the option's type as written (`float`, `int`), or "a number by default".
    numbers: dict[str, str] = field(default_factory=dict)
    #: The assignments that bind a namespace; any other assignment of the name rebinds it.
    bindings: set[int] = field(default_factory=set)

    def rebinds(self, node: cst.Assign) -> str | None:
        """The name or `args.<dest>` an assignment rebinds to something else, if any."""
        if id(node) in self.bindings:
            return None
        key = dotted_name(node.targets[0].target)
        if key is None:
            return None
        owner = key.split(".", 1)[0]
        return key if owner in self.namespaces and key.count(".") <= 1 else None

    def number(self, node: cst.BaseExpression, shadowed: set[str]) -> str | None:
        """`args.scale` when `--scale` holds a number and nothing in the scope rebound
        `args` or `args.scale`: the option's spelling, for the message."""
        if type(node) is not cst.Attribute or type(node.value) is not cst.Name:
            return None
        owner = node.value.value
        if owner not in self.namespaces or owner in shadowed:
            return None
        if f"{owner}.{node.attr.value}" in shadowed:
            return None
        return self.numbers.get(node.attr.value)


def number_literal(node: cst.BaseExpression) -> str | None:
    """The text of an int or float literal, signed (`-0.5`), else None."""
    if type(node) in (cst.Integer, cst.Float):
        return node.value  # type: ignore[attr-defined]
    if (
        type(node) is cst.UnaryOperation
        and type(node.operator) is cst.Minus
        and type(node.expression) in (cst.Integer, cst.Float)
    ):
        return "-" + node.expression.value  # type: ignore[attr-defined]
    return None


def _string(node: cst.BaseExpression) -> str | None:
    if type(node) is cst.SimpleString:
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _dest(call: cst.Call) -> str | None:
    flags: list[str] = []
    for arg in call.args:
        if arg.keyword is None:
            if arg.star:
                return None
            text = _string(arg.value)
            if text is None:
                return None
            flags.append(text)
        elif arg.keyword.value == "dest":
            return _string(arg.value)
    if not flags:
        return None
    longs = [f for f in flags if f.startswith("--")]
    chosen = longs[0] if longs else flags[0]
    return chosen.lstrip("-").replace("-", "_") or None


def _kind(call: cst.Call) -> str | None:
    """`float`/`int`/the default literal when the option holds a Python number, else None."""
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    if "nargs" in keywords:
        return None
    action = keywords.get("action")
    if action is not None and _string(action) != "store":
        return None
    kind = keywords.get("type")
    if kind is not None:
        return kind.value if type(kind) is cst.Name and kind.value in _NUMBER_TYPES else None
    default = keywords.get("default")
    if default is not None and number_literal(default) is not None:
        return "a number by default"
    return None


def _is_parser(ctx: FileContext, value: cst.BaseExpression) -> bool:
    if type(value) is not cst.Call:
        return False
    name = ctx.resolve(value.func) or dotted_name(value.func) or ""
    return name == "argparse.ArgumentParser" or name.endswith(".ArgumentParser")


def _parse_call(
    value: cst.BaseExpression, parsers: set[str], methods: frozenset[str] = _PARSE
) -> bool:
    return (
        type(value) is cst.Call
        and type(value.func) is cst.Attribute
        and value.func.attr.value in methods
        and dotted_name(value.func.value) in parsers
    )


def read_number_options(ctx: FileContext, module: cst.Module) -> NumberOptions | None:
    """The options of the file's parsers that hold numbers, or None when there are none."""
    if "add_argument" not in ctx.source:
        return None
    parsers: set[str] = set()
    assigns = [
        n
        for n in typed_nodes(module, (cst.Assign,))
        if type(n) is cst.Assign and len(n.targets) == 1
    ]
    for node in assigns:
        target = dotted_name(node.targets[0].target)
        if target is not None and _is_parser(ctx, node.value):
            parsers.add(target)
    if not parsers:
        return None
    for node in assigns:
        value = node.value
        target = dotted_name(node.targets[0].target)
        if (
            target is not None
            and type(value) is cst.Call
            and type(value.func) is cst.Attribute
            and value.func.attr.value in _GROUPS
            and dotted_name(value.func.value) in parsers
        ):
            parsers.add(target)
    out = NumberOptions()
    seen: dict[str, str | None] = {}
    for call in typed_nodes(module, (cst.Call,)):
        if (
            type(call) is cst.Call
            and type(call.func) is cst.Attribute
            and call.func.attr.value == "add_argument"
            and dotted_name(call.func.value) in parsers
        ):
            dest = _dest(call)
            if dest is None:
                continue
            kind = _kind(call)
            if dest in seen and seen[dest] != kind:
                kind = None
            seen[dest] = kind
    out.numbers = {dest: kind for dest, kind in seen.items() if kind is not None}
    if not out.numbers:
        return None
    # Functions of the file that return the parsed namespace (`def parse_args(): ...`).
    returning: set[str] = set()
    for fn in typed_nodes(module, (cst.FunctionDef,)):
        if type(fn) is not cst.FunctionDef:
            continue
        bound = {
            t.target.value
            for n in typed_nodes(fn, (cst.Assign,))
            if type(n) is cst.Assign and _parse_call(n.value, parsers, _ONE)
            for t in n.targets
            if type(t.target) is cst.Name
        }
        for n in typed_nodes(fn, (cst.Return,)):
            if (
                type(n) is cst.Return
                and n.value is not None
                and (
                    _parse_call(n.value, parsers, _ONE)
                    or (type(n.value) is cst.Name and n.value.value in bound)
                )
            ):
                returning.add(fn.name.value)
    for node in assigns:
        value = node.value
        bound_to = node.targets[0].target
        if _parse_call(value, parsers) or (
            type(value) is cst.Call
            and type(value.func) is cst.Name
            and value.func.value in returning
        ):
            if type(bound_to) is cst.Name:
                out.namespaces.add(bound_to.value)
                out.bindings.add(id(node))
            elif (
                type(bound_to) is cst.Tuple
                and bound_to.elements
                and type(bound_to.elements[0].value) is cst.Name
                and type(value) is cst.Call
                and type(value.func) is cst.Attribute
                and value.func.attr.value == "parse_known_args"
            ):
                out.namespaces.add(bound_to.elements[0].value.value)  # type: ignore[attr-defined]
                out.bindings.add(id(node))
    return out if out.namespaces else None
