"""Block harness (runs inside the verify subprocess): hybridization and in-forward context bugs.

Construct the HybridBlock, find inputs it accepts (one candidate list per input), then run it
hybridized *first* — the stage where the finding expects a break, so an imperative reference
that loops forever on random weights cannot hide it — and only then the imperative reference on
the same parameters, the hybridized comparisons (plain, training mode, static_alloc/static_shape)
and the export, each stage under its own time limit. Graph breaks are never warnings in MXNet
1.x: loud ones raise, silent ones only show as imperative != hybridized outputs, output
structures or block state, or as what the trace did (observed by `observe`). A rewrite is
checked against the original's imperative results and must hybridize.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from mxlint.verify import ctxmap, observe
from mxlint.verify.harness import exception_info, load_module, trace_lines
from mxlint.verify.inputs import Input, candidates, describe, signature
from mxlint.verify.stages import StageTimeout, time_limit

RTOL, ATOL = 1e-4, 1e-5
#: Seconds for one stage (a hybridized call, the imperative reference, a comparison).
STAGE_LIMIT = 10.0
#: Seconds for one probe of an input candidate.
PROBE_LIMIT = 3.0


def configure(job: dict[str, Any]) -> None:
    """Stage limits within the job's own budget (a short `--verify-timeout` shortens them)."""
    global STAGE_LIMIT, PROBE_LIMIT
    budget = float(job.get("budget") or 60.0)
    STAGE_LIMIT = min(10.0, budget / 5)
    PROBE_LIMIT = min(3.0, budget / 15)


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
        self.kwargs.update(job.get("ctor_override") or {})
        self.chosen: list[Input] | None = None

    @property
    def shapes(self) -> list[tuple[int, ...]] | None:
        """The chosen inputs' shapes (the first part of a list input)."""
        if self.chosen is None:
            return None
        return [i.shape if i.shape is not None else (i.parts or ((),))[0] for i in self.chosen]

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

    def inputs(self, ctx: mx.Context) -> list[Any]:
        assert self.chosen is not None
        rng = np.random.RandomState(0)

        def one(shape: tuple[int, ...], integer: bool, high: int) -> mx.nd.NDArray:
            if integer:
                data = rng.randint(0, high, size=shape).astype("float32")
            else:
                data = rng.uniform(-1, 1, size=shape).astype("float32")
            return mx.nd.array(data, ctx=ctx)

        out: list[Any] = []
        for i in self.chosen:
            if i.parts is not None:
                out.append([one(p, False, 0) for p in i.parts])
            else:
                out.append(one(i.shape or (), i.integer, i.high))
        return out


def n_inputs(block: gluon.Block) -> int:
    return signature(block).required


def flat(value: Any) -> list[mx.nd.NDArray]:
    if isinstance(value, mx.nd.NDArray):
        return [value]
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in flat(v)]
    if isinstance(value, dict):
        return [a for v in value.values() for a in flat(v)]
    return []


@dataclass
class Probe:
    """The input search's outcome: inputs that ran imperatively, or the run that got furthest."""

    ok: bool = False
    inputs: list[Input] | None = None
    error: str = "no candidate input shape"
    exception: dict[str, Any] | None = None
    timed_out: bool = False
    lines: list[list[Any]] = field(default_factory=list)
    tried: int = 0


def _given(spec: Spec) -> list[list[Input]]:
    out = []
    shapes = spec.job.get("input_shapes")
    if shapes:
        out.append([Input.from_json(s) for s in shapes])
    for call in spec.job.get("call_inputs") or []:
        out.append([Input.from_json(s) for s in call])
    return out


def _wanted(job: dict[str, Any]) -> set[tuple[str, int]]:
    return {(os.path.realpath(f), int(n)) for f, n in job.get("lines", [])}


def _files(job: dict[str, Any]) -> set[str]:
    return {os.path.realpath(f) for f in (job.get("trace_files") or [job["file"]])}


def probe_inputs(spec: Spec, ctx: mx.Context) -> Probe:
    """Set spec.chosen to the first inputs the block runs on imperatively (each try under
    PROBE_LIMIT); failing that, to the try that reached the most flagged lines."""
    block0 = spec.make()
    sig = signature(block0)
    wanted, files = _wanted(spec.job), _files(spec.job)
    best = Probe()
    best_score = (-1, -1)
    given = _given(spec)
    if spec.job.get("all_inputs"):
        given = [g for g in given if len(g) == len(sig.names)]
    for inputs in candidates(block0, sig, spec.kwargs, given, bool(spec.job.get("all_inputs"))):
        spec.chosen = inputs
        best.tried += 1
        timed_out, exc_info = False, None
        with trace_lines(files) as hits:
            try:
                with time_limit(PROBE_LIMIT):
                    mx.random.seed(0)
                    block = spec.make()
                    block.initialize(ctx=ctx)
                    block(*spec.inputs(ctx))
                    mx.nd.waitall()
            except StageTimeout:
                timed_out = True
            except Exception as exc:  # noqa: BLE001 - a wrong shape is expected while probing
                exc_info = exception_info(exc)
        if not timed_out and exc_info is None:
            return Probe(True, inputs, "", None, False, sorted([f, n] for f, n in hits), best.tried)
        score = (len(wanted & hits), len(hits))
        if score > best_score:
            best_score = score
            best = Probe(
                False,
                inputs,
                f"timed out after {PROBE_LIMIT:g}s"
                if timed_out
                else f"{exc_info['type']}: {exc_info['message'][:200]}",  # type: ignore[index]
                exc_info,
                timed_out,
                sorted([f, n] for f, n in hits),
                best.tried,
            )
        if timed_out:  # a loop on values: every other input would spin as long
            break
    spec.chosen = best.inputs
    return best


def find_input(spec: Spec, ctx: mx.Context) -> str | None:
    """Set spec.chosen to the first inputs the block runs on imperatively; None or the error."""
    found = probe_inputs(spec, ctx)
    if found.ok:
        return None
    spec.chosen = None
    return found.error


class Runner:
    """One block and a snapshot of its parameters, restored before every run."""

    def __init__(self, block: gluon.HybridBlock, xs: Sequence[Any], ctx: mx.Context):
        self.block, self.xs, self.ctx = block, list(xs), ctx
        self.params = block._collect_params_with_prefix()
        self.snapshot = {k: p.data(ctx).copy() for k, p in self.params.items()}
        self.structure = ""

    def restore(self) -> None:
        for k, p in self.params.items():
            p.set_data(self.snapshot[k])

    def predict(self) -> list[np.ndarray]:
        self.restore()
        mx.random.seed(1)
        value = self.block(*self.xs)
        self.structure = observe.structure(value)
        return [a.asnumpy() for a in flat(value)]

    def train(self) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
        self.restore()
        mx.random.seed(2)
        xs = [x.copy() if isinstance(x, mx.nd.NDArray) else x for x in self.xs]
        for x in xs:
            if isinstance(x, mx.nd.NDArray):
                x.attach_grad()
        with autograd.record():
            outs = flat(self.block(*xs))
            loss = sum(o.astype("float32").sum() for o in outs)
        loss.backward()
        grads = {
            k: p.grad(self.ctx).asnumpy() for k, p in self.params.items() if p.grad_req != "null"
        }
        for i, x in enumerate(xs):
            if isinstance(x, mx.nd.NDArray):
                grads[f"input{i}"] = x.grad.asnumpy()
        return [o.asnumpy() for o in outs], grads

    def step(self) -> None:
        """One training step for the benchmark (restores nothing; ends in waitall)."""
        for x in self.xs:
            if isinstance(x, mx.nd.NDArray) and x.grad is None:
                x.attach_grad()  # a block without parameters still has a graph to run
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


def _stage(
    result: dict[str, Any], name: str, fn: Callable[[], Any], limit: float | None = None
) -> Any:
    try:
        with time_limit(limit or STAGE_LIMIT):
            value = fn()
        result["stages"][name] = {"ok": True}
        return value
    except StageTimeout as exc:
        result["stages"][name] = {
            "ok": False,
            "timeout": True,
            "exception": {"type": "Timeout", "message": str(exc), "frames": []},
        }
        return None
    except Exception as exc:  # noqa: BLE001 - the exception is the evidence
        result["stages"][name] = {"ok": False, "exception": exception_info(exc)}
        return None


def device() -> mx.Context:
    return mx.gpu(0) if (ctxmap.active or mx.context.num_gpus()) else mx.cpu()


def _lines(hits: set[tuple[str, int]]) -> list[list[Any]]:
    return sorted([os.path.realpath(f), ln] for f, ln in hits)


def run(job: dict[str, Any]) -> dict[str, Any]:
    """Hybrid mode: the full comparison. Context mode: forward and backward on the device."""
    configure(job)
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
    found = probe_inputs(spec, mx.cpu())
    if found.inputs is None or (not found.ok and context_mode):
        return {"status": "no-input", "reason": f"no input shape ran imperatively ({found.error})"}
    result["input_shapes"] = describe(found.inputs)
    result["probe"] = {"ok": found.ok, "tried": found.tried, "lines": found.lines}
    if not found.ok:
        result["probe"].update(exception=found.exception, timeout=found.timed_out)
    if job.get("guessed_ctor"):
        result["guessed_ctor"] = job["guessed_ctor"]
    if job.get("ctor_override"):
        result["ctor_override"] = {k: repr(v) for k, v in job["ctor_override"].items()}
    if job.get("all_inputs"):
        result["all_inputs"] = True
    ctx = device()
    mx.random.seed(0)
    block = spec.make()
    block.initialize(ctx=ctx)
    xs = spec.inputs(ctx)
    if context_mode:
        first = _stage(result, "imperative", lambda: block(*xs))
        if first is not None:
            runner = Runner(block, xs, ctx)
            _stage(result, "imperative", runner.predict)
            _stage(result, "imperative-train", runner.train)
        return result
    files = _files(job)
    observer = observe.Observer(files)
    broke = not _first_hybridized(job, result, block, xs, observer)
    block.hybridize(active=False)
    if broke:
        from mxlint.verify import tolerant

        with contextlib.suppress(StageTimeout), time_limit(STAGE_LIMIT):
            result["tolerant"] = tolerant.trace(block, xs, files)
    if not found.ok:  # no imperative reference: only what its lines read in training mode
        with trace_lines(files) as imp_hits, observe.observing(observer):
            observer.stage = "imperative-train"
            with contextlib.suppress(Exception, StageTimeout), time_limit(PROBE_LIMIT):
                with autograd.record():
                    block(*xs)
                mx.nd.waitall()
        result["observed"] = observer.events
        return result
    result["observed"] = observer.events
    with trace_lines(files) as imp_hits, observe.observing(observer):
        observer.stage = "imperative"
        first = _stage(result, "imperative", lambda: block(*xs))
        if first is None:
            result["lines_imperative"] = _lines(imp_hits)
            return result
        runner = Runner(block, xs, ctx)
        imp_pred = _stage(result, "imperative", runner.predict)
        imp_structure = runner.structure
        observer.stage = "imperative-train"
        imp_train = _stage(result, "imperative-train", runner.train)
    result["lines_imperative"] = _lines(imp_hits)
    result["observed"] = observer.events
    if job.get("state"):
        result["state"] = state_runs(spec, ctx)
    if imp_pred is not None and not broke:
        _hybrid_stages(job, result, block, runner, imp_pred, imp_train, imp_structure)
    _variants(spec, job, result, ctx)
    if spec.rewrite_cls is not None:
        result["rewrite"] = verify_rewrite(spec, runner, imp_pred, imp_train, ctx)
    return result


def _first_hybridized(
    job: dict[str, Any],
    result: dict[str, Any],
    block: gluon.HybridBlock,
    xs: list[Any],
    observer: observe.Observer,
) -> bool:
    """The first hybridized call (its trace builds the graph): lines, printed text, events."""
    stdout = io.StringIO()
    block.hybridize()
    with (
        trace_lines(_files(job)) as hits,
        contextlib.redirect_stdout(stdout),
        observe.observing(observer),
    ):
        observer.stage = "hybridize"
        value = _stage(result, "hybridize", lambda: block(*xs))
        with contextlib.suppress(Exception):
            mx.nd.waitall()
    result["lines_hybrid"] = _lines(hits)
    result["stdout_hybrid"] = stdout.getvalue()[-2000:]
    if value is not None:
        result["structure"] = {"hybridized": observe.structure(value)}
    return bool(result["stages"]["hybridize"]["ok"])


def _hybrid_stages(
    job: dict[str, Any],
    result: dict[str, Any],
    block: gluon.HybridBlock,
    runner: Runner,
    imp_pred: list[np.ndarray],
    imp_train: tuple[list[np.ndarray], dict[str, np.ndarray]] | None,
    imp_structure: str,
) -> None:
    """Hybridized (plain, training mode, static) and export, stopping at the first break."""
    block.hybridize()
    hyb_pred = _stage(result, "hybridize", runner.predict)
    if hyb_pred is None:
        return
    result["structure"] = {"imperative": imp_structure, "hybridized": runner.structure}
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


def state_runs(spec: Spec, ctx: mx.Context) -> dict[str, Any]:
    """The block's own state after the same calls (two predictions, one recorded training
    forward) on fresh blocks, imperatively and hybridized."""
    out: dict[str, Any] = {}
    for mode in ("imperative", "hybridized"):
        mx.random.seed(0)
        block = spec.make()
        block.initialize(ctx=ctx)
        if mode == "hybridized":
            block.hybridize()
        xs = spec.inputs(ctx)
        error = None
        try:
            with time_limit(STAGE_LIMIT):
                block(*xs)
                block(*xs)
                with autograd.record():
                    block(*xs)
                mx.nd.waitall()
        except StageTimeout as exc:
            error = {"type": "Timeout", "message": str(exc), "frames": []}
        except Exception as exc:  # noqa: BLE001 - the state so far is still compared
            error = exception_info(exc)
        out[mode] = {"state": observe.state(block), "error": error}
    return out


def _bool_parameters(cls: type) -> list[tuple[str, bool]]:
    try:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]  # type: ignore[misc]
    except (TypeError, ValueError):
        return []
    return [(p.name, p.default) for p in params if isinstance(p.default, bool)]


def _variants(spec: Spec, job: dict[str, Any], result: dict[str, Any], ctx: mx.Context) -> None:
    """Flagged lines no run reached: constructor flags (booleans with a default, one at a
    time flipped) under which an imperative call reaches them."""
    wanted = _wanted(job)
    ran = {(f, n) for key in ("lines_imperative", "lines_hybrid") for f, n in result.get(key, [])}
    never = wanted - ran
    if not never or job.get("ctor_override") is not None or job.get("all_inputs"):
        return
    found: list[dict[str, Any]] = []
    for name, default in _bool_parameters(spec.cls):
        if name in spec.kwargs:
            continue
        kwargs = dict(spec.kwargs, **{name: not default})
        with trace_lines(_files(job)) as hits:
            try:
                with time_limit(PROBE_LIMIT):
                    mx.random.seed(0)
                    block = spec.cls(*spec.args, **kwargs)
                    block.initialize(ctx=ctx)
                    block(*spec.inputs(ctx))
                    mx.nd.waitall()
            except (Exception, StageTimeout):  # noqa: BLE001 - reaching the line is enough
                pass
        reached = sorted(n for f, n in never & hits)
        if reached:
            found.append({"kwargs": {name: not default}, "reaches": reached})
    sig = signature(spec.make())
    if len(sig.names) > sig.required and not job.get("all_inputs"):
        trial = Spec.__new__(Spec)
        trial.__dict__.update(spec.__dict__)
        trial.job = dict(job, all_inputs=True)
        found_all = probe_inputs(trial, ctx)
        reached = sorted(n for f, n in never & {(f, n) for f, n in found_all.lines})
        if reached:
            found.append({"all_inputs": True, "reaches": reached})
    result["variants"] = found


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
        with time_limit(STAGE_LIMIT):
            rewrite = build_rewrite(spec, original, ctx)
    except (Exception, StageTimeout) as exc:  # noqa: BLE001
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
            with time_limit(STAGE_LIMIT):
                pred = rewrite.predict()
                outs, grads = rewrite.train()
        except (Exception, StageTimeout) as exc:  # noqa: BLE001
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
