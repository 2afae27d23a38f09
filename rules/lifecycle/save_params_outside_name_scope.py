"""MXL708 save-params-outside-name-scope: checks the deprecated `net.save_params(...)` on a
network whose layers were created outside its `name_scope()`, which MXNet 1.9.1 cannot save.

The functions after the class decide and word its findings; the family's checker
(`rules/lifecycle/checker.py`) runs them on every function and on the module. Its tests are the
examples below (run by `tests/test_rule_examples.py`), `tests/test_lifecycle.py` and
`tests/snapshots/MXL708.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mxlint import knowledge
from mxlint.checker import FixSpec, NodeEdit
from mxlint.names import dotted_name
from mxlint.rule import Example, Rule, Runtime
from mxlint.walker import NESTED_SCOPES, iter_nodes

if TYPE_CHECKING:
    from mxlint.checker import FileContext

_SEQUENTIALS = frozenset({"mxnet.gluon.nn.Sequential", "mxnet.gluon.nn.HybridSequential"})


class SaveParamsOutsideNameScope(Rule):
    code = "MXL708"
    name = "save-params-outside-name-scope"
    mxnet = "1"
    fixable = "unsafe"
    runtime = Runtime("raise", loud=True, error=r"has no attribute 'message'|is to be striped")
    message = (
        "`{net}.save_params()` on a network whose layers were created outside "
        "`{net}.name_scope()` ({where}): MXNet 1.9.1 raises (`save_params` strips the "
        "network's prefix from parameter names that do not carry it, and its error handler "
        "fails with `AttributeError: 'ValueError' object has no attribute 'message'`); use "
        "`{net}.save_parameters()`, which `load_parameters` reads"
    )
    what = """
        Checks the deprecated `net.save_params(...)` on a Gluon network whose layers were
        created outside its `name_scope()`: a `Sequential`/`HybridSequential` filled by `add()`
        outside `with net.name_scope():`, or a class of the file whose `__init__` creates its
        layers outside `with self.name_scope():`.
    """
    why = """
        `save_params` (deprecated since MXNet 1.3) saves each parameter under its name without
        the network's prefix (`hybridsequential0_dense0_weight` -> `dense0_weight`). A layer
        created outside the network's `name_scope()` gets a prefix of its own (`dense0_`), so
        its parameters do not carry the network's prefix, and MXNet 1.9.1 raises — in Python 3
        as `AttributeError: 'ValueError' object has no attribute 'message'`, from the handler
        meant to explain it (checked on MXNet 1.9.1). The checkpoint is lost at the end of
        training. `save_parameters` names parameters by their place in the network and needs
        no name scope; `load_parameters` reads it (and also what `save_params` wrote before).
        Networks built elsewhere, layers added as variables built earlier, and layers given
        to a network with its own `prefix` are not judged.
    """
    example = """
        net = gluon.nn.Sequential()
        net.add(gluon.nn.Dense(256, activation="relu"), gluon.nn.Dense(10))
        ...
        net.save_params("mlp.params")
    """
    use_instead = """
        net = gluon.nn.Sequential()
        net.add(gluon.nn.Dense(256, activation="relu"), gluon.nn.Dense(10))
        ...
        net.save_parameters("mlp.params")
    """
    fix_safety = """
        The fix calls `save_parameters` instead. It is unsafe: the file then holds structural
        names, which `load_parameters`/`load_params` read, but a reader of the old format
        (`collect_params().load(..., restore_prefix=...)`) does not.
    """

    invalid = (
        Example(
            """from mxnet import autograd, gluon


def train(loader, epochs):
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(256, activation="relu"), gluon.nn.Dense(10))
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd")
    for _ in range(epochs):
        for x, y in loader:
            with autograd.record():
                loss = net(x).mean()
            loss.backward()
            trainer.step(x.shape[0])
    net.save_params("mlp.params")
""",
            line=15,
            expected_fix="""from mxnet import autograd, gluon


def train(loader, epochs):
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(256, activation="relu"), gluon.nn.Dense(10))
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd")
    for _ in range(epochs):
        for x, y in loader:
            with autograd.record():
                loss = net(x).mean()
            loss.backward()
            trainer.step(x.shape[0])
    net.save_parameters("mlp.params")
""",
        ),
        Example(
            """from mxnet import gluon


class Encoder(gluon.Block):
    def __init__(self):
        super().__init__()
        self.embed = gluon.nn.Embedding(1000, 64)
        with self.name_scope():
            self.proj = gluon.nn.Dense(32)

    def forward(self, x):
        return self.proj(self.embed(x))


encoder = Encoder()
encoder.initialize()
encoder.save_params("encoder.params")
""",
            line=17,
        ),
    )

    valid = (
        """from mxnet import gluon

net = gluon.nn.HybridSequential()
with net.name_scope():
    net.add(gluon.nn.Dense(256, activation="relu"), gluon.nn.Dense(10))
net.initialize()
net.save_params("mlp.params")
""",
        """from mxnet import gluon

net = gluon.nn.Sequential()
net.add(gluon.nn.Dense(10))
net.initialize()
net.save_parameters("mlp.params")
""",
        # Layers built earlier: where they were created is not seen here.
        """from mxnet import gluon


def save(layers):
    net = gluon.nn.Sequential()
    with net.name_scope():
        for layer in layers:
            net.add(layer)
    net.save_params("net.params")
""",
        """from mxnet import gluon


class Encoder(gluon.Block):
    def __init__(self):
        super().__init__()
        with self.name_scope():
            self.embed = gluon.nn.Embedding(1000, 64)
            self.proj = gluon.nn.Dense(32)


encoder = Encoder()
encoder.initialize()
encoder.save_params("encoder.params")
""",
        # A Module's save_params writes its own format.
        """import mxnet as mx

mod = mx.mod.Module(mx.sym.var("data"))
mod.save_params("module.params")
""",
    )


def check_save_params(ctx: FileContext, scope: cst.Module | cst.FunctionDef) -> None:
    """Report `save_params` calls of one scope on a network it built with layers outside the
    network's name scope."""
    nodes = list(iter_nodes(scope, stop=NESTED_SCOPES))
    saves = [
        n
        for n in nodes
        if type(n) is cst.Call
        and type(n.func) is cst.Attribute
        and n.func.attr.value == "save_params"
        and type(n.func.value) is cst.Name
    ]
    if not saves:
        return
    for call in saves:
        net = call.func.value.value  # type: ignore[attr-defined]
        value = _single_binding(ctx, call, net)
        if value is None:
            continue
        where = _outside_scope(ctx, nodes, net, value)
        if where is None:
            continue
        ctx.report(
            call,
            SaveParamsOutsideNameScope,
            SaveParamsOutsideNameScope.format(net=net, where=where),
            fix=FixSpec(
                "unsafe",
                "Save with `save_parameters`",
                (NodeEdit(call.func.attr, "save_parameters"),),  # type: ignore[attr-defined]
            ),
        )


def _single_binding(ctx: FileContext, call: cst.Call, name: str) -> cst.Call | None:
    """The call `name` holds where `call` uses it, when its scope binds it once, to a call."""
    scope = ctx.bindings.scope_at(call)
    owner = scope.lookup(name)
    if owner is None:
        return None
    found = owner.bindings(name)
    if len(found) != 1 or found[0].kind != "assignment" or type(found[0].value) is not cst.Call:
        return None
    return found[0].value


def _outside_scope(
    ctx: FileContext, nodes: list[cst.CSTNode], net: str, value: cst.Call
) -> str | None:
    """How the network's layers came to be outside its name scope (for the message), or None
    when they are not, or it is not known."""
    name = ctx.resolve(value.func)
    if name is not None and knowledge.canonical(name) in _SEQUENTIALS:
        if value.args:
            return None  # a prefix (or params) of its own
        return _added_outside(ctx, nodes, net)
    if type(value.func) is cst.Name:
        return _class_outside(ctx, value.func.value)
    return None


def _added_outside(ctx: FileContext, nodes: list[cst.CSTNode], net: str) -> str | None:
    scoped: set[cst.CSTNode] = set()
    for node in nodes:
        if type(node) is cst.With and any(_is_name_scope(i.item, net) for i in node.items):
            scoped.update(iter_nodes(node.body, stop=NESTED_SCOPES))
    for node in nodes:
        if (
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and node.func.attr.value == "add"
            and dotted_name(node.func.value) == net
            and node not in scoped
            and any(_builds_layer(ctx, a.value) for a in node.args)
        ):
            return f"`{net}.add(...)`, line {_line(ctx, node)}"
    return None


def _class_outside(ctx: FileContext, cls: str) -> str | None:
    """A layer a class of this file creates in `__init__` outside `with self.name_scope():`."""
    init = ctx.effects.functions.get(f"{cls}.__init__")
    if init is None:
        return None
    nodes = list(iter_nodes(init.body, stop=NESTED_SCOPES))
    scoped: set[cst.CSTNode] = set()
    for node in nodes:
        if type(node) is cst.With and any(_is_name_scope(i.item, "self") for i in node.items):
            scoped.update(iter_nodes(node.body, stop=NESTED_SCOPES))
    for node in nodes:
        if type(node) is cst.Call and node not in scoped and _builds_layer(ctx, node):
            return f"`{ctx.code(node.func)}(...)` in `{cls}.__init__`, line {_line(ctx, node)}"
    return None


def _is_name_scope(item: cst.BaseExpression, owner: str) -> bool:
    return (
        type(item) is cst.Call
        and type(item.func) is cst.Attribute
        and item.func.attr.value == "name_scope"
        and dotted_name(item.func.value) == owner
    )


def _builds_layer(ctx: FileContext, node: cst.BaseExpression) -> bool:
    if type(node) is not cst.Call:
        return False
    name = ctx.resolve(node.func)
    return knowledge.builds_network(name)


def _line(ctx: FileContext, node: cst.CSTNode) -> int:
    from mxlint.positions import node_ranges

    rng = node_ranges(ctx.module, [node], ctx.source).get(node)
    return rng[0][0] if rng else 0
