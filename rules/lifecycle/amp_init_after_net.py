"""MXL702 amp-init-after-net: checks `amp.init()` (`mxnet.contrib.amp`) called after a Gluon
network was constructed, in execution order (following calls into the same file's functions).

The functions after the class decide and word its findings; the family's checker
(`rules/lifecycle/checker.py`) runs them. Its tests are
the examples below (run by `tests/test_rule_examples.py`), `tests/test_lifecycle.py` and
`tests/snapshots/MXL702.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mxlint import knowledge
from mxlint.rule import Example, Rule

if TYPE_CHECKING:
    from mxlint.rules.lifecycle.checker import LifecycleChecker


class AmpInitAfterNet(Rule):
    code = "MXL702"
    name = "amp-init-after-net"
    message = (
        "`amp.init()` runs after the network was built (`{what}`, line {line}): call it "
        "before creating the model; a network hybridized and run before `amp.init()` "
        "keeps its float32 graph"
    )
    what = """
        Checks `amp.init()` (`mxnet.contrib.amp`) called after a Gluon network was
        constructed, in execution order (following calls into the same file's functions).
    """
    why = """
        `amp.init()` patches MXNet's operator functions to insert casts. MXNet's documentation
        requires it before the model is created; verified on MXNet 1.9.1: a network that was
        hybridized and run before `amp.init()` keeps running its float32 cached graph, so mixed
        precision is silently off (and `amp.init_trainer` then scales a float32 loss).
    """
    example = """
        net = get_model("resnet50_v1", classes=1000)
        net.initialize(ctx=ctx)
        amp.init()
    """
    use_instead = """
        amp.init()
        net = get_model("resnet50_v1", classes=1000)
        net.initialize(ctx=ctx)
    """

    invalid = (
        Example(
            """from mxnet.contrib import amp
from gluoncv.model_zoo import get_model

net = get_model("resnet50_v1", classes=1000)
net.initialize()
amp.init()
""",
            line=6,
        ),
        Example(
            """import mxnet as mx
from mxnet import gluon
from mxnet.contrib import amp


def build():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(10))
    return net


def main(args):
    net = build()
    net.initialize()
    net.hybridize()
    net(mx.nd.zeros((1, 10)))
    if args.amp:
        amp.init()


if __name__ == "__main__":
    main(parse())
""",
            line=18,
        ),
        Example(
            """from mxnet.contrib import amp


def main(net_factory):
    net = net_factory()
    net.initialize()
    amp.init(target_dtype="float16")
""",
            line=7,
        ),
    )

    valid = (
        """from mxnet.contrib import amp
from gluoncv.model_zoo import get_model

amp.init()
net = get_model("resnet50_v1", classes=1000)
net.initialize()
""",
        """from mxnet import gluon
from mxnet.contrib import amp


def main(args):
    if args.amp:
        amp.init()
    net = gluon.nn.Dense(10)
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd")
    if args.amp:
        amp.init_trainer(trainer)


if __name__ == "__main__":
    main(parse())
""",
        # A loss is not the network AMP has to patch.
        """from mxnet import gluon
from mxnet.contrib import amp

loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
amp.init()
net = gluon.nn.Dense(10)
""",
        # Different functions: no order between them is known.
        """from mxnet import gluon
from mxnet.contrib import amp


def build():
    net = gluon.nn.Dense(10)
    net.initialize()
    return net


def setup():
    amp.init()
""",
    )


def check_amp(checker: LifecycleChecker, sites: list) -> None:
    built: tuple[str, cst.CSTNode] | None = None
    for site in sites:
        call = site.call
        name = checker.ctx.resolve(call.func)
        if name is not None and knowledge.canonical(name) in knowledge.AMP_INIT:
            if built is not None:
                what, node = built
                checker.ctx.report(
                    call,
                    AmpInitAfterNet,
                    AmpInitAfterNet.format(what=what, line=checker._line(node)),
                )
            return
        if built is None:
            if knowledge.builds_network(name):
                built = (checker.ctx.code(call.func) + "(...)", call)
            elif (
                type(call.func) is cst.Attribute
                and name is None
                and call.func.attr.value
                in ("initialize", "hybridize", "collect_params", "load_parameters")
            ):
                built = (checker.ctx.code(call.func) + "()", call)
