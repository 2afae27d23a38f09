"""What the lifecycle rules share about files: the model files a program writes and reads, each
with the path it names, so that a reader can be matched with the writer of the same file.

A path is known as a *key*: the string it evaluates to, where names bound once to a string are
followed and joins, `+`, f-strings, `%` and `.format()` are evaluated; a part that is not known
(a parameter, `args.prefix`) stands in the key as a marker naming the variable, so two calls of
one file that spell the same variable name the same file. Keys with no marker are plain paths
(other files of the run can name them too).

Formats, as MXNet 1.9.1 writes and reads them (each pair checked on MXNet):

- `gluon`: `save_parameters` (structural names, `0.weight`);
- `legacy`: `save_params` of a Gluon block, `collect_params().save(f, strip_prefix=...)`
  (names without the block's prefix, `dense0_weight`);
- `full`: `collect_params().save(f)` (full names, `hybridsequential0_dense0_weight`);
- `checkpoint`: `export`, `save_checkpoint`, a Module's `save_params` (`arg:`/`aux:` names);
- `symbol`: the graph (`-symbol.json`) `export` and `save_checkpoint` write.

`load_parameters` (and `load_params`, which 1.9.1 makes an alias of it) reads `gluon` and,
through its legacy fallback, `legacy`; `SymbolBlock.imports` reads `checkpoint` and `full`;
`mx.model.load_checkpoint` and `Module.load` read `checkpoint` only; `collect_params().load`
reads `full` and `checkpoint` (both by the global names of the process that builds the
network).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import libcst as cst

from mxlint import knowledge
from mxlint.checker import FileContext
from mxlint.names import dotted_name
from mxlint.walker import NESTED_SCOPES, iter_nodes, nodes_of

#: Delimits a part of a key that is a variable, not text.
MARK = "\x00"

#: What each reader accepts.
ACCEPTS: dict[str, frozenset[str]] = {
    "load_parameters": frozenset({"gluon", "legacy"}),
    "imports": frozenset({"checkpoint", "full"}),
    "checkpoint": frozenset({"checkpoint"}),
    "collect_load": frozenset({"full", "checkpoint"}),
}

#: Methods only a Module has (a receiver they are called on is a Module).
_MODULE_METHODS = frozenset(
    {
        "bind",
        "init_params",
        "init_optimizer",
        "fit",
        "forward_backward",
        "get_params",
        "set_params",
        "score",
        "predict",
        "save_checkpoint",
        "update_metric",
        "get_outputs",
    }
)
#: Methods only a Gluon block has.
_GLUON_METHODS = frozenset(
    {
        "initialize",
        "hybridize",
        "collect_params",
        "save_parameters",
        "load_parameters",
        "cast",
        "reset_ctx",
        "export",
        "register_child",
        "name_scope",
    }
)
_MODULE_CLASSES = frozenset(
    {"mxnet.mod.Module", "mxnet.module.Module", "mxnet.mod.BucketingModule"}
)
_SYMBOL_BLOCK = ("SymbolBlock", "SymbolBlock.imports")
_LOAD_CHECKPOINT = frozenset({"mxnet.model.load_checkpoint"})
_SAVE_CHECKPOINT = frozenset({"mxnet.model.save_checkpoint"})
_MODULE_LOAD = frozenset({"mxnet.mod.Module.load", "mxnet.module.Module.load"})
_EXPORT_BLOCK = frozenset(
    {"gluoncv.utils.export_block", "gluoncv.utils.export_helper.export_block"}
)
_IMPORTS = frozenset({"mxnet.gluon.SymbolBlock.imports"})


@dataclass(frozen=True)
class Written:
    """A file a call writes."""

    key: str
    #: `gluon`, `legacy`, `full`, `checkpoint` or `symbol`.
    fmt: str
    #: The call as written (`net.save_parameters(...)`), for messages.
    what: str
    line: int
    path: str
    #: A graph a Gluon HybridBlock's `export` wrote: its inputs are named `data` (one input)
    #: or `data0`, `data1`, ... (several).
    gluon_graph: bool = False
    #: How many inputs the exported network was called with before the export, when known.
    inputs: int | None = None


@dataclass
class Read:
    """A file a call reads."""

    key: str
    #: A key of `ACCEPTS`, or `symbol` for the graph `SymbolBlock.imports` reads.
    reader: str
    call: cst.Call
    #: The call as written, for messages.
    what: str
    #: For `symbol`: the input names given (None when they are not literal strings), and
    #: the argument that holds them.
    names: tuple[str, ...] | None = None
    names_node: cst.BaseExpression | None = None


@dataclass
class FileIO:
    """The files one module writes and reads."""

    writes: list[Written] = field(default_factory=list)
    reads: list[Read] = field(default_factory=list)


def is_plain(key: str) -> bool:
    """A key with no variable part: a path other files can name too."""
    return MARK not in key


_SHOWN = re.compile(f"{MARK}([^{MARK}#:]*)(?:#[0-9a-f]+)?(:[^{MARK}]*)?{MARK}")


def shown(key: str) -> str:
    """A key as a message shows it (`{args.prefix}-symbol.json`, `m-{epoch:04d}.params`)."""
    return _SHOWN.sub(lambda m: "{" + m.group(1) + (m.group(2) or "") + "}", key)


# -- keys ----------------------------------------------------------------------------------


class _Keys:
    """Keys of the path expressions of one file."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx

    def key(self, node: cst.BaseExpression | None, depth: int = 0) -> str | None:
        if node is None or depth > 8:
            return None
        kind = type(node)
        if kind is cst.SimpleString:
            value = node.evaluated_value  # type: ignore[attr-defined]
            return value if isinstance(value, str) else None
        if kind is cst.ConcatenatedString:
            left = self.key(node.left, depth + 1)  # type: ignore[attr-defined]
            right = self.key(node.right, depth + 1)  # type: ignore[attr-defined]
            return left + right if left is not None and right is not None else None
        if kind is cst.FormattedString:
            return self._fstring(node, depth)  # type: ignore[arg-type]
        if kind is cst.BinaryOperation:
            return self._binary(node, depth)  # type: ignore[arg-type]
        if kind is cst.Name:
            return self._name(node, depth)  # type: ignore[arg-type]
        if kind is cst.Attribute:
            dotted = dotted_name(node)  # type: ignore[arg-type]
            return f"{MARK}{dotted}{MARK}" if dotted is not None else None
        if kind is cst.Call:
            return self._call(node, depth)  # type: ignore[arg-type]
        return None

    def _name(self, node: cst.Name, depth: int) -> str | None:
        scope = self.ctx.bindings.scope_at(node)
        owner = scope.lookup(node.value)
        if owner is not None:
            found = owner.bindings(node.value)
            if len(found) == 1 and found[0].kind == "assignment" and found[0].value is not None:
                inner = self.key(found[0].value, depth + 1)
                if inner is not None:
                    return inner
        where = id(owner.node) if owner is not None else 0
        return f"{MARK}{node.value}#{where:x}{MARK}"

    def _fstring(self, node: cst.FormattedString, depth: int) -> str | None:
        parts: list[str] = []
        for part in node.parts:
            if type(part) is cst.FormattedStringText:
                parts.append(part.value)
                continue
            assert isinstance(part, cst.FormattedStringExpression)
            spec = _spec_text(part.format_spec)
            if part.conversion is not None or spec is None:
                return None
            value = self._formatted(part.expression, spec, depth)
            if value is None:
                return None
            parts.append(value)
        return "".join(parts)

    def _formatted(self, node: cst.BaseExpression, spec: str, depth: int) -> str | None:
        """One value placed in a format (`{}` / `{:04d}` / `%s` / `%04d`)."""
        if spec in ("", "s"):
            return self.key(node, depth + 1)
        number = _int(node)
        if number is not None and re.fullmatch(r"0?\d*d", spec):
            return format(number, spec)
        inner = self.key(node, depth + 1)
        if inner is None or inner.count(MARK) != 2 or not inner.startswith(MARK):
            return None
        return f"{inner[:-1]}:{spec}{MARK}"

    def _binary(self, node: cst.BinaryOperation, depth: int) -> str | None:
        if type(node.operator) is cst.Add:
            left, right = self.key(node.left, depth + 1), self.key(node.right, depth + 1)
            return left + right if left is not None and right is not None else None
        if type(node.operator) is cst.Modulo and type(node.left) is cst.SimpleString:
            template = node.left.evaluated_value
            if not isinstance(template, str):
                return None
            values = (
                [e.value for e in node.right.elements]
                if type(node.right) is cst.Tuple
                else [node.right]
            )
            return self._template(template, r"%(0?\d*[sd])", values, depth)
        return None

    def _call(self, node: cst.Call, depth: int) -> str | None:
        func = node.func
        if (
            type(func) is cst.Attribute
            and func.attr.value == "format"
            and type(func.value) is cst.SimpleString
            and all(a.keyword is None and not a.star for a in node.args)
        ):
            template = func.value.evaluated_value
            if not isinstance(template, str):
                return None
            return self._template(
                template, r"\{:?(0?\d*[sd]?)\}", [a.value for a in node.args], depth
            )
        name = self.ctx.resolve(func)
        if name in ("os.path.join", "posixpath.join") and node.args:
            parts = [self.key(a.value, depth + 1) for a in node.args if not a.star]
            if len(parts) != len(node.args) or any(p is None for p in parts):
                return None
            return "/".join(p for p in parts if p is not None)
        return None

    def _template(
        self, template: str, pattern: str, values: list[cst.BaseExpression], depth: int
    ) -> str | None:
        out: list[str] = []
        pos = 0
        index = 0
        for m in re.finditer(pattern, template):
            if index >= len(values):
                return None
            value = self._formatted(values[index], m.group(1).rstrip("s"), depth)
            if value is None:
                return None
            out.append(template[pos : m.start()] + value)
            pos = m.end()
            index += 1
        if index != len(values):
            return None
        return "".join(out) + template[pos:]


def _spec_text(spec: object) -> str | None:
    if spec is None:
        return ""
    parts = getattr(spec, "__iter__", None) and list(spec)  # type: ignore[call-overload]
    if not parts:
        return ""
    if all(type(p) is cst.FormattedStringText for p in parts):
        return "".join(p.value for p in parts)
    return None


def _int(node: cst.BaseExpression | None) -> int | None:
    if type(node) is cst.Integer:
        return node.evaluated_value  # `0x10` and `1_000` as Python reads them
    return None


def _epoch_key(keys: _Keys, node: cst.BaseExpression | None, prefix: str) -> str | None:
    """`{prefix}-{epoch:04d}.params`, the file `export`/`save_checkpoint` write."""
    number = 0 if node is None else _int(node)
    if number is not None:
        return f"{prefix}-{number:04d}.params"
    inner = keys.key(node)
    if inner is None or inner.count(MARK) != 2 or not inner.startswith(MARK):
        return None
    return f"{prefix}-{inner[:-1]}:04d{MARK}.params"


# -- the calls -------------------------------------------------------------------------------


def _arg(call: cst.Call, index: int, keyword: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    plain = [a for a in call.args if a.keyword is None]
    if any(a.star for a in plain[: index + 1]):
        return None
    return plain[index].value if index < len(plain) else None


def _has_keyword(call: cst.Call, keyword: str) -> bool:
    return any(a.keyword is not None and a.keyword.value == keyword for a in call.args)


def _names(node: cst.BaseExpression | None) -> tuple[str, ...] | None:
    """Literal input names: a string, or a list/tuple of strings."""
    if type(node) is cst.SimpleString:
        value = node.evaluated_value
        return (value,) if isinstance(value, str) else None
    if isinstance(node, (cst.List, cst.Tuple)):
        out: list[str] = []
        for el in node.elements:
            if type(el.value) is not cst.SimpleString or type(el) is not cst.Element:
                return None
            value = el.value.evaluated_value
            if not isinstance(value, str):
                return None
            out.append(value)
        return tuple(out)
    return None


class _Receivers:
    """What the objects of one scope are, from how they are made and used: a Gluon block, a
    Module, a SymbolBlock, and how many inputs each network is called with."""

    def __init__(self, ctx: FileContext, scope: cst.CSTNode) -> None:
        self.kinds: dict[str, set[str]] = {}
        self.arity: dict[str, set[int | None]] = {}
        for node in iter_nodes(scope, stop=NESTED_SCOPES) if scope is not None else ():
            if type(node) is cst.Assign and type(node.value) is cst.Call:
                target = node.targets[0].target if len(node.targets) == 1 else None
                name = ctx.resolve(node.value.func)
                owner = dotted_name(target) if target is not None else None
                if owner is None or name is None:
                    continue
                canon = knowledge.canonical(name)
                if canon in _MODULE_CLASSES:
                    self._add(owner, "module")
                elif name.endswith(_SYMBOL_BLOCK) or canon in knowledge.SYMBOL_BLOCKS:
                    self._add(owner, "symbolblock")
                elif knowledge.builds_network(name):
                    self._add(owner, "gluon")
            elif type(node) is cst.Call:
                func = node.func
                if type(func) is cst.Attribute:
                    owner = dotted_name(func.value)
                    if owner is not None:
                        method = func.attr.value
                        if method in _MODULE_METHODS:
                            self._add(owner, "module")
                        elif method in _GLUON_METHODS:
                            self._add(owner, "gluon")
                owner = dotted_name(func)
                if owner is not None:
                    count: int | None = len(node.args)
                    if any(
                        a.star
                        or a.keyword is not None
                        or isinstance(a.value, (cst.List, cst.Tuple))
                        for a in node.args
                    ):
                        count = None
                    self.arity.setdefault(owner, set()).add(count)

    def _add(self, owner: str, kind: str) -> None:
        self.kinds.setdefault(owner, set()).add(kind)

    def kind(self, owner: str | None) -> str | None:
        """`gluon`, `module` or `symbolblock` when only that is seen."""
        found = self.kinds.get(owner or "", set())
        if "symbolblock" in found:
            return "symbolblock"
        return next(iter(found)) if len(found) == 1 else None

    def inputs(self, owner: str | None) -> int | None:
        """The number of inputs every call of the network passes, when they agree."""
        counts = self.arity.get(owner or "", set())
        if len(counts) == 1:
            (count,) = counts
            return count
        return None


def collect(ctx: FileContext) -> FileIO:
    """The files the module writes and reads, in any of its scopes."""
    keys = _Keys(ctx)
    out = FileIO()
    receivers: dict[int, _Receivers] = {}
    lines: dict[cst.CSTNode, int] = {}
    calls = nodes_of(ctx.module, cst.Call)
    wanted = [c for c in calls if _interesting(c)]
    if not wanted:
        return out
    from mxlint.positions import node_ranges

    ranges = node_ranges(ctx.module, wanted, ctx.source)
    for call in wanted:
        rng = ranges.get(call)
        lines[call] = rng[0][0] if rng else 0
    for call in wanted:
        scope = ctx.bindings.scope_at(call).node
        seen = receivers.get(id(scope))
        if seen is None:
            seen = receivers[id(scope)] = _Receivers(ctx, scope)
        _one(ctx, keys, seen, call, lines[call], out)
    return out


_METHODS = frozenset(
    {
        "save_parameters",
        "save_params",
        "load_parameters",
        "load_params",
        "export",
        "save_checkpoint",
        "save",
        "load",
        "imports",
        "load_checkpoint",
        "export_block",
    }
)


def _interesting(call: cst.Call) -> bool:
    func = call.func
    if type(func) is cst.Attribute:
        return func.attr.value in _METHODS
    return type(func) is cst.Name and func.value in ("load_checkpoint", "export_block")


def _one(
    ctx: FileContext, keys: _Keys, receivers: _Receivers, call: cst.Call, line: int, out: FileIO
) -> None:
    func = call.func
    name = ctx.resolve(func)
    canon = knowledge.canonical(name) if name is not None else None
    what = ctx.code(func) + "(...)"
    if canon in _IMPORTS:
        symbol = keys.key(_arg(call, 0, "symbol_file"))
        names_node = _arg(call, 1, "input_names")
        if symbol is not None:
            out.reads.append(Read(symbol, "symbol", call, what, _names(names_node), names_node))
        params = keys.key(_arg(call, 2, "param_file"))
        if params is not None:
            out.reads.append(Read(params, "imports", call, what))
        return
    if canon in _LOAD_CHECKPOINT or canon in _MODULE_LOAD:
        prefix = keys.key(_arg(call, 0, "prefix"))
        if prefix is not None:
            params = _epoch_key(keys, _arg(call, 1, "epoch"), prefix)
            if params is not None:
                out.reads.append(Read(params, "checkpoint", call, what))
        return
    if canon in _SAVE_CHECKPOINT:
        prefix = keys.key(_arg(call, 0, "prefix"))
        _write_checkpoint(out, keys, prefix, _arg(call, 1, "epoch"), what, line, ctx, None)
        return
    if canon in _EXPORT_BLOCK:
        prefix = keys.key(_arg(call, 0, "path"))
        epoch = _arg(call, 3, "epoch")
        _write_checkpoint(out, keys, prefix, epoch, what, line, ctx, 1)
        return
    if type(func) is not cst.Attribute:
        return
    method = func.attr.value
    owner_node = func.value
    owner = dotted_name(owner_node)
    # `net.collect_params().save(f)` / `.load(f)`
    if (
        method in ("save", "load")
        and type(owner_node) is cst.Call
        and type(owner_node.func) is cst.Attribute
        and owner_node.func.attr.value == "collect_params"
        and not owner_node.args
    ):
        path = keys.key(_arg(call, 0, "filename"))
        if path is None:
            return
        if method == "save":
            fmt = "legacy" if _has_keyword(call, "strip_prefix") else "full"
            out.writes.append(Written(path, fmt, what, line, ctx.path))
        elif not _has_keyword(call, "restore_prefix") and _arg(call, 4, "restore_prefix") is None:
            out.reads.append(Read(path, "collect_load", call, what))
        return
    kind = receivers.kind(owner)
    path = keys.key(_arg(call, 0, "filename" if method != "export" else "path"))
    if path is None:
        return
    if method == "save_parameters":
        out.writes.append(Written(path, "gluon", what, line, ctx.path))
    elif method == "save_params" and kind in ("gluon", "module"):
        fmt = "legacy" if kind == "gluon" else "checkpoint"
        out.writes.append(Written(path, fmt, what, line, ctx.path))
    elif method == "load_parameters" or (method == "load_params" and kind == "gluon"):
        out.reads.append(Read(path, "load_parameters", call, what))
    elif method == "load_params" and kind == "module":
        out.reads.append(Read(path, "checkpoint", call, what))
    elif method == "export" and kind != "module":
        inputs = receivers.inputs(owner) if kind == "gluon" or kind is None else None
        graph = 0 if kind == "symbolblock" else (inputs if inputs is not None else -1)
        _write_checkpoint(out, keys, path, _arg(call, 1, "epoch"), what, line, ctx, graph)
    elif method == "save_checkpoint" and kind == "module":
        _write_checkpoint(out, keys, path, _arg(call, 1, "epoch"), what, line, ctx, None)


def _write_checkpoint(
    out: FileIO,
    keys: _Keys,
    prefix: str | None,
    epoch: cst.BaseExpression | None,
    what: str,
    line: int,
    ctx: FileContext,
    graph: int | None,
) -> None:
    """The symbol file and the parameters `export`/`save_checkpoint` write. `graph`: None for
    a graph not made by a Gluon export, 0 for a SymbolBlock's (its own input names), -1 for a
    Gluon export of unknown input count, else that count."""
    if prefix is None:
        return
    gluon = graph is not None and graph != 0
    inputs = graph if graph is not None and graph > 0 else None
    out.writes.append(
        Written(prefix + "-symbol.json", "symbol", what, line, ctx.path, gluon, inputs)
    )
    params = _epoch_key(keys, epoch, prefix)
    if params is not None:
        out.writes.append(Written(params, "checkpoint", what, line, ctx.path))


def writers_of(read: Read, writes: list[Written]) -> Iterator[Written]:
    """The writes of the file `read` reads."""
    for w in writes:
        if w.key == read.key:
            yield w
