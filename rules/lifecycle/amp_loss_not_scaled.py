"""MXL707 amp-loss-not-scaled: checks a `backward()` run after `amp.init()` turned float16 mixed
precision on, in a file that never scales its loss (`amp.scale_loss`).

The functions after the class decide and word its findings; the family's checker
(`rules/lifecycle/checker.py`) runs them on each function's calls in execution order
(`mxlint/flow.py`). Its tests are the examples below (run by `tests/test_rule_examples.py`),
`tests/test_lifecycle.py` and `tests/snapshots/MXL707.txt`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from mxlint import knowledge
from mxlint.flow import Site
from mxlint.rule import Example, Rule, Runtime

if TYPE_CHECKING:
    from mxlint.checker import FileContext

#: Signs that a file scales its loss itself (AMP's scaler, its own loss scale).
_SCALES = re.compile(r"scale_loss|loss_scale|LossScaler|\bunscale\b|grad_scale")


class AmpLossNotScaled(Rule):
    code = "MXL707"
    name = "amp-loss-not-scaled"
    runtime = Runtime("underflow")
    message = (
        "`{backward}` backpropagates an unscaled loss while AMP runs in float16 "
        "(`{init}`, line {line}): gradients below float16's range (about 6e-8) become "
        "zero and those weights stop learning; scale it: `amp.init_trainer(trainer)`, then "
        "`with amp.scale_loss(loss, trainer) as scaled: autograd.backward(scaled)`"
    )
    what = """
        Checks a `backward()` that runs after `amp.init()` turned float16 mixed precision on,
        in a file that never scales its loss (no `amp.scale_loss`, no loss scale of its own).
    """
    why = """
        With AMP in float16 the backward pass computes gradients in float16, whose smallest
        positive value is about 6e-8: the small gradients of a deep network underflow to zero,
        and the weights they belong to stop learning, without an error. `amp.scale_loss`
        multiplies the loss by a dynamic scale (2**16 to start) before the backward pass and
        has the trainer divide the gradients by it, lowering the scale when gradients overflow;
        MXNet's AMP guide asks for it whenever the target is float16. bfloat16 (`amp.init(
        target_dtype="bfloat16")`) keeps float32's range and needs no scaling; an `amp.init()`
        whose target is computed at run time, and a file that scales its loss by other means
        (`loss_scale`, `LossScaler`, `grad_scale`), are not reported.
    """
    example = """
        amp.init()
        net = get_model("resnet50_v1")
        ...
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch_size)
    """
    use_instead = """
        amp.init()
        net = get_model("resnet50_v1")
        ...
        amp.init_trainer(trainer)
        with autograd.record():
            loss = loss_fn(net(x), y)
            with amp.scale_loss(loss, trainer) as scaled:
                autograd.backward(scaled)
        trainer.step(batch_size)
    """

    invalid = (
        Example(
            """from mxnet import autograd, gluon
from mxnet.contrib import amp
from mxnet.gluon.model_zoo import vision


def main(loader):
    amp.init()
    net = vision.resnet18_v1(classes=10)
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for x, y in loader:
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
""",
            line=15,
        ),
        Example(
            """import mxnet as mx
from mxnet import autograd, gluon


def train_epoch(net, trainer, loader):
    for x, y in loader:
        with autograd.record():
            loss = net(x).mean()
        autograd.backward(loss)
        trainer.step(1)


def main(args, net, loader):
    mx.contrib.amp.init(target_dtype="float16")
    trainer = gluon.Trainer(net.collect_params(), "adam")
    for _ in range(args.epochs):
        train_epoch(net, trainer, loader)


if __name__ == "__main__":
    main(parse(), build(), load())
""",
            line=9,
        ),
    )

    valid = (
        """from mxnet import autograd, gluon
from mxnet.contrib import amp


def main(net, loader):
    amp.init()
    trainer = gluon.Trainer(net.collect_params(), "sgd")
    amp.init_trainer(trainer)
    for x, y in loader:
        with autograd.record():
            loss = net(x).mean()
            with amp.scale_loss(loss, trainer) as scaled:
                autograd.backward(scaled)
        trainer.step(1)
""",
        # bfloat16 keeps float32's exponent range.
        """from mxnet import autograd, gluon
from mxnet.contrib import amp


def main(net, loader):
    amp.init(target_dtype="bfloat16")
    trainer = gluon.Trainer(net.collect_params(), "sgd")
    for x, y in loader:
        with autograd.record():
            loss = net(x).mean()
        loss.backward()
        trainer.step(1)
""",
        # A backward before AMP is turned on (a float32 warm-up) runs in float32.
        """from mxnet import autograd, gluon
from mxnet.contrib import amp


def warmup(net, trainer, x):
    with autograd.record():
        loss = net(x).mean()
    loss.backward()
    trainer.step(1)


def main(net, x):
    trainer = gluon.Trainer(net.collect_params(), "sgd")
    warmup(net, trainer, x)
    amp.init()


if __name__ == "__main__":
    main(build(), load())
""",
        # Scaled by hand.
        """from mxnet import autograd, gluon
from mxnet.contrib import amp


def main(net, loader, loss_scale=1024.0):
    amp.init()
    trainer = gluon.Trainer(net.collect_params(), "sgd")
    for x, y in loader:
        with autograd.record():
            loss = net(x).mean() * loss_scale
        loss.backward()
        trainer.step(loss_scale)
""",
    )


def check_scaling(ctx: FileContext, roots: list[list[Site]]) -> None:
    """Report every `backward()` that runs, in some root's execution order, after an
    `amp.init()` whose target is float16 (once per call)."""
    if _SCALES.search(ctx.source):
        return
    reported: set[cst.Call] = set()
    for sites in roots:
        init: cst.Call | None = None
        for site in sites:
            call = site.call
            if init is None:
                name = ctx.resolve(call.func)
                if name is not None and knowledge.canonical(name) in knowledge.AMP_INIT:
                    if _float16(ctx, call):
                        init = call
                    else:
                        break  # bfloat16, or a target known only at run time
                continue
            if call in reported or not _is_backward(ctx, call):
                continue
            reported.add(call)
            ctx.report(
                call,
                AmpLossNotScaled,
                AmpLossNotScaled.format(
                    backward=_spelled(ctx, call),
                    init=_spelled(ctx, init),
                    line=_line(ctx, init),
                ),
            )


def _float16(ctx: FileContext, call: cst.Call) -> bool:
    """`amp.init()` whose target is float16: the default, `"float16"`, `np.float16`."""
    for i, arg in enumerate(call.args):
        if (arg.keyword is None and i == 0) or (
            arg.keyword is not None and arg.keyword.value == "target_dtype"
        ):
            value = arg.value
            if type(value) is cst.SimpleString:
                return value.evaluated_value == "float16"
            return ctx.resolve(value) in ("numpy.float16", "np.float16")
    return True


def _is_backward(ctx: FileContext, call: cst.Call) -> bool:
    func = call.func
    if type(func) is cst.Attribute and func.attr.value == "backward" and not call.args:
        return True
    name = ctx.resolve(func)
    return name is not None and knowledge.canonical(name) == "mxnet.autograd.backward"


def _spelled(ctx: FileContext, call: cst.Call) -> str:
    from mxlint.checker import shortened

    return shortened(ctx.code(call), 50)


def _line(ctx: FileContext, node: cst.CSTNode) -> int:
    from mxlint.positions import node_ranges

    rng = node_ranges(ctx.module, [node], ctx.source).get(node)
    return rng[0][0] if rng else 0
