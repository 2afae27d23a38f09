"""The command-line options a script's `argparse` parsers declare, read statically.

Two readings of the same `argparse` code, for two questions:

* `read_parser(text)`: every option a script's one parser accepts (MXL807, which judges the
  options a launch passes to another file of the run). It reads the text with Python's `ast`:
  the script is not the file being checked, and a libcst parse of it would cost far more.
* `read_number_options(ctx, module)`: the options of the checked file's parsers that hold a
  Python number once parsed (MXL109). It reads the file's libcst tree, already parsed, whose
  nodes the rule then compares (`NumberOptions.rebinds`), and resolves names through the file's
  imports.

Both share the vocabulary of `argparse` (`GROUP_METHODS`, `PARSE_METHODS`) and the following
of argument groups (`add_groups`); what each counts as known differs by design and is told
with each reader. `default_dest` and `argument_calls` also serve `--verify`, which reads a
script's parser defaults and flags with `ast`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from mxlint.names import dotted_name
from mxlint.walker import typed_nodes

if TYPE_CHECKING:
    from mxlint.checker import FileContext

#: Methods of a parser that return an argument group, which takes `add_argument` for it.
GROUP_METHODS = frozenset({"add_argument_group", "add_mutually_exclusive_group"})
#: Methods of a parser that parse the command line.
PARSE_METHODS = frozenset({"parse_args", "parse_known_args"})


def add_groups(
    receivers: set[str], assigned: Iterable[tuple[Iterable[str], str | None, str]]
) -> None:
    """Adds to `receivers` the names bound to an argument group of one of them (`group =
    parser.add_argument_group(...)`), a group of a group once bound after it. `assigned` holds,
    in the reader's order, one `(target names, owner, method)` per assignment of a method call."""
    for targets, owner, method in assigned:
        if method in GROUP_METHODS and owner in receivers:
            receivers.update(targets)


def default_dest(flags: Sequence[str]) -> str:
    """The attribute argparse stores an option under when it has no `dest=`: its first long
    option, else its first one, without the dashes and with `-` as `_` ("" for no flags)."""
    first = next((f for f in flags if f.startswith("--")), flags[0] if flags else "")
    return first.lstrip("-").replace("-", "_")


def argument_calls(tree: ast.AST) -> Iterator[tuple[list[str], dict[str, ast.expr]]]:
    """Every `.add_argument(...)` call of an `ast` tree, on any receiver: its literal option
    strings (`"--lr"`, `"-l"`) and its keywords by name."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            options = [
                a.value
                for a in node.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]
            yield options, {k.arg: k.value for k in node.keywords if k.arg}


# --- Every option of a script's parser (MXL807), read with `ast` ---------------------------
#
# Only a parser the file shows in full is read: one `argparse.ArgumentParser(...)` without
# `parents=`, its `add_argument` calls (directly or through its argument groups) with literal
# option strings, no subparsers, not handed to a function of another module (`add_fit_args(
# parser)` may add anything), and parsed with `parse_args()`/`parse_known_args()` of the real
# command line. Anything else is not known, and options passed to the script are not judged.

#: Methods of a parser that neither add options nor let another function add them.
_INERT = frozenset(
    {"set_defaults", "print_help", "print_usage", "format_help", "format_usage", "error", "exit"}
)


@dataclass
class Parser:
    """The options of a parser the file shows in full."""

    options: set[str] = field(default_factory=set)
    #: `--lr` also matches a unique longer option (`--lr-decay`) unless `allow_abbrev=False`.
    abbrev: bool = True
    #: `parse_known_args()`: an unknown option is left over instead of stopping the program.
    lenient: bool = False

    def accepts(self, option: str) -> bool | None:
        """True, False, or None when argparse would find it ambiguous."""
        if option in self.options or option in ("-h", "--help"):
            return True
        if self.abbrev and option.startswith("--"):
            longer = [o for o in self.options if o.startswith(option)]
            if len(longer) == 1:
                return True
            if len(longer) > 1:
                return None
        return False


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def _leftovers_used(tree: ast.Module, call: ast.Call) -> bool:
    """Whether `args, rest = parser.parse_known_args()` goes on to use `rest` (or keeps the
    pair whole); `args, _ = ...` and `parser.parse_known_args()[0]` drop it."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and node.value is call:
            index = node.slice
            return not (isinstance(index, ast.Constant) and index.value == 0)
        if isinstance(node, ast.Assign) and node.value is call:
            target = node.targets[0]
            if not isinstance(target, ast.Tuple) or len(target.elts) != 2:
                return True
            rest = target.elts[1]
            if not isinstance(rest, ast.Name):
                return True
            if rest.id == "_":
                return False
            return any(
                isinstance(n, ast.Name) and n.id == rest.id and isinstance(n.ctx, ast.Load)
                for n in ast.walk(tree)
            )
    return True


def read_parser(text: str) -> Parser | None:
    """The options of the file's one argparse parser, or None when not fully known."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    created = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and _name(node.value.func).endswith("ArgumentParser")
    ]
    if len(created) != 1 or len(created[0].targets) != 1:
        return None
    target = created[0].targets[0]
    if not isinstance(target, ast.Name):
        return None
    call = created[0].value
    assert isinstance(call, ast.Call)
    parser = Parser()
    for kw in call.keywords:
        if kw.arg in ("parents", "prefix_chars", "fromfile_prefix_chars") or kw.arg is None:
            return None
        if kw.arg == "allow_abbrev" and isinstance(kw.value, ast.Constant):
            parser.abbrev = bool(kw.value.value)
    receivers = {target.id}
    add_groups(
        receivers,
        (
            ([t.id for t in node.targets if isinstance(t, ast.Name)], _name(func.value), func.attr)
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and isinstance(func := node.value.func, ast.Attribute)
        ),
    )
    parsed = False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if any(isinstance(a, ast.Name) and a.id in receivers for a in node.args) or any(
            isinstance(k.value, ast.Name) and k.value.id in receivers for k in node.keywords
        ):
            return None  # handed to a function that may add options
        func = node.func
        if not isinstance(func, ast.Attribute):
            continue
        owner = _name(func.value)
        if func.attr == "add_argument":
            if owner not in receivers:
                return None  # another parser, or one this reading does not follow
            for arg in node.args:
                if not isinstance(arg, ast.Constant) or not isinstance(arg.value, str):
                    return None
                if arg.value.startswith("-"):
                    parser.options.add(arg.value)
        elif owner in receivers and func.attr in PARSE_METHODS:
            if node.args or node.keywords:
                return None  # parses something other than the command line
            if func.attr == "parse_known_args":
                if _leftovers_used(tree, node):
                    return None  # the script passes the other options on (launch.py does)
                parser.lenient = True
            parsed = True
        elif owner in receivers and func.attr not in _INERT and func.attr not in GROUP_METHODS:
            return None  # add_subparsers, parse_intermixed_args, ...
    return parser if parsed else None


# --- The options that hold a number (MXL109), read with libcst ----------------------------
#
# Read from the file's own `argparse` parsers: `p = argparse.ArgumentParser(...)` (and its
# argument groups), each `p.add_argument(...)` with literal option strings, and the names bound
# to `p.parse_args()` / `p.parse_known_args()` — directly, or through a function of the file
# that returns the parsed namespace (`args = parse_args()`). An option holds a number when its
# `type=` is `int` or `float`, or when it has no `type=` and its default is a number literal;
# an option with `nargs=`, an `action=` other than `store`, or any other type (`str`, a
# function) is not a number. A dest two options spell differently is dropped.

_ONE = frozenset({"parse_args"})
_NUMBER_TYPES = frozenset({"int", "float"})


@dataclass
class NumberOptions:
    """The numeric command-line options of a file, and the names they are read through."""

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
    return default_dest(flags) or None


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
    value: cst.BaseExpression, parsers: set[str], methods: frozenset[str] = PARSE_METHODS
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
    add_groups(
        parsers,
        (
            ([target], dotted_name(value.func.value), value.func.attr.value)
            for node in assigns
            if (target := dotted_name(node.targets[0].target)) is not None
            and type(value := node.value) is cst.Call
            and type(value.func) is cst.Attribute
        ),
    )
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
