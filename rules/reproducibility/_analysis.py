"""What the reproducibility rules share: the facts of each file (seeds, draws, entry scripts), kept
and cached per file, and the walk that collects them in execution order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

import libcst as cst

from mxlint import knowledge
from mxlint.flow import (
    Flow,
    Frame,
    Site,
    bound_argument,
    flows_to_return,
    function_params,
    is_main_guard,
    single_assignment,
)
from mxlint.names import ProjectNames, assignment_targets, dotted_name, last_name, name_tokens
from mxlint.rule import Finding, Fix, Location, Rule
from mxlint.text_search import search_at_word_start
from mxlint.walker import CALLS, NESTED_SCOPES, children, encloses, iter_nodes, locate, typed_nodes

if TYPE_CHECKING:
    from mxlint.checker import FileContext
    from mxlint.rules.reproducibility.checker import ReproducibilityChecker


ALL_KINDS = ("numpy", "python", "mxnet")
#: A file that mentions none of these has nothing to tell about seeding or randomness.
#: `initialize` too: a builder that initializes a network draws its weights from MXNet's
#: generator (at once, or at its first forward pass), which a later seed comes too late for.
_RELEVANT = re.compile(
    r"random|seed|shuffle|Sampler|SentenceIter|Augmenter|Aug\b|Iter\b|\binitialize\b"
)
#: `_RELEVANT` in parts a whole file's text is searched for quickly (see `text_search`).
_RELEVANT_WORDS = ("random", "seed", "shuffle", "Sampler", "SentenceIter", "Augmenter")
_RELEVANT_ENDINGS = re.compile(r"Aug\b|Iter\b")
_INITIALIZE = re.compile(r"initialize\b")


def relevant_text(source: str) -> bool:
    """`_RELEVANT.search(source)`, at `str.find` speed: the pattern's `\binitialize` branch
    leaves `re` no first character to look for, so it tried every position of the file."""
    return (
        any(word in source for word in _RELEVANT_WORDS)
        or _RELEVANT_ENDINGS.search(source) is not None
        or search_at_word_start(_INITIALIZE, source)
    )


#: Names whose use in code means a script trains: the recorder, a backward pass, a Trainer, a
#: fit. Scripts without them (benchmarks, demos, converters) do not need raw draws seeded.
_TRAINING_NAMES = frozenset({"autograd", "backward", "forward_backward", "Trainer", "fit"})
#: The nodes `trains_in_code` reads.
_TRAINING_SIGNS = frozenset({cst.Name, cst.Call, cst.FunctionDef})
#: A function, called or defined, whose name says it trains (`train()`, `train_epoch()`); a
#: word in a string (`"train"`) or a data name (`train_data`, `trainer_spec`) is not one.
_TRAINING_CALL = re.compile(r"^(?:train(?:_\w+)?|\w+_train)$")
#: A path part naming a benchmark or a profiling run: what it draws feeds timings, not results.
_TIMING_PATH = re.compile(r"(?:^|[_.\-])(?:bench\w*|profil\w*)(?:$|[_.\-])", re.I)
#: Code that trains here: a backward pass, a Trainer, or a Module fit on training data.
_TRAINS = re.compile(r"\.backward\(|\bTrainer\(|\.fit\(\s*train")
#: Text each branch of `_TRAINS` needs: most files have none, and `in` finds that fast.
_TRAINS_TEXT = (".backward(", "Trainer(", ".fit(")
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
    #: A seed drawn anew on every run in its own call (`mx.random.seed(random.getrandbits(32))`,
    #: `seed(int(time.time()))`): the script asks for different runs on purpose.
    fresh: bool = False
    #: A loader whose `shuffle=` is a parameter of the summarised function (bound by callers).
    cond: str | None = None
    target: str = ""
    #: The helper call that brought it here (`build_mlp`), when it was drawn inside one.
    via: str = ""
    #: Drawn by an object of a project class this line builds (its `__init__`, or later in
    #: its `__getitem__`/`__call__`): reported only when the script has no other such draw.
    built: bool = False
    args: tuple[bool | None, ...] = ()
    kwargs: tuple[tuple[str, bool | None], ...] = ()


_ITEM_FIELDS = frozenset(f.name for f in fields(Item))


@dataclass(frozen=True)
class Summary:
    """What calling a function draws and seeds, in terms of its parameters."""

    params: tuple[tuple[str, bool | None], ...]
    items: tuple[Item, ...]
    #: The file that defines the function (a function that seeds is checked on its own).
    path: str = ""
    #: A class: what constructing it runs (`__init__`, then the methods the framework calls).
    constructs: bool = False


@dataclass(frozen=True)
class EntryFacts:
    """An entry point's draws and seeds, kept for the project-wide check."""

    path: str
    items: tuple[Item, ...]
    fixes: tuple[tuple[str, Fix | None], ...]
    training: bool
    #: The module's name, and whether only its `__main__` block makes it an entry point (a
    #: module other files import is then a library whose main block is a smoke test).
    module: str = ""
    guessed: bool = False
    #: The file itself trains (a backward pass, a Trainer, `mod.fit(train_iter)`).
    trains: bool = False
    #: How findings name what should have seeded.
    scope: str = "this entry script"
    #: The script itself names MXNet (a PyTorch script reading a project dataset does not:
    #: the draws of the project classes it builds are not an MXNet program's).
    mxnet: bool = True


#: Prefix of an item's `cond` for a call under `if <parameter>:` (dropped only where the
#: parameter is known to be false; a plain `cond` needs it known to be true).
GUARDED = "?"


def guard_holds(cond: str, bindings: Mapping[str, bool | None]) -> bool:
    """Whether an item with condition `cond` runs for a call binding `bindings`."""
    if cond.startswith(GUARDED):
        return bindings.get(cond[len(GUARDED) :]) is not False
    return bool(bindings.get(cond))


def _truth_parameter(test: cst.BaseExpression, params: frozenset[str]) -> str | None:
    """`flag` or `flag is not None` where `flag` (a name, or `self.flag`) is one of `params`."""
    if type(test) is cst.Comparison and (
        len(test.comparisons) == 1
        and type(test.comparisons[0].operator) is cst.IsNot
        and type(test.comparisons[0].comparator) is cst.Name
        and test.comparisons[0].comparator.value == "None"
    ):
        test = test.left
    spelled = dotted_name(test) if type(test) in (cst.Name, cst.Attribute) else None
    return spelled if spelled in params else None


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


#: Namespaces whose calls make Symbols.
_SYMBOLIC = ("mxnet.sym", "mxnet.symbol")


#: Containers whose `initialize()` initializes the layers added to them.
_SEQUENTIAL = frozenset({"mxnet.gluon.nn.Sequential", "mxnet.gluon.nn.HybridSequential"})


class _Collector:
    """Turns traced call sites of one file into items (nodes kept until positions are paid)."""

    def __init__(
        self, checker: ReproducibilityChecker, flow: Flow, evaluation_loaders: bool = False
    ) -> None:
        self.ctx = checker.ctx
        self.flow = flow
        #: MXL305 reports shuffling evaluation loaders that drop their tail: not MXL301 then.
        self.evaluation_loaders = evaluation_loaders
        self.returns: dict[cst.FunctionDef, frozenset[str]] = {}
        #: (function, network) initialised and not yet run: its first forward pass draws.
        self._initialized: set[tuple[int, str]] = set()
        #: Whether the file says "seed" anywhere (asked once, on the first draw).
        self._mentions_seed: bool | None = None
        #: Per function and guard spellings: node -> the parameter an `if` around it tests.
        self._guards: dict[tuple[int, tuple[str, ...]], dict[int, str]] = {}
        self._kept: dict[tuple[str, frozenset[str]], dict[str, str | None]] = {}

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
            guard = self._guard(site, root_params) if root_params else None
            for item, node in self.classify(site, root_params):
                if guard is not None and item.cond is None and item.op != "seed":
                    # `if shuffle_buffer_length: ...`: not run for callers that leave it false.
                    item = replace(item, cond=GUARDED + guard)
                out.append((item, node))
        return out

    def _guard(self, site: Site, root_params: frozenset[str]) -> str | None:
        """The root's parameter whose truth a call runs under: `if flag:` or `if flag is not
        None:` around it (or around the call that led to it) in the root function, or
        `if self.flag ...` in a method of a class whose `__init__` keeps the parameter as
        `self.flag = flag` (the root of a class's summary is its construction)."""
        frames = site.frames
        for index, frame in enumerate(frames):
            node = frames[index + 1].call if index + 1 < len(frames) else site.call
            names = dict.fromkeys(root_params) if index == 0 else {}
            if frame.cls is not None and frames[0].cls == frame.cls:
                names.update(self._kept_params(frame.cls, root_params))
            if not names:
                continue
            param = self._guards_of(frame.function, names).get(id(node))
            if param is not None:
                return param
        return None

    def _guards_of(self, fn: cst.FunctionDef, names: Mapping[str, str | None]) -> dict[int, str]:
        """Node -> the parameter an `if` of `fn` around it tests (`names`: spelling -> the
        parameter it stands for, None for the parameter itself)."""
        key = (id(fn), tuple(sorted(names)))
        guards = self._guards.get(key)
        if guards is None:
            guards = {}
            for stmt in typed_nodes(fn.body, (cst.If,), NESTED_SCOPES):
                if type(stmt) is not cst.If:
                    continue
                spelled = _truth_parameter(stmt.test, frozenset(names))
                if spelled is not None:
                    param = names[spelled] or spelled
                    for inner in iter_nodes(stmt.body, stop=NESTED_SCOPES):
                        guards.setdefault(id(inner), param)
            self._guards[key] = guards
        return guards

    def _kept_params(self, cls: str, params: frozenset[str]) -> dict[str, str | None]:
        """`self.flag` -> `flag` for the parameters `cls.__init__` keeps as they are (read
        once per class and parameters: every site of a built class's trace asks)."""
        key = (cls, params)
        found = self._kept.get(key)
        if found is not None:
            return found
        init = self.flow.classes.get(cls, {}).get("__init__")
        out: dict[str, str | None] = {}
        self._kept[key] = out
        scope = self.ctx.bindings.scope(init) if init is not None else None
        if init is None or scope is None or scope.parent is None:
            return out
        # The class's `self.<name>` bindings (the semantic model's), those of `__init__`.
        for attr, bindings in scope.parent.attributes.items():
            for binding in bindings:
                node, value = binding.node, binding.value
                if (
                    type(node) is cst.Assign
                    and len(node.targets) == 1
                    and type(value) is cst.Name
                    and value.value in params
                    and encloses(init, node)
                ):
                    out[f"self.{attr}"] = value.value
        return out

    def classify(self, site: Site, root_params: frozenset[str]) -> list[tuple[Item, cst.CSTNode]]:
        call = site.call
        ctx = self.ctx
        name = ctx.resolve(call.func)
        if name is None:
            last = last_name(call.func)
            if "seed" in last.lower() and not self._is_local(site):
                return [(_item(site, op="seed", kinds=ALL_KINDS, what=ctx.code(call.func)), call)]
            first_forward = self._first_forward(site)
            if first_forward is not None:
                return [(_item(site, kinds=("mxnet",), what=first_forward), call)]
            return []
        what = ctx.code(call.func)
        seeded = (
            ("numpy",)
            if name in knowledge.NUMPY_SEEDERS
            else ("python",)
            if name in knowledge.PY_SEEDERS
            else ("mxnet",)
            if name in knowledge.MXNET_SEEDERS
            else ALL_KINDS
            if name in knowledge.ALL_SEEDERS
            else None
        )
        if seeded is not None:
            fresh = _fresh_seed(call, ctx.resolve)
            return [(_item(site, op="seed", kinds=seeded, what=what, fresh=fresh), call)]
        if any(_seeding_decorator(frame.function) for frame in site.frames):
            return []  # `@with_seed()` (MXNet's test suite) seeds every generator per call
        draw = {
            "numpy": knowledge.numpy_random_call(name),
            "python": knowledge.python_random_call(name),
            "mxnet": knowledge.mxnet_random_call(name),
        }
        for kind, hit in draw.items():
            if hit and (_cosmetic(site) or self._unused_by_results(site)):
                return []  # a random colour for a plot: it never reaches a result
            if hit:
                code = {"numpy": "MXL302", "python": "MXL303"}.get(kind, "")
                return [
                    (
                        _item(
                            site,
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
            return self._pipeline(site, _item(site), what, pipeline, root_params)
        augments = (
            ("python", "MXL303")
            if name in knowledge.PY_RANDOM_AUGMENTERS
            else ("numpy", "MXL302")
            if name in knowledge.NUMPY_RANDOM_AUGMENTERS
            else None
        )
        if augments is not None:
            if self._unused_by_results(site):
                return []  # an augmenter whose output only a figure shows
            kind, code = augments
            return [(_item(site, kinds=(kind,), code=code, what=what + "()"), call)]
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
                        (_item(site, kinds=kinds, code=code, what=f"{what}({on[0]}=...)"), call)
                    )
            return found
        top = name.split(".", 1)[0]
        if top not in knowledge.LIBRARY_ROOTS or name in knowledge.ALL_SEEDERS:
            return [
                (
                    _item(
                        site,
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

    def _first_forward(self, site: Site) -> str | None:
        """A network's first forward pass after its `initialize()` in the same function: Gluon
        defers initialization until shapes are known, so this is where MXNet's generator draws
        the initial weights (what the call reads, for the message). `initialize()` itself is
        only remembered here."""
        call = site.call
        func = call.func
        frame = id(site.frames[-1].function) if site.frames else 0
        if type(func) is cst.Attribute and func.attr.value == "initialize":
            receiver = func.value
            if (
                type(receiver) is cst.Call
                and type(receiver.func) is cst.Attribute
                and receiver.func.attr.value == "collect_params"
            ):
                receiver = receiver.func.value
            key = dotted_name(receiver)
            if key is not None and key.split(".", 1)[0] != "self":
                if self._drawn_at_initialize(site, key):
                    return f"{self.ctx.code(call.func)}(...)"
                self._initialized.add((frame, key))
            return None
        if type(func) is cst.Attribute and func.attr.value in ("forward", "summary"):
            func = func.value
        key = dotted_name(func)
        if key is None or (frame, key) not in self._initialized:
            return None
        if any(
            knowledge.in_namespace(self.ctx.resolve(a.value.func), _SYMBOLIC)
            for a in call.args
            if type(a.value) is cst.Call
        ):
            return None  # run on Symbols (to plot the graph): nothing is initialised
        self._initialized.discard((frame, key))
        return f"{self.ctx.code(call.func)}(...)"

    def _drawn_at_initialize(self, site: Site, key: str) -> bool:
        """`net.initialize()` where the one assignment of `net` in the same function (or
        script) builds a layer that MXNet initializes at once, with no shape left to learn
        (`nn.Dense(10, in_units=4)`, `nn.Embedding(...)`): `initialize()` itself draws."""
        if "." in key:
            return False
        where: cst.CSTNode = site.frames[-1].function if site.frames else self.ctx.module
        scope = self.ctx.bindings.scope(where)
        found = scope.bindings(key) if scope is not None else []
        if len(found) != 1 or found[0].kind != "assignment" or type(found[0].value) is not cst.Call:
            return False
        built = found[0].value
        if self._built_at_once(built):
            return True
        if self.ctx.resolve(built.func) not in _SEQUENTIAL:
            return False
        # A container: `initialize()` draws for the layers added to it that need no shape.
        body = where.body if type(where) is cst.FunctionDef else where
        return any(
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and node.func.attr.value == "add"
            and dotted_name(node.func.value) == key
            and any(type(a.value) is cst.Call and self._built_at_once(a.value) for a in node.args)
            for node in iter_nodes(body, stop=NESTED_SCOPES)
        )

    def _built_at_once(self, built: cst.Call) -> bool:
        """`nn.Dense(10, in_units=4)`, `nn.Embedding(...)`: a layer MXNet initializes at once."""
        name = self.ctx.resolve(built.func)
        sizes = knowledge.api().init_at_once.get(name) if name is not None else None
        if sizes is None:
            return False
        return not sizes or any(
            a.keyword is not None
            and a.keyword.value in sizes
            and not (type(a.value) is cst.Integer and a.value.evaluated_value == 0)
            for a in built.args
        )

    def _unused_by_results(self, site: Site) -> bool:
        """A draw bound to a name whose value, and what is computed from it in the same
        function (or script), reaches only plots or nothing: which samples a figure shows
        (`idx = np.random.choice(...)` then `ax.imshow(data[idx])`), sample data never used."""
        small = single_assignment(site.stmt)
        if small is None:
            return False
        target = small.targets[0].target
        if type(target) is not cst.Name:
            return False
        scope: cst.CSTNode = site.frames[-1].function.body if site.frames else self.ctx.module
        return _reaches_only_plots(self.ctx, scope, small, target.value)

    def _seedgen(self, site: Site) -> bool:
        """The draw computes a seed (`seed = random.randint(...)`, `--seed` default)."""
        if type(site.stmt) in (cst.If, cst.For, cst.While, cst.With):
            return False
        if self._mentions_seed is None:  # a statement's code is a part of the source
            self._mentions_seed = bool(_SEEDGEN.search(self.ctx.source))
        return self._mentions_seed and bool(_SEEDGEN.search(self.ctx.code(site.stmt)))

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
        if self.evaluation_loaders and (
            evaluation_subset(self.ctx, call, _assigned_name(site.stmt)) is not None
        ):
            return []  # MXL305 reports this loader: keeping the tail, not seeding, fixes it
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
        # The function holding `stmt` (None: the module's code).
        holder = site.frames[-1].function if site.frames else None
        # A loader built by a helper that returns it is reported where the caller obtains it.
        for depth in range(len(site.frames) - 1, -1, -1):
            if shuffle is not None and self._never_iterated(stmt, holder):
                return []  # it shuffles when iterated, and nothing iterates it
            frame = site.frames[depth]
            if frame.call is None or not flows_to_return(stmt, frame.function, self.returns):
                break
            anchor, stmt = frame.call, frame.stmt  # type: ignore[assignment]
            symbol = _symbol(site.frames[:depth])
            holder = site.frames[depth - 1].function if depth else None
        else:
            # Obtained by the module's code from the outermost helper: judged there too.
            if site.frames and shuffle is not None and self._never_iterated(stmt, holder):
                return []
        return [
            (
                replace(base, kinds=kinds, code="MXL301", what=label, cond=cond, symbol=symbol),
                anchor,
            )
        ]

    def _never_iterated(self, stmt: cst.CSTNode, function: cst.FunctionDef | None) -> bool:
        """A shuffling loader a function binds to a name that nothing in the function reads
        but `len()` (a script that reports the number of batches): never iterated, it never
        shuffles — whether the function builds it (`stmt` builds it) or obtains it from a
        helper of the file that returns it (`stmt` calls the helper). Passed, returned, stored
        or iterated, it may be; so may a name of the module's code, which others can import,
        unless the `__main__` block binds it (then any read in the module counts)."""
        assign = single_assignment(stmt)
        if assign is None or type(assign.targets[0].target) is not cst.Name:
            return False
        scope: cst.CSTNode | None = function
        if scope is None:
            module = self.ctx.module
            if not any(is_main_guard(s) and encloses(s, stmt) for s in module.body):
                return False
            scope = module
        target = assign.targets[0].target
        name = target.value
        counted: set[int] = {id(target)}
        reads: list[cst.Name] = []
        for node in iter_nodes(scope):
            if isinstance(node, cst.Call):
                if type(node.func) is cst.Name and node.func.value == "len":
                    counted.update(id(a.value) for a in node.args if type(a.value) is cst.Name)
            elif isinstance(node, cst.Name):
                if node.value == name:
                    reads.append(node)
            elif isinstance(node, (cst.Global, cst.Nonlocal)):
                return False
        if function is None:  # the module's name: not a function's own of the same spelling
            bindings = self.ctx.bindings
            module_scope = bindings.module
            reads = [n for n in reads if bindings.scope_at(n).lookup(name) is module_scope]
        return all(id(n) in counted for n in reads)

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


_COSMETIC = re.compile(r"colou?r|cmap|palette", re.IGNORECASE)


#: Calls that only draw: matplotlib's functions and the methods of its figures and axes.
_PLOTTING = frozenset(
    {
        "imshow",
        "plot",
        "scatter",
        "bar",
        "hist",
        "text",
        "annotate",
        "set_title",
        "set_xlabel",
        "set_ylabel",
        "set_xticks",
        "set_yticks",
        "get_xaxis",
        "get_yaxis",
        "set_ticks",
        "axis",
        "add_patch",
        "legend",
        "figure",
        "subplot",
        "subplots",
        "show",
        "savefig",
        "title",
        "xlabel",
        "ylabel",
        "tight_layout",
        "colorbar",
        "grid",
    }
)


def _reaches_only_plots(ctx: Any, scope: cst.CSTNode, binding: cst.Assign, name: str) -> bool:
    """Whether `name` (bound by `binding`), and the names computed from it, are used only as
    arguments of plotting calls, or not at all, after the binding in `scope` (its own
    statements, in order): every use is accounted for by a plot, a loop over it, or an
    assignment to plain names that are then judged the same way; a name bound again from
    something else is no longer the draw."""
    live: set[str] = set()
    accounted: set[int] = set()
    started = False
    found = locate(scope)
    #: Blocks open at the current node (pre-order index just past each), and where a name is
    #: bound again from something else: (from, to) indexes of the rest of that block.
    blocks: list[int] = []
    rebound: dict[str, list[tuple[int, int]]] = {}
    for node in iter_nodes(scope, stop=NESTED_SCOPES):
        position = found[0].index_of(node) if found is not None else None
        here = position if position is not None else -1
        while blocks and here >= blocks[-1]:
            blocks.pop()
        if found is not None and type(node) is cst.IndentedBlock:
            blocks.append(found[0].end[here])
        if node is binding:
            started = True
            live.add(name)
            accounted.update(id(n) for n in iter_nodes(node))
            continue
        if not started:
            continue
        # The names that still hold the draw here (not bound again earlier in this block).
        holding = (
            {n for n in live if not any(a < here < b for a, b in rebound.get(n, ()))}
            if rebound
            else live
        )
        targets: list[cst.BaseExpression] = []
        source: cst.CSTNode | None = None
        if type(node) is cst.Assign:
            targets, source = [t.target for t in node.targets], node.value
        elif type(node) is cst.For:
            targets, source = [node.target], node.iter
            if _enumerates(node) and type(node.target) is cst.Tuple and node.target.elements:
                # `for i, x in enumerate(draws)`: the counter `i` is not the draw.
                counter = node.target.elements[0].value
                accounted.update(id(n) for n in iter_nodes(counter))
                targets = [e.value for e in node.target.elements[1:]]
        if source is not None:
            names = [n for t in targets for n in iter_nodes(t) if type(n) is cst.Name]
            plain = all(
                type(n) in (cst.Name, cst.Tuple, cst.List, cst.Element, cst.StarredElement)
                for t in targets
                for n in iter_nodes(t)
            )
            if _mentions(source, holding):
                buffers = _filled_buffers(targets, holding) if not plain else None
                if (not plain and buffers is None) or not _derivation(
                    source, holding, ctx.resolve, lambda call: _block_call(ctx, call)
                ):
                    return False  # `arr[idx] = ...`, `x = load(idx)`: the draw shapes data
                if buffers is not None:
                    # `canvas[r:r + 28, c:c + 28] = img`: the array filled is the draw's now.
                    live.update(buffers)
                    accounted.update(id(n) for t in targets for n in iter_nodes(t))
                    accounted.update(id(n) for n in iter_nodes(source))
                    continue
                live.update(n.value for n in names)
                accounted.update(id(n) for n in iter_nodes(source))
            elif type(node) is cst.For:
                # A loop variable bound again over something else (`for j in range(n)` in a
                # later cell); an assignment may sit in one branch only, so it kills nothing.
                live.difference_update(n.value for n in names)
            elif found is not None:
                # Bound again from something else: for the rest of its block, not the draw.
                end = blocks[-1] if blocks else found[0].end[found[1]]
                for n in names:
                    rebound.setdefault(n.value, []).append((here, end))
            accounted.update(id(n) for n in names)
        elif type(node) is cst.Call:
            func = node.func
            leaf = func.attr.value if type(func) is cst.Attribute else last_name(func)
            resolved = ctx.resolve(func) or ""
            if leaf in _PLOTTING or resolved.startswith("matplotlib"):
                accounted.update(id(n) for n in iter_nodes(node))
            elif type(func) is cst.Name and func.value == "print":
                accounted.update(_shown_indices(node, holding))
                accounted.update(_shown_shapes(node, holding))
        elif type(node) is cst.Name and node.value in holding and id(node) not in accounted:
            return False
    if not started:
        return False
    # A function or class defined in the scope may read the draw when it runs (a module-level
    # array a `main()` trains on): then it is not the plots' alone.
    seen = live | {name}
    for nested in iter_nodes(scope):
        if nested is scope or type(nested) is not cst.FunctionDef:
            continue
        bound = ctx.bindings.scope(nested)
        local = {n for n in bound.names if bound.local(n)} if bound is not None else set()
        if any(
            type(n) is cst.Name and n.value in seen and n.value not in local
            for n in iter_nodes(nested.body)
        ):
            return False
    return True


#: Calls that only format a value for display.
_FORMATTING = frozenset({"format", "str", "repr", "int", "float", "round", "tolist", "item"})


def _shown_indices(call: cst.Call, live: set[str]) -> set[int]:
    """Names of `live` that a `print(...)` uses only to pick which element it shows
    (`label.asnumpy()[idx]`): not when the element picked is computed on (`net(x[idx])`)."""
    out: set[int] = set()
    pending: list[tuple[cst.CSTNode, bool, bool]] = [(arg, False, False) for arg in call.args]
    while pending:
        node, computing, index = pending.pop()
        if type(node) is cst.Name and node.value in live and index and not computing:
            out.add(id(node))
            continue
        if type(node) is cst.Call:
            leaf = last_name(node.func)
            inner = computing or leaf not in _FORMATTING
            pending.append((node.func, computing, index))
            pending.extend((arg, inner, index) for arg in node.args)
            continue
        if type(node) is cst.Subscript:
            pending.append((node.value, computing, index))
            pending.extend((el, computing, True) for el in node.slice)
            continue
        pending.extend((child, computing, index) for child in children(node))
    return out


_DERIVING = frozenset({"enumerate", "zip", "range", "len", "int", "float", "list", "sorted"})


def _derivation(
    source: cst.CSTNode,
    live: set[str],
    resolve: Callable[[cst.BaseExpression], str | None],
    forward: Callable[[cst.Call], bool] = lambda call: False,
) -> bool:
    """An expression that only rearranges the draw (`idx[0]`, `n * 2`, `enumerate(idx)`),
    applies it (an augmenter called on an image, a network's forward pass: `forward` tells
    which calls are) or converts an array computed from it (`mx.nd.Cast(out, dtype="uint8")`,
    `out.asnumpy()`): no call into code that may do something with it (write it, train on it),
    no indexing of other data with it."""
    for n in iter_nodes(source):
        if (
            type(n) is cst.Call
            and _mentions(n, live)
            and not _deriving_call(n, live, resolve)
            and not _array_method(n, live)
            and not forward(n)
        ):
            return False
        if type(n) is cst.Subscript and not _mentions(n.value, live):
            return False
    return True


def _deriving_call(
    call: cst.Call, live: set[str], resolve: Callable[[cst.BaseExpression], str | None]
) -> bool:
    func = call.func
    if type(func) is cst.Name and (func.value in _DERIVING or func.value in live):
        return True
    name = resolve(func) or ""
    if not name.startswith(_ARRAY_MODULES):
        return False
    leaf = name.rsplit(".", 1)[-1].lower()
    return not any(word in leaf for word in _STORING)


#: Methods of NDArrays and NumPy arrays that compute an array from the array (a copy on
#: another device, a NumPy copy, a new shape or type): never a write, a gradient or a step.
_ARRAY_METHODS = frozenset(
    {
        "as_in_context",
        "as_in_ctx",
        "asnumpy",
        "astype",
        "reshape",
        "transpose",
        "flatten",
        "squeeze",
        "expand_dims",
        "clip",
        "copy",
        "swapaxes",
    }
)


def _array_method(call: cst.Call, live: set[str]) -> bool:
    """`draw.asnumpy()`, `out.reshape(28, 28)`: a method of `_ARRAY_METHODS` called on an
    expression computed from the draw, with arguments that do not mention it."""
    func = call.func
    return (
        type(func) is cst.Attribute
        and func.attr.value in _ARRAY_METHODS
        and not any(_mentions(a.value, live) for a in call.args)
    )


def _filled_buffers(targets: list[cst.BaseExpression], live: set[str]) -> set[str] | None:
    """The arrays that an assignment to slices of them fills (`canvas[a:b, c:d] = ...`), when
    every target is such a slice of a plain name and the slices do not depend on the draw;
    None otherwise."""
    out: set[str] = set()
    for target in targets:
        if type(target) is not cst.Subscript or type(target.value) is not cst.Name:
            return None
        if any(_mentions(e, live) for e in target.slice):
            return None
        out.add(target.value.value)
    return out or None


def _block_call(ctx: Any, call: cst.Call) -> bool:
    """A Gluon block called on its input (a forward pass), as far as the file shows: the
    callee is a name bound, everywhere in its scope, to a block built by a Gluon constructor or
    by a class of this file that derives from one, or an attribute of such a name (a child
    block, `net.decoder`), not a method that writes or loads (`net.save_parameters`)."""
    func = call.func
    if type(func) is cst.Attribute and any(
        word in func.attr.value.lower() for word in (*_STORING, "export")
    ):
        return False
    while type(func) is cst.Attribute:
        func = func.value
    if type(func) is not cst.Name:
        return False
    scope = ctx.bindings.scope_at(call).lookup(func.value)
    bindings = scope.bindings(func.value) if scope is not None else []
    if not bindings:
        return False
    for binding in bindings:
        value = binding.value
        if binding.kind != "assignment" or type(value) is not cst.Call:
            return False
        if not _builds_block(ctx, value.func):
            return False
    return True


_BLOCK_CLASSES = knowledge.HYBRID_BLOCK_CLASSES | knowledge.PLAIN_BLOCK_CLASSES


def _builds_block(ctx: Any, func: cst.BaseExpression) -> bool:
    """`func(...)` builds a block: a Gluon block class, or a class of this file that derives
    from one (through other classes of the file)."""
    resolved = ctx.resolve(func)
    if resolved is None and type(func) is cst.Name:
        resolved = ctx.qualname(func.value)
    return resolved is not None and _block_class(ctx, resolved, set())


def _block_class(ctx: Any, name: str, seen: set[str]) -> bool:
    if name in _BLOCK_CLASSES or name.startswith(_GLUON_LAYERS):
        return True
    if name in seen:
        return False
    seen.add(name)
    return any(_block_class(ctx, base, seen) for base in ctx.facts.classes.get(name, ()))


#: Modules whose classes are all blocks (layers, cells, the model zoo's networks).
_GLUON_LAYERS = ("mxnet.gluon.nn.", "mxnet.gluon.rnn.", "mxnet.gluon.model_zoo.")


#: Library modules whose functions compute arrays from arrays (kept apart: saving, loading).
_ARRAY_MODULES = ("mxnet.ndarray.", "mxnet.nd.", "numpy.")
_STORING = ("save", "load", "write", "dump", "read", "from")


def _shown_shapes(call: cst.Call, live: set[str]) -> set[int]:
    """Names of `live` a `print(...)` shows only the shape or type of (`out.shape`)."""
    out: set[int] = set()
    for node in iter_nodes(call):
        if (
            type(node) is cst.Attribute
            and node.attr.value in ("shape", "dtype", "ndim")
            and type(node.value) is cst.Name
            and node.value.value in live
        ):
            out.add(id(node.value))
    return out


def _enumerates(loop: cst.For) -> bool:
    it = loop.iter
    return type(it) is cst.Call and type(it.func) is cst.Name and it.func.value == "enumerate"


def _mentions(node: cst.CSTNode, names: set[str]) -> bool:
    return any(type(n) is cst.Name and n.value in names for n in iter_nodes(node))


def _cosmetic(site: Site) -> bool:
    """A draw that only picks how something looks: the value of a `color=` keyword, or
    assigned to a name that says it is a colour (`colors[cls] = (random.random(), ...)`)."""
    stmt = site.stmt
    for node in iter_nodes(stmt, stop=NESTED_SCOPES):
        if (
            type(node) is cst.Arg
            and node.keyword is not None
            and _COSMETIC.search(node.keyword.value)
            and site.call in set(iter_nodes(node.value))
        ):
            return True
    small: cst.CSTNode = stmt
    if type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1:
        small = stmt.body[0]
    # An assignment's targets; a compound statement's header (`for c in ...`) is not read.
    targets = assignment_targets(small) if type(small) is not cst.For else ()
    for target in targets:
        while type(target) in (cst.Subscript, cst.Attribute):
            target = target.value  # type: ignore[attr-defined]
        if type(target) is cst.Name and _COSMETIC.search(target.value):
            return True
    return False


#: Loader -> keyword of its last-batch policy, and the values that drop or roll over the tail.
_LAST_BATCH: dict[str, tuple[str, frozenset[str]]] = {
    knowledge.DATALOADER: ("last_batch", frozenset({"discard", "rollover"})),
    "mxnet.io.NDArrayIter": ("last_batch_handle", frozenset({"discard", "roll_over"})),
}
_EVALUATION_WORDS = frozenset({"val", "valid", "validation", "test", "eval", "evaluation", "dev"})
_TRAINING_WORDS = frozenset({"train", "training"})


def _named_for_evaluation(name: str | None) -> bool:
    words = set(name_tokens(name.rsplit(".", 1)[-1])) if name else set()
    return bool(words & _EVALUATION_WORDS) and not words & _TRAINING_WORDS


def evaluation_subset(
    ctx: FileContext,
    call: cst.Call,
    target: str | None,
    bound: Mapping[str, cst.BaseExpression] | None = None,
) -> tuple[cst.BaseExpression, str, str] | None:
    """MXL305's decision: (the `shuffle=True` value, the loader as quoted, what it does with the
    last batch) when `call` builds a shuffling evaluation loader that drops or rolls over its
    tail; else None. `bound`: what a call of the function that builds the loader passes for
    its parameters (`make_loader(val_set, True)`), read for the names `call` is given."""

    def given(node: cst.BaseExpression | None) -> cst.BaseExpression | None:
        if bound is not None and type(node) is cst.Name:
            return bound.get(node.value)
        return node

    name = ctx.resolve(call.func)
    loader = knowledge.canonical(name) if name else ""
    policy_of = _LAST_BATCH.get(loader)
    shuffling = knowledge.SHUFFLING_PIPELINES.get(loader)
    if policy_of is None or shuffling is None or shuffling[1] is None:
        return None
    keyword, dropping = policy_of
    shuffle = given(_argument(call, *shuffling[1]))
    if not (type(shuffle) is cst.Name and shuffle.value == "True"):
        return None
    policy = given(_argument(call, keyword, len(call.args)))
    if type(policy) is not cst.SimpleString or policy.evaluated_value not in dropping:
        return None
    value = policy.evaluated_value
    data = given(call.args[0].value) if call.args and call.args[0].keyword is None else None
    if not (
        _named_for_evaluation(target) or _named_for_evaluation(dotted_name(data) if data else None)
    ):
        return None
    if target is not None and "." not in target:
        uses = re.findall(rf"(?<![\w.]){re.escape(target)}\b", ctx.source)
        if len(uses) < 2:
            return None  # built and never used: nothing is evaluated with it
    drops = (
        "drops its last incomplete batch"
        if value == "discard"
        else "rolls its last batch over into the next pass"
    )
    return shuffle, f"{ctx.code(call.func)}(shuffle=True, {keyword}={value!r})", drops


def _assigned_name(stmt: cst.CSTNode) -> str | None:
    """`name` in `name = ...` (the statement alone or its line)."""
    assign = single_assignment(stmt)
    return dotted_name(assign.targets[0].target) if assign is not None else None


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


def _item(site: Site, **fields: Any) -> Item:
    """The item of a call met at `site`: a use, unless `fields` say otherwise (built only for
    the calls that are items: most calls of a script are none)."""
    made: dict[str, Any] = {"op": "use", "reached": site.reached, "symbol": _symbol(site.frames)}
    made.update(fields)
    return Item(**made)


def _symbol(frames: tuple[Frame, ...]) -> str | None:
    if not frames:
        return None
    frame = frames[-1]
    name = frame.function.name.value
    return f"{frame.cls}.{name}" if frame.cls else name


#: Calls whose value differs on every run: a seed computed from one is not meant to repeat.
_RUN_UNIQUE = frozenset(
    {"time.time", "time.time_ns", "time.perf_counter", "os.urandom", "os.getpid", "uuid.uuid4"}
)


def _fresh_seed(call: cst.Call, resolve: Any) -> bool:
    """Whether the seed passed to `call` is drawn in the call itself from a random or
    run-unique source (`random.getrandbits(32)`, `int(time.time())`): nothing keeps it, so the
    script asks for a different run each time. A seed drawn into a variable first may be
    logged to repeat the run and is not one."""
    for arg in call.args:
        for node in iter_nodes(arg.value):
            if type(node) is not cst.Call:
                continue
            name = resolve(node.func)
            if (
                knowledge.numpy_random_call(name)
                or knowledge.python_random_call(name)
                or name in _RUN_UNIQUE
            ):
                return True
    return False


def trains_in_text(source: str) -> bool:
    """Whether the text has a backward pass, a `Trainer(` or a `.fit(` on training data."""
    return any(text in source for text in _TRAINS_TEXT) and _TRAINS.search(source) is not None


def trains_in_code(module: cst.Module, relative_path: str) -> bool:
    """Whether a script trains, read from its code (identifiers and calls, not strings,
    comments or imports), and is not a benchmark or profiling run by its (project-relative)
    path."""
    if any(_TIMING_PATH.search(part) for part in PurePosixPath(relative_path).parts):
        return False
    for node in typed_nodes(module, _TRAINING_SIGNS, (cst.Import, cst.ImportFrom)):
        if type(node) is cst.Name and node.value in _TRAINING_NAMES:
            return True
        if type(node) is cst.Call and _TRAINING_CALL.match(last_name(node.func)):
            return True
        if type(node) is cst.FunctionDef and _TRAINING_CALL.match(node.name.value):
            return True  # `def train():`, run by a wrapper or a configured entry point
    return False


#: What a module-level loop's code shows when it trains.
_LOOP_TRAINS = (".backward(", "autograd.record", ".fit(")


def module_level_training_loop(module: cst.Module, source: str) -> bool:
    """A script whose training loop runs at module level (no `__main__` guard): a loop or
    `with` block at the top that calls `.backward()`, `.fit()` or `autograd.record()`. A file
    whose text shows none of them has no such loop."""
    if not any(sign in source for sign in _LOOP_TRAINS):
        return False
    return any(
        type(stmt) in (cst.For, cst.While, cst.With) and _calls_training(stmt)
        for stmt in module.body
    )


def _calls_training(stmt: cst.CSTNode) -> bool:
    """Read from the statement's calls, not from its generated code (a training loop's code
    is most of a script)."""
    for call in typed_nodes(stmt, CALLS):
        func = call.func  # type: ignore[attr-defined]
        if type(func) is not cst.Attribute:
            continue
        attr = func.attr.value
        if attr in ("backward", "fit"):
            return True
        if attr == "record" and (dotted_name(func.value) or "").rsplit(".", 1)[-1] == "autograd":
            return True
    return False


def _evolve(item: Item, **changes: Any) -> Item:
    """`dataclasses.replace(item, **changes)` without reading the class's fields on every
    call (`Item` has no `__post_init__` and no field outside `__init__`): expanding the calls
    of helpers copies items by the ten thousand on a large project."""
    unknown = changes.keys() - _ITEM_FIELDS
    if unknown:
        raise TypeError(f"Item has no field {sorted(unknown)[0]!r}")
    new = object.__new__(Item)
    state = new.__dict__
    state.update(item.__dict__)
    state.update(changes)
    return new


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
            item = _evolve(
                item,
                span=site.span,
                symbol=site.symbol,
                line=site.line,
                module=site.module,
                reached=site.reached and item.reached,
                via=site.via or site.what,
            )
        if item.op != "call":
            out.append(item)
            continue
        target = names.resolve(item.target)
        if target is None:
            if _assumed_seeder(item.target) or item.target in knowledge.ALL_SEEDERS:
                out.append(_evolve(item, op="seed", kinds=ALL_KINDS))
            continue
        if target in active:
            continue
        summary = summaries[target]
        bindings = _bind(summary.params, item)
        inner: list[Item] = []
        for sub in summary.items:
            if sub.cond is not None:
                if not guard_holds(sub.cond, bindings):
                    continue
                sub = _evolve(sub, cond=None)
            inner.append(sub)
        if summary.constructs:
            inner = [_evolve(sub, built=True) for sub in inner]
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
