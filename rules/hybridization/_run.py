"""The hybridization checker: runs the taint analysis over every hybridized method of a file,
summarises helpers for calls from other files, and resolves cross-file calls in `finalize`."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import PurePath

import libcst as cst

from mxlint.checker import Checker, FileContext, FileFacts, FixSpec, NodeEdit, shortened
from mxlint.knowledge.api import api
from mxlint.names import ProjectNames
from mxlint.positions import node_ranges
from mxlint.project import ProjectIndex
from mxlint.rule import Finding, Location, Rule
from mxlint.rules.hybridization import (
    autograd_state_in_hybrid,
    block_state_in_forward,
    imperative_op_in_hybrid,
    implicit_broadcast,
    inplace_op_in_hybrid,
    one_namespace_function,
    print_tensor_in_hybrid,
    reshape_varargs,
    tensor_as_sequence,
    tensor_attribute,
    tensor_control_flow,
    tensor_to_python,
    unknown_mxnet_member,
)
from mxlint.rules.hybridization._analysis import (
    INHERITED,
    Break,
    Event,
    FileAnalysis,
    HelperCall,
    HybridHooks,
    Pending,
    Summary,
    child_kinds,
    may_be_list,
    name_uses,
    param_env,
)
from mxlint.rules.hybridization._ranks import Mismatch, mismatches
from mxlint.rules.hybridization._taint import TENSORISH, Env, Interpreter, Kind, params_of
from mxlint.semantic.effects import argument_slot
from mxlint.walker import iter_nodes

NAME = "hybridization"

#: What a code means when a helper does it, said at the call site.
_SITE_ADVICE = {
    "MXL101": tensor_control_flow.SITE_ADVICE,
    "MXL102": tensor_to_python.SITE_ADVICE,
    "MXL103": tensor_attribute.SITE_ADVICE,
    "MXL104": tensor_as_sequence.SITE_ADVICE,
    "MXL105": imperative_op_in_hybrid.SITE_ADVICE,
    "MXL106": print_tensor_in_hybrid.SITE_ADVICE,
    "MXL107": inplace_op_in_hybrid.SITE_ADVICE,
    "MXL108": autograd_state_in_hybrid.SITE_ADVICE,
    "MXL110": unknown_mxnet_member.SITE_ADVICE,
    "MXL111": one_namespace_function.SITE_ADVICE,
    "MXL112": reshape_varargs.SITE_ADVICE,
    "MXL113": block_state_in_forward.SITE_ADVICE,
}
#: What a code's finding does once the block is hybridized, where it is not a graph break.
_SITE_EFFECT = {"MXL113": block_state_in_forward.SITE_EFFECT}


@dataclass(frozen=True)
class Site:
    """A call from a hybridized method into a helper of the project, decided in `finalize`."""

    path: str
    cls: str
    method: str
    requirement: str
    span: tuple[int, int, int, int]
    callee: str
    keys: tuple[str, ...]
    symbol: str
    #: The call sits in a None fallback (`f(x) if size is None else size`): shapes are fine.
    relaxed: bool = False


@dataclass(frozen=True)
class _Raw:
    """What a summary saw at a node, before the caller's findings are made of it."""

    code: str
    what: str
    node: cst.CSTNode


class _Summarizer:
    """Per-file: summaries of functions and methods (lazy, memoised, recursion-guarded)."""

    def __init__(self, analysis: FileAnalysis, mxnet: str) -> None:
        self.analysis = analysis
        self.mxnet = mxnet
        self.raw: dict[
            str,
            tuple[
                tuple[_Raw, ...],
                dict[str, tuple[_Raw, ...]],
                dict[str, tuple[Pending, ...]],
                frozenset[str],
                tuple[str, ...],
                bool,
                Kind,
            ],
        ] = {}
        self.active: set[str] = set()

    def get(self, qual: str):  # type: ignore[no-untyped-def]
        if qual in self.raw:
            return self.raw[qual]
        if qual in self.active:
            return None
        found = self.analysis.function_for(qual)
        if found is None:
            return None
        fn, cls = found
        self.active.add(qual)
        try:
            self.raw[qual] = self._summarize(fn, cls)
        finally:
            self.active.discard(qual)
        return self.raw[qual]

    def _summarize(self, fn: cst.FunctionDef, cls: str | None):  # type: ignore[no-untyped-def]
        params = tuple(p.name.value for p in params_of(fn))
        bound = (
            cls is not None
            and bool(params)
            and params[0] in ("self", "cls")
            and not any(
                type(d.decorator) is cst.Name and d.decorator.value == "staticmethod"
                for d in fn.decorators
            )
        )
        f_name = "F" if "F" in params else None
        children = child_kinds(self.analysis.ctx, self.analysis.classes[cls]) if cls else {}
        base_events, base_pending, base_kind = self._run(fn, cls, f_name, children, None)
        base_keys = {(r.code, r.what, id(r.node)) for r in base_events}
        per_param: dict[str, tuple[_Raw, ...]] = {}
        pending: dict[str, tuple[Pending, ...]] = {}
        returns: set[str] = set()
        for index, name in enumerate(params):
            if name == f_name or (bound and index == 0):
                continue
            events, pend, kind = self._run(fn, cls, f_name, children, name)
            fresh = tuple(r for r in events if (r.code, r.what, id(r.node)) not in base_keys)
            if fresh:
                per_param[name] = fresh
            if pend:
                pending[name] = tuple(pend)
            if kind in TENSORISH and base_kind not in TENSORISH:
                returns.add(name)
        if base_pending:
            pending[""] = tuple(base_pending)
        return (
            tuple(base_events),
            per_param,
            pending,
            frozenset(returns),
            params,
            bound,
            base_kind,
        )

    def _run(
        self,
        fn: cst.FunctionDef,
        cls: str | None,
        f_name: str | None,
        children: dict[str, Kind],
        tainted: str | None,
    ) -> tuple[list[_Raw], list[Pending], Kind]:
        events: list[_Raw] = []
        pending: list[Pending] = []

        def emit(event: Event) -> None:
            events.append(_Raw(event.code, event.what, event.node))

        def on_helper(call: HelperCall, interp: Interpreter) -> Kind | None:
            summary = self.get(call.callee)
            if summary is None:
                return None
            always, per_param, inner_pending, returns, params, bound, kind = summary
            if not interp.hooks.silent:
                keep = _relax(interp.hooks.fallback)
                if _namespace_elsewhere(self.analysis.ctx, call.node, params, bound, f_name):
                    always = tuple(r for r in always if not _through_namespace(r.node))
                events.extend(filter(keep, always))
                for key in call.keys:
                    param = _param_for(params, bound, key)
                    if param is not None:
                        events.extend(filter(keep, per_param.get(param, ())))
                        pending.extend(inner_pending.get(param, ()))
                pending.extend(inner_pending.get("", ()))
            return _returned(call.keys, params, bound, returns, kind)

        hooks = HybridHooks(
            self.analysis,
            emit,
            f_name=f_name,
            mxnet=self.mxnet,
            children=children,
            cls=cls,
            on_helper=on_helper,
        )
        env: Env = {q.name.value: Kind.UNKNOWN for q in params_of(fn) if q.name.value != f_name}
        if tainted is not None:
            uses = name_uses(fn, f_name)
            positional = [
                q.name.value for q in params_of(fn) if q.name.value not in (f_name, "self", "cls")
            ]
            first = bool(positional) and positional[0] == tainted
            env[tainted] = Kind.MAYBE_GROUP if may_be_list(tainted, uses, first) else Kind.TENSOR
        interp = Interpreter(hooks, env)
        interp.block(fn.body)
        for _call, callee, keys, _relaxed in hooks.pending_calls:
            pending.extend(Pending(callee, key) for key in keys)
            pending.append(Pending(callee, ""))
        return events, pending, interp.returns or Kind.NONE


def _broadcast_event(ctx: FileContext, found: Mismatch, f_name: str) -> Event | None:
    """MXL115 for an elementwise operator whose operands' shapes provably differ, with the
    `broadcast_*` call that computes what NDArray computes; None where MXNet was seen to
    broadcast in both modes (or not at all)."""
    observed = api().broadcasts.get(found.operator, {})
    if not observed.get("ndarray") or observed.get("symbol"):
        return None
    left, right = (ctx.code(side) for side in found.operands)
    fixed = f"{f_name}.{found.twin}({left}, {right})"
    why = found.right.how or found.left.how
    message = implicit_broadcast.broadcast_message(
        shortened(ctx.code(found.node), 40),
        shortened(left, 30),
        shortened(right, 30),
        why,
        found.operator,
        shortened(fixed, 60),
    )
    return Event(
        "MXL115",
        found.node,
        message,
        "combines tensors of different shapes",
        ("safe", f"Use `{f_name}.{found.twin}`", found.node, fixed),
    )


def _refuses_hybridize(fn: cst.FunctionDef | None) -> bool:
    """An override of `hybridize()` that never reaches MXNet's (no `.hybridize(` call in it):
    a block that raises there (a test double) or ignores it runs imperatively always."""
    if fn is None:
        return False
    return not any(
        type(node) is cst.Call
        and type(node.func) is cst.Attribute
        and node.func.attr.value == "hybridize"
        for node in iter_nodes(fn.body)
    )


def _drives_hybridized_children(methods: dict[str, cst.FunctionDef]) -> bool:
    """A block whose own code hybridizes a child it keeps (`self._updater.hybridize()`, as
    gluon-nlp's beam search sampler does around its Python loop): its author chose which
    parts run as graphs, and the loop that calls them runs imperatively by design."""
    for fn in methods.values():
        for node in iter_nodes(fn.body):
            if (
                type(node) is cst.Call
                and type(node.func) is cst.Attribute
                and node.func.attr.value == "hybridize"
                and type(node.func.value) is cst.Attribute
                and type(node.func.value.value) is cst.Name
                and node.func.value.value.value == "self"
            ):
                return True
    return False


def _relax(fallback: bool):  # type: ignore[no-untyped-def]
    """A filter of breaks: in a None fallback, shape reads are the documented way."""
    return lambda raw: not (fallback and raw.code == "MXL103")


#: What `F` is in a hybridized method: the namespace of the mode it runs in.
_MODE_NAMESPACES = frozenset({"mxnet.nd", "mxnet.ndarray", "mxnet.sym", "mxnet.symbol"})


def _namespace_elsewhere(
    ctx: FileContext,
    call: cst.Call,
    params: tuple[str, ...],
    bound: bool,
    caller_f: str | None,
) -> bool:
    """The helper's `F` parameter is given something other than the mode's namespace (the
    caller's own `F`, `mx.nd`, `mx.sym`): a module the caller chose (`mx.nd.contrib`), whose
    members are not `F`'s. An absent argument says nothing."""
    if "F" not in params:
        return False
    slots = ("F", params.index("F"))
    given = None
    for arg in call.args:
        if arg.star:
            return False
        if argument_slot(call, arg, 1 if bound else 0) in slots:
            given = arg.value
    if given is None:
        return False
    if caller_f is not None and type(given) is cst.Name and given.value == caller_f:
        return False
    return ctx.resolve(given) not in _MODE_NAMESPACES


def _through_namespace(node: cst.CSTNode) -> bool:
    """A finding on `F.<name>(...)` or `F.<name>`: about what the namespace holds."""
    if type(node) is cst.Call:
        node = node.func
    root = node
    while type(root) is cst.Attribute:
        root = root.value
    return root is not node and type(root) is cst.Name and root.value == "F"


def _param_for(params: tuple[str, ...], bound: bool, key: str) -> str | None:
    if key.isdigit():
        index = int(key) + (1 if bound else 0)
        return params[index] if index < len(params) else None
    return key if key in params else None


def _returned(
    keys: tuple[str, ...], params: tuple[str, ...], bound: bool, returns: frozenset[str], kind: Kind
) -> Kind:
    if kind in TENSORISH:
        return kind
    for key in keys:
        if _param_for(params, bound, key) in returns:
            return Kind.TENSOR
    return Kind.UNKNOWN if kind is not Kind.PYTHON else Kind.PYTHON


class HybridAnalysis(Checker):
    """Graph breaks in `hybrid_forward` (MXNet 1.x) and HybridBlock `forward` (MXNet 2);
    the rule module subclasses it with its rules."""

    name = NAME
    cross_file = True

    def end(self) -> None:
        ctx = self.ctx
        analysis = FileAnalysis(ctx)
        summarizer = _Summarizer(analysis, ctx.mxnet_line)
        rules = {r.code: r for r in type(self).rules}
        sites: list[tuple[cst.Call, str, tuple[str, ...], str, str, str, str, bool]] = []
        immediate: list[tuple[cst.Call, str, tuple[str, ...], str, str, str, str, bool]] = []
        elsewhere: set[cst.Call] = set()
        for cls_name, methods in analysis.methods.items():
            target = self._target(methods)
            if target is None:
                continue
            fn, first_tensor, f_name, requirement = target
            qual = ctx.qualname(cls_name)
            symbol = f"{cls_name}.{fn.name.value}"
            data = {"class": qual, "method": fn.name.value, "file": ctx.path}
            requires = (requirement, qual)

            def emit(
                event: Event,
                data: dict[str, str] = data,
                symbol: str = symbol,
                requires: tuple[str, str] = requires,
            ) -> None:
                rule = rules.get(event.code)
                if rule is None:
                    return
                fix = None
                if event.fix is not None:
                    applicability, message, node, text = event.fix
                    fix = FixSpec(applicability, message, (NodeEdit(node, text),))  # type: ignore[arg-type]
                ctx.report(
                    event.node,
                    rule,
                    event.message,
                    fix=fix,
                    symbol=symbol,
                    data=dict(data),
                    requires=requires,
                )

            def on_helper(
                call: HelperCall,
                interp: Interpreter,
                symbol: str = symbol,
                qual: str = qual,
                requirement: str = requirement,
                method: str = fn.name.value,
                caller_f: str | None = f_name,
            ) -> Kind | None:
                summary = summarizer.get(call.callee)
                if summary is None:
                    return None
                if not interp.hooks.silent:
                    entry = (
                        call.node,
                        call.callee,
                        call.keys,
                        qual,
                        method,
                        requirement,
                        symbol,
                        interp.hooks.fallback,
                    )
                    has_pending = any(
                        summary[2].get(p)
                        for p in [
                            *(
                                filter(
                                    None, (_param_for(summary[4], summary[5], k) for k in call.keys)
                                )
                            ),
                            "",
                        ]
                    )
                    (sites if has_pending else immediate).append(entry)
                    if _namespace_elsewhere(ctx, call.node, summary[4], summary[5], caller_f):
                        elsewhere.add(call.node)
                always, _pp, _pend, returns, params, bound, kind = summary
                return _returned(call.keys, params, bound, returns, kind)

            hooks = HybridHooks(
                analysis,
                emit,
                f_name=f_name,
                mxnet=ctx.mxnet_line,
                children=child_kinds(ctx, analysis.classes[cls_name]),
                cls=cls_name,
                on_helper=on_helper,
            )
            hooks.forward_fn = fn
            interp = Interpreter(hooks, param_env(fn, first_tensor, f_name))
            interp.block(fn.body)
            if ctx.mxnet_line == "1" and f_name is not None:
                for found in mismatches(ctx, fn, f_name):
                    event = _broadcast_event(ctx, found, f_name)
                    if event is not None:
                        emit(event)
            for call, callee, keys, relaxed in hooks.pending_calls:
                sites.append(
                    (call, callee, keys, qual, fn.name.value, requirement, symbol, relaxed)
                )
        self._report_immediate(immediate, summarizer, rules, elsewhere)
        self._store_facts(summarizer, sites)

    def _target(
        self, methods: dict[str, cst.FunctionDef]
    ) -> tuple[cst.FunctionDef, int, str | None, str] | None:
        if _refuses_hybridize(methods.get("hybridize")):
            return None  # hybridize() is overridden to raise or to do nothing: never hybridized
        if _drives_hybridized_children(methods):
            return None  # it hybridizes parts of itself: a driver that runs imperatively
        fn = methods.get("hybrid_forward")
        if fn is not None:
            params = params_of(fn)
            if len(params) >= 2:
                return fn, 2, params[1].name.value, "hybridized-or-unknown"
            return None
        fn = methods.get("forward")
        if fn is not None and self.ctx.mxnet_line == "2" and params_of(fn):
            return fn, 1, None, "hybridized"
        return None

    def _report_immediate(
        self,
        immediate,
        summarizer: _Summarizer,  # type: ignore[no-untyped-def]
        rules: dict[str, type[Rule]],
        elsewhere: set[cst.Call],
    ) -> None:
        """`elsewhere`: calls that give the helper's `F` another module than the mode's
        namespace (`_namespace_elsewhere`); what the helper calls through `F` is not checked."""
        ctx = self.ctx
        if not immediate:
            return
        pending_nodes: list[cst.CSTNode] = []
        expanded = []
        for call, callee, keys, qual, method, requirement, symbol, relaxed in immediate:
            summary = summarizer.get(callee)
            always, per_param, _pend, _ret, params, bound, _kind = summary
            raws = [
                r
                for r in always
                if _relax(relaxed)(r) and not (call in elsewhere and _through_namespace(r.node))
            ]
            for key in keys:
                param = _param_for(params, bound, key)
                if param is not None:
                    raws.extend(filter(_relax(relaxed), per_param.get(param, ())))
            expanded.append((call, callee, qual, method, requirement, symbol, raws))
            pending_nodes.extend(r.node for r in raws)
        ranges = node_ranges(ctx.module, pending_nodes, ctx.source)
        name = PurePath(ctx.path).name
        for call, callee, qual, method, requirement, symbol, raws in expanded:
            seen: set[str] = set()
            for raw in raws:
                if raw.code in seen or raw.code not in rules:
                    continue
                seen.add(raw.code)
                line = ranges[raw.node][0][0] if raw.node in ranges else 0
                ctx.report(
                    call,
                    rules[raw.code],
                    site_message(callee, raw.what, f"{name}:{line}", raw.code),
                    symbol=symbol,
                    data={"class": qual, "method": method, "file": ctx.path, "helper": callee},
                    requires=(requirement, qual),
                )

    def _store_facts(self, summarizer: _Summarizer, sites) -> None:  # type: ignore[no-untyped-def]
        """Sites into helpers of other files, the summaries this file computed anyway, and the
        names of the functions it defines: `finalize` summarises one of those (re-reading this
        file) only if a site of the run reaches it, so a file nobody calls into costs nothing."""
        ctx = self.ctx
        analysis = summarizer.analysis
        nodes: list[cst.CSTNode] = [s[0] for s in sites]
        ranges = node_ranges(ctx.module, nodes, ctx.source) if nodes else {}
        out_sites: list[Site] = []
        for call, callee, keys, qual, method, requirement, symbol, relaxed in sites:
            if call not in ranges:
                continue
            (sl, sc), (el, ec) = ranges[call]
            out_sites.append(
                Site(
                    ctx.path,
                    qual,
                    method,
                    requirement,
                    (sl, sc + 1, el, ec + 1),
                    callee,
                    keys,
                    symbol,
                    relaxed,
                )
            )
        summaries = summaries_of(ctx, summarizer, list(summarizer.raw))
        defined = [ctx.qualname(name) for name in analysis.functions]
        for cls, methods in analysis.methods.items():
            defined.extend(
                ctx.qualname(f"{cls}.{m}")
                for m in methods
                if m not in ("__init__", "hybrid_forward", "forward")
            )
        if summaries or out_sites or defined:
            ctx.facts.checker_facts[NAME] = {
                "summaries": summaries,
                "sites": out_sites,
                "defined": defined,
            }

    @classmethod
    def finalize(cls, project: ProjectIndex) -> list[Finding]:
        sites: list[Site] = []
        summaries = LazySummaries(project)
        for file in project.files:
            facts = file.checker_facts.get(NAME)
            if facts is None:
                continue
            summaries.add(file, facts["summaries"], facts["defined"])
            sites.extend(facts["sites"])
        rules = {r.code: r for r in cls.rules}
        findings: list[Finding] = []
        for site in sites:
            if not project.satisfies((site.requirement, site.cls), near=site.path):
                continue
            breaks = expand(
                site.callee,
                site.keys,
                summaries,
                frozenset(),
                lambda name: _inherited(name, project, summaries),
            )
            seen: set[str] = set()
            for brk in breaks:
                if (
                    brk.code in seen
                    or brk.code not in rules
                    or (site.relaxed and brk.code == "MXL103")
                ):
                    continue
                seen.add(brk.code)
                sl, sc, el, ec = site.span
                findings.append(
                    Finding(
                        brk.code,
                        site_message(
                            site.callee, brk.what, f"{PurePath(brk.file).name}:{brk.line}", brk.code
                        ),
                        site.path,
                        Location(sl, sc),
                        Location(el, ec),
                        symbol=site.symbol,
                        data={
                            "class": site.cls,
                            "method": site.method,
                            "file": site.path,
                            "helper": site.callee,
                        },
                    )
                )
        return findings


def summaries_of(ctx: FileContext, summarizer: _Summarizer, quals: list[str]) -> dict[str, Summary]:
    """Summaries with their breaks located (file, line), ready to cross files."""
    raws = {q: summarizer.get(q) for q in quals}
    nodes: list[cst.CSTNode] = []
    for raw in raws.values():
        if raw is None:
            continue
        always, per_param, *_ = raw
        nodes.extend(r.node for r in always)
        for found in per_param.values():
            nodes.extend(r.node for r in found)
    ranges = node_ranges(ctx.module, nodes, ctx.source) if nodes else {}

    def brk(raw: _Raw) -> Break:
        line = ranges[raw.node][0][0] if raw.node in ranges else 0
        return Break(raw.code, raw.what, ctx.path, line)

    out: dict[str, Summary] = {}
    for qual, raw in raws.items():
        if raw is None:
            continue
        always, per_param, pending, returns, params, bound, _kind = raw
        out[qual] = Summary(
            qual.rsplit(".", 1)[-1],
            params,
            bound,
            tuple(brk(r) for r in always),
            {p: tuple(brk(r) for r in found) for p, found in per_param.items()},
            dict(pending),
            returns,
        )
    return out


class LazySummaries(Mapping[str, Summary]):
    """Every helper of the run by qualified name; a helper no file summarised during the run
    is summarised on first lookup, from its file parsed again."""

    def __init__(self, project: ProjectIndex) -> None:
        self.project = project
        self.known: dict[str, Summary] = {}
        self.where: dict[str, FileFacts] = {}
        self._summarizers: dict[str, _Summarizer | None] = {}
        self._names: ProjectNames | None = None

    def add(self, file: FileFacts, summaries: dict[str, Summary], defined: list[str]) -> None:
        self.known.update(summaries)
        for qual in defined:
            self.where.setdefault(qual, file)
        self._names = None

    def resolve(self, name: str) -> str | None:
        """The helper a (possibly re-exported) name refers to."""
        if self._names is None:
            self._names = ProjectNames(self)
        return self._names.resolve(name)

    def find(self, name: str) -> Summary | None:
        qual = self.resolve(name)
        if qual is None:
            # Perhaps in a file of the run not parsed for mentioning nothing of MXNet.
            skimmed = self.project.skimmed_file(name)
            if skimmed is None:
                return None
            qual = name
            self.where.setdefault(qual, skimmed)
        return self[qual]

    def __getitem__(self, qual: str) -> Summary:
        if qual in self.known:
            return self.known[qual]
        file = self.where.get(qual)
        if file is None:
            raise KeyError(qual)
        summarizer = self._summarizer(file)
        found = summaries_of(summarizer.analysis.ctx, summarizer, [qual]) if summarizer else {}
        summary = found.get(qual) or Summary(qual.rsplit(".", 1)[-1], (), False)
        self.known[qual] = summary
        return summary

    def _summarizer(self, file: FileFacts) -> _Summarizer | None:
        if file.path not in self._summarizers:
            ctx = self.project.context(file)
            self._summarizers[file.path] = (
                _Summarizer(FileAnalysis(ctx), ctx.mxnet_line) if ctx is not None else None
            )
        return self._summarizers[file.path]

    def __contains__(self, qual: object) -> bool:
        return qual in self.known or qual in self.where

    def __iter__(self) -> Iterator[str]:
        yield from self.known
        yield from (q for q in self.where if q not in self.known)

    def __len__(self) -> int:
        return len(self.known.keys() | self.where.keys())


def _inherited(name: str, project: ProjectIndex, summaries: LazySummaries) -> str | None:
    """`self@pkg.mod.Net.helper`: the summary of `helper` in the nearest base class."""
    cls, _, method = name[len(INHERITED) :].rpartition(".")
    todo, seen = [cls], set()
    while todo:
        current = project._lookup(todo.pop(0))
        if current is None or current in seen:
            continue
        seen.add(current)
        if current != cls and summaries.find(f"{current}.{method}") is not None:
            return f"{current}.{method}"
        todo.extend(project.classes.get(current, ()))
    return None


def expand(
    callee: str,
    keys: tuple[str, ...],
    summaries: LazySummaries,
    active: frozenset[str],
    inherited: Callable[[str], str | None] = lambda name: None,
) -> list[Break]:
    """Every break a call reaches with tensors at `keys`, through helpers of any file."""
    if callee.startswith(INHERITED):
        found = inherited(callee)
        if found is None:
            return []
        callee = found
    summary = summaries.find(callee)
    if summary is None or callee in active:
        return []
    out = list(summary.always)
    params = [""]
    for key in keys:
        param = summary.param_for(key)
        if param is not None:
            out.extend(summary.per_param.get(param, ()))
            params.append(param)
    inner: dict[str, list[str]] = {}
    for param in params:
        for pend in summary.pending.get(param, ()):
            inner.setdefault(pend.callee, [])
            if pend.key:
                inner[pend.callee].append(pend.key)
    for name, inner_keys in inner.items():
        out.extend(
            expand(name, tuple(dict.fromkeys(inner_keys)), summaries, active | {callee}, inherited)
        )
    return out


def site_message(callee: str, what: str, where: str, code: str) -> str:
    short = callee.rsplit(".", 1)[-1]
    return (
        f"`{short}()` {what} ({where}), "
        f"{_SITE_EFFECT.get(code, 'a graph break once this block is hybridized')}; "
        f"{_SITE_ADVICE.get(code, 'rewrite it with F.*')}"
    )
