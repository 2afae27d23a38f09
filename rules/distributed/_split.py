"""Whether a data pipeline depends on the worker's rank: the backward slice of a loader's
arguments through the file (MXL804).

From a `DataLoader(...)`/`ImageRecordIter(...)` call, every expression that can flow into its
arguments is visited: names through their assignments, `self.x` through the class's
assignments, parameters through the calls of their function in the file, and the bodies of the
file's own functions it calls (a `get_dataset(args)` that shards inside). The pipeline is split
when a rank or partition index appears anywhere in that slice (`kv.rank`, `hvd.rank()`,
`part_index=`, `SplitSampler`, `dataset.shard(...)`, `DMLC_*` variables); it is
*unknown* when the slice reaches something the file cannot show — a function imported from
another module of the project, a parameter no call in the file passes, a custom sampler
defined elsewhere — and then the rule stays silent.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from mxlint.rules.distributed._analysis import COLLECTIVES
from mxlint.walker import children, iter_nodes

if TYPE_CHECKING:
    from mxlint.checker import FileContext
    from mxlint.rules.distributed._analysis import FileModel

#: Names that say which share of the data a worker takes. A count alone (`hvd.size()`,
#: `kv.num_workers`, `num_parts`) does not: every worker computes the same count, and it
#: often only scales the batch size; nor does `local_rank`, which picks the worker's GPU.
SIGNAL = re.compile(
    r"(?<!local_)rank|part_?index|part_?idx|shard|worker_?id|task_?id|task_?index"
    r"|Split\w*Sampler|split_?sampler|DMLC_",
    re.I,
)
#: Libraries whose functions never split by rank unless told to (through their arguments,
#: which the slice reads anyway).
_LIBRARIES = frozenset(
    {
        "mxnet",
        "gluoncv",
        "gluonnlp",
        "numpy",
        "np",
        "os",
        "sys",
        "math",
        "random",
        "functools",
        "itertools",
        "collections",
        "json",
        "pickle",
        "glob",
        "pandas",
        "PIL",
        "cv2",
        "logging",
        "time",
        "argparse",
        "io",
        "gzip",
        "struct",
        "csv",
        "pathlib",
        "shutil",
        "warnings",
    }
)
_BUILTINS = frozenset(
    {
        "len",
        "list",
        "tuple",
        "dict",
        "set",
        "range",
        "zip",
        "enumerate",
        "map",
        "filter",
        "sorted",
        "reversed",
        "int",
        "float",
        "str",
        "bool",
        "min",
        "max",
        "sum",
        "abs",
        "round",
        "open",
        "print",
        "isinstance",
        "getattr",
        "hasattr",
        "iter",
        "next",
        "super",
        "type",
        "format",
    }
)
_BUDGET = 400
_DEVICES = frozenset({"mxnet.gpu", "mxnet.cpu", "mxnet.Context", "mxnet.cpu_pinned"})
#: Objects that hold configuration (`args.rec`, `opt.batch_size`, `self._cfg.train.lr`): their
#: attributes are settings, whose names say whether they are a rank.
_CONFIG = re.compile(r"^_?(?:args|opts?|cfg|config|conf|flags|hparams|hp|options|settings)$", re.I)


class Slice:
    """The walk of one loader's slice; `split` or `unknown` say what it found."""

    def __init__(self, ctx: FileContext, model: FileModel) -> None:
        self.ctx = ctx
        self.model = model
        self.split = False
        self.unknown = False
        self.reason = ""
        self._seen: set[int] = set()
        self._work: list[cst.CSTNode] = []
        self._functions: dict[str, list[cst.FunctionDef]] | None = None

    def run(self, roots: list[cst.CSTNode]) -> None:
        self._work = list(roots)
        visited = 0
        while self._work and not self.split:
            node = self._work.pop()
            if id(node) in self._seen:
                continue
            self._seen.add(id(node))
            visited += 1
            if visited > _BUDGET:
                self._give_up("the data pipeline is too long to follow")
                return
            stack = [node]
            while stack:
                sub = stack.pop()
                if self._visit(sub):
                    stack.extend(reversed(list(children(sub))))
                if self.split:
                    return

    def _give_up(self, reason: str) -> None:
        if not self.unknown:
            self.unknown, self.reason = True, reason

    def _visit(self, node: cst.CSTNode) -> bool:
        """Look at one node of the slice; whether to look at its children too."""
        kind = type(node)
        if kind is cst.Name:
            assert isinstance(node, cst.Name)
            if SIGNAL.search(node.value):
                self.split = True
            else:
                self._follow_name(node)
        elif kind is cst.Attribute:
            assert isinstance(node, cst.Attribute)
            chain = _chain(node)
            if any(SIGNAL.search(part) for _, part in chain):
                self.split = True
                return False
            if any(_CONFIG.match(part) for _, part in chain):
                return False  # a setting: its name said all there is
            if type(node.value) is cst.Name and node.value.value == "self":
                self._follow_binding(node)
                return False
        elif kind is cst.Arg:
            assert isinstance(node, cst.Arg)
            if node.keyword is not None and SIGNAL.search(node.keyword.value):
                self.split = True
        elif kind is cst.SimpleString:
            assert isinstance(node, cst.SimpleString)
            if "DMLC_" in node.value:
                self.split = True
        elif kind is cst.Call:
            assert isinstance(node, cst.Call)
            if self.ctx.resolve(node.func) in _DEVICES:
                return False  # `mx.gpu(hvd.local_rank())`: where, not which data
            self._follow_call(node)
        return True

    def _follow_name(self, node: cst.Name) -> None:
        scope = self.ctx.bindings.scope_at(node).lookup(node.value)
        if scope is None:
            return  # a builtin or an undefined name
        for binding in scope.names.get(node.value, []):
            if binding.kind in ("assignment", "walrus", "augmented"):
                self._work.append(binding.value if binding.value is not None else binding.node)
            elif binding.kind in ("loop", "comprehension", "with"):
                self._work.append(binding.node)
            elif binding.kind == "parameter":
                self._parameter(scope.node, node.value)
            elif binding.kind in ("function", "class"):
                self._work.append(binding.node)
            elif binding.kind == "import":
                name = self.ctx.resolve(node)
                if (
                    name is not None
                    and name.split(".", 1)[0] not in _LIBRARIES
                    and not name.startswith(COLLECTIVES)
                ):
                    self._give_up(f"`{node.value}` comes from `{name}`")

    def _follow_binding(self, node: cst.Attribute) -> None:
        found = self.model.bindings_of(node)
        if found is None:
            self._give_up(f"`self.{node.attr.value}` is set where this file does not show")
            return
        for b in found:
            if b.value is not None:
                self._work.append(b.value)

    def _parameter(self, function: cst.CSTNode, name: str) -> None:
        """A parameter: what the file's calls of its function pass for it. A callback's
        parameters (a lambda, a function the file passes on by name and never calls: a
        dataset `transform`, a `batchify_fn`) are what its caller gives it, one sample or
        batch at a time; a rank given to it would be visible where the callback is handed
        over (`partial(fn, kv.rank)`, an argument of the call that takes it), which the slice
        reads, or come from a module this file does not show, where the slice gives up."""
        if type(function) is cst.Lambda:
            return
        if type(function) is not cst.FunctionDef:
            self._give_up(f"`{name}` is a parameter of a function this file does not show")
            return
        params = [p.name.value for p in function.params.params]
        method = bool(params) and params[0] in ("self", "cls")
        position = params.index(name) if name in params else None
        if method and position is not None:
            position -= 1
        sites = self._call_sites(function.name.value, method)
        if not sites:
            if not method and self._passed_on(function.name.value):
                return
            self._give_up(f"no call in this file passes `{name}`")
            return
        default = next((p.default for p in function.params.params if p.name.value == name), None)
        for call in sites:
            arg = _passed(call, name, position)
            if arg is None:
                if any(a.star for a in call.args):
                    self._give_up(f"`{name}` is passed through `*args`/`**kwargs`")
                    return
                if default is not None:
                    self._work.append(default)
                continue
            self._work.append(arg.value)

    def _passed_on(self, name: str) -> bool:
        """Whether the file uses the function `name` as a value (not only calls or defines it):
        a callback handed to whatever calls it."""
        names = calls = defined = 0
        for node in iter_nodes(self.ctx.module):
            kind = type(node)
            if kind is cst.Name and node.value == name:  # type: ignore[attr-defined]
                names += 1
            elif kind is cst.Call and _named(node.func, name):  # type: ignore[attr-defined]
                calls += 1
            elif kind is cst.FunctionDef and node.name.value == name:  # type: ignore[attr-defined]
                defined += 1
        return names > calls + defined

    def _call_sites(self, name: str, method: bool) -> list[cst.Call]:
        out = []
        for call in self.model.calls:
            func = call.func
            if (
                not method
                and type(func) is cst.Name
                and func.value == name
                or (
                    method
                    and type(func) is cst.Attribute
                    and func.attr.value == name
                    and type(func.value) is cst.Name
                    and func.value.value == "self"
                )
            ):
                out.append(call)
        return out

    def _follow_call(self, call: cst.Call) -> None:
        func = call.func
        if type(func) is cst.Attribute and type(func.value) is cst.Name:
            if func.value.value == "self":
                for fn in self._defined(func.attr.value):
                    self._work.append(fn)
                return
            return
        if type(func) is cst.Name:
            defined = self._defined(func.value)
            if defined:
                self._work.extend(defined)
                return
            if func.value in _BUILTINS:
                return
            name = self.ctx.resolve(func)
            if name is not None and name.split(".", 1)[0] not in _LIBRARIES:
                self._give_up(f"`{func.value}()` is defined in `{name.rpartition('.')[0]}`")

    def _defined(self, name: str) -> list[cst.FunctionDef]:
        if self._functions is None:
            self._functions = {}
            for node in iter_nodes(self.ctx.module):
                if type(node) is cst.FunctionDef:
                    self._functions.setdefault(node.name.value, []).append(node)
        return self._functions.get(name, [])


def _named(func: cst.BaseExpression, name: str) -> bool:
    return type(func) is cst.Name and func.value == name


def _chain(node: cst.Attribute) -> list[tuple[cst.CSTNode, str]]:
    """The parts of `a.b.c` with their names, down to its root (a Name or any expression)."""
    out: list[tuple[cst.CSTNode, str]] = []
    current: cst.BaseExpression = node
    while type(current) is cst.Attribute:
        out.append((current, current.attr.value))
        current = current.value
    if type(current) is cst.Name:
        out.append((current, current.value))
    return out


def _passed(call: cst.Call, name: str, position: int | None) -> cst.Arg | None:
    positional = 0
    for arg in call.args:
        if arg.star:
            continue
        if arg.keyword is None:
            if position is not None and positional == position:
                return arg
            positional += 1
        elif arg.keyword.value == name:
            return arg
    return None
