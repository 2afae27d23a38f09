"""MXL1xx: code that breaks when a HybridBlock is hybridized.

`hybrid_forward(self, F, x)` runs twice in a model's life: imperatively with `F = mx.nd` (what
every unit test sees) and symbolically with `F = mx.sym` once `net.hybridize()` is called, when
`x` is a Symbol with no value, no shape and different indexing semantics. These rules find the
statements that only work in the first mode. The analysis lives in `_hybrid_analysis` (hooks
over `mxlint.taint`) and `_hybrid_checker` (per-file run, helper summaries, cross-file calls).
"""

from __future__ import annotations

from mxlint.rules._hybrid_checker import HybridAnalysis

from mxlint.rule import Example, Rule, Valid

_IMPORTS = "from mxnet import nd, autograd\nfrom mxnet.gluon import nn\n\n"


def _block(body: str, args: str = "x", init: str = "") -> str:
    """A HybridBlock with `body` (4-space indented lines) as its hybrid_forward."""
    init_lines = "".join(f"        {line}\n" for line in init.splitlines())
    return (
        _IMPORTS + "class Net(nn.HybridBlock):\n"
        "    def __init__(self, units=4, **kwargs):\n"
        "        super().__init__(**kwargs)\n"
        "        self.units = units\n"
        "        self.dense = nn.Dense(units)\n"
        + init_lines
        + f"\n    def hybrid_forward(self, F, {args}):\n"
        + "".join(f"        {line}\n" for line in body.splitlines())
    )


#: Line of the first body statement in `_block` without `init`.
_L = 11

_MX2 = (
    "from mxnet import np, npx\nfrom mxnet.gluon import nn\nnpx.set_np()\n\n"
    "class Net(nn.HybridBlock):\n"
    "    def __init__(self, **kwargs):\n"
    "        super().__init__(**kwargs)\n"
    "        self.dense = nn.Dense(4)\n\n"
    "    def forward(self, x):\n"
)

_PLAIN_BLOCK = (
    _IMPORTS + "class Net(nn.Block):\n"
    "    def forward(self, x):\n"
    "        if x.sum() > 0:\n"
    "            x = x * 2\n"
    "        return x[0], len(x), x.shape, x.asnumpy()\n"
)

_GUARDED = _block(
    "y = self.dense(x)\nif F is nd:\n    print(y, y.shape, y.asnumpy())\n"
    "    assert y.sum() > 0\nreturn y"
)


class TensorControlFlow(Rule):
    code = "MXL101"
    name = "tensor-control-flow"
    message = (
        "Python control flow on a tensor value in hybridized code; select with "
        "`F.where(cond, a, b)` instead"
    )
    what = """
        Finds `if`, `while`, conditional expressions, `assert` and `and`/`or`/`not` whose
        condition is a tensor value inside `hybrid_forward` (MXNet 1.x), HybridBlock
        `forward` (MXNet 2), or a helper they call with tensors.
    """
    why = """
        Under `hybridize()` the tensor is a Symbol (or a deferred-compute array): it has no
        value when the graph is built, so `bool()` raises `NotImplementedForSymbol`, or, where
        it is evaluated once, the branch taken on the first batch is frozen into the graph.
        The block passes every imperative test and breaks only once hybridized.
    """
    example = """
        def hybrid_forward(self, F, x):
            if x.sum() > 0:
                x = F.relu(x)
            return x
    """
    use_instead = """
        def hybrid_forward(self, F, x):
            return F.where(x.sum() > 0, F.relu(x), x)
    """
    invalid = (
        Example(_block("y = self.dense(x)\nif y.sum() > 0:\n    y = y * 2\nreturn y"), line=_L + 1),
        Example(_block("while F.norm(x) > 1:\n    x = x / 2\nreturn x"), line=_L),
        Example(_block("return x if x.max() > 0 else -x"), line=_L),
        Example(_block("assert x.min() >= 0\nreturn F.sqrt(x)"), line=_L),
        Example(_block("y = F.relu(x)\nz = y > 0 and self.units\nreturn z"), line=_L + 1),
        Example(
            _block(
                "if mask is not None and mask.sum() > 0:\n    x = x * mask\nreturn x",
                args="x, mask=None",
            ),
            line=_L,
        ),
        Example(
            _block("x = clip(F, x)\nreturn x") + "\n\ndef clip(F, x):\n"
            "    if x.max() > 1:\n        return x / x.max()\n    return x\n",
            line=_L,
        ),
        Example(
            _MX2 + "        y = self.dense(x)\n        if y.sum() > 0:\n"
            "            y = -y\n        return y\n",
            line=12,
            mxnet="2",
        ),
    )
    valid = (
        _block("if self.units > 2:\n    x = self.dense(x)\nreturn x"),
        _block(
            "if mask is None:\n    return self.dense(x)\nreturn self.dense(x) * mask",
            args="x, mask=None",
        ),
        _block(
            "if mask is not None:\n    x = F.broadcast_mul(x, mask)\nreturn x", args="x, mask=None"
        ),
        _block("if isinstance(x, (list, tuple)):\n    x = F.concat(*x)\nreturn x"),
        _block("for i in range(self.units):\n    x = self.dense(x)\nreturn x"),
        _block("return F.where(x > 0, x, F.zeros_like(x))"),
        _block("y = F.contrib.cond(x.sum() > 0, lambda: x, lambda: -x)\nreturn y"),
        _block("x = F.relu(x)\nx = 3\nif x > 2:\n    pass\nreturn x"),
        _GUARDED,
        _block(
            "y = self.dense(x)\nif isinstance(y, nd.NDArray):\n    assert y.sum() > 0\nreturn y"
        ),
        _block("if F is not nd:\n    return x\nif x.sum() > 0:\n    x = -x\nreturn x"),
        _PLAIN_BLOCK,
        Valid(
            _MX2 + "        if self.dense is not None:\n            x = self.dense(x)\n"
            "        return x\n",
            mxnet="2",
        ),
        "from mxnet.gluon import nn\n\nclass Net(nn.Block):\n"
        "    def hybrid_forward(self, F, x):\n        if x.sum() > 0:\n            x = -x\n"
        "        return x\n",
    )


class TensorToPython(Rule):
    code = "MXL102"
    name = "tensor-to-python"
    message = (
        "Tensor value read into Python in hybridized code; keep the computation in `F.*` operators"
    )
    what = """
        Finds `.asnumpy()`, `.asscalar()`, `.item()`, `.tolist()`, `float(x)`/`int(x)`/
        `bool(x)` and `np.array(x)` on tensors in hybridized code and in helpers it calls
        with tensors (across files).
    """
    why = """
        A Symbol has no value: these calls raise under `hybridize()` (MXNet 1.x) and in
        deferred compute (MXNet 2). Where they work imperatively they also block on the
        asynchronous engine every batch.
    """
    example = """
        def hybrid_forward(self, F, x):
            scale = x.max().asscalar()
            return x / scale
    """
    use_instead = """
        def hybrid_forward(self, F, x):
            return F.broadcast_div(x, x.max().reshape((1, 1)))
    """
    invalid = (
        Example(_block("scale = x.asnumpy().max()\nreturn x / scale"), line=_L),
        Example(_block("return x / x.max().asscalar()"), line=_L),
        Example(_block("n = int(x.sum())\nreturn x * n"), line=_L),
        Example(_block("y = self.dense(x)\nreturn y.mean().item()"), line=_L + 1),
        Example(
            _IMPORTS + "from .utils import normalize\n\nclass Net(nn.HybridBlock):\n"
            "    def hybrid_forward(self, F, x):\n        return normalize(x)\n",
            line=8,
            project=(("utils", "def normalize(x):\n    return x / x.abs().max().asscalar()\n"),),
        ),
        Example(
            _IMPORTS + "from .utils import scale\n\nclass Net(nn.HybridBlock):\n"
            "    def hybrid_forward(self, F, x):\n        y = F.relu(x)\n"
            "        return scale(y, 2)\n",
            line=9,
            project=(
                (
                    "utils",
                    "from .ops import peak\n\ndef scale(v, k):\n    return v * k / peak(v)\n",
                ),
                ("ops", "def peak(t):\n    return float(t.max().asnumpy())\n"),
            ),
        ),
        Example(
            _block("return self.norm(x)") + "\n    def norm(self, v):\n"
            "        return v / v.norm().asscalar()\n",
            line=_L,
        ),
        Example(_MX2 + "        return self.dense(x) / x.max().item()\n", line=11, mxnet="2"),
    )
    valid = (
        _block("return F.broadcast_div(x, F.max(x, axis=1, keepdims=True))"),
        _GUARDED,
        _PLAIN_BLOCK,
        _IMPORTS + "from .utils import normalize\n\nclass Net(nn.HybridBlock):\n"
        "    def hybrid_forward(self, F, x):\n        return normalize(F, x)\n",
        Valid(
            _IMPORTS + "from .utils import normalize\n\nclass Net(nn.HybridBlock):\n"
            "    def hybrid_forward(self, F, x):\n        return normalize(F, x)\n",
            project=(("utils", "def normalize(F, x):\n    return F.broadcast_div(x, F.max(x))\n"),),
        ),
        Valid(
            _IMPORTS + "from .utils import report\n\nclass Net(nn.HybridBlock):\n"
            "    def hybrid_forward(self, F, x):\n        report(self.units)\n"
            "        return x\n",
            project=(("utils", "def report(n):\n    print(n.asnumpy())\n"),),
        ),
        _IMPORTS + "def evaluate(net, x):\n    return net(x).asnumpy()\n",
        _block("eps = float(self.units)\nreturn x * eps"),
        Valid(
            _IMPORTS + "from .base import Base\n\nclass Net(Base):\n"
            "    def hybrid_forward(self, F, x):\n        return x.asnumpy()\n",
            project=(("base", "from mxnet.gluon import nn\n\nclass Base(nn.Block):\n    pass\n"),),
        ),
    )


class TensorAttribute(Rule):
    code = "MXL103"
    name = "tensor-attribute"
    message = (
        "`.shape`/`.dtype`/`.context` of a tensor in MXNet 1.x hybridized code; pass "
        "sizes as constructor arguments or use shape-free operators"
    )
    mxnet = "1"
    what = """
        Finds reads of `.shape`, `.dtype`, `.context`/`.ctx`, `.size`, `.ndim` and `.stype` on
        tensors inside MXNet 1.x `hybrid_forward` and the helpers it calls with tensors.
    """
    why = """
        A 1.x Symbol has none of these attributes: `x.shape[0]` raises `AttributeError` once
        the block is hybridized, though every imperative test passes. (MXNet 2's deferred
        compute knows shapes: the rule is 1.x only.)
    """
    example = """
        def hybrid_forward(self, F, x):
            return x.reshape((x.shape[0], -1))
    """
    use_instead = """
        def hybrid_forward(self, F, x):
            return x.reshape((0, -1))  # 0 keeps the dimension, -1 infers it
    """
    invalid = (
        Example(_block("batch = x.shape[0]\nreturn x.reshape((batch, -1))"), line=_L),
        Example(_block("y = self.dense(x)\nreturn F.cast(y, y.dtype)"), line=_L + 1),
        Example(_block("return F.zeros((2, 2), ctx=x.context)"), line=_L),
        Example(_block("q = F.relu(x)\nscale = q.shape[-1] ** 0.5\nreturn q / scale"), line=_L + 1),
        Example(
            _IMPORTS + "from .layers import Base\n\nclass Net(Base):\n"
            "    def hybrid_forward(self, F, x):\n        return x.reshape((x.ndim, -1))\n",
            line=8,
            project=(
                ("layers", "from mxnet.gluon import nn\n\nclass Base(nn.HybridBlock):\n    pass\n"),
            ),
        ),
    )
    valid = (
        _block("return x.reshape((0, -1))"),
        _block("n = F.shape_array(x)\nreturn F.broadcast_like(n, x)"),
        _GUARDED,
        _PLAIN_BLOCK,
        _block("size = self.units\nreturn x.reshape((size, -1))"),
        _block(
            "in_size = self.in_size if self.fixed_size else x.shape[2:]\n"
            "return F.contrib.BilinearResize2D(x, height=in_size[0], width=in_size[1])"
        ),
        _block(
            "out_size = self.calc_size(x) if size is None else size\n"
            "return F.contrib.BilinearResize2D(x, height=out_size[0], width=out_size[1])",
            args="x, size=None",
        )
        + "\n    def calc_size(self, x):\n"
        "        return x.shape[2] * 2, x.shape[3] * 2\n",
        Valid(_MX2 + "        return x.reshape((x.shape[0], -1))\n", mxnet="2"),
    )


class TensorAsSequence(Rule):
    code = "MXL104"
    name = "tensor-as-sequence"
    message = (
        "Tensor used as a Python sequence in MXNet 1.x hybridized code; use "
        "`F.slice_axis`/`F.take`/`F.split`"
    )
    mxnet = "1"
    what = """
        Finds `len(x)`, iteration (`for row in x`, `enumerate(x)`), tuple-unpacking and
        indexing or slicing (`x[0]`, `x[:, 1]`) of tensors inside MXNet 1.x `hybrid_forward`.
        Multi-output operators (`F.split`, RNN cells) return groups and are not reported.
    """
    why = """
        A Symbol is a sequence of its *outputs*: `x[0]` on a single-output Symbol returns the
        whole tensor instead of the first row, `len(x)` is 1, and `x[:, 1]` raises. The
        imperative run (NDArray) and the hybridized run silently compute different things.
    """
    example = """
        def hybrid_forward(self, F, x):
            outs = [self.cell(x[t]) for t in range(len(x))]
            return F.stack(*outs)
    """
    use_instead = """
        def hybrid_forward(self, F, x):
            steps = F.split(x, num_outputs=self.seq_len, axis=0, squeeze_axis=True)
            return F.stack(*[self.cell(s) for s in steps])
    """
    invalid = (
        Example(_block("y = self.dense(x)\nreturn y[0]"), line=_L + 1),
        Example(
            _block("out = []\nfor t in range(len(x)):\n    out.append(x[t])\nreturn F.stack(*out)"),
            line=_L + 1,
        ),
        Example(_block("for row in x:\n    pass\nreturn x"), line=_L),
        Example(_block("a, b = F.relu(x)\nreturn a + b"), line=_L),
        Example(_block("return x[:, 0]"), line=_L),
        Example(_block("return F.stack(*[r * 2 for r in x])"), line=_L),
    )
    valid = (
        _block("a, b = F.split(x, num_outputs=2, axis=1)\nreturn a + b"),
        _block("parts = F.split(x, num_outputs=3)\nreturn parts[0] + parts[2]"),
        _block("return F.slice_axis(x, axis=0, begin=0, end=1)"),
        _block("for layer in self._children.values():\n    x = layer(x)\nreturn x"),
        _block("h = states[0]\nreturn x + h", args="x, states"),
        _block(
            "out, new_states = self.cell(x, states)\nreturn out, new_states",
            args="x, states",
            init="self.cell = rnn.LSTMCell(4)",
        ).replace("from mxnet.gluon import nn", "from mxnet.gluon import nn, rnn"),
        _block("return args[0] + x", args="x, *args"),
        _block(
            "for i in range(self.units):\n    x[i] = self.dense(x[i])\nreturn x[0]", args="x0, x"
        ),
        _block(
            "return F.contrib.BilinearResize2D(x, height=out_size[0], width=out_size[1])",
            args="x, out_size",
        ),
        _block(
            "if hc is None:\n    h = [F.zeros_like(x)] * 2\nelse:\n    h, c = hc\nreturn x + h[0]",
            args="x, hc=None",
        ),
        _block(
            "outs = []\nfor block, xi in zip(self._children.values(), x):\n"
            "    outs.append(block(xi))\nreturn F.concat(*outs, dim=1)"
        ),
        _block("x = [x0] + rest\nreturn F.concat(x[0], x[1], dim=1)", args="x0, rest"),
        _block("targets, masks = F.contrib.box_encode(x, x, x, x, x, x)\nreturn targets"),
        _block("a, b = F.amp_multicast(x, x, num_outputs=2)\nreturn a + b"),
        _GUARDED,
        _PLAIN_BLOCK,
        Valid(_MX2 + "        return x[0] + len(x)\n", mxnet="2"),
    )


class ImperativeOpInHybrid(Rule):
    code = "MXL105"
    name = "imperative-op-in-hybrid"
    message = "Imperative `nd.*` call in hybridized code; call `F.*` instead"
    fixable = "safe"
    what = """
        Finds calls of `nd.*`/`mx.nd.*` (and `mx.np`/`npx` in 1.x code) inside
        `hybrid_forward` and the helpers it calls, and legacy `mx.nd.*` calls in an MXNet 2
        HybridBlock `forward`.
    """
    why = """
        `nd.relu(x)` works while `F` is `mx.nd`; under `hybridize()` `x` is a Symbol and the
        NDArray function rejects it (or, for creators like `nd.zeros`, builds a constant that
        cannot be combined with Symbols). The `F` argument exists so that one body serves both
        modes.
    """
    example = """
        def hybrid_forward(self, F, x):
            return nd.relu(self.dense(x))
    """
    use_instead = """
        def hybrid_forward(self, F, x):
            return F.relu(self.dense(x))
    """
    fix_safety = """
        Replacing `nd.op` by `F.op` is safe for operators whose symbolic twin takes the same
        arguments (elementwise math, reductions, `reshape`, `concat`, layers' operators...).
        For other calls (creators such as `nd.zeros`, random samplers) the fix is unsafe: the
        symbolic version may need different arguments (no `ctx`, known shapes). Calls with
        `ctx=` and `nd.array(...)` get no fix.
    """
    invalid = (
        Example(
            _block("return nd.relu(self.dense(x))"),
            line=_L,
            expected_fix=_block("return F.relu(self.dense(x))"),
        ),
        Example(
            _block("return mx.nd.softmax(x, axis=-1)").replace(
                "from mxnet import nd", "import mxnet as mx\nfrom mxnet import nd"
            ),
            line=_L + 1,
            expected_fix=_block("return F.softmax(x, axis=-1)").replace(
                "from mxnet import nd", "import mxnet as mx\nfrom mxnet import nd"
            ),
        ),
        Example(_block("noise = nd.random.normal(shape=(2, 4))\nreturn x + noise"), line=_L),
        Example(_block("return x + nd.array([1, 2, 3, 4])"), line=_L),
        Example(
            _block("return helper(x)") + "\n\ndef helper(v):\n    return nd.sigmoid(v)\n", line=_L
        ),
        Example(
            _MX2.replace("from mxnet import np, npx", "from mxnet import np, npx, nd")
            + "        return nd.relu(self.dense(x))\n",
            line=11,
            mxnet="2",
        ),
    )
    valid = (
        _block("return F.relu(x)"),
        _GUARDED.replace("print(y, y.shape, y.asnumpy())", "print(nd.relu(y))"),
        _IMPORTS + "def train_step(net, x):\n    return nd.relu(net(x))\n",
        _PLAIN_BLOCK.replace("return x[0]", "return nd.relu(x), x[0]"),
        _block("if isinstance(x, nd.NDArray):\n    x = nd.relu(x)\nreturn x"),
        Valid(_MX2 + "        return np.tanh(self.dense(x))\n", mxnet="2"),
    )


class PrintTensorInHybrid(Rule):
    code = "MXL106"
    name = "print-tensor-in-hybrid"
    message = (
        "`print` of a tensor in hybridized code prints a Symbol, not values; guard "
        "debugging output with `if F is nd:`"
    )
    what = """
        Finds `print(...)` calls with a tensor argument in hybridized code.
    """
    why = """
        Once hybridized, `hybrid_forward` runs once to build the graph: the print shows a
        Symbol's name (MXNet 1.x) or fails (MXNet 2 deferred compute), then never runs again.
        Debugging output that seems to work imperatively is silently gone in training.
    """
    example = """
        def hybrid_forward(self, F, x):
            y = self.dense(x)
            print(y)
            return y
    """
    use_instead = """
        def hybrid_forward(self, F, x):
            y = self.dense(x)
            if F is nd:  # imperative runs only
                print(y)
            return y
    """
    invalid = (
        Example(_block("y = self.dense(x)\nprint(y)\nreturn y"), line=_L + 1),
        Example(_block("print('input', x)\nreturn x"), line=_L),
        Example(_MX2 + "        print(x)\n        return self.dense(x)\n", line=11, mxnet="2"),
    )
    valid = (
        _block("print('units', self.units)\nreturn x"),
        _GUARDED,
        _PLAIN_BLOCK.replace("return x[0]", "print(x)\n        return x[0]"),
        _block("if F is mx.sym:\n    return x\nprint(x)\nreturn x").replace(
            "from mxnet import nd", "import mxnet as mx\nfrom mxnet import nd"
        ),
    )


class InplaceOpInHybrid(Rule):
    code = "MXL107"
    name = "inplace-op-in-hybrid"
    message = "In-place write to a tensor in hybridized code; assign a new value instead"
    what = """
        Finds augmented assignment (`x += y`), slice assignment (`x[...] = v`) and `out=`
        arguments on tensors in hybridized code.
    """
    why = """
        A Symbol raises `NotImplementedForSymbol` for `+=` and has no item assignment, and
        while autograd records (the imperative training run) in-place writes fail with
        "Inplace operations are not supported when recording with autograd".
    """
    example = """
        def hybrid_forward(self, F, x, residual):
            x = F.relu(x)
            x += residual
            return x
    """
    use_instead = """
        def hybrid_forward(self, F, x, residual):
            x = F.relu(x)
            x = x + residual
            return x
    """
    invalid = (
        Example(_block("y = F.relu(x)\ny += 1\nreturn y"), line=_L + 1),
        Example(_block("x[:, 0] = 0\nreturn x"), line=_L),
        Example(_block("F.relu(x, out=x)\nreturn x"), line=_L),
        Example(_block("h = self.dense(x)\nh *= mask\nreturn h", args="x, mask"), line=_L + 1),
    )
    valid = (
        _block("total = 0\nfor i in range(self.units):\n    total += i\nreturn x * total"),
        _block("y = F.relu(x)\ny = y + 1\nreturn y"),
        _block("outs = {}\nouts['a'] = x\nreturn outs['a']"),
        _PLAIN_BLOCK.replace("return x[0]", "x += 1\n        return x[0]"),
        _block("acc = x\nacc = acc + 1\nreturn acc"),
    )


class AutogradStateInHybrid(Rule):
    code = "MXL108"
    name = "autograd-state-in-hybrid"
    message = (
        "`autograd.is_training()`/`is_recording()` in hybridized code is frozen when "
        "the graph is built; use mode-aware operators or a constructor argument"
    )
    what = """
        Finds `autograd.is_training()` and `autograd.is_recording()` read inside hybridized
        code (typically to branch between training and inference behaviour).
    """
    why = """
        A hybridized block traces `hybrid_forward` once and caches the graph: the mode seen on
        that first call (often inference, from a shape check) is baked in, so training
        silently runs the inference branch or vice versa.
    """
    example = """
        def hybrid_forward(self, F, x):
            if autograd.is_training():
                x = x * F.random.uniform(shape=(1,))
            return x
    """
    use_instead = """
        def hybrid_forward(self, F, x):
            return F.Dropout(x, p=0.1)  # follows the mode at run time
    """
    invalid = (
        Example(_block("if autograd.is_training():\n    x = x * 0.5\nreturn x"), line=_L),
        Example(
            _block("p = 0.5 if autograd.is_recording() else 0.0\nreturn F.Dropout(x, p=p)"), line=_L
        ),
        Example(
            _block("return helper(x)") + "\n\ndef helper(v):\n"
            "    if autograd.is_training():\n        return v * 2\n    return v\n",
            line=_L,
        ),
        Example(
            _MX2.replace("from mxnet import np, npx", "from mxnet import np, npx, autograd")
            + "        if autograd.is_training():\n            x = x * 2\n"
            "        return x\n",
            line=11,
            mxnet="2",
        ),
    )
    valid = (
        _block("return F.Dropout(x, p=0.5)"),
        _IMPORTS + "def step(net, x):\n    if autograd.is_training():\n        return net(x)\n",
        _PLAIN_BLOCK.replace("if x.sum() > 0:", "if autograd.is_training():"),
        _block("if F is nd and autograd.is_training():\n    pass\nreturn x"),
    )


class HybridizationChecker(HybridAnalysis):
    """Reports the hybridization family; the analysis is `HybridAnalysis`."""

    rules = (
        TensorControlFlow,
        TensorToPython,
        TensorAttribute,
        TensorAsSequence,
        ImperativeOpInHybrid,
        PrintTensorInHybrid,
        InplaceOpInHybrid,
        AutogradStateInHybrid,
    )
