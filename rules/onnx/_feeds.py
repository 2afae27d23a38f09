"""What one file feeds to ONNX models with onnxruntime: each `session.run(...)` of an
`onnxruntime.InferenceSession(path)`, the path it loads, and the batch sizes of the arrays it
feeds, as far as the code spells them.

A batch size is known when an array is built with a literal leading dimension
(`np.zeros((8, 3, 224, 224))`, `np.random.rand(8, 3, 224, 224)`, `np.expand_dims(img, 0)`,
`img[np.newaxis]`, `.astype()`/`.asnumpy()` of such), the dimension being an integer, a name
bound once to one, or the variable of a `for` loop over literal integers or a literal `range`.
Everything else (a batch from a loader, an argument) is unknown and not counted. Files that
rewrite an ONNX file (`onnx.save(model, path)`) are listed too: a file written again after the
export may have had its input dimensions changed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst

from mxlint.checker import FileContext
from mxlint.rules.onnx._scopes import Scope, canonical, template

SESSIONS = frozenset({"onnxruntime.InferenceSession"})
ONNX_SAVES = frozenset({"onnx.save", "onnx.save_model"})
#: numpy functions whose first argument (or `shape=`) is the array's shape
_SHAPE_FIRST = frozenset(
    {
        "numpy.zeros",
        "numpy.ones",
        "numpy.empty",
        "numpy.full",
        "numpy.random.random",
        "numpy.random.random_sample",
        "numpy.random.sample",
        "numpy.random.ranf",
        "numpy.random.standard_normal",
        "mxnet.nd.zeros",
        "mxnet.nd.ones",
        "mxnet.nd.empty",
        "mxnet.nd.full",
    }
)
#: numpy functions taking the dimensions as separate arguments
_DIMS = frozenset({"numpy.random.rand", "numpy.random.randn"})
#: numpy functions whose shape is `size=` (or their third positional argument)
_SIZED = frozenset(
    {
        "numpy.random.uniform",
        "numpy.random.normal",
        "numpy.random.randint",
        "numpy.random.binomial",
        "numpy.random.poisson",
    }
)
#: methods that keep an array's leading dimension
_SAME_LEAD = frozenset({"astype", "copy", "asnumpy", "numpy"})


@dataclass(frozen=True)
class Feed:
    """One `session.run` whose fed arrays have known batch sizes."""

    path: str
    #: (row, column, end row, end column); (node index, 0, 0, 0) while the file is read
    span: tuple[int, int, int, int]
    #: the ONNX file the session loads (`_scopes.template`)
    model: str
    batches: tuple[int, ...]


class FeedReader:
    def __init__(self, ctx: FileContext, scopes: list[Scope], nodes: list[cst.CSTNode]) -> None:
        self.ctx = ctx
        self.scopes = scopes
        self.nodes = nodes

    def feeds(self) -> list[Feed]:
        out: list[Feed] = []
        for scope in self.scopes:
            for call, _cond in scope.calls:
                feed = self._feed(call, scope)
                if feed is not None:
                    out.append(feed)
        return out

    def saves(self) -> list[str]:
        """The paths the file writes ONNX models to with `onnx.save`."""
        out: list[str] = []
        for scope in self.scopes:
            for call, _cond in scope.calls:
                if canonical(self.ctx, call.func) in ONNX_SAVES and len(call.args) >= 2:
                    path = template(call.args[1].value, scope)
                    if path is not None:
                        out.append(path)
        return out

    def _feed(self, call: cst.Call, scope: Scope) -> Feed | None:
        func = call.func
        if type(func) is not cst.Attribute or func.attr.value != "run":
            return None
        model = self._session(func.value, scope)
        if model is None:
            return None
        given = [a for a in call.args if a.keyword is None][1:2] or [
            a for a in call.args if a.keyword is not None and a.keyword.value == "input_feed"
        ]
        if not given:
            return None
        feed = self._through(given[0].value, scope)
        if type(feed) is not cst.Dict:
            return None
        batches: set[int] = set()
        for element in feed.elements:
            if type(element) is not cst.DictElement:
                continue
            found = self._batches(element.value, scope, 0)
            if found:
                batches |= found
        if not batches:
            return None
        self.nodes.append(call)
        return Feed(self.ctx.path, (len(self.nodes) - 1, 0, 0, 0), model, tuple(sorted(batches)))

    def _session(self, node: cst.BaseExpression, scope: Scope) -> str | None:
        """The model path of the session `node` is, when it is an `InferenceSession`."""
        node = self._through(node, scope)
        if type(node) is not cst.Call or canonical(self.ctx, node.func) not in SESSIONS:
            return None
        arg = next(
            (a.value for a in node.args if a.keyword is None or a.keyword.value == "path_or_bytes"),
            None,
        )
        return template(arg, scope) if arg is not None else None

    def _through(self, node: cst.BaseExpression, scope: Scope) -> cst.BaseExpression:
        """A name bound once in its scope, read through to its value."""
        for _ in range(4):
            if type(node) is not cst.Name:
                return node
            bound = scope.single(node.value)
            if bound is None or bound[1] is not None:
                return node
            node = bound[0]
        return node

    # -- batch sizes ---------------------------------------------------------------------------

    def _batches(self, node: cst.BaseExpression, scope: Scope, depth: int) -> set[int] | None:
        """The leading dimensions an array expression can have; None when unknown."""
        if depth > 4:
            return None
        node = self._through(node, scope)
        if type(node) is cst.Subscript:
            first = node.slice[0].slice if node.slice else None
            index = first.value if type(first) is cst.Index else None
            if index is not None and (
                (type(index) is cst.Name and index.value == "None")
                or canonical(self.ctx, index) == "numpy.newaxis"
            ):
                return {1}
            return None
        if type(node) is not cst.Call:
            return None
        func = node.func
        name = canonical(self.ctx, func)
        if type(func) is cst.Attribute and func.attr.value in _SAME_LEAD and name is None:
            return self._batches(func.value, scope, depth + 1)  # `x.astype(np.float32)`
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        if name in _SHAPE_FIRST:
            shape = keywords.get("shape", positional[0] if positional else None)
            return self._lead(shape, scope) if shape is not None else None
        if name in _DIMS:
            return self._ints(positional[0], scope) if positional else None
        if name in _SIZED:
            size = keywords.get("size", positional[2] if len(positional) > 2 else None)
            return self._lead(size, scope) if size is not None else None
        if name == "numpy.expand_dims":
            axis = keywords.get("axis", positional[1] if len(positional) > 1 else None)
            return {1} if axis is not None and self._ints(axis, scope) == {0} else None
        return None

    def _lead(self, shape: cst.BaseExpression, scope: Scope) -> set[int] | None:
        shape = self._through(shape, scope)
        if type(shape) in (cst.Tuple, cst.List):
            elements = shape.elements  # type: ignore[attr-defined]
            if elements and type(elements[0]) is cst.Element:
                return self._ints(elements[0].value, scope)
        return None

    def _ints(self, node: cst.BaseExpression, scope: Scope) -> set[int] | None:
        """The integer values an expression takes: a literal, a name bound once to one, or
        the variable of `for` loops over literal integers."""
        value = _int(node)
        if value is not None:
            return {value}
        if type(node) is not cst.Name:
            return None
        bound = scope.single(node.value)
        if bound is not None and bound[1] is None:
            value = _int(bound[0])
            return {value} if value is not None else None
        return _loop_values(node.value, scope)


def _loop_values(name: str, scope: Scope) -> set[int] | None:
    """The values of a loop variable bound by `for` loops only, over literal integers."""
    where: Scope | None = scope
    while where is not None and name not in where.bindings and name not in where.params:
        where = where.parent
    if where is None or name in where.params:
        return None
    loops = where.loops.get(name, [])
    if not loops or len(loops) != len(where.bindings[name]):
        return None
    out: set[int] = set()
    for iterable in loops:
        values = _literal_ints(iterable)
        if values is None:
            return None
        out |= values
    return out


def _literal_ints(node: cst.BaseExpression) -> set[int] | None:
    if type(node) in (cst.Tuple, cst.List, cst.Set):
        values = [
            _int(el.value) if type(el) is cst.Element else None
            for el in node.elements  # type: ignore[attr-defined]
        ]
        return {v for v in values if v is not None} if None not in values and values else None
    if (
        type(node) is cst.Call
        and type(node.func) is cst.Name
        and node.func.value == "range"
        and 1 <= len(node.args) <= 3
        and all(a.keyword is None and not a.star for a in node.args)
    ):
        ends = [_int(a.value) for a in node.args]
        known = [b for b in ends if b is not None]
        if len(known) != len(ends):
            return None
        found = set(range(*known))
        return found if 0 < len(found) <= 4096 else None
    return None


def _int(node: cst.BaseExpression) -> int | None:
    if type(node) is cst.Integer:
        value = ast.literal_eval(node.value)
        return value if isinstance(value, int) else None
    return None
