"""Write what MXNet's ONNX exporter converts, from the exporter itself:
`python -m mxlint.knowledge.generate_onnx [--check]`.

MXNet 1.9.1's exporter (`mx.onnx.export_model`) turns each node of a symbol graph into ONNX
through a converter registered per operator name and opset (`MXNetGraph.register(op, opset)` in
`mxnet/onnx/mx2onnx/_export_onnx.py`); a node whose operator has no converter for the opset in
use raises `AttributeError: No conversion function registered for op type X yet.` This generator
imports MXNet and onnx (the registry is only filled when onnx imports) and writes
`mxlint/data/mxnet_onnx_<version>.json`:

- `converters`: opset -> the operator names registered for it;
- `functions`: how each `F.`/`nd.`/`sym.` spelling of a generated operator function
  (`concat`, `contrib.box_nms`) names the operator a graph node records (`Concat`,
  `_contrib_box_nms`: aliases resolve to the registered name), and, observed by building them
  on symbols, which operators the Python functions of the namespaces emit (`split_v2`,
  `contrib.foreach`);
- `dynamic`: operators whose output shape MXNet cannot infer from input shapes
  (`boolean_mask`), and the control-flow operators whose node holds subgraphs (`_foreach`,
  `_while_loop`, `_cond`), both observed;
- `layers`: the operators each Gluon layer emits when called on a symbol;
- `export_model`: the exporter's parameters, in order, with their defaults.

`--check` compares the committed file with the installed MXNet and onnx and exits 1 on any
difference.
"""

from __future__ import annotations

import argparse
import ctypes
import inspect
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mxlint.knowledge.generate import _quiet, render

#: The namespaces whose functions `hybrid_forward` spells `F.<key>.<name>` (keys as rules use
#: them after `F.`, `mx.nd.` or `mx.sym.`), and the operator-name prefixes MXNet files them
#: under (`_contrib_box_nms` is `contrib.box_nms`).
SUBMODULES = ("contrib", "linalg", "random", "image", "sparse")

#: Gluon modules whose HybridBlock layers are built and traced.
LAYER_MODULES = (
    "gluon.nn",
    "gluon.rnn",
    "gluon.contrib.nn",
    "gluon.contrib.cnn",
)

#: The control-flow functions and how to build each on a symbol: their operators hold the loop
#: or branch bodies as subgraphs.
CONTROL_FLOW: dict[str, Callable[[Any, Any], Any]] = {
    "contrib.foreach": lambda mx, x: mx.sym.contrib.foreach(
        lambda d, s: (d * 2, s), x, [mx.sym.var("s")]
    )[0],
    "contrib.while_loop": lambda mx, x: mx.sym.contrib.while_loop(
        lambda i: i < 3, lambda i: (i, [i + 1]), [x], max_iterations=4
    )[0],
    "contrib.cond": lambda mx, x: mx.sym.contrib.cond(
        mx.sym.var("p"), lambda: x + 1, lambda: x - 1
    ),
}


def _registry() -> dict[int, list[str]]:
    """The exporter's converter registry, per opset (filled by importing the translations)."""
    import onnx  # noqa: F401 - the registry stays empty without it
    from mxnet.onnx.mx2onnx import _op_translations  # noqa: F401 - registers the converters
    from mxnet.onnx.mx2onnx._export_onnx import MXNetGraph

    return {int(opset): sorted(ops) for opset, ops in MXNetGraph.registry_.items()}


def _op_names() -> list[str]:
    """Every operator name MXNet registers, aliases included (the C API's list)."""
    from mxnet.base import _LIB, check_call, py_str

    plist = ctypes.POINTER(ctypes.c_char_p)()
    size = ctypes.c_uint()
    check_call(_LIB.MXListAllOpNames(ctypes.byref(size), ctypes.byref(plist)))
    return [py_str(plist[i]) for i in range(size.value)]


def _real_name(name: str) -> str:
    """The name a graph node records for an operator or alias (`concat` -> `Concat`): aliases
    share one operator, whose own name `MXSymbolGetAtomicSymbolInfo` returns."""
    from mxnet.base import _LIB, OpHandle, c_str, check_call, mx_uint, py_str

    handle = OpHandle()
    check_call(_LIB.NNGetOpHandle(c_str(name), ctypes.byref(handle)))
    real, desc, key_var, ret = (ctypes.c_char_p() for _ in range(4))
    num = mx_uint()
    names, types, descs = (ctypes.POINTER(ctypes.c_char_p)() for _ in range(3))
    check_call(
        _LIB.MXSymbolGetAtomicSymbolInfo(
            handle,
            ctypes.byref(real),
            ctypes.byref(desc),
            ctypes.byref(num),
            ctypes.byref(names),
            ctypes.byref(types),
            ctypes.byref(descs),
            ctypes.byref(key_var),
            ctypes.byref(ret),
        )
    )
    return str(py_str(real.value))


def _node_ops(sym: Any) -> list[str]:
    return [n["op"] for n in json.loads(sym.tojson())["nodes"] if n["op"] != "null"]


def _generated(func: Any) -> bool:
    """An operator function MXNet generated from the registry (its code has no source file)."""
    code = getattr(func, "__code__", None)
    return code is not None and code.co_filename == "<string>"


def _spelling(op: str) -> str | None:
    """Where `mx.sym` files an operator's function, as `F.` spells it (None: `_internal`)."""
    for sub in SUBMODULES:
        prefix = f"_{sub}_"
        if op.startswith(prefix):
            if sub == "random" and not op.endswith("_like"):
                return None  # `_random_uniform` lives in `_internal`
            return f"{sub}.{op[len(prefix) :]}"
    return None if op.startswith("_") else op


def _functions(mx: Any) -> dict[str, list[str]]:
    """F.-spelling -> the operators a call builds: generated functions by their registry name,
    the control-flow functions by building them (what the namespaces' other Python functions
    build depends on their arguments: `random.uniform(0, 1)` builds `_random_uniform`, with
    arrays `_sample_uniform`)."""
    out: dict[str, list[str]] = {}
    for name in _op_names():
        key = _spelling(name)
        if key is None:
            continue
        sub, _, member = key.rpartition(".")
        module = getattr(mx.sym, sub) if sub else mx.sym
        if _generated(getattr(module, member, None)):
            out[key] = [_real_name(name)]
    for sub in ("", *SUBMODULES):
        module = getattr(mx.sym, sub) if sub else mx.sym
        for member in sorted(dir(module)):
            key = f"{sub}.{member}" if sub else member
            func = getattr(module, member)
            if member.startswith("_") or key in out or not inspect.isfunction(func):
                continue
            if key not in CONTROL_FLOW:
                continue  # what other Python functions build depends on their arguments
            ops = _probe(mx, func, key)
            if ops:
                out[key] = ops
    return dict(sorted(out.items()))


def _probe(mx: Any, func: Any, key: str) -> list[str]:
    """The operators a control-flow function emits, built on a symbol."""
    with _quiet():
        return sorted(set(_node_ops(CONTROL_FLOW[key](mx, mx.sym.var("x")))))


def _dynamic(mx: Any, functions: dict[str, list[str]], converted: set[str]) -> dict[str, str]:
    """Operators without a converter whose graph cannot have static shapes: control flow (the
    node holds subgraphs) and operators whose output shape depends on their input's values."""
    out: dict[str, str] = {}
    for key, build in CONTROL_FLOW.items():
        with _quiet():
            nodes = json.loads(build(mx, mx.sym.var("x")).tojson())["nodes"]
        for node in nodes:
            if node.get("subgraphs"):
                out[node["op"]] = "control-flow"
        assert functions.get(key), key
    keys = [
        k
        for k in sorted(functions)
        if len(functions[k]) == 1 and functions[k][0] not in out.keys() | converted
    ]
    for key in _unknown_shapes(keys):
        out[functions[key][0]] = "data-dependent-shape"
    return dict(sorted(out.items()))


#: Runs `nd.<key>` on one or two arrays (as many as the operator has tensor inputs) twice,
#: with the same shapes and different values (the last input all ones, then alternating ones
#: and zeros), and prints the keys whose output shape differs between the runs; "done <key>"
#: after each key, so that a crash (some sparse-only operators abort on dense input) loses one
#: key only.
_SHAPE_PROBE = """
import sys, mxnet as mx
for key in sys.stdin.read().split():
    sub, _, member = key.rpartition(".")
    func = getattr(getattr(mx.nd, sub) if sub else mx.nd, member)
    try:
        op = "_%s_%s" % (sub, member) if sub else member
        types = mx.operator.get_operator_arguments(op).types
        n = sum(t.startswith("NDArray-or-Symbol") and "[]" not in t for t in types)
        if n in (1, 2):
            shapes = [(4, 4), (4,)][2 - n:] if n == 2 else [(4, 4)]
            first = [mx.nd.ones(s) for s in shapes]
            second = first[:-1] + [(mx.nd.arange(first[-1].size) % 2).reshape(shapes[-1])]
            a, b = func(*first), func(*second)
            a = a if isinstance(a, (list, tuple)) else [a]
            b = b if isinstance(b, (list, tuple)) else [b]
            if [x.shape for x in a] != [x.shape for x in b]:
                print("unknown", key, flush=True)
    except Exception:
        pass
    print("done", key, flush=True)
"""


def _unknown_shapes(keys: list[str]) -> list[str]:
    """The keys whose operator leaves its output shape unknown, probed in child processes."""
    import subprocess

    found: list[str] = []
    pending = list(keys)
    while pending:
        run = subprocess.run(
            [sys.executable, "-c", _SHAPE_PROBE],
            input=" ".join(pending),
            capture_output=True,
            text=True,
            timeout=600,
        )
        done: set[str] = set()
        for line in run.stdout.splitlines():
            word, _, key = line.partition(" ")
            if word == "unknown":
                found.append(key)
            elif word == "done":
                done.add(key)
        rest = [k for k in pending if k not in done]
        pending = rest[1:] if run.returncode != 0 and rest else []  # skip the one that crashed
    return sorted(found)


def _guess(cls: type, variant: int) -> dict[str, Any]:
    """Small values for a layer's required constructor parameters (two sets of them)."""
    out: dict[str, Any] = {}
    for p in list(inspect.signature(cls.__init__).parameters.values())[1:]:  # type: ignore[misc]
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) or p.default is not p.empty:
            continue
        name = p.name.lower()
        if "rate" in name or "prob" in name:
            out[p.name] = (0.5, 0.0)[variant]
        elif "kernel" in name:
            out[p.name] = (3, 1)[variant]
        elif name in ("function",) or "act" in name:
            out[p.name] = "relu"
        else:
            out[p.name] = (4, 2)[variant]
    return out


def _layers(mx: Any) -> dict[str, list[str]]:
    """`mxnet.gluon.<module>.<Layer>` -> the operators it emits on a symbol input whatever
    its required constructor arguments are (those seen with both sets of `_guess`)."""
    from mxnet import gluon

    skip = (gluon.nn.HybridSequential, gluon.SymbolBlock, gluon.nn.HybridLambda)
    out: dict[str, list[str]] = {}
    for path in LAYER_MODULES:
        module: Any = mx
        for part in path.split("."):
            module = getattr(module, part)
        for name in sorted(dir(module)):
            cls = getattr(module, name)
            if (
                name.startswith("_")
                or not isinstance(cls, type)
                or not issubclass(cls, gluon.HybridBlock)
                or cls is gluon.HybridBlock
                or issubclass(cls, skip)
                or inspect.isabstract(cls)
            ):
                continue
            seen: list[set[str]] = []
            for variant in (0, 1):
                try:
                    with _quiet():
                        sym = cls(**_guess(cls, variant))(mx.sym.var("data"))
                except Exception:
                    break
                if not isinstance(sym, mx.sym.Symbol):
                    break
                seen.append(set(_node_ops(sym)))
            if len(seen) == 2 and seen[0] & seen[1]:
                out[f"mxnet.{path}.{name}"] = sorted(seen[0] & seen[1])
    return out


def _export_signature(mx: Any) -> dict[str, Any]:
    sig = inspect.signature(mx.onnx.export_model)
    params = list(sig.parameters.values())
    return {
        "params": [p.name for p in params],
        "defaults": {
            p.name: (p.default if isinstance(p.default, (bool, int, str, type(None))) else None)
            for p in params
            if p.default is not p.empty
        },
    }


def facts() -> dict[str, Any]:
    import mxnet as mx
    import onnx

    converters = _registry()
    functions = _functions(mx)
    return {
        "mxnet": mx.__version__,
        "onnx": onnx.__version__,
        "generator": "python -m mxlint.knowledge.generate_onnx",
        "converters": {str(k): v for k, v in sorted(converters.items())},
        "functions": functions,
        "dynamic": _dynamic(mx, functions, {op for ops in converters.values() for op in ops}),
        "layers": _layers(mx),
        "export_model": _export_signature(mx),
    }


def data_path(version: str) -> Path:
    return Path(__file__).resolve().parent.parent / "data" / f"mxnet_onnx_{version}.json"


def _comparable(data: dict[str, Any]) -> dict[str, Any]:
    """What must match: the onnx release that filled the registry is recorded, not compared
    (every onnx the exporter supports fills the same registry)."""
    return {k: v for k, v in data.items() if k != "onnx"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mxlint.knowledge.generate_onnx", description=__doc__
    )
    parser.add_argument(
        "--check", action="store_true", help="compare with the committed file; exit 1 if it differs"
    )
    args = parser.parse_args(argv)
    data = facts()
    path = data_path(data["mxnet"])
    if args.check:
        committed = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        if _comparable(committed) != _comparable(json.loads(render(data))):
            print(f"{path.name} differs from MXNet {data['mxnet']}: regenerate it", file=sys.stderr)
            return 1
        print(f"{path.name} matches MXNet {data['mxnet']}")
        return 0
    text = render(data)
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path.name} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
