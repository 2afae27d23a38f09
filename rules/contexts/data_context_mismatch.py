"""MXL201 data-context-mismatch: finds data fed to a network (`net(x)`, `net.forward(x)`, or a loss
of `net(x)`) that lives on a different context than the network's parameters: parameters placed
on a (possibly GPU) context with `initialize(ctx=...)`, `load_parameters(..., ctx=...)`,
`collect_params().reset_ctx(...)` or a pretrained model-zoo factory, and data that comes from a
DataLoader, `nd.array(...)`/`nd.load(...)` or an image reader without being moved.

The functions after the class decide and word its findings; the family's checker
(`rules/contexts/checker.py`) runs them. Its tests are
the examples below (run by `tests/test_rule_examples.py`), `tests/test_contexts.py` and
`tests/snapshots/MXL201.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mxlint.checker import FixSpec, NodeEdit, shortened
from mxlint.placement import (
    Ctx,
    LossCall,
    MixedOp,
    NetCall,
    Scope,
    Tensor,
)
from mxlint.rule import CONTEXT_ERROR, Example, Rule, Runtime
from mxlint.rules.contexts._analysis import _callee_name, _spelled_ctx

if TYPE_CHECKING:
    from mxlint.rules.contexts.checker import ContextChecker


class DataContextMismatch(Rule):
    code = "MXL201"
    name = "data-context-mismatch"
    runtime = Runtime("context", loud=True, error=CONTEXT_ERROR)
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
        being moved (a block an object is given and places with `self.gen.initialize(ctx=...)`
        counts as placed there). Also the reverse: data moved to a GPU fed to a network initialised with
        no `ctx` (on the CPU). Placement is read at each call, in statement order (a batch fed
        before a later `reset_ctx` met the parameters where they were then), and a batch
        component the loop does not move (the label beside a moved image) is data like any
        other when it meets a loss of the network's output, also where the network and the
        loss arrive as parameters and the context as a default. A function's parameters hold
        what every call of it in the file passes (a network a caller placed on a GPU, its
        context, its loader, a batch handed over as one tuple and unpacked inside), and so do
        a method's, called on an object of a class of the file or through `self` (also an
        array every caller moved to a GPU, which a helper then combines with a module-level
        constant made without `ctx`: `return (images - MEAN) / STD`); what such a
        function returns for an array on the cpu or a context it is given (`data =
        self.preprocess(img)`, `net = get_net(ctx)`) is read from its body; a project
        block constructed with a context (`Net(ctx=ctx)`, its class in this file or another)
        places itself where this rule cannot tell, and is not judged, nor after a
        `load_parameters` without a context (which keeps initialised parameters where they are). Also operators (`a * b`,
        `a == b`, `nd.concat(a, b)`, `weights.take(label)`) whose inputs are a GPU tensor and
        a cpu one: an unmoved label compared with predictions, an array a helper (or the
        module) makes without `ctx`, a mask scaling a loss computed on the GPU. A helper of
        another file of the run counts when the run shows that it makes the array it returns
        without `ctx` and takes no context; likewise an iterator a library function given the
        context builds (`data_iter = d2l.data_iter_consecutive(corpus, n, steps, ctx)`) may
        make its batches there, and they are not judged, nor the batches of a loader iterated
        under `with ctx:` (one that makes its batches as it is iterated, as a DataLoader of
        NumPy samples does, makes them on that context).
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
        # The image is moved and the label, a second array of the same batch, is not.
        Example(
            """import mxnet as mx
from mxnet import autograd


def train(net, train_loader, trainer, loss_fn, ctx=mx.gpu(0)):
    for data, label in train_loader:
        data = data.as_in_context(ctx)
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(data.shape[0])
""",
            line=9,
        ),
        # A helper makes the mask on the default context; the output is on the GPU.
        Example(
            """import mxnet as mx
from mxnet import gluon, nd


def make_mask(n):
    return nd.array([1.0] * n)


def scores(x):
    ctx = mx.gpu(0)
    net = gluon.nn.Dense(10)
    net.initialize(ctx=ctx)
    out = net(x.as_in_context(ctx))
    return out * make_mask(10)
""",
            line=14,
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
        # Shapes inferred on the cpu before the parameters move: the order of statements counts.
        """import mxnet as mx
from mxnet import gluon, nd

ctx = mx.gpu(0)
net = gluon.nn.Dense(10)
net.initialize()
net(nd.zeros((1, 4)))
net.collect_params().reset_ctx(ctx)
print(net(nd.ones((2, 4), ctx=ctx)))
""",
    )


def check_net_call(
    checker: ContextChecker, scope: Scope, event: NetCall, symbol: str | None, data_fn: str
) -> None:
    net = event.net
    placed = event.ctx  # where the parameters were at this call, not where they end up
    if placed is None:
        return
    net_name = _callee_name(checker.ctx.code, event.node)
    for arg, value in event.args:
        if not isinstance(value, Tensor):
            continue
        if placed.gpu is True and value.on_gpu() is False:
            checker._report_unmoved(scope, arg, value, placed, net_name, symbol, data_fn)
        elif (
            placed.gpu is False
            and value.where == "placed"
            and value.ctx is not None
            and value.ctx.gpu is True
            and net.fresh
        ):
            src = value.ctx.src or "ctx"
            checker.ctx.report(
                arg,
                DataContextMismatch,
                f"`{net_name}`'s parameters are on the cpu (placed with no `ctx`) but "
                f"`{checker.ctx.code(arg)}` was moved to `{src}`; place the network there "
                f"too: `{net_name}.initialize(ctx={src})` or "
                f"`{net_name}.collect_params().reset_ctx({src})`",
                symbol=symbol,
                data={"function": data_fn, "ctx": src},
            )


def report_unmoved(
    checker: ContextChecker,
    scope: Scope,
    arg: cst.BaseExpression,
    value: Tensor,
    ctx: Ctx,
    net_name: str,
    symbol: str | None,
    data_fn: str,
    what: str | None = None,
) -> None:
    spelled = _spelled_ctx(scope, ctx)
    src = spelled or ctx.src or "ctx"
    arg_code = checker.ctx.code(arg)
    origin = what or (f"`{arg_code}` ({value.origin})" if value.origin else f"`{arg_code}`")
    short_arg = arg_code if len(arg_code) <= 30 else "data"
    message = DataContextMismatch.format(net=net_name, ctx=src, origin=origin, arg=short_arg)
    if ctx.multi:
        message = (
            f"`{net_name}` has its parameters on `{src}` but {origin} is fed to it "
            f"unmoved; split the batch with `gluon.utils.split_and_load({short_arg}, "
            f"{src})` and call `{net_name}` on each slice"
        )
    if ctx.via is not None:
        message = message.replace(
            f"on `{src}`", f"on `{src}` (placed by {ctx.via}, which passes it here)", 1
        )
    elif (
        ctx.gpu
        and not ctx.multi
        and net_name.startswith("self.")
        and spelled is None
        and src.isidentifier()
        and src not in scope.env
    ):
        # Placed by another method (an `__init__` given the context), under a name this
        # one does not have.
        message = (
            f"`{net_name}` has its parameters on a GPU context (`{src}` where they were "
            f"placed) but {origin} is fed to it unmoved; keep that context on the object "
            f"(`self.ctx = {src}`) and move the batch with "
            f"`{short_arg}.as_in_context(self.ctx)` before calling `{net_name}`"
        )
    mover = checker._mover()
    message = message.replace(".as_in_context(", f".{mover}(")
    fix = None
    if spelled is not None and not ctx.multi:
        fix = _move_fix(arg, arg_code, mover, spelled)
    _report_host_array(checker, arg, value, message, fix, symbol, data_fn, src)


#: Arguments a method call can follow without parentheses.
_BARE = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


def _move_fix(arg: cst.BaseExpression, arg_code: str, mover: str, spelled: str) -> FixSpec:
    """The fix that moves the argument to the context `spelled` names."""
    wrapped = arg_code if type(arg) in _BARE else f"({arg_code})"
    return FixSpec(
        "unsafe",
        f"Move `{arg_code}` to `{spelled}`",
        (NodeEdit(arg, f"{wrapped}.{mover}({spelled})"),),
    )


def _report_host_array(
    checker: ContextChecker,
    arg: cst.BaseExpression,
    value: Tensor,
    message: str,
    fix: FixSpec | None,
    symbol: str | None,
    data_fn: str,
    src: str,
) -> None:
    """Reports an argument on the cpu that meets one on `src`."""
    checker.ctx.report(
        arg,
        DataContextMismatch,
        message,
        fix=fix,
        symbol=symbol,
        data={"function": data_fn, "ctx": src},
        requires=_made_by_helper(value),
    )


def _made_by_helper(value: Tensor) -> tuple[str, str] | None:
    """What a finding about `value` requires of the run: that the function of another file
    which returned it makes the array it returns without `ctx`."""
    return ("host-array", value.helper) if value.helper is not None else None


def check_loss_call(
    checker: ContextChecker, scope: Scope, event: LossCall, symbol: str | None, data_fn: str
) -> None:
    # The prediction, the label and the sample weights (third, or `sample_weight=`).
    tensors = [(a, v) for a, v in event.args if isinstance(v, Tensor)]
    weights = {id(a) for a, _ in event.args[2:]}
    gpu = [v for _, v in tensors if v.where == "placed" and v.ctx is not None and v.ctx.off_host()]
    if not gpu:
        return
    for arg, value in tensors:
        if value.on_gpu() is False:
            ctx = gpu[0].ctx
            assert ctx is not None
            src = _spelled_ctx(scope, ctx) or ctx.src or "ctx"
            loss_name = _callee_name(checker.ctx.code, event.node)
            arg_code = checker.ctx.code(arg)
            origin = f" ({value.origin})" if value.origin else ""
            verb = (
                "weighs a prediction on a GPU context by"
                if id(arg) in weights
                else "compares a prediction on a GPU context with"
            )
            message = (
                f"`{loss_name}` {verb} "
                f"`{arg_code}`{origin}, which is still on the cpu; move it with "
                f"`{arg_code}.{checker._mover()}({src})` or "
                f"`gluon.utils.split_and_load({arg_code}, {src})`"
            )
            if ctx.shard_of is not None and _spelled_ctx(scope, ctx) is None:
                # A prediction on one slice of a batch split across a list of contexts.
                verb = "weighs" if id(arg) in weights else "compares"
                joiner = "by" if id(arg) in weights else "with"
                message = (
                    f"`{loss_name}` {verb} a prediction on one of the contexts of "
                    f"`{ctx.shard_of}` {joiner} `{arg_code}`{origin}, which is still on the cpu; "
                    f"split it like the data, `gluon.utils.split_and_load({arg_code}, "
                    f"{ctx.shard_of})`, and pair the slices"
                )
            spelled = _spelled_ctx(scope, ctx)
            fix = None
            if spelled is not None and type(arg) in _BARE:
                fix = _move_fix(arg, arg_code, checker._mover(), spelled)
            _report_host_array(checker, arg, value, message, fix, symbol, data_fn, src)


def check_mixed_op(
    checker: ContextChecker, scope: Scope, event: MixedOp, symbol: str | None, data_fn: str
) -> None:
    """An operator on a GPU tensor and a cpu one (a label compared with a prediction, a mask
    made by a helper on the default context)."""
    code = checker.ctx.code
    host = code(event.host)
    origin = f" ({event.host_value.origin})" if event.host_value.origin else ""
    ctx = event.gpu_value.ctx
    spelled = _spelled_ctx(scope, ctx) if ctx is not None else None
    gpu = code(event.gpu)
    if spelled is None and ctx is not None and ctx.via is not None and gpu.isidentifier():
        # An array a caller moved: this function has no name for its context, the array has.
        spelled = f"{gpu}.{'device' if checker.ctx.mxnet_line == '2' else 'context'}"
    src = (spelled or (ctx.src if ctx is not None else None)) or "ctx"
    checker.ctx.report(
        event.host,
        DataContextMismatch,
        f"`{shortened(code(event.node))}` mixes `{shortened(code(event.gpu))}`, on a GPU context, with "
        f"`{shortened(host)}`{origin}, which is on the cpu: an operator's inputs must share one "
        f"context; move it with `{shortened(host)}.{checker._mover()}({src})` or create it with "
        f"`ctx={src}`",
        symbol=symbol,
        data={"function": data_fn, "ctx": src},
        requires=_made_by_helper(event.host_value),
    )
