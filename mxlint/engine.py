"""Lint one file: one parse, one walk, every enabled checker; positions only for what is reported."""

from __future__ import annotations

import functools
import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from mxlint import knowledge, registry, suppressions
from mxlint.checker import Checker, FileContext, FileFacts, FixSpec, Report
from mxlint.config import Settings
from mxlint.names import ImportMap
from mxlint.parsing import DEEP_RECURSION_LIMIT, ParseFailure, on_large_stack, parse_module
from mxlint.positions import Range, node_ranges
from mxlint.rule import Edit, Finding, Fix, Location, Rule
from mxlint.walker import TreeIndex, use_index, walk

#: A file that mentions none of these is not parsed for Python rules: not MXNet code, and no
#: randomness an MXNet program's reproducibility depends on (numpy/random in entry scripts).
MXNET_HINT = re.compile(
    rb"\b(?:mxnet|gluon|mx|mxn|hybrid_forward|HybridBlock|asnumpy|asscalar|autograd|nd|npx|F"
    rb"|numpy|np|random)\b"
)


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    #: Findings that stand only if the project proves a fact: (finding, requirement).
    conditional: list[tuple[Finding, tuple[str, str]]] = field(default_factory=list)
    facts: FileFacts | None = None
    #: An internal error happened (exit code 2).
    error: bool = False
    parsed: bool = False


def module_name_for(path: Path, packages: dict[Path, list[str]] | None = None
                    ) -> tuple[str, bool]:
    """Dotted module name of a file from the packages (`__init__.py`) above it.

    `packages`: the package path of each directory seen so far, for callers that name many
    files (the directories above them are then looked at once, not once per file)."""
    path = path.resolve() if path.exists() else path
    is_package = path.name == "__init__.py"
    directory = path.parent
    package = packages.get(directory) if packages is not None else None
    if package is None:
        package = []
        while (directory / "__init__.py").is_file() and directory.parent != directory:
            package.append(directory.name)
            directory = directory.parent
        package.reverse()
        if packages is not None:
            packages[path.parent] = package
    parts = package if is_package else [*package, path.stem]
    return ".".join(p for p in parts if p), is_package


def _engine_finding(rule: type[Rule], path: str, line: int, col: int, **kw: object) -> Finding:
    loc = Location(max(line, 1), max(col, 1))
    return Finding(rule.code, rule.format(**kw), path, loc, loc)


def internal_error(path: str, checker: str, error: BaseException) -> Finding:
    """MXL002 for `checker` failing on file `path`, naming the line of mxlint that raised."""
    tb = error.__traceback__
    frame = traceback.extract_tb(tb)[-1] if tb else None
    where = f" at {Path(frame.filename).name}:{frame.lineno}" if frame else ""
    return _engine_finding(registry.all_rules()["MXL002"], path, 1, 1, checker=checker,
                           detail=f"{type(error).__name__}: {error}{where}")


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


_NP_STYLE = re.compile(r"\b(?:npx\.set_np|from\s+mxnet\s+import\s+[^\n]*\bnpx?\b|mx\.npx?\.)")


def infer_mxnet_line(source: str, settings: Settings) -> str:
    """"1" or "2": config wins; else a file written against mx.np/npx is MXNet 2 style."""
    if settings.mxnet_version:
        return settings.mxnet_version
    if "hybrid_forward" in source or "np" not in source:  # every MXNet 2 marker has "np"
        return "1"
    return "2" if _NP_STYLE.search(source) else "1"


class _EngineFacts:
    """The engine's own handlers: import tracking and class facts for cross-file ancestry."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx

    def visit_Import(self, node: cst.Import) -> None:
        if self.ctx.stack:
            self.ctx.imports.add_import(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if self.ctx.stack:
            self.ctx.imports.add_import_from(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        outer = [n.name.value for n in self.ctx.stack if type(n) is cst.ClassDef]
        if any(type(n) is cst.FunctionDef for n in self.ctx.stack):
            return
        qual = self.ctx.qualname(".".join([*outer, node.name.value]))
        bases: list[str] = []
        for arg in node.bases:
            name = self.ctx.imports.resolve(arg.value)
            if name is None:
                from mxlint.names import dotted_name

                dotted = dotted_name(arg.value)
                if dotted is not None:
                    name = self.ctx.qualname(dotted)
            if name is not None:
                bases.append(name)
        self.ctx.facts.classes[qual] = bases


def _dispatch(objs: list[object]) -> tuple[dict[type, list], dict[type, list]]:
    visits: dict[type, list] = {}
    leaves: dict[type, list] = {}
    for index, obj in enumerate(objs):
        for attr in dir(type(obj)):
            if attr.startswith("visit_") or attr.startswith("leave_"):
                node_type = getattr(cst, attr[6:], None)
                if isinstance(node_type, type):
                    target = visits if attr.startswith("visit_") else leaves
                    target.setdefault(node_type, []).append((index, getattr(obj, attr)))
    return visits, leaves


def enabled_checkers(settings: Settings) -> list[type[Checker]]:
    return [c for c in registry.python_checkers()
            if any(settings.code_enabled(r) for r in c.rules)]


def lint_source(path: str, source: str, settings: Settings, *,
                module_name: str | None = None, is_package: bool = False,
                force: bool = False) -> FileResult:
    """Lint Python `source` as file `path`. Never raises for bad input or a failing rule."""
    result = FileResult(path)
    if not force and not MXNET_HINT.search(source.encode("utf-8", "surrogatepass")):
        return result
    module = parse_module(source)
    if isinstance(module, ParseFailure):
        result.findings.append(_engine_finding(
            registry.all_rules()["MXL001"], path, module.line, module.column,
            detail=module.message))
        return result
    if module_name is None:
        module_name, is_package = module_name_for(Path(path))
    check = functools.partial(_check, path, source, settings, module, module_name, is_package)
    try:
        try:
            return check(retry=True)
        except RecursionError:
            pass
        # A tree deeper than the recursion limit allows: again, on a large stack, higher limit.
        return on_large_stack(functools.partial(check, retry=False), DEEP_RECURSION_LIMIT)
    except Exception as exc:  # a bug outside the checkers (positions, suppressions)
        result.findings.append(internal_error(path, "mxlint", exc))
        result.error = True
        return result


def _check(path: str, source: str, settings: Settings, module: cst.Module, module_name: str,
           is_package: bool, retry: bool) -> FileResult:
    """Every checker over a parsed file. With `retry`, a RecursionError anywhere is raised so
    that the caller can check the file again with more stack."""
    result = FileResult(path)
    result.parsed = True
    imports = ImportMap(module_name, is_package)
    _prepass_imports(module, imports)
    ctx = FileContext(path, source, module, imports, settings, infer_mxnet_line(source, settings),
                      settings.is_entry_point(path))
    checker_types = enabled_checkers(settings)
    objs: list[object] = [_EngineFacts(ctx)]
    errors: list[tuple[str, BaseException]] = []
    live: list[Checker] = []
    for checker_type in checker_types:
        try:
            checker = checker_type(ctx)
            checker.begin()
        except Exception as exc:
            errors.append((checker_type.__name__, exc))
            continue
        live.append(checker)
    objs.extend(live)
    visits, leaves = _dispatch(objs)
    failed: set[int] = set()

    def on_error(owner: int, exc: BaseException) -> None:
        failed.add(owner)
        errors.append((type(objs[owner]).__name__, exc))

    tree = TreeIndex(module)
    use_index(tree)  # every subtree walk of this file's rules reads the index
    try:
        walk(module, visits, leaves, ctx.stack, on_error, tree)
        for index, checker in enumerate(live, start=1):
            if index in failed:
                continue
            try:
                checker.end()
            except Exception as exc:
                errors.append((type(checker).__name__, exc))
        if retry and any(isinstance(error, RecursionError) for _, error in errors):
            raise RecursionError("a checker needs a deeper stack")
        for name, error in errors:
            result.findings.append(internal_error(path, name, error))
            result.error = True
        result.facts = ctx.facts
        _position_reports(ctx, result)
    finally:
        use_index(None)
    return suppressions.apply(result, source, settings)


def context_for(facts: FileFacts, source: str, settings: Settings) -> FileContext | None:
    """The context of a file read again after the run, with no checker: for cross-file analyses
    that need a tree only for the few files other files actually call into."""
    module = parse_module(source)
    if isinstance(module, ParseFailure):
        return None
    imports = ImportMap(facts.module, facts.is_package)
    _prepass_imports(module, imports)
    ctx = FileContext(facts.path, source, module, imports, settings,
                      infer_mxnet_line(source, settings), settings.is_entry_point(facts.path))
    visits, leaves = _dispatch([_EngineFacts(ctx)])
    walk(module, visits, leaves, ctx.stack, lambda owner, exc: None)
    return ctx


def _position_reports(ctx: FileContext, result: FileResult) -> None:
    reports = ctx.reports
    if not reports:
        return
    nodes: list[cst.CSTNode] = []
    for report in reports:
        nodes.append(report.node)
        if report.fix is not None:
            nodes.extend(edit.node for edit in report.fix.edits)
    ranges = node_ranges(ctx.module, nodes, ctx.source)
    seen: set[tuple[str, int, int]] = set()
    for report in reports:
        rng = ranges.get(report.node)
        if rng is None:
            continue
        start, end = rng
        key = (report.rule.code, start[0], start[1])
        if key in seen:  # one finding per code and place, however many paths lead to it
            continue
        seen.add(key)
        finding = Finding(
            code=report.rule.code,
            message=report.message,
            filename=ctx.path,
            location=Location(start[0], start[1] + 1),
            end_location=Location(end[0], end[1] + 1),
            fix=_fix(report.fix, ranges) if report.fix else None,
            symbol=report.symbol,
            data=report.data,
        )
        if report.requires is not None:
            result.conditional.append((finding, report.requires))
        else:
            result.findings.append(finding)


def _fix(spec: FixSpec, ranges: dict[cst.CSTNode, Range]) -> Fix | None:
    edits: list[Edit] = []
    for edit in spec.edits:
        rng = ranges.get(edit.node)
        if rng is None:
            return None
        (sl, sc), (el, ec) = rng
        if edit.mode == "replace":
            edits.append(Edit(edit.text, Location(sl, sc + 1), Location(el, ec + 1)))
        elif edit.mode == "insert_before":
            edits.append(Edit(edit.text, Location(sl, sc + 1), Location(sl, sc + 1)))
        else:
            edits.append(Edit(edit.text, Location(el, ec + 1), Location(el, ec + 1)))
    return Fix(spec.applicability, spec.message, tuple(edits))


def is_mxnet_import(name: str | None) -> bool:
    return knowledge.is_mxnet(name)


__all__ = ["FileResult", "Report", "lint_source", "module_name_for"]
