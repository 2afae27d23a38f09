"""The shared dataflow engine and the scopes-and-bindings model, on a small domain of their own:
the set of integer constants a name may hold."""

from __future__ import annotations

import textwrap

import libcst as cst

from mxlint.semantic.bindings import Bindings
from mxlint.semantic.dataflow import Dataflow
from mxlint.walker import TreeIndex, iter_nodes, use_index

Consts = frozenset[object]
TOP: Consts = frozenset({"?"})


class Constants(Dataflow[Consts]):
    """Which integers a name may hold; `?` once unknown. Sums of sets larger than four widen."""

    def __init__(self) -> None:
        super().__init__()
        self.returns: list[Consts] = []
        self.iterated: list[str] = []

    def top(self) -> Consts:
        return TOP

    def join(self, a: Consts, b: Consts) -> Consts:
        return TOP if "?" in a | b else a | b

    def expr(self, node: cst.BaseExpression) -> Consts:
        if type(node) is cst.Integer:
            return frozenset({int(node.value)})
        if type(node) is cst.Name:
            return self.env.get(node.value, TOP)
        if type(node) is cst.BinaryOperation and type(node.operator) is cst.Add:
            left, right = self.expr(node.left), self.expr(node.right)
            if "?" in left | right:
                return TOP
            sums = frozenset(a + b for a in left for b in right)  # type: ignore[operator]
            return sums if len(sums) <= 4 else TOP
        if type(node) is cst.ListComp:
            elt, _ = self.comprehension(node)
            return elt
        if type(node) is cst.Call:
            for arg in node.args:
                self.expr(arg.value)
        return TOP

    def iterate(self, node: cst.For | cst.CompFor, value: Consts) -> None:
        self.iterated.append(cst.Module([]).code_for_node(node.iter))

    def returned(self, node: cst.Return, value: Consts) -> None:
        self.returns.append(value)


def run(source: str) -> Constants:
    module = cst.parse_module(textwrap.dedent(source))
    flow = Constants()
    flow.run(module.body)
    return flow


def test_branches_join_and_a_leaving_branch_does_not():
    flow = run(
        """
        if c:
            x = 1
        else:
            x = 2
        if d:
            y = 3
            return y
        y = 4
        """
    )
    assert flow.env["x"] == {1, 2}
    assert flow.env["y"] == {4}
    assert flow.returns == [{3}]


def test_name_bound_on_one_path_keeps_its_value_before():
    flow = run(
        """
        x = 1
        if c:
            x = 2
        """
    )
    assert flow.env["x"] == {1, 2}


def test_loop_runs_to_a_fixpoint():
    flow = run(
        """
        x = 0
        y = 0
        for i in data:
            y = x
            x = 1
        """
    )
    # the second iteration sees what the first one bound
    assert flow.env["y"] == {0, 1}
    assert flow.env["x"] == {0, 1}


def test_loop_widens_what_keeps_growing():
    flow = run(
        """
        x = 0
        while c:
            x = x + 1
        """
    )
    assert flow.env["x"] == TOP


def test_break_and_continue_reach_the_right_places():
    flow = run(
        """
        x = 0
        for i in data:
            if a:
                x = 1
                break
            if b:
                x = 2
                continue
            x = 3
        else:
            x = 4
        """
    )
    # the else clause runs when no break happened; the break's value joins after the loop
    assert flow.env["x"] == {1, 4}


def test_try_handlers_start_from_what_the_body_may_have_bound():
    flow = run(
        """
        x = 0
        try:
            x = 1
            y = 5
        except ValueError:
            z = x
        else:
            x = 2
        """
    )
    assert flow.env["z"] == {0, 1}
    assert flow.env["x"] == {0, 1, 2}


def test_comprehension_targets_stay_in_their_scope():
    flow = run(
        """
        i = 7
        xs = [i + 1 for i in data if i]
        """
    )
    assert flow.env["i"] == {7}
    assert flow.iterated == ["data"]


def test_unpacking_a_literal_is_element_wise():
    flow = run("a, (b, c) = 1, (2, 3)\n")
    assert flow.env["a"] == {1}
    assert flow.env["b"] == {2} and flow.env["c"] == {3}
    flow = run("a, b = pair\n")
    assert flow.env["a"] == TOP


def test_code_after_return_is_not_reached():
    flow = run(
        """
        x = 1
        return x
        x = 2
        """
    )
    assert flow.env["x"] == {1}


# -- scopes and bindings ---------------------------------------------------------------------

SOURCE = textwrap.dedent(
    """
    import random
    import mxnet as mx
    from mxnet import nd as ndarray

    counter = 0

    class Trainer:
        lr = 0.1

        def __init__(self, net, ctx=mx.cpu()):
            self.net = net
            self.ctx, self.steps = ctx, 0

        def step(self, batch):
            global counter
            counter += 1
            random = Generator(0)
            for x, y in batch:
                with mx.autograd.record() as rec:
                    out = self.net(x)
            squares = [v * v for v in batch if (n := v)]
            return random.random()

    def helper(mx):
        return mx.nd.zeros(1)
    """
)


def _scopes():
    module = cst.parse_module(SOURCE)
    use_index(TreeIndex(module))
    bindings = Bindings(module)
    nodes = {
        n.name.value: n
        for n in iter_nodes(module)
        if isinstance(n, (cst.FunctionDef, cst.ClassDef))
    }
    return module, bindings, nodes


def test_bindings_of_a_module_a_class_and_its_methods():
    module, bindings, nodes = _scopes()
    try:
        top = bindings.module
        assert {b.kind for name in ("random", "mx", "ndarray") for b in top.bindings(name)} == {
            "import"
        }
        assert [b.kind for b in top.bindings("Trainer")] == ["class"]
        cls = bindings.scope(nodes["Trainer"])
        assert cls is not None and cls.kind == "class"
        assert sorted(cls.attributes) == ["ctx", "net", "steps"]
        init = bindings.scope(nodes["__init__"])
        assert init is not None and init.params == ["self", "net", "ctx"]
        default = init.bindings("ctx")[0].value
        assert default is not None and module.code_for_node(default) == "mx.cpu()"
        step = bindings.scope(nodes["step"])
        assert step is not None
        assert step.globals == {"counter"} and not step.local("counter")
        assert sorted(step.names) == [
            "batch",
            "counter",
            "n",
            "out",
            "random",
            "rec",
            "self",
            "squares",
            "x",
            "y",
        ]
        assert [b.kind for b in step.bindings("x")] == ["loop"]
        assert [b.kind for b in step.bindings("rec")] == ["with"]
        assert [b.kind for b in step.bindings("n")] == ["walrus"]
        # `v` is the comprehension's own
        assert "v" not in step.names
        # a class body is not seen from its methods
        assert step.lookup("lr") is None
        assert step.lookup("counter") is top
    finally:
        use_index(None)


def test_shadowing_of_imported_names():
    module, bindings, nodes = _scopes()
    try:
        step = bindings.scope(nodes["step"])
        helper = bindings.scope(nodes["helper"])
        assert step is not None and helper is not None
        assert bindings.shadowed("random", step)  # a local generator
        assert not bindings.shadowed("mx", step)
        assert bindings.shadowed("mx", helper)  # a parameter
        assert not bindings.shadowed("ndarray", helper)
        assert "random" in bindings.rebound and "ndarray" not in bindings.rebound
        # the innermost scope of a node, from the file's tree index
        call = next(
            n
            for n in iter_nodes(nodes["helper"])
            if type(n) is cst.Call and module.code_for_node(n.func) == "mx.nd.zeros"
        )
        assert bindings.scope_at(call) is helper
        assert bindings.scope_at(nodes["Trainer"].body) is bindings.scope(nodes["Trainer"])
    finally:
        use_index(None)


def test_a_loop_stops_when_what_it_reads_has_settled():
    class Counting(Constants):
        passes = 0

        def expr(self, node):  # noqa: ANN001
            if type(node) is cst.Name and node.value == "probe":
                Counting.passes += 1
            return super().expr(node)

    module = cst.parse_module(
        textwrap.dedent(
            """
            for batch in data:
                out = batch + 1
                probe
            """
        )
    )
    flow = Counting()
    flow.run(module.body)
    # `out` changes between the head and the end, but no pass reads it before binding it
    assert Counting.passes == 1
    assert flow.env["out"] == TOP
    # a name read before the body binds it: the second pass sees the first one's value
    module = cst.parse_module("x = 0\nfor b in data:\n    probe\n    y = x\n    x = 1\n")
    Counting.passes = 0
    flow = Counting()
    flow.run(module.body)
    assert Counting.passes == 2 and flow.env["y"] == {0, 1}
