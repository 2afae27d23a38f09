"""The imports a fix leaves unused go with it.

A fix that rewrites `nd.relu(x)` to `F.relu(x)` may remove the last use of `from mxnet import
nd`. An import binding is removed when the fixed text no longer uses it and the text before the
fixes did (uses as libcst's scope analysis counts them: names, attributes, string
annotations). Never removed: an import that was unused already (kept for its side effects or
as a re-export), one with other uses left, a name `__all__` lists (or any module-level import
when `__all__` is not a literal list), an explicit re-export (`import x as x`, `from m import
x as x`), any import of a package's `__init__.py`, an import inside `try` (feature detection),
and nothing at all in a file that reaches names dynamically (`eval`, `exec`, `globals()`...).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath

import libcst as cst
from libcst.metadata import MetadataWrapper, ScopeProvider
from libcst.metadata.scope_provider import ImportAssignment, Scope

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Code that reaches names by string: their uses are not visible in the tree.
_DYNAMIC = re.compile(r"\b(?:eval|exec|globals|locals|vars|__import__)\s*\(")

#: (scope, statement, bound name, occurrence): one import binding, the same before and after
#: a fix (fixes never edit import statements, and a fix that adds one makes its key ambiguous).
_Key = tuple[str, str, str, int]


@dataclass
class _Binding:
    alias: cst.ImportAlias
    uses: int
    #: May not be removed whatever its uses (exported, re-exported, inside `try`...).
    kept: bool


def remove_unused_imports(before: str, after: str, path: PurePath) -> str:
    """`after` (the fixed text of the file `path`, which read `before` ahead of the fixes)
    without the import bindings the fixes left unused; `after` unchanged when there are none
    or when the file cannot be read this way."""
    if before == after or path.name == "__init__.py" or _DYNAMIC.search(after):
        return after
    now = Counter(_WORD.findall(after))
    fewer = {name for name, count in Counter(_WORD.findall(before)).items() if count > now[name]}
    if not fewer:
        return after
    try:
        old = _bindings(cst.parse_module(before), fewer)
        if not any(b.uses for b in old.values()):
            return after
        module = cst.parse_module(after)
        if module.code != after:  # libcst does not write this file back as it read it
            return after  # (lines ending in a lone CR)
        new = _bindings(module, fewer)
    except Exception:  # not parsable, or too deep for libcst: leave the fixed text as it is
        return after
    drop = {
        b.alias
        for key, b in new.items()
        if not b.uses and not b.kept and key in old and old[key].uses and not old[key].kept
    }
    if not drop:
        return after
    return module.visit(_Remover(drop)).code


def _bindings(module: cst.Module, names: set[str]) -> dict[_Key, _Binding]:
    """Every import binding whose name is in `names`, with its uses; bindings whose key is not
    unique are left out (which one is which cannot be told after a fix)."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    scopes = wrapper.resolve(ScopeProvider)
    exported = _exported(module)
    found: dict[_Key, _Binding] = {}
    seen: Counter[tuple[str, str, str]] = Counter()
    for statement, guarded, where in _imports(module):
        if isinstance(statement.names, cst.ImportStar):
            continue
        scope = scopes.get(statement)
        if scope is None:
            continue
        code = module.code_for_node(statement)
        bound = [_bound_names(statement, alias) for alias in statement.names]
        for alias, own in zip(statement.names, bound):
            name = own[0]
            if name.split(".")[0] not in names:
                continue
            base = (where, code, name)
            key = (*base, seen[base])
            seen[base] += 1
            shared = any(other is not own and set(own) & set(other) for other in bound)
            kept = (
                guarded
                or shared
                or _explicit_reexport(alias)
                or (where == "" and (exported is None or name.split(".")[0] in exported))
            )
            found[key] = _Binding(alias, _uses(scope, statement, own), kept)
    return {k: v for k, v in found.items() if seen[k[:3]] == 1}


def _imports(
    module: cst.Module,
) -> list[tuple[cst.Import | cst.ImportFrom, bool, str]]:
    """Import statements with whether they must stay whatever their uses (inside `try`, or
    in a class body, where they are class attributes) and their enclosing definitions ("" at
    module level, `Net.hybrid_forward` in a method)."""
    out: list[tuple[cst.Import | cst.ImportFrom, bool, str]] = []

    class Visitor(cst.CSTVisitor):
        def __init__(self) -> None:
            self.names: list[str] = []
            self.classes: list[bool] = []
            self.tries = 0

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.names.append(node.name.value)
            self.classes.append(False)

        def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
            self.names.pop()
            self.classes.pop()

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            self.names.append(node.name.value)
            self.classes.append(True)

        def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
            self.names.pop()
            self.classes.pop()

        def guarded(self) -> bool:
            return self.tries > 0 or bool(self.classes and self.classes[-1])

        def visit_Try(self, node: cst.Try) -> None:
            self.tries += 1

        def leave_Try(self, original_node: cst.Try) -> None:
            self.tries -= 1

        def visit_TryStar(self, node: cst.TryStar) -> None:
            self.tries += 1

        def leave_TryStar(self, original_node: cst.TryStar) -> None:
            self.tries -= 1

        def visit_Import(self, node: cst.Import) -> None:
            out.append((node, self.guarded(), ".".join(self.names)))

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            out.append((node, self.guarded(), ".".join(self.names)))

    module.visit(Visitor())
    return out


def _bound_names(statement: cst.Import | cst.ImportFrom, alias: cst.ImportAlias) -> list[str]:
    """The names libcst's scope records for one alias: `np` for `import numpy as np`,
    `a.b.c`, `a.b` and `a` for `import a.b.c` (the first is the binding's own)."""
    if alias.asname is not None:
        return [cst.ensure_type(alias.asname.name, cst.Name).value]
    dotted = _dotted(alias.name)
    if isinstance(statement, cst.ImportFrom):
        return [dotted]
    parts = dotted.split(".")
    return [".".join(parts[:end]) for end in range(len(parts), 0, -1)]


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _explicit_reexport(alias: cst.ImportAlias) -> bool:
    return alias.asname is not None and _dotted(alias.name) == _dotted(alias.asname.name)


def _uses(scope: Scope, statement: cst.CSTNode, names: Sequence[str]) -> int:
    total = 0
    for name in names:
        for assignment in scope.assignments[name]:
            if isinstance(assignment, ImportAssignment) and assignment.node is statement:
                total += len(assignment.references)
    return total


def _exported(module: cst.Module) -> set[str] | None:
    """The names a literal module-level `__all__` lists (empty without one); None when
    `__all__` is built some other way."""
    names: set[str] = set()
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            value: cst.BaseExpression | None = None
            if isinstance(small, cst.Assign) and any(
                isinstance(t.target, cst.Name) and t.target.value == "__all__"
                for t in small.targets
            ):
                value = small.value
            elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
                target = small.target
                if isinstance(target, cst.Name) and target.value == "__all__":
                    value = small.value
            if value is None:
                continue
            if not isinstance(value, (cst.List, cst.Tuple)):
                return None
            for element in value.elements:
                if not isinstance(element.value, cst.SimpleString):
                    return None
                literal = element.value.evaluated_value
                names.add(literal if isinstance(literal, str) else "")
    return names


class _Remover(cst.CSTTransformer):
    """Drops the given aliases; an import left with none goes, and a block left empty gets
    `pass` (the comments above a removed line stay, on the next statement)."""

    def __init__(self, drop: set[cst.ImportAlias]) -> None:
        super().__init__()
        # Nodes compare by identity; held here, their identities stay theirs.
        self.drop = drop
        #: Imports that lose every name, and lines left with no statement.
        self.gone: set[cst.CSTNode] = set()
        self.emptied: set[cst.CSTNode] = set()

    def _names(self, names: Sequence[cst.ImportAlias]) -> list[cst.ImportAlias]:
        return [a for a in names if a not in self.drop]

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> cst.Import:
        names = self._names(original_node.names)
        if len(names) == len(original_node.names):
            return updated_node
        if not names:
            self.gone.add(updated_node)
            return updated_node
        names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated_node.with_changes(names=names)

    def leave_ImportFrom(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> cst.ImportFrom:
        if isinstance(original_node.names, cst.ImportStar):
            return updated_node
        names = self._names(original_node.names)
        if len(names) == len(original_node.names):
            return updated_node
        if not names:
            self.gone.add(updated_node)
            return updated_node
        last = original_node.names[-1]
        if original_node.lpar is None:
            names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        elif last in self.drop:  # the new last name ends as the old last one did
            names[-1] = names[-1].with_changes(comma=last.comma)
        return updated_node.with_changes(names=names)

    def _small(self, body: Sequence[cst.BaseSmallStatement]) -> list[cst.BaseSmallStatement]:
        kept = [s for s in body if s not in self.gone]
        if kept and len(kept) < len(body) and isinstance(kept[-1].semicolon, cst.Semicolon):
            kept[-1] = kept[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        return kept

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        body = self._small(updated_node.body)
        if len(body) == len(updated_node.body):
            return updated_node
        if not body:
            self.emptied.add(updated_node)  # dropped by the block that holds it
            return updated_node
        return updated_node.with_changes(body=body)

    def leave_SimpleStatementSuite(
        self, original_node: cst.SimpleStatementSuite, updated_node: cst.SimpleStatementSuite
    ) -> cst.SimpleStatementSuite:
        body = self._small(updated_node.body)
        if len(body) == len(updated_node.body):
            return updated_node
        return updated_node.with_changes(body=body or [cst.Pass()])

    def _body(
        self, body: Sequence[cst.BaseStatement], footer: Sequence[cst.EmptyLine]
    ) -> tuple[list[cst.BaseStatement], list[cst.EmptyLine]]:
        out: list[cst.BaseStatement] = []
        carried: list[cst.EmptyLine] = []
        for statement in body:
            if statement in self.emptied:
                assert isinstance(statement, cst.SimpleStatementLine)
                carried.extend(line for line in statement.leading_lines if line.comment)
                continue
            if carried and isinstance(
                statement, (cst.SimpleStatementLine, cst.BaseCompoundStatement)
            ):
                lines = [*carried, *statement.leading_lines]
                statement = statement.with_changes(leading_lines=lines)
                carried = []
            out.append(statement)
        return out, [*carried, *footer]

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body, footer = self._body(updated_node.body, updated_node.footer)
        if len(body) == len(updated_node.body):
            return updated_node
        if not body:
            carried = [line for line in footer if line not in updated_node.footer]
            body = [cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=carried)]
            footer = list(updated_node.footer)
        return updated_node.with_changes(body=body, footer=footer)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body, footer = self._body(updated_node.body, updated_node.footer)
        if len(body) == len(updated_node.body):
            return updated_node
        return updated_node.with_changes(body=body, footer=footer)
