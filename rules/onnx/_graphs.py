"""The ONNX family's reading (`OnnxChecker` loads it when a file exports or runs a model): each
file's HybridBlock classes and `export_model` calls as facts, and once every file is known,
each export followed to the classes and layers of the exported block (in any file of the run)
for the rules' decisions.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import libcst as cst

from mxlint import knowledge
from mxlint.checker import FileContext, FileFacts
from mxlint.names import ProjectNames
from mxlint.positions import node_ranges
from mxlint.project import ProjectIndex
from mxlint.rule import Finding
from mxlint.rules.onnx import (
    dynamic_shape_operator,
    export_input_mismatch,
    export_unknown_keyword,
    fixed_batch_export,
    unsupported_operator,
)
from mxlint.rules.onnx._blocks import SEQUENTIAL, ClassFacts, ClassReader, Member, Use
from mxlint.rules.onnx._export import Arg, BlockRef, ExportReader, ExportSite
from mxlint.rules.onnx._feeds import Feed, FeedReader
from mxlint.rules.onnx._scopes import scopes
from mxlint.walker import iter_nodes

#: The checker's name: its facts in `FileFacts.checker_facts`.
NAME = "onnx"


def findings(project: ProjectIndex) -> list[Finding]:
    """Every export of the run followed to the classes and layers of its block, and the
    rules' decisions on them."""
    classes: dict[str, ClassFacts] = {}
    sites: list[ExportSite] = []
    feeds: list[Feed] = []
    saves: list[tuple[str, str]] = []
    read: set[str] = set()
    for _module, facts in project.checker_facts(NAME):
        assert isinstance(facts, dict)
        classes.update(facts["classes"])
        sites.extend(facts["exports"])
        feeds.extend(facts.get("feeds", ()))
        saves.extend(facts.get("saves", ()))
    if not sites:
        return []
    for f in project.files:
        if NAME in f.checker_facts:
            read.add(f.path)
    graph = Graphs(classes, project, read)
    findings: dict[tuple[str, int, int, str], Finding] = {}
    for site in sites:
        block = site.block
        uses = graph.uses(block, site.path) if block is not None else []
        inputs = graph.inputs(block) if block is not None else None
        for finding in [
            *unsupported_operator.decide(site, uses),
            *dynamic_shape_operator.decide(site, uses),
            *export_input_mismatch.decide(site, inputs, graph.locate(block)),
            *export_unknown_keyword.decide(site),
            *fixed_batch_export.decide(site, _runs(site, sites, feeds, saves), graph.locate(block)),
        ]:
            key = (
                finding.filename,
                finding.location.row,
                finding.location.column,
                finding.code,
            )
            findings.setdefault(key, finding)
    return list(findings.values())


def _same_file(a: str, a_path: str, b: str, b_path: str) -> bool:
    """Whether two path templates name one file: equal in one source file, or, read from two
    files, the same plain path (absolute, or relative from one directory)."""
    if a != b:
        return False
    if a_path == b_path:
        return True
    if "{" in a:
        return False
    return a.startswith("/") or os.path.dirname(a_path) == os.path.dirname(b_path)


def _runs(
    site: ExportSite, sites: list[ExportSite], feeds: list[Feed], saves: list[tuple[str, str]]
) -> list[Feed]:
    """The runs of the file this export writes, when nothing rewrites it afterwards and no
    other export may have written what they load: an export of the run's own file, else
    the one export of the directory that writes the path."""
    out = site.output
    if out is None:
        return []
    if any(_same_file(out, site.path, saved, path) for path, saved in saves):
        return []
    found = []
    for feed in feeds:
        if not _same_file(out, site.path, feed.model, feed.path):
            continue
        writers = [s for s in sites if s.path == feed.path and s.output == feed.model] or [
            s
            for s in sites
            if s.output is not None and _same_file(s.output, s.path, feed.model, feed.path)
        ]
        if len(writers) == 1 and writers[0] is site:
            found.append(feed)
    return found


def read_file(ctx: FileContext, *, exports: bool) -> dict[str, Any] | None:
    """A file's HybridBlock classes (what their graphs hold) and, with `exports`, its
    export_model calls and onnxruntime runs, positioned: the checker's facts for the file."""
    if ctx.mxnet_line == "2":
        return None
    source = ctx.source
    has_classes = "hybrid_forward" in source or ".add(" in source
    has_exports = exports and "export_model" in source
    has_runs = exports and ("InferenceSession" in source or "onnx.save" in source)
    if not has_classes and not has_exports and not has_runs:
        return None
    nodes: list[cst.CSTNode] = []
    reader = ClassReader(ctx, nodes)
    classes: dict[str, ClassFacts] = {}
    if has_classes:
        for node in iter_nodes(ctx.module):
            if type(node) is cst.ClassDef:
                qual = ctx.qualname(_class_path(ctx.module, node))
                classes[qual] = reader.read(node, qual)
    sites: list[ExportSite] = []
    feeds: list[Feed] = []
    saves: list[str] = []
    if has_exports or has_runs:
        file_scopes = scopes(ctx.module)
        if has_exports:
            sites = ExportReader(ctx, file_scopes, nodes).sites(reader)
        if has_runs:
            runs = FeedReader(ctx, file_scopes, nodes)
            feeds, saves = runs.feeds(), runs.saves()
    classes = {q: c for q, c in classes.items() if c.uses is not None or c.members or c.added}
    if not classes and not sites and not feeds and not saves:
        return None
    ranges = node_ranges(ctx.module, nodes, source) if nodes else {}
    spans = [_span(ranges.get(n)) for n in nodes]
    return {
        "classes": {q: _placed_class(c, spans) for q, c in classes.items()},
        "exports": [_placed_site(s, spans) for s in sites],
        "feeds": [replace(f, span=spans[f.span[0]]) for f in feeds],
        "saves": [(ctx.path, saved) for saved in saves],
    }


class Graphs:
    """What the exported blocks' graphs hold, across the classes of every file."""

    def __init__(
        self, classes: dict[str, ClassFacts], project: ProjectIndex, read: set[str]
    ) -> None:
        """`classes`: those of the files read already (`read`); every other class of the run
        is read from its file, parsed again, when an exported graph reaches it."""
        self.classes = classes
        self.project = project
        self.read = read
        self.owner: dict[str, FileFacts] = {}
        for f in project.files:
            for qual in f.classes:
                self.owner.setdefault(qual, f)
        self.names = ProjectNames({**dict.fromkeys(self.owner), **classes})

    def _facts(self, name: str) -> tuple[str, ClassFacts] | None:
        qual = self.names.resolve(name)
        if qual is None:
            return None
        if qual not in self.classes:
            self._read(qual)
        return (qual, self.classes[qual]) if qual in self.classes else None

    def _read(self, qual: str) -> None:
        owner = self.owner.get(qual)
        if owner is None or owner.path in self.read:
            return
        self.read.add(owner.path)
        ctx = self.project.context(owner)
        facts = read_file(ctx, exports=False) if ctx is not None else None
        if facts is not None:
            self.classes.update(facts["classes"])

    def _chain(self, name: str) -> list[tuple[str, ClassFacts]]:
        """The class and its project base classes, nearest first."""
        out: list[tuple[str, ClassFacts]] = []
        todo = [name]
        while todo and len(out) < 16:
            found = self._facts(todo.pop(0))
            if found is None or any(q == found[0] for q, _ in out):
                continue
            out.append(found)
            todo.extend(found[1].bases)
        return out

    def uses(self, block: BlockRef, path: str) -> list[tuple[Use, str, str]]:
        """(use, its file, the class holding it) for every use in the block's graph; `path`
        is the exporting file (where the layers `add`ed to it are built)."""
        out: list[tuple[Use, str, str]] = []
        self._members(block.members, out, set(), path)
        if block.name not in SEQUENTIAL:
            self._class(block.name, out, set())
        return out

    def _members(
        self,
        members: tuple[Member, ...],
        out: list[tuple[Use, str, str]],
        seen: set[str],
        path: str,
    ) -> None:
        for member in members:
            if member.use is not None:
                out.append((member.use, path, ""))
            elif member.name is not None and member.name not in SEQUENTIAL:
                self._class(member.name, out, seen)

    def _class(self, name: str, out: list[tuple[Use, str, str]], seen: set[str]) -> None:
        chain = self._chain(name)
        if not chain or chain[0][0] in seen:
            return
        seen.add(chain[0][0])
        members: dict[str, tuple[tuple[Member, ...], str]] = {}
        for _qual, facts in reversed(chain):
            for attr, held in facts.members.items():
                members[attr] = (held, facts.path)
        forward = next(((q, f) for q, f in chain if f.uses is not None), None)
        if forward is None:
            added = next(((f.added, f.path) for _, f in chain if f.added), None)
            if added is not None and self._sequential(chain):
                self._members(added[0], out, seen, added[1])
            return
        qual, facts = forward
        out.extend((use, facts.path, qual) for use in facts.uses or ())
        for attr in sorted(facts.called):
            if attr in members:
                held, path = members[attr]
                self._members(held, out, seen, path)

    def _sequential(self, chain: list[tuple[str, ClassFacts]]) -> bool:
        return any(knowledge.canonical(b) in SEQUENTIAL for _, f in chain for b in f.bases)

    def locate(self, block: BlockRef | None) -> tuple[str, str] | None:
        """(qualified name, file) of the exported block's class, when the run defines it."""
        if block is None or block.name in SEQUENTIAL:
            return None
        found = self._facts(block.name)
        return (found[0], found[1].path) if found is not None else None

    def inputs(self, block: BlockRef) -> tuple[int, int] | None:
        """(required, optional) inputs of the exported block's `hybrid_forward`, when the
        class and the classes it derives from are all known."""
        if block.name in SEQUENTIAL:
            return None
        chain = self._chain(block.name)
        for _qual, facts in chain:
            if facts.uses is None:
                continue
            if not all(
                knowledge.is_mxnet(knowledge.canonical(b)) or self._facts(b) is not None
                for _, f in chain
                for b in f.bases
            ):
                return None
            if len(chain) > 1:
                return None  # a base class may register parameters the forward takes
            return facts.inputs
        return None


def _class_path(module: cst.Module, target: cst.ClassDef) -> str:
    """`Outer.Inner` for a class nested in classes, else its name."""

    def find(body: Any, prefix: str) -> str | None:
        for stmt in body:
            if type(stmt) is cst.ClassDef:
                name = prefix + stmt.name.value
                if stmt is target:
                    return name
                inner = find(stmt.body.body, name + ".")
                if inner is not None:
                    return inner
        return None

    return find(module.body, "") or target.name.value


def _span(rng: Any) -> tuple[int, int, int, int]:
    if rng is None:
        return (1, 1, 1, 1)
    (sl, sc), (el, ec) = rng
    return (sl, sc + 1, el, ec + 1)


def _placed_use(use: Use | None, spans: list[tuple[int, int, int, int]]) -> Use | None:
    return None if use is None else replace(use, span=spans[use.span[0]])


def _placed_class(facts: ClassFacts, spans: list[tuple[int, int, int, int]]) -> ClassFacts:
    def members(held: tuple[Member, ...]) -> tuple[Member, ...]:
        return tuple(Member(m.name, _placed_use(m.use, spans)) for m in held)

    return replace(
        facts,
        uses=None
        if facts.uses is None
        else tuple(replace(u, span=spans[u.span[0]]) for u in facts.uses),
        members={attr: members(held) for attr, held in facts.members.items()},
        added=members(facts.added),
    )


def _placed_site(site: ExportSite, spans: list[tuple[int, int, int, int]]) -> ExportSite:
    block = site.block
    if block is not None:
        block = replace(
            block, members=tuple(Member(m.name, _placed_use(m.use, spans)) for m in block.members)
        )
    args: dict[str, Arg] = {
        key: replace(arg, span=spans[arg.node]) if arg.node >= 0 else arg
        for key, arg in site.args.items()
    }
    unknown = tuple(
        replace(
            u,
            span=spans[u.span[0]],
            cut=None if u.cut is None else (*spans[u.cut[0]][2:], *spans[u.cut[1]][2:]),  # type: ignore[arg-type]
        )
        for u in site.unknown
    )
    return replace(site, span=spans[site.span[0]], block=block, args=args, unknown=unknown)
