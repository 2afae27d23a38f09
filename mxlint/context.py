"""A file's context before any checker reads it: its imports, its MXNet line, its classes.

The engine builds one for every file it checks; the project index builds one again, without a
checker, for the few files another file turns out to call into (cross-file analyses).
"""

from __future__ import annotations

import re

import libcst as cst

from mxlint import knowledge
from mxlint.checker import FileContext, FileFacts
from mxlint.names import ImportMap, dotted_name
from mxlint.parsing import ParseFailure, parse_module
from mxlint.settings import Settings
from mxlint.text_search import search_at_word_start
from mxlint.walker import dispatch, iter_nodes, walk


def build(
    path: str,
    source: str,
    module: cst.Module,
    module_name: str,
    is_package: bool,
    settings: Settings,
) -> FileContext:
    """The context of a parsed file, with its top-level imports already read."""
    imports = ImportMap(module_name, is_package)
    _prepass_imports(module, imports)
    return FileContext(
        path,
        source,
        module,
        imports,
        settings,
        infer_mxnet_line(source, settings),
        settings.is_entry_point(path),
    )


def context_for(facts: FileFacts, source: str, settings: Settings) -> FileContext | None:
    """The context of a file read again after the run, with no checker: for cross-file analyses
    that need a tree only for the few files other files actually call into."""
    module = parse_module(source)
    if isinstance(module, ParseFailure):
        return None
    ctx = build(facts.path, source, module, facts.module, facts.is_package, settings)
    visits, leaves = dispatch([ContextFacts(ctx)])
    walk(module, visits, leaves, ctx.stack, lambda owner, exc: None)
    return ctx


def _prepass_imports(module: cst.Module, imports: ImportMap) -> None:
    """Top-level imports (also under if/try at top level) before any checker resolves a name."""
    pending: list[cst.CSTNode] = list(module.body)
    while pending:
        stmt = pending.pop(0)
        if type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                if type(small) is cst.Import:
                    imports.add_import(small)
                elif type(small) is cst.ImportFrom:
                    imports.add_import_from(small)
        elif isinstance(stmt, (cst.If, cst.Try)):
            pending.extend(stmt.body.body)
            orelse = getattr(stmt, "orelse", None)
            if isinstance(orelse, (cst.Else, cst.If)):
                pending.extend(orelse.body.body)
            for handler in getattr(stmt, "handlers", ()):
                pending.extend(handler.body.body)
    _module_aliases(module, imports)


def _module_aliases(module: cst.Module, imports: ImportMap) -> None:
    """`nd = mx.nd`, `nn = gluon.nn` at the top of a module, bound once: the name is an alias of
    the MXNet namespace as surely as `from mxnet import nd` would make it."""
    found: dict[str, str | None] = {}
    for stmt in module.body:
        if type(stmt) is not cst.SimpleStatementLine:
            continue
        for small in stmt.body:
            if type(small) is not cst.Assign:
                continue
            for target in small.targets:
                if type(target.target) is not cst.Name:
                    continue
                name = target.target.value
                resolved = (
                    imports.resolve(small.value)
                    if type(small.value) in (cst.Name, cst.Attribute)
                    else None
                )
                mxnet = resolved is not None and knowledge.is_mxnet(resolved)
                found[name] = resolved if mxnet and name not in found else None
    for name, resolved in found.items():
        if resolved is not None and name not in imports.aliases:
            imports.alias(name, resolved)


#: MXNet 2 style, each at the start of a word (`search_at_word_start`).
_NP_STYLE = re.compile(r"npx\.set_np|from\s+mxnet\s+import\s+[^\n]*\bnpx?\b|mx\.npx?\.")


def infer_mxnet_line(source: str, settings: Settings) -> str:
    """ "1" or "2": config wins; else a file written against mx.np/npx is MXNet 2 style."""
    if settings.mxnet_version:
        return settings.mxnet_version
    if "hybrid_forward" in source or "np" not in source:  # every MXNet 2 marker has "np"
        return "1"
    return "2" if search_at_word_start(_NP_STYLE, source) else "1"


#: `hybridize=False` as a word (`search_at_word_start` adds the boundary before it).
_DECLINES = re.compile(r"hybridize\s*=\s*False\b")


def class_builds(ctx: FileContext) -> dict[str, tuple[tuple[object, ...], ...]]:
    """`FileFacts.builds`: the objects of project classes the file builds, and their fate."""
    from mxlint.semantic.constructions import builds

    return builds(ctx.module, ctx.imports, ctx.bindings, ctx.qualname)


def declines_hybridize(source: str, module: cst.Module) -> bool:
    """Whether the file passes `hybridize=False` to a call (`Trainer(hybridize=False)`, an
    estimator's option) and calls no `.hybridize(...)` itself (`FileFacts.declines_hybridize`)."""
    if not search_at_word_start(_DECLINES, source):
        return False
    declines = False
    for node in iter_nodes(module):
        if type(node) is not cst.Call:
            continue
        func = node.func
        if type(func) is cst.Attribute and func.attr.value == "hybridize":
            return False
        for arg in node.args:
            value = arg.value
            if (
                arg.keyword is not None
                and arg.keyword.value == "hybridize"
                and type(value) is cst.Name
                and value.value == "False"
            ):
                declines = True
    return declines


class ContextFacts:
    """The engine's own handlers, run beside the checkers: imports made inside functions and
    classes, and class facts for cross-file ancestry."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx

    def visit_Import(self, node: cst.Import) -> None:
        if self.ctx.stack:
            self.ctx.imports.add_import(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if self.ctx.stack:
            self.ctx.imports.add_import_from(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        stack = self.ctx.stack
        if not stack or (len(stack) == 1 and type(stack[0]) is cst.ClassDef):
            names = [n.name.value for n in stack if type(n) is cst.ClassDef]  # type: ignore[attr-defined]
            self.ctx.facts.functions.append(self.ctx.qualname(".".join([*names, node.name.value])))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        outer = [n.name.value for n in self.ctx.stack if type(n) is cst.ClassDef]
        if any(type(n) is cst.FunctionDef for n in self.ctx.stack):
            return
        qual = self.ctx.qualname(".".join([*outer, node.name.value]))
        bases: list[str] = []
        for arg in node.bases:
            name = self.ctx.imports.resolve(arg.value)
            if name is None:
                dotted = dotted_name(arg.value)
                if dotted is not None:
                    name = self.ctx.qualname(dotted)
            if name is not None:
                bases.append(name)
        self.ctx.facts.classes[qual] = bases
