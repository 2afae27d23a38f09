"""The reproducibility checker (MXL3xx): collects the seeds and the draws of each file in execution
order (`mxlint/flow.py`), keeps them as the file's facts, and decides per entry script once every
file of the run is known (`finalize`), following calls into other files' helpers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import libcst as cst
from mxlint.rules.reproducibility.seed_after_randomness import SeedAfterRandomness
from mxlint.rules.reproducibility.unseeded_numpy_random import UnseededNumpyRandom
from mxlint.rules.reproducibility.unseeded_python_random import UnseededPythonRandom
from mxlint.rules.reproducibility.unseeded_shuffle import UnseededShuffle

from mxlint import knowledge
from mxlint.checker import Checker
from mxlint.flow import (
    Flow,
    Frame,
    Site,
    bound_argument,
    flows_to_return,
    function_params,
    has_main_guard,
)
from mxlint.names import ImportMap, ProjectNames, last_name
from mxlint.positions import node_ranges
from mxlint.project import ProjectIndex
from mxlint.rule import Edit, Finding, Fix, Location, Rule
from mxlint.walker import iter_nodes

ALL_KINDS = ("numpy", "python", "mxnet")
#: A file that mentions none of these has nothing to tell about seeding or randomness.
_RELEVANT = re.compile(r"random|seed|shuffle|Sampler|SentenceIter|Augmenter|Aug\b|Iter\b")
#: Training scripts; scripts without these (benchmarks, demos) do not need raw draws seeded.
_TRAINING = re.compile(r"\b(?:autograd|backward|Trainer|train\w*|fit)\b")
_SEEDGEN = re.compile(r"seed", re.IGNORECASE)

_SEED_CALL = {
    "numpy": "np.random.seed(SEED)",
    "python": "random.seed(SEED)",
    "mxnet": "mx.random.seed(SEED)",
}
_GENERATOR = {
    "numpy": "numpy's global generator",
    "python": "Python's `random` module",
    "mxnet": "MXNet's generator",
}


@dataclass(frozen=True)
class Item:
    """One relevant call in execution order, with its place already turned into a span."""

    op: str  # "seed" | "use" | "call"
    kinds: tuple[str, ...] = ()
    code: str = ""  # the rule a use belongs to ("" for MXNet draws: only ordering matters)
    what: str = ""
    span: tuple[int, int, int, int] | None = None  # 1-based row/col start and end
    symbol: str | None = None
    line: int = 0
    module: str = ""
    reached: bool = True
    seedgen: bool = False
    #: A raw draw (`np.random.rand()`), as opposed to an API that draws when applied.
    direct: bool = False
    #: A loader whose `shuffle=` is a parameter of the summarised function (bound by callers).
    cond: str | None = None
    target: str = ""
    args: tuple[bool | None, ...] = ()
    kwargs: tuple[tuple[str, bool | None], ...] = ()


@dataclass(frozen=True)
class Summary:
    params: tuple[tuple[str, bool | None], ...]
    items: tuple[Item, ...]


@dataclass(frozen=True)
class EntryFacts:
    path: str
    items: tuple[Item, ...]
    fixes: tuple[tuple[str, Fix | None], ...]
    training: bool


def _truth(expr: cst.BaseExpression | None) -> bool | None:
    """The truth of a literal (`True`, `0`, `None`...), None when not a literal."""
    if type(expr) is cst.Name and expr.value in ("True", "False", "None"):
        return expr.value == "True"
    if type(expr) is cst.Integer:
        return expr.evaluated_value != 0
    return None


def _seeding_decorator(fn: cst.FunctionDef) -> bool:
    """`@with_seed()`, `@seed_everything`: a decorator named like a seeder seeds the call."""
    for dec in fn.decorators:
        expr = dec.decorator.func if type(dec.decorator) is cst.Call else dec.decorator
        if "seed" in last_name(expr).lower():
            return True
    return False


def _assumed_seeder(name: str) -> bool:
    """An unknown function named like a seeder (`set_seed`, `seed_everything`) is taken at its
    word: reporting a script that seeds through it would cry wolf."""
    last = name.rsplit(".", 1)[-1]
    return "seed" in last.lower() and not knowledge.is_library(name)


class _Collector:
    """Turns traced call sites of one file into items (nodes kept until positions are paid)."""

    def __init__(self, checker: ReproducibilityChecker, flow: Flow) -> None:
        self.ctx = checker.ctx
        self.flow = flow
        self.returns: dict[cst.FunctionDef, frozenset[str]] = {}

    def _is_local(self, site: Site) -> bool:
        """A call the tracer follows into this file's own code (its effects are traced)."""
        func = site.call.func
        if type(func) is cst.Name:
            return func.value in self.flow.functions or func.value in self.flow.classes
        cls = site.frames[-1].cls if site.frames else None
        return (
            type(func) is cst.Attribute
            and type(func.value) is cst.Name
            and func.value.value == "self"
            and cls is not None
            and func.attr.value in self.flow.classes.get(cls, {})
        )

    def items(
        self, sites: list[Site], root_params: frozenset[str]
    ) -> list[tuple[Item, cst.CSTNode]]:
        out: list[tuple[Item, cst.CSTNode]] = []
        for site in sites:
            for item in self.classify(site, root_params):
                out.append(item)
        return out

    def classify(self, site: Site, root_params: frozenset[str]) -> list[tuple[Item, cst.CSTNode]]:
        call = site.call
        ctx = self.ctx
        name = ctx.resolve(call.func)
        symbol = _symbol(site.frames)
        base = Item("use", reached=site.reached, symbol=symbol)
        if name is None:
            last = last_name(call.func)
            if "seed" in last.lower() and not self._is_local(site):
                return [(replace(base, op="seed", kinds=ALL_KINDS, what=ctx.code(call.func)), call)]
            return []
        what = ctx.code(call.func)
        if name in knowledge.NUMPY_SEEDERS:
            return [(replace(base, op="seed", kinds=("numpy",), what=what), call)]
        if name in knowledge.PY_SEEDERS:
            return [(replace(base, op="seed", kinds=("python",), what=what), call)]
        if name in knowledge.MXNET_SEEDERS:
            return [(replace(base, op="seed", kinds=("mxnet",), what=what), call)]
        if name in knowledge.ALL_SEEDERS:
            return [(replace(base, op="seed", kinds=ALL_KINDS, what=what), call)]
        if any(_seeding_decorator(frame.function) for frame in site.frames):
            return []  # `@with_seed()` (MXNet's test suite) seeds every generator per call
        draw = {
            "numpy": knowledge.numpy_random_call(name),
            "python": knowledge.python_random_call(name),
            "mxnet": knowledge.mxnet_random_call(name),
        }
        for kind, hit in draw.items():
            if hit:
                code = {"numpy": "MXL302", "python": "MXL303"}.get(kind, "")
                return [
                    (
                        replace(
                            base,
                            kinds=(kind,),
                            code=code,
                            what=what + "()",
                            direct=True,
                            seedgen=self._seedgen(site),
                        ),
                        call,
                    )
                ]
        pipeline = knowledge.SHUFFLING_PIPELINES.get(name)
        if pipeline is not None:
            return self._pipeline(site, base, what, pipeline, root_params)
        if name in knowledge.PY_RANDOM_AUGMENTERS:
            return [(replace(base, kinds=("python",), code="MXL303", what=what + "()"), call)]
        if name in knowledge.NUMPY_RANDOM_AUGMENTERS:
            return [(replace(base, kinds=("numpy",), code="MXL302", what=what + "()"), call)]
        if name == knowledge.CREATE_AUGMENTER:
            found: list[tuple[Item, cst.CSTNode]] = []
            for kinds, code, keys in (
                (("python",), "MXL303", knowledge.CREATE_AUGMENTER_PY_KEYWORDS),
                (("numpy",), "MXL302", knowledge.CREATE_AUGMENTER_NUMPY_KEYWORDS),
            ):
                on = [
                    a.keyword.value
                    for a in call.args
                    if a.keyword is not None
                    and a.keyword.value in keys
                    and _truth(a.value) is not False
                    and not _is_zero(a.value)
                ]
                if on:
                    found.append(
                        (replace(base, kinds=kinds, code=code, what=f"{what}({on[0]}=...)"), call)
                    )
            return found
        top = name.split(".", 1)[0]
        if top not in knowledge.LIBRARY_ROOTS or name in knowledge.ALL_SEEDERS:
            return [
                (
                    replace(
                        base,
                        op="call",
                        target=name,
                        what=what,
                        args=tuple(
                            _truth(a.value) for a in call.args if a.keyword is None and not a.star
                        ),
                        kwargs=tuple(
                            (a.keyword.value, _truth(a.value))
                            for a in call.args
                            if a.keyword is not None
                        ),
                    ),
                    call,
                )
            ]
        return []

    def _seedgen(self, site: Site) -> bool:
        """The draw computes a seed (`seed = random.randint(...)`, `--seed` default)."""
        if type(site.stmt) in (cst.If, cst.For, cst.While, cst.With):
            return False
        return bool(_SEEDGEN.search(self.ctx.code(site.stmt)))

    def _pipeline(
        self,
        site: Site,
        base: Item,
        what: str,
        pipeline: tuple[tuple[str, ...], tuple[str, int] | None],
        root_params: frozenset[str],
    ) -> list[tuple[Item, cst.CSTNode]]:
        kinds, shuffle = pipeline
        call = site.call
        cond: str | None = None
        label = what + "()"
        if shuffle is not None:
            keyword, position = shuffle
            expr = _argument(call, keyword, position)
            verdict, cond = self._evaluate(expr, site.frames, root_params)
            if verdict is False or (verdict is None and cond is None):
                return []
            label = f"{what}(shuffle=True)"
        anchor: cst.CSTNode = call
        stmt = site.stmt
        symbol = base.symbol
        # A loader built by a helper that returns it is reported where the caller obtains it.
        for depth in range(len(site.frames) - 1, -1, -1):
            frame = site.frames[depth]
            if frame.call is None or not flows_to_return(stmt, frame.function, self.returns):
                break
            anchor, stmt = frame.call, frame.stmt  # type: ignore[assignment]
            symbol = _symbol(site.frames[:depth])
        return [
            (
                replace(base, kinds=kinds, code="MXL301", what=label, cond=cond, symbol=symbol),
                anchor,
            )
        ]

    def _evaluate(
        self,
        expr: cst.BaseExpression | None,
        frames: tuple[Frame, ...],
        root_params: frozenset[str],
    ) -> tuple[bool | None, str | None]:
        """Truth of a `shuffle=` argument, following parameters up the call chain; a parameter
        of the summarised root function is returned by name (callers in other files bind it)."""
        depth = len(frames) - 1
        while type(expr) is cst.Name and expr.value not in ("True", "False", "None"):
            if depth < 0:
                return None, None
            frame = frames[depth]
            if expr.value not in {p.name.value for p in function_params(frame.function)}:
                return None, None
            if frame.call is None:
                return None, (expr.value if expr.value in root_params else None)
            expr = bound_argument(frame.call, frame.function, expr.value, frame.bound)
            depth -= 1
        return _truth(expr), None


def _is_zero(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Integer, cst.Float)) and float(expr.evaluated_value) == 0


def _argument(call: cst.Call, keyword: str, position: int) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    plain = [a for a in call.args if a.keyword is None and not a.star]
    if any(a.star for a in call.args):
        return None
    return plain[position].value if position < len(plain) else None


def _symbol(frames: tuple[Frame, ...]) -> str | None:
    if not frames:
        return None
    frame = frames[-1]
    name = frame.function.name.value
    return f"{frame.cls}.{name}" if frame.cls else name


def module_level_training_loop(module: cst.Module, code: Any) -> bool:
    """A script whose training loop runs at module level (no `__main__` guard)."""
    for stmt in module.body:
        if type(stmt) in (cst.For, cst.While, cst.With):
            text = code(stmt)
            if ".backward(" in text or "autograd.record" in text or ".fit(" in text:
                return True
    return False


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
                for node in iter_nodes(root):
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
        module = ctx.module
        entry = (
            ctx.is_entry or has_main_guard(module) or module_level_training_loop(module, ctx.code)
        )
        relevant = bool(_RELEVANT.search(ctx.source))
        if not entry and not relevant:
            return
        collector = _Collector(self, Flow(module))
        functions: dict[str, list[tuple[Item, cst.CSTNode]]] = {}
        params: dict[str, tuple[tuple[str, bool | None], ...]] = {}
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
                q: Summary(params[q], tuple(placed(i, n) for i, n in found))
                for q, found in functions.items()
            },
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
                bool(_TRAINING.search(ctx.source)),
            )
        ctx.facts.checker_facts[self.name] = facts

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
        for _module, facts in project.checker_facts(cls.name):
            assert isinstance(facts, dict)
            summaries.update(facts.get("functions", {}))
            if facts.get("entry") is not None:
                entries.append(facts["entry"])
        names = ProjectNames(summaries)
        findings: list[Finding] = []
        for entry in entries:
            items = _expand(entry.items, summaries, names, frozenset(), None)
            findings.extend(_decide(entry, items))
        return findings


def _expand(
    items: tuple[Item, ...],
    summaries: dict[str, Summary],
    names: ProjectNames,
    active: frozenset[str],
    site: Item | None,
) -> list[Item]:
    """Replace calls of project helpers by what they do, placed at the calling site."""
    out: list[Item] = []
    for item in items:
        if site is not None:
            item = replace(
                item,
                span=site.span,
                symbol=site.symbol,
                line=site.line,
                module=site.module,
                reached=site.reached and item.reached,
            )
        if item.op != "call":
            out.append(item)
            continue
        target = names.resolve(item.target)
        if target is None:
            if _assumed_seeder(item.target) or item.target in knowledge.ALL_SEEDERS:
                out.append(replace(item, op="seed", kinds=ALL_KINDS))
            continue
        if target in active:
            continue
        summary = summaries[target]
        bindings = _bind(summary.params, item)
        inner: list[Item] = []
        for sub in summary.items:
            if sub.cond is not None:
                if not bindings.get(sub.cond):
                    continue
                sub = replace(sub, cond=None)
            inner.append(sub)
        out.extend(_expand(tuple(inner), summaries, names, active | {target}, item))
    return out


def _bind(params: tuple[tuple[str, bool | None], ...], call: Item) -> dict[str, bool | None]:
    values = {name: default for name, default in params}
    names = [name for name, _ in params]
    for index, truth in enumerate(call.args):
        if index < len(names):
            values[names[index]] = truth
    values.update(dict(call.kwargs))
    return values


def _decide(entry: EntryFacts, items: list[Item]) -> list[Finding]:
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
    for it in items:
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
        )
        fix = fixes.get(kind) if len(missing) == 1 else None
        findings.append(_finding(rule, entry, it, message, fix))
    done: set[tuple[int, int]] = set()
    for kind, index in sorted(first_seed.items(), key=lambda kv: kv[1]):
        seed = items[index]
        earlier = [
            it
            for it in items[:index]
            if it.op == "use"
            and kind in it.kinds
            and it.reached
            and not it.seedgen
            and it.code != "MXL301"
            and it.span is not None
        ]
        if not entry.training:
            earlier = [it for it in earlier if not it.direct]
        if not earlier or seed.span is None or (seed.span[0], seed.span[1]) in done:
            continue
        done.add((seed.span[0], seed.span[1]))
        first = earlier[0]
        message = SeedAfterRandomness.format(
            seed=seed.what + "()", what=first.what, line=first.line, generator=_GENERATOR[kind]
        )
        findings.append(_finding(SeedAfterRandomness, entry, seed, message, None))
    return findings


def _why(item: Item) -> str:
    if (
        item.what.startswith(("DataLoader", "RandomSampler"))
        or "DataLoader" in item.what
        or "RandomSampler" in item.what
    ):
        return "gluon's RandomSampler calls `np.random.shuffle`"
    if "ImageIter" in item.what or "ImageDetIter" in item.what:
        return "`mx.image.ImageIter` calls `random.shuffle`"
    if "NDArrayIter" in item.what:
        return "`mx.io.NDArrayIter` calls `np.random.shuffle`"
    return "it calls `random.shuffle` and `np.random.shuffle`"


def _finding(
    rule: type[Rule], entry: EntryFacts, item: Item, message: str, fix: Fix | None
) -> Finding:
    assert item.span is not None
    sl, sc, el, ec = item.span
    return Finding(
        rule.code,
        message,
        entry.path,
        Location(sl, sc),
        Location(el, ec),
        fix=fix,
        symbol=item.symbol,
        data={"entry": entry.path},
    )


__all__ = [
    "ReproducibilityChecker",
    "SeedAfterRandomness",
    "UnseededNumpyRandom",
    "UnseededPythonRandom",
    "UnseededShuffle",
]
