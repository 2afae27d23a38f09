"""The `mx.onnx.export_model` calls of one file, what each passes, and which block it exports.

A call exports a block when its `sym` argument provably comes from one: the symbol file a
`net.export(prefix)` of the same file writes (`prefix + "-symbol.json"`, `f"{prefix}-symbol.json"`,
the literal path, or `mx.model.load_checkpoint(prefix, epoch)`/`mx.sym.load(path)` of it), or
a symbol made by calling the block on `mx.sym.var(...)`. `net` must be bound once in its scope
to a constructor call (a project class, or a `HybridSequential` whose `add`ed layers are then
the graph). Anything else (a network from a model zoo, a path read from the command line, two
nets exported under one name) exports an unknown block, and only the checks that need no block
are made.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from mxlint import knowledge
from mxlint.checker import FileContext
from mxlint.knowledge.onnx import onnx_facts
from mxlint.names import dotted_name
from mxlint.rules.onnx._blocks import SEQUENTIAL, ClassReader, Member
from mxlint.rules.onnx._scopes import Scope, canonical, template

EXPORTERS = frozenset(
    {
        "mxnet.onnx.export_model",
        "mxnet.onnx.mx2onnx.export_model",
        "mxnet.contrib.onnx.export_model",
    }
)
SYMBOL_SUFFIX = "-symbol.json"
LOAD_CHECKPOINT = frozenset({"mxnet.model.load_checkpoint"})
SYMBOL_LOAD = frozenset({"mxnet.sym.load", "mxnet.sym.fromjson"})
SYMBOL_VARS = frozenset({"mxnet.sym.var", "mxnet.sym.Variable"})
#: exporter keyword -> the parameter it stands for (1.9.1 keeps the old names)
ALIASES = {"input_shape": "in_shapes", "input_type": "in_types"}


@dataclass(frozen=True)
class BlockRef:
    """The block an export call exports: a class (as the file names it) and, for a
    `HybridSequential` built in the exporting function, the layers `add`ed to it."""

    name: str
    members: tuple[Member, ...]
    variable: str

    @property
    def text(self) -> str:
        """How messages name it: `net` (`Encoder`)."""
        return f"`{self.variable}` (`{self.name.rsplit('.', 1)[-1]}`)"


@dataclass(frozen=True)
class Arg:
    """What an argument of the call is, as far as it is literal."""

    given: bool
    #: Python value when the argument is a literal (shapes, dtypes as strings, booleans)
    value: object = None
    literal: bool = False
    #: index of the argument's node among the file's placed nodes (-1: none)
    node: int = -1
    text: str = ""
    #: (row, column, end row, end column) of the argument, once placed
    span: tuple[int, int, int, int] | None = None
    #: parentheses around the argument, outside its span (`(1, 3)` is a Tuple inside them)
    parens: int = 0


@dataclass(frozen=True)
class UnknownKeyword:
    """A keyword of the call that the exporter has no parameter for."""

    keyword: str
    #: the keyword's name; (node index, 0, 0, 0) while the file is read
    span: tuple[int, int, int, int]
    literal: bool
    value: object
    #: from the end of the argument before it to the end of its value (what removing it
    #: deletes); (previous value's node index, value's node index, 0, 0) while the file is
    #: read; None for a first argument
    cut: tuple[int, int, int, int] | None


@dataclass(frozen=True)
class ExportSite:
    path: str
    #: (row, column, end row, end column); (node index, 0, 0, 0) while the file is read
    span: tuple[int, int, int, int]
    symbol: str | None
    #: the call as written (`mx.onnx.export_model`, `onnx_mxnet.export_model`)
    callee: str
    block: BlockRef | None
    opset: int | None
    args: dict[str, Arg]
    #: what `onnx_file_path` spells (`_scopes.template`; the exporter's default when not
    #: given), None when it cannot be read
    output: str | None = None
    #: keywords the exporter has no parameter for
    unknown: tuple[UnknownKeyword, ...] = ()


class ExportReader:
    def __init__(self, ctx: FileContext, scopes: list[Scope], nodes: list[cst.CSTNode]) -> None:
        self.ctx = ctx
        self.scopes = scopes
        self.nodes = nodes
        self.params = onnx_facts().export_params
        self._exports: list[tuple[str, str, Scope]] | None = None

    def sites(self, classes: ClassReader) -> list[ExportSite]:
        out = []
        for scope in self.scopes:
            for call, _cond in scope.calls:
                if canonical(self.ctx, call.func) not in EXPORTERS:
                    continue
                out.append(self._site(call, scope, classes))
        return out

    def _site(self, call: cst.Call, scope: Scope, classes: ClassReader) -> ExportSite:
        bound: dict[str, cst.BaseExpression] = {}
        unknown: list[UnknownKeyword] = []
        for index, arg in enumerate(call.args):
            if arg.star:
                break
            if arg.keyword is None:
                if index < len(self.params):
                    bound[self.params[index]] = arg.value
            else:
                key = arg.keyword.value
                if key not in self.params:
                    unknown.append(self._unknown(call, index))
                bound[ALIASES.get(key, key)] = arg.value
        starred = any(arg.star for arg in call.args)
        args = {key: self._arg(bound.get(key), scope) for key in self.params}
        if starred:  # `export_model(*args, **kwargs)`: what is not written is unknown
            args = {key: arg if arg.given else Arg(True) for key, arg in args.items()}
        for key in ("in_shapes", "dynamic_input_shapes"):
            if key in bound:
                args[key] = self._arg(bound[key], scope, follow=True)
        opset_arg = self._arg(bound.get("opset_version"), scope)
        opset = opset_arg.value if isinstance(opset_arg.value, int) else None
        sym = bound.get("sym")
        block = self._block(sym, scope, classes) if sym is not None else None
        output: str | None = None
        if "onnx_file_path" in bound:
            output = template(bound["onnx_file_path"], scope)
        elif not starred:
            default = onnx_facts().export_defaults.get("onnx_file_path")
            output = default if isinstance(default, str) else None
        self.nodes.append(call)
        function = scope.node.name.value if type(scope.node) is cst.FunctionDef else None
        return ExportSite(
            self.ctx.path,
            (len(self.nodes) - 1, 0, 0, 0),
            function,
            self.ctx.code(call.func),
            block,
            opset,
            args,
            output,
            tuple(unknown),
        )

    def _unknown(self, call: cst.Call, index: int) -> UnknownKeyword:
        arg = call.args[index]
        assert arg.keyword is not None
        literal, value = _literal(arg.value, self.ctx)
        first = len(self.nodes)
        self.nodes.extend([arg.keyword, arg.value])
        cut = None
        if index > 0:
            self.nodes.append(call.args[index - 1].value)
            cut = (first + 2, first + 1, 0, 0)
        return UnknownKeyword(
            arg.keyword.value, (first, 0, 0, 0), literal, value if literal else None, cut
        )

    def _arg(self, node: cst.BaseExpression | None, scope: Scope, follow: bool = False) -> Arg:
        if node is None:
            return Arg(False)
        literal, value = _literal(node, self.ctx)
        if not literal and follow and type(node) is cst.Name:
            bound = scope.single(node.value)
            if bound is not None and bound[1] is None:
                literal, value = _literal(bound[0], self.ctx)
        self.nodes.append(node)
        parens = len(node.lpar) if _tight(node) else 0
        return Arg(True, value, literal, len(self.nodes) - 1, self.ctx.code(node), None, parens)

    # -- which block --------------------------------------------------------------------------

    def _block(
        self, sym: cst.BaseExpression, scope: Scope, classes: ClassReader, depth: int = 0
    ) -> BlockRef | None:
        if depth > 3:
            return None
        if type(sym) is cst.Name:
            bound = scope.single(sym.value)
            if bound is None:
                return None
            value, index = bound
            if index == -1:
                return None
            if index is not None:
                if (
                    index == 0
                    and type(value) is cst.Call
                    and canonical(self.ctx, value.func) in LOAD_CHECKPOINT
                    and value.args
                    and value.args[0].keyword is None
                ):
                    return self._exported(template(value.args[0].value, scope), classes)
                return None
            return self._block(value, scope, classes, depth + 1)
        if type(sym) is cst.Call:
            name = canonical(self.ctx, sym.func)
            if name in SYMBOL_LOAD and sym.args:
                return self._from_path(template(sym.args[0].value, scope), classes)
            if type(sym.func) is cst.Name and sym.args and self._symbolic(sym.args, scope):
                return self._built(sym.func.value, scope, classes)
            return None
        return self._from_path(template(sym, scope), classes)

    def _symbolic(self, args: Sequence[cst.Arg], scope: Scope) -> bool:
        """Whether a call's inputs are symbols (`net(mx.sym.var("data"))`)."""
        for arg in args:
            value = arg.value
            if type(value) is cst.Name:
                bound = scope.single(value.value)
                value = bound[0] if bound is not None and bound[1] is None else value
            if type(value) is not cst.Call or canonical(self.ctx, value.func) not in SYMBOL_VARS:
                return False
        return True

    def _from_path(self, path: str | None, classes: ClassReader) -> BlockRef | None:
        if path is None or not path.endswith(SYMBOL_SUFFIX):
            return None
        return self._exported(path[: -len(SYMBOL_SUFFIX)], classes)

    def _exported(self, prefix: str | None, classes: ClassReader) -> BlockRef | None:
        """The block whose `export(prefix)` writes the files: one network, bound once."""
        if not prefix:
            return None
        found = {(net, id(s)): s for net, p, s in self._export_calls() if p == prefix}
        if len(found) != 1:
            return None
        (net, _), scope = next(iter(found.items()))
        return self._built(net, scope, classes)

    def _export_calls(self) -> list[tuple[str, str, Scope]]:
        """(network name, prefix template, scope) of every `net.export(prefix, ...)`."""
        if self._exports is None:
            self._exports = []
            for scope in self.scopes:
                for call, _cond in scope.calls:
                    func = call.func
                    if (
                        type(func) is not cst.Attribute
                        or func.attr.value != "export"
                        or type(func.value) is not cst.Name
                        or not call.args
                    ):
                        continue
                    first = call.args[0]
                    if first.keyword is not None and first.keyword.value != "path":
                        continue
                    prefix = template(first.value, scope)
                    if prefix is not None:
                        self._exports.append((func.value.value, prefix, scope))
        return self._exports

    def _built(self, net: str, scope: Scope, classes: ClassReader) -> BlockRef | None:
        """`net = Cls(...)` bound once in the scope, with what is `add`ed to it there."""
        bound = scope.single(net)
        if bound is None or bound[1] is not None or type(bound[0]) is not cst.Call:
            return None
        call = bound[0]
        name = self.ctx.resolve(call.func)
        if name is None and type(call.func) is cst.Name:
            name = self.ctx.qualname(call.func.value)
        if name is None:
            return None
        canon = knowledge.canonical(name)
        if knowledge.is_mxnet(canon) and canon not in SEQUENTIAL:
            return None  # a library network: its graph is not read here
        members: list[Member] = []
        if canon in SEQUENTIAL:
            for call_, cond in scope.calls:
                func = call_.func
                if not (
                    type(func) is cst.Attribute
                    and func.attr.value == "add"
                    and type(func.value) is cst.Name
                    and func.value.value == net
                ):
                    continue
                for arg in call_.args:
                    if cond or arg.star or type(arg.value) is not cst.Call:
                        return None  # what the container holds depends on the run
                    member = classes.member(arg.value, self.ctx.qualname(net))
                    if member is not None:
                        members.append(member)
        return BlockRef(canon if knowledge.is_mxnet(canon) else name, tuple(members), net)


def _tight(node: cst.BaseExpression) -> bool:
    """Parentheses with nothing between them and the expression (`(1, 3)`)."""
    return all(
        type(p.whitespace_after) is cst.SimpleWhitespace and not p.whitespace_after.value
        for p in node.lpar
    ) and all(
        type(p.whitespace_before) is cst.SimpleWhitespace and not p.whitespace_before.value
        for p in node.rpar
    )


def _literal(node: cst.BaseExpression, ctx: FileContext) -> tuple[bool, object]:
    """A literal argument's value; numpy dtypes (`np.float32`) as their names."""
    name = ctx.resolve(node)
    if name is not None and name.startswith("numpy.") and name.count(".") == 1:
        return True, name.split(".", 1)[1]
    if type(node) in (cst.List, cst.Tuple):
        values = []
        for el in node.elements:  # type: ignore[attr-defined]
            if type(el) is not cst.Element:
                return False, None
            ok, value = _literal(el.value, ctx)
            if not ok:
                return False, None
            values.append(value)
        return True, values if type(node) is cst.List else tuple(values)
    text = dotted_name(node)
    if text in ("True", "False", "None"):
        return True, {"True": True, "False": False, "None": None}[text]
    if type(node) in (cst.Integer, cst.SimpleString, cst.Float) or (
        type(node) is cst.UnaryOperation and type(node.expression) is cst.Integer
    ):
        try:
            return True, ast.literal_eval(ctx.code(node))
        except (ValueError, SyntaxError):
            return False, None
    return False, None
