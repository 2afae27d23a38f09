"""The command-line options a Python script's `argparse` parser accepts, read statically (MXL807).

Only a parser the file shows in full is read: one `argparse.ArgumentParser(...)` without
`parents=`, its `add_argument` calls (directly or through its argument groups) with literal
option strings, no subparsers, not handed to a function of another module (`add_fit_args(
parser)` may add anything), and parsed with `parse_args()`/`parse_known_args()` of the real
command line. Anything else is not known, and options passed to the script are not judged.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

_GROUPS = frozenset({"add_argument_group", "add_mutually_exclusive_group"})
#: Methods of a parser that neither add options nor let another function add them.
_INERT = frozenset(
    {"set_defaults", "print_help", "print_usage", "format_help", "format_usage", "error", "exit"}
)


@dataclass
class Parser:
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
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr in _GROUPS
            and _name(node.value.func.value) in receivers
        ):
            receivers.update(t.id for t in node.targets if isinstance(t, ast.Name))
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
        elif owner in receivers and func.attr in ("parse_args", "parse_known_args"):
            if node.args or node.keywords:
                return None  # parses something other than the command line
            if func.attr == "parse_known_args":
                if _leftovers_used(tree, node):
                    return None  # the script passes the other options on (launch.py does)
                parser.lenient = True
            parsed = True
        elif owner in receivers and func.attr not in _INERT and func.attr not in _GROUPS:
            return None  # add_subparsers, parse_intermixed_args, ...
    return parser if parsed else None
