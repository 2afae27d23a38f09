"""The walk's dispatch: which handlers of which objects run at which nodes."""

from __future__ import annotations

import libcst as cst

from mxlint.flow import Flow
from mxlint.semantic.bindings import Binding, Bindings
from mxlint.walker import (
    NESTED_SCOPES,
    TreeIndex,
    dispatch,
    iter_nodes,
    typed_nodes,
    use_index,
    walk,
)


class Seen:
    def __init__(self) -> None:
        self.names: list[str] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node.value)


def _run(obj: object, code: str) -> None:
    visits, leaves = dispatch([obj])
    walk(cst.parse_module(code), visits, leaves, [], lambda owner, exc: None)


def test_handlers_by_class_also_after_the_class_changed():
    first = Seen()
    _run(first, "a = b\n")
    assert first.names == ["a", "b"]

    def leave_Call(self: Seen, node: cst.Call) -> None:
        self.names.append("call")

    Seen.leave_Call = leave_Call  # type: ignore[attr-defined]
    try:
        second = Seen()
        _run(second, "f(x)\n")
        assert second.names == ["f", "x", "call"]
    finally:
        del Seen.leave_Call  # type: ignore[attr-defined]
    third = Seen()
    _run(third, "f(x)\n")
    assert third.names == ["f", "x"]
    visits, leaves = dispatch([third, Seen()])
    assert [owner for owner, _ in visits[cst.Name]] == [0, 1]
    assert leaves == {}


_NESTED_CODE = """
import numpy as np
from mxnet import nd

class Trainer:
    lr = 0.1

    def __init__(self, net, ctx=None):
        self.net = net
        self.ctx = ctx or [nd.cpu()]

    def step(self, batch):
        loss = [self.net(x) for x in batch]
        helper = lambda y: y.sum()
        def inner(z, w=nd.ones(2)):
            nonlocal loss
            loss = z + w
            return (q := z * 2)
        for i, (a, b) in enumerate(batch):
            with open("log") as fh:
                fh.write(str(a))
        return inner(helper(loss[0]))


def main():
    global ROUNDS
    try:
        ROUNDS = int(np.random.rand() * 10)
    except ValueError as exc:
        print(exc)
    t = Trainer(None)
    t.step({k: v for k, v in []})


if __name__ == "__main__":
    main()
"""


def _indexed(code: str) -> TreeIndex:
    index = TreeIndex(cst.parse_module(code))
    use_index(index)
    return index


def test_type_lists_of_the_index_hold_every_node_of_each_type_in_pre_order() -> None:
    index = _indexed(_NESTED_CODE)
    try:
        for typ in (cst.Name, cst.Call, cst.FunctionDef, cst.Lambda, cst.Attribute):
            expected = [n for n in index.order if type(n) is typ]
            assert index.nodes_of(typ) == expected
            assert [index.order[i] for i in index.by_type[typ]] == expected
        both = index.indices_of((cst.Lambda, cst.FunctionDef))
        assert both == sorted(both)
        assert {type(index.order[i]) for i in both} == {cst.Lambda, cst.FunctionDef}
        assert len(both) == 5  # __init__, step, the lambda, inner, main
    finally:
        use_index(None)


def test_typed_nodes_equal_the_filtered_walk_with_and_without_the_index() -> None:
    module = cst.parse_module(_NESTED_CODE)
    cases = [
        ({cst.Call}, ()),
        ({cst.Name, cst.Call}, NESTED_SCOPES),
        ({cst.Assign, cst.For, cst.IndentedBlock}, NESTED_SCOPES),
        ({cst.Name}, (cst.Import, cst.ImportFrom)),
        ({cst.Call, cst.Lambda}, (cst.BaseCompoundStatement,)),  # a base class stops too
    ]
    roots = [module, *[n for n in TreeIndex(module).order if type(n) is cst.FunctionDef]]
    expected = {
        (id(root), k): [n for n in iter_nodes(root, stop) if type(n) in types]
        for root in roots
        for k, (types, stop) in enumerate(cases)
    }
    assert any(len(found) > 3 for found in expected.values())
    unindexed = {
        (id(root), k): typed_nodes(root, types, stop)
        for root in roots
        for k, (types, stop) in enumerate(cases)
    }
    use_index(TreeIndex(module))
    try:
        indexed = {
            (id(root), k): typed_nodes(root, types, stop)
            for root in roots
            for k, (types, stop) in enumerate(cases)
        }
    finally:
        use_index(None)
    for key, nodes in expected.items():
        assert [id(n) for n in indexed[key]] == [id(n) for n in nodes]
        assert [id(n) for n in unindexed[key]] == [id(n) for n in nodes]


def test_typed_nodes_skip_nested_scopes_but_keep_their_own_node() -> None:
    module = cst.parse_module("def f():\n    def g():\n        h()\n    k(lambda: m())\n")
    outer = module.body[0]
    assert isinstance(outer, cst.FunctionDef)
    use_index(TreeIndex(module))
    try:
        found = typed_nodes(outer, {cst.Call, cst.FunctionDef, cst.Lambda}, NESTED_SCOPES)
    finally:
        use_index(None)
    kinds = [type(n).__name__ for n in found]
    assert kinds == ["FunctionDef", "FunctionDef", "Call", "Lambda"]  # f, g, k(...), the lambda


def _scopes(bindings: Bindings) -> list[tuple]:
    """Every scope with what it binds, by node identity."""

    def listed(found: dict[str, list[Binding]]) -> dict[str, list[tuple[str, int, int]]]:
        return {k: [(b.kind, id(b.node), id(b.value)) for b in v] for k, v in found.items()}

    return [
        (
            scope.kind,
            id(scope.node),
            id(scope.parent.node) if scope.parent else None,
            listed(scope.names),
            scope.params,
            sorted(scope.globals),
            sorted(scope.nonlocals),
            listed(scope.attributes),
        )
        for scope in bindings._scopes.values()
    ]


def test_bindings_read_from_the_index_equal_those_read_by_walking_each_scope() -> None:
    module = cst.parse_module(_NESTED_CODE)
    walked = Bindings(module)
    use_index(TreeIndex(module))
    try:
        indexed = Bindings(module)
    finally:
        use_index(None)
    assert _scopes(indexed) == _scopes(walked)
    assert indexed.rebound == walked.rebound
    kinds = sorted(scope.kind for scope in indexed._scopes.values())
    assert kinds == sorted(
        ["module", "class", "function", "function", "comprehension", "lambda", "function"]
        + ["function", "comprehension"]
    )
    trainer = next(s for s in indexed._scopes.values() if s.kind == "class")
    assert sorted(trainer.attributes) == ["ctx", "net"]
    inner = next(
        s
        for s in indexed._scopes.values()
        if type(s.node) is cst.FunctionDef and s.node.name.value == "inner"
    )
    assert inner.nonlocals == {"loss"} and "q" in inner.names


def test_a_fresh_tracer_shares_the_files_trace_and_takes_over_its_state() -> None:
    module = cst.parse_module(_NESTED_CODE)
    fresh = list(Flow(module).module_sites())
    alone = Flow(module)
    expected_reached = (list(alone.module_sites()), set(alone.reached), alone._budget)
    use_index(TreeIndex(module))
    try:
        first, second = Flow(module), Flow(module)
        got_first = list(first.module_sites())
        got_second = list(second.module_sites())
        # A tracer that has traced something already traces on its own.
        busy = Flow(module)
        main = busy.functions["main"]
        list(busy.function_sites(main))
        after = list(busy.module_sites())
    finally:
        use_index(None)
    assert got_first == fresh and got_second == fresh
    assert all(a is b for a, b in zip(got_first, got_second))  # read once, shared
    assert (set(second.reached), second._budget) == expected_reached[1:]
    assert [s.call for s in after] == [s.call for s in fresh]
    assert busy.reached >= {main}
    calls = [module.code_for_node(s.call.func) for s in fresh]
    assert calls == ["main", "np.random.rand", "int", "print", "Trainer", "nd.cpu", "t.step"]
    assert sorted(f.name.value for f in second.reached) == ["__init__", "main"]


def test_subtrees_read_from_the_index_equal_the_walk_for_every_node(fixtures_dir) -> None:
    """`TreeIndex.subtree` copies the runs between the nodes it does not enter: for every node
    of syntax-heavy fixtures and every kind of stop (none, nested scopes, a base class, types
    that nest in each other), the same nodes as walking the tree."""
    from mxlint.walker import _descend

    stops = [
        (),
        NESTED_SCOPES,
        (cst.BaseCompoundStatement,),
        (cst.Call, cst.Attribute),
        (cst.IndentedBlock, cst.Lambda),
    ]
    sources = [_NESTED_CODE]
    sources += [
        p.read_text(encoding="utf-8")
        for p in sorted(fixtures_dir.rglob("*.py"))
        if p.stat().st_size > 3000
    ][:12]
    checked = 0
    for source in sources:
        index = TreeIndex(cst.parse_module(source))
        for i, node in enumerate(index.order):
            for stop in stops:
                expected = list(_descend(node, stop))
                assert [id(n) for n in index.subtree(i, stop)] == [id(n) for n in expected]
                checked += 1
    assert checked > 10_000
