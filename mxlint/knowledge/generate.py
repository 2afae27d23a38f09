"""Write MXNet's API facts from MXNet itself: `python -m mxlint.knowledge.generate [--check]`.

The linter never imports MXNet; this generator does, once per MXNet release, and writes what
the rules need into `mxlint/data/mxnet_api_<version>.json`: the public names of every tensor
namespace, which members NDArray and Symbol have, operator signatures, and what was observed by
running MXNet (which arithmetic broadcasts, which `reshape` forms each tensor type accepts,
which operators draw from the random generator, which Gluon layers initialize their weights
at once rather than at their first forward pass). `--check` compares the committed file with the
installed MXNet and exits 1 on any difference, so the facts cannot drift from the library.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import io
import json
import operator
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Namespace keys (as rules spell them after `F.` or `mx.`) and where MXNet keeps them.
NAMESPACES: dict[str, str] = {
    "nd": "ndarray",
    "nd.contrib": "ndarray.contrib",
    "nd.linalg": "ndarray.linalg",
    "nd.random": "ndarray.random",
    "nd.image": "ndarray.image",
    "nd.sparse": "ndarray.sparse",
    "nd.np": "ndarray.numpy",
    "nd.npx": "ndarray.numpy_extension",
    "sym": "symbol",
    "sym.contrib": "symbol.contrib",
    "sym.linalg": "symbol.linalg",
    "sym.random": "symbol.random",
    "sym.image": "symbol.image",
    "sym.sparse": "symbol.sparse",
    "np": "numpy",
    "npx": "numpy_extension",
    "np.random": "numpy.random",
    "np.linalg": "numpy.linalg",
    "sym.np": "symbol.numpy",
    "sym.npx": "symbol.numpy_extension",
    "sym.np.random": "symbol.numpy.random",
    "sym.np.linalg": "symbol.numpy.linalg",
}

#: Python's binary operators as written, and the functions both namespaces also offer.
OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "%": operator.mod,
    "**": operator.pow,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}
BINARY_FUNCTIONS = (
    "add",
    "subtract",
    "multiply",
    "divide",
    "modulo",
    "power",
    "maximum",
    "minimum",
    "hypot",
    "equal",
    "not_equal",
    "greater",
    "greater_equal",
    "lesser",
    "lesser_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
    "elemwise_add",
    "elemwise_sub",
    "elemwise_mul",
    "elemwise_div",
    "broadcast_add",
    "broadcast_sub",
    "broadcast_mul",
    "broadcast_div",
    "broadcast_mod",
    "broadcast_power",
    "broadcast_maximum",
    "broadcast_minimum",
    "broadcast_equal",
    "broadcast_greater",
    "broadcast_lesser",
)
#: Shapes whose elementwise combination needs broadcasting.
_LEFT, _RIGHT = (2, 3), (1, 3)
#: Operators that do not draw although their names say "random" (they evaluate densities).
_NOT_DRAWING = ("pdf",)
#: Helpers the `random` namespaces hold that draw nothing.
_NOT_DRAWS = frozenset({"current_context", "seed", "get_state", "set_state"})


def _quiet() -> contextlib.ExitStack:
    stack = contextlib.ExitStack()
    stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
    stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
    return stack


def _public(module: Any) -> list[str]:
    return sorted(n for n in dir(module) if not n.startswith("_"))


def _resolve(mx: Any, path: str) -> Any:
    obj = mx
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _members(cls: type) -> dict[str, list[str]]:
    """Public properties and methods; Symbol's methods that only raise `NotImplementedForSymbol`
    are listed apart: they exist, and fail when called."""
    properties, methods, raising = [], [], []
    for name in dir(cls):
        if name.startswith("_"):
            continue
        value = inspect.getattr_static(cls, name)
        if isinstance(value, property):
            properties.append(name)
            continue
        methods.append(name)
        try:
            source = inspect.getsource(getattr(cls, name))
        except (OSError, TypeError):
            continue
        if "NotImplementedForSymbol" in source:
            raising.append(name)
    return {"properties": properties, "methods": methods, "raising": raising}


def _signature(func: Any, namespace: str) -> dict[str, Any] | None:
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    params = [p for p in sig.parameters.values() if p.name not in ("name", "attr", "out")]
    named = [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    registry = _registry(func, namespace)
    registered = list(registry.names) if registry is not None else []
    open_kwargs = any(p.kind is p.VAR_KEYWORD for p in params)
    return {
        "params": named,
        "varargs": any(p.kind is p.VAR_POSITIONAL for p in params),
        "required": _required(params, registry),
        "tensors": [
            n for n, t in zip(registered, registry.types) if t.startswith("NDArray-or-Symbol")
        ]
        if registry is not None
        else [],
        # The operator's parameters the function does not name (its `**kwargs` go to the
        # operator's parser, which rejects any other keyword: the list is the parser's own, see
        # `facts()`); `open`: keywords that cannot be known (a Python function passing `**kwargs`
        # on, or an operator that accepts any keyword).
        "operator_params": [],
        "open": open_kwargs,  # settled by `_rejects_unknown_keywords` in `facts()`
    }


_PROBE = "zzz_unknown_keyword"


def _accepted_keywords(mx: Any, func: Any) -> list[str] | None:
    """The keywords a symbolic operator's parameter parser accepts, as MXNet lists them when it
    refuses an unknown one (`Cannot find argument 'x', Possible Arguments: ...`); None where no
    refusal was seen: operators without a parameter structure (`gather_nd`, `Custom`) accept
    any keyword silently."""
    for inputs in (0, 1, 2):
        try:
            with _quiet():
                func(*[mx.sym.var(f"v{i}") for i in range(inputs)], **{_PROBE: 1})
        except Exception as exc:
            text = str(exc)
            if f"Cannot find argument '{_PROBE}'" not in text:
                continue
            listed = text.split("Possible Arguments:", 1)[-1].split(", in operator", 1)[0]
            return sorted(set(re.findall(r"^(\w+) : ", listed, re.MULTILINE)))
        return None  # built with the unknown keyword: accepted
    return None


def _registry(func: Any, namespace: str) -> Any:
    """The registered operator a function calls (`get_operator_arguments`: names and types of
    its parameters), or None for a Python function. A namespaced function is registered with its
    namespace as a prefix (`nd.contrib.box_nms` is `_contrib_box_nms`)."""
    import mxnet as mx

    sub = namespace.split(".")[-1]
    for name in (func.__name__, f"_{sub}_{func.__name__}"):
        try:
            return mx.operator.get_operator_arguments(name)
        except Exception:
            continue
    return None


def _required(params: list[inspect.Parameter], registry: Any) -> list[str]:
    """Parameters without a default, and those MXNet's operator registry marks `required`
    (generated functions give every parameter a default, so the signature alone cannot say)."""
    required = [
        p.name
        for p in params
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if registry is not None:
        for name, kind in zip(registry.names, registry.types):
            if "required" in kind and name not in required:
                required.append(name)
    return required


def _broadcasts(mx: Any) -> dict[str, dict[str, bool]]:
    """Whether `a OP b` and `F.fn(a, b)` accept shapes (2, 3) and (1, 3), for NDArray and
    Symbol, observed by running them."""

    def nd_case(fn: Callable[[Any, Any], Any]) -> bool:
        try:
            fn(mx.nd.ones(_LEFT), mx.nd.ones(_RIGHT)).wait_to_read()
            return True
        except Exception:
            return False

    def sym_case(fn: Callable[[Any, Any], Any]) -> bool:
        try:
            out = fn(mx.sym.var("a"), mx.sym.var("b"))
            with _quiet():  # infer_shape prints its arguments before raising
                out.infer_shape(a=_LEFT, b=_RIGHT)
            return True
        except Exception:
            return False

    table: dict[str, dict[str, bool]] = {}
    for spelled, fn in OPERATORS.items():
        table[spelled] = {"ndarray": nd_case(fn), "symbol": sym_case(fn)}
    for name in BINARY_FUNCTIONS:
        row = {}
        if hasattr(mx.nd, name):
            row["ndarray"] = nd_case(getattr(mx.nd, name))
        if hasattr(mx.sym, name):
            row["symbol"] = sym_case(getattr(mx.sym, name))
        table[name] = row
    return table


def _symbol_nodes(mx: Any) -> dict[str, str]:
    """The node name a Symbol operator or binary function gets (`a - b` -> `_minus`): MXNet's
    shape errors name the node, which says which operator of a line failed."""
    out = {}
    for spelled, fn in OPERATORS.items():
        out[spelled] = fn(mx.sym.var("a"), mx.sym.var("b")).name.rstrip("0123456789")
    for name in BINARY_FUNCTIONS:
        if hasattr(mx.sym, name):
            node = getattr(mx.sym, name)(mx.sym.var("a"), mx.sym.var("b"))
            out[name] = node.name.rstrip("0123456789")
    return out


def _reshape_forms(mx: Any) -> dict[str, dict[str, bool]]:
    """Which spellings of `x.reshape` each tensor type accepts, by running them on (6,)."""
    forms: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
        "varargs": ((3, 2), {}),
        "tuple": (((3, 2),), {}),
        "keyword": ((), {"shape": (3, 2)}),
    }
    out: dict[str, dict[str, bool]] = {}
    for form, (args, kwargs) in forms.items():
        row = {}
        try:
            row["ndarray"] = mx.nd.ones((6,)).reshape(*args, **kwargs).shape == (3, 2)
        except Exception:
            row["ndarray"] = False
        try:
            with _quiet():
                shapes = mx.sym.var("x").reshape(*args, **kwargs).infer_shape(x=(6,))[1]
            row["symbol"] = shapes == [(3, 2)]
        except Exception:
            row["symbol"] = False
        out[form] = row
    return out


#: Gluon's layer modules, by the name rules resolve their classes to.
LAYER_MODULES: dict[str, str] = {"mxnet.gluon.nn": "gluon.nn", "mxnet.gluon.rnn": "gluon.rnn"}


def _init_at_once(mx: Any) -> dict[str, list[str]]:
    """Layers whose `initialize()` draws their initial weights from MXNet's generator at once,
    as observed: with no shape left to learn (`[]`: `Embedding`), or once the keywords listed
    are given a size (`Dense(in_units=...)`). Every other layer that draws defers it to its
    first forward pass; layers whose parameters start constant (`BatchNorm`) draw nothing.
    Each layer is built with 2 for its required arguments, then with 3 for each integer
    argument whose default 0 means "learn it from the first input"."""
    out: dict[str, list[str]] = {}
    for name, path in LAYER_MODULES.items():
        module = _resolve(mx, path)
        for member in _public(module):
            cls = getattr(module, member)
            if not (isinstance(cls, type) and issubclass(cls, mx.gluon.Block)):
                continue
            try:
                params = list(inspect.signature(cls).parameters.values())
            except (TypeError, ValueError):
                continue
            named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
            required = {p.name: 2 for p in named if p.default is inspect.Parameter.empty}
            sizes = [p.name for p in named if type(p.default) is int and p.default == 0]
            if _draws_at_init(mx, cls, required):
                out[f"{name}.{member}"] = []
                continue
            given = [k for k in sizes if _draws_at_init(mx, cls, {**required, k: 3})]
            if given:
                out[f"{name}.{member}"] = given
    return out


def _draws_at_init(mx: Any, cls: type, kwargs: dict[str, int]) -> bool:
    """Whether `cls(**kwargs).initialize()` gives its parameters values that depend on the
    seed: built and initialized under two seeds, some value differs."""
    seen = []
    for seed in (1, 2):
        try:
            with _quiet():
                block = cls(**kwargs)
                mx.random.seed(seed)
                block.initialize()
                seen.append([p.data().asnumpy() for p in block.collect_params().values()])
        except Exception:  # deferred (no value yet), or needs more than sizes to be built
            return False
    first, second = seen
    return any(a.shape != b.shape or (a != b).any() for a, b in zip(first, second))


def _draws(functions: dict[str, list[str]], ops: list[str]) -> list[str]:
    """Public functions (namespace-qualified) and registered operators that draw from the
    generator: the `random` namespaces, `random_*`/`sample_*` operators, Dropout, shuffle."""
    out = set()
    for key, members in functions.items():
        in_random = key.split(".")[-1] == "random"
        for member in members:
            words = member.lower().split("_")
            if any(w in words for w in _NOT_DRAWING) or member in _NOT_DRAWS:
                continue
            if (
                in_random
                or words[0] in ("random", "sample")
                or member in ("Dropout", "dropout", "shuffle")
            ):
                out.add(f"{key}.{member}")
    for op in ops:
        words = op.lower().strip("_").split("_")
        if any(w in words for w in _NOT_DRAWING) or op.startswith("_backward"):
            continue
        if "random" in words or "sample" in words or op in ("Dropout", "_shuffle"):
            out.add(op)
    return sorted(out)


def facts() -> dict[str, Any]:
    """Everything the rules know about MXNet's API, read from the installed MXNet."""
    import mxnet as mx

    names = {key: _public(_resolve(mx, path)) for key, path in NAMESPACES.items()}
    signatures: dict[str, dict[str, Any]] = {}
    takes_ctx: list[str] = []
    functions: dict[str, list[str]] = {}
    for key, path in NAMESPACES.items():
        module = _resolve(mx, path)
        for member in names[key]:
            value = getattr(module, member)
            if not inspect.isfunction(value):
                continue
            functions.setdefault(key, []).append(member)
            sig = _signature(value, key)
            if sig is None:
                continue
            signatures[f"{key}.{member}"] = sig
            if "ctx" in sig["params"] or "device" in sig["params"]:
                takes_ctx.append(f"{key}.{member}")
    # A keyword is judged only where MXNet was seen to reject unknown ones (the symbolic twin
    # of an `nd` function builds the same operator).
    for key, sig in signatures.items():
        if not sig["open"]:
            continue
        namespace, _, member = key.rpartition(".")
        twin = "sym" + namespace[2:] if namespace.startswith("nd") else namespace
        func = getattr(_resolve(mx, NAMESPACES[twin]), member, None) if twin in NAMESPACES else None
        accepted = _accepted_keywords(mx, func) if func is not None else None
        sig["open"] = accepted is None
        sig["operator_params"] = sorted(set(accepted or ()) - set(sig["params"]))
    ops = sorted(mx.operator.get_all_registered_operators())
    return {
        "mxnet": mx.__version__,
        "generator": "python -m mxlint.knowledge.generate",
        "namespaces": names,
        "members": {
            "NDArray": _members(mx.nd.NDArray),
            "Symbol": _members(mx.sym.Symbol),
            "np.ndarray": _members(mx.np.ndarray),
        },
        "signatures": signatures,
        "takes_ctx": sorted(takes_ctx),
        "draws": _draws(functions, ops),
        "broadcasts": _broadcasts(mx),
        "reshape_forms": _reshape_forms(mx),
        "symbol_nodes": _symbol_nodes(mx),
        "init_at_once": _init_at_once(mx),
    }


def data_path(version: str) -> Path:
    return Path(__file__).resolve().parent.parent / "data" / f"mxnet_api_{version}.json"


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mxlint.knowledge.generate", description=__doc__
    )
    parser.add_argument(
        "--check", action="store_true", help="compare with the committed file; exit 1 if it differs"
    )
    args = parser.parse_args(argv)
    data = facts()
    path = data_path(data["mxnet"])
    text = render(data)
    if args.check:
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            print(f"{path.name} differs from MXNet {data['mxnet']}: regenerate it", file=sys.stderr)
            return 1
        print(f"{path.name} matches MXNet {data['mxnet']}")
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path.name} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
