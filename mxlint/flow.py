"""Calls of one file in execution order, following calls into the file's own functions.

Program-level rules (seeding, AMP initialisation) care about what runs *before* what in a
script: `main()` called from the `__main__` block runs `set_seed()`, then `build_loader()`. This
tracer walks the module-level statements in order, enters the bodies of same-file functions,
classes (`__init__`) and `self.method()` calls at the point they are called, and yields every
call it meets with the chain of calls that led to it. Branches are all taken (a seed under
`if args.seed:` counts), loop bodies once, definitions are skipped until called.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import cast

import libcst as cst

from mxlint import walker
from mxlint.names import dotted_name
from mxlint.semantic.dataflow import Dataflow
from mxlint.walker import children

_NESTED = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_NESTED_TYPES = frozenset(_NESTED)
#: Statements with a body: their control flow is the engine's.
_COMPOUND = frozenset({cst.If, cst.For, cst.While, cst.With, cst.Try, cst.TryStar, cst.Match})
#: Small statements after which the rest of their block does not run.
_LEAVING = frozenset({cst.Return, cst.Raise, cst.Break, cst.Continue})


@dataclass(frozen=True)
class Frame:
    """One entered function: the call that entered it (None for a root) and its statement."""

    call: cst.Call | None
    stmt: cst.CSTNode | None
    function: cst.FunctionDef
    cls: str | None
    bound: bool  # entered through `self.m()` / `Class()`: the first parameter is implicit


@dataclass(frozen=True)
class Site:
    """A call met in execution order, inside the statement `stmt`, reached through `frames`."""

    call: cst.Call
    stmt: cst.CSTNode
    frames: tuple[Frame, ...]
    reached: bool


def is_main_guard(stmt: cst.CSTNode) -> bool:
    """`if __name__ == "__main__":` (either operand order, either quotes)."""
    if type(stmt) is not cst.If or type(stmt.test) is not cst.Comparison:
        return False
    test = stmt.test
    if len(test.comparisons) != 1 or type(test.comparisons[0].operator) is not cst.Equal:
        return False
    sides = (test.left, test.comparisons[0].comparator)
    names = [s for s in sides if type(s) is cst.Name and s.value == "__name__"]
    strings = [s for s in sides if type(s) is cst.SimpleString and s.evaluated_value == "__main__"]
    return bool(names) and bool(strings)


def has_main_guard(module: cst.Module) -> bool:
    return any(is_main_guard(stmt) for stmt in module.body)


#: Calls that run a module's tests: a `__main__` block made of them is a test file's, not a
#: program's.
_TEST_RUNNERS = frozenset(
    {"nose.runmodule", "nose.main", "unittest.main", "pytest.main", "absltest.main"}
)


def main_runs_tests(module: cst.Module) -> bool:
    """Every `__main__` block of the module only imports and runs a test runner
    (`nose.runmodule()`, `unittest.main()`, `pytest.main([__file__])`)."""
    guards = [stmt for stmt in module.body if is_main_guard(stmt)]
    if not guards:
        return False
    for guard in guards:
        assert isinstance(guard, cst.If)
        runs = False
        for stmt in guard.body.body:
            small = stmt.body if type(stmt) is cst.SimpleStatementLine else None
            if small is None:
                return False
            for part in small:
                if type(part) in (cst.Import, cst.ImportFrom):
                    continue
                if (
                    type(part) is cst.Expr
                    and type(part.value) is cst.Call
                    and dotted_name(part.value.func) in _TEST_RUNNERS
                ):
                    runs = True
                    continue
                return False
        if not runs:
            return False
    return True


def main_runs_own_tests(module: cst.Module) -> bool:
    """The module's `__main__` blocks only import and call its own test functions
    (`if __name__ == "__main__": test_load()`)."""
    tests = {
        stmt.name.value
        for stmt in module.body
        if type(stmt) is cst.FunctionDef and stmt.name.value.startswith("test")
    }
    guards = [stmt for stmt in module.body if is_main_guard(stmt)]
    if not tests or not guards:
        return False
    for guard in guards:
        assert isinstance(guard, cst.If)
        for stmt in guard.body.body:
            if type(stmt) is not cst.SimpleStatementLine:
                return False
            for part in stmt.body:
                if type(part) in (cst.Import, cst.ImportFrom):
                    continue
                call = part.value if type(part) is cst.Expr else None
                if not (
                    type(call) is cst.Call
                    and type(call.func) is cst.Name
                    and call.func.value in tests
                ):
                    return False
    return True


def post_order_calls(node: cst.CSTNode) -> list[cst.Call]:
    """Calls under `node` in evaluation order (arguments before the call), without entering
    nested function, class or lambda definitions."""
    located = walker.locate(node)
    if located is not None:
        index, i = located
        key = ("post_order_calls", i)
        found = index.memo.get(key)
        if found is None:
            found = index.memo[key] = _indexed_post_order_calls(index, i)
        return found  # type: ignore[return-value]
    out: list[cst.Call] = []
    stack: list[tuple[cst.CSTNode, bool]] = [(node, False)]
    while stack:
        current, done = stack.pop()
        if done:
            out.append(current)  # type: ignore[arg-type]
            continue
        if current is not node and isinstance(current, _NESTED):
            continue
        if type(current) is cst.Call:
            stack.append((current, True))
        kids = list(children(current))
        kids.reverse()
        stack.extend((k, False) for k in kids)
    return out


def _indexed_post_order_calls(index: walker.TreeIndex, i: int) -> list[cst.Call]:
    # Post-order is pre-order sorted by where each subtree ends, the inner call first.
    order, end = index.order, index.end
    calls: list[tuple[int, int]] = []
    root = i
    j, last = i, end[i]
    nested = _NESTED_TYPES
    call_type = cst.Call
    while j < last:
        typ = type(order[j])
        if typ in nested and j != root:
            j = end[j]
            continue
        if typ is call_type:
            calls.append((end[j], -j))
        j += 1
    calls.sort()
    return [order[-k] for _, k in calls]  # type: ignore[misc]


def function_params(fn: cst.FunctionDef) -> list[cst.Param]:
    p = fn.params
    return [*p.posonly_params, *p.params, *p.kwonly_params]


def bound_argument(
    call: cst.Call, fn: cst.FunctionDef, name: str, bound: bool
) -> cst.BaseExpression | None:
    """The expression passed for parameter `name` of `fn` at `call` (or its default)."""
    positional = [*fn.params.posonly_params, *fn.params.params]
    if bound and positional:
        positional = positional[1:]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    index = next((i for i, p in enumerate(positional) if p.name.value == name), None)
    if index is not None:
        plain = [a for a in call.args if a.keyword is None and not a.star]
        if index < len(plain):
            return plain[index].value
    for param in function_params(fn):
        if param.name.value == name:
            return param.default
    return None


class Flow(Dataflow[None]):
    """Execution-order tracer for one module (see the module docstring), on the shared dataflow
    engine: its control flow (branches, loops, leaving statements) is the engine's; what it
    follows is not values but calls."""

    def __init__(self, module: cst.Module, limit: int = 20000) -> None:
        super().__init__()
        self.module = module
        self.functions: dict[str, cst.FunctionDef] = {}
        self.classes: dict[str, dict[str, cst.FunctionDef]] = {}
        for stmt in module.body:
            if type(stmt) is cst.FunctionDef:
                self.functions[stmt.name.value] = stmt
            elif type(stmt) is cst.ClassDef and type(stmt.body) is cst.IndentedBlock:
                self.classes[stmt.name.value] = {
                    s.name.value: s for s in stmt.body.body if type(s) is cst.FunctionDef
                }
        self.reached: set[cst.FunctionDef] = set()
        self._budget = limit
        self._limit = limit
        self._reached_flag = True
        self._sites: list[Site] = []
        self._frames: tuple[Frame, ...] = ()
        #: The statement whose expressions are being read.
        self._current: cst.CSTNode = module

    # -- entry points ----------------------------------------------------------------------

    def module_sites(self) -> Iterator[Site]:
        """Module-level statements in order; the `__main__` block in place."""
        self._reached_flag = True
        return iter(self._shared(f"module-sites:{self._limit}", 0, lambda: self.module.body, ()))

    def function_sites(self, fn: cst.FunctionDef, cls: str | None = None) -> Iterator[Site]:
        """The body of one function as a root (e.g. a helper other files call)."""
        self._reached_flag = True
        self.reached.add(fn)
        frames = (Frame(None, None, fn, cls, cls is not None),)
        key = f"function-sites:{self._limit}:{cls or ''}"
        return iter(self._shared(key, id(fn), lambda: fn.body, frames))

    def _shared(
        self,
        key: str,
        at: int,
        body: Callable[[], cst.BaseSuite | Sequence[cst.BaseStatement]],
        frames: tuple[Frame, ...],
    ) -> list[Site]:
        """The trace of `body` from a fresh tracer, read once per file (the rules of several
        checkers trace the same scripts and functions) with the functions it entered and the
        budget it left, which this tracer takes over as if it had traced it."""
        index = walker.current_index()
        if index is None or index.module is not self.module or not self._fresh_but(frames):
            return self._trace(body(), frames)
        memo = index.memo
        found = memo.get((key, at))
        if found is None:
            sites = self._trace(body(), frames)
            memo[(key, at)] = (tuple(sites), frozenset(self.reached), self._budget)
            return sites
        kept = cast("tuple[tuple[Site, ...], frozenset[cst.FunctionDef], int]", found)
        self.reached.update(kept[1])
        self._budget = kept[2]
        return list(kept[0])

    def _fresh_but(self, frames: tuple[Frame, ...]) -> bool:
        """Fresh, but for the root function of `frames` marked reached already."""
        root = {frames[0].function} if frames else set()
        return self.reached <= root and self._budget == self._limit

    def construction_sites(self, cls: str) -> Iterator[Site]:
        """What constructing class `cls` runs (a root: another file builds the object): its
        `__init__`, then the methods the framework calls on it later, not `reached`."""
        self._reached_flag = True
        methods = self.classes.get(cls, {})
        out: list[Site] = []
        init = methods.get("__init__")
        if init is not None:
            self.reached.add(init)
            out.extend(self._trace(init.body, (Frame(None, None, init, cls, True),)))
        self._reached_flag = False
        for name in _USED_LATER:
            fn = methods.get(name)
            if fn is None:
                continue
            self.reached.add(fn)
            out.extend(self._trace(fn.body, (Frame(None, None, fn, cls, True),)))
        self._reached_flag = True
        return iter(out)

    def unreached_sites(self) -> Iterator[Site]:
        """Functions and methods the traced flow never entered (position in time unknown)."""
        self._reached_flag = False
        roots: list[tuple[cst.FunctionDef, str | None]] = [
            (f, None) for f in self.functions.values()
        ]
        for cls_name, methods in self.classes.items():
            roots.extend((m, cls_name) for m in methods.values())
        out: list[Site] = []
        for fn, cls in roots:
            if fn in self.reached:
                continue
            self.reached.add(fn)
            out.extend(self._trace(fn.body, (Frame(None, None, fn, cls, cls is not None),)))
        self._reached_flag = True
        return iter(out)

    def _trace(
        self, body: cst.BaseSuite | Sequence[cst.BaseStatement], frames: tuple[Frame, ...]
    ) -> list[Site]:
        saved = self._sites
        self._sites = []
        try:
            self._enter(body, frames)
            return self._sites
        finally:
            self._sites = saved

    def _enter(
        self, body: cst.BaseSuite | Sequence[cst.BaseStatement], frames: tuple[Frame, ...]
    ) -> None:
        """Read a body (a root, or a function entered by a call) with its own frames."""
        saved = self._frames, self._current, self.env, self._exits
        self._frames, self.env, self._exits = frames, {}, []
        try:
            if isinstance(body, cst.BaseSuite):
                self.block(body)
            else:
                self.run(body)
        finally:
            self._frames, self._current, self.env, self._exits = saved

    # -- the domain: no values, calls in order -------------------------------------------------

    def top(self) -> None:
        return None

    def join(self, a: None, b: None) -> None:
        return None

    def expr(self, node: cst.BaseExpression) -> None:
        self._calls(node, self._current)

    def assign(
        self,
        target: cst.BaseExpression,
        value_node: cst.BaseExpression | None,
        value: None,
        stmt: cst.CSTNode,
    ) -> None:
        """Nothing is bound: a loop body is read once."""

    def stmt(self, node: cst.CSTNode) -> bool:
        if self._budget <= 0:
            return True
        kind = type(node)
        if kind is cst.SimpleStatementLine:
            return self.run(node.body)  # type: ignore[attr-defined]
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            return False  # definitions are read when called
        if kind in _COMPOUND:
            self._current = node
            return super().stmt(node)
        self._calls(node, node)
        return kind in _LEAVING

    def if_test(self, node: cst.If) -> None:
        self._current = node
        self._calls(node.test, node)

    # -- calls -----------------------------------------------------------------------------

    def _calls(self, node: cst.CSTNode, stmt: cst.CSTNode) -> None:
        frames = self._frames
        for call in post_order_calls(node):
            self._budget -= 1
            if self._budget <= 0:
                return
            self._sites.append(Site(call, stmt, frames, self._reached_flag))
            active = {f.function for f in frames}
            targets = [self._target(call, frames)]
            # Functions passed as callbacks (`Process(target=worker)`, `fire.Fire(main)`) run
            # under the call that receives them.
            for arg in call.args:
                if type(arg.value) is cst.Name and arg.value.value in self.functions:
                    targets.append((self.functions[arg.value.value], None, False))
            for target in targets:
                if target is None or target[0] in active:
                    continue
                fn, cls, bound = target
                self.reached.add(fn)
                self._enter(fn.body, (*frames, Frame(call, stmt, fn, cls, bound)))
            self._used_later(call, stmt, frames, active)

    def _used_later(
        self,
        call: cst.Call,
        stmt: cst.CSTNode,
        frames: tuple[Frame, ...],
        active: set[cst.FunctionDef],
    ) -> None:
        """A class of this file constructed here: the methods the framework calls on it later
        (a dataset's `__getitem__`, a transform's `__call__`, a block's `forward`) run on this
        path, at a time the trace does not know (their sites are not `reached`)."""
        func = call.func
        methods = self.classes.get(func.value) if type(func) is cst.Name else None
        if not methods:
            return
        saved = self._reached_flag
        self._reached_flag = False
        for name in _USED_LATER:
            fn = methods.get(name)
            if fn is None or fn in active:
                continue
            self.reached.add(fn)
            frame = Frame(call, stmt, fn, func.value, True)  # type: ignore[attr-defined]
            self._enter(fn.body, (*frames, frame))
        self._reached_flag = saved

    def _target(
        self, call: cst.Call, frames: tuple[Frame, ...]
    ) -> tuple[cst.FunctionDef, str | None, bool] | None:
        func = call.func
        if type(func) is cst.Name:
            if func.value in self.functions:
                return self.functions[func.value], None, False
            methods = self.classes.get(func.value)
            if methods is not None and "__init__" in methods:
                return methods["__init__"], func.value, True
            return None
        if type(func) is cst.Attribute and type(func.value) is cst.Name:
            cls = frames[-1].cls if frames else None
            if func.value.value == "self" and cls is not None:
                method = self.classes.get(cls, {}).get(func.attr.value)
                if method is not None:
                    return method, cls, True
        return None


#: Methods a framework calls on an object after it is built (data, transforms, blocks).
_USED_LATER = ("__getitem__", "__call__", "__iter__", "__next__", "forward", "hybrid_forward")


def return_names(fn: cst.FunctionDef) -> frozenset[str]:
    """Names that appear in the `return` values of `fn` (not of nested definitions)."""
    names: set[str] = set()
    for node in _iter(fn.body):
        if type(node) is cst.Return and node.value is not None:
            names.update(n.value for n in _iter(node.value) if type(n) is cst.Name)
    return frozenset(names)


def _iter(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current is not node and isinstance(current, _NESTED):
            continue
        stack.extend(children(current))


def single_assignment(stmt: cst.CSTNode) -> cst.Assign | None:
    """`target = value` with one target: the statement itself, or the one statement of its
    line."""
    if type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1:
        stmt = stmt.body[0]
    if type(stmt) is cst.Assign and len(stmt.targets) == 1:
        return stmt
    return None


def assigned_names(stmt: cst.CSTNode) -> frozenset[str]:
    """Plain names bound by an assignment statement (`a, b = ...`, `a: T = ...`)."""
    targets: list[cst.BaseExpression] = []
    if type(stmt) is cst.Assign:
        targets = [t.target for t in stmt.targets]
    elif type(stmt) is cst.AnnAssign or type(stmt) is cst.AugAssign:
        targets = [stmt.target]
    names: set[str] = set()
    for target in targets:
        if type(target) is cst.Name:
            names.add(target.value)
        elif type(target) is cst.Tuple or type(target) is cst.List:
            for element in target.elements:
                if type(element.value) is cst.Name:
                    names.add(element.value.value)
    return frozenset(names)


def flows_to_return(
    stmt: cst.CSTNode, fn: cst.FunctionDef, cache: dict[cst.FunctionDef, frozenset[str]]
) -> bool:
    """Whether the value computed by `stmt` is (likely) what `fn` returns."""
    if type(stmt) is cst.Return:
        return True
    names = cache.get(fn)
    if names is None:
        names = cache[fn] = return_names(fn)
    return bool(assigned_names(stmt) & names)
