"""What a HybridBlock class puts in its graph, as far as the ONNX rules need it: the operator
calls of its `hybrid_forward` (MXNet 1.x) that run whatever the inputs are, the child blocks it
calls, and how many inputs it takes. Kept per file as picklable facts; `checker.py` joins the
classes of every file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from mxlint import knowledge
from mxlint.checker import FileContext
from mxlint.knowledge.onnx import onnx_facts
from mxlint.names import dotted_name
from mxlint.rules.onnx._scopes import _CONDITIONAL, _NESTED
from mxlint.walker import children

#: The Gluon container whose children run in order, each on the previous one's output.
SEQUENTIAL = frozenset({"mxnet.gluon.nn.HybridSequential"})


@dataclass(frozen=True)
class Use:
    """One place that puts operators in a graph: an `F.<op>` call or a layer's constructor.
    `span` is (row, column, end row, end column), 1-based; while the file is read it is
    (index of the node among the file's placed nodes, 0, 0, 0)."""

    spelled: str  # `F.contrib.boolean_mask`, `nn.GroupNorm(...)`
    ops: tuple[str, ...]  # the graph operators it emits
    span: tuple[int, int, int, int]
    symbol: str | None
    layer: bool = False


@dataclass(frozen=True)
class Member:
    """A child block: a Gluon layer (its operators are `use`) or a project class (`name`)."""

    name: str | None
    use: Use | None


@dataclass
class ClassFacts:
    path: str
    bases: tuple[str, ...]
    #: operator calls of `hybrid_forward` that always run; None: it has no `hybrid_forward`
    uses: tuple[Use, ...] | None = None
    #: `self.<attr>` children called unconditionally from `hybrid_forward`
    called: frozenset[str] = frozenset()
    #: attribute -> the blocks it holds (a container's `add`ed members too)
    members: dict[str, tuple[Member, ...]] = field(default_factory=dict)
    #: blocks `self.add(...)`ed (a HybridSequential subclass)
    added: tuple[Member, ...] = ()
    #: (required, optional) inputs of `hybrid_forward`; None with `*args`
    inputs: tuple[int, int] | None = None


class ClassReader:
    """Reads the classes of one file; spans are filled in by the checker, in one pass."""

    def __init__(self, ctx: FileContext, nodes: list[cst.CSTNode]) -> None:
        self.ctx = ctx
        #: the nodes whose spans the file's facts need, shared with the export reader
        self.nodes = nodes
        self.facts = onnx_facts()

    def read(self, cls: cst.ClassDef, qualname: str) -> ClassFacts:
        methods = {s.name.value: s for s in cls.body.body if type(s) is cst.FunctionDef}
        hybrid = methods.get("hybrid_forward")
        bases = tuple(self.ctx.facts.classes.get(qualname, ()))
        facts = ClassFacts(self.ctx.path, bases)
        attrs: dict[str, list[tuple[cst.Call | None, bool]]] = {}
        adds: dict[str, list[tuple[cst.CSTNode, bool]]] = {}
        for method in methods.values():
            if method is hybrid:
                continue
            self._assignments(method.body, attrs, adds, False)
        for attr, values in attrs.items():
            if len(values) != 1 or values[0][1] or values[0][0] is None:
                continue  # assigned twice or under a condition: which block it is is unknown
            call = values[0][0]
            member = self.member(call, qualname)
            inner = tuple(
                m
                for node, cond in adds.get(attr, ())
                if not cond and type(node) is cst.Call
                for m in [self.member(node, qualname)]
                if m is not None
            )
            if member is not None and member.name in SEQUENTIAL:
                if any(cond for _, cond in adds.get(attr, ())):
                    continue
                facts.members[attr] = inner
            elif member is not None:
                facts.members[attr] = (member,)
        facts.added = tuple(
            m
            for node, cond in adds.get("", ())
            if not cond and type(node) is cst.Call
            for m in [self.member(node, qualname)]
            if m is not None
        )
        if hybrid is not None:
            facts.uses, facts.called = self._forward(hybrid, qualname)
            facts.inputs = _inputs(hybrid, attrs)
        return facts

    # -- children -----------------------------------------------------------------------------

    def _assignments(
        self,
        node: cst.CSTNode,
        attrs: dict[str, list[tuple[cst.Call | None, bool]]],
        adds: dict[str, list[tuple[cst.CSTNode, bool]]],
        cond: bool,
    ) -> None:
        if isinstance(node, _NESTED):
            return
        if type(node) is cst.Assign:
            for target in node.targets:
                attr = _self_attr(target.target)
                if attr is not None:
                    value = node.value if type(node.value) is cst.Call else None
                    attrs.setdefault(attr, []).append((value, cond))
        elif (
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and node.func.attr.value == "add"
        ):
            owner = node.func.value
            key = "" if type(owner) is cst.Name and owner.value == "self" else _self_attr(owner)
            if key is not None:
                for arg in node.args:
                    adds.setdefault(key, []).append((arg.value, cond or bool(arg.star)))
        inner = cond or isinstance(node, (*_CONDITIONAL, cst.For))
        for child in children(node):
            self._assignments(child, attrs, adds, inner)

    def member(self, call: cst.Call, qualname: str) -> Member | None:
        """The block a constructor call builds: a Gluon layer or a project class."""
        name = self.ctx.resolve(call.func)
        if name is not None:
            canon = knowledge.canonical(name)
            if knowledge.is_mxnet(canon):
                ops = self.facts.layers.get(canon)
                if canon in SEQUENTIAL:
                    return Member(canon, None)
                if ops is None:
                    return None
                use = self._pending(call, self.ctx.code(call.func) + "(...)", ops, True, qualname)
                return Member(None, use)
            return Member(name, None)
        if type(call.func) is cst.Name:
            return Member(self.ctx.qualname(call.func.value), None)
        return None

    def _pending(
        self, node: cst.CSTNode, spelled: str, ops: tuple[str, ...], layer: bool, symbol: str
    ) -> Use | None:
        """A use of operators that matters to the rules (one without a converter or dynamic);
        None for the others, which every rule passes over."""
        if not self.facts.unconverted(ops) and not any(op in self.facts.dynamic for op in ops):
            return None
        self.nodes.append(node)
        return Use(spelled, ops, (len(self.nodes) - 1, 0, 0, 0), symbol, layer)

    # -- forward ------------------------------------------------------------------------------

    def _forward(
        self, fn: cst.FunctionDef, qualname: str
    ) -> tuple[tuple[Use, ...], frozenset[str]]:
        params = fn.params.params
        f_name = params[1].name.value if len(params) > 1 else "F"
        uses: list[Use] = []
        called: set[str] = set()
        symbol = f"{qualname.rsplit('.', 1)[-1]}.hybrid_forward"

        def walk(node: cst.CSTNode, cond: bool) -> None:
            if isinstance(node, _NESTED) and node is not fn:
                return
            if type(node) is cst.Call and not cond:
                attr = _self_attr(node.func)
                if attr is not None:
                    called.add(attr)
                key = _f_key(node.func, f_name, self.ctx)
                ops = self.facts.functions.get(key) if key is not None else None
                if ops is not None:
                    use = self._pending(node, self.ctx.code(node.func), ops, False, symbol)
                    if use is not None:
                        uses.append(use)
            inner = cond or isinstance(node, _CONDITIONAL)
            for child in children(node):
                walk(child, inner)

        walk(fn.body, False)
        return tuple(uses), frozenset(called)


def _self_attr(node: cst.BaseExpression) -> str | None:
    if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self":
        return node.attr.value
    return None


def _f_key(func: cst.BaseExpression, f_name: str, ctx: FileContext) -> str | None:
    """`contrib.box_nms` for `F.contrib.box_nms`, `mx.sym.contrib.box_nms` or
    `mx.nd.contrib.box_nms`."""
    name = dotted_name(func)
    if name is None:
        return None
    head, _, rest = name.partition(".")
    if head == f_name and rest:
        return rest
    resolved = ctx.resolve(func)
    if resolved is None:
        return None
    canon = knowledge.canonical(resolved)
    for prefix in ("mxnet.nd.", "mxnet.sym."):
        if canon.startswith(prefix):
            return canon[len(prefix) :]
    return None


def _inputs(
    fn: cst.FunctionDef, attrs: dict[str, list[tuple[cst.Call | None, bool]]]
) -> tuple[int, int] | None:
    """Inputs `hybrid_forward` takes after `F`: (without default, with default); parameters
    the block registers (passed by name) are not inputs."""
    p = fn.params
    if isinstance(p.star_arg, cst.Param) or p.posonly_params:
        return None
    required = optional = 0
    for param in p.params[2:]:
        name = param.name.value
        if name in attrs or name == "kwargs":
            continue  # `self.weight = self.params.get(...)`: passed as a keyword
        if param.default is None:
            required += 1
        else:
            optional += 1
    return required, optional
