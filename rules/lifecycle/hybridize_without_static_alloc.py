"""MXL703 hybridize-without-static-alloc: advice (off by default) on `net.hybridize()` without
`static_alloc=True`/`static_shape=True` for a network the same function trains on batches of
one shape.

The functions after the class decide and word its findings; the family's checker
(`rules/lifecycle/checker.py`) runs them on every function and on the module. Its tests are
the examples below (run by `tests/test_rule_examples.py`), `tests/test_lifecycle.py` and
`tests/snapshots/MXL703.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mxlint import knowledge
from mxlint.checker import FixSpec, NodeEdit
from mxlint.names import dotted_name, last_name
from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.walker import NESTED_SCOPES, iter_nodes

if TYPE_CHECKING:
    from mxlint.checker import FileContext

#: Data iterators of `mx.io` keep one batch shape (they pad, roll over or discard the last
#: batch).
_FIXED_ITERATORS = ("mxnet.io.",)
_KEYWORDS = ("static_alloc", "static_shape")


class HybridizeWithoutStaticAlloc(Rule):
    code = "MXL703"
    name = "hybridize-without-static-alloc"
    default_enabled = False
    fixable = "unsafe"
    runtime = Runtime(
        "static",
        reason=(
            "a speed and memory advice: the network computes the same with and without "
            "static allocation, so no failure can be shown"
        ),
    )
    message = (
        "`{net}.hybridize()` without {missing} for a network trained on batches of one shape "
        "({source}, line {line}): with `static_alloc=True` the cached graph keeps one set of "
        "buffers across steps, with `static_shape=True` it skips shape inference and memory "
        "planning on each call; `{net}.hybridize(static_alloc=True, static_shape=True)`"
    )
    what = """
        Advice, off by default: checks `net.hybridize()` without `static_alloc=True` or
        `static_shape=True` for a network that the same function then trains (a forward pass
        under `autograd.record()` in a loop) on batches whose shape does not change.
    """
    why = """
        A hybridized network runs a cached graph; by default MXNet allocates its memory and
        re-checks its shapes on every call. `static_alloc=True` keeps one set of buffers for
        the graph, and `static_shape=True` (which needs `static_alloc`) also skips shape
        inference and memory planning when the input shape is the one seen before — the
        fastest way to run a graph whose batches keep one shape (MXNet's performance guide
        recommends both for training). Only loops over sources that keep one batch shape are
        judged: a `DataLoader` with `last_batch="discard"` or `"rollover"` (the default
        `"keep"` ends on a smaller batch), `mx.io` iterators (they pad the last batch) and
        arrays of literal shape made in the loop. An explicit `static_alloc=False` is the
        author's choice and is not reported.
    """
    example = """
        train_data = gluon.data.DataLoader(dataset, batch_size=64, last_batch="discard")
        net.hybridize()
        for x, y in train_data:
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(64)
    """
    use_instead = """
        train_data = gluon.data.DataLoader(dataset, batch_size=64, last_batch="discard")
        net.hybridize(static_alloc=True, static_shape=True)
        for x, y in train_data:
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(64)
    """
    fix_safety = """
        The fix adds `static_alloc=True, static_shape=True` (or the one missing). It is unsafe:
        the results stay the same, but the graph then holds its buffers for the life of the
        network, which changes the memory a process uses.
    """

    invalid = (
        Example(
            """from mxnet import autograd, gluon


def train(net, dataset, epochs):
    loader = gluon.data.DataLoader(dataset, batch_size=64, shuffle=True, last_batch="discard")
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    net.hybridize()
    for _ in range(epochs):
        for x, y in loader:
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(64)
""",
            line=8,
            expected_fix="""from mxnet import autograd, gluon


def train(net, dataset, epochs):
    loader = gluon.data.DataLoader(dataset, batch_size=64, shuffle=True, last_batch="discard")
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    net.hybridize(static_alloc=True, static_shape=True)
    for _ in range(epochs):
        for x, y in loader:
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(64)
""",
        ),
        Example(
            """import mxnet as mx
from mxnet import autograd, gluon

net = gluon.nn.Dense(10)
net.initialize()
net.hybridize(static_alloc=True)
trainer = gluon.Trainer(net.collect_params(), "adam")
train_iter = mx.io.NDArrayIter(mx.nd.ones((100, 20)), mx.nd.ones((100,)), batch_size=10)
for batch in train_iter:
    with autograd.record():
        loss = net(batch.data[0]).mean()
    loss.backward()
    trainer.step(10)
""",
            line=6,
        ),
    )

    valid = (
        """from mxnet import autograd, gluon


def train(net, dataset):
    loader = gluon.data.DataLoader(dataset, batch_size=64, last_batch="discard")
    net.hybridize(static_alloc=True, static_shape=True)
    trainer = gluon.Trainer(net.collect_params(), "sgd")
    for x, y in loader:
        with autograd.record():
            loss = net(x).mean()
        loss.backward()
        trainer.step(64)
""",
        # The last batch of a default DataLoader is smaller: shapes change.
        """from mxnet import autograd, gluon


def train(net, dataset):
    loader = gluon.data.DataLoader(dataset, batch_size=64, shuffle=True)
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd")
    for x, y in loader:
        with autograd.record():
            loss = net(x).mean()
        loss.backward()
        trainer.step(x.shape[0])
""",
        # A loader passed in: its batches are unknown.
        """from mxnet import autograd


def train(net, loader, trainer):
    net.hybridize()
    for x, y in loader:
        with autograd.record():
            loss = net(x).mean()
        loss.backward()
        trainer.step(x.shape[0])
""",
        # Inference only.
        """from mxnet import gluon


def predict(net, dataset):
    loader = gluon.data.DataLoader(dataset, batch_size=8, last_batch="discard")
    net.hybridize()
    return [net(x) for x, _ in loader]
""",
        # The author turned static allocation off.
        Valid(
            """from mxnet import autograd, gluon


def train(net, dataset):
    loader = gluon.data.DataLoader(dataset, batch_size=64, last_batch="rollover")
    net.hybridize(static_alloc=False)
    trainer = gluon.Trainer(net.collect_params(), "sgd")
    for x, y in loader:
        with autograd.record():
            loss = net(x).mean()
        loss.backward()
        trainer.step(64)
"""
        ),
    )


def check_static_alloc(ctx: FileContext, scope: cst.Module | cst.FunctionDef) -> None:
    """Report the `hybridize()` calls of one scope whose network the scope trains on batches
    of one shape."""
    nodes = list(iter_nodes(scope, stop=NESTED_SCOPES))
    calls = [n for n in nodes if type(n) is cst.Call and type(n.func) is cst.Attribute]
    hybridized = [c for c in calls if c.func.attr.value == "hybridize"]  # type: ignore[attr-defined]
    if not hybridized:
        return
    sources = _fixed_sources(ctx, nodes)
    for call in hybridized:
        missing = _missing(call)
        net = dotted_name(call.func.value)  # type: ignore[attr-defined]
        if not missing or net is None:
            continue
        found = _trained_on(ctx, nodes, net, sources)
        if found is None:
            continue
        source, line = found
        spelled = " and ".join(f"`{k}=True`" for k in missing)
        ctx.report(
            call,
            HybridizeWithoutStaticAlloc,
            HybridizeWithoutStaticAlloc.format(net=net, missing=spelled, source=source, line=line),
            fix=_fix(call, missing),
        )


def _missing(call: cst.Call) -> list[str]:
    """The static keywords `call` does not set; none when it turns either off or is
    `hybridize(False)`/`**kwargs`."""
    given: dict[str, cst.BaseExpression] = {}
    for i, arg in enumerate(call.args):
        if arg.star:
            return []
        if arg.keyword is None:
            if i == 0 and not (type(arg.value) is cst.Name and arg.value.value == "True"):
                return []
            continue
        given[arg.keyword.value] = arg.value
        if arg.keyword.value == "active" and not (
            type(arg.value) is cst.Name and arg.value.value == "True"
        ):
            return []
    for key in _KEYWORDS:
        value = given.get(key)
        if value is not None and not (type(value) is cst.Name and value.value == "True"):
            return []  # set to False, or to something only the run knows
    return [k for k in _KEYWORDS if k not in given]


def _fixed_sources(ctx: FileContext, nodes: list[cst.CSTNode]) -> dict[str, tuple[str, int]]:
    """Names bound in the scope to a data source that keeps one batch shape, with how it is
    spelled and its line."""
    out: dict[str, tuple[str, int]] = {}
    for node in nodes:
        if type(node) is not cst.Assign or len(node.targets) != 1:
            continue
        target = node.targets[0].target
        value = node.value
        if type(target) is not cst.Name or type(value) is not cst.Call:
            continue
        name = ctx.resolve(value.func)
        if name is None:
            continue
        canon = knowledge.canonical(name)
        fixed = False
        if canon == knowledge.DATALOADER:
            fixed = _last_batch(value) in ("discard", "rollover")
        elif canon.startswith(_FIXED_ITERATORS) and canon.endswith("Iter"):
            fixed = True
        if fixed:
            out[target.value] = (ctx.code(value.func) + "(...)", _line(ctx, node))
    return out


def _last_batch(call: cst.Call) -> str | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "last_batch":
            value = arg.value
            if type(value) is cst.SimpleString and isinstance(value.evaluated_value, str):
                return value.evaluated_value
            return None
    return "keep"


def _trained_on(
    ctx: FileContext,
    nodes: list[cst.CSTNode],
    net: str,
    sources: dict[str, tuple[str, int]],
) -> tuple[str, int] | None:
    """The fixed-shape source of a loop of the scope that runs `net` under
    `autograd.record()`, when there is one."""
    for node in nodes:
        if type(node) is not cst.For:
            continue
        source = None
        if type(node.iter) is cst.Name and node.iter.value in sources:
            source = sources[node.iter.value]
        if source is None:
            source = _literal_batches(ctx, node)
        if source is not None and _trains(ctx, node, net):
            return source
    return None


def _literal_batches(ctx: FileContext, loop: cst.For) -> tuple[str, int] | None:
    """Batches made in the loop body by an MXNet array function with a literal shape
    (`mx.nd.random.uniform(shape=(8, 3, 32, 32))`) and fed to the network directly."""
    for node in iter_nodes(loop.body, stop=NESTED_SCOPES):
        if type(node) is not cst.Call:
            continue
        name = ctx.resolve(node.func)
        if name is None or not knowledge.in_namespace(knowledge.canonical(name), ("mxnet.nd",)):
            continue
        for arg in node.args:
            if (arg.keyword is None or arg.keyword.value == "shape") and _literal_shape(arg.value):
                return ctx.code(node.func) + "(...)", _line(ctx, node)
    return None


def _literal_shape(node: cst.BaseExpression) -> bool:
    return (
        type(node) is cst.Tuple
        and len(node.elements) >= 2
        and all(type(el.value) is cst.Integer for el in node.elements)
    )


def _trains(ctx: FileContext, loop: cst.For, net: str) -> bool:
    """`net(...)` inside a `with autograd.record():` of the loop, and a trainer step."""
    forward = False
    steps = False
    for node in iter_nodes(loop.body, stop=NESTED_SCOPES):
        if type(node) is cst.With and any(_records(ctx, item.item) for item in node.items):
            for inner in iter_nodes(node.body, stop=NESTED_SCOPES):
                if type(inner) is cst.Call and dotted_name(inner.func) == net:
                    forward = True
        elif (
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and node.func.attr.value in ("step", "update")
        ):
            steps = True
    return forward and steps


def _records(ctx: FileContext, item: cst.BaseExpression) -> bool:
    """The `with` item records (`autograd.record()`), as `knowledge.recording_block` reads it."""
    if type(item) is not cst.Call:
        return False
    return knowledge.recording_block(ctx.resolve(item.func), last_name(item.func)) is not None


def _fix(call: cst.Call, missing: list[str]) -> FixSpec:
    added = ", ".join(f"{k}=True" for k in missing)
    text = f"{added}" if not call.args else f", {added}"
    anchor: cst.CSTNode = call.args[-1] if call.args else call
    if call.args:
        edit = NodeEdit(anchor, text, "insert_after")
    else:
        edit = NodeEdit(call, _with_args(call, added))
    return FixSpec("unsafe", f"Hybridize with {added}", (edit,))


def _with_args(call: cst.Call, added: str) -> str:
    func = call.func
    assert isinstance(func, cst.Attribute)
    owner = cst.Module([]).code_for_node(func)
    return f"{owner}({added})"


def _line(ctx: FileContext, node: cst.CSTNode) -> int:
    from mxlint.positions import node_ranges

    rng = node_ranges(ctx.module, [node], ctx.source).get(node)
    return rng[0][0] if rng else 0
