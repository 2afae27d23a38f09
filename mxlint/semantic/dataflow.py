"""One forward dataflow engine over libcst statements, generic in its abstract value.

Every analysis that follows values through a body (is this a tensor? on which context? is it in
the recorded graph?) needs the same control flow: branches joined, loops run to a fixpoint,
`return`/`raise`/`break`/`continue` leaving a path, handlers starting from what the `try` body
may have bound, comprehensions in their own scope. Here it is written once; an analysis
subclasses `Dataflow`, says what its values are (`join`, `top`) and what expressions evaluate
to (`expr`), and overrides the hooks where its domain cares (a `with` that changes the default
context, a test that narrows an optional value, an assignment through an attribute).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

import libcst as cst

from mxlint.names import target_names
from mxlint.walker import iter_nodes

V = TypeVar("V")
Env = dict[str, V]

COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)

#: A key missing from an environment (None is a value).
_ABSENT: Any = object()
_SUITES = (cst.IndentedBlock, cst.SimpleStatementSuite)


class Dataflow(Generic[V]):
    """Interpret statements in order over an environment of abstract values.

    Subclasses give `top` (the value that says nothing), `join` and `expr`; the rest has a
    default that follows Python's semantics. `max_passes` bounds the passes over a loop body
    before the values still changing are widened to `top`.
    """

    max_passes = 3

    def __init__(self, env: Mapping[str, V] | None = None) -> None:
        self.env: Env[V] = dict(env or {})
        #: Per enclosing loop: environments at its `break`s and at its `continue`s.
        self._exits: list[tuple[list[Env[V]], list[Env[V]]]] = []
        self._live: dict[int, frozenset[str]] = {}

    # -- the domain ----------------------------------------------------------------------------

    def top(self) -> V:
        """The value that says nothing (a name widened in a loop, a target of unknown shape)."""
        raise NotImplementedError

    def join(self, a: V, b: V) -> V:
        """The value after two paths bound a name to `a` and `b`."""
        raise NotImplementedError

    def expr(self, node: cst.BaseExpression) -> V:
        """The value of `node`, evaluating (and reporting on) what it contains."""
        raise NotImplementedError

    def none(self) -> V:
        """The value of a bare `return`."""
        return self.top()

    def join_envs(self, base: Env[V], envs: Sequence[Env[V]]) -> Env[V]:
        """Environments at the ends of alternative paths, joined. A name bound on some paths
        only keeps what it was before them (`base`) as one of its possible values; a name new
        on some paths only keeps the value they gave it."""
        if len(envs) == 1:
            return dict(envs[0])
        if len(envs) == 2:  # the common case (if/else, a loop's entry and back edge), unrolled
            return self._join_two(base, envs[0], envs[1])
        out: Env[V] = {}
        keys: dict[str, None] = {}
        for env in envs:
            keys.update(dict.fromkeys(env))
        for key in keys:
            present = [env[key] for env in envs if key in env]
            value = present[0]
            for other in present[1:]:
                if other is not value:
                    value = self.join(value, other)
            if len(present) < len(envs) and key in base and base[key] is not value:
                value = self.join(value, base[key])
            out[key] = value
        return out

    def _join_two(self, base: Env[V], a: Env[V], b: Env[V]) -> Env[V]:
        out: Env[V] = {}
        join = self.join
        for key, value in a.items():
            other = b.get(key, _ABSENT)
            if other is _ABSENT:
                if key in base and base[key] is not value:
                    value = join(value, base[key])
            elif other is not value:
                value = join(value, other)
            out[key] = value
        for key, value in b.items():
            if key not in a:
                if key in base and base[key] is not value:
                    value = join(value, base[key])
                out[key] = value
        return out

    # -- hooks ---------------------------------------------------------------------------------

    def test(self, node: cst.BaseExpression) -> V:
        """A value used as a truth value (`if`, `while`, `assert`)."""
        return self.expr(node)

    def narrow(self, test: cst.BaseExpression) -> tuple[Env[V], Env[V]]:
        """Environments in which `test` is true and false."""
        return dict(self.env), dict(self.env)

    @contextmanager
    def branch(self, node: cst.CSTNode, which: str) -> Iterator[None]:
        """Around the `body` or `orelse` of an `if` (or a conditional expression)."""
        yield

    def if_test(self, node: cst.If) -> None:
        self.test(node.test)

    def after_if(self, node: cst.If, body_leaves: bool, else_leaves: bool) -> None:
        """After an `if` whose branches leave (or not)."""

    def assign(
        self,
        target: cst.BaseExpression,
        value_node: cst.BaseExpression | None,
        value: V,
        stmt: cst.CSTNode,
    ) -> None:
        """Bind `target` to `value` (`value_node` is its expression when there is one)."""
        if type(target) is cst.Name:
            self.env[target.value] = value
        elif type(target) is cst.Tuple or type(target) is cst.List:
            self.unpack(target, value_node, value, stmt)
        elif type(target) is cst.StarredElement:
            self.assign(target.value, None, self.top(), stmt)
        elif type(target) is cst.Subscript:
            self.store_subscript(target, value, stmt)
        elif type(target) is cst.Attribute:
            self.store_attribute(target, value, stmt)

    def unpack(
        self,
        target: cst.Tuple | cst.List,
        value_node: cst.BaseExpression | None,
        value: V,
        stmt: cst.CSTNode,
    ) -> None:
        """`a, b = value`: element-wise for a literal of the same length, else `element`."""
        targets = [e.value for e in target.elements]
        if (
            (type(value_node) is cst.Tuple or type(value_node) is cst.List)
            and len(value_node.elements) == len(targets)
            and not any(type(e) is cst.StarredElement for e in value_node.elements)
            and not any(type(e) is cst.StarredElement for e in target.elements)
        ):
            for sub, el in zip(targets, value_node.elements):
                self.assign(sub, el.value, self.expr(el.value), stmt)
            return
        item = self.element(value)
        for sub in targets:
            self.assign(sub, None, item, stmt)

    def element(self, value: V) -> V:
        """The value of one element of `value` (unpacking, iteration)."""
        return self.top()

    def loop_item(self, node: cst.For | cst.CompFor, value: V) -> V:
        """What the target of `for target in iterable` is bound to, `value` being the
        iterable's value."""
        return self.element(value)

    def iterate(self, node: cst.For | cst.CompFor, value: V) -> None:
        """A loop or comprehension over `node.iter`, whose value is `value`."""

    def pass_ends(self, node: cst.For | cst.While, ends: Sequence[Env[V]]) -> None:
        """The environments a pass over the body of loop `node` ended with (at its end and at
        its `continue`s): what an iteration leaves behind, whatever the loop's exit joins it
        with (the loop may also run zero times)."""

    def store_subscript(self, target: cst.Subscript, value: V, stmt: cst.CSTNode) -> None:
        self.expr(target.value)
        for el in target.slice:
            self.slice(el)

    def store_attribute(self, target: cst.Attribute, value: V, stmt: cst.CSTNode) -> None:
        self.expr(target.value)

    def augassign(self, node: cst.AugAssign) -> None:
        value = self.expr(node.value)
        current = self.expr(node.target)
        self.assign(node.target, None, self.join(current, value), node)

    def returned(self, node: cst.Return, value: V) -> None:
        """A `return` and the value it returns."""

    def define(self, node: cst.FunctionDef | cst.ClassDef) -> None:
        """A nested `def`/`class` binds its name (to nothing this analysis follows)."""
        self.env.pop(node.name.value, None)

    def delete(self, node: cst.Del) -> None:
        for name in target_names(node.target):
            self.env.pop(name, None)

    def with_items(self, node: cst.With) -> object:
        """Enter the items of a `with`; what is returned is passed to `leave_with`."""
        for item in node.items:
            value = self.expr(item.item)
            if item.asname is not None:
                self.assign(item.asname.name, None, self.entered(item, value), node)
        return None

    def entered(self, item: cst.WithItem, value: V) -> V:
        """What `with item as name` binds to `name`."""
        return self.top()

    def leave_with(self, node: cst.With, token: object) -> None:
        """After the body of a `with`."""

    def slice(self, el: cst.SubscriptElement) -> None:
        sl = el.slice
        if type(sl) is cst.Index:
            self.expr(sl.value)
        elif type(sl) is cst.Slice:
            for part in (sl.lower, sl.upper, sl.step):
                if part is not None:
                    self.expr(part)

    # -- statements ----------------------------------------------------------------------------

    def run(self, body: Sequence[cst.BaseStatement] | Sequence[cst.BaseSmallStatement]) -> bool:
        """Interpret statements; True when the path always leaves (return, raise, break,
        continue). What follows a leaving statement is not reached."""
        return any(self.stmt(stmt) for stmt in body)

    def block(self, suite: cst.BaseSuite | None) -> bool:
        if suite is not None and type(suite) in _SUITES:
            return self.run(suite.body)  # type: ignore[attr-defined]
        return False

    def stmt(self, node: cst.CSTNode) -> bool:
        kind = type(node)
        if kind is cst.SimpleStatementLine:
            return self.run(node.body)  # type: ignore[attr-defined]
        if kind is cst.Expr:
            self.expr(node.value)  # type: ignore[attr-defined]
        elif kind is cst.Assign:
            assert isinstance(node, cst.Assign)
            value = self.expr(node.value)
            for target in node.targets:
                self.assign(target.target, node.value, value, node)
        elif kind is cst.AnnAssign:
            assert isinstance(node, cst.AnnAssign)
            if node.value is not None:
                self.assign(node.target, node.value, self.expr(node.value), node)
        elif kind is cst.AugAssign:
            assert isinstance(node, cst.AugAssign)
            self.augassign(node)
        elif kind is cst.Return:
            assert isinstance(node, cst.Return)
            value = self.expr(node.value) if node.value is not None else self.none()
            self.returned(node, value)
            return True
        elif kind is cst.Raise:
            assert isinstance(node, cst.Raise)
            if node.exc is not None:
                self.expr(node.exc)
            return True
        elif kind is cst.Break:
            if self._exits:
                self._exits[-1][0].append(dict(self.env))
            return True
        elif kind is cst.Continue:
            if self._exits:
                self._exits[-1][1].append(dict(self.env))
            return True
        elif kind is cst.If:
            assert isinstance(node, cst.If)
            return self.if_stmt(node)
        elif kind is cst.For:
            assert isinstance(node, cst.For)
            return self.for_stmt(node)
        elif kind is cst.While:
            assert isinstance(node, cst.While)
            return self.while_stmt(node)
        elif kind is cst.With:
            assert isinstance(node, cst.With)
            token = self.with_items(node)
            try:
                return self.block(node.body)
            finally:
                self.leave_with(node, token)
        elif kind is cst.Try or kind is cst.TryStar:
            assert isinstance(node, (cst.Try, cst.TryStar))
            return self.try_stmt(node)
        elif kind is cst.Assert:
            assert isinstance(node, cst.Assert)
            self.test(node.test)
            if node.msg is not None:
                self.expr(node.msg)
        elif kind is cst.Del:
            assert isinstance(node, cst.Del)
            self.delete(node)
        elif kind is cst.FunctionDef or kind is cst.ClassDef:
            assert isinstance(node, (cst.FunctionDef, cst.ClassDef))
            self.define(node)
        elif kind is cst.Match:
            assert isinstance(node, cst.Match)
            return self.match_stmt(node)
        return False

    def if_stmt(self, node: cst.If) -> bool:
        self.if_test(node)
        body_env, else_env = self.narrow(node.test)
        saved = self.env
        try:
            self.env = body_env
            with self.branch(node, "body"):
                body_leaves = self.block(node.body)
            body = self.env
            self.env = else_env
            with self.branch(node, "orelse"):
                if type(node.orelse) is cst.If:
                    else_leaves = self.if_stmt(node.orelse)
                elif type(node.orelse) is cst.Else:
                    else_leaves = self.block(node.orelse.body)
                else:
                    else_leaves = False
            orelse = self.env
        finally:
            self.env = saved
        self.after_if(node, body_leaves, else_leaves)
        if body_leaves and not else_leaves:
            self.env = orelse
        elif else_leaves and not body_leaves:
            self.env = body
        else:
            self.env = self.join_envs(saved, [body, orelse])
        return body_leaves and else_leaves

    def for_stmt(self, node: cst.For) -> bool:
        value = self.expr(node.iter)
        self.iterate(node, value)
        item = self.loop_item(node, value)

        def body() -> bool:
            self.assign(node.target, None, item, node)
            return self.block(node.body)

        return self._loop(body, node.orelse, self._live_in(node), node)

    def while_stmt(self, node: cst.While) -> bool:
        def body() -> bool:
            self.test(node.test)
            return self.block(node.body)

        return self._loop(body, node.orelse, self._live_in(node), node)

    def _live_in(self, node: cst.For | cst.While) -> frozenset[str]:
        """Names a pass over the loop may read before it binds them: only their values at the
        head can make a further pass differ (a loop's target is bound first)."""
        live = self._live.get(id(node))
        if live is None:
            live = self._live[id(node)] = _live_in(node)
        return live

    def _loop(
        self,
        body: Callable[[], bool],
        orelse: cst.Else | None,
        live: frozenset[str],
        node: cst.For | cst.While,
    ) -> bool:
        """Run a loop body until the environment at its head stops changing (in the names a
        pass reads before binding them: `live`); after `max_passes` passes, the names still
        changing are widened to `top` for a last pass. The loop's exit joins the head (no more
        iterations, or none at all) with its breaks."""
        head = dict(self.env)
        breaks: list[Env[V]] = []
        passes = 0
        widened = False
        while True:
            passes += 1
            self.env = dict(head)
            self._exits.append(([], []))
            try:
                leaves = body()
            finally:
                exits, continues = self._exits.pop()
            breaks.extend(exits)
            ends = ([] if leaves else [self.env]) + continues
            self.pass_ends(node, ends)
            new_head = self.join_envs(head, [head, *ends]) if ends else head
            if widened or new_head == head:
                break
            if _same_in(head, new_head, live):
                head = new_head  # another pass would read the same values: it changes nothing
                break
            if passes >= self.max_passes:
                top = self.top()
                head = {k: (v if k in head and head[k] == v else top) for k, v in new_head.items()}
                widened = True
            else:
                head = new_head
        self.env = head
        if orelse is not None and self.block(orelse.body):
            if not breaks:
                return True
            self.env = self.join_envs(head, breaks)
            return False
        if breaks:
            self.env = self.join_envs(head, [self.env, *breaks])
        return False

    def try_stmt(self, node: cst.Try | cst.TryStar) -> bool:
        before = dict(self.env)
        body_leaves = self.block(node.body)
        after_body = dict(self.env)
        if node.orelse is not None and not body_leaves:
            body_leaves = self.block(node.orelse.body)
        ends: list[Env[V]] = [] if body_leaves else [self.env]
        for handler in node.handlers:
            # An exception may come from any statement of the body: what it bound may or may
            # not be bound when the handler starts.
            self.env = self.join_envs(before, [before, after_body])
            if handler.name is not None:
                self.assign(handler.name.name, None, self.top(), handler)
            if not self.block(handler.body):
                ends.append(self.env)
        leaves = not ends
        self.env = self.join_envs(before, ends) if ends else self.join_envs(before, [after_body])
        if node.finalbody is not None:
            leaves = self.block(node.finalbody.body) or leaves
        return leaves

    def match_stmt(self, node: cst.Match) -> bool:
        self.expr(node.subject)
        saved = self.env
        ends: list[Env[V]] = []
        for case in node.cases:
            self.env = dict(saved)
            if case.guard is not None:
                self.test(case.guard)
            if not self.block(case.body):
                ends.append(self.env)
        ends.append(dict(saved))  # no case matched
        self.env = self.join_envs(saved, ends)
        return False

    # -- expressions with their own control flow -------------------------------------------------

    def comprehension(
        self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp
    ) -> tuple[V, V | None]:
        """Evaluate a comprehension in its own scope; the values of its element (or of its
        key and value for a dict)."""
        saved = self.env
        self.env = dict(saved)
        try:
            clause: cst.CompFor | None = node.for_in
            while clause is not None:
                value = self.expr(clause.iter)
                self.iterate(clause, value)
                self.assign(clause.target, None, self.loop_item(clause, value), clause)
                for cond in clause.ifs:
                    self.test(cond.test)
                clause = clause.inner_for_in
            if isinstance(node, cst.DictComp):
                return self.expr(node.key), self.expr(node.value)
            return self.expr(node.elt), None
        finally:
            self.env = saved


def _same_in(a: Env[V], b: Env[V], live: frozenset[str]) -> bool:
    """`a` and `b` agree on every name (or `name.attr` key) rooted in `live`."""
    for key in a.keys() | b.keys():
        if key.split(".", 1)[0] in live and (key not in a or key not in b or a[key] != b[key]):
            return False
    return True


def _live_in(loop: cst.For | cst.While) -> frozenset[str]:
    """Names read in `loop`'s body (and a `while` test) before a statement of the body binds
    them, over-approximated: in a compound statement every name counts as read and none as
    bound; only plain assignments at the top of the body bind."""
    bound: set[str] = set()
    live: set[str] = set()
    if isinstance(loop, cst.For):
        bound.update(target_names(loop.target))
    else:
        live.update(n.value for n in iter_nodes(loop.test) if type(n) is cst.Name)
    body = (
        loop.body.body if type(loop.body) in (cst.IndentedBlock, cst.SimpleStatementSuite) else ()
    )
    for stmt in body:  # type: ignore[attr-defined]
        smalls = stmt.body if type(stmt) is cst.SimpleStatementLine else [stmt]
        for small in smalls:
            targets: list[cst.BaseExpression] = []
            if type(small) is cst.Assign:
                targets = [t.target for t in small.targets]
            elif type(small) is cst.AnnAssign and small.value is not None:
                targets = [small.target]
            read = [n.value for n in iter_nodes(small) if type(n) is cst.Name]
            binds = [name for t in targets for name in target_names(t)]
            # A name read only as a target it binds (`x = ...`) is not read.
            reads = set(read)
            for name in binds:
                if read.count(name) == binds.count(name):
                    reads.discard(name)
            live.update(reads - bound)
            bound.update(binds)
    return frozenset(live)
