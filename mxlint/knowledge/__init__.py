"""What mxlint knows about MXNet's API, in one place.

Every rule asks this module which qualified name makes an NDArray, which takes `ctx`, which is
random, which seeds, which is a HybridBlock... Names are canonical (see `canonical`): the many
spellings of one API (`mxnet.ndarray.zeros`, `mxnet.nd.zeros`) collapse to one.
"""

from __future__ import annotations

import functools
import os
import sys

from mxlint.knowledge.api import api

# Longest prefixes first; each maps an import path onto the spelling rules use.
_PREFIXES: tuple[tuple[str, str], ...] = (
    ("mxnet.ndarray.ndarray", "mxnet.nd"),
    ("mxnet.ndarray", "mxnet.nd"),
    ("mxnet.symbol.symbol", "mxnet.sym"),
    ("mxnet.symbol", "mxnet.sym"),
    ("mxnet.numpy_extension", "mxnet.npx"),
    ("mxnet.numpy", "mxnet.np"),
    ("mxnet.gluon.block", "mxnet.gluon"),
    ("mxnet.gluon.trainer", "mxnet.gluon"),
    ("mxnet.gluon.parameter", "mxnet.gluon"),
    ("mxnet.gluon.nn.basic_layers", "mxnet.gluon.nn"),
    ("mxnet.gluon.nn.conv_layers", "mxnet.gluon.nn"),
    ("mxnet.gluon.nn.activations", "mxnet.gluon.nn"),
    ("mxnet.gluon.data.dataloader", "mxnet.gluon.data"),
    ("mxnet.gluon.data.sampler", "mxnet.gluon.data"),
    ("mxnet.gluon.data.dataset", "mxnet.gluon.data"),
    ("mxnet.gluon.model_zoo.vision", "mxnet.gluon.model_zoo.vision"),
    ("mxnet.context", "mxnet"),
    ("mxnet.device", "mxnet"),
    ("mxnet.image.image", "mxnet.image"),
    ("mxnet.image.detection", "mxnet.image"),
    ("mxnet.io.io", "mxnet.io"),
    ("mxnet.contrib.amp.amp", "mxnet.contrib.amp"),
)

_EXACT: dict[str, str] = {
    "mxnet.gluon.nn.HybridBlock": "mxnet.gluon.HybridBlock",
    "mxnet.gluon.nn.Block": "mxnet.gluon.Block",
    "mxnet.gluon.nn.SymbolBlock": "mxnet.gluon.SymbolBlock",
    "mxnet.Device": "mxnet.Context",
    "mxnet.nd.NDArray": "mxnet.nd.NDArray",
}


@functools.lru_cache(maxsize=4096)
def canonical(name: str) -> str:
    """Collapse the spellings of one MXNet API onto one name (`mxnet.ndarray.x` -> `mxnet.nd.x`)."""
    if not name.startswith("mxnet"):
        if name == "np" or name.startswith("np."):
            return name
        return name
    for prefix, repl in _PREFIXES:
        if name == prefix or name.startswith(prefix + "."):
            name = repl + name[len(prefix) :]
            break
    exact = _EXACT.get(name)
    if exact is not None:
        return exact
    owner, dot, member = name.rpartition(".")
    if dot and owner in _EXACT:  # a member of a class spelled two ways (`nn.SymbolBlock.imports`)
        return f"{_EXACT[owner]}.{member}"
    return name


def is_mxnet(name: str | None) -> bool:
    return name is not None and (name == "mxnet" or name.startswith("mxnet."))


# --- Namespaces -----------------------------------------------------------------------------

#: Imperative tensor namespaces: inside `hybrid_forward` these should be `F.*`.
IMPERATIVE_NAMESPACES = ("mxnet.nd", "mxnet.np", "mxnet.npx")
#: Namespaces whose calls return tensors (imperative or symbolic).
TENSOR_NAMESPACES = ("mxnet.nd", "mxnet.sym", "mxnet.np", "mxnet.npx")


def in_namespace(name: str | None, namespaces: tuple[str, ...]) -> bool:
    if name is None:
        return False
    return any(name == ns or name.startswith(ns + ".") for ns in namespaces)


# --- Blocks, trainers, data ---------------------------------------------------------------

HYBRID_BLOCK_CLASSES = frozenset(
    {
        "mxnet.gluon.HybridBlock",
        "mxnet.gluon.nn.HybridSequential",
        "mxnet.gluon.nn.HybridLambda",
        "mxnet.gluon.SymbolBlock",
        "mxnet.gluon.nn.Dense",
        "mxnet.gluon.nn.Conv1D",
        "mxnet.gluon.nn.Conv2D",
        "mxnet.gluon.nn.Conv3D",
        "mxnet.gluon.nn.BatchNorm",
        "mxnet.gluon.nn.Embedding",
        "mxnet.gluon.rnn.HybridRecurrentCell",
        "mxnet.gluon.rnn.RNN",
        "mxnet.gluon.rnn.LSTM",
        "mxnet.gluon.rnn.GRU",
        "mxnet.gluon.loss.Loss",
    }
)
PLAIN_BLOCK_CLASSES = frozenset(
    {
        "mxnet.gluon.Block",
        "mxnet.gluon.nn.Sequential",
        "mxnet.gluon.nn.Lambda",
        "mxnet.gluon.rnn.RecurrentCell",
    }
)
DATALOADER = "mxnet.gluon.data.DataLoader"
SPLIT_AND_LOAD = frozenset(
    {
        "mxnet.gluon.utils.split_and_load",
        "mxnet.gluon.split_and_load",
        "gluoncv.utils.split_and_load",
    }
)

# --- Contexts ------------------------------------------------------------------------------

CONTEXT_CONSTRUCTORS = frozenset(
    {
        "mxnet.cpu",
        "mxnet.gpu",
        "mxnet.Context",
        "mxnet.cpu_pinned",
        "mxnet.cpu_shared",
        "mxnet.npx.cpu",
        "mxnet.npx.gpu",
    }
)
GPU_CONSTRUCTORS = frozenset({"mxnet.gpu", "mxnet.npx.gpu"})
#: Calls that place parameters: `net.initialize(ctx=...)` etc. (method names, any receiver).
PARAM_PLACING_METHODS = frozenset(
    {"initialize", "load_parameters", "load_params", "reset_ctx", "reset_device"}
)
#: Functions that return a network whose parameters live on `ctx=`.
MODEL_FACTORIES_WITH_CTX = ("mxnet.gluon.model_zoo", "gluoncv.model_zoo.get_model")
#: Keyword arguments that carry a context.
CTX_KEYWORDS = ("ctx", "device", "context")
#: Where a context may be passed positionally: method/function name -> argument index.
CTX_POSITION = {
    "initialize": 1,
    "load_parameters": 1,
    "load_params": 1,
    "reset_ctx": 0,
    "reset_device": 0,
    "imports": 3,
    "split_and_load": 1,
    "as_in_context": 0,
    "as_in_ctx": 0,
    "copyto": 0,
    "to_device": 0,
}
#: Methods that return a copy of a tensor on the context given as their first argument.
CTX_MOVING_METHODS = frozenset({"as_in_context", "as_in_ctx", "copyto", "to_device"})
#: Keywords naming the context list of `split_and_load`.
CTX_LIST_KEYWORDS = ("ctx_list", "ctx", "device_list", "devices")
#: Helper functions of common libraries that return a possibly-GPU context: name -> is a list.
GPU_CONTEXT_HELPERS = {
    "d2l.try_gpu": False,
    "d2l.try_all_gpus": True,
    "d2lzh.try_gpu": False,
    "d2lzh.try_all_gpus": True,
}
#: Splits a batch into slices that stay on the batch's (host) context.
SPLIT_DATA = frozenset({"mxnet.gluon.utils.split_data"})
#: Builders of networks whose weights come from a file (`ctx=` is the fourth argument).
SYMBOL_BLOCK_IMPORTS = frozenset({"mxnet.gluon.SymbolBlock.imports"})
#: Iterating these yields host (cpu) batches: data loaders, data iterators and datasets.
DATA_SOURCE_PREFIXES = (
    "mxnet.io.",
    "mxnet.gluon.data.",
    "gluoncv.data.",
    "mxnet.image.ImageIter",
    "mxnet.image.ImageDetIter",
)
DATA_SOURCE_EXCLUDED = (
    "mxnet.gluon.data.vision.transforms",
    "mxnet.gluon.data.batchify",
    "gluoncv.data.transforms",
    "gluoncv.data.batchify",
    "mxnet.gluon.data.RandomSampler",
    "mxnet.gluon.data.SequentialSampler",
    "mxnet.gluon.data.BatchSampler",
    "mxnet.io.DataBatch",
    "mxnet.io.DataDesc",
)
#: Functions returning data loaders (often a tuple of them).
DATA_SOURCE_FUNCS = frozenset(
    {
        "d2l.load_data_fashion_mnist",
        "d2lzh.load_data_fashion_mnist",
        "d2l.load_data_time_machine",
        "d2lzh.load_data_time_machine",
    }
)
#: Callables that keep their input's context (image transforms).
TRANSFORM_PREFIXES = ("mxnet.gluon.data.vision.transforms.", "gluoncv.data.transforms.")
#: gluoncv helpers that read/convert images into host NDArrays (`x, img = load_test(...)`).
HOST_IMAGE_FUNCS = frozenset({"load_test", "transform_test"})
GLUONCV_PRESETS = "gluoncv.data.transforms.presets."
#: Namespaces whose classes are Blocks: calling one makes a fresh, uninitialised layer.
BLOCK_NAMESPACES = (
    "mxnet.gluon.nn.",
    "mxnet.gluon.rnn.",
    "mxnet.gluon.contrib.nn.",
    "mxnet.gluon.contrib.rnn.",
)
LOSS_NAMESPACE = "mxnet.gluon.loss."
#: Functions whose tensor result lives where their tensor inputs live (image helpers).
CTX_PRESERVING_PREFIXES = (
    "mxnet.image.",
    "gluoncv.data.transforms.image.",
    "gluoncv.data.transforms.bbox.",
)
#: Methods that create recurrent states (with `nd.zeros`, on the default context unless
#: given `ctx=`).
STATE_CREATING_METHODS = frozenset({"begin_state"})
#: Parameter methods that return one copy and need `ctx` when there are several.
PARAM_VALUE_METHODS = frozenset({"data", "grad"})

# --- Tensor creation -----------------------------------------------------------------------


def _generated_name(name: str) -> str | None:
    """`mxnet.nd.zeros` -> `nd.zeros`, the key of the generated facts (`api.py`)."""
    return name[len("mxnet.") :] if name.startswith("mxnet.") else None


def ndarray_creators() -> frozenset[str]:
    """Imperative functions that take `ctx=` and build an array on it (default: the current
    context, cpu(0)), from MXNet's own signatures; the `*_like` creators inherit instead."""
    return api().ndarray_creators


def ctx_position(name: str) -> int | None:
    """Where an imperative function takes its context positionally (`nd.zeros(shape, ctx)`)."""
    key = _generated_name(name)
    sig = api().signatures.get(key) if key is not None else None
    if sig is None:
        return None
    for keyword in CTX_KEYWORDS:
        if keyword in sig.params:
            return sig.params.index(keyword)
    return None


def like_creators() -> frozenset[str]:
    """`zeros_like`, `ones_like`, `random.uniform_like`... of every tensor namespace, as MXNet
    names them: arrays made on their argument's context, never a context bug."""
    return api().like_creators


#: Loading data from disk lands on cpu unless told otherwise.
NDARRAY_LOADERS = frozenset(
    {
        "mxnet.nd.load",
        "mxnet.image.imread",
        "mxnet.image.imdecode",
        "mxnet.nd.load_frombuffer",
        "mxnet.npx.load",
    }
)

# --- Randomness and seeds ------------------------------------------------------------------

NUMPY_RANDOM_FUNCS = frozenset(
    {
        "rand",
        "randn",
        "randint",
        "random",
        "random_sample",
        "ranf",
        "sample",
        "choice",
        "shuffle",
        "permutation",
        "uniform",
        "normal",
        "binomial",
        "poisson",
        "beta",
        "gamma",
        "exponential",
        "multinomial",
        "standard_normal",
        "random_integers",
        "bytes",
        "dirichlet",
        "laplace",
        "lognormal",
        "geometric",
        "triangular",
    }
)
PY_RANDOM_FUNCS = frozenset(
    {
        "random",
        "randint",
        "randrange",
        "choice",
        "choices",
        "shuffle",
        "sample",
        "uniform",
        "gauss",
        "normalvariate",
        "triangular",
        "betavariate",
        "expovariate",
        "getrandbits",
    }
)
NUMPY_SEEDERS = frozenset({"numpy.random.seed", "numpy.random.set_state"})
PY_SEEDERS = frozenset({"random.seed", "random.setstate"})
MXNET_SEEDERS = frozenset(
    {"mxnet.random.seed", "mxnet.np.random.seed", "mxnet.nd.random.seed", "mxnet.npx.random.seed"}
)


def numpy_random_call(name: str | None) -> bool:
    return (
        name is not None
        and name.startswith("numpy.random.")
        and name.rsplit(".", 1)[1] in NUMPY_RANDOM_FUNCS
    )


def python_random_call(name: str | None) -> bool:
    return (
        name is not None
        and name.startswith("random.")
        and name.rsplit(".", 1)[1] in PY_RANDOM_FUNCS
    )


# --- Reproducibility (MXL3xx): which generator each MXNet data API draws from ---------------
# Read from MXNet 1.9.1's source: gluon's RandomSampler and NDArrayIter shuffle with
# `np.random.shuffle`; mx.image's ImageIter and augmenters, and gluon's RandomResizedCrop and
# RandomApply, draw from Python's `random`; RandomRotation and LightingAug use numpy. The other
# gluon transforms (RandomFlipLeftRight, RandomBrightness...) are MXNet operators, governed by
# MXNet's own generator, which has a fixed default seed. `mx.random.seed` calls MXRandomSeed
# only: it seeds neither numpy nor `random`.

#: Helpers of libraries that seed numpy, `random` and MXNet at once.
ALL_SEEDERS = frozenset({"gluoncv.utils.random.seed", "gluoncv.utils.seed"})
#: Samplers, loaders and iterators that shuffle when iterated: name -> (generators used,
#: the `shuffle` argument as (keyword, position), or None when they always shuffle).
SHUFFLING_PIPELINES: dict[str, tuple[tuple[str, ...], tuple[str, int] | None]] = {
    "mxnet.gluon.data.DataLoader": (("numpy",), ("shuffle", 2)),
    "mxnet.gluon.data.RandomSampler": (("numpy",), None),
    "mxnet.io.NDArrayIter": (("numpy",), ("shuffle", 3)),
    "mxnet.image.ImageIter": (("python",), ("shuffle", 7)),
    "mxnet.image.ImageDetIter": (("python",), ("shuffle", 6)),
    "mxnet.rnn.BucketSentenceIter": (("python", "numpy"), None),
    "mxnet.rnn.io.BucketSentenceIter": (("python", "numpy"), None),
}
#: Augmenters and transforms that draw from Python's `random` each time they are applied.
PY_RANDOM_AUGMENTERS = frozenset(
    {
        f"mxnet.image.{n}"
        for n in (
            "random_crop",
            "random_size_crop",
            "RandomCropAug",
            "RandomSizedCropAug",
            "BrightnessJitterAug",
            "ContrastJitterAug",
            "SaturationJitterAug",
            "HueJitterAug",
            "ColorJitterAug",
            "RandomOrderAug",
            "RandomGrayAug",
            "HorizontalFlipAug",
            "DetHorizontalFlipAug",
            "DetRandomCropAug",
            "DetRandomPadAug",
            "DetRandomSelectAug",
            "CreateDetAugmenter",
            "CreateMultiRandCropAugmenter",
        )
    }
    | {
        "mxnet.gluon.data.vision.transforms.RandomResizedCrop",
        "mxnet.gluon.data.vision.transforms.RandomApply",
    }
)
#: Augmenters and transforms that draw from numpy's global generator.
NUMPY_RANDOM_AUGMENTERS = frozenset(
    {
        "mxnet.image.LightingAug",
        "mxnet.image.random_rotate",
        "mxnet.gluon.data.vision.transforms.RandomRotation",
    }
)
#: `mx.image.CreateAugmenter` keywords that add a Python-`random` augmenter / a numpy one.
CREATE_AUGMENTER = "mxnet.image.CreateAugmenter"
CREATE_AUGMENTER_PY_KEYWORDS = (
    "rand_crop",
    "rand_resize",
    "rand_mirror",
    "brightness",
    "contrast",
    "saturation",
    "hue",
    "rand_gray",
)
CREATE_AUGMENTER_NUMPY_KEYWORDS = ("pca_noise",)
#: MXNet's own samplers (governed by `mx.random.seed`).
MXNET_RANDOM_NAMESPACES = ("mxnet.random", "mxnet.nd.random", "mxnet.np.random", "mxnet.npx.random")


@functools.lru_cache(maxsize=4096)
def mxnet_random_call(name: str | None) -> bool:
    """A draw from MXNet's generator: its `random` namespaces, and the operators MXNet's facts
    say draw (`nd.random_uniform`, `nd.sample_normal`, `nd.shuffle`, `nd.image.random_flip_*`)."""
    if name is None or name in MXNET_SEEDERS:
        return False
    return in_namespace(name, MXNET_RANDOM_NAMESPACES) or (
        name.startswith("mxnet.") and name[len("mxnet.") :] in api().draws
    )


# --- Lifecycle and AMP (MXL7xx) ------------------------------------------------------------

#: `amp.init()` in MXNet 1.x (contrib) and 2.x.
AMP_INIT = frozenset({"mxnet.contrib.amp.init", "mxnet.amp.init"})
#: `amp.init_trainer(trainer)`: gives the trainer its loss scaler.
AMP_INIT_TRAINER = frozenset({"mxnet.contrib.amp.init_trainer", "mxnet.amp.init_trainer"})
#: `with amp.scale_loss(loss, trainer) as scaled:`.
AMP_SCALE_LOSS = frozenset({"mxnet.contrib.amp.scale_loss", "mxnet.amp.scale_loss"})
#: The Gluon trainer.
TRAINER = "mxnet.gluon.Trainer"
#: Namespaces whose calls build a network (constructors and model-zoo factories).
NETWORK_NAMESPACES = (
    "mxnet.gluon.nn",
    "mxnet.gluon.rnn",
    "mxnet.gluon.model_zoo",
    "gluoncv.model_zoo",
    "gluonnlp.model",
)
#: Blocks built from a symbol file: their graph exists without a forward pass (export works).
SYMBOL_BLOCKS = frozenset({"mxnet.gluon.SymbolBlock", "mxnet.gluon.SymbolBlock.imports"})
#: Methods only a Gluon Block has: the variable they are called on holds a network.
BLOCK_METHODS = frozenset(
    {
        "initialize",
        "hybridize",
        "collect_params",
        "load_parameters",
        "load_params",
        "save_parameters",
        "cast",
        "reset_ctx",
    }
)


def builds_network(name: str | None) -> bool:
    """A call that constructs a Gluon network (not a loss, not a SymbolBlock)."""
    return (
        in_namespace(name, NETWORK_NAMESPACES)
        and name not in SYMBOL_BLOCKS
        and not (name or "").endswith(("SymbolBlock", "SymbolBlock.imports"))
    )


# --- Tensors in Python land ----------------------------------------------------------------

#: Methods that copy a tensor to Python/NumPy: they block on the engine, and fail on a Symbol.
TO_PYTHON_METHODS = frozenset({"asnumpy", "asscalar", "item", "tolist"})
#: Methods and functions that synchronise with the asynchronous engine.
SYNC_METHODS = frozenset({"asnumpy", "asscalar", "item", "tolist", "wait_to_read", "wait_to_write"})
SYNC_FUNCTIONS = frozenset({"mxnet.nd.waitall", "mxnet.npx.waitall", "mxnet.nd.save"})
#: Attributes an NDArray has and a Symbol does not (in MXNet 1.x).
VALUE_ATTRIBUTES = frozenset(
    {"shape", "dtype", "context", "ctx", "size", "ndim", "stype", "grad", "device"}
)

# --- autograd ------------------------------------------------------------------------------

AUTOGRAD_RECORD = frozenset({"mxnet.autograd.record", "mxnet.autograd.train_mode"})
AUTOGRAD_PAUSE = frozenset({"mxnet.autograd.pause", "mxnet.autograd.predict_mode"})


def recording_block(name: str | None, last: str) -> str | None:
    """What a `with` item called `name` (resolved; `last`: its last spelled name) opens, if it
    records: `mxnet.autograd.record` or `mxnet.autograd.train_mode`. An unresolved `record()`
    or `train_section()` (`from mxnet.autograd import *`) is taken at its word, and the
    contrib API's `train_section` records as `record` does."""
    if name == "mxnet.contrib.autograd.train_section" or (
        name is None and last in ("record", "train_section")
    ):
        return "mxnet.autograd.record"
    return name if name in AUTOGRAD_RECORD else None


AUTOGRAD_STATE = frozenset({"mxnet.autograd.is_training", "mxnet.autograd.is_recording"})

# --- Hybridization (MXL1xx) ----------------------------------------------------------------

#: Size attributes among the NDArray members a Symbol lacks (`api().ndarray_only_members`).
SIZE_ATTRIBUTES = frozenset({"shape", "dtype", "size", "ndim", "stype"})
#: Builtins that read a tensor's value into Python (`float(x)` fails on a Symbol).
TO_PYTHON_BUILTINS = frozenset({"float", "int", "bool", "complex"})
#: NumPy functions that copy a tensor into a NumPy array.
NUMPY_CONVERTERS = frozenset({"numpy.array", "numpy.asarray", "numpy.asanyarray"})
#: Builtins that iterate their argument (on a 1.x Symbol they iterate its outputs).
ITERATING_BUILTINS = frozenset(
    {
        "list",
        "tuple",
        "enumerate",
        "zip",
        "sorted",
        "reversed",
        "iter",
        "map",
        "sum",
        "max",
        "min",
        "any",
        "all",
    }
)
#: `F.*` operators returning several outputs: indexing or unpacking them is correct.
MULTI_OUTPUT_OPS = frozenset(
    {
        "split",
        "SliceChannel",
        "split_v2",
        "contrib.foreach",
        "contrib.while_loop",
        "contrib.cond",
        "RNN",
        "topk",
        "linalg.gelqf",
        "linalg.syevd",
        "linalg.slogdet",
        "np.split",
        "np.array_split",
        "np.hsplit",
        "np.vsplit",
        "np.dsplit",
        "npx.foreach",
        "npx.while_loop",
        "npx.cond",
        "np.meshgrid",
        "np.unique",
        "np.linalg.slogdet",
        "np.linalg.eigh",
        "np.linalg.qr",
        "np.linalg.svd",
        "npx.topk",
        "contrib.box_nms",
        "Group",
        "contrib.MultiBoxTarget",
        "contrib.MultiBoxDetection",
        "contrib.Proposal",
    }
)
#: Tensor methods that return several outputs.
MULTI_OUTPUT_METHODS = frozenset({"split", "split_v2", "topk"})
#: Methods of a tensor that do not return a tensor.
NON_TENSOR_METHODS = frozenset(
    {
        "list_outputs",
        "list_arguments",
        "list_inputs",
        "list_auxiliary_states",
        "infer_shape",
        "infer_type",
        "tojson",
        "save",
        "wait_to_read",
        "attach_grad",
        "get_internals",
        "get_children",
        "attr",
        "attr_dict",
        "name",
        "debug_str",
    }
)
#: Imperative-only branches: `F is nd`, `isinstance(x, nd.NDArray)`.
IMPERATIVE_MODULES = frozenset({"mxnet.nd", "mxnet.np", "mxnet.npx"})
IMPERATIVE_TYPES = frozenset({"mxnet.nd.NDArray", "mxnet.np.ndarray"})
SYMBOLIC_MODULES = frozenset({"mxnet.sym"})
SYMBOLIC_TYPES = frozenset({"mxnet.sym.Symbol"})
#: Recurrent cells: `cell(x, states)` returns `(output, new_states)`.
RNN_CELL_PREFIX = "mxnet.gluon.rnn."
#: Layers whose output may be a tuple (`LSTM(x, states)` returns `(out, states)`).
MAYBE_TUPLE_LAYERS = frozenset(
    {
        "mxnet.gluon.rnn.LSTM",
        "mxnet.gluon.rnn.GRU",
        "mxnet.gluon.rnn.RNN",
        "mxnet.gluon.nn.Sequential",
        "mxnet.gluon.nn.HybridSequential",
        "mxnet.gluon.nn.Lambda",
        "mxnet.gluon.nn.HybridLambda",
        "mxnet.gluon.nn.Identity",
        "mxnet.gluon.nn.Concatenate",
        "mxnet.gluon.nn.HybridConcatenate",
    }
)
#: Operators (and layer operators) known to return one tensor: `F.op(...)` of any other may be a
#: group (`F.contrib.box_encode` returns two), so what follows reads it as possibly a sequence.
SINGLE_OUTPUT_OPS = frozenset(
    {
        "Activation",
        "BatchNorm",
        "BilinearResize2D",
        "BlockGrad",
        "Cast",
        "Convolution",
        "Deconvolution",
        "Dropout",
        "Embedding",
        "Flatten",
        "FullyConnected",
        "GroupNorm",
        "InstanceNorm",
        "L2Normalization",
        "LayerNorm",
        "LeakyReLU",
        "LinearRegressionOutput",
        "LogisticRegressionOutput",
        "MakeLoss",
        "Pad",
        "Pooling",
        "ROIAlign",
        "ROIPooling",
        "SequenceLast",
        "SequenceMask",
        "SequenceReverse",
        "SoftmaxActivation",
        "SoftmaxOutput",
        "UpSampling",
        "abs",
        "add_n",
        "amp_cast",
        "arange",
        "arange_like",
        "arctan",
        "argmax",
        "argmin",
        "argsort",
        "array",
        "batch_dot",
        "batch_take",
        "broadcast_add",
        "broadcast_axis",
        "broadcast_div",
        "broadcast_equal",
        "broadcast_greater",
        "broadcast_lesser",
        "broadcast_like",
        "broadcast_maximum",
        "broadcast_minimum",
        "broadcast_mul",
        "broadcast_power",
        "broadcast_sub",
        "broadcast_to",
        "cast",
        "ceil",
        "clip",
        "concat",
        "concatenate",
        "contrib.BilinearResize2D",
        "contrib.ROIAlign",
        "contrib.arange_like",
        "cos",
        "cumsum",
        "diag",
        "dot",
        "einsum",
        "elemwise_add",
        "elemwise_div",
        "elemwise_mul",
        "elemwise_sub",
        "elu",
        "empty",
        "erf",
        "erfinv",
        "exp",
        "expand_dims",
        "expm1",
        "eye",
        "flatten",
        "flip",
        "floor",
        "full",
        "gamma",
        "gather_nd",
        "gelu",
        "hard_sigmoid",
        "hstack",
        "identity",
        "interleaved_matmul_encdec_qk",
        "interleaved_matmul_encdec_valatt",
        "interleaved_matmul_selfatt_qk",
        "interleaved_matmul_selfatt_valatt",
        "linspace",
        "log",
        "log1p",
        "log_sigmoid",
        "log_softmax",
        "logical_not",
        "logsumexp",
        "make_loss",
        "masked_log_softmax",
        "masked_softmax",
        "matmul",
        "max",
        "maximum",
        "mean",
        "min",
        "minimum",
        "mish",
        "moveaxis",
        "nansum",
        "negative",
        "norm",
        "one_hot",
        "ones",
        "ones_like",
        "pad",
        "pick",
        "power",
        "prod",
        "ravel",
        "reciprocal",
        "relu",
        "repeat",
        "reshape",
        "reshape_like",
        "round",
        "rsqrt",
        "scatter_nd",
        "selu",
        "shape_array",
        "sigmoid",
        "sign",
        "silu",
        "sin",
        "size_array",
        "slice",
        "slice_axis",
        "slice_like",
        "smooth_l1",
        "softmax",
        "softmax_cross_entropy",
        "softplus",
        "softsign",
        "sort",
        "sqrt",
        "square",
        "squeeze",
        "stack",
        "std",
        "std_",
        "stop_gradient",
        "sum",
        "sum_axis",
        "swapaxes",
        "swish",
        "take",
        "tanh",
        "tensordot",
        "tile",
        "trace",
        "transpose",
        "var",
        "vstack",
        "where",
        "zeros",
        "zeros_like",
    }
)


# --- Recorded graphs (MXL402, MXL404, MXL405) ---------------------------------------------
# Checked on MXNet 1.9.1: any write into an array that already has autograd information (the
# output of a recorded operator, an `attach_grad()` variable, or an input that a recorded
# operator read) raises "Assigning to NDArrays that are already in a computational graph";
# a partial write (`y[i] = v`, `y += v`) of a recorded value into a fresh array raises
# "Inplace operations (+=, -=, x[:]=, etc) are not supported"; `y[:] = v` into a fresh array
# and `op(..., out=fresh)` are plain copies and work.

AUTOGRAD_PAUSE_RECORDING = "mxnet.autograd.pause"
AUTOGRAD_BACKWARD = frozenset({"mxnet.autograd.backward", "mxnet.autograd.grad"})
#: Methods whose result no longer holds the autograd graph of their receiver.
DETACHING_METHODS = TO_PYTHON_METHODS | frozenset(
    {"detach", "wait_to_read", "wait_to_write", "attach_grad", "tostype"}
)
#: Operators that cut the graph (`nd.stop_gradient(x)`), by their last name.
DETACHING_OPS = frozenset({"stop_gradient", "BlockGrad"})
#: Methods of Python containers and training utilities that never return a tensor.
NON_TENSOR_CALL_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "update",
        "add",
        "items",
        "keys",
        "values",
        "format",
        "join",
        "reset",
        "step",
        "zero_grad",
        "backward",
        "info",
        "debug",
        "warning",
        "warn",
        "error",
        "log",
        "write",
        "close",
        "save_parameters",
        "load_parameters",
        "collect_params",
        "set_description",
        "set_postfix",
        "add_scalar",
        "add_scalars",
        "get",
        "pop",
        "setdefault",
        "clear",
        "copy_",
        "next",
        "get_name",
        "startswith",
        "endswith",
        "lower",
        "upper",
    }
)
#: Evaluation metrics (`EvalMetric` subclasses): calling one of these builds a metric.
METRIC_NAMESPACES = (
    "mxnet.metric",
    "mxnet.gluon.metric",
    "gluoncv.utils.metrics",
    "gluonnlp.metric",
)
METRIC_BASES = frozenset(
    {
        "mxnet.metric.EvalMetric",
        "mxnet.gluon.metric.EvalMetric",
        "mxnet.metric.CustomMetric",
        "mxnet.gluon.metric.CustomMetric",
    }
)
#: Python containers that may outlive a training step (`outputs = []` before the loop).
CONTAINER_FACTORIES = frozenset(
    {
        "list",
        "dict",
        "set",
        "collections.deque",
        "collections.defaultdict",
        "collections.OrderedDict",
        "deque",
        "defaultdict",
        "OrderedDict",
    }
)
#: Container methods that store their argument(s).
STORING_METHODS = frozenset({"append", "extend", "insert", "appendleft", "extendleft", "add"})
#: Words of a variable name that say "validation/test data" (`val_data`, `X_test`).
VALIDATION_WORDS = frozenset(
    {"val", "valid", "validation", "eval", "evaluation", "test", "testing", "holdout"}
)
#: Words that, next to a validation word, make a name data (`valid_data`, not `valid_length`).
DATA_WORDS = frozenset(
    {
        "data",
        "dataset",
        "datasets",
        "x",
        "y",
        "xs",
        "ys",
        "input",
        "inputs",
        "batch",
        "batches",
        "loader",
        "loaders",
        "iter",
        "iterator",
        "dataiter",
        "set",
        "img",
        "imgs",
        "image",
        "images",
        "sample",
        "samples",
        "feature",
        "features",
        "feat",
        "feats",
        "label",
        "labels",
        "seq",
        "seqs",
        "text",
        "texts",
        "src",
        "tgt",
        "token",
        "tokens",
        "sentence",
        "sentences",
        "example",
        "examples",
        "ds",
        "dl",
        "arr",
        "array",
        "tensor",
        "frames",
        "video",
        "videos",
        "points",
        "pts",
        "iterable",
        "pairs",
        "queries",
        "records",
        "inp",
    }
)
#: Logging sinks: a sync whose value goes here is a readback for logging.
LOGGING_FUNCTIONS = frozenset(
    {
        "print",
        "logging.info",
        "logging.debug",
        "logging.warning",
        "logging.error",
        "logging.log",
        "tqdm.tqdm.write",
    }
)
LOGGING_METHODS = frozenset(
    {
        "info",
        "debug",
        "warning",
        "warn",
        "error",
        "critical",
        "log",
        "add_scalar",
        "add_scalars",
        "set_postfix",
        "set_description",
        "set_postfix_str",
    }
)
LOGGER_WORDS = frozenset(
    {
        "logger",
        "log",
        "logging",
        "writer",
        "sw",
        "summary",
        "tb",
        "pbar",
        "progress",
        "tqdm",
        "bar",
        "mlflow",
        "wandb",
    }
)
#: Names of networks and their parts: `<net>.<method>(x)` is a forward pass.
NETWORK_WORDS = frozenset(
    {
        "net",
        "model",
        "network",
        "encoder",
        "decoder",
        "generator",
        "discriminator",
        "backbone",
        "head",
        "classifier",
        "block",
        "cell",
        "rnn",
        "lstm",
        "gru",
        "policy",
        "critic",
        "actor",
        "teacher",
        "student",
        "netg",
        "netd",
    }
)
#: Words of a loop's iterable that make it a loop over devices or shards of one batch.
SHARD_WORDS = frozenset(
    {
        "ctx",
        "ctxs",
        "context",
        "contexts",
        "device",
        "devices",
        "gpu",
        "gpus",
        "shard",
        "shards",
        "part",
        "parts",
        "split",
        "splits",
        "slices",
        "chunk",
        "chunks",
        "ngpu",
        "ngpus",
    }
)


# --- The symbolic execution API (Module, Executor) ------------------------------------------

#: Namespaces whose objects have their own `backward()` that autograd does not govern.
SYMBOLIC_EXECUTION = ("mxnet.mod", "mxnet.module", "mxnet.executor", "mxnet.sym")
#: Methods that turn a Symbol into an Executor (whose `backward()` is the symbolic one).
EXECUTOR_METHODS = frozenset({"bind", "simple_bind", "_bind", "_simple_bind", "reshape"})


# --- Libraries -----------------------------------------------------------------------------


def _stdlib_module_names() -> frozenset[str]:
    """The standard library's top-level modules: `sys.stdlib_module_names` from Python 3.10;
    on 3.9, what the standard library's directories hold, and the built-in modules."""
    names = getattr(sys, "stdlib_module_names", None)
    if names is not None:
        return frozenset(names)
    import pkgutil
    import sysconfig

    stdlib = sysconfig.get_paths()["stdlib"]
    found = pkgutil.iter_modules([stdlib, os.path.join(stdlib, "lib-dynload")])
    return frozenset({m.name for m in found} | set(sys.builtin_module_names))


#: Top-level packages of libraries (with the standard library's): never a project's own code,
#: so a call into one is not followed as a project helper, is not a forward pass of a network
#: and, for seeding, is known (`ALL_SEEDERS`) or draws nothing the project seeds.
LIBRARY_ROOTS = (
    frozenset(
        {
            "cv2",
            "gluoncv",
            "gluonnlp",
            "horovod",
            "jax",
            "matplotlib",
            "mxnet",
            "numpy",
            "onnx",
            "pandas",
            "PIL",
            "scipy",
            "sklearn",
            "sockeye",
            "tensorflow",
            "torch",
            "tqdm",
        }
    )
    | _stdlib_module_names()
)


#: Top-level packages of other autograd libraries, whose tensors have their own `backward()`
#: and record without `mx.autograd.record()` (a script comparing PyTorch with MXNet).
OTHER_AUTOGRAD_ROOTS = frozenset({"chainer", "paddle", "torch"})
#: Top-level packages of deep learning frameworks other than MXNet: a file that imports one
#: and nothing of MXNet is that framework's program (a PyTorch example beside the MXNet ones of
#: a multi-backend project). Keras is not among them: Keras ran on MXNet too (keras-mxnet).
OTHER_FRAMEWORK_ROOTS = frozenset(
    {"chainer", "cntk", "jax", "mindspore", "oneflow", "paddle", "tensorflow", "theano", "torch"}
)
#: Folders a multi-backend project names after another framework (`examples/pytorch/`): a
#: script there that imports nothing of MXNet (a numpy and scikit-learn evaluation of what a
#: PyTorch example trained) belongs to that framework's examples.
OTHER_FRAMEWORK_FOLDERS = frozenset(
    {*OTHER_FRAMEWORK_ROOTS, "pytorch", "tf", "tf2", "paddlepaddle", "tensorflow2"}
)


def is_library(name: str) -> bool:
    """Whether the dotted `name` lives in a library rather than in the project."""
    return name.split(".", 1)[0] in LIBRARY_ROOTS


# --- Memory and sync (MXL4xx, MXL6xx) ------------------------------------------------------

#: NDArray methods whose result is again an NDArray computed from the array (reductions, moves
#: to a context, reshapes, casts, copies, element-wise maps): a value accumulated from one is
#: still a pending tensor, and a value they are called on is an array, not a list.
TENSOR_RESULT_METHODS = frozenset(
    {
        "mean",
        "sum",
        "max",
        "min",
        "norm",
        "reshape",
        "flatten",
        "square",
        "sqrt",
        "abs",
        "exp",
        "log",
        "detach",
        "copy",
        "astype",
        "squeeze",
        "argmax",
        "argmin",
        "argsort",
        "topk",
        "sort",
        "pick",
        "take",
        "one_hot",
        "softmax",
        "log_softmax",
        "sigmoid",
        "relu",
        "tanh",
        "clip",
        "sign",
        "round",
        "floor",
        "ceil",
        "expand_dims",
        "transpose",
        "slice",
        "slice_axis",
        "broadcast_to",
        "tile",
        "repeat",
        "as_in_context",
        "as_in_ctx",
        "copyto",
        "to_device",
        "as_nd_ndarray",
        "as_np_ndarray",
    }
)
#: NDArray methods that reduce to one number (when called without an axis).
SCALAR_REDUCTIONS = frozenset({"mean", "sum", "max", "min", "prod", "norm", "nansum", "nanprod"})
#: NDArray methods that copy the value to Python: each call waits for the engine.
READBACK_METHODS = frozenset({"asscalar", "asnumpy", "item"})
#: Methods that move or reshape data without running a network (validation data stays it).
DATA_METHODS = frozenset(
    {
        "as_in_context",
        "as_in_ctx",
        "copyto",
        "to_device",
        "astype",
        "reshape",
        "expand_dims",
        "transpose",
        "squeeze",
        "flatten",
        "copy",
        "as_nd_ndarray",
        "as_np_ndarray",
    }
)
#: 2.x spellings and conversions that mark an imperative array too (not in 1.9.1's NDArray).
_IMPERATIVE_CONVERSIONS = frozenset({"as_in_ctx", "as_nd_ndarray", "as_np_ndarray"})
#: Method names lists, dicts and sets share with NDArray: calling one proves nothing.
_PYTHON_METHODS = frozenset({"copy"})


@functools.cache
def ndarray_only_methods() -> frozenset[str]:
    """Methods only an imperative array has (a Symbol lacks them or only raises): a parameter
    they are called on is an NDArray."""
    facts = api()
    methods = facts.ndarray_only_members - facts.ndarray.properties - _PYTHON_METHODS
    return methods | _IMPERATIVE_CONVERSIONS


# --- Lifecycle (MXL7xx) ----------------------------------------------------------------------

#: Methods that make a block run as a graph (`export` needs a hybridized one): what the
#: semantic model asks of an object to know whether it meets `hybridize()`.
HYBRIDIZING_METHODS = frozenset({"hybridize", "export", "optimize_for"})
#: Calls on a network that neither run it nor let it escape.
INERT_BLOCK_METHODS = BLOCK_METHODS | {
    "export",
    "name_scope",
    "add",
    "register_child",
    "save_params",
    "zero_grad",
    "setattr",
    "share_parameters",
}
#: Block methods that run the network's forward pass.
FORWARD_METHODS = frozenset({"forward", "summary"})
