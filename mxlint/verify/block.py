"""Block harness (runs inside the verify subprocess): hybridization and in-forward context bugs.

Construct the HybridBlock, find an input it accepts, then run it imperatively, hybridized (plain
and static_alloc/static_shape) on the same parameters and input, and export it. Graph breaks are
never warnings in MXNet 1.x: loud ones raise, silent ones only show as imperative != hybridized
outputs or gradients, so both are compared. A rewrite is checked against the original's
imperative results and must hybridize.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from mxlint.verify import ctxmap
from mxlint.verify.harness import exception_info, load_module, trace_lines

RTOL, ATOL = 1e-4, 1e-5
#: Input shapes tried (in order) when neither config nor the first layer declares one.
LADDER: tuple[tuple[int, ...], ...] = (
    (2, 8),
    (2, 3, 16, 16),
    (2, 16),
    (2, 1, 28, 28),
    (2, 3, 32, 32),
    (2, 4, 8),
    (2, 10),
    (5, 2, 8),
    (2, 32),
    (2, 3, 8, 8),
    (2, 64),
    (2, 8, 16),
    (2, 784),
)


def guess_arguments(cls: type) -> dict[str, Any]:
    """Small values for required constructor parameters, by their names (no default, no
    instantiation in the project, nothing in config)."""
    out: dict[str, Any] = {}
    init = cls.__init__  # type: ignore[misc]
    for p in list(inspect.signature(init).parameters.values())[1:]:
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) or p.default is not p.empty:
            continue
        name = p.name.lower()
        if any(k in name for k in ("dropout", "rate", "prob", "eps", "momentum")):
            out[p.name] = 0.0
        elif name.startswith(("use_", "with_", "is_", "has_")):
            out[p.name] = False
        elif "layers" in name or "depth" in name or "num_layer" in name:
            out[p.name] = 1
        elif "vocab" in name or "input_dim" in name:
            out[p.name] = 20
        elif "kernel" in name:
            out[p.name] = 3
        elif "stride" in name or "dilation" in name:
            out[p.name] = 1
        elif "padding" in name:
            out[p.name] = 0
        else:
            out[p.name] = 8
    return out


class Spec:
    """How to build the block and its inputs, shared by the verification and the benchmark."""

    def __init__(self, job: dict[str, Any]) -> None:
        self.job = job
        mod = load_module(job["file"], job["module"], job["roots"], source=job.get("source"))
        self.cls = getattr(mod, job["class"])
        self.rewrite_cls: Any = None
        if job.get("rewrite_source"):
            rmod = load_module(
                job["file"],
                job["module"],
                job["roots"],
                source=job["rewrite_source"],
                alias=job["module"] + "__rewrite",
            )
            self.rewrite_cls = getattr(rmod, job["class"])
        ctor = job.get("ctor") or {}
        self.args = list(ctor.get("args", []))
        self.kwargs = dict(ctor.get("kwargs", {}))
        self.shapes: list[tuple[int, ...]] | None = None
        self.integer = False

    def make(self, rewrite: bool = False) -> gluon.HybridBlock:
        cls = self.rewrite_cls if rewrite else self.cls
        assert cls is not None
        try:
            return cls(*self.args, **self.kwargs)
        except TypeError:
            if self.args or self.kwargs or self.job.get("ctor"):
                raise
            filled = guess_arguments(cls)
            if not filled:
                raise
            block = cls(**filled)
            self.kwargs = filled  # the rewrite and the benchmark build the same block
            self.job["guessed_ctor"] = filled
            return block

    def inputs(self, ctx: mx.Context) -> list[mx.nd.NDArray]:
        assert self.shapes is not None
        rng = np.random.RandomState(0)
        out = []
        for shape in self.shapes:
            if self.integer:
                data = rng.randint(0, 5, size=shape).astype("float32")
            else:
                data = rng.uniform(-1, 1, size=shape).astype("float32")
            out.append(mx.nd.array(data, ctx=ctx))
        return out


def n_inputs(block: gluon.Block) -> int:
    method = type(block).hybrid_forward if isinstance(block, gluon.HybridBlock) else None
    skip = 2
    if method is None or method is gluon.HybridBlock.hybrid_forward:
        method, skip = type(block).forward, 1
    params = list(inspect.signature(method).parameters.values())[skip:]
    own = set(getattr(block, "_reg_params", {}))
    return max(
        1,
        sum(
            1
            for p in params
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            and p.default is p.empty
            and p.name not in own
        ),
    )


def _first_leaf(block: gluon.Block) -> gluon.Block | None:
    children = list(block._children.values())
    if not children:
        return block if block._reg_params else None
    for child in children:
        leaf = _first_leaf(child)
        if leaf is not None:
            return leaf
    return None


def candidate_shapes(block: gluon.Block) -> tuple[list[tuple[int, ...]], bool]:
    """Shapes from the first layer's declared input size, then the probe ladder."""
    leaf = _first_leaf(block)
    first: list[tuple[int, ...]] = []
    integer = False
    if leaf is not None:
        name = type(leaf).__name__
        weight = leaf._reg_params.get("weight")
        shape = tuple(weight.shape) if weight is not None and weight.shape else ()
        if name == "Embedding":
            integer = True
            first = [(2, 6), (6, 2)]
        elif name == "Dense" and len(shape) == 2 and shape[1]:
            first = [(2, shape[1])]
        elif name.startswith("Conv") and len(shape) >= 3 and shape[1]:
            first = [(2, shape[1]) + (16,) * (len(shape) - 2)]
        elif name in ("LSTM", "GRU", "RNN"):
            size = getattr(leaf, "_input_size", 0) or 8
            first = [(5, 2, size), (2, 5, size)]
    return first + [s for s in LADDER if s not in first], integer


def flat(value: Any) -> list[mx.nd.NDArray]:
    if isinstance(value, mx.nd.NDArray):
        return [value]
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in flat(v)]
    return []


def find_input(spec: Spec, ctx: mx.Context) -> str | None:
    """Set spec.shapes to the first input the block runs on imperatively; None or the error."""
    probe = spec.make()
    n = n_inputs(probe)
    given = spec.job.get("input_shapes")
    candidates, spec.integer = candidate_shapes(probe)
    options = [[tuple(s) for s in given]] if given else [[c] * n for c in candidates]
    last = "no candidate input shape"
    for shapes in options:
        spec.shapes = shapes
        try:
            mx.random.seed(0)
            block = spec.make()
            block.initialize(ctx=ctx)
            block(*spec.inputs(ctx))
            mx.nd.waitall()
            return None
        except Exception as exc:  # noqa: BLE001 - a wrong shape is expected while probing
            last = f"{type(exc).__name__}: {exception_info(exc)['message'][:200]}"
    spec.shapes = None
    return last


class Runner:
    """One block and a snapshot of its parameters, restored before every run."""

    def __init__(self, block: gluon.HybridBlock, xs: Sequence[mx.nd.NDArray], ctx: mx.Context):
        self.block, self.xs, self.ctx = block, list(xs), ctx
        self.params = block._collect_params_with_prefix()
        self.snapshot = {k: p.data(ctx).copy() for k, p in self.params.items()}

    def restore(self) -> None:
        for k, p in self.params.items():
            p.set_data(self.snapshot[k])

    def predict(self) -> list[np.ndarray]:
        self.restore()
        mx.random.seed(1)
        out = [a.asnumpy() for a in flat(self.block(*self.xs))]
        return out

    def train(self) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
        self.restore()
        mx.random.seed(2)
        xs = [x.copy() for x in self.xs]
        for x in xs:
            x.attach_grad()
        with autograd.record():
            outs = flat(self.block(*xs))
            loss = sum(o.astype("float32").sum() for o in outs)
        loss.backward()
        grads = {
            k: p.grad(self.ctx).asnumpy() for k, p in self.params.items() if p.grad_req != "null"
        }
        for i, x in enumerate(xs):
            grads[f"input{i}"] = x.grad.asnumpy()
        return [o.asnumpy() for o in outs], grads

    def step(self) -> None:
        """One training step for the benchmark (restores nothing; ends in waitall)."""
        with autograd.record():
            loss = sum(o.sum() for o in flat(self.block(*self.xs)))
        loss.backward()
        mx.nd.waitall()


def compare(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> str | None:
    """None when equal within tolerance, else what differs."""
    if len(a) != len(b):
        return f"{len(a)} outputs vs {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
        if x.shape != y.shape:
            return f"output {i} has shape {x.shape} imperatively but {y.shape} hybridized"
        if not np.allclose(x, y, rtol=RTOL, atol=ATOL, equal_nan=True):
            diff = float(np.nanmax(np.abs(x.astype("float64") - y.astype("float64"))))
            return f"output {i} differs (max abs diff {diff:.3g})"
    return None


def compare_grads(
    a: dict[str, np.ndarray], b: dict[str, np.ndarray], rename: Callable[[str], str] = str
) -> str | None:
    for key, x in a.items():
        y = b.get(rename(key))
        if y is None:
            return f"gradient {key} missing"
        if x.shape != y.shape or not np.allclose(x, y, rtol=RTOL, atol=ATOL, equal_nan=True):
            return f"gradient of {key} differs"
    return None


def _stage(result: dict[str, Any], name: str, fn: Callable[[], Any]) -> Any:
    try:
        value = fn()
        result["stages"][name] = {"ok": True}
        return value
    except Exception as exc:  # noqa: BLE001 - the exception is the evidence
        result["stages"][name] = {"ok": False, "exception": exception_info(exc)}
        return None


def device() -> mx.Context:
    return mx.gpu(0) if (ctxmap.active or mx.context.num_gpus()) else mx.cpu()


def run(job: dict[str, Any]) -> dict[str, Any]:
    """Hybrid mode: the full comparison. Context mode: forward and backward on the device."""
    spec = Spec(job)
    result: dict[str, Any] = {"status": "ok", "stages": {}, "compare": {}}
    probe = spec.make()
    context_mode = job.get("mode") == "context"
    if not isinstance(probe, gluon.Block):
        return {"status": "not-hybrid", "reason": f"{job['class']} is not a Gluon Block"}
    if not context_mode and not isinstance(probe, gluon.HybridBlock):
        return {"status": "not-hybrid", "reason": f"{job['class']} is not a HybridBlock"}
    if not context_mode and type(probe).hybrid_forward is gluon.HybridBlock.hybrid_forward:
        return {
            "status": "not-hybrid",
            "reason": f"{job['class']} overrides forward(), which "
            f"MXNet {mx.__version__} never hybridizes: the MXNet 2 behaviour the finding "
            "is about cannot be reproduced here",
        }
    error = find_input(spec, mx.cpu())
    if error is not None:
        return {"status": "no-input", "reason": f"no input shape ran imperatively ({error})"}
    result["input_shapes"] = spec.shapes
    if job.get("guessed_ctor"):
        result["guessed_ctor"] = job["guessed_ctor"]
    ctx = device()
    mx.random.seed(0)
    block = spec.make()
    block.initialize(ctx=ctx)
    xs = spec.inputs(ctx)
    first = _stage(result, "imperative", lambda: block(*xs))
    if first is None:
        return result
    runner = Runner(block, xs, ctx)
    imp_pred = _stage(result, "imperative", runner.predict)
    imp_train = _stage(result, "imperative-train", runner.train)
    if imp_pred is None or context_mode:
        return result
    _hybrid_stages(job, result, block, runner, imp_pred, imp_train)
    if not result["stages"].get("hybridize", {}).get("ok", True):
        from mxlint.verify import tolerant

        result["tolerant"] = tolerant.trace(block, xs, {job["file"]})
    if spec.rewrite_cls is not None:
        result["rewrite"] = verify_rewrite(spec, runner, imp_pred, imp_train, ctx)
    return result


def _hybrid_stages(
    job: dict[str, Any],
    result: dict[str, Any],
    block: gluon.HybridBlock,
    runner: Runner,
    imp_pred: list[np.ndarray],
    imp_train: tuple[list[np.ndarray], dict[str, np.ndarray]] | None,
) -> None:
    """Hybridized (plain, training mode, static) and export, stopping at the first break."""
    stdout = io.StringIO()
    trace_files = set(job.get("trace_files", [job["file"]]))
    block.hybridize()
    with trace_lines(trace_files) as hits, contextlib.redirect_stdout(stdout):
        hyb_pred = _stage(result, "hybridize", runner.predict)
    result["lines_hybrid"] = sorted([os.path.realpath(f), ln] for f, ln in hits)
    result["stdout_hybrid"] = stdout.getvalue()[-2000:]
    if hyb_pred is None:
        return
    result["compare"]["hybridize"] = compare(imp_pred, hyb_pred)
    if imp_train is not None:
        hyb_train = _stage(result, "hybridize-train", runner.train)
        if hyb_train is not None:
            result["compare"]["hybridize-train"] = compare(
                imp_train[0], hyb_train[0]
            ) or compare_grads(imp_train[1], hyb_train[1])
    block.hybridize(static_alloc=True, static_shape=True)
    st_pred = _stage(result, "static", runner.predict)
    if st_pred is not None:
        result["compare"]["static"] = compare(imp_pred, st_pred)
    with tempfile.TemporaryDirectory() as tmp:
        _stage(result, "export", lambda: block.export(os.path.join(tmp, "net")))


def build_rewrite(spec: Spec, original: Runner, ctx: mx.Context) -> Runner:
    """The rewritten block with the original's parameters (matched by structural name)."""
    block = spec.make(rewrite=True)
    block.initialize(ctx=ctx)
    block(*original.xs)
    params = block._collect_params_with_prefix()
    if set(params) != set(original.params):
        raise ValueError(
            "the rewrite changes the block's parameters: "
            f"{sorted(set(params) ^ set(original.params))[:4]}"
        )
    for k, p in params.items():
        p.set_data(original.snapshot[k])
    return Runner(block, original.xs, ctx)


def verify_rewrite(
    spec: Spec,
    original: Runner,
    imp_pred: list[np.ndarray] | None,
    imp_train: tuple[list[np.ndarray], dict[str, np.ndarray]] | None,
    ctx: mx.Context,
) -> dict[str, Any]:
    try:
        rewrite = build_rewrite(spec, original, ctx)
    except Exception as exc:  # noqa: BLE001
        return {
            "verified": False,
            "evidence": "the rewrite does not run: "
            f"{exception_info(exc)['type']}: {exception_info(exc)['message'][:300]}",
        }
    if imp_pred is None or imp_train is None:
        return {"verified": None, "evidence": "the original has no imperative result to match"}
    steps: list[str] = []
    for flags in ({}, {"static_alloc": True, "static_shape": True}):
        rewrite.block.hybridize(**flags)
        label = "hybridized" + (" (static_alloc)" if flags else "")
        try:
            pred = rewrite.predict()
            outs, grads = rewrite.train()
        except Exception as exc:  # noqa: BLE001
            info = exception_info(exc)
            return {
                "verified": False,
                "evidence": f"the rewrite fails {label}: {info['type']}: {info['message'][:300]}",
                "frames": info["frames"],
            }
        diff = (
            compare(imp_pred, pred)
            or compare(imp_train[0], outs)
            or compare_grads(imp_train[1], grads)
        )
        if diff:
            return {"verified": False, "evidence": f"the rewrite changes results {label}: {diff}"}
        steps.append(label)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            rewrite.block.export(os.path.join(tmp, "net"))
        except Exception as exc:  # noqa: BLE001
            return {"verified": False, "evidence": f"the rewrite does not export: {exc}"}
    return {
        "verified": True,
        "evidence": "outputs and gradients equal to the original's "
        f"imperative run; {' and '.join(steps)}; exports",
    }
