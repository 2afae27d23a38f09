"""MXL706 amp-trainer-not-initialized: checks `amp.scale_loss(loss, trainer)` on a Gluon Trainer
the same function built and never gave to `amp.init_trainer` before.

The functions after the class decide and word its findings; the family's checker
(`rules/lifecycle/checker.py`) runs them on the calls of each function in execution order
(`mxlint/flow.py`). Its tests are the examples below (run by `tests/test_rule_examples.py`),
`tests/test_lifecycle.py` and `tests/snapshots/MXL706.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mxlint import knowledge
from mxlint.checker import FixSpec, NodeEdit
from mxlint.flow import Site, single_assignment
from mxlint.names import dotted_name
from mxlint.rule import Example, Rule, Runtime

if TYPE_CHECKING:
    from mxlint.checker import FileContext


class AmpTrainerNotInitialized(Rule):
    code = "MXL706"
    name = "amp-trainer-not-initialized"
    fixable = "safe"
    runtime = Runtime("raise", loud=True, error=r"_amp_loss_scaler|init_trainer")
    message = (
        "`amp.scale_loss(..., {trainer})` on a trainer never given to `amp.init_trainer` "
        "(built at line {line}): MXNet raises `AttributeError: 'Trainer' object has no "
        "attribute '_amp_loss_scaler'` at the first step; call `amp.init_trainer({trainer})` "
        "after building it"
    )
    what = """
        Checks `amp.scale_loss(loss, trainer)` on a Gluon Trainer that the same function built
        and did not give to `amp.init_trainer` before, in execution order.
    """
    why = """
        `amp.scale_loss` multiplies the loss by the trainer's dynamic loss scale and sets the
        trainer to divide the gradients by it; both live in the loss scaler that
        `amp.init_trainer(trainer)` attaches. Without it, MXNet 1.9.1 raises
        `AttributeError: 'Trainer' object has no attribute '_amp_loss_scaler'` at the first
        `scale_loss`. A trainer handed to another function before (which may initialise it),
        built by a helper, or passed in as a parameter is not judged.
    """
    example = """
        trainer = gluon.Trainer(net.collect_params(), "sgd")
        with autograd.record():
            loss = loss_fn(net(x), y)
            with amp.scale_loss(loss, trainer) as scaled:
                autograd.backward(scaled)
    """
    use_instead = """
        trainer = gluon.Trainer(net.collect_params(), "sgd")
        amp.init_trainer(trainer)
        with autograd.record():
            loss = loss_fn(net(x), y)
            with amp.scale_loss(loss, trainer) as scaled:
                autograd.backward(scaled)
    """
    fix_safety = """
        The fix inserts `amp.init_trainer(trainer)` (with the file's name for the AMP module)
        after the statement that builds the trainer, where `scale_loss` needs it. It is safe:
        the trainer it initialises is the one `scale_loss` is given, and `scale_loss` cannot
        run without it.
    """

    invalid = (
        Example(
            """from mxnet import autograd, gluon
from mxnet.contrib import amp


def train(net, loader):
    amp.init()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss_fn = gluon.loss.L2Loss()
    for x, y in loader:
        with autograd.record():
            loss = loss_fn(net(x), y)
            with amp.scale_loss(loss, trainer) as scaled:
                autograd.backward(scaled)
        trainer.step(x.shape[0])
""",
            line=12,
            expected_fix="""from mxnet import autograd, gluon
from mxnet.contrib import amp


def train(net, loader):
    amp.init()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    amp.init_trainer(trainer)
    loss_fn = gluon.loss.L2Loss()
    for x, y in loader:
        with autograd.record():
            loss = loss_fn(net(x), y)
            with amp.scale_loss(loss, trainer) as scaled:
                autograd.backward(scaled)
        trainer.step(x.shape[0])
""",
        ),
        Example(
            """import mxnet as mx
from mxnet import autograd, gluon
from mxnet.contrib import amp


class Learner:
    def fit(self, net, loader):
        self.trainer = mx.gluon.Trainer(net.collect_params(), "adam")
        for x, y in loader:
            with autograd.record():
                loss = net(x).mean()
                with amp.scale_loss(loss, self.trainer) as scaled:
                    scaled.backward()
            self.trainer.step(1)
            amp.init_trainer(self.trainer)
""",
            line=12,
        ),
    )

    valid = (
        """from mxnet import autograd, gluon
from mxnet.contrib import amp


def train(net, loader, use_amp):
    trainer = gluon.Trainer(net.collect_params(), "sgd")
    if use_amp:
        amp.init_trainer(trainer)
    for x, y in loader:
        with autograd.record():
            loss = net(x).mean()
            if use_amp:
                with amp.scale_loss(loss, trainer) as scaled:
                    autograd.backward(scaled)
            else:
                loss.backward()
        trainer.step(1)
""",
        # Built by a helper, or handed to one: it may be initialised there.
        """from mxnet import autograd, gluon
from mxnet.contrib import amp


def train(net, loader, make_trainer):
    trainer = make_trainer(net)
    other = gluon.Trainer(net.collect_params(), "sgd")
    setup_amp(other)
    for x, y in loader:
        with autograd.record():
            loss = net(x).mean()
            with amp.scale_loss(loss, trainer) as scaled:
                autograd.backward(scaled)
            with amp.scale_loss(loss, other) as scaled:
                autograd.backward(scaled)
""",
        # A parameter: the caller may have initialised it.
        """from mxnet import autograd
from mxnet.contrib import amp


def step(net, trainer, x):
    with autograd.record():
        loss = net(x).mean()
        with amp.scale_loss(loss, trainer) as scaled:
            autograd.backward(scaled)
    trainer.step(1)
""",
    )


def check_trainers(ctx: FileContext, sites: list[Site], depth: int) -> set[cst.Call]:
    """Report `scale_loss` calls of one function (its own calls: `depth` frames deep) on a
    trainer it built and did not initialise first; the calls reported."""
    #: Trainer name -> the statement that built it, while nothing may have initialised it.
    built: dict[str, cst.CSTNode] = {}
    reported: set[cst.Call] = set()
    for site in sites:
        if len(site.frames) != depth:
            continue
        call = site.call
        name = ctx.resolve(call.func)
        canon = knowledge.canonical(name) if name is not None else None
        assign = single_assignment(site.stmt)
        if canon == knowledge.TRAINER and assign is not None and assign.value is call:
            target = dotted_name(assign.targets[0].target)
            if target is not None:
                built[target] = site.stmt
            continue
        trainer = _trainer_argument(call) if canon in knowledge.AMP_SCALE_LOSS else None
        if trainer is not None and trainer in built:
            if call not in reported:
                reported.add(call)
                ctx.report(
                    call,
                    AmpTrainerNotInitialized,
                    AmpTrainerNotInitialized.format(
                        trainer=trainer, line=_line(ctx, built[trainer])
                    ),
                    fix=_fix(ctx, built[trainer], trainer),
                )
            continue
        # Initialised, handed on, or bound again: no longer this rule's to judge.
        for handed in _mentioned(call):
            if handed in built and not _is_own_method(call, handed):
                del built[handed]
        if assign is not None:
            target = dotted_name(assign.targets[0].target)
            if target in built and canon != knowledge.TRAINER:
                del built[target]
    return reported


def _trainer_argument(call: cst.Call) -> str | None:
    for i, arg in enumerate(call.args):
        if (arg.keyword is None and i == 1) or (
            arg.keyword is not None and arg.keyword.value == "optimizer_or_trainer"
        ):
            return dotted_name(arg.value)
    return None


def _mentioned(call: cst.Call) -> set[str]:
    """Dotted names a call is given as arguments or is a method of."""
    out = {n for n in (dotted_name(a.value) for a in call.args) if n is not None}
    if type(call.func) is cst.Attribute:
        owner = dotted_name(call.func.value)
        if owner is not None:
            out.add(owner)
    return out


def _is_own_method(call: cst.Call, trainer: str) -> bool:
    """`trainer.step(...)`, `trainer.learning_rate`...: the trainer's own methods leave its
    loss scaler as it is."""
    func = call.func
    return (
        type(func) is cst.Attribute
        and dotted_name(func.value) == trainer
        and func.attr.value in ("step", "update", "allreduce_grads", "set_learning_rate")
        and all(dotted_name(a.value) != trainer for a in call.args)
    )


def _line(ctx: FileContext, node: cst.CSTNode) -> int:
    from mxlint.positions import node_ranges

    rng = node_ranges(ctx.module, [node], ctx.source).get(node)
    return rng[0][0] if rng else 0


def _fix(ctx: FileContext, stmt: cst.CSTNode, trainer: str) -> FixSpec | None:
    """`amp.init_trainer(trainer)` on the line after the statement that built the trainer,
    spelled with the name the file imports the AMP module under (no fix after a statement
    that shares its line with a comment or another statement)."""
    from mxlint.positions import node_ranges

    amp = _amp_name(ctx)
    rng = node_ranges(ctx.module, [stmt], ctx.source).get(stmt)
    if amp is None or rng is None:
        return None
    (sl, sc), (el, ec) = rng
    lines = ctx.source.splitlines()
    if el > len(lines) or lines[sl - 1][:sc].strip() or lines[el - 1][ec:].strip():
        return None
    indent = lines[sl - 1][:sc]
    return FixSpec(
        "safe",
        f"Call `{amp}.init_trainer({trainer})` after building it",
        (NodeEdit(stmt, f"\n{indent}{amp}.init_trainer({trainer})", "insert_after"),),
    )


def _amp_name(ctx: FileContext) -> str | None:
    """How the file spells the AMP module (`amp`, `mx.contrib.amp`)."""
    for spelled in ("amp", "mx.contrib.amp", "mxnet.contrib.amp", "mx.amp"):
        node = cst.parse_expression(f"{spelled}.init_trainer")
        if ctx.imports.resolve(node) in knowledge.AMP_INIT_TRAINER:
            return spelled
    return None
