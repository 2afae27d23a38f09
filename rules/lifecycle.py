"""MXL7xx: calls made at the wrong point of a network's life (export, AMP initialisation).

Both rules were checked against MXNet 1.9.1: `HybridBlock.export` raises "Please first call
block.hybridize() and then run forward with this block at least once before calling export"
unless a forward pass ran *after* the last `hybridize()` (a SymbolBlock loaded from a file
exports without one); and a network that was hybridized and run before `amp.init()` keeps its
float32 cached graph (AMP silently does nothing for it), which is why MXNet's documentation
asks for `amp.init()` before the model is created.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst

from mxlint import knowledge
from mxlint.checker import Checker
from mxlint.flow import Flow
from mxlint.rule import Example, Rule, Valid
from mxlint.walker import children

_NESTED = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
#: Calls on a network that neither run it nor let it escape.
_INERT_METHODS = knowledge.BLOCK_METHODS | {
    "export",
    "name_scope",
    "add",
    "register_child",
    "save_params",
    "zero_grad",
    "setattr",
    "share_parameters",
}
_FORWARD_METHODS = frozenset({"forward", "summary"})


class ExportBeforeForward(Rule):
    code = "MXL701"
    name = "export-before-forward"
    message = (
        '`{net}.export()` {problem}: MXNet raises "Please first call block.hybridize() '
        'and then run forward with this block at least once before calling export"; '
        "{advice}"
    )
    what = """
        Checks `net.export(...)` on a Gluon network that, in the same function or script, was
        never hybridized, or was not run forward since its last `hybridize()` call.
    """
    why = """
        `HybridBlock.export` writes the cached symbolic graph, which only exists once the
        block has been hybridized and then called on data. In MXNet 1.9.1 (and 2.x) exporting
        earlier raises a RuntimeError, typically at the very end of a long training run, after
        the last checkpoint. `hybridize()` also discards the cached graph, so a forward pass
        before it does not count. A network that is handed to another function (which may run
        it), or loaded with `SymbolBlock.imports` (which exports without a forward), is not
        reported.
    """
    example = """
        net = vision.resnet18_v1(classes=10)
        net.initialize()
        net.hybridize()
        net.export("model")
    """
    use_instead = """
        net = vision.resnet18_v1(classes=10)
        net.initialize()
        net.hybridize()
        net(mx.nd.zeros((1, 3, 224, 224)))
        net.export("model")
    """


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


@dataclass
class _NetState:
    known_block: bool = False
    project_class: str | None = None
    hybridized: bool = False
    forwarded: bool = False
    unknown: bool = False
    exports: list[tuple[cst.Call, str]] = field(default_factory=list)


def _walk_with_parent(
    node: cst.CSTNode,
) -> Iterator[tuple[cst.CSTNode, cst.CSTNode | None, cst.CSTNode | None]]:
    """Pre-order (node, parent, grandparent), not entering nested definitions below `node`."""
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None, cst.CSTNode | None]] = [(node, None, None)]
    while stack:
        current, parent, grand = stack.pop()
        yield current, parent, grand
        if current is not node and isinstance(current, _NESTED):
            continue
        kids = list(children(current))
        kids.reverse()
        stack.extend((k, current, parent) for k in kids)


class LifecycleChecker(Checker):
    """Export order per function or script; AMP initialisation order along the flow."""

    rules = (ExportBeforeForward, AmpInitAfterNet)
    name = "lifecycle"

    def end(self) -> None:
        source = self.ctx.source
        module = self.ctx.module
        if ".export(" in source:
            self._exports(module)
            for node, _, _ in _walk_with_parent(module):
                if type(node) is cst.FunctionDef:
                    self._exports(node)
        if "amp" in source and ".init(" in source:
            flow = Flow(module)
            self._amp(list(flow.module_sites()))
            for fn in flow.functions.values():
                self._amp(list(Flow(module).function_sites(fn)))

    # -- MXL701 ------------------------------------------------------------------------------

    def _exports(self, scope: cst.Module | cst.FunctionDef) -> None:
        body: Sequence[cst.CSTNode] | cst.CSTNode = scope.body
        nested_refs: set[str] = set()
        if type(scope) is cst.Module:
            # A module-level network used inside functions may be run by them at any time.
            for node, _, _ in _walk_with_parent(scope):
                if type(node) is cst.FunctionDef:
                    nested_refs.update(
                        n.value for n, _, _ in _walk_with_parent(node.body) if type(n) is cst.Name
                    )
        states: dict[str, _NetState] = {}
        stmts: list[cst.CSTNode] = [body] if isinstance(body, cst.CSTNode) else list(body)
        for stmt in stmts:
            if isinstance(stmt, _NESTED):
                continue
            for node, parent, grand in _walk_with_parent(stmt):
                if isinstance(node, _NESTED):
                    # A nested definition mentioning the network may run it: unknown.
                    for name, _, _ in _walk_with_parent(node):
                        if type(name) is cst.Name and name.value in states:
                            states[name.value].unknown = True
                    continue
                if type(node) is cst.Name:
                    self._name_event(node, parent, grand, states, nested_refs)
        for net, state in states.items():
            for call, problem in state.exports:
                advice = (
                    f"call `{net}.hybridize()` and run one batch through `{net}` before exporting"
                )
                requires = None
                if not state.known_block and state.project_class is not None:
                    requires = ("hybridblock", state.project_class)
                self.ctx.report(
                    call,
                    ExportBeforeForward,
                    ExportBeforeForward.format(net=net, problem=problem, advice=advice),
                    requires=requires,
                )

    def _name_event(
        self,
        node: cst.Name,
        parent: cst.CSTNode | None,
        grand: cst.CSTNode | None,
        states: dict[str, _NetState],
        nested_refs: set[str],
    ) -> None:
        name = node.value
        if type(parent) is cst.AssignTarget and parent.target is node and type(grand) is cst.Assign:
            states[name] = self._bound(grand.value, name in nested_refs)
            return
        state = states.get(name)
        if state is None:
            return
        if type(parent) is cst.Call and parent.func is node:
            state.forwarded = True
            return
        if (
            type(parent) is cst.Attribute
            and parent.value is node
            and type(grand) is cst.Call
            and grand.func is parent
        ):
            method = parent.attr.value
            if method == "hybridize":
                active = next(
                    (
                        a.value
                        for a in grand.args
                        if a.keyword is not None and a.keyword.value == "active"
                    ),
                    None,
                )
                if not (type(active) is cst.Name and active.value == "False"):
                    state.hybridized, state.forwarded = True, False
                state.known_block = state.known_block or state.project_class is None
            elif method in _FORWARD_METHODS:
                state.forwarded = True
            elif method == "export":
                if not state.unknown and (state.known_block or state.project_class):
                    if not state.hybridized:
                        state.exports.append(
                            (grand, "is called on a network that was never hybridized")
                        )
                    elif not state.forwarded:
                        state.exports.append(
                            (grand, "is called before any forward pass since `hybridize()`")
                        )
                state.unknown = True  # one report per network and scope
            elif method in knowledge.BLOCK_METHODS:
                state.known_block = state.known_block or state.project_class is None
            elif method not in _INERT_METHODS:
                state.unknown = True
            return
        if type(parent) is cst.Attribute and parent.value is node:
            return  # reading an attribute (`net.name`) neither runs nor leaks the network
        state.unknown = True

    def _bound(self, value: cst.BaseExpression, used_elsewhere: bool) -> _NetState:
        state = _NetState(unknown=used_elsewhere)
        if type(value) is not cst.Call:
            state.unknown = True
            return state
        name = self.ctx.resolve(value.func)
        if name is not None:
            state.known_block = knowledge.builds_network(name)
            if knowledge.canonical(name) in knowledge.SYMBOL_BLOCKS or name.endswith(
                ("SymbolBlock", "SymbolBlock.imports")
            ):
                state.unknown = True
            elif (
                name.split(".", 1)[0] not in ("mxnet", "gluoncv", "gluonnlp")
                and name.rsplit(".", 1)[-1][:1].isupper()
            ):
                state.project_class = name
        elif type(value.func) is cst.Name and value.func.value[:1].isupper():
            state.project_class = self.ctx.qualname(value.func.value)
        return state

    # -- MXL702 ------------------------------------------------------------------------------

    def _amp(self, sites: list) -> None:
        built: tuple[str, cst.CSTNode] | None = None
        for site in sites:
            call = site.call
            name = self.ctx.resolve(call.func)
            if name is not None and knowledge.canonical(name) in knowledge.AMP_INIT:
                if built is not None:
                    what, node = built
                    self.ctx.report(
                        call,
                        AmpInitAfterNet,
                        AmpInitAfterNet.format(what=what, line=self._line(node)),
                    )
                return
            if built is None:
                if knowledge.builds_network(name):
                    built = (self.ctx.code(call.func) + "(...)", call)
                elif (
                    type(call.func) is cst.Attribute
                    and name is None
                    and call.func.attr.value
                    in ("initialize", "hybridize", "collect_params", "load_parameters")
                ):
                    built = (self.ctx.code(call.func) + "()", call)

    def _line(self, node: cst.CSTNode) -> int:
        from mxlint.positions import node_ranges

        rng = node_ranges(self.ctx.module, [node], self.ctx.source).get(node)
        return rng[0][0] if rng else 0


ExportBeforeForward.invalid = (
    Example(
        """import mxnet as mx
from mxnet.gluon.model_zoo import vision

net = vision.resnet18_v1(classes=10)
net.initialize()
net.hybridize()
net.export("model")
""",
        line=7,
    ),
    Example(
        """from mxnet import gluon


def save(ctx):
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(10))
    net.initialize(ctx=ctx)
    net.export("model", epoch=0)
""",
        line=8,
    ),
    Example(
        """import mxnet as mx
from mxnet import autograd
from models import Net


def train(loader, epochs):
    net = Net()
    net.initialize()
    for epoch in range(epochs):
        for x, y in loader:
            with autograd.record():
                loss = net(x)
            loss.backward()
    net.hybridize()
    net.export("net")
""",
        line=15,
        project=(
            (
                "models",
                "from mxnet import gluon\n\n\n"
                "class Net(gluon.HybridBlock):\n"
                "    def hybrid_forward(self, F, x):\n"
                "        return x\n",
            ),
        ),
    ),
)

ExportBeforeForward.valid = (
    """import mxnet as mx
from mxnet.gluon.model_zoo import vision

net = vision.resnet18_v1(classes=10)
net.initialize()
net.hybridize()
net(mx.nd.zeros((1, 3, 224, 224)))
net.export("model")
""",
    # The network is handed to a function that may run it.
    """from mxnet import gluon


def main():
    net = gluon.nn.Dense(10)
    net.initialize()
    net.hybridize()
    train(net)
    net.export("model")
""",
    # A parameter: its state is unknown here.
    """def save(net, path):
    net.export(path)
""",
    # SymbolBlock exports without a forward pass.
    """from mxnet import gluon

net = gluon.nn.SymbolBlock.imports("m-symbol.json", ["data"], "m-0000.params")
net.hybridize()
net.export("copy")
""",
    # Not a network: no evidence it is a Gluon block.
    """import pandas as pd

table = pd.DataFrame()
table.export("x")
""",
    """from mxnet import autograd, gluon


def train(loader):
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(2))
    net.initialize()
    net.hybridize()
    for x, y in loader:
        with autograd.record():
            out = net(x)
        out.backward()
    net.export("final")
""",
    # A project class that is a plain Block (no export at all) is not this rule's business.
    Valid(
        """from models import Net

net = Net()
net.initialize()
net.hybridize()
net.export("x")
""",
        project=(
            (
                "models",
                "from mxnet import gluon\n\n\nclass Net(gluon.Block):\n"
                "    def forward(self, x):\n        return x\n",
            ),
        ),
    ),
)

AmpInitAfterNet.invalid = (
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

AmpInitAfterNet.valid = (
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
