"""MXL2xx: device contexts — parameters and data on different contexts.

The analysis (where each value lives) is in `mxlint.placement`; this module decides which of
its events are findings, and spells messages and fixes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

import libcst as cst

from mxlint import knowledge
from mxlint.checker import Checker, FixSpec, NodeEdit
from mxlint.names import dotted_name
from mxlint.placement import (
    Ctx,
    Env,
    ForwardCreations,
    InitNoCtx,
    LossCall,
    Net,
    NetCall,
    ParamRead,
    Scope,
    Tensor,
    context_helpers,
    module_env_copy,
    parameter_env,
    tensor_parameters,
)
from mxlint.rule import Example, Rule, Valid
from mxlint.walker import iter_nodes

# --- rules ----------------------------------------------------------------------------------


class DataContextMismatch(Rule):
    code = "MXL201"
    name = "data-context-mismatch"
    message = (
        "`{net}` has its parameters on `{ctx}` but {origin} is fed to it unmoved; move "
        "the batch with `{arg}.as_in_context({ctx})` or "
        "`gluon.utils.split_and_load({arg}, {ctx})` before calling `{net}`"
    )
    what = """
        Finds data fed to a network (`net(x)`, `net.forward(x)`, or a loss of `net(x)`) that
        lives on a different context than the network's parameters: parameters placed on a
        (possibly GPU) context with `initialize(ctx=...)`, `load_parameters(..., ctx=...)`,
        `collect_params().reset_ctx(...)` or a pretrained model-zoo factory, and data that
        comes from a DataLoader, `nd.array(...)`/`nd.load(...)` or an image reader without
        being moved. Also the reverse: data moved to a GPU fed to a network initialised with
        no `ctx` (on the CPU).
    """
    why = """
        MXNet does not move data for you. An operator whose inputs live on different
        contexts fails with `Check failed: ... on the same context` (or, for parameters,
        `Parameter ... was not initialized on context cpu(0)`) — typically after the job was
        queued on a GPU node, since the same script works on a CPU-only laptop.
    """
    example = """
        ctx = mx.gpu(0)
        net.initialize(ctx=ctx)
        for data, label in train_loader:
            with autograd.record():
                loss = loss_fn(net(data), label)
    """
    use_instead = """
        ctx = mx.gpu(0)
        net.initialize(ctx=ctx)
        for data, label in train_loader:
            data = data.as_in_context(ctx)
            label = label.as_in_context(ctx)
            with autograd.record():
                loss = loss_fn(net(data), label)
    """
    fix_safety = """
        The fix wraps the argument in `.as_in_context(ctx)`. It is unsafe: it copies the batch
        to another device on every call, which changes where memory is used and may hide that
        the whole pipeline was meant to run elsewhere. Offered only for a single context
        spelled by a variable or a constant expression.
    """
    fixable = "unsafe"
    invalid = (
        Example(
            "import mxnet as mx\nfrom mxnet import gluon, autograd\n\n"
            "def train(net, dataset, epochs=1):\n"
            "    ctx = mx.gpu(0)\n"
            "    net.initialize(ctx=ctx)\n"
            "    loader = gluon.data.DataLoader(dataset, batch_size=32, shuffle=True)\n"
            "    for data, label in loader:\n"
            "        out = net(data)\n",
            line=9,
            expected_fix=(
                "import mxnet as mx\nfrom mxnet import gluon, autograd\n\n"
                "def train(net, dataset, epochs=1):\n"
                "    ctx = mx.gpu(0)\n"
                "    net.initialize(ctx=ctx)\n"
                "    loader = gluon.data.DataLoader(dataset, batch_size=32, shuffle=True)\n"
                "    for data, label in loader:\n"
                "        out = net(data.as_in_context(ctx))\n"
            ),
        ),
        Example(
            "import mxnet as mx\nfrom mxnet import nd\nfrom mxnet.gluon.model_zoo import vision\n"
            "ctx = mx.gpu()\n"
            "net = vision.resnet18_v1(pretrained=True, ctx=ctx)\n"
            "img = nd.array(load_image('cat.jpg'))\n"
            "prob = net(img).softmax()\n",
            line=7,
        ),
        Example(
            "import mxnet as mx\nfrom mxnet import gluon, nd\n"
            "ctx = mx.gpu(0) if mx.context.num_gpus() > 0 else mx.cpu()\n"
            "net = gluon.nn.Dense(10)\n"
            "net.load_parameters('net.params', ctx=ctx)\n"
            "x = nd.load('batch.nd')[0]\n"
            "print(net.forward(x))\n",
            line=7,
        ),
        Example(
            "import mxnet as mx\nfrom mxnet import gluon\n"
            "ctx = [mx.gpu(0), mx.gpu(1)]\n"
            "net = gluon.nn.Dense(10)\n"
            "net.initialize(ctx=ctx)\n"
            "loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()\n"
            "train_data = gluon.data.DataLoader(dataset, batch_size=64)\n"
            "for i, (x, y) in enumerate(train_data):\n"
            "    l = loss_fn(net(x), y)\n",
            line=9,
        ),
        Example(
            "import mxnet as mx\nfrom mxnet import gluon\n\n"
            "def fit(train_data, ctx=mx.gpu()):\n"
            "    net = gluon.nn.Dense(10)\n"
            "    net.initialize(ctx=ctx)\n"
            "    loss_fn = gluon.loss.L2Loss()\n"
            "    for batch in train_data:\n"
            "        x = batch[0].as_in_context(ctx)\n"
            "        y = batch[1]\n"
            "        l = loss_fn(net(x), y)\n",
            line=11,
        ),
        Example(
            "import mxnet as mx\nfrom mxnet import gluon\n\n"
            "class Trainer:\n"
            "    def __init__(self, ctx=mx.gpu()):\n"
            "        self.ctx = ctx\n"
            "        self.net = gluon.nn.Dense(10)\n"
            "        self.net.initialize(ctx=self.ctx)\n\n"
            "    def step(self, train_loader):\n"
            "        for x, y in train_loader:\n"
            "            out = self.net(x)\n",
            line=12,
            expected_fix=(
                "import mxnet as mx\nfrom mxnet import gluon\n\n"
                "class Trainer:\n"
                "    def __init__(self, ctx=mx.gpu()):\n"
                "        self.ctx = ctx\n"
                "        self.net = gluon.nn.Dense(10)\n"
                "        self.net.initialize(ctx=self.ctx)\n\n"
                "    def step(self, train_loader):\n"
                "        for x, y in train_loader:\n"
                "            out = self.net(x.as_in_context(self.ctx))\n"
            ),
        ),
        Example(
            "import mxnet as mx\nfrom mxnet import gluon, nd\n"
            "ctx = mx.gpu()\n"
            "net = gluon.nn.Dense(2)\n"
            "net.initialize()\n"
            "x = nd.ones((4, 3), ctx=ctx)\n"
            "y = net(x)\n",
            line=7,
        ),
    )
    valid = (
        # moved with as_in_context
        "import mxnet as mx\nfrom mxnet import gluon\nctx = mx.gpu()\n"
        "net = gluon.nn.Dense(1)\nnet.initialize(ctx=ctx)\n"
        "loader = gluon.data.DataLoader(ds, batch_size=8)\n"
        "for x, y in loader:\n    x = x.as_in_context(ctx)\n    y = y.as_in_context(ctx)\n"
        "    out = net(x)\n",
        # conditional context, moved through the variable
        "import mxnet as mx\nfrom mxnet import gluon\n"
        "ctx = mx.gpu(0) if mx.context.num_gpus() else mx.cpu()\n"
        "net = gluon.nn.Dense(1)\nnet.initialize(ctx=ctx)\n"
        "for x, y in gluon.data.DataLoader(ds, batch_size=8):\n"
        "    out = net(x.as_in_context(ctx))\n",
        # split_and_load + comprehension
        "import mxnet as mx\nfrom mxnet import gluon\nctx = [mx.gpu(i) for i in range(2)]\n"
        "net = gluon.nn.Dense(1)\nnet.initialize(ctx=ctx)\n"
        "for batch in gluon.data.DataLoader(ds, batch_size=8):\n"
        "    data = gluon.utils.split_and_load(batch[0], ctx_list=ctx)\n"
        "    outs = [net(X) for X in data]\n",
        # a helper that moves the batch (unknown function -> unknown placement)
        "import mxnet as mx\nfrom mxnet import gluon\n"
        "def to_ctx(batch, ctx):\n    return [b.as_in_context(ctx) for b in batch]\n"
        "ctx = mx.gpu()\nnet = gluon.nn.Dense(1)\nnet.initialize(ctx=ctx)\n"
        "for batch in gluon.data.DataLoader(ds, batch_size=8):\n"
        "    data, label = to_ctx(batch, ctx)\n    out = net(data)\n",
        # created with ctx / copied
        "import mxnet as mx\nfrom mxnet import nd, gluon\nctx = mx.gpu()\n"
        "net = gluon.nn.Dense(1)\nnet.load_parameters('p.params', ctx=ctx)\n"
        "x = nd.array([[1, 2]], ctx=ctx)\nprint(net(x))\n",
        "import mxnet as mx\nctx = mx.gpu()\nnet = build()\nnet.initialize(ctx=ctx)\n"
        "train_iter = mx.io.NDArrayIter(X, Y, 32)\n"
        "for batch in train_iter:\n    data = batch.data[0].copyto(ctx)\n    out = net(data)\n",
        # CPU-only script
        "import mxnet as mx\nfrom mxnet import gluon, nd\nctx = mx.cpu()\n"
        "net = gluon.nn.Dense(1)\nnet.initialize(ctx=ctx)\nprint(net(nd.ones((1, 2))))\n",
        # library code: the net's placement is unknown
        "from mxnet import gluon\n\ndef evaluate(net, loader):\n"
        "    for x, y in loader:\n        out = net(x)\n",
        "import mxnet as mx\nfrom mxnet import gluon\n\ndef train(net, data, ctx):\n"
        "    net.initialize(ctx=ctx)\n    out = net(data.as_in_context(ctx))\n",
        # data came from a moved tensor
        "import mxnet as mx\nfrom mxnet import nd, gluon\nctx = mx.gpu()\n"
        "net = gluon.nn.Dense(1)\nnet.initialize(ctx=ctx)\n"
        "x = nd.ones((2, 2)).as_in_context(ctx)\nz = (x * 2).reshape((4, 1))\nnet(z)\n",
        # everything under `with mx.gpu():` lands on the gpu
        "import mxnet as mx\nfrom mxnet import nd, gluon\n"
        "with mx.gpu(0):\n    net = gluon.nn.Dense(1)\n    net.initialize()\n"
        "    x = nd.ones((2, 2))\n    print(net(x))\n",
        # metrics accept any context
        "import mxnet as mx\nfrom mxnet import gluon\nctx = mx.gpu()\n"
        "net = gluon.nn.Dense(1)\nnet.initialize(ctx=ctx)\nmetric = mx.metric.Accuracy()\n"
        "for x, y in gluon.data.DataLoader(ds, batch_size=4):\n"
        "    out = net(x.as_in_context(ctx))\n    metric.update([y], [out])\n",
        # zeros_like follows its argument
        "import mxnet as mx\nfrom mxnet import nd, gluon\nctx = mx.gpu()\n"
        "net = gluon.nn.Dense(1)\nnet.initialize(ctx=ctx)\n"
        "x = nd.ones((1, 3), ctx=ctx)\nnet(nd.zeros_like(x))\n",
        # d2l style: moved with a tuple assignment; `net` is a parameter placed here
        "import mxnet as mx\nfrom mxnet import gluon, autograd\n\n"
        "def train(net, train_iter, device=mx.gpu()):\n"
        "    net.initialize(force_reinit=True, ctx=device)\n"
        "    loss = gluon.loss.SoftmaxCrossEntropyLoss()\n"
        "    for i, (X, y) in enumerate(train_iter):\n"
        "        X, y = X.as_in_ctx(device), y.as_in_ctx(device)\n"
        "        with autograd.record():\n            l = loss(net(X), y)\n",
        # another function moves the module-level network: unknown in `evaluate`
        "import mxnet as mx\nfrom mxnet import gluon, nd\nnet = gluon.nn.Dense(3)\n"
        "net.initialize()\n\ndef train(ctx=mx.gpu()):\n"
        "    net.collect_params().reset_ctx(ctx)\n\n"
        "def evaluate(ctx=mx.gpu()):\n    return net(nd.ones((1, 2), ctx=ctx))\n",
        # a network rebuilt after placement is not placed
        "import mxnet as mx\nfrom mxnet import gluon, nd\nnet = gluon.nn.Dense(1)\n"
        "net.initialize(ctx=mx.gpu())\nnet = gluon.nn.Dense(2)\nnet(nd.ones((1, 2)))\n",
        # the reverse direction, fixed by reset_ctx
        "import mxnet as mx\nfrom mxnet import gluon, nd\nctx = mx.gpu()\n"
        "net = gluon.nn.Dense(1)\nnet.initialize()\nnet.collect_params().reset_ctx(ctx)\n"
        "net(nd.ones((1, 2), ctx=ctx))\n",
        # reset_ctx after loading moves parameters to the data
        "import mxnet as mx\nfrom mxnet import gluon, nd\nnet = gluon.nn.Dense(1)\n"
        "net.initialize(ctx=mx.gpu())\nnet.collect_params().reset_ctx(mx.cpu())\n"
        "net(nd.ones((1, 2)))\n",
    )


class TensorCreatedWithoutCtx(Rule):
    code = "MXL202"
    name = "tensor-created-without-ctx"
    message = (
        "`{creator}` inside `{method}` has no `ctx` and lands on the default context "
        "(cpu) while the inputs may be on a GPU; create it on the input's context "
        "(`ctx={arg}.context`) or use `zeros_like`/`ones_like`"
    )
    what = """
        Finds NDArrays created without `ctx=` (`nd.zeros(shape)`, `nd.array(...)`,
        `nd.random.uniform(...)`, `mx.np.ones(...)`) inside a Block's `forward` (or an
        imperative `nd.*` call in `hybrid_forward`) and then combined with the forward's
        tensor inputs (arithmetic, an `nd`/`F` operator, a sub-layer call, a slice assignment).
    """
    why = """
        A creator without `ctx` uses the current default context, which is `cpu(0)`. The
        block works on CPU and fails as soon as its inputs and parameters are on a GPU. The
        input's context is known inside `forward`: `x.context`.

        `F.zeros(shape)` in `hybrid_forward` is not reported: once hybridized the graph is
        bound on the inputs' context, and `ctx=` cannot be passed symbolically. If the block
        also runs un-hybridized on a GPU, prefer `F.zeros_like(x)`/`F.ones_like(x)`.
    """
    example = """
        class Decoder(gluon.Block):
            def forward(self, x):
                h = nd.zeros((x.shape[0], self.hidden))
                return self.cell(x, h)
    """
    use_instead = """
        class Decoder(gluon.Block):
            def forward(self, x):
                h = nd.zeros((x.shape[0], self.hidden), ctx=x.context)
                return self.cell(x, h)
    """
    fix_safety = """
        The fix adds `ctx=<first input>.context` to the creator. It is unsafe: it changes where
        the tensor's memory lives, and the first input is not always the one combined with it.
    """
    fixable = "unsafe"
    invalid = (
        Example(
            "from mxnet import gluon, nd\n\n"
            "class Decoder(gluon.Block):\n"
            "    def forward(self, x):\n"
            "        h = nd.zeros((x.shape[0], 16))\n"
            "        return self.cell(x, h)\n",
            line=5,
            expected_fix=(
                "from mxnet import gluon, nd\n\n"
                "class Decoder(gluon.Block):\n"
                "    def forward(self, x):\n"
                "        h = nd.zeros((x.shape[0], 16), ctx=x.context)\n"
                "        return self.cell(x, h)\n"
            ),
        ),
        Example(
            "import mxnet as mx\nfrom mxnet import gluon\n\n"
            "class Noise(gluon.HybridBlock):\n"
            "    def hybrid_forward(self, F, x):\n"
            "        eps = mx.nd.random.normal(0, 1, shape=(4, 4))\n"
            "        return x + eps\n",
            line=6,
        ),
        Example(
            "from mxnet import gluon, nd\n\n"
            "class Masked(gluon.nn.Block):\n"
            "    def forward(self, x, lengths):\n"
            "        mask = nd.array([[1, 1, 0]])\n"
            "        out = nd.broadcast_mul(x, mask)\n"
            "        return out\n",
            line=5,
        ),
        Example(
            "from mxnet import gluon, nd\n\n"
            "class RNNLoop(gluon.Block):\n"
            "    def forward(self, inputs):\n"
            "        state = nd.zeros((inputs.shape[1], 8))\n"
            "        outs = []\n"
            "        for t in range(inputs.shape[0]):\n"
            "            state = self.cell(inputs[t], state)\n"
            "            outs.append(state)\n"
            "        return nd.stack(*outs)\n",
            line=5,
        ),
        Example(
            "from mxnet import gluon, nd\n\n"
            "class Tagger(gluon.Block):\n"
            "    def forward(self, x):\n"
            "        state = self.lstm.begin_state(batch_size=x.shape[1])\n"
            "        out, _ = self.lstm(x, state)\n"
            "        return out\n",
            line=5,
            expected_fix=(
                "from mxnet import gluon, nd\n\n"
                "class Tagger(gluon.Block):\n"
                "    def forward(self, x):\n"
                "        state = self.lstm.begin_state(batch_size=x.shape[1], ctx=x.context)\n"
                "        out, _ = self.lstm(x, state)\n"
                "        return out\n"
            ),
        ),
        Example(
            "from mxnet import gluon, np\n\n"
            "class Pos(gluon.Block):\n"
            "    def forward(self, x):\n"
            "        pos = np.arange(x.shape[1])\n"
            "        return x + pos\n",
            line=5,
            mxnet="2",
            expected_fix=(
                "from mxnet import gluon, np\n\n"
                "class Pos(gluon.Block):\n"
                "    def forward(self, x):\n"
                "        pos = np.arange(x.shape[1], device=x.device)\n"
                "        return x + pos\n"
            ),
        ),
    )
    valid = (
        "from mxnet import gluon, nd\n\nclass A(gluon.Block):\n    def forward(self, x):\n"
        "        h = nd.zeros((x.shape[0], 4), ctx=x.context)\n        return x + h\n",
        "from mxnet import gluon, nd\n\nclass A(gluon.Block):\n    def forward(self, x):\n"
        "        return x + nd.zeros_like(x)\n",
        "from mxnet import gluon, nd\n\nclass A(gluon.HybridBlock):\n"
        "    def hybrid_forward(self, F, x):\n        return x + F.zeros((1, 4))\n",
        "from mxnet import gluon, nd\n\nclass A(gluon.Block):\n    def forward(self, x):\n"
        "        h = nd.zeros((1, 4)).as_in_context(x.context)\n        return x + h\n",
        # created but never combined with the inputs
        "from mxnet import gluon, nd\n\nclass A(gluon.Block):\n    def forward(self, x):\n"
        "        self.cache = nd.zeros((1,))\n        return self.dense(x)\n",
        # outside a forward
        "from mxnet import gluon, nd\n\nclass A(gluon.Block):\n    def __init__(self):\n"
        "        super().__init__()\n        self.bias0 = nd.zeros((4,))\n"
        "    def begin_state(self, x):\n        return x + nd.zeros((4,))\n",
        # shapes and Python numbers are not tensors
        "from mxnet import gluon, nd\n\nclass A(gluon.Block):\n    def forward(self, x):\n"
        "        n = nd.arange(10).asnumpy()\n        return x.reshape((x.shape[0], n.size))\n",
        # created on the context the caller passes
        "from mxnet import gluon, nd\n\nclass A(gluon.Block):\n    def forward(self, x, ctx):\n"
        "        return x + nd.ones((1,), ctx)\n",
        # a CPU-only script
        "import mxnet as mx\nfrom mxnet import gluon, nd\n\nclass A(gluon.Block):\n"
        "    def forward(self, x):\n        return x + nd.ones((1,))\n\n"
        "net = A()\nnet.initialize(ctx=mx.cpu())\n",
        # not a Block
        "from mxnet import nd\n\nclass Helper:\n    def forward(self, x):\n"
        "        return x + nd.ones((1,))\n",
        # states on the input's context, or made by F.zeros, or under `with x.context:`
        "from mxnet import gluon, nd\n\nclass T(gluon.Block):\n    def forward(self, x):\n"
        "        s = self.lstm.begin_state(batch_size=x.shape[1], ctx=x.context)\n"
        "        return self.lstm(x, s)\n",
        "from mxnet import gluon\n\nclass T(gluon.HybridBlock):\n"
        "    def hybrid_forward(self, F, x):\n"
        "        s = self.lstm.begin_state(func=F.zeros, batch_size=0)\n"
        "        return self.lstm(x, s)\n",
        "from mxnet import gluon, nd\n\nclass T(gluon.Block):\n    def forward(self, x):\n"
        "        with x.context:\n            h = nd.zeros((x.shape[0], 4))\n"
        "        return x + h\n",
        # MXNet 2: a HybridBlock's forward is hybridized
        Valid(
            "from mxnet import gluon, np\n\nclass P(gluon.HybridBlock):\n"
            "    def forward(self, x):\n        return x + np.arange(x.shape[1])\n",
            mxnet="2",
        ),
    )


class InitializeWithoutCtx(Rule):
    code = "MXL203"
    name = "initialize-without-ctx"
    message = (
        "`{block}.initialize()` has no `ctx`: the new layer's parameters land on cpu "
        "while the model is on `{ctx}`; pass `ctx={ctx}` (or call "
        "`collect_params().reset_ctx({ctx})` afterwards)"
    )
    what = """
        Finds a new layer `initialize()`d without `ctx` after (or before being attached to) a
        model whose parameters were placed on a (possibly GPU) context — the classic
        fine-tuning step of replacing the output layer of a pretrained network.
    """
    why = """
        `initialize()` without `ctx` puts the parameters on the current default context,
        `cpu(0)`. The rest of the model is on the GPU, so the first forward pass fails with
        `Parameter ... was not initialized on context gpu(0)`. A later
        `collect_params().reset_ctx(ctx)` would fix it; this rule stays silent then.
    """
    example = """
        net = vision.resnet50_v1(pretrained=True, ctx=ctx)
        with net.name_scope():
            net.output = nn.Dense(num_classes)
        net.output.initialize(init.Xavier())
    """
    use_instead = """
        net = vision.resnet50_v1(pretrained=True, ctx=ctx)
        with net.name_scope():
            net.output = nn.Dense(num_classes)
        net.output.initialize(init.Xavier(), ctx=ctx)
    """
    fix_safety = """
        The fix adds `ctx=<the model's context>` to the call. It is unsafe: it changes where the
        layer's memory lives. Offered only when the context is a variable or a constant
        expression.
    """
    fixable = "unsafe"
    invalid = (
        Example(
            "import mxnet as mx\nfrom mxnet import init\nfrom mxnet.gluon import nn\n"
            "from mxnet.gluon.model_zoo import vision\n"
            "ctx = mx.gpu()\n"
            "net = vision.resnet50_v1(pretrained=True, ctx=ctx)\n"
            "with net.name_scope():\n"
            "    net.output = nn.Dense(10)\n"
            "net.output.initialize(init.Xavier())\n",
            line=9,
            expected_fix=(
                "import mxnet as mx\nfrom mxnet import init\nfrom mxnet.gluon import nn\n"
                "from mxnet.gluon.model_zoo import vision\n"
                "ctx = mx.gpu()\n"
                "net = vision.resnet50_v1(pretrained=True, ctx=ctx)\n"
                "with net.name_scope():\n"
                "    net.output = nn.Dense(10)\n"
                "net.output.initialize(init.Xavier(), ctx=ctx)\n"
            ),
        ),
        Example(
            "import mxnet as mx\nfrom mxnet.gluon import nn\n\n"
            "def build(ctx=mx.gpu(0)):\n"
            "    body = nn.HybridSequential()\n"
            "    body.initialize(ctx=ctx)\n"
            "    head = nn.Dense(2)\n"
            "    head.initialize()\n"
            "    body.add(head)\n"
            "    return body\n",
            line=8,
        ),
        Example(
            "import mxnet as mx\nimport gluoncv\nfrom mxnet.gluon import nn\n"
            "ctx = [mx.gpu(i) for i in range(4)]\n"
            "net = gluoncv.model_zoo.get_model('resnet18_v1b', pretrained=True, ctx=ctx)\n"
            "net.fc = nn.Dense(5)\n"
            "net.fc.initialize()\n",
            line=7,
        ),
    )
    valid = (
        "import mxnet as mx\nfrom mxnet.gluon import nn\nfrom mxnet.gluon.model_zoo import vision\n"
        "ctx = mx.gpu()\nnet = vision.resnet18_v1(pretrained=True, ctx=ctx)\n"
        "net.output = nn.Dense(10)\nnet.output.initialize(ctx=ctx)\n",
        # reset_ctx afterwards moves everything
        "import mxnet as mx\nfrom mxnet.gluon import nn\nfrom mxnet.gluon.model_zoo import vision\n"
        "ctx = mx.gpu()\nnet = vision.resnet18_v1(pretrained=True, ctx=ctx)\n"
        "net.output = nn.Dense(10)\nnet.output.initialize()\n"
        "net.collect_params().reset_ctx(ctx)\n",
        # the model is on the cpu
        "import mxnet as mx\nfrom mxnet.gluon import nn\nfrom mxnet.gluon.model_zoo import vision\n"
        "net = vision.resnet18_v1(pretrained=True)\n"
        "net.output = nn.Dense(10)\nnet.output.initialize()\n",
        # pretrained weights fetched for the cpu, everything moved later
        "import mxnet as mx\nfrom mxnet.gluon import nn\nfrom mxnet.gluon.model_zoo import vision\n"
        "ctx = mx.gpu()\nnet = vision.resnet18_v1(pretrained=True)\n"
        "net.output = nn.Dense(10)\nnet.output.initialize()\nnet.collect_params().reset_ctx(ctx)\n",
        # an unrelated layer on the cpu
        "import mxnet as mx\nfrom mxnet.gluon import nn\nctx = mx.gpu()\n"
        "net = nn.Dense(3)\nnet.initialize(ctx=ctx)\nprobe = nn.Dense(1)\nprobe.initialize()\n",
        # whole model initialised once, no ctx anywhere
        "from mxnet.gluon import nn\nnet = nn.HybridSequential()\nnet.add(nn.Dense(3))\n"
        "net.initialize()\n",
        # CPU-only context
        "import mxnet as mx\nfrom mxnet.gluon import nn\nctx = mx.cpu()\n"
        "net = nn.Sequential()\nnet.initialize(ctx=ctx)\nhead = nn.Dense(2)\nhead.initialize()\n"
        "net.add(head)\n",
    )


class ParamDataWithoutCtx(Rule):
    code = "MXL204"
    name = "param-data-without-ctx"
    message = (
        "`.{method}()` without `ctx` on a parameter initialised on several contexts "
        "(`{ctx}`) fails: pass one context (`.{method}({ctx0})`) or use "
        "`.list_{method}()`"
    )
    what = """
        Finds `param.data()` / `param.grad()` called without a context on the parameters of a
        network initialised on a list of (possibly GPU) contexts.
    """
    why = """
        With several contexts, `Parameter.data()` looks up the copy on the *current* context
        (`cpu(0)`), which does not exist, and raises `RuntimeError: Parameter ... was not
        initialized on context cpu(0)`. Code written and tested on one GPU breaks when a
        second GPU is added.
    """
    example = """
        ctx = [mx.gpu(0), mx.gpu(1)]
        net.initialize(ctx=ctx)
        print(net.weight.data())
    """
    use_instead = """
        ctx = [mx.gpu(0), mx.gpu(1)]
        net.initialize(ctx=ctx)
        print(net.weight.data(ctx[0]))
    """
    fix_safety = """
        The fix passes the first context of the list (`.data(ctx[0])`). It is unsafe: it reads
        one replica where the code may have meant all of them (`list_data()`).
    """
    fixable = "unsafe"
    invalid = (
        Example(
            "import mxnet as mx\nfrom mxnet import gluon\n"
            "ctx = [mx.gpu(0), mx.gpu(1)]\n"
            "net = gluon.nn.Dense(4)\n"
            "net.initialize(ctx=ctx)\n"
            "w = net.weight.data()\n",
            line=6,
            expected_fix=(
                "import mxnet as mx\nfrom mxnet import gluon\n"
                "ctx = [mx.gpu(0), mx.gpu(1)]\n"
                "net = gluon.nn.Dense(4)\n"
                "net.initialize(ctx=ctx)\n"
                "w = net.weight.data(ctx[0])\n"
            ),
        ),
        Example(
            "import mxnet as mx\nfrom mxnet import gluon\n"
            "ctx = [mx.gpu(i) for i in range(num_gpus)]\n"
            "net = gluon.nn.Dense(4)\n"
            "net.initialize(ctx=ctx)\n"
            "for name, param in net.collect_params().items():\n"
            "    print(name, param.grad().norm())\n",
            line=7,
        ),
        Example(
            "import mxnet as mx\nfrom mxnet import gluon\n\n"
            "def report(devices=[mx.gpu(0), mx.gpu(1)]):\n"
            "    net = gluon.nn.Dense(4)\n"
            "    net.initialize(ctx=devices)\n"
            "    params = net.collect_params()\n"
            "    return params['dense0_weight'].data()\n",
            line=8,
        ),
    )
    valid = (
        "import mxnet as mx\nfrom mxnet import gluon\nctx = mx.gpu(0)\n"
        "net = gluon.nn.Dense(4)\nnet.initialize(ctx=ctx)\nw = net.weight.data()\n",
        "import mxnet as mx\nfrom mxnet import gluon\nctx = [mx.gpu(0), mx.gpu(1)]\n"
        "net = gluon.nn.Dense(4)\nnet.initialize(ctx=ctx)\nw = net.weight.data(ctx[0])\n"
        "ws = net.weight.list_data()\n",
        "import mxnet as mx\nfrom mxnet import gluon\nctx = [mx.cpu(0), mx.cpu(1)]\n"
        "net = gluon.nn.Dense(4)\nnet.initialize(ctx=ctx)\nw = net.weight.data()\n",
        "import mxnet as mx\nfrom mxnet import gluon\nctx = [mx.gpu(0), mx.gpu(1)]\n"
        "net = gluon.nn.Dense(4)\nnet.initialize(ctx=ctx)\n"
        "with ctx[0]:\n    w = net.weight.data()\n",
        # placement unknown (library code)
        "def dump(net):\n    return {k: p.data() for k, p in net.collect_params().items()}\n",
        # a batch's .data() is not a parameter
        "import mxnet as mx\nctx = [mx.gpu(0), mx.gpu(1)]\nnet = build()\nnet.initialize(ctx=ctx)\n"
        "for batch in train_iter:\n    x = batch.data()\n",
    )


# --- the checker ----------------------------------------------------------------------------

#: Attributes that place parameters somewhere (`net.initialize`, `SymbolBlock.imports`).
_PLACING_ATTRS = knowledge.PARAM_PLACING_METHODS | {"imports"}
#: `gpu|cuda|context(|try_all` in any case, spelled out: IGNORECASE makes the search slower.
_GPU_TEXT = re.compile(
    r"[gG][pP][uU]|[cC][uU][dD][aA]|[cC][oO][nN][tT][eE][xX][tT]\(|"
    r"[tT][rR][yY]_[aA][lL][lL]"
)
_CONST_CTX = re.compile(r"^[A-Za-z_][\w.]*\(\s*\d*\s*\)$")


class ContextChecker(Checker):
    """Placement analysis of every scope (module script code, each function)."""

    rules = (
        DataContextMismatch,
        TensorCreatedWithoutCtx,
        InitializeWithoutCtx,
        ParamDataWithoutCtx,
    )
    name = "contexts"

    def begin(self) -> None:
        #: Functions that place parameters (only they, and users of placed module-level or
        #: `self.` networks, are interpreted: most functions of a file never place anything).
        self.placing: set[int] = set()
        self.any_placing = False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in _PLACING_ATTRS:
            self._mark_placing()

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None and node.keyword.value == "pretrained":
            self._mark_placing()

    def _mark_placing(self) -> None:
        self.any_placing = True
        for scope in self.ctx.stack:
            if type(scope) is cst.FunctionDef:
                self.placing.add(id(scope))

    def end(self) -> None:
        ctx = self.ctx
        module = ctx.module
        wants_placement = any(
            ctx.settings.enabled(r, ctx.path)
            for r in (DataContextMismatch, InitializeWithoutCtx, ParamDataWithoutCtx)
        )
        self.functions = list(_functions(module.body, []))
        if wants_placement and self.any_placing:
            self._placement(module)
        if ctx.settings.enabled(TensorCreatedWithoutCtx, ctx.path) and (
            "cpu(" not in ctx.source or _GPU_TEXT.search(ctx.source)
        ):
            for path, cls, fn in self.functions:
                if cls is not None and fn.name.value in ("forward", "hybrid_forward"):
                    self._forward(path, cls, fn)

    # -- MXL201, MXL203, MXL204 ----------------------------------------------------------------

    def _placement(self, module: cst.Module) -> None:
        code = self.ctx.code
        helpers = context_helpers(module, self.ctx.imports, code)
        top = Scope(self.ctx.imports, code, {}, helpers)
        top.run(module.body)
        self._judge(top, None)
        members: dict[int, Env] = {}
        global_nets = _has_net(top.env)
        replaced = self._replaced_globals(top.env) if global_nets else {}
        for path, cls, fn in self.functions:
            member_env: Env = {}
            if cls is not None and fn.name.value != "__init__":
                if id(cls) not in members:
                    members[id(cls)] = self._members(cls, top.env, helpers)
                member_env = members[id(cls)]
            if id(fn) not in self.placing and not global_nets and not _has_net(member_env):
                continue
            env: Env = module_env_copy(top.env)
            for key, placer in replaced.items():
                value = env.get(key)
                if isinstance(value, Net) and placer is not fn:
                    # another function moves this network: its context here is unknown
                    value.ctx, value.placed = None, False
            env.update(module_env_copy(member_env))
            scope = self._run_function(fn, env, helpers)
            self._judge(scope, ".".join(path))

    def _replaced_globals(self, module_env: Env) -> dict[str, cst.FunctionDef]:
        """Module-level networks that some function places again (`net.initialize`,
        `net.collect_params().reset_ctx` inside `train()`): key -> that function."""
        out: dict[str, cst.FunctionDef] = {}
        for _path, _cls, fn in self.functions:
            if id(fn) not in self.placing:
                continue
            for node in iter_nodes(fn.body):
                if not (
                    type(node) is cst.Call
                    and type(node.func) is cst.Attribute
                    and node.func.attr.value in knowledge.PARAM_PLACING_METHODS
                ):
                    continue
                receiver = node.func.value
                if type(receiver) is cst.Call and type(receiver.func) is cst.Attribute:
                    receiver = receiver.func.value
                key = dotted_name(receiver)
                if key is not None and isinstance(module_env.get(key), Net):
                    out.setdefault(key, fn)
        return out

    def _run_function(self, fn: cst.FunctionDef, env: Env, helpers: dict[str, Ctx]) -> Scope:
        scope = Scope(self.ctx.imports, self.ctx.code, env, helpers)
        scope.env.update(parameter_env(scope, fn.params))
        scope.events.clear()
        scope.run(fn.body.body)
        return scope

    def _members(self, cls: cst.ClassDef, module_env: Env, helpers: dict[str, Ctx]) -> Env:
        """`self.*` values set up by `__init__` (a trainer's `self.net`, `self.ctx`), seen
        by the other methods of the class."""
        for stmt in cls.body.body:
            if (
                type(stmt) is cst.FunctionDef
                and stmt.name.value == "__init__"
                and id(stmt) in self.placing
            ):
                scope = self._run_function(stmt, module_env_copy(module_env), helpers)
                return {k: v for k, v in scope.env.items() if k.startswith("self.")}
        return {}

    def _judge(self, scope: Scope, symbol: str | None) -> None:
        data_fn = self.ctx.qualname(symbol) if symbol else (self.ctx.imports.module or "<module>")
        late: set[int] = set()
        calls_by_net: dict[int, list[NetCall]] = {}
        for event in scope.events:
            if isinstance(event, NetCall):
                calls_by_net.setdefault(id(event.net), []).append(event)
        for event in scope.events:
            if isinstance(event, InitNoCtx):
                target = self._init_target(event, calls_by_net.get(id(event.block), []))
                if target is not None:
                    late.add(id(event.block))
                    self._report_init(scope, event, target, symbol, data_fn)
        for event in scope.events:
            if isinstance(event, NetCall) and id(event.net) not in late:
                self._net_call(scope, event, symbol, data_fn)
            elif isinstance(event, LossCall):
                self._loss_call(scope, event, symbol, data_fn)
            elif isinstance(event, ParamRead):
                self._param_read(scope, event, symbol, data_fn)

    def _net_call(self, scope: Scope, event: NetCall, symbol: str | None, data_fn: str) -> None:
        net = event.net
        if not net.placed or net.ctx is None:
            return
        net_name = _callee_name(self.ctx.code, event.node)
        for arg, value in event.args:
            if not isinstance(value, Tensor):
                continue
            if net.ctx.gpu is True and value.on_gpu() is False:
                self._report_unmoved(scope, arg, value, net.ctx, net_name, symbol, data_fn)
            elif (
                net.ctx.gpu is False
                and value.where == "placed"
                and value.ctx is not None
                and value.ctx.gpu is True
                and net.fresh
            ):
                src = value.ctx.src or "ctx"
                self.ctx.report(
                    arg,
                    DataContextMismatch,
                    f"`{net_name}`'s parameters are on the cpu (placed with no `ctx`) but "
                    f"`{self.ctx.code(arg)}` was moved to `{src}`; place the network there "
                    f"too: `{net_name}.initialize(ctx={src})` or "
                    f"`{net_name}.collect_params().reset_ctx({src})`",
                    symbol=symbol,
                    data={"function": data_fn, "ctx": src},
                )

    def _report_unmoved(
        self,
        scope: Scope,
        arg: cst.BaseExpression,
        value: Tensor,
        ctx: Ctx,
        net_name: str,
        symbol: str | None,
        data_fn: str,
        what: str | None = None,
    ) -> None:
        src = ctx.src or "ctx"
        arg_code = self.ctx.code(arg)
        origin = what or (f"`{arg_code}` ({value.origin})" if value.origin else f"`{arg_code}`")
        short_arg = arg_code if len(arg_code) <= 30 else "data"
        message = DataContextMismatch.format(net=net_name, ctx=src, origin=origin, arg=short_arg)
        if ctx.multi:
            message = (
                f"`{net_name}` has its parameters on `{src}` but {origin} is fed to it "
                f"unmoved; split the batch with `gluon.utils.split_and_load({short_arg}, "
                f"{src})` and call `{net_name}` on each slice"
            )
        mover = self._mover()
        message = message.replace(".as_in_context(", f".{mover}(")
        fix = None
        spelled = _spelled_ctx(scope, ctx)
        if spelled is not None and not ctx.multi:
            wrapped = (
                arg_code
                if type(arg) in (cst.Name, cst.Attribute, cst.Call, cst.Subscript)
                else f"({arg_code})"
            )
            fix = FixSpec(
                "unsafe",
                f"Move `{arg_code}` to `{spelled}`",
                (NodeEdit(arg, f"{wrapped}.{mover}({spelled})"),),
            )
        self.ctx.report(
            arg,
            DataContextMismatch,
            message,
            fix=fix,
            symbol=symbol,
            data={"function": data_fn, "ctx": src},
        )

    def _mover(self) -> str:
        """The method that moves a tensor: `as_in_context` (1.x), `to_device` (MXNet 2)."""
        return "to_device" if self.ctx.mxnet_line == "2" else "as_in_context"

    def _loss_call(self, scope: Scope, event: LossCall, symbol: str | None, data_fn: str) -> None:
        tensors = [(a, v) for a, v in event.args[:2] if isinstance(v, Tensor)]
        gpu = [
            v for _, v in tensors if v.where == "placed" and v.ctx is not None and v.ctx.gpu is True
        ]
        if not gpu:
            return
        for arg, value in tensors:
            if value.on_gpu() is False:
                ctx = gpu[0].ctx
                assert ctx is not None
                src = _spelled_ctx(scope, ctx) or ctx.src or "ctx"
                loss_name = _callee_name(self.ctx.code, event.node)
                arg_code = self.ctx.code(arg)
                origin = f" ({value.origin})" if value.origin else ""
                message = (
                    f"`{loss_name}` compares a prediction on a GPU context with "
                    f"`{arg_code}`{origin}, which is still on the cpu; move it with "
                    f"`{arg_code}.{self._mover()}({src})` or "
                    f"`gluon.utils.split_and_load({arg_code}, {src})`"
                )
                spelled = _spelled_ctx(scope, ctx)
                fix = None
                if spelled is not None and type(arg) in (
                    cst.Name,
                    cst.Attribute,
                    cst.Call,
                    cst.Subscript,
                ):
                    fix = FixSpec(
                        "unsafe",
                        f"Move `{arg_code}` to `{spelled}`",
                        (NodeEdit(arg, f"{arg_code}.{self._mover()}({spelled})"),),
                    )
                self.ctx.report(
                    arg,
                    DataContextMismatch,
                    message,
                    fix=fix,
                    symbol=symbol,
                    data={"function": data_fn, "ctx": src},
                )

    def _init_target(self, event: InitNoCtx, calls: Sequence[NetCall]) -> Ctx | None:
        """The GPU context the freshly initialised layer should have been placed on."""
        block = event.block
        if block.reset_later or (block.ctx is not None and block.ctx.gpu is not False):
            return None
        parent = block.parent
        while parent is not None:
            if parent.reset_later:
                return None
            if parent.ctx is not None and parent.ctx.gpu is True:
                return parent.ctx
            parent = parent.parent
        for call in calls:
            for _, value in call.args:
                if (
                    isinstance(value, Tensor)
                    and value.where == "placed"
                    and value.ctx is not None
                    and value.ctx.gpu is True
                    and event.gpu_ctx
                ):
                    return event.gpu_ctx
        return None

    def _report_init(
        self, scope: Scope, event: InitNoCtx, target: Ctx, symbol: str | None, data_fn: str
    ) -> None:
        node = event.node
        func = node.func
        block = self.ctx.code(func.value) if type(func) is cst.Attribute else "layer"
        src = target.src or "ctx"
        fix = None
        spelled = _spelled_ctx(scope, target)
        if spelled is not None:
            fix = FixSpec(
                "unsafe",
                f"Initialise on `{spelled}`",
                (NodeEdit(node, _add_keyword(self.ctx.code, node, "ctx", spelled)),),
            )
        self.ctx.report(
            node,
            InitializeWithoutCtx,
            InitializeWithoutCtx.format(block=block, ctx=src),
            fix=fix,
            symbol=symbol,
            data={"function": data_fn, "ctx": src},
        )

    def _param_read(self, scope: Scope, event: ParamRead, symbol: str | None, data_fn: str) -> None:
        node = event.node
        net_ctx = event.net.ctx
        if node.args or event.default_ctx is not None or net_ctx is None:
            return
        if not (net_ctx.multi and net_ctx.gpu is True and event.net.placed):
            return
        func = node.func
        method = func.attr.value if type(func) is cst.Attribute else "data"
        src = net_ctx.src or "ctx"
        ctx0 = f"{src}[0]" if src.isidentifier() else "ctx[0]"
        fix = None
        if src.isidentifier() and isinstance(scope.env.get(src), Ctx):
            fix = FixSpec(
                "unsafe",
                f"Read the copy on `{ctx0}`",
                (NodeEdit(node, f"{self.ctx.code(func)}({ctx0})"),),
            )
        self.ctx.report(
            node,
            ParamDataWithoutCtx,
            ParamDataWithoutCtx.format(method=method, ctx=src, ctx0=ctx0),
            fix=fix,
            symbol=symbol,
            data={"function": data_fn, "ctx": src},
        )

    # -- MXL202 --------------------------------------------------------------------------------

    def _forward(self, path: list[str], cls: cst.ClassDef, fn: cst.FunctionDef) -> None:
        hybrid = fn.name.value == "hybrid_forward"
        positional = [*fn.params.posonly_params, *fn.params.params]
        f_name = positional[1].name.value if hybrid and len(positional) > 1 else None
        params = tensor_parameters(fn, 2 if hybrid else 1)
        if not params:
            return
        found = ForwardCreations(self.ctx.imports, f_name).run(fn, params)
        if not found:
            return
        arg = params[0]
        symbol = ".".join(path)
        cls_path = path[:-1]
        requires = None if hybrid else ("block", self.ctx.qualname(".".join(cls_path)))
        if not hybrid and not _has_bases(cls):
            return
        hybrid_forward_2 = not hybrid and self._hybrid_base(cls)
        for node in found:
            name = self.ctx.imports.resolve(node.func) or ""
            numpy_style = name.startswith("mxnet.np.")
            if hybrid_forward_2 and (numpy_style or self.ctx.mxnet_line == "2"):
                # MXNet 2 hybridizes `forward`: like `F.zeros`, bound on the inputs' device
                continue
            if numpy_style and self.ctx.mxnet_line == "2":
                keyword, value = "device", f"{arg}.device"
            elif numpy_style:
                keyword, value = "ctx", f"{arg}.ctx"
            else:
                keyword, value = "ctx", f"{arg}.context"
            fix = (
                FixSpec(
                    "unsafe",
                    f"Create it on `{value}`",
                    (NodeEdit(node, _add_keyword(self.ctx.code, node, keyword, value)),),
                )
                if node.args
                else None
            )
            message = TensorCreatedWithoutCtx.format(
                creator=f"{self.ctx.code(node.func)}(...)", method=fn.name.value, arg=arg
            )
            if keyword == "device":
                message = message.replace(f"ctx={arg}.context", f"device={arg}.device")
            self.ctx.report(
                node,
                TensorCreatedWithoutCtx,
                message,
                fix=fix,
                symbol=symbol,
                data={"function": self.ctx.qualname(symbol), "ctx": value},
                requires=requires,
            )

    def _hybrid_base(self, cls: cst.ClassDef) -> bool:
        for base in cls.bases:
            name = self.ctx.resolve(base.value) or ""
            if name in knowledge.HYBRID_BLOCK_CLASSES or "Hybrid" in name.rsplit(".", 1)[-1]:
                return True
        return False


def _has_net(env: Env) -> bool:
    return any(isinstance(v, Net) for v in env.values())


def _has_bases(cls: cst.ClassDef) -> bool:
    return bool(cls.bases)


def _functions(
    body: Sequence[cst.CSTNode], path: list[str], cls: cst.ClassDef | None = None
) -> Iterator[tuple[list[str], cst.ClassDef | None, cst.FunctionDef]]:
    """Every function (methods and nested ones too) with its qualified path and class."""
    for stmt in body:
        if type(stmt) is cst.FunctionDef:
            here = [*path, stmt.name.value]
            yield here, cls, stmt
            if type(stmt.body) is cst.IndentedBlock:
                yield from _functions(stmt.body.body, here, None)
        elif type(stmt) is cst.ClassDef:
            if type(stmt.body) is cst.IndentedBlock:
                yield from _functions(stmt.body.body, [*path, stmt.name.value], stmt)
        elif type(stmt) in (cst.If, cst.Try, cst.With, cst.For, cst.While):
            inner: list[cst.CSTNode] = []
            for suite in _suites(stmt):
                inner.extend(suite.body)
            yield from _functions(inner, path, cls)


def _suites(stmt: cst.CSTNode) -> Iterator[cst.IndentedBlock]:
    body = getattr(stmt, "body", None)
    if type(body) is cst.IndentedBlock:
        yield body
    orelse = getattr(stmt, "orelse", None)
    if type(orelse) is cst.If:
        yield from _suites(orelse)
    elif type(orelse) is cst.Else and type(orelse.body) is cst.IndentedBlock:
        yield orelse.body
    for handler in getattr(stmt, "handlers", ()):
        if type(handler.body) is cst.IndentedBlock:
            yield handler.body
    final = getattr(stmt, "finalbody", None)
    if final is not None and type(final.body) is cst.IndentedBlock:
        yield final.body


def _callee_name(code: Callable[[cst.CSTNode], str], call: cst.Call) -> str:
    func = call.func
    if type(func) is cst.Attribute and func.attr.value == "forward":
        func = func.value
    text = code(func)
    return text if len(text) <= 40 else "net"


def _spelled_ctx(scope: Scope, ctx: Ctx) -> str | None:
    """How a fix can name `ctx` at this point: a variable still bound to it, or a constant
    expression like `mx.gpu(0)`."""
    src = ctx.src
    if src is None:
        return None
    if all(part.isidentifier() for part in src.split(".")):
        return src if isinstance(scope.env.get(src), Ctx) else None
    if _CONST_CTX.match(src) and "gpu" in src:
        return src
    return None


def _add_keyword(
    code: Callable[[cst.CSTNode], str], call: cst.Call, keyword: str, value: str
) -> str:
    """The source of `call` with `keyword=value` appended to its arguments."""
    args = list(call.args)
    if args and isinstance(args[-1].comma, cst.MaybeSentinel):
        args[-1] = args[-1].with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
    args.append(
        cst.Arg(
            value=cst.parse_expression(value),
            keyword=cst.Name(keyword),
            equal=cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""),
                whitespace_after=cst.SimpleWhitespace(""),
            ),
        )
    )
    return code(call.with_changes(args=args))


__all__ = [
    "ContextChecker",
    "DataContextMismatch",
    "InitializeWithoutCtx",
    "ParamDataWithoutCtx",
    "TensorCreatedWithoutCtx",
]
