"""One traversal of a libcst tree that feeds every checker, and an index every rule reuses.

libcst's own `visit` rebuilds every node on the way back up (it is a transformer underneath) and
costs about as much as the parse. Here each file's tree is read once, into a pre-order index
(the dataclass fields that can hold statements and expressions; whitespace and punctuation
skipped). The dispatch then calls each checker's `visit_<Node>`/`leave_<Node>` methods at the
nodes that have them, and every later walk of a subtree by a rule is a slice of the index.
"""

from __future__ import annotations

import dataclasses
from array import array
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterable, Iterator
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar

import libcst as cst

if TYPE_CHECKING:
    from typing import TypeGuard  # Python 3.10; an annotation only

N = TypeVar("N", bound=cst.CSTNode)

#: Nodes that open a scope of their own: a walk of one function's statements stops at them.
NESTED_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
#: Loop statements.
LOOPS = (cst.For, cst.While)
#: The type set of `typed_nodes(node, CALLS)`: the calls of a subtree.
CALLS = frozenset({cst.Call})

_SKIP_FIELDS = frozenset(
    {
        "lpar",
        "rpar",
        "comma",
        "header",
        "footer",
        "leading_lines",
        "lines_after_decorators",
        "semicolon",
        "colon",
        "equal",
        "dot",
        "star",
        "whitespace",
        "newline",
        "trailing_whitespace",
        "default_indicator",
        "asynchronous",
        "lbracket",
        "rbracket",
        "lbrace",
        "rbrace",
        "indent",
        "arrow",
        "walrus",
        "star_tok",
        "first_line",
        "empty_lines",
    }
)
_FIELDS: dict[type, tuple[str, ...]] = {}

#: Nodes that open a region checkers ask about (`ctx.stack`).
STRUCTURAL: tuple[type[cst.CSTNode], ...] = (
    cst.ClassDef,
    cst.FunctionDef,
    cst.For,
    cst.While,
    cst.With,
    cst.If,
    cst.Try,
    cst.Lambda,
    cst.TryStar,
)
_STRUCTURAL = frozenset(STRUCTURAL)


def _fields(typ: type) -> tuple[str, ...]:
    names = _FIELDS.get(typ)
    if names is None:
        # A field declared `str` (a name's or a literal's text) never holds a node: leaves
        # then have no fields to read at all.
        names = tuple(
            f.name
            for f in dataclasses.fields(typ)
            if f.name not in _SKIP_FIELDS
            and not f.name.startswith("whitespace")
            and f.type is not str
        )
        _FIELDS[typ] = names
    return names


#: type -> is it a CSTNode. `isinstance` against libcst's ABCs goes through
#: `ABCMeta.__instancecheck__`, which dominated tree walks; a type is asked once, and by its MRO:
#: the first `issubclass` of a non-node type against the ABC visits every node class.
_IS_NODE: dict[type, bool] = {}
_SEQUENCES = (tuple, list)


def _is_node_type(typ: type) -> bool:
    known = _IS_NODE.get(typ)
    if known is None:
        known = _IS_NODE[typ] = cst.CSTNode in typ.__mro__
    return known


def is_node(value: object) -> TypeGuard[cst.CSTNode]:
    """`isinstance(value, cst.CSTNode)`, without ABCMeta's first-answer cost."""
    typ = type(value)
    known = _IS_NODE.get(typ)
    return _is_node_type(typ) if known is None else known


#: type -> a function giving the values of its child fields, last field first (one
#: `attrgetter` call instead of a `getattr` per field: the index reads every node's fields).
_GETTERS: dict[type, Callable[[cst.CSTNode], tuple[Any, ...]]] = {}


def _getter(typ: type) -> Callable[[cst.CSTNode], tuple[Any, ...]]:
    names = tuple(reversed(_fields(typ)))
    get: Callable[[cst.CSTNode], tuple[Any, ...]]
    if not names:
        get = _no_fields
    elif len(names) == 1:
        one = attrgetter(names[0])
        get = lambda node: (one(node),)  # noqa: E731
    else:
        get = attrgetter(*names)
    _GETTERS[typ] = get
    return get


def _no_fields(node: cst.CSTNode) -> tuple[Any, ...]:
    return ()


def _kids(node: cst.CSTNode) -> list[cst.CSTNode]:
    out: list[cst.CSTNode] = []
    is_node = _IS_NODE
    for name in _fields(type(node)):
        value = getattr(node, name)
        typ = type(value)
        flag = is_node.get(typ)
        if flag is None:
            flag = _is_node_type(typ)
        if flag:
            out.append(value)
        elif typ in _SEQUENCES:
            for item in value:
                flag = is_node.get(type(item))
                if flag is None:
                    flag = _is_node_type(type(item))
                if flag:
                    out.append(item)
    return out


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Semantic children in source order (no whitespace or punctuation nodes)."""
    found = locate(node)
    if found is not None:
        return iter(found[0].kids(found[1]))
    return iter(_kids(node))


_STOPS: dict[tuple[type, ...], dict[type, bool]] = {}


def _stop_table(stop: tuple[type, ...]) -> dict[type, bool]:
    stops = _STOPS.get(stop)
    if stops is None:
        stops = _STOPS[stop] = {}
    return stops


def _halts(stops: dict[type, bool], typ: type, stop: tuple[type, ...]) -> bool:
    halt = stops.get(typ)
    if halt is None:
        # By MRO, not issubclass: ABCMeta answers each new (base, type) pair by asking every
        # subclass of the base (libcst registers no virtual subclasses).
        mro = typ.__mro__
        halt = stops[typ] = any(base in mro for base in stop)
    return halt


class TreeIndex:
    """The whole tree of one file in pre-order, built once: every later walk of a subtree
    (rules look at the same function bodies many times) is a slice of `order` instead of a
    descent through dataclass fields.

    `end[i]` is the index just past the subtree of `order[i]`; `pos` maps `id(node)` to its
    index (node objects live as long as the index holds them, so an id cannot be reused);
    `by_type` lists the indices of each node type, in pre-order (rules and the bindings ask
    for a few types each: one pass serves them all).
    """

    __slots__ = ("module", "order", "end", "pos", "memo", "by_type")

    module: cst.Module

    def __init__(self, module: cst.Module) -> None:
        order: list[cst.CSTNode] = []
        end: list[int] = []
        # Nodes still to visit, children pushed in reverse; below a node's children, its own
        # index, popped when its subtree is done (`end` is then the length of `order`).
        stack: list[Any] = [module]
        pop, push = stack.pop, stack.append
        visited, ends = order.append, end.append
        getters, is_node = _GETTERS, _IS_NODE
        # Arrays of machine integers: a list would keep an int object per node (the peak
        # memory of a large file grew by a tenth).
        by_type: dict[type, array[int]] = {}
        bucket_of = by_type.get
        while stack:
            node = pop()
            typ = type(node)
            if typ is int:
                end[node] = len(order)
                continue
            here = len(order)
            visited(node)
            ends(here + 1)
            bucket = bucket_of(typ)
            if bucket is None:
                by_type[typ] = array("i", (here,))
            else:
                bucket.append(here)
            get = getters.get(typ)
            if get is None:
                get = _getter(typ)
            if get is _no_fields:
                continue  # a leaf (a name, a literal): its subtree ends where it starts
            push(here)
            for value in get(node):
                kind = type(value)
                flag = is_node.get(kind)
                if flag is None:
                    flag = _is_node_type(kind)
                if flag:
                    push(value)
                elif kind in _SEQUENCES and value:
                    for item in reversed(value):
                        flag = is_node.get(type(item))
                        if flag is None:
                            flag = _is_node_type(type(item))
                        if flag:
                            push(item)
        self.module = module
        self.order = order
        self.end = end
        self.pos = dict(zip(map(id, order), range(len(order))))
        self.by_type = by_type
        #: Per-file results of pure functions of a subtree (e.g. calls in evaluation order).
        self.memo: dict[tuple[str, int], object] = {}

    def nodes_of(self, typ: type[N]) -> list[N]:
        """Every node of exactly type `typ`, in pre-order (listed once per file)."""
        key = ("nodes_of", id(typ))
        found = self.memo.get(key)
        if found is None:
            order = self.order
            found = self.memo[key] = [order[i] for i in self.by_type.get(typ, ())]
        return found  # type: ignore[return-value]

    def indices_of(self, types: Iterable[type]) -> list[int]:
        """Indices of the nodes of any of `types` (exact types), in pre-order."""
        by_type = self.by_type
        found: list[int] = []
        for typ in types:
            found.extend(by_type.get(typ, ()))
        found.sort()
        return found

    def index_of(self, node: cst.CSTNode) -> int | None:
        i = self.pos.get(id(node))
        return i if i is not None and self.order[i] is node else None

    def typed(
        self, i: int, types: Collection[type], stop: tuple[type[cst.CSTNode], ...] = ()
    ) -> list[cst.CSTNode]:
        """The nodes of `types` (exact types) in `subtree(i, stop)`, in pre-order: read from
        the lists of each type, so the other nodes of the subtree cost nothing."""
        lo, hi = i, self.end[i]
        by_type = self.by_type
        picked: list[int] = []
        several = False
        for typ in types:
            found = by_type.get(typ)
            if found:
                a = bisect_left(found, lo)
                b = bisect_left(found, hi, a)
                if a < b:
                    several = bool(picked)
                    picked.extend(found[a:b])
        if not picked:
            return []
        if several:
            picked.sort()
        order = self.order
        if not stop:
            return [order[k] for k in picked]
        halting = self._halting(stop)
        a = bisect_left(halting, lo + 1)
        b = bisect_left(halting, hi, a)
        if a == b:
            return [order[k] for k in picked]
        end = self.end
        out: list[cst.CSTNode] = []
        # The subtrees not entered, one at a time: [skip_from, skip_to) below halting[s].
        s = a
        skip_from, skip_to = halting[s] + 1, end[halting[s]]
        for k in picked:
            while k >= skip_to:  # past this subtree: the next one not inside it
                s += 1
                while s < b and halting[s] < skip_to:
                    s += 1
                if s == b:
                    skip_from = skip_to = hi
                    break
                skip_from, skip_to = halting[s] + 1, end[halting[s]]
            if not skip_from <= k < skip_to:
                out.append(order[k])
        return out

    def _halting(self, stop: tuple[type[cst.CSTNode], ...]) -> list[int]:
        """Indices of the nodes whose type is (a subclass of) one of `stop`, in pre-order."""
        key = ("halting", id(stop))
        found = self.memo.get(key)
        if found is None or found[0] is not stop:  # type: ignore[index]
            stops = _stop_table(stop)
            indices: list[int] = []
            for typ, listed in self.by_type.items():
                if _halts(stops, typ, stop):
                    indices.extend(listed)
            indices.sort()
            found = self.memo[key] = (stop, indices)
        return found[1]  # type: ignore[index]

    def kids(self, i: int) -> list[cst.CSTNode]:
        order, end = self.order, self.end
        out = []
        j, stop = i + 1, end[i]
        while j < stop:
            out.append(order[j])
            j = end[j]
        return out

    def subtree(self, i: int, stop: tuple[type[cst.CSTNode], ...] = ()) -> list[cst.CSTNode]:
        """`order[i]` and its descendants in pre-order, not entering `stop` types below it."""
        order, end = self.order, self.end
        last = end[i]
        if not stop:
            return order[i:last]
        # The nodes of `stop` types below `order[i]` are kept and their subtrees left out: the
        # rest is runs of `order` between them, copied as slices (rules walk every statement of
        # a body this way; a node-by-node loop was a tenth of a training script's checks).
        halting = self._halting(stop)
        k = bisect_left(halting, i + 1)
        if k == len(halting) or halting[k] >= last:
            return order[i:last]
        out: list[cst.CSTNode] = []
        j = i
        while k < len(halting):
            h = halting[k]
            if h >= last:
                break
            out.extend(order[j : h + 1])
            j = end[h]
            k = bisect_left(halting, j, k + 1)  # past the stop nodes nested in the one left out
        out.extend(order[j:last])
        return out


#: The index of the file being checked (set by the engine around one file's checks).
_current: TreeIndex | None = None


def use_index(index: TreeIndex | None) -> None:
    global _current
    _current = index


def current_index() -> TreeIndex | None:
    return _current


def locate(node: cst.CSTNode) -> tuple[TreeIndex, int] | None:
    """The index in use and `node`'s place in it, if `node` is in the file being checked."""
    index = _current
    if index is None:
        return None
    i = index.index_of(node)
    return None if i is None else (index, i)


def encloses(outer: cst.CSTNode, node: cst.CSTNode) -> bool:
    """Whether `node` is `outer` or one of its descendants (a range test on the file's index
    when it holds both)."""
    found = locate(outer)
    if found is not None:
        index, i = found
        j = index.index_of(node)
        return j is not None and i <= j < index.end[i]
    return any(n is node for n in _descend(outer, ()))


def iter_nodes(
    node: cst.CSTNode, stop: tuple[type[cst.CSTNode], ...] = ()
) -> Iterator[cst.CSTNode]:
    """Pre-order descendants of `node` (itself included); do not enter nodes of `stop` types
    below the root (e.g. nested function definitions)."""
    found = locate(node)
    if found is not None:
        return iter(found[0].subtree(found[1], stop))
    return _descend(node, stop)


def nodes_of(module: cst.Module, typ: type[N]) -> list[N]:
    """Every node of exactly type `typ` in `module`, in pre-order: the file's index lists them
    once for every rule that asks."""
    index = _current
    if index is not None and index.module is module:
        return index.nodes_of(typ)
    return [node for node in _descend(module, ()) if type(node) is typ]  # type: ignore[misc]


def typed_nodes(
    node: cst.CSTNode, types: Collection[type], stop: tuple[type[cst.CSTNode], ...] = ()
) -> list[cst.CSTNode]:
    """`[n for n in iter_nodes(node, stop) if type(n) in types]`: where the file is indexed,
    read from its lists of each type."""
    found = locate(node)
    if found is not None:
        return found[0].typed(found[1], types, stop)
    return [n for n in _descend(node, stop) if type(n) in types]


def subtree_nodes(node: cst.CSTNode, stop: tuple[type[cst.CSTNode], ...] = ()) -> list[cst.CSTNode]:
    """`list(iter_nodes(node, stop))`, without the generator where the file is indexed."""
    found = locate(node)
    if found is not None:
        return found[0].subtree(found[1], stop)
    return list(_descend(node, stop))


def _descend(node: cst.CSTNode, stop: tuple[type[cst.CSTNode], ...]) -> Iterator[cst.CSTNode]:
    stops = _stop_table(stop)
    stack = [node]
    root = node
    while stack:
        current = stack.pop()
        yield current
        if stop and current is not root:
            typ = type(current)
            halt = stops.get(typ)
            if halt is None:
                halt = _halts(stops, typ, stop)
            if halt:
                continue
        kids = _kids(current)
        kids.reverse()
        stack.extend(kids)


Handler = Callable[[cst.CSTNode], object]
OnError = Callable[[int, BaseException], None]


def walk(
    module: cst.Module,
    visits: dict[type, list[tuple[int, Handler]]],
    leaves: dict[type, list[tuple[int, Handler]]],
    scope_stack: list[cst.CSTNode],
    on_error: OnError,
    index: TreeIndex | None = None,
) -> None:
    """Walk `module` once, calling handlers (tagged with their checker's index), over its
    index (built here unless given).

    A handler that raises is reported through `on_error` and its checker is dropped for the
    rest of the file; the walk and the other checkers go on.
    """
    if index is None or index.module is not module:
        index = TreeIndex(module)
    failed: set[int] = set()

    def call(handlers: list[tuple[int, Handler]], node: cst.CSTNode) -> None:
        for owner, handler in handlers:
            if owner in failed:
                continue
            try:
                handler(node)
            except Exception as exc:  # a rule bug must not stop the run
                failed.add(owner)
                on_error(owner, exc)

    end, order = index.end, index.order
    #: Nodes whose leave handlers (or scope pop) are due when the walk passes their end.
    pending: list[tuple[int, cst.CSTNode, bool]] = []

    def close(until: int) -> None:
        while pending and pending[-1][0] <= until:
            _, done, scoped = pending.pop()
            handlers = leaves.get(type(done))
            if handlers:
                call(handlers, done)
            if scoped:
                scope_stack.pop()

    structural = _STRUCTURAL
    # Only nodes something happens at: most nodes have no handler and open no scope.
    wanted = structural.union(visits, leaves)
    for i in index.indices_of(wanted):
        close(i)
        node = order[i]
        typ = type(node)
        handlers = visits.get(typ)
        if handlers:
            call(handlers, node)
        if typ in structural:
            scope_stack.append(node)
            pending.append((end[i], node, True))
        elif typ in leaves:
            pending.append((end[i], node, False))
    close(len(order))


def dispatch(objs: list[object]) -> tuple[dict[type, list], dict[type, list]]:
    visits: dict[type, list] = {}
    leaves: dict[type, list] = {}
    for index, obj in enumerate(objs):
        for attr, node_type, visit in _handler_names(type(obj)):
            target = visits if visit else leaves
            target.setdefault(node_type, []).append((index, getattr(obj, attr)))
    return visits, leaves


#: A checker class's `visit_<Node>`/`leave_<Node>` methods, (name, node type, is a visit),
#: with the size of the class dictionaries they were read from.
_HANDLERS: dict[type, tuple[int, tuple[tuple[str, type, bool], ...]]] = {}


def _handler_names(typ: type) -> tuple[tuple[str, type, bool], ...]:
    """Read from the class once (`dir` of a checker class, per file and checker, was a
    quarter of a millisecond a file); again when a method was added to or removed from the
    class or a base since (tests patch checkers)."""
    size = sum(len(vars(c)) for c in typ.__mro__)
    found = _HANDLERS.get(typ)
    if found is not None and found[0] == size:
        return found[1]
    names = []
    for attr in dir(typ):
        if attr.startswith("visit_") or attr.startswith("leave_"):
            node_type = getattr(cst, attr[6:], None)
            if isinstance(node_type, type):
                names.append((attr, node_type, attr.startswith("visit_")))
    _HANDLERS[typ] = (size, tuple(names))
    return _HANDLERS[typ][1]
