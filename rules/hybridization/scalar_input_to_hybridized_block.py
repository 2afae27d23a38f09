"""MXL109 scalar-input-to-hybridized-block: finds a call of a hybridized HybridBlock (MXNet 1.x)
that passes a Python number as one of its inputs (`net(x, 0.5)` after `net.hybridize()`).

The function after the class decides and words its findings; `ScalarInputChecker`
(`rules/hybridization/checker.py`) runs it over each function and the module's top level. Its
tests are the examples below (run by `tests/test_rule_examples.py`), `tests/test_hybridization.py`
and `tests/snapshots/MXL109.txt`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import libcst as cst

from mxlint import knowledge
from mxlint.argparse_options import NumberOptions, number_literal
from mxlint.checker import FileContext
from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.walker import NESTED_SCOPES, iter_nodes

ERROR = "When hybridized, the input of HybridBlock input must be (nested) list of Symbol or NDArray"


class ScalarInputToHybridizedBlock(Rule):
    code = "MXL109"
    name = "scalar-input-to-hybridized-block"
    runtime = Runtime("raise", loud=True, error=r"must be \(nested\) list of Symbol or NDArray")
    message = (
        "`{net}` is hybridized, and `{arg}` is a Python number passed as one of its inputs: "
        'MXNet 1.x raises "{error}"; pass an NDArray (`nd.array([{arg}])`) or make it a '
        "constructor argument of the block"
    )
    what = """
        Finds a call of a HybridBlock, after `hybridize()` on the same name in the same
        function or script, that passes a Python number (a literal, or a name bound to one) as
        an input: `net(x, 0.5)`. A command-line option the file's `argparse` parser declares
        with `type=int`/`type=float` (or with a number default and no `type=`) is a number
        too: `net(x, args.scale)`, with `args` bound to `parser.parse_args()` or to a function
        of the file returning it. Also in a function of the file that a caller passes the
        hybridized block to (`run(net, x, 0.5)` with `def run(net, x, s): return net(x, s)`),
        the number written there or passed by that caller, and in the methods of an object
        (of a class deriving from nothing) whose `__init__` hybridized the block it keeps
        (`self.net(x, 0.5)`, or a number `__init__` keeps, `self.scale = float(cfg["scale"])`,
        when no other method rebinds it). `float(...)` and `int(...)` are numbers, and so is
        the variable of a loop over literal numbers or `range()` (`for tau in (0.5, 1.0):
        net(x, tau)`). MXNet 1.x only.
    """
    why = """
        A hybridized block runs a cached graph whose inputs are arrays. Imperatively the call
        works (`hybrid_forward` receives the float), so unit tests pass; after `hybridize()`
        the first call raises `ValueError: When hybridized, the input of HybridBlock input must
        be (nested) list of Symbol or NDArray`. Blocks called inside another block's forward
        pass are traced with it and may take numbers; they are not reported.
    """
    example = """
        net = Scale()
        net.initialize()
        net.hybridize()
        y = net(x, 0.5)
    """
    use_instead = """
        net = Scale(factor=0.5)
        net.initialize()
        net.hybridize()
        y = net(x)
    """

    invalid = (
        Example(
            """from mxnet import gluon, nd


class Scale(gluon.HybridBlock):
    def hybrid_forward(self, F, x, s):
        return x * s


net = Scale()
net.hybridize()
print(net(nd.ones((2,)), 0.5))
""",
            line=11,
        ),
        Example(
            """from mxnet import gluon, nd
from models import Mixer


def run(x):
    mixer = Mixer()
    mixer.initialize()
    mixer.hybridize(static_alloc=True)
    alpha = 0.3
    return mixer(x, alpha)
""",
            line=10,
            project=(
                (
                    "models",
                    "from mxnet import gluon\n\n\nclass Mixer(gluon.HybridBlock):\n"
                    "    def hybrid_forward(self, F, x, alpha):\n"
                    "        return x * alpha\n",
                ),
            ),
        ),
    )
    valid = (
        # Not hybridized: the float reaches `hybrid_forward` imperatively.
        """from mxnet import gluon, nd


class Scale(gluon.HybridBlock):
    def hybrid_forward(self, F, x, s):
        return x * s


net = Scale()
print(net(nd.ones((2,)), 0.5))
""",
        # An array, not a number.
        """from mxnet import gluon, nd


class Scale(gluon.HybridBlock):
    def hybrid_forward(self, F, x, s):
        return x * s


net = Scale()
net.hybridize()
print(net(nd.ones((2,)), nd.array([0.5])))
""",
        # A plain Block is never a cached graph: `hybridize()` only reaches its children.
        """from mxnet import gluon, nd


class Scale(gluon.Block):
    def forward(self, x, s):
        return x * s


net = Scale()
net.hybridize()
print(net(nd.ones((2,)), 0.5))
""",
        # `hybridize(active=False)` turns it off.
        """from mxnet import gluon, nd


class Scale(gluon.HybridBlock):
    def hybrid_forward(self, F, x, s):
        return x * s


net = Scale()
net.hybridize(active=False)
print(net(nd.ones((2,)), 0.5))
""",
        # A project class that turns out to be a plain Block.
        Valid(
            """from models import Mixer

mixer = Mixer()
mixer.hybridize()
print(mixer(x, 0.3))
""",
            project=(
                (
                    "models",
                    "from mxnet import gluon\n\n\nclass Mixer(gluon.Block):\n"
                    "    def forward(self, x, alpha):\n"
                    "        return x * alpha\n",
                ),
            ),
        ),
    )


def _turns_off(call: cst.Call) -> bool:
    return any(
        a.keyword is not None
        and a.keyword.value == "active"
        and type(a.value) is cst.Name
        and a.value.value == "False"
        for a in call.args
    )


#: What a call of a function of the file passes: parameter -> ("block", class) for a
#: hybridized block, ("number", literal) for a Python number.
Passed = dict[str, tuple[str, str]]
#: Calls of the module's functions a scope makes: (function name, what the call passes, the
#: caller's name for messages).
Sites = list[tuple[str, Passed, str]]


def check_scope(
    ctx: FileContext,
    body: Sequence[cst.CSTNode],
    *,
    functions: Mapping[str, cst.FunctionDef] | None = None,
    sites: Sites | None = None,
    caller: str = "the module's code",
    passed: Passed | None = None,
    via: str | None = None,
    seen: set[int] | None = None,
    members: Passed | None = None,
    options: NumberOptions | None = None,
) -> None:
    """One function's statements (or the module's), in source order. `functions`: the module's
    functions by name, whose calls this scope makes are added to `sites` (what they pass);
    `passed`: what a call of this function passes for its parameters, or the `self.` members
    its class's `__init__` hybridized (`via` the caller, or `__init__`), the only values its
    calls are then judged on; `seen`: arguments already reported; `members`: filled with the
    hybridized `self.` members at the end (an `__init__`); `options`: the file's command-line
    options that hold numbers (`args.scale` with `type=float`)."""
    blocks: dict[str, str] = {}  # name -> class (resolved, or this file's qualified name)
    hybridized: set[str] = set()
    numbers: dict[str, str] = {}
    seeded: set[str] = set()
    for name, (kind, what) in (passed or {}).items():
        if kind == "block":
            blocks[name] = what
            hybridized.add(name)
        else:
            numbers[name] = what
        seeded.add(name)
    seen = seen if seen is not None else set()
    shadowed: set[str] = set()  # `args` or `args.scale` rebound by this scope
    for stmt in body:
        if isinstance(stmt, NESTED_SCOPES):
            continue
        for node in iter_nodes(stmt, stop=NESTED_SCOPES):
            if type(node) is cst.Assign and len(node.targets) == 1:
                target = node.targets[0].target
                rebound = options.rebinds(node) if options is not None else None
                if rebound is not None:
                    shadowed.add(rebound)
                name_or_none = _local_or_member(target)
                if name_or_none is None:
                    continue
                name = name_or_none
                blocks.pop(name, None)
                hybridized.discard(name)
                numbers.pop(name, None)
                seeded.discard(name)
                value = node.value
                literal = number_literal(value) or _converted_number(ctx, value)
                if (
                    literal is None
                    and options is not None
                    and options.number(value, shadowed) is not None
                ):
                    literal = ctx.code(value)
                if literal is not None:
                    numbers[name] = literal
                elif type(value) is cst.Call:
                    cls = ctx.resolve(value.func)
                    if cls is None and type(value.func) is cst.Name:
                        cls = ctx.qualname(value.func.value)
                    if cls is not None and cls.rsplit(".", 1)[-1][:1].isupper():
                        blocks[name] = cls
            elif type(node) is cst.For and type(node.target) is cst.Name:
                # `for tau in (0.5, 1.0):`, `for k in range(3):`: the loop variable is a number.
                name = node.target.value
                blocks.pop(name, None)
                hybridized.discard(name)
                seeded.discard(name)
                over = _numbers_iterated(ctx, node.iter)
                if over is not None:
                    numbers[name] = over
                else:
                    numbers.pop(name, None)
            elif type(node) is cst.Call:
                func = node.func
                callee = _local_or_member(func)
                if (
                    type(func) is cst.Attribute
                    and func.attr.value == "hybridize"
                    and _local_or_member(func.value) in blocks
                ):
                    receiver = _local_or_member(func.value)
                    assert receiver is not None
                    if _turns_off(node):
                        hybridized.discard(receiver)
                    else:
                        hybridized.add(receiver)
                elif callee is not None and callee in hybridized:
                    if passed is None or callee in seeded or _names_any(node, seeded):
                        _check_call(
                            ctx,
                            node,
                            callee,
                            blocks[callee],
                            numbers,
                            seeded,
                            via,
                            seen,
                            (options, shadowed),
                        )
                elif (
                    type(func) is cst.Name
                    and functions is not None
                    and sites is not None
                    and func.value in functions
                ):
                    given = _given(
                        ctx,
                        functions[func.value],
                        node,
                        blocks,
                        hybridized,
                        numbers,
                        (options, shadowed),
                    )
                    if any(kind == "block" for kind, _ in given.values()):
                        sites.append((func.value, given, caller))
    if members is not None:
        for name in hybridized:
            if name.startswith("self."):
                members[name] = ("block", blocks[name])
        for name, literal in numbers.items():
            if name.startswith("self."):
                members[name] = ("number", literal)


def _numbers_iterated(ctx: FileContext, iterable: cst.BaseExpression) -> str | None:
    """`(0.5, 1.0)`, `[1, 2]`, `range(3)`: an iterable of Python numbers, as spelled."""
    if isinstance(iterable, (cst.Tuple, cst.List)) and iterable.elements:
        if all(
            type(el) is cst.Element and number_literal(el.value) is not None
            for el in iterable.elements
        ):
            return ctx.code(iterable)
        return None
    if (
        type(iterable) is cst.Call
        and type(iterable.func) is cst.Name
        and iterable.func.value == "range"
        and ctx.resolve(iterable.func) is None
    ):
        return ctx.code(iterable)
    return None


def _converted_number(ctx: FileContext, value: cst.BaseExpression) -> str | None:
    """`float(cfg["scale"])`, `int(n)`: the builtins always return a Python number."""
    if (
        type(value) is cst.Call
        and type(value.func) is cst.Name
        and value.func.value in ("float", "int")
        and ctx.resolve(value.func) is None
        and len(value.args) == 1
    ):
        return ctx.code(value)
    return None


def _local_or_member(node: cst.BaseExpression) -> str | None:
    """`net` or `self.net`: a name this analysis follows."""
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self":
        return f"self.{node.attr.value}"
    return None


def _names_any(call: cst.Call, names: set[str]) -> bool:
    return any(type(a.value) is cst.Name and a.value.value in names for a in call.args)


def _given(
    ctx: FileContext,
    fn: cst.FunctionDef,
    call: cst.Call,
    blocks: Mapping[str, str],
    hybridized: set[str],
    numbers: Mapping[str, str],
    options: tuple[NumberOptions | None, set[str]] = (None, set()),
) -> Passed:
    """What `call` passes for `fn`'s parameters: hybridized blocks and Python numbers."""
    params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    out: Passed = {}
    index = 0
    for arg in call.args:
        if arg.star:
            break
        if arg.keyword is not None:
            name: str | None = arg.keyword.value
        else:
            name = params[index] if index < len(params) else None
            index += 1
        if name is None:
            continue
        value = arg.value
        literal = number_literal(value)
        if literal is None and type(value) is cst.Name:
            literal = numbers.get(value.value)
        if literal is None and options[0] is not None and options[0].number(value, options[1]):
            literal = ctx.code(value)
        if literal is not None:
            out[name] = ("number", literal)
        elif type(value) is cst.Name and value.value in hybridized:
            out[name] = ("block", blocks[value.value])
    return out


def _check_call(
    ctx: FileContext,
    call: cst.Call,
    net: str,
    cls: str,
    numbers: dict[str, str],
    seeded: set[str] | None = None,
    via: str | None = None,
    seen: set[int] | None = None,
    options: tuple[NumberOptions | None, set[str]] = (None, set()),
) -> None:
    canonical = knowledge.canonical(cls)
    library = knowledge.is_library(cls)
    if library and canonical not in knowledge.HYBRID_BLOCK_CLASSES:
        return  # a library class not known to be a HybridBlock
    for arg in call.args:
        if arg.keyword is not None or arg.star:
            continue
        literal = number_literal(arg.value)
        held = _local_or_member(arg.value)
        if literal is None and held is not None:
            literal = numbers.get(held)
        kind = None
        if literal is None and options[0] is not None:
            kind = options[0].number(arg.value, options[1])
            if kind is not None:
                literal = ctx.code(arg.value)
        if literal is None:
            continue
        if seen is not None:
            if id(arg.value) in seen:
                return
            seen.add(id(arg.value))
        message = ScalarInputToHybridizedBlock.format(net=net, arg=ctx.code(arg.value), error=ERROR)
        if kind is not None:
            typed = f"`type={kind}`" if kind in ("int", "float") else "a number default"
            message = message.replace(
                "is a Python number passed",
                f"is a Python number (its command-line option has {typed}) passed",
                1,
            )
        if via is not None and seeded:
            if net in seeded:
                message = message.replace(
                    f"`{net}` is hybridized",
                    f"`{net}` is hybridized (in {via})"
                    if net.startswith("self.")
                    else f"`{net}` is hybridized (by {via}, which passes it here)",
                    1,
                )
            if held is not None and held in seeded:
                message = message.replace(
                    "is a Python number passed",
                    f"is a Python number (`{literal}` from {via}) passed",
                    1,
                )
        ctx.report(
            arg.value,
            ScalarInputToHybridizedBlock,
            message,
            requires=None if library else ("hybridized", cls),
        )
        return
