"""Arguments for a function called without its caller (runs inside the verify subprocess).

The parameters' roles (`targets`) say what each must be; a *world* makes them consistent with
each other: a network whose input the batches fit and whose output the labels and the loss fit,
a loader of synthetic batches, a Trainer over the network's parameters, contexts (emulated GPUs
on a CPU host, as everywhere in verify). The network is the one the function itself uses when it
has one (`self.net`, a module-level network), else a small stand-in laid out like the Gluon model
zoo (`features`, `output`). The data's shape comes from that network's first layer; the labels'
from its output and the loss. Worlds are tried in order until one runs the flagged lines.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from mxlint.verify.inputs import first_input

BATCH = 4
BATCHES = 12


@dataclass(frozen=True)
class Variant:
    """One world: the batch's shape (batch axis included) and what the labels are."""

    data: tuple[int, ...]
    labels: str  # "class" | "regress"
    integer: bool = False
    #: The stand-in network does real work per step (timing: the engine must have some).
    heavy: bool = False

    def describe(self) -> str:
        return f"batches {list(self.data)}{' int' if self.integer else ''}, {self.labels} labels"


#: For timing findings: a batch and a stand-in network with enough work per step that an
#: asynchronous engine has something queued (as a real model on a GPU does).
HEAVY = Variant((16, 3, 32, 32), "class", heavy=True)


STANDARD = (
    Variant((BATCH, 8), "class"),
    Variant((BATCH, 8), "regress"),
    Variant((BATCH, 3, 16, 16), "class"),
    Variant((BATCH, 3, 16, 16), "regress"),
    Variant((BATCH, 5, 8), "class"),
)


class ZooNet(gluon.HybridBlock):
    """A small stand-in network laid out like the Gluon model zoo: `features`, then `output`."""

    def __init__(self, image: bool, outputs: int, heavy: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = gluon.nn.HybridSequential()
            if image:
                if heavy:
                    self.features.add(gluon.nn.Conv2D(32, 3, padding=1, activation="relu"))
                self.features.add(
                    gluon.nn.Conv2D(32 if heavy else 8, 3, padding=1, activation="relu"),
                    gluon.nn.GlobalAvgPool2D(),
                    gluon.nn.Flatten(),
                )
            else:
                self.features.add(gluon.nn.Dense(16, activation="relu"))
            self.output = gluon.nn.Dense(outputs)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self.output(self.features(x))


class Loader:
    """Synthetic batches on the host, as a DataLoader yields them (re-iterable, sized)."""

    def __init__(self, batches: list[tuple[Any, ...]], on_batch: Any, exhausted: Any) -> None:
        self.batches = batches
        self.on_batch, self.exhausted = on_batch, exhausted

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Iterator[Any]:
        for batch in self.batches:
            if self.exhausted():
                return
            self.on_batch(batch)
            yield batch


class BatchIter(mx.io.DataIter):
    """Synthetic `mx.io.DataBatch`es (`batch.data[0]`, `batch.label[0]`, `reset()`)."""

    def __init__(self, batches: list[tuple[Any, ...]]) -> None:
        super().__init__(batch_size=int(batches[0][0].shape[0]))
        self.batches, self.cursor = batches, 0

    def reset(self) -> None:
        self.cursor = 0

    @property
    def provide_data(self) -> list[Any]:
        return [mx.io.DataDesc("data", self.batches[0][0].shape)]

    @property
    def provide_label(self) -> list[Any]:
        return [mx.io.DataDesc("softmax_label", self.batches[0][1].shape)]

    def next(self) -> Any:
        if self.cursor >= len(self.batches):
            raise StopIteration
        data, label = self.batches[self.cursor][:2]
        self.cursor += 1
        return mx.io.DataBatch(data=[data], label=[label])


def contexts_of(block: gluon.Block) -> list[mx.Context]:
    for param in block.collect_params().values():
        try:
            return list(param.list_ctx())
        except Exception:  # noqa: BLE001 - not initialised: the next parameter may be
            continue
    return []


class World:
    """Everything one attempt's arguments are made of."""

    def __init__(
        self,
        variant: Variant,
        device: Any,
        nets: list[gluon.Block],
        losses: list[Any],
        probe: Any,
        layout: dict[str, Any] | None = None,
    ) -> None:
        self.variant = variant
        self.device = device
        self.devices = device if isinstance(device, (list, tuple)) else [device]
        self.probe = probe
        self.own_nets = nets
        self.known_losses = losses
        self.made: dict[str, Any] = {}
        self.notes: list[str] = []
        self._net: gluon.Block | None = None
        self.net_note = ""
        self._labels: np.ndarray | None = None
        self.layout = layout or {}

    # -- the network and the labels ---------------------------------------------------------

    def network(self) -> gluon.Block:
        """The network the batches are for: the function's own, or the stand-in."""
        if self._net is None:
            if self.own_nets:
                self._net = self.own_nets[0]
            else:
                image = len(self.variant.data) == 4
                outputs = 10 if self.variant.labels == "class" else 1
                net = ZooNet(image, outputs, self.variant.heavy)
                net.initialize(ctx=self.devices)
                # One batch through it: a network handed to a function has its parameters'
                # shapes (saving or reading them before a forward pass raises otherwise).
                sample = self.x()[: self.variant.data[0]]
                with contextlib.suppress(Exception), autograd.predict_mode():
                    net(mx.nd.array(sample, ctx=self.devices[0]))
                self._net = net
                self.net_note = (
                    f"a stand-in {'conv' if image else 'dense'} network (features, output) on "
                    f"{self._where()}"
                )
        return self._net

    def _where(self) -> str:
        from mxlint.verify import ctxmap

        return ", ".join(ctxmap.translate(str(c)) for c in self.devices)

    def x(self) -> np.ndarray:
        rng = np.random.RandomState(0)
        shape = (BATCHES * self.variant.data[0], *self.variant.data[1:])
        if self.variant.integer:
            return rng.randint(0, 5, size=shape).astype("float32")
        return rng.uniform(-1, 1, size=shape).astype("float32")

    def labels(self) -> np.ndarray:
        """Labels that fit the network's output and the loss: class indices over the last
        (or, for 4-d outputs, the channel) axis, else regression targets of its shape."""
        if self._labels is not None:
            return self._labels
        net = self.network()
        ctx = (contexts_of(net) or [mx.cpu()])[0]
        sample = mx.nd.array(self.x()[: self.variant.data[0]], ctx=ctx)
        out_shape: tuple[int, ...] | None = None
        if not contexts_of(net):  # a network the function builds itself: a shape reference
            with contextlib.suppress(Exception):
                net.initialize(ctx=ctx)
        try:
            with autograd.predict_mode():
                out = net(sample)
            first = out[0] if isinstance(out, (list, tuple)) else out
            out_shape = tuple(first.shape)
        except Exception:  # noqa: BLE001 - the labels fall back to the variant's kind
            out_shape = None
        rng = np.random.RandomState(1)
        n = BATCHES * self.variant.data[0]
        options: list[np.ndarray] = []
        if out_shape is not None and len(out_shape) >= 2:
            classes = out_shape[-1]
            by_last = rng.randint(0, max(classes, 2), size=(n, *out_shape[1:-1]))
            options.append(by_last.astype("float32"))
            if len(out_shape) == 4:
                by_channel = rng.randint(0, out_shape[1], size=(n, *out_shape[2:]))
                options.append(by_channel.astype("float32"))
            options.append(rng.uniform(-1, 1, size=(n, *out_shape[1:])).astype("float32"))
        else:
            options.append(rng.randint(0, 10, size=(n,)).astype("float32"))
            options.append(rng.uniform(-1, 1, size=(n, 1)).astype("float32"))
        if self.variant.labels == "regress":
            options = options[-1:] + options[:-1]
        chosen = options[0]
        if out_shape is not None:
            for candidate in options:
                if self._fits(out, candidate[: self.variant.data[0]], ctx):
                    chosen = candidate
                    break
        self._labels = chosen
        return chosen

    def _fits(self, out: Any, label: np.ndarray, ctx: mx.Context) -> bool:
        losses = self.known_losses or [
            gluon.loss.SoftmaxCrossEntropyLoss()
            if self.variant.labels == "class"
            else gluon.loss.L2Loss()
        ]
        try:
            losses[0](out, mx.nd.array(label, ctx=ctx))
            return True
        except Exception:  # noqa: BLE001 - this label layout does not fit
            return False

    # -- arguments by role ------------------------------------------------------------------

    def batches(self, size: int = 2) -> list[tuple[Any, ...]]:
        xs, ys = self.x(), self.labels()
        b = self.variant.data[0]
        out = []
        for i in range(BATCHES):
            parts = [mx.nd.array(xs[i * b : (i + 1) * b]), mx.nd.array(ys[i * b : (i + 1) * b])]
            while len(parts) < size:
                parts.append(mx.nd.ones((b,)))
            out.append(tuple(parts[:size]))
        return out

    def value(self, param: dict[str, Any]) -> Any:
        kind = param.get("role", "tensor")
        name = param["name"]
        if kind == "ctx":
            self.notes.append(f"{name}: {self._where().split(', ')[0]}")
            return self.devices[0]
        if kind == "ctx_list":
            self.notes.append(f"{name}: [{self._where()}]")
            return list(self.devices)
        if kind == "net":
            net = self.network()
            self.notes.append(
                f"{name}: {self.net_note or 'the project network ' + type(net).__name__}"
            )
            return net
        if kind == "loader":
            layout = param.get("batch") or {"kind": "tuple", "size": 2}
            if layout.get("kind") == "databatch":
                self.notes.append(f"{name}: a DataIter of {BATCHES} {self.variant.describe()}")
                return BatchIter(self.batches())
            size = int(layout.get("size", 2))
            self.notes.append(f"{name}: {BATCHES} {self.variant.describe()}")
            return Loader(self.batches(size), self.probe.on_batch, self.probe.exhausted)
        if kind == "dataset":
            self.notes.append(f"{name}: an ArrayDataset of {self.variant.describe()}")
            return gluon.data.ArrayDataset(self.x(), self.labels())
        if kind == "trainer":
            net = self.network()
            return gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
        if kind == "loss":
            if self.variant.labels == "class":
                return gluon.loss.SoftmaxCrossEntropyLoss()
            return gluon.loss.L2Loss()
        if kind == "metric":
            return mx.metric.Accuracy() if self.variant.labels == "class" else mx.metric.MSE()
        if kind == "namespace":
            import argparse

            values = dict(param.get("values") or {})
            for key in values:
                if key in ("ctx", "context", "device"):
                    values[key] = self.devices[0]
            shown = ", ".join(f"{k}={v!r}" for k, v in values.items())
            self.notes.append(f"{name}: Namespace({shown})")
            return argparse.Namespace(**values)
        if kind == "int":
            return int(param.get("value", 4))
        if kind == "float":
            return float(param.get("value", 1.0))
        if kind == "scalar_tensor":
            return mx.nd.array([float(param.get("value", 1.0))], ctx=self._tensor_ctx(param))
        if kind == "path":
            return "mxlint-verify-" + name
        if kind == "callable":
            return _identity
        if kind == "indices":
            return np.arange(BATCHES * self.variant.data[0])
        if kind == "string":
            return "train"
        if kind == "array":
            if LABELISH(name):
                return self.labels()
            return self.x()
        if kind == "label":
            b = self.variant.data[0]
            return mx.nd.array(self.labels()[:b], ctx=self._tensor_ctx(param))
        if kind == "parts":  # per-device slices, as split_and_load makes them (two at least)
            b = self.variant.data[0]
            source = self.labels() if LABELISH(name) else self.x()
            count = max(2, len(self.devices))
            return [
                mx.nd.array(source[i * b : (i + 1) * b], ctx=self.devices[i % len(self.devices)])
                for i in range(count)
            ]
        # a tensor: one batch
        b = self.variant.data[0]
        return mx.nd.array(self.x()[:b], ctx=self._tensor_ctx(param))

    def _tensor_ctx(self, param: dict[str, Any]) -> mx.Context:
        """Tensors the function moves itself arrive on the host; others where the network is."""
        if param.get("moved"):
            return mx.cpu()
        return (contexts_of(self.network()) or [mx.cpu()])[0]


def _identity(value: Any, *rest: Any) -> Any:
    return (value, *rest) if rest else value


def LABELISH(name: str) -> bool:  # noqa: N802 - reads as a predicate on a name
    lowered = name.lower()
    return (
        "label" in lowered or lowered in ("y", "ys", "targets", "target") or lowered.endswith("_y")
    )


def variants_for(nets: list[gluon.Block]) -> list[Variant]:
    """Batch shapes from the function's own network's first layer, then the standard ones."""
    out: list[Variant] = []
    for net in nets[:1]:
        candidates, integer = first_input(net)
        for c in candidates[:6]:
            if c.shape is None:
                continue
            shape = (BATCH, *c.shape[1:]) if c.shape[0] == 2 else c.shape
            for labels in ("class", "regress"):
                v = Variant(tuple(shape), labels, c.integer or integer)
                if v not in out:
                    out.append(v)
    return out + [v for v in STANDARD if v not in out]


def defaults_of(fn: Any) -> dict[str, Any]:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in params if p.default is not p.empty}
