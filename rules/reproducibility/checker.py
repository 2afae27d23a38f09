"""The reproducibility checker (MXL3xx): collects the seeds and the draws of each file in execution
order (`mxlint/flow.py`), keeps them as the file's facts, and decides per entry script once every
file of the run is known (`finalize`), following calls into other files' helpers.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import libcst as cst

from mxlint import knowledge
from mxlint.checker import Checker
from mxlint.flow import (
    Flow,
    function_params,
    has_main_guard,
    main_runs_own_tests,
    main_runs_tests,
)
from mxlint.names import ImportMap, ProjectNames, dotted_name
from mxlint.positions import node_ranges
from mxlint.project import ProjectIndex
from mxlint.rule import Edit, Finding, Fix, Location, Rule
from mxlint.rules.reproducibility import seed_after_randomness
from mxlint.rules.reproducibility._analysis import (
    _GENERATOR,
    _RELEVANT,
    _SEED_CALL,
    ALL_KINDS,
    GUARDED,
    EntryFacts,
    Item,
    Summary,
    _Collector,
    _expand,
    _finding,
    _truth,
    _why,
    guard_holds,
    module_level_training_loop,
    relevant_text,
    trains_in_code,
    trains_in_text,
)
from mxlint.rules.reproducibility.seed_after_randomness import SeedAfterRandomness
from mxlint.rules.reproducibility.shuffled_evaluation_loader import (
    ShuffledEvaluationLoader,
    check_built_loader,
    check_loader,
)
from mxlint.rules.reproducibility.unseeded_numpy_random import UnseededNumpyRandom
from mxlint.rules.reproducibility.unseeded_python_random import UnseededPythonRandom
from mxlint.rules.reproducibility.unseeded_shuffle import UnseededShuffle
from mxlint.walker import iter_nodes, typed_nodes

#: What `_worth_tracing` reads of a function's body.
_NAMES_AND_CALLS = frozenset({cst.Name, cst.Call})


class ReproducibilityChecker(Checker):
    """Collects seeds and draws per file; decides per entry script in `finalize`."""

    rules = (UnseededShuffle, UnseededNumpyRandom, UnseededPythonRandom, SeedAfterRandomness)
    name = "reproducibility"
    cross_file = True

    def _worth_tracing(self, flow: Flow) -> set[str]:
        """Functions (and classes) whose trace can meet a seed or a draw: a name that looks
        like one (`random`, `seed`, `shuffle`...; also through import aliases) in its own
        body, a call into another module of the project, or a call to a function or class of
        this file that is worth tracing."""
        units: dict[str, list[cst.CSTNode]] = {n: [f] for n, f in flow.functions.items()}
        for cls, methods in flow.classes.items():
            units.setdefault(cls, []).extend(methods.values())
        direct: set[str] = set()
        calls: dict[str, set[str]] = {}
        for unit, roots in units.items():
            callees: set[str] = set()
            hit = False
            for root in roots:
                for node in typed_nodes(root, _NAMES_AND_CALLS):
                    if type(node) is cst.Name:
                        if node.value in units:
                            callees.add(node.value)
                        if not hit and _RELEVANT.search(node.value):
                            hit = True
                    elif not hit and type(node) is cst.Call:
                        # An alias of a draw, or a call into another module of the project
                        # (its summary may seed or draw: kept as a call for `finalize`).
                        resolved = self.ctx.resolve(node.func)
                        if resolved is not None and (
                            _RELEVANT.search(resolved) or not knowledge.is_library(resolved)
                        ):
                            hit = True
            if hit:
                direct.add(unit)
            calls[unit] = callees
        worth = set(direct)
        changed = True
        while changed:
            changed = False
            for unit, callees in calls.items():
                if unit not in worth and callees & worth:
                    worth.add(unit)
                    changed = True
        return worth

    def end(self) -> None:
        ctx = self.ctx
        if ctx.imports.other_framework():  # also where the engine is made to parse (`force`)
            return
        if not ctx.imports.mentions_mxnet() and _in_other_framework_folder(
            ctx.settings.relative(ctx.path)
        ):
            return
        module = ctx.module
        declared = ctx.is_entry or module_level_training_loop(module, ctx.source)
        # A test module's `__main__` block runs its tests: not a program whose results a seed
        # would make repeatable; nor is one that calls its own test functions when nothing in
        # it trains (a loader's smoke test printing batch shapes).
        entry = declared or (
            has_main_guard(module)
            and not main_runs_tests(module)
            and not (
                main_runs_own_tests(module)
                and not trains_in_code(module, ctx.settings.relative(ctx.path))
            )
        )
        relevant = relevant_text(ctx.source)
        if not entry and not relevant:
            return
        collector = _Collector(
            self, Flow(module), ctx.settings.enabled(ShuffledEvaluationLoader, ctx.path)
        )
        functions: dict[str, list[tuple[Item, cst.CSTNode]]] = {}
        params: dict[str, tuple[tuple[str, bool | None], ...]] = {}
        #: The summarised classes (constructing one runs them; they are no seeding roots).
        classes: set[str] = set()
        if relevant:
            flow = Flow(module)
            worth = self._worth_tracing(flow)
            for fn in flow.functions.values():
                if fn.name.value not in worth:
                    continue
                names = frozenset(p.name.value for p in function_params(fn))
                found = collector.items(list(Flow(module).function_sites(fn)), names)
                if found:
                    functions[ctx.qualname(fn.name.value)] = found
                    params[ctx.qualname(fn.name.value)] = tuple(
                        (p.name.value, _truth(p.default)) for p in function_params(fn)
                    )
            # A class another file constructs: what its `__init__` runs, and what the
            # methods the framework calls later draw (a dataset's `__getitem__`).
            for cls_name, methods in flow.classes.items():
                if cls_name not in worth:
                    continue
                init = methods.get("__init__")
                init_params = function_params(init)[1:] if init is not None else []
                names = frozenset(p.name.value for p in init_params)
                found = collector.items(list(Flow(module).construction_sites(cls_name)), names)
                if found:
                    qual = ctx.qualname(cls_name)
                    functions[qual] = found
                    params[qual] = tuple((p.name.value, _truth(p.default)) for p in init_params)
                    classes.add(qual)
        entry_items: list[tuple[Item, cst.CSTNode]] = []
        if entry:
            flow = Flow(module)
            sites = list(flow.module_sites())
            sites.extend(flow.unreached_sites())
            entry_items = [
                (it, node) for it, node in collector.items(sites, frozenset()) if it.cond is None
            ]
        fix_nodes, fixes = self._fixes() if entry else ({}, {})
        nodes = [n for _, n in entry_items] + [n for found in functions.values() for _, n in found]
        nodes.extend(fix_nodes.values())
        ranges = node_ranges(module, nodes, ctx.source) if nodes else {}

        def placed(item: Item, node: cst.CSTNode) -> Item:
            rng = ranges.get(node)
            if rng is None:
                return item
            (sl, sc), (el, ec) = rng
            return replace(item, span=(sl, sc + 1, el, ec + 1), line=sl, module=ctx.imports.module)

        facts: dict[str, Any] = {
            "functions": {
                q: Summary(
                    params[q],
                    tuple(placed(i, n) for i, n in found),
                    ctx.path,
                    constructs=q in classes,
                )
                for q, found in functions.items()
            },
            "called": self._called_here(functions),
        }
        if entry:
            fix_objs: list[tuple[str, Fix | None]] = []
            for kind, (text, anchor) in fixes.items():
                rng = ranges.get(anchor)
                if rng is None:
                    fix_objs.append((kind, None))
                    continue
                (_sl, _sc), (el, ec) = rng
                loc = Location(el, ec + 1)
                fix_objs.append(
                    (
                        kind,
                        Fix(
                            "unsafe",
                            f"Insert `{text.strip().splitlines()[-1]}` after the imports",
                            (Edit(text, loc, loc),),
                        ),
                    )
                )
            facts["entry"] = EntryFacts(
                ctx.path,
                tuple(placed(i, n) for i, n in entry_items),
                tuple(fix_objs),
                trains_in_code(ctx.module, ctx.settings.relative(ctx.path)),
                ctx.imports.module,
                not declared,
                trains_in_text(ctx.source),
                mxnet=ctx.imports.mentions_mxnet(),
            )
        ctx.facts.checker_facts[self.name] = facts

    def _called_here(self, functions: Iterable[str]) -> frozenset[str]:
        """Which of the summarised functions this file mentions besides their `def` (a call,
        a callback, a method through `self.`): those are not roots of their own."""
        quals = list(functions)
        if not quals:
            return frozenset()
        counts = Counter(n.value for n in iter_nodes(self.ctx.module) if type(n) is cst.Name)
        return frozenset(q for q in quals if counts[q.rsplit(".", 1)[-1]] > 1)

    def _fixes(self) -> tuple[dict[str, cst.CSTNode], dict[str, tuple[str, cst.CSTNode]]]:
        """Where `np.random.seed(0)` / `random.seed(0)` can be inserted cleanly: after the
        leading block of imports, with the module imported (or its name free to import it)."""
        module = self.ctx.module
        last: cst.CSTNode | None = None
        for index, stmt in enumerate(module.body):
            if type(stmt) is cst.SimpleStatementLine and all(
                type(s) in (cst.Import, cst.ImportFrom) for s in stmt.body
            ):
                last = stmt.body[-1]
                continue
            if (
                index == 0
                and type(stmt) is cst.SimpleStatementLine
                and len(stmt.body) == 1
                and type(stmt.body[0]) is cst.Expr
                and type(stmt.body[0].value) in (cst.SimpleString, cst.ConcatenatedString)
            ):
                continue
            break
        if last is None:
            return {}, {}
        # Names the leading imports bind: a seed placed after them may only use those.
        leading = ImportMap(self.ctx.imports.module, self.ctx.imports.is_package)
        for stmt in module.body:
            if type(stmt) is not cst.SimpleStatementLine:
                break
            for small in stmt.body:
                if type(small) is cst.Import:
                    leading.add_import(small)
                elif type(small) is cst.ImportFrom:
                    leading.add_import_from(small)
            if last in stmt.body:
                break
        aliases = leading.aliases
        taken = self.ctx.imports.aliases
        source = self.ctx.source
        out: dict[str, tuple[str, cst.CSTNode]] = {}
        numpy_names = [n for n, full in aliases.items() if full == "numpy"]
        if numpy_names:
            out["numpy"] = (f"\n{numpy_names[0]}.random.seed(0)", last)
        elif "np" not in taken and not re.search(r"\bnp\b", source):
            out["numpy"] = ("\nimport numpy as np\nnp.random.seed(0)", last)
        if aliases.get("random") == "random":
            out["python"] = ("\nrandom.seed(0)", last)
        elif "random" not in taken and not re.search(r"(?<![.\w])random\b", source):
            out["python"] = ("\nimport random\nrandom.seed(0)", last)
        return {k: v[1] for k, v in out.items()}, out

    # -- cross-file decision -------------------------------------------------------------------

    @classmethod
    def finalize(cls, project: ProjectIndex) -> list[Finding]:
        summaries: dict[str, Summary] = {}
        entries: list[EntryFacts] = []
        called: set[str] = set()
        for _module, facts in project.checker_facts(cls.name):
            assert isinstance(facts, dict)
            summaries.update(facts.get("functions", {}))
            called.update(facts.get("called", ()))
            if facts.get("entry") is not None:
                entries.append(facts["entry"])
        names = ProjectNames(summaries)
        findings: list[Finding] = []
        for entry in entries:
            if (
                entry.guessed
                and not entry.trains
                and project.is_library_module(entry.module, entry.path)
            ):
                continue  # a library module's smoke test, not a program
            items = _expand(entry.items, summaries, names, frozenset(), None)
            if not entry.mxnet:
                items = [it for it in items if not it.built]
            findings.extend(_decide(entry, items))
        seen = {(f.filename, f.location, f.code) for f in findings}
        for root, items in _seeding_roots(summaries, names, entries, called):
            for finding in _decide(root, items):
                if (finding.filename, finding.location, finding.code) not in seen:
                    seen.add((finding.filename, finding.location, finding.code))
                    findings.append(finding)
        return findings


class EvaluationLoaderChecker(Checker):
    """MXL305, statement by statement: a loader is judged where it is built."""

    rules = (ShuffledEvaluationLoader,)
    name = "evaluation-loaders"

    def begin(self) -> None:
        self._targets: dict[int, str | None] = {}
        self._functions: dict[str, cst.FunctionDef] | None = None
        #: A literal `shuffle=True` is all it reports (the source is searched once, not per call).
        self._literal_true = "True" in self.ctx.source

    def visit_Assign(self, node: cst.Assign) -> None:
        if type(node.value) is cst.Call and len(node.targets) == 1:
            self._targets[id(node.value)] = dotted_name(node.targets[0].target)

    def visit_Call(self, node: cst.Call) -> None:
        if self._literal_true and any(_is_true(arg.value) for arg in node.args):
            target = self._targets.get(id(node))
            check_loader(self.ctx, node, target)
            if type(node.func) is cst.Name:
                builder = self._builders().get(node.func.value)
                if builder is not None:
                    check_built_loader(self.ctx, node, builder, target)

    def _builders(self) -> dict[str, cst.FunctionDef]:
        """The module's functions, by name (a loader factory: `make_loader(val_set, True)`)."""
        if self._functions is None:
            self._functions = {
                stmt.name.value: stmt
                for stmt in self.ctx.module.body
                if type(stmt) is cst.FunctionDef
            }
        return self._functions


def _is_true(value: cst.BaseExpression) -> bool:
    """`True` as written: the only `shuffle` value MXL305 reports, so a call without one
    needs no name resolved."""
    return type(value) is cst.Name and value.value == "True"


def _seeding_roots(
    summaries: dict[str, Summary],
    names: ProjectNames,
    entries: list[EntryFacts],
    extra_called: set[str],
) -> list[tuple[EntryFacts, list[Item]]]:
    """Functions that seed some generators themselves and that nothing in the run calls (a
    `train()` a command-line wrapper or a notebook calls): seeding one generator shows that
    reproducibility was intended, so what they draw from the others is checked as for an entry
    script."""
    called: set[str] = set(extra_called)
    for found in [s.items for s in summaries.values()] + [e.items for e in entries]:
        for it in found:
            if it.op == "call":
                target = names.resolve(it.target)
                if target is not None:
                    called.add(target)
    out: list[tuple[EntryFacts, list[Item]]] = []
    for qual, summary in summaries.items():
        if qual in called or not summary.path or summary.constructs:
            continue
        own = {k for it in summary.items if it.op == "seed" and it.cond is None for k in it.kinds}
        if not own or own >= set(ALL_KINDS):
            continue
        defaults = dict(summary.params)
        items = _expand(
            tuple(
                replace(it, cond=None)
                for it in summary.items
                if it.cond is None
                or (it.cond.startswith(GUARDED) and guard_holds(it.cond, defaults))
            ),
            summaries,
            names,
            frozenset({qual}),
            None,
        )
        short = qual.rsplit(".", 1)[-1]
        seeded = " and ".join(sorted(_GENERATOR[k] for k in own))
        root = EntryFacts(summary.path, (), (), True, scope=f"`{short}()` (it seeds {seeded})")
        out.append((root, items))
    return out


def _decide(entry: EntryFacts, items: list[Item]) -> list[Finding]:
    if any(it.op == "seed" and it.fresh for it in items):
        return []  # seeded from a fresh random value on purpose: every run is meant to differ
    seeded_anywhere = {k for it in items if it.op == "seed" for k in it.kinds}
    first_seed: dict[str, int] = {}
    for index, it in enumerate(items):
        if it.op == "seed" and it.reached:
            for kind in it.kinds:
                first_seed.setdefault(kind, index)
    mx_note = (
        " (`mx.random.seed` seeds only MXNet's own generator)" if "mxnet" in seeded_anywhere else ""
    )
    findings: list[Finding] = []
    reported: set[str] = set()
    fixes = dict(entry.fixes)
    # The script's own draws (and its helpers') first: one finding per rule names them.
    for it in sorted(items, key=lambda it: it.built):
        if it.op != "use" or it.seedgen or it.code in reported or not it.code or it.span is None:
            continue
        missing = [k for k in it.kinds if k not in seeded_anywhere]
        if not missing:
            continue
        if it.direct and not entry.training:
            continue
        reported.add(it.code)
        kind = missing[0]
        rule: type[Rule] = {
            "MXL301": UnseededShuffle,
            "MXL302": UnseededNumpyRandom,
            "MXL303": UnseededPythonRandom,
        }[it.code]
        message = rule.format(
            what=it.what,
            generator=_GENERATOR[kind],
            why=_why(it),
            seed=_SEED_CALL[kind],
            mx_note=mx_note,
            scope=entry.scope,
        )
        if it.via:
            # Drawn inside a helper or class of the project that this line calls or builds.
            message = message.replace(f"`{it.what}`", f"`{it.what}` (in `{it.via}()`)", 1)
        fix = fixes.get(kind) if len(missing) == 1 else None
        findings.append(_finding(rule, entry, it, message, fix))
    findings.extend(seed_after_randomness.check_seeds(entry, items, first_seed))
    return findings


__all__ = [
    "EvaluationLoaderChecker",
    "ReproducibilityChecker",
    "ShuffledEvaluationLoader",
    "SeedAfterRandomness",
    "UnseededNumpyRandom",
    "UnseededPythonRandom",
    "UnseededShuffle",
]


def _in_other_framework_folder(relative: str) -> bool:
    """Whether a folder of the file's path in its project is named after another framework
    (`knowledge.OTHER_FRAMEWORK_FOLDERS`)."""
    folders = relative.split("/")[:-1]  # `Settings.relative` gives a POSIX path
    return any(folder.lower() in knowledge.OTHER_FRAMEWORK_FOLDERS for folder in folders)
