"""Synthetic stand-ins for what a verify run cannot or must not fetch (runs inside the verify
subprocess): datasets Gluon downloads (MNIST, Fashion-MNIST, CIFAR-10/100), pretrained model-zoo
weights, and project artifacts missing from the checkout (a parameter file, a RecordIO file, an
exported symbol, an image, a NumPy array).

A finding about contexts, memory or seeds does not depend on the pixels: the stand-in has the
shapes and dtypes the real thing has (a shrunken batch and image size for RecordIO), so the code
after it runs. Every stand-in used is noted, and the notes go into the evidence.
"""

from __future__ import annotations

import os
from typing import Any

import mxnet as mx
import numpy as np

#: What was replaced in this run, in the words the evidence uses.
NOTES: list[str] = []
#: Samples in a stand-in dataset (enough batches for the bounded run).
SAMPLES = 256
#: A DataLoader over a stand-in dataset takes batches of at most this many samples.
MAX_BATCH = 16


def _note(text: str) -> None:
    if text not in NOTES:
        NOTES.append(text)


def _images(shape: tuple[int, ...], classes: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.RandomState(0)
    data = rng.randint(0, 256, size=(SAMPLES, *shape)).astype(np.uint8)
    label = rng.randint(0, classes, size=(SAMPLES,)).astype(np.int32)
    return data, label


def _dataset(name: str, shape: tuple[int, ...], classes: int) -> Any:
    def init(self: Any, root: str = "", train: bool = True, transform: Any = None, **_: Any):
        data, label = _images(shape, classes)
        self._transform = transform
        self._data = mx.nd.array(data, dtype=data.dtype)
        self._label = label
        self._mxlint_standin = True
        _note(f"{name} replaced by {SAMPLES} synthetic images {shape} (no download)")

    return init


def _datasets() -> None:
    from mxnet.gluon.data.vision import datasets

    for cls, shape, classes in (
        ("MNIST", (28, 28, 1), 10),
        ("FashionMNIST", (28, 28, 1), 10),
        ("CIFAR10", (32, 32, 3), 10),
        ("CIFAR100", (32, 32, 3), 100),
    ):
        target = getattr(datasets, cls, None)
        if target is not None:
            target.__init__ = _dataset(cls, shape, classes)


def _parameters() -> None:
    from mxnet import gluon
    from mxnet.gluon.model_zoo import model_store

    def model_file(name: str, root: str = "") -> str:
        _note(f"pretrained {name} weights replaced by a random initialisation (no download)")
        return os.path.join(os.getcwd(), f"{name}-pretrained-standin.params")

    model_store.get_model_file = model_file
    load = gluon.Block.load_parameters

    def load_parameters(self: Any, filename: str, ctx: Any = None, *a: Any, **k: Any) -> Any:
        if isinstance(filename, str) and not os.path.exists(filename):
            if not filename.endswith("-pretrained-standin.params"):
                _note(f"missing parameter file {filename!r}: random initialisation instead")
            self.initialize(ctx=ctx or mx.cpu(), force_reinit=True)
            return None
        return load(self, filename, ctx, *a, **k)

    gluon.Block.load_parameters = load_parameters  # type: ignore[method-assign]
    imports = gluon.SymbolBlock.imports

    def symbol_imports(symbol_file: str, input_names: Any, param_file: Any = None, ctx: Any = None):
        if os.path.exists(symbol_file):
            return imports(symbol_file, input_names, param_file, ctx)
        names = [input_names] if isinstance(input_names, str) else list(input_names)
        inputs = [mx.sym.var(n) for n in names]
        out = mx.sym.FullyConnected(mx.sym.flatten(inputs[0]), num_hidden=10)
        block = gluon.SymbolBlock(out, inputs)
        block.initialize(ctx=ctx or mx.cpu())
        _note(f"missing exported model {symbol_file!r}: a one-layer stand-in graph instead")
        return block

    gluon.SymbolBlock.imports = staticmethod(symbol_imports)  # type: ignore[method-assign]


def _files() -> None:
    record_iter = mx.io.ImageRecordIter

    def image_record_iter(*args: Any, **kwargs: Any) -> Any:
        path = kwargs.get("path_imgrec", "")
        if path and os.path.exists(path):
            return record_iter(*args, **kwargs)
        channels, height, width = tuple(kwargs.get("data_shape", (3, 32, 32)))
        shape = (channels, min(height, 32), min(width, 32))
        batch = min(int(kwargs.get("batch_size", 8)), 8)
        rng = np.random.RandomState(0)
        data = rng.uniform(0, 255, size=(SAMPLES, *shape)).astype("float32")
        label = rng.randint(0, 10, size=(SAMPLES,)).astype("float32")
        _note(
            f"missing RecordIO file {path!r}: {SAMPLES} synthetic images {shape} in batches "
            f"of {batch}"
        )
        return mx.io.NDArrayIter(data, label, batch_size=batch, last_batch_handle="discard")

    mx.io.ImageRecordIter = image_record_iter
    imread = mx.image.imread

    def read(filename: str, *args: Any, **kwargs: Any) -> Any:
        if os.path.exists(filename):
            return imread(filename, *args, **kwargs)
        _note(f"missing image {filename!r}: a synthetic 32x32 RGB image instead")
        data = np.random.RandomState(0).randint(0, 256, size=(32, 32, 3)).astype(np.uint8)
        return mx.nd.array(data, dtype=np.uint8)

    mx.image.imread = read
    sym_load = mx.symbol.load

    def load_symbol(fname: str) -> Any:
        # `mx.model.load_checkpoint` reads the graph before the parameters: a missing graph
        # stands in, so the parameter file (the one a finding may be about) is still read.
        if isinstance(fname, str) and not os.path.exists(fname):
            _note(f"missing symbol file {fname!r}: a one-layer stand-in graph instead")
            return mx.sym.FullyConnected(mx.sym.flatten(mx.sym.var("data")), num_hidden=10)
        return sym_load(fname)

    mx.symbol.load = load_symbol
    np_load = np.load

    def load(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, str) and file.endswith(".npy") and not os.path.exists(file):
            _note(f"missing array file {file!r}: a synthetic (4, 16) float32 array instead")
            return np.random.RandomState(0).uniform(size=(4, 16)).astype("float32")
        return np_load(file, *args, **kwargs)

    np.load = load


def _loader() -> None:
    """Batches over a stand-in dataset are capped: a stand-in image costs as much to run as a
    real one, and a bounded run needs a few steps, not a real batch size."""
    from mxnet import gluon

    init = gluon.data.DataLoader.__init__

    def capped(self: Any, dataset: Any, batch_size: Any = None, *args: Any, **kwargs: Any):
        inner = getattr(dataset, "_data", None)
        standin = getattr(dataset, "_mxlint_standin", False) or getattr(
            inner, "_mxlint_standin", False
        )
        if standin and isinstance(batch_size, int) and batch_size > MAX_BATCH:
            _note(f"a DataLoader over a stand-in dataset: batches of {MAX_BATCH}, not {batch_size}")
            batch_size = MAX_BATCH
        init(self, dataset, batch_size, *args, **kwargs)

    gluon.data.DataLoader.__init__ = capped  # type: ignore[method-assign]


def install() -> None:
    """Put the stand-ins in place (before the project's code is loaded)."""
    _datasets()
    _parameters()
    _files()
    _loader()
