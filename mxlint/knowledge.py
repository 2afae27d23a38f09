"""What mxlint knows about MXNet's API, in one place.

Every rule asks this module which qualified name makes an NDArray, which takes `ctx`, which is
random, which seeds, which is a HybridBlock... Names are canonical (see `canonical`): the many
spellings of one API (`mxnet.ndarray.zeros`, `mxnet.nd.zeros`) collapse to one.
"""

from __future__ import annotations

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
)

_EXACT: dict[str, str] = {
    "mxnet.gluon.nn.HybridBlock": "mxnet.gluon.HybridBlock",
    "mxnet.gluon.nn.Block": "mxnet.gluon.Block",
    "mxnet.gluon.nn.SymbolBlock": "mxnet.gluon.SymbolBlock",
    "mxnet.Device": "mxnet.Context",
    "mxnet.nd.NDArray": "mxnet.nd.NDArray",
}


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
    return _EXACT.get(name, name)


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
    {"mxnet.gluon.Block", "mxnet.gluon.nn.Sequential", "mxnet.gluon.nn.Lambda",
     "mxnet.gluon.rnn.RecurrentCell"}
)
TRAINER = "mxnet.gluon.Trainer"
DATALOADER = "mxnet.gluon.data.DataLoader"
RANDOM_SAMPLER = "mxnet.gluon.data.RandomSampler"
SPLIT_AND_LOAD = frozenset({"mxnet.gluon.utils.split_and_load", "mxnet.gluon.split_and_load"})

# --- Contexts ------------------------------------------------------------------------------

CONTEXT_CONSTRUCTORS = frozenset(
    {"mxnet.cpu", "mxnet.gpu", "mxnet.Context", "mxnet.cpu_pinned", "mxnet.cpu_shared"}
)
GPU_CONSTRUCTORS = frozenset({"mxnet.gpu"})
#: Calls that place parameters: `net.initialize(ctx=...)` etc. (method names, any receiver).
PARAM_PLACING_METHODS = frozenset({"initialize", "load_parameters", "load_params", "reset_ctx",
                                   "reset_device"})
#: Functions that return a network whose parameters live on `ctx=`.
MODEL_FACTORIES_WITH_CTX = ("mxnet.gluon.model_zoo", "gluoncv.model_zoo.get_model")
#: Methods that move data between contexts; a value that went through one is placed.
MOVING_METHODS = frozenset({"as_in_context", "as_in_ctx", "copyto", "to_device", "as_nd_ndarray",
                            "as_np_ndarray"})
#: Keyword arguments that carry a context.
CTX_KEYWORDS = ("ctx", "device", "context")

# --- Tensor creation -----------------------------------------------------------------------

_CREATOR_FUNCS = (
    "array", "zeros", "ones", "full", "empty", "arange", "eye", "linspace", "identity",
    "random.uniform", "random.normal", "random.randn", "random.randint", "random.poisson",
    "random.exponential", "random.gamma", "random.multinomial", "random.shuffle",
    "random_uniform", "random_normal",
)
#: NDArray-creating functions that take `ctx=` (they default to the current context, cpu(0)).
NDARRAY_CREATORS = frozenset(
    f"{ns}.{fn}" for ns in ("mxnet.nd", "mxnet.np") for fn in _CREATOR_FUNCS
)
#: Creators that inherit the context of their argument: never a context bug.
LIKE_CREATORS = frozenset(
    f"{ns}.{fn}" for ns in ("mxnet.nd", "mxnet.np", "mxnet.sym")
    for fn in ("zeros_like", "ones_like", "full_like", "empty_like", "random.uniform_like",
               "random.normal_like")
)
#: Loading data from disk lands on cpu unless told otherwise.
NDARRAY_LOADERS = frozenset({"mxnet.nd.load", "mxnet.image.imread", "mxnet.image.imdecode",
                             "mxnet.nd.load_frombuffer", "mxnet.npx.load"})

# --- Randomness and seeds ------------------------------------------------------------------

NUMPY_RANDOM_FUNCS = frozenset(
    {"rand", "randn", "randint", "random", "random_sample", "ranf", "sample", "choice",
     "shuffle", "permutation", "uniform", "normal", "binomial", "poisson", "beta", "gamma",
     "exponential", "multinomial", "standard_normal", "random_integers", "bytes", "dirichlet",
     "laplace", "lognormal", "geometric", "triangular"}
)
PY_RANDOM_FUNCS = frozenset(
    {"random", "randint", "randrange", "choice", "choices", "shuffle", "sample", "uniform",
     "gauss", "normalvariate", "triangular", "betavariate", "expovariate", "getrandbits"}
)
NUMPY_SEEDERS = frozenset({"numpy.random.seed"})
PY_SEEDERS = frozenset({"random.seed"})
MXNET_SEEDERS = frozenset({"mxnet.random.seed", "mxnet.np.random.seed", "mxnet.nd.random.seed",
                           "mxnet.npx.random.seed"})
#: Explicit generators: seeded at construction, they do not need the global seed.
NUMPY_GENERATORS = frozenset({"numpy.random.default_rng", "numpy.random.RandomState",
                              "numpy.random.Generator"})


def numpy_random_call(name: str | None) -> bool:
    return name is not None and name.startswith("numpy.random.") and \
        name.rsplit(".", 1)[1] in NUMPY_RANDOM_FUNCS


def python_random_call(name: str | None) -> bool:
    return name is not None and name.startswith("random.") and \
        name.rsplit(".", 1)[1] in PY_RANDOM_FUNCS


# --- Tensors in Python land ----------------------------------------------------------------

#: Methods that copy a tensor to Python/NumPy: they block on the engine, and fail on a Symbol.
TO_PYTHON_METHODS = frozenset({"asnumpy", "asscalar", "item", "tolist"})
#: Methods and functions that synchronise with the asynchronous engine.
SYNC_METHODS = frozenset({"asnumpy", "asscalar", "item", "tolist", "wait_to_read", "wait_to_write"})
SYNC_FUNCTIONS = frozenset({"mxnet.nd.waitall", "mxnet.npx.waitall", "mxnet.nd.save"})
#: Attributes an NDArray has and a Symbol does not (in MXNet 1.x).
VALUE_ATTRIBUTES = frozenset({"shape", "dtype", "context", "ctx", "size", "ndim", "stype",
                              "grad", "device"})
#: In-place NDArray methods that have no symbolic counterpart.
INPLACE_METHODS = frozenset({"attach_grad", "__setitem__"})
#: `F.*` functions that implement control flow symbolically.
SYMBOLIC_CONTROL_FLOW = frozenset({"where", "contrib.cond", "contrib.foreach",
                                   "contrib.while_loop", "npx.cond", "npx.foreach",
                                   "npx.while_loop", "np.where"})

# --- autograd ------------------------------------------------------------------------------

AUTOGRAD_RECORD = frozenset({"mxnet.autograd.record", "mxnet.autograd.train_mode"})
AUTOGRAD_PAUSE = frozenset({"mxnet.autograd.pause", "mxnet.autograd.predict_mode"})
AUTOGRAD_STATE = frozenset({"mxnet.autograd.is_training", "mxnet.autograd.is_recording"})

# --- Versions ------------------------------------------------------------------------------

MXNET_DIST_PREFIX = "mxnet"
