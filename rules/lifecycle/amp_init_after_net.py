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
from mxlint.flow import single_assignment
from mxlint.names import dotted_name
from mxlint.rule import Example, Rule, Runtime

if TYPE_CHECKING:
    from mxlint.rules.lifecycle.checker import LifecycleChecker


class AmpInitAfterNet(Rule):
    code = "MXL702"
    name = "amp-init-after-net"
    runtime = Runtime("amp")
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
        precision is silently off (and `amp.init_trainer` then scales a float32 loss). Where
        the network is built again after `amp.init()` (a float32 reference first, then the AMP
        model under the same name) and nothing built before is used after it, nothing is
        reported.
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
        # The network built before `amp.init()` is built again after it: the one that trains
        # under AMP is the new one.
        """from mxnet import amp, gluon


def check(ctx):
    net = gluon.nn.Dense(2)
    net.initialize(ctx=ctx)
    amp.init()
    net = gluon.nn.Dense(2)
    net.initialize(ctx=ctx)
    trainer = gluon.Trainer(net.collect_params(), "adam")
    amp.init_trainer(trainer)
""",
    )


def check_amp(checker: LifecycleChecker, sites: list) -> None:
    built: tuple[str, cst.CSTNode] | None = None
    #: The names the networks built before `amp.init()` are bound to, when known.
    names: set[str] = set()
    known = True
    for index, site in enumerate(sites):
        call = site.call
        name = checker.ctx.resolve(call.func)
        if name is not None and knowledge.canonical(name) in knowledge.AMP_INIT:
            later = sites[index:]
            rebuilt = known and bool(names & _rebuilt(later))
            if built is not None and not (rebuilt and not _runs_later(later, names)):
                what, node = built
                checker.ctx.report(
                    call,
                    AmpInitAfterNet,
                    AmpInitAfterNet.format(what=what, line=checker._line(node)),
                )
            return
        target: str | None = None
        if knowledge.builds_network(name):
            built = built or (checker.ctx.code(call.func) + "(...)", call)
            target = _bound_to(site.stmt, call)
        elif (
            type(call.func) is cst.Attribute
            and name is None
            and call.func.attr.value
            in ("initialize", "hybridize", "collect_params", "load_parameters")
        ):
            built = built or (checker.ctx.code(call.func) + "()", call)
            target = dotted_name(call.func.value)
        else:
            continue
        if target is None:
            known = False
        else:
            names.add(target)


def _bound_to(stmt: cst.CSTNode, call: cst.Call) -> str | None:
    """`net` in `net = <call>`."""
    assign = single_assignment(stmt)
    if assign is None or assign.value is not call:
        return None
    return dotted_name(assign.targets[0].target)


def _rebuilt(sites: list) -> set[str]:
    """Names bound again from a call after `amp.init()` (`net = Net.from_cfg(...)`): the
    author builds the network that trains under AMP anew."""
    return {t for t in (_bound_to(site.stmt, site.call) for site in sites) if t is not None}


def _runs_later(sites: list, names: set[str]) -> bool:
    """Whether a network built before `amp.init()` is used after it (called, or a method of it
    called) before its name is bound to a new network: only that one runs without AMP."""
    live = set(names)
    for site in sites:
        call = site.call
        func = call.func
        base = func.value if type(func) is cst.Attribute else func
        used = {dotted_name(base)} | {dotted_name(a.value) for a in call.args}
        if live & used:
            return True
        target = _bound_to(site.stmt, call)
        if target is not None:
            live.discard(target)
    return False
