"""Functions and methods as verify targets, read statically (the `ast` module).

Training code in a package is rarely run by any script of the run: its functions take a
network, a data loader, a trainer, a loss and contexts from a caller. To run a flagged line,
`--verify` calls the function that holds it with arguments it builds; what each parameter must
be (its *role*) is read from how the body uses it — iterated like a loader (and how its batches
are unpacked), called like a network or a loss, stepped like a trainer, passed as `ctx_list=`,
used in `range()` — and from the names MXNet code conventionally gives them. Defaults are kept:
they are the project's own values.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from mxlint.argparse_options import argument_calls, default_dest

CTX = re.compile(r"^(ctx|context|device|dev|gpu|cpu)$|_ctx$|^ctx_")
CTX_LIST = re.compile(r"^(ctx_?list|ctxs|contexts|devices|devs|gpus|ctx_?s)$|_ctxs$|_devices$")
NET = re.compile(
    r"net|model|network|block|backbone|encoder|decoder|classifier|student|teacher|generator"
    r"|discriminator|predictor|head$"
)
LOSS = re.compile(r"loss|criterion|crit$|objective|^ce$|^l2$|^l1$")
METRIC = re.compile(r"metric|acc(uracy)?$|^mae$|^mse$|^ppl$|^f1$")
TRAINER = re.compile(r"trainer|optim(izer)?$|^opt$|updater")
LOADER = re.compile(
    r"loader|_data$|^data$|_iter$|^iter|batches|dataloader|train_data|val_data|test_data|stream"
)
DATASET = re.compile(r"dataset|_set$|^ds$|_ds$")
ARRAYS = re.compile(
    r"^(images?|imgs?|labels?|features?|targets?|inputs?|samples|points|x|y|xs|ys)$"
    r"|^(x|y)_|_(x|y)$|^(train|val|test)_(x|y|images|labels|features)"
)
INDICES = re.compile(r"idx$|indices$|_ids$|^ids$|order$|perm")
INT = re.compile(
    r"epochs?$|^num_|^n_|^n$|^k$|steps?$|iters?$|iterations$|size$|batch_size|^count|length$"
    r"|^seed$|^rank$|^workers?$|layers$|^top_?k$|^dim$|classes$|interval$|^every$|^period$"
    r"|freq(uency)?$|^log_|^print_|_every$|^start|^end$|^begin$|^limit$"
)
FLOAT = re.compile(
    r"^lr$|learning_rate|^wd$|decay$|momentum|temperature|scale$|factor$|alpha|beta|gamma"
    r"|eps(ilon)?$|threshold|thresh$|ratio$|frac(tion)?$|^p$|prob|rate$|dropout|margin|clip"
)
PATH = re.compile(
    r"path$|file(name)?$|fname$|prefix$|^root$|dir$|folder$|checkpoint|ckpt|params_file|output$"
)
CALLABLE = re.compile(r"transform|^fn$|func$|callback|augment|hook$|collate|batchify")
LABEL = re.compile(r"^(y|labels?|targets?|tags?|gt|masks?|ys)$|_labels?$|_targets?$")
STRING = re.compile(r"^(mode|name|split|kind|tag|phase|optimizer_name|dtype)$")
#: Parsed command-line options and configuration objects read by attribute (`args.epochs`).
NAMESPACE = re.compile(r"^(args|opt|opts|cfg|config|conf|hparams|hp|flags|options|settings)$")

NET_METHODS = {
    "collect_params",
    "initialize",
    "hybridize",
    "export",
    "save_parameters",
    "load_parameters",
    "features",
    "output",
    "cast",
    "summary",
}
TRAINER_METHODS = {"step", "allreduce_grads", "set_learning_rate", "save_states", "load_states"}
TRAINER_ATTRS = {"optimizer", "learning_rate"}
METRIC_METHODS = {"update", "get", "reset", "get_name_value"}
TENSOR_ATTRS = {
    "as_in_context",
    "copyto",
    "shape",
    "context",
    "ctx",
    "asnumpy",
    "asscalar",
    "reshape",
    "astype",
    "attach_grad",
    "dtype",
    "ndim",
    "sum",
    "mean",
    "T",
}


@dataclass
class Usage:
    """How one name is used in a function (and, for a constructor parameter kept on `self`,
    in the class's other methods)."""

    called: int = 0
    methods: set[str] = field(default_factory=set)
    attrs: set[str] = field(default_factory=set)
    iterated: bool = False
    zipped: bool = False
    in_range: bool = False
    subscripted: bool = False
    batch: dict[str, Any] | None = None
    passed_to: set[str] = field(default_factory=set)
    keywords: set[str] = field(default_factory=set)
    as_second_arg_of_call: bool = False
    #: Passed to a call of a network: a name the function binds to a built network
    #: (`head = self.build()`) or one named like a network (`self.net(x)`).
    fed_to_net: bool = False


def _built_locals(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names the function binds to what a call returns (`head = self.build()`)."""
    return {
        t.id
        for node in ast.walk(fn)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
        for t in node.targets
        if isinstance(t, ast.Name)
    }


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else node.attr
    return ""


def _batch_layout(target: ast.expr, body: list[ast.stmt]) -> dict[str, Any]:
    """How a loop unpacks the loader's batches: a k-tuple, a tuple indexed `b[i]`, or a
    DataBatch read as `b.data[0]`/`b.label[0]`."""
    if isinstance(target, (ast.Tuple, ast.List)):
        names = [e.id if isinstance(e, ast.Name) else "" for e in target.elts]
        return {"kind": "tuple", "size": len(target.elts), "names": names}
    if isinstance(target, ast.Name):
        index, databatch = -1, False
        for stmt in body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Subscript) and _dotted(node.value) == target.id:
                    value = node.slice
                    if isinstance(value, ast.Constant) and isinstance(value.value, int):
                        index = max(index, value.value)
                if (
                    isinstance(node, ast.Attribute)
                    and _dotted(node.value) == target.id
                    and node.attr in ("data", "label")
                ):
                    databatch = True
        if databatch:
            return {"kind": "databatch"}
        if index >= 0:
            return {"kind": "tuple", "size": max(2, index + 1), "names": []}
        return {"kind": "tuple", "size": 2, "names": []}
    return {"kind": "tuple", "size": 2, "names": []}


def _loop_source(node: ast.expr) -> tuple[ast.expr, bool, ast.expr | None]:
    """The iterated expression under `enumerate()`/`tqdm()`/`iter()`, whether it was zipped,
    and the enumerate target's item part."""
    if isinstance(node, ast.Call) and node.args:
        name = _dotted(node.func).rsplit(".", 1)[-1]
        if name in ("enumerate", "tqdm", "iter", "islice", "list"):
            return _loop_source(node.args[0])
        if name == "zip":
            return node, True, None
    return node, False, None


def collect(fn: ast.FunctionDef | ast.AsyncFunctionDef, names: dict[str, str]) -> dict[str, Usage]:
    """Usage of each name in `names` (name or `self.attr` alias -> parameter) in `fn`."""
    out = {param: out_usage for param, out_usage in ((p, Usage()) for p in set(names.values()))}
    built = _built_locals(fn)

    def owner(node: ast.expr) -> str | None:
        return names.get(_dotted(node)) if _dotted(node) else None

    for node in ast.walk(fn):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            source, zipped, _ = _loop_source(node.iter)
            if zipped and isinstance(source, ast.Call):
                for arg in source.args:
                    if owner(arg):
                        out[owner(arg)].zipped = True  # type: ignore[index]
                continue
            if isinstance(source, ast.Call) and _dotted(source.func) == "range":
                for arg in source.args:
                    if owner(arg):
                        out[owner(arg)].in_range = True  # type: ignore[index]
                continue
            param = owner(source)
            if param:
                usage = out[param]
                usage.iterated = True
                target = node.target
                if (
                    isinstance(node.iter, ast.Call)
                    and _dotted(node.iter.func).endswith("enumerate")
                    and isinstance(target, ast.Tuple)
                    and len(target.elts) == 2
                ):
                    target = target.elts[1]
                body: list[ast.stmt] = (
                    node.body if isinstance(node, (ast.For, ast.AsyncFor)) else [fn]
                )
                usage.batch = usage.batch or _batch_layout(target, body)
        elif isinstance(node, ast.Call):
            func = node.func
            param = owner(func)
            if param:
                out[param].called += 1
            if isinstance(func, ast.Attribute) and owner(func.value):
                out[owner(func.value)].methods.add(func.attr)  # type: ignore[index]
            callee = _dotted(func).rsplit(".", 1)[-1]
            if callee == "next" and node.args:
                inner = node.args[0]
                if (
                    isinstance(inner, ast.Call)
                    and _dotted(inner.func) == "iter"
                    and inner.args
                    and owner(inner.args[0])
                ):
                    usage = out[owner(inner.args[0])]  # type: ignore[index]
                    usage.iterated = True
                    usage.batch = usage.batch or {"kind": "tuple", "size": 2, "names": []}
            network = (isinstance(func, ast.Name) and func.id in built) or bool(
                NET.search(callee.lower()) and not LOSS.search(callee.lower())
            )
            for i, arg in enumerate(node.args):
                if owner(arg):
                    usage = out[owner(arg)]  # type: ignore[index]
                    usage.passed_to.add(f"{callee}:{i}")
                    usage.fed_to_net = usage.fed_to_net or network
                    if i == 1 and param:
                        usage.as_second_arg_of_call = True
            for kw in node.keywords:
                if kw.arg and owner(kw.value):
                    out[owner(kw.value)].keywords.add(kw.arg)  # type: ignore[index]
                    out[owner(kw.value)].passed_to.add(f"{callee}:{kw.arg}")  # type: ignore[index]
        elif isinstance(node, ast.Attribute) and owner(node.value):
            out[owner(node.value)].attrs.add(node.attr)  # type: ignore[index]
        elif isinstance(node, ast.Subscript) and owner(node.value):
            out[owner(node.value)].subscripted = True  # type: ignore[index]
    return out


def role(name: str, usage: Usage) -> dict[str, Any]:
    """What a parameter must be, from its usage first and its name second."""
    lowered = name.lower()
    if NAMESPACE.search(lowered) and usage.attrs and not usage.called:
        return {"role": "namespace", "attrs": sorted(usage.attrs)}
    if (
        CTX_LIST.search(lowered)
        or "ctx_list" in usage.keywords
        or usage.zipped
        and CTX.search(lowered)
    ):
        return {"role": "ctx_list"}
    if CTX.search(lowered) and not usage.iterated:
        return {"role": "ctx"}
    if usage.iterated and (usage.batch or LOADER.search(lowered)) and not CTX.search(lowered):
        return {"role": "loader", "batch": usage.batch or {"kind": "tuple", "size": 2}}
    if usage.zipped:
        return {"role": "parts"}
    if usage.methods & TRAINER_METHODS or usage.attrs & TRAINER_ATTRS or TRAINER.search(lowered):
        return {"role": "trainer"}
    if METRIC.search(lowered) and not usage.called:
        return {"role": "metric"}
    if usage.called and LOSS.search(lowered):
        return {"role": "loss"}
    if (usage.called or usage.methods & NET_METHODS or usage.attrs & NET_METHODS) and (
        NET.search(lowered) or usage.methods & NET_METHODS or usage.attrs & NET_METHODS
    ):
        return {"role": "net", "parts": sorted(usage.attrs & {"features", "output"})}
    if usage.called and not usage.attrs:
        return {"role": "net" if not LOSS.search(lowered) else "loss", "parts": []}
    if usage.methods & METRIC_METHODS == usage.methods and usage.methods and METRIC.search(lowered):
        return {"role": "metric"}
    if DATASET.search(lowered) or any(p.startswith("DataLoader:0") for p in usage.passed_to):
        return {"role": "dataset"}
    if usage.in_range or INT.search(lowered):
        return {"role": "int", "value": _int_for(lowered)}
    if FLOAT.search(lowered):
        if any(p.startswith("broadcast_") for p in usage.passed_to):
            return {"role": "scalar_tensor", "value": _float_for(lowered)}
        return {"role": "float", "value": _float_for(lowered)}
    if PATH.search(lowered):
        return {"role": "path"}
    if CALLABLE.search(lowered):
        return {"role": "callable"}
    if INDICES.search(lowered):
        return {"role": "indices"}
    if STRING.search(lowered):
        return {"role": "string"}
    if LABEL.search(lowered):
        return {"role": "label"}
    if ARRAYS.search(lowered) and not usage.attrs & TENSOR_ATTRS and not usage.fed_to_net:
        return {"role": "array"}
    if usage.attrs & TENSOR_ATTRS or usage.subscripted or usage.passed_to:
        return {"role": "tensor"}
    return {"role": "tensor"}


def _int_for(name: str) -> int:
    if "epoch" in name:
        return 2
    if "seed" in name or "rank" in name or "start" in name or "begin" in name:
        return 0
    if "worker" in name:
        return 0
    if "class" in name:
        return 10
    if "batch" in name:
        return 4
    if any(k in name for k in ("interval", "every", "period", "freq", "log_", "print_")):
        return 1
    if "step" in name or "iter" in name:
        return 8
    return 4


def _float_for(name: str) -> float:
    if name in ("lr",) or "learning_rate" in name:
        return 0.01
    if any(k in name for k in ("wd", "decay", "dropout", "eps", "rate", "prob", "p")):
        return 0.0
    if "momentum" in name:
        return 0.9
    if "clip" in name or "margin" in name or "temperature" in name or "scale" in name:
        return 1.0
    if "thresh" in name:
        return 0.5
    return 1.0


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[dict[str, Any]]:
    args = fn.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    out = []
    for i, (arg, default) in enumerate(zip(positional, defaults)):
        if method and i == 0:
            continue
        out.append({"name": arg.arg, "kind": "positional", "default": default is not None})
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults):
        out.append({"name": arg.arg, "kind": "keyword", "default": kw_default is not None})
    return out


def _self_aliases(cls: ast.ClassDef, params: list[str]) -> dict[str, str]:
    """`self.X = param` in `__init__`: `self.X` stands for the parameter."""
    out = {}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            for sub in ast.walk(node):
                if (
                    isinstance(sub, ast.Assign)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id in params
                ):
                    for t in sub.targets:
                        if isinstance(t, ast.Attribute) and _dotted(t.value) == "self":
                            out[f"self.{t.attr}"] = sub.value.id
    return out


def parser_defaults(tree: ast.Module) -> dict[str, Any]:
    """`add_argument("--epochs", type=int, default=3)` in the module: {"epochs": 3}."""
    out: dict[str, Any] = {}
    for options, keywords in argument_calls(tree):
        dest = keywords.get("dest")
        name = str(dest.value) if isinstance(dest, ast.Constant) else None
        if name is None:
            name = default_dest(options)
        action = keywords.get("action")
        if isinstance(action, ast.Constant) and action.value in ("store_true", "store_false"):
            out[name] = action.value == "store_false"
            continue
        try:
            out[name] = ast.literal_eval(keywords["default"]) if "default" in keywords else None
        except (ValueError, SyntaxError):
            out[name] = None
    return out


def _namespace(attrs: list[str], defaults: dict[str, Any]) -> dict[str, Any]:
    """Values for `args.<attr>`: the parser's defaults, else a role's value by name."""
    out: dict[str, Any] = {}
    for attr in attrs:
        if attr in defaults:
            out[attr] = defaults[attr]
            continue
        found = role(attr, Usage())
        out[attr] = found.get("value") if found["role"] in ("int", "float") else None
    return out


def _describe(fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool, extra: list[Any]):
    params = _params(fn, method)
    names = {p["name"]: p["name"] for p in params}
    usages: dict[str, Usage] = {p["name"]: Usage() for p in params}
    for scope, aliases in [(fn, names)] + extra:
        for param, usage in collect(scope, aliases).items():
            merged = usages.setdefault(param, Usage())
            merged.called += usage.called
            merged.methods |= usage.methods
            merged.attrs |= usage.attrs
            merged.iterated |= usage.iterated
            merged.zipped |= usage.zipped
            merged.in_range |= usage.in_range
            merged.subscripted |= usage.subscripted
            merged.batch = merged.batch or usage.batch
            merged.passed_to |= usage.passed_to
            merged.keywords |= usage.keywords
            merged.fed_to_net |= usage.fed_to_net
    for p in params:
        usage = usages[p["name"]]
        p.update(role(p["name"], usage))
        p["moved"] = bool(
            usage.methods & {"as_in_context", "copyto"}
            or any(t.startswith("split_and_load:") for t in usage.passed_to)
        )
    return params


def _uses(fn: ast.AST) -> dict[str, list[str]]:
    """Networks and losses the body calls that are not parameters: `self.net(x)`, a module
    global `net(x)` — the child asks them for input shapes and label layouts."""
    called: list[str] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name and (name.startswith("self.") or "." not in name) and name not in called:
                called.append(name)
    return {"called": called}


@dataclass
class Target:
    """A function or method to call: where it is, its parameters' roles, the constructor's
    for a method, and what its body calls."""

    qualname: str
    cls: str | None
    params: list[dict[str, Any]]
    ctor: list[dict[str, Any]] | None
    uses: dict[str, list[str]]
    line: int

    def to_json(self) -> dict[str, Any]:
        return {
            "qualname": self.qualname,
            "cls": self.cls,
            "params": self.params,
            "ctor": self.ctor,
            "uses": self.uses,
            "line": self.line,
        }


def enclosing(tree: ast.Module, line: int) -> Target | None:
    """The module-level function, or method of a module-level class, holding `line`."""
    found = _enclosing(tree, line)
    if found is not None:
        defaults = parser_defaults(tree)
        for p in found.params + (found.ctor or []):
            if p.get("role") == "namespace":
                p["values"] = _namespace(p.pop("attrs"), defaults)
    return found


def _enclosing(tree: ast.Module, line: int) -> Target | None:
    for node in tree.body:
        end = getattr(node, "end_lineno", None) or node.lineno
        if not node.lineno <= line <= end:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return Target(node.name, None, _describe(node, False, []), None, _uses(node), line)
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                end = getattr(item, "end_lineno", None) or item.lineno
                if (
                    isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and item.lineno <= line <= end
                ):
                    return _method(node, item, line)
    return None


def _method(cls: ast.ClassDef, fn: ast.FunctionDef | ast.AsyncFunctionDef, line: int) -> Target:
    init = next(
        (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None
    )
    ctor = None
    if init is not None:
        names = [p["name"] for p in _params(init, True)]
        aliases = _self_aliases(cls, names)
        others = [
            (n, aliases)
            for n in cls.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n is not init
        ]
        ctor = _describe(init, True, others)
    static = any(_dotted(d) == "staticmethod" for d in fn.decorator_list)
    params = _describe(fn, not static, [])
    uses = _uses(fn)
    return Target(f"{cls.name}.{fn.name}", cls.name, params, ctor, uses, line)
