"""MXL701 export-before-forward: checks `net.export(...)` on a Gluon network that, in the same
function or script, was never hybridized, or was not run forward since its last `hybridize()`
call.

The functions after the class decide and word its findings; the family's checker
(`rules/lifecycle/checker.py`) runs them. Its tests are
the examples below (run by `tests/test_rule_examples.py`), `tests/test_lifecycle.py` and
`tests/snapshots/MXL701.txt`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst

from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.lifecycle._analysis import _NESTED, _NetState, _walk_with_parent

if TYPE_CHECKING:
    from mxlint.rules.lifecycle.checker import LifecycleChecker


#: The problem of an export on a network no code seen hybridizes.
NEVER_HYBRIDIZED = "is called on a network that was never hybridized"
#: The problem of an export after `hybridize()` with no forward pass since.
NOT_RUN = "is called before any forward pass since `hybridize()`"


class ExportBeforeForward(Rule):
    code = "MXL701"
    name = "export-before-forward"
    runtime = Runtime("raise", loud=True, error=r"forward|hybridize|export")
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
        reported. A network returned by a builder (a function or method, in this file or
        another) is hybridized when the function summaries show that something on its way
        hybridized it: the builder itself, the builder it got the network from, a helper it
        handed the network to, or the constructor of a project class that hybridizes itself.
        A network made by a callable no summary sees into (a factory passed in, a method
        of an unknown object) or handed to unknown code may have been hybridized there and is
        not reported as never hybridized.
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

    invalid = (
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
        Example(
            """import mxnet as mx
from models import get_net


def export(path):
    net = get_net()
    net.load_parameters(path)
    net(mx.nd.ones((1, 3)))
    net.export("model")
""",
            line=9,
            project=(
                (
                    "models",
                    "from mxnet import gluon\n\n\n"
                    "def _dense():\n"
                    "    return gluon.nn.Dense(2)\n\n\n"
                    "def get_net():\n"
                    "    net = _dense()\n"
                    "    net.initialize()\n"
                    "    return net\n",
                ),
            ),
        ),
    )

    valid = (
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
        # A method of the same class builds and hybridizes it.
        """import mxnet as mx
from mxnet import gluon


class Exporter:
    def build(self):
        net = gluon.nn.Dense(2)
        net.initialize()
        net.hybridize()
        return net

    def run(self):
        net = self.build()
        net.collect_params()
        net(mx.nd.ones((1, 3)))
        net.export("model")
""",
        # Made by a factory the caller passes in: it may hybridize what it makes.
        """import mxnet as mx


def export(factory):
    net = factory()
    net.initialize()
    net(mx.nd.ones((1, 3)))
    net.export("model")
""",
        # A builder in another file hybridizes the network it returns.
        Valid(
            """from mxnet import autograd
from models import build


def train(loader):
    net = build()
    for x, y in loader:
        with autograd.record():
            loss = net(x).mean()
        loss.backward()
    net.collect_params()
    net.export("net")
""",
            project=(
                (
                    "models",
                    "from mxnet import gluon\n\n\n"
                    "def build():\n"
                    "    net = gluon.nn.Dense(2)\n"
                    "    net.initialize()\n"
                    "    net.hybridize()\n"
                    "    return net\n",
                ),
            ),
        ),
    )


def check_exports(
    checker: LifecycleChecker, scope: cst.Module | cst.FunctionDef, cls: str | None = None
) -> None:
    """Report `export()` calls of the networks one scope builds (a method's scope knows its
    class: `self.build()` is that class's builder)."""
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
                checker._name_event(node, parent, grand, states, nested_refs, cls)
    for net, state in states.items():
        for call, problem in state.exports:
            advice = f"call `{net}.hybridize()` and run one batch through `{net}` before exporting"
            never = problem == NEVER_HYBRIDIZED
            requires = None
            if not state.known_block and state.project_class is not None:
                # A class of the project: a HybridBlock (else it has no `export`), and, for a
                # network never hybridized here, one whose constructor does not hybridize it.
                kind = "hybridblock-unhybridized" if never else "hybridblock"
                requires = (kind, state.project_class)
            elif state.builder is not None and never:
                # Built by a function in another file: reported once the run shows that
                # nothing on the way hybridizes what it returns.
                requires = ("unhybridized", state.builder)
            checker.ctx.report(
                call,
                ExportBeforeForward,
                ExportBeforeForward.format(net=net, problem=problem, advice=advice),
                requires=requires,
            )
