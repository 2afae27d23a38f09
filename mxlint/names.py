"""Qualified-name resolution from a module's imports, without libcst's scope metadata.

libcst's ScopeProvider/QualifiedNameProvider cost several times the parse itself; MXNet code
names its APIs through a handful of import forms, so an alias table built from the import
statements (module level and function level) resolves what the rules need at a fraction of
the cost.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable, Iterator

import libcst as cst

from mxlint import knowledge


class ProjectNames:
    """The qualified names a run defines (classes, helpers), and how a name written elsewhere
    resolves to one of them: as is, or as a re-export (`pkg.Net` for `pkg.models.Net`: the
    one name under that package with that last component).

    Names are grouped by last component once, so that a lookup reads the few names that end
    alike instead of every name of the run (runs with thousands of files resolve thousands of
    names).
    """

    def __init__(self, names: Iterable[str]) -> None:
        self.names = set(names)
        self._by_leaf: dict[str, list[str]] = {}
        for qual in self.names:
            _, dot, leaf = qual.rpartition(".")
            if dot:
                self._by_leaf.setdefault(leaf, []).append(qual)

    def resolve(self, name: str) -> str | None:
        if name in self.names:
            return name
        pkg, _, leaf = name.rpartition(".")
        if not pkg:
            return None
        prefix = pkg + "."
        found = [q for q in self._by_leaf.get(leaf, ()) if q.startswith(prefix)]
        return found[0] if len(found) == 1 else None


def dotted_name(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a Name/Attribute chain, None for anything else (calls, subscripts...)."""
    parts: list[str] = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is cst.Name:
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def assignment_targets(node: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    """Assignment targets of a small statement or a compound header (`x = `, `x += `,
    `x: int = `, `for x in`, `with ... as x`)."""
    if type(node) is cst.Assign:
        for t in node.targets:
            yield t.target
    elif (
        type(node) is cst.AnnAssign
        or type(node) is cst.AugAssign
        or type(node) is cst.For
        or type(node) is cst.CompFor
    ):
        yield node.target
    elif type(node) is cst.WithItem and node.asname is not None:
        yield node.asname.name


def target_names(target: cst.BaseExpression) -> Iterator[str]:
    """The names an assignment target binds (`a`, `a, (b, *c)`), not those its subscripts and
    attributes read."""
    if type(target) is cst.Name:
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from target_names(el.value)
    elif type(target) is cst.StarredElement:
        yield from target_names(target.value)


def last_name(node: cst.BaseExpression) -> str:
    """`c` of `a.b.c` or of `c`; "" for anything else (a call of a call, a subscript...)."""
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        return node.attr.value
    return ""


def module_path(node: cst.BaseExpression | None) -> str:
    if node is None:
        return ""
    name = dotted_name(node)
    return name or ""


def resolve_relative(module: str, level: int, target: str, is_package: bool) -> str:
    """Absolute module name for `from <level dots><target> import ...` inside `module`."""
    if level == 0:
        return target
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    base = ".".join(parts)
    if target:
        return f"{base}.{target}" if base else target
    return base


class ImportMap:
    """Local name -> fully qualified name, built from import statements.

    `module` is the dotted name of the file being read (for relative imports); names bound
    by `from .x import y` resolve to project-qualified names (`pkg.x.y`) so that cross-file
    facts (HybridBlock ancestry, helper functions) can be looked up.
    """

    __slots__ = ("aliases", "module", "is_package", "version", "starred")

    def __init__(self, module: str = "", is_package: bool = False) -> None:
        self.aliases: dict[str, str] = {}
        self.module = module
        self.is_package = is_package
        #: Counts the imports added: what was resolved before may resolve otherwise after.
        self.version = 0
        #: Modules whose every public name the file takes (`from .layers import *`).
        self.starred: set[str] = set()

    def alias(self, local: str, full: str) -> None:
        """Bind `local` to the qualified name `full`."""
        self.aliases[local] = full
        self.version += 1

    def add_import(self, node: cst.Import) -> None:
        for alias in node.names:
            asname = alias.asname.name if alias.asname is not None else None
            self.bind_import(
                module_path(alias.name), asname.value if type(asname) is cst.Name else None
            )

    def add_import_from(self, node: cst.ImportFrom) -> None:
        level = len(node.relative)
        target = module_path(node.module)
        if isinstance(node.names, cst.ImportStar):
            self.bind_from(level, target, "*", None)
            return
        for alias in node.names:
            asname = alias.asname.name if alias.asname is not None else None
            self.bind_from(
                level,
                target,
                module_path(alias.name),
                asname.value if type(asname) is cst.Name else None,
            )

    def bind_import(self, full: str, asname: str | None) -> None:
        """What `import full [as asname]` binds."""
        self.version += 1
        if asname is not None:
            self.aliases[asname] = knowledge.canonical(full)
        else:
            top = full.split(".", 1)[0]
            self.aliases[top] = top

    def bind_from(self, level: int, target: str, name: str, asname: str | None) -> None:
        """What `from <level dots><target> import name [as asname]` binds (`name` "*": every
        name of the module, kept in `starred`)."""
        self.version += 1
        base = resolve_relative(self.module, level, target, self.is_package)
        if name == "*":
            if base:
                self.starred.add(knowledge.canonical(base))
            return
        full = f"{base}.{name}" if base else name
        self.aliases[asname or name] = knowledge.canonical(full)

    def imported(self) -> tuple[str, ...]:
        """Every name the file imports, resolved, modules taken by `import *` included
        (`FileFacts.imports`)."""
        return tuple(sorted({*self.aliases.values(), *self.starred}))

    def resolve(self, node: cst.BaseExpression) -> str | None:
        """Canonical qualified name of `node` if it is rooted in an import, else None."""
        root = node
        while type(root) is cst.Attribute:
            root = root.value
        if type(root) is not cst.Name or root.value not in self.aliases:
            return None  # most names asked about are locals: no text built for them
        name = dotted_name(node)
        if name is None:
            return None
        return self.resolve_dotted(name)

    def resolve_dotted(self, name: str) -> str | None:
        head, _, rest = name.partition(".")
        full = self.aliases.get(head)
        if full is None:
            return None
        return knowledge.canonical(f"{full}.{rest}" if rest else full)

    def mentions_mxnet(self) -> bool:
        return any(knowledge.is_mxnet(full) for full in self.aliases.values())

    def other_framework(self) -> bool:
        """The file imports another deep learning framework (`knowledge.OTHER_FRAMEWORK_ROOTS`)
        and nothing of MXNet: that framework's program, not an MXNet one."""
        if self.mentions_mxnet():
            return False
        roots = knowledge.OTHER_FRAMEWORK_ROOTS
        return any(name.split(".", 1)[0] in roots for name in self.imported())


_TOKEN_SPLIT = re.compile(r"[^A-Za-z0-9]+")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")


@functools.lru_cache(maxsize=4096)
def name_tokens(name: str) -> tuple[str, ...]:
    """`X_val` -> ("x", "val"), `valData2` -> ("val", "data"). Kept: rules ask about the same
    few names of a file many times (two regular expressions each time)."""
    return tuple(
        t.rstrip("0123456789").lower()
        for t in _TOKEN_SPLIT.split(_CAMEL.sub(r"\1_\2", name))
        if t.rstrip("0123456789")
    )


def names_a_network(name: str) -> bool:
    """`net`, `model`, `self.encoder`: a name (its last component) that says it holds a
    network; a class name (`Net`) constructs one instead."""
    leaf = name.rsplit(".", 1)[-1]
    return not leaf[:1].isupper() and bool(knowledge.NETWORK_WORDS.intersection(name_tokens(leaf)))


#: The first line of an import statement (at any indentation).
_IMPORT_LINE = re.compile(r"^[ \t]*(?:from|import)[ \t]", re.M)


def imports_in_text(source: str, module: str, is_package: bool) -> tuple[str, ...]:
    """The names a file imports (resolved as `ImportMap` resolves them, modules taken by
    `import *` included), read from its import statements alone: for a file that is not
    parsed (it names nothing of MXNet) but whose imports still tell which modules the project
    uses (a package `__init__` that re-exports a loader module)."""
    return import_map_in_text(source, module, is_package).imported()


def import_map_in_text(source: str, module: str, is_package: bool) -> ImportMap:
    """The `ImportMap` of a file's import statements, read without parsing the file."""
    imports = ImportMap(module, is_package)
    for match in _IMPORT_LINE.finditer(source):
        start = match.start()
        end = source.find("\n", start)
        end = len(source) if end < 0 else end
        text = source[start:end]
        if "(" in text and ")" not in text:
            close = source.find(")", end)
            if close < 0:
                continue
            text = source[start : close + 1]
        while text.endswith("\\"):
            nxt = source.find("\n", end + 1)
            nxt = len(source) if nxt < 0 else nxt
            text = text[:-1] + source[end + 1 : nxt]
            end = nxt
        try:
            tree = ast.parse(text.strip())
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    imports.bind_import(alias.name, alias.asname)
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    imports.bind_from(node.level, node.module or "", alias.name, alias.asname)
    return imports
