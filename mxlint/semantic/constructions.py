"""Where a file builds the project's classes, and what becomes of each object it builds.

A HybridBlock's `hybrid_forward` only meets `hybridize()` when an object of the class is
hybridized: itself, or a block that holds it. A loss block that a training script builds,
calls and never hybridizes, a reference layer a test builds and runs on arrays, run
imperatively: what would break under `hybridize()` never does. Each place a file builds an
object of a class of its project (`loss = YoloLoss(...)`, `Layer(...)(x)`) is kept with what
the code around it does with the object: keeps it to call it (`FREE`), hybridizes or exports
it (`HYBRIDIZED`), hands it to a function (which the run asks: `hand`), keeps it as a child
(`self.conv = Conv(...)` in a method of a class of the file: `child`, whose fate is that
class's objects'), or lets it go where one file cannot follow (`UNKNOWN`: returned, stored
elsewhere). Other mentions of the class (a table of classes, `partial(Layer, ...)`) are
`UNKNOWN` too.
`ProjectIndex.never_hybridized` reads them from every file of the run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import libcst as cst

from mxlint import knowledge
from mxlint.names import ImportMap
from mxlint.semantic.bindings import Bindings, Scope
from mxlint.semantic.effects import argument_slot, call_origin
from mxlint.walker import TreeIndex, locate

#: What became of one object built (`FileFacts.builds`): ("free",), ("hybridized",),
#: ("unknown",), ("hand", kind, callee, slot): handed to a callee of that `Origin` kind
#: ("project": a resolved name the run asks `param_hybridized` of; "library"), or ("child",
#: owner): kept by the objects of the project class `owner` as a child.
Fate = tuple[object, ...]
FREE: Fate = ("free",)
HYBRIDIZED: Fate = ("hybridized",)
UNKNOWN: Fate = ("unknown",)

#: Methods called on an object that neither hybridize it nor let it go anywhere.
_KEEPING = (
    knowledge.INERT_BLOCK_METHODS | knowledge.FORWARD_METHODS
) - knowledge.HYBRIDIZING_METHODS
#: Calls that read a class without building or handing on an object of it.
_ASKING = frozenset({"isinstance", "issubclass", "super", "type"})


def builds(
    module: cst.Module,
    imports: ImportMap,
    bindings: Bindings,
    qualname: Callable[[str], str],
) -> dict[str, tuple[Fate, ...]]:
    """The fate of every object of a project class the file builds, and `UNKNOWN` for every
    other mention of such a class, by the class's name as the file resolves it. `qualname`:
    the project name of a module-level name of the file (`FileContext.qualname`)."""
    found = locate(module)
    index = found[0] if found is not None else TreeIndex(module)
    own = {s.name.value: qualname(s.name.value) for s in module.body if type(s) is cst.ClassDef}
    functions = {
        s.name.value: qualname(s.name.value) for s in module.body if type(s) is cst.FunctionDef
    }
    return _Reader(module, imports, bindings, own, functions, index).read()


def _class_name(node: cst.BaseExpression, imports: ImportMap, own: dict[str, str]) -> str | None:
    """The project class `node` names (a capitalised name, as classes are spelled), if any."""
    if type(node) is cst.Name:
        if node.value in own:
            return own[node.value]
        last = node.value
    elif type(node) is cst.Attribute:
        last = node.attr.value
    else:
        return None
    if not last[:1].isupper():
        return None
    name = imports.resolve(node)
    if name is None or knowledge.is_library(name):
        return None
    return name


class _Reader:
    def __init__(
        self,
        module: cst.Module,
        imports: ImportMap,
        bindings: Bindings,
        own: dict[str, str],
        functions: dict[str, str],
        index: TreeIndex,
    ) -> None:
        self.module = module
        self.imports = imports
        self.bindings = bindings
        #: The file's module-level classes and functions, by local name: their project names.
        self.own = own
        self.functions = functions
        self.index = index
        self.out: dict[str, list[Fate]] = {}
        #: Per class of the file (by id): the `self.<name>`s its code lets go (`_let_go`).
        self._owners: dict[int, frozenset[str] | None] = {}

    def read(self) -> dict[str, tuple[Fate, ...]]:
        # Only a name the file binds to a class of its own or to something a project module
        # gives (not a library's) can start the spelling of a project class.
        roots = set(self.own)
        roots.update(
            name
            for name, target in self.imports.aliases.items()
            if not knowledge.is_library(target)
        )
        # Modules whose every name the file takes (`from .layers import *`): a capitalised
        # name the file does not bind may be a class of any of them.
        starred = sorted(m for m in self.imports.starred if not knowledge.is_library(m))
        if not roots and not starred:
            return {}
        index = self.index
        aliases = self.imports.aliases
        for node in index.nodes_of(cst.Name):
            value = node.value
            if value not in roots and not (
                starred and value[:1].isupper() and value not in aliases
            ):
                continue  # most names: nothing that can spell a project class
            names: list[str] = []
            expr: cst.CSTNode = node
            parent = self.parent(node)
            if value in roots:
                while type(parent) is cst.Attribute and parent.value is expr:  # type: ignore[attr-defined]
                    expr, parent = parent, self.parent(parent)
                name = _class_name(expr, self.imports, self.own)  # type: ignore[arg-type]
                if name is not None:
                    names.append(name)
            elif (
                starred
                and node.value[:1].isupper()
                and node.value not in self.imports.aliases
                and not (type(parent) is cst.Attribute and parent.attr is node)  # type: ignore[attr-defined]
            ):
                names.extend(f"{module}.{node.value}" for module in starred)
            if not names or not self._mention(expr, parent):
                continue
            fates = self._built(parent) if type(parent) is cst.Call and parent.func is expr else ()
            for name in names:
                self.out.setdefault(name, []).extend(fates or (UNKNOWN,))
        return {name: tuple(dict.fromkeys(fates)) for name, fates in self.out.items()}

    def _mention(self, expr: cst.CSTNode, parent: cst.CSTNode | None) -> bool:
        """Whether `expr` (a class's spelling) uses the class: not its import, not a base of a
        class statement, not `isinstance(x, Class)`, not a name being bound."""
        kind = type(parent)
        if kind in (cst.ImportAlias, cst.ImportFrom, cst.Import, cst.AssignTarget, cst.Param):
            return False
        if kind in (cst.FunctionDef, cst.ClassDef) and parent.name is expr:  # type: ignore[union-attr]
            return False
        if kind is cst.Arg:
            outer = self.parent(parent)  # type: ignore[arg-type]
            if type(outer) is cst.ClassDef:
                return False
            if type(outer) is cst.Call:
                func = outer.func
                if type(func) is cst.Name and func.value in _ASKING:
                    return False
        return True

    # -- one object --------------------------------------------------------------------------

    def _built(self, call: cst.Call) -> tuple[Fate, ...]:
        """What becomes of the object `call` builds: every fate it may meet (it meets
        `hybridize()` if one of them does)."""
        scope = self.bindings.scope_at(call)
        if _in_class(scope):
            return (self._child(call, scope),)
        parent = self.parent(call)
        if type(parent) is cst.Call and parent.func is call:
            return (FREE,)  # `Layer(...)(x)`
        if type(parent) is cst.Arg:
            return (self._handed(parent),)
        if type(parent) is cst.Assign and len(parent.targets) == 1:
            target = parent.targets[0].target
            if type(target) is cst.Name:
                return self._kept(target.value, scope, parent)
        return (UNKNOWN,)

    def _child(self, call: cst.Call, scope: Scope) -> Fate:
        """An object built in a method of a class of this file and kept as `self.<name>`
        (`self.conv = Conv(...)`): a child block, whose fate is its owner's (`("child",
        owner)`: it meets `hybridize()` only when an object of the owner does), unless the
        owner's code hybridizes, exports or lets go of what it keeps under that name."""
        method, owner = scope.node, scope.parent
        if (
            scope.kind != "function"
            or owner is None
            or owner.kind != "class"
            or type(owner.node) is not cst.ClassDef
            or owner.node.name.value not in self.own  # type: ignore[attr-defined]
            or owner.parent is None
            or owner.parent.parent is not None  # a class nested in a function or class
        ):
            return UNKNOWN
        params = method.params.params if type(method) is cst.FunctionDef else ()  # type: ignore[attr-defined]
        receiver = params[0].name.value if params else None
        if receiver != "self":
            return UNKNOWN  # a static or class method, or a receiver spelled otherwise
        attr = self._kept_as(call)
        if attr is None:
            return UNKNOWN
        cls: cst.ClassDef = owner.node  # type: ignore[assignment]
        let_go = self._let_go(cls)
        if let_go is None or attr in let_go:
            return UNKNOWN
        return ("child", self.own[cls.name.value])

    def _kept_as(self, call: cst.Call) -> str | None:
        """The name under which a method keeps the object `call` builds: `self.conv = C(...)`
        ("conv"), `self.body.add(C(...))` ("body", a container the owner keeps), `self.add(C(...))`
        ("": the owner itself is the container); None for anything else."""
        parent = self.parent(call)
        if type(parent) is cst.Assign:
            if len(parent.targets) == 1:
                return _attribute_of(parent.targets[0].target, "self")
            return None
        if type(parent) is not cst.Arg or parent.keyword is not None or parent.star:
            return None
        outer = self.parent(parent)
        if not (
            type(outer) is cst.Call
            and type(outer.func) is cst.Attribute
            and outer.func.attr.value in _REGISTERING
        ):
            return None
        holder = outer.func.value
        if type(holder) is cst.Name and holder.value == "self":
            return ""
        return _attribute_of(holder, "self")

    def _let_go(self, cls: cst.ClassDef) -> frozenset[str] | None:
        """The names `self.<name>` of which the class's code does more than bind, call or ask
        (returns, hands on, hybridizes); None (every name) when it hybridizes something itself
        (`self.hybridize()`). Read once per class."""
        if id(cls) in self._owners:
            return self._owners[id(cls)]
        let_go: set[str] = set()
        start = self.index.index_of(cls)
        for node in self.index.typed(start, _ATTRIBUTE) if start is not None else []:
            if type(node) is not cst.Attribute or type(node.value) is not cst.Name:
                continue
            if node.attr.value in knowledge.HYBRIDIZING_METHODS:
                self._owners[id(cls)] = None  # the owner hybridizes something of its own
                return None
            if node.value.value == "self" and self._owner_use(node) is not FREE:
                let_go.add(node.attr.value)
        found = self._owners[id(cls)] = frozenset(let_go)
        return found

    def _owner_use(self, node: cst.Attribute) -> Fate:
        """What the owner's code does with `self.<name>` at `node` (as `_use` reads a name)."""
        parent = self.parent(node)
        if type(parent) is cst.AssignTarget:
            return FREE  # (re)bound: the object built there is read on its own
        if type(parent) is cst.Call and parent.func is node:
            return FREE  # called: a forward pass
        if type(parent) is cst.Attribute and parent.value is node:
            return self._chain(parent)
        return UNKNOWN  # returned, handed on, put in a container

    def _chain(self, first: cst.Attribute) -> Fate:
        """What an attribute chain on the object does with it (`x.hybridize()`,
        `x.weight.data()`): `first` is the chain's first attribute."""
        top: cst.Attribute = first
        up = self.parent(top)
        while type(up) is cst.Attribute and up.value is top:
            top, up = up, self.parent(up)
        method = top.attr.value
        if type(up) is cst.Call and up.func is top:
            if method in knowledge.HYBRIDIZING_METHODS:
                return HYBRIDIZED
            if top is first and method not in _KEEPING:
                return UNKNOWN  # a method of its own class, which may hand it on
        return FREE  # `x.weight.data()`, `x.collect_params()`

    def _kept(self, name: str, scope: Scope, assign: cst.Assign) -> tuple[Fate, ...]:
        """What the code does with `name`, bound to a new object in `scope`: each callee it
        is handed to is a fate of its own."""
        fates: list[Fate] = []
        # Uses earlier in the scope's own code read what the name held before (`net.hybridize()`
        # on the backbone, then `net = Wrapper(net.features)`), unless a loop runs them after.
        bound_at = self.index.index_of(assign)
        straight = bound_at is not None and not self._in_loop(assign, scope)
        for node in self._uses(name, scope):
            if node is assign.targets[0].target:
                continue
            if straight and self._before(node, bound_at, scope):  # type: ignore[arg-type]
                continue
            fate = self._use(node)
            if fate is HYBRIDIZED or fate is UNKNOWN:
                return (fate,)
            if fate is not FREE:
                fates.append(fate)
        return tuple(dict.fromkeys(fates)) or (FREE,)

    def _in_loop(self, node: cst.CSTNode, scope: Scope) -> bool:
        """Whether `node` sits in a loop of `scope`'s own code (a scope's nested functions
        and classes are scopes of their own)."""
        up = self.parent(node)
        while up is not None and up is not scope.node:
            if type(up) in (cst.For, cst.While):
                return True
            up = self.parent(up)
        return False

    def _before(self, node: cst.Name, at: int, scope: Scope) -> bool:
        """`node` comes before index `at` in `scope`'s own code (not in a function it defines,
        which runs when called)."""
        i = self.index.index_of(node)
        return i is not None and i < at and self.bindings.scope_at(node) is scope

    def _uses(self, name: str, scope: Scope) -> Iterator[cst.Name]:
        index = self.index
        root = scope.node if scope.node is not None else self.module
        start = index.index_of(root)
        if start is None:
            return
        stop = index.end[start]
        for node in index.nodes_of(cst.Name):
            if node.value != name:
                continue
            i = index.index_of(node)
            if (
                i is not None
                and start <= i < stop
                and not self._member_name(node)
                and self.bindings.scope_at(node).lookup(name) is scope
            ):
                yield node

    def _member_name(self, node: cst.Name) -> bool:
        """`node` names a member or a module, not the variable: `x.net`, `from models.net import`,
        `f(net=...)`."""
        parent = self.parent(node)
        return (type(parent) is cst.Attribute and parent.attr is node) or (
            type(parent) is cst.Arg and parent.keyword is node
        )

    def _use(self, node: cst.Name) -> Fate:
        parent = self.parent(node)
        if type(parent) is cst.Call and parent.func is node:
            return FREE  # called
        if type(parent) is cst.Arg:
            return self._handed(parent)
        if type(parent) is cst.Attribute and parent.value is node:
            return self._chain(parent)
        if type(parent) in (cst.Del, cst.Global, cst.Nonlocal):
            return FREE
        return UNKNOWN  # returned, stored, aliased, put in a container

    def _handed(self, arg: cst.Arg) -> Fate:
        call = self.parent(arg)
        if type(call) is not cst.Call or arg.star:
            return UNKNOWN
        origin, _ = call_origin(call, self.imports)
        kind, callee = origin
        if kind == "library":
            return FREE
        if kind != "project":
            local = call.func
            if type(local) is cst.Name and local.value in self.functions:
                kind, callee = "project", self.functions[local.value]
            else:
                return UNKNOWN
        slot = argument_slot(call, arg)
        return UNKNOWN if slot is None else ("hand", kind, callee, slot)

    # -- the tree ----------------------------------------------------------------------------

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The node holding `node`: the nearest node before it in pre-order whose subtree
        reaches past it (the scan passes only earlier siblings' subtrees, mostly small)."""
        index = self.index
        i = index.index_of(node)
        if i is None:
            return None
        end = index.end
        j = i - 1
        while j >= 0 and end[j] <= i:
            j -= 1
        return index.order[j] if j >= 0 else None


#: Container methods that register a block as a child (`Sequential.add`).
_REGISTERING = frozenset({"add", "register_child"})
_ATTRIBUTE = frozenset({cst.Attribute})


def _attribute_of(target: cst.BaseExpression, receiver: str) -> str | None:
    """`name` of a target `receiver.name` (`self.conv`)."""
    if (
        type(target) is cst.Attribute
        and type(target.value) is cst.Name
        and target.value.value == receiver
    ):
        return target.attr.value
    return None


def _in_class(scope: Scope) -> bool:
    """Whether `scope` is a class body or inside a method (any function nested in a class)."""
    current: Scope | None = scope
    while current is not None:
        if current.kind == "class":
            return True
        current = current.parent
    return False
