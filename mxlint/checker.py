"""The base class of analyses, and the per-file context they work in."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import libcst as cst

from mxlint.names import ImportMap, dotted_name
from mxlint.rule import Applicability, Rule
from mxlint.semantic.bindings import Bindings
from mxlint.semantic.effects import Effects, FileEffects

if TYPE_CHECKING:
    from mxlint.project import ProjectIndex
    from mxlint.rule import Finding
    from mxlint.settings import Settings

EditMode = Literal["replace", "insert_before", "insert_after", "line_before", "delete_lines"]


@dataclass(frozen=True)
class NodeEdit:
    """A fix edit expressed on the tree: replace a node, or insert text before/after it.
    `line_before` puts `text` on a line of its own before the node's line, indented as that
    line is (a statement inserted before a statement); `delete_lines` removes the whole lines
    the node spans (a statement deleted with its line)."""

    node: cst.CSTNode
    text: str
    mode: EditMode = "replace"


@dataclass(frozen=True)
class FixSpec:
    """A fix as a checker states it: edits of nodes, positioned only if reported."""

    applicability: Applicability
    message: str
    edits: tuple[NodeEdit, ...]


@dataclass
class Report:
    """A finding before positions are computed (positions are paid only for reports)."""

    node: cst.CSTNode
    rule: type[Rule]
    message: str
    fix: FixSpec | None = None
    symbol: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    #: ("hybridblock", "pkg.mod.Class"): keep only if the project proves it (the kinds are
    #: `ProjectIndex.satisfies`').
    requires: tuple[str, str] | None = None


@dataclass
class FileFacts:
    """What one file contributes to cross-file analysis; picklable and cacheable."""

    module: str
    #: The file as the run shows it, and whether it is a package `__init__`: enough to read
    #: the file again when a cross-file analysis needs its tree after the run.
    path: str = ""
    is_package: bool = False
    #: class qualname -> resolved base names
    classes: dict[str, list[str]] = field(default_factory=dict)
    #: Qualified names of the module-level functions and the methods the file defines.
    functions: list[str] = field(default_factory=list)
    #: What the file imports (resolved names, at any depth): which modules other files use.
    imports: tuple[str, ...] = ()
    #: The file passes `hybridize=False` to a call (`Trainer(hybridize=False)`) and calls no
    #: `.hybridize(...)`: the blocks it builds are meant to run imperatively.
    declines_hybridize: bool = False
    #: Facts a cross-file checker keeps of this file for its `finalize`, under the checker's
    #: `name` (picklable: cached with the file's result).
    checker_facts: dict[str, Any] = field(default_factory=dict)
    #: Summaries of this file's functions (by local name) that another file's analysis asked
    #: for: computed once, on first use, and cached with the file's result, so that a later run
    #: does not parse this file again to learn them.
    effects: dict[str, Effects | None] = field(default_factory=dict)
    #: What became of each object of a project class the file builds, by the class's name as
    #: the file resolves it (`semantic.constructions`: kept and called, hybridized, handed to a
    #: function, or beyond one file's sight).
    builds: dict[str, tuple[tuple[object, ...], ...]] = field(default_factory=dict)
    #: The file mentions nothing of MXNet and was not parsed (see `engine.MXNET_HINT`): these
    #: facts hold only where it is, so that a call another file makes into it (a helper of
    #: plain tensor arithmetic) can still be followed by parsing it then
    #: (`ProjectIndex.skimmed_file`).
    skimmed: bool = False


class FileContext:
    """Everything a checker may ask about the file being read."""

    def __init__(
        self,
        path: str,
        source: str,
        module: cst.Module,
        imports: ImportMap,
        settings: Settings,
        mxnet_line: str,
        is_entry: bool,
    ) -> None:
        self.path = path
        self.source = source
        self.module = module
        self.imports = imports
        self.settings = settings
        self.mxnet_line = mxnet_line
        self.is_entry = is_entry
        self.facts = FileFacts(module=imports.module, path=path, is_package=imports.is_package)
        self.reports: list[Report] = []
        #: Enclosing structural nodes, outermost first (ClassDef, FunctionDef, For, With...).
        self.stack: list[cst.CSTNode] = []
        self._effects: FileEffects | None = None
        self._bindings: Bindings | None = None
        #: `resolve` by node, for the import version it was asked under (checkers ask about
        #: the same call many times; an import inside a function changes the answers).
        self._resolved: dict[int, tuple[cst.CSTNode, str | None]] = {}
        self._resolved_version = 0

    @property
    def effects(self) -> FileEffects:
        """The effects of this file's functions (summarised on first use)."""
        if self._effects is None:
            self._effects = FileEffects(self.module, self.imports)
        return self._effects

    @property
    def bindings(self) -> Bindings:
        """The scopes and bindings of this file (read on first use)."""
        if self._bindings is None:
            self._bindings = Bindings(self.module)
        return self._bindings

    # -- reporting -----------------------------------------------------------------------

    def report(
        self,
        node: cst.CSTNode,
        rule: type[Rule],
        message: str | None = None,
        *,
        fix: FixSpec | None = None,
        symbol: str | None = None,
        data: dict[str, Any] | None = None,
        requires: tuple[str, str] | None = None,
    ) -> None:
        """Report `rule` at `node`; whether it is shown (selection, `# noqa`) is the funnel's."""
        self.reports.append(
            Report(
                node,
                rule,
                message or rule.message,
                fix,
                symbol if symbol is not None else self.symbol(),
                data or {},
                requires,
            )
        )

    # -- where am I ----------------------------------------------------------------------

    def symbol(self) -> str | None:
        parts = [n.name.value for n in self.stack if isinstance(n, (cst.ClassDef, cst.FunctionDef))]
        return ".".join(parts) or None

    def enclosing(self, *types: type[cst.CSTNode]) -> cst.CSTNode | None:
        for node in reversed(self.stack):
            if isinstance(node, types):
                return node
        return None

    def enclosing_class(self) -> cst.ClassDef | None:
        node = self.enclosing(cst.ClassDef)
        return node if type(node) is cst.ClassDef else None

    def enclosing_function(self) -> cst.FunctionDef | None:
        node = self.enclosing(cst.FunctionDef)
        return node if type(node) is cst.FunctionDef else None

    def loops(self) -> Iterator[cst.For | cst.While]:
        for node in reversed(self.stack):
            if isinstance(node, (cst.For, cst.While)):
                yield node
            if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                return

    def qualname(self, name: str) -> str:
        """Project-qualified name of a class/function defined in this file."""
        mod = self.imports.module
        return f"{mod}.{name}" if mod else name

    def resolve(self, node: cst.BaseExpression) -> str | None:
        """The qualified name `node` spells through an import, unless the function around it
        binds its root name to something else (a parameter `nd`, a local `random = ...`)."""
        memo = self._resolved
        if self._resolved_version != self.imports.version:
            memo.clear()
            self._resolved_version = self.imports.version
        known = memo.get(id(node))
        if known is not None:
            return known[1]
        found = self._resolve(node)
        memo[id(node)] = (node, found)  # the node kept: its id is not reused meanwhile
        return found

    def _resolve(self, node: cst.BaseExpression) -> str | None:
        name = self.imports.resolve(node)
        if name is None:
            return None
        root = (dotted_name(node) or "").partition(".")[0]
        if root not in self.bindings.rebound:
            return name
        scope = self.bindings.scope_at(node)
        if scope.parent is not None and self.bindings.shadowed(root, scope):
            return None
        return name

    def code(self, node: cst.CSTNode) -> str:
        # Most call targets rules quote are plain `a.b.c`: their text needs no codegen.
        plain = dotted_name(node) if _bare_chain(node) else None  # type: ignore[arg-type]
        return plain if plain is not None else self.module.code_for_node(node)


def shortened(code: str, width: int = 60) -> str:
    """Code quoted in a message: on one line, cut to `width` characters."""
    code = " ".join(code.split())
    return code if len(code) <= width else code[: width - 3] + "..."


def _bare_chain(node: cst.CSTNode) -> bool:
    """`a.b.c` written without parentheses, spaces or comments (its code is its dotted name)."""
    while type(node) is cst.Attribute:
        dot = node.dot
        if (
            node.lpar
            or node.rpar
            or type(dot) is not cst.Dot
            or not _no_space(dot.whitespace_before)
            or not _no_space(dot.whitespace_after)
        ):
            return False
        node = node.value
    return type(node) is cst.Name and not node.lpar and not node.rpar


def _no_space(ws: cst.BaseParenthesizableWhitespace) -> bool:
    return type(ws) is cst.SimpleWhitespace and not ws.value


class Checker:
    """An analysis that reports one or more rules.

    Subclasses list their `rules` and implement `visit_<Node>`/`leave_<Node>` methods; the engine
    walks each file once and calls every enabled checker's methods for each node. `begin` and
    `end` bracket a file; `finalize` runs once per run over every file's facts (cross-file).
    """

    rules: ClassVar[tuple[type[Rule], ...]] = ()
    #: Short stable name, used as the key of this checker's facts.
    name: ClassVar[str] = ""
    #: Reports from `finalize` too, once every file's facts are known: whether such a finding
    #: is needed is only known per run (an unused noqa directive for its codes is not reported).
    cross_file: ClassVar[bool] = False

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx

    def begin(self) -> None:
        """Called before the walk."""

    def end(self) -> None:
        """Called after the walk."""

    @classmethod
    def finalize(cls, project: ProjectIndex) -> list[Finding]:
        """Cross-file findings once every file's facts are known (checkers with `cross_file`)."""
        return []


#: How a noqa directive is written in a kind of dependency file (`mxlint.suppressions`
#: reads it, `--add-noqa` writes it): "line", a comment ending the reported line (pyproject,
#: setup.cfg, environment.yml, setup.py); "requirements", one ending the entry's last line (an
#: entry continues over lines ending in a backslash); "dockerfile", a comment line directly
#: above the instruction.
CommentStyle = Literal["line", "requirements", "dockerfile"]


class TextChecker:
    """An analysis of a non-Python file (requirements, pyproject, Dockerfile...)."""

    rules: ClassVar[tuple[type[Rule], ...]] = ()
    name: ClassVar[str] = ""

    @classmethod
    def comment_style(cls, filename: str) -> CommentStyle:
        """How a `# noqa` directive is written in a file this checker reads."""
        return "line"

    @classmethod
    def matches(cls, filename: str) -> bool:
        """Whether this checker reads a file of this name (a path: its basename decides, and
        its directory may, as for `requirements/base.txt`)."""
        raise NotImplementedError

    @classmethod
    def reads_named(cls, filename: str) -> bool:
        """Whether this checker reads a file named on the command line that no checker
        `matches`: a file the user names is checked, whatever its name."""
        return False

    def check_files(self, files: list[tuple[str, str]], settings: Settings) -> list[Finding]:
        """All matching files of the run at once, so that e.g. a Dockerfile and the
        requirements file it installs can be read together."""
        raise NotImplementedError
