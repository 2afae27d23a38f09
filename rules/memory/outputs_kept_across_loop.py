"""MXL406 outputs-kept-across-loop: finds a network's output on its device appended, batch after
batch, to a list created before a data loop (`preds.append(net(x))`, then `nd.concat(*preds)`
after the epoch) in a loop that does synchronise: memory grows with the number of batches.

The functions after the class decide and word its findings; the family's checker
(`rules/memory/checker.py`) runs them. Its tests are the examples below (run by
`tests/test_rule_examples.py`), `tests/test_memory.py` and `tests/snapshots/MXL406.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mxlint.names import dotted_name, names_a_network
from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.walker import NESTED_SCOPES, iter_nodes

if TYPE_CHECKING:
    from mxlint.rules.memory.checker import MemoryChecker


class OutputsKeptAcrossLoop(Rule):
    code = "MXL406"
    name = "outputs-kept-across-loop"
    runtime = Runtime("memory", per_batch=True)
    message = (
        "`{target}` keeps every batch's output `{value}` on its device until the loop ends: "
        "memory grows with the number of batches however often the loop synchronises; keep a "
        "host copy (`{target}.append({value}.asnumpy())`) or reduce each batch as it comes (a "
        "metric update)"
    )
    what = """
        Finds the output of a network (`out = net(x)`, `self.model(x)`, `net.forward(x)`, a map
        of it the same size such as `out.softmax()`, or the list of outputs of a batch split
        across devices) added to a container created before a loop over batches of a data
        pipeline (`preds.append(out)`, `preds.extend(outs)`, `preds += [out]`, `preds[i] = out`
        under the loop's own index, `self.outputs.append(out)`), where the loop synchronises
        with the engine (so MXL401, which is about the engine running ahead, does not apply)
        and the container is neither re-created nor emptied in the loop. Outputs kept inside
        `autograd.record()` are MXL402's.
    """
    why = """
        Each output is an NDArray on the network's context (a GPU, usually) holding a batch of
        predictions. Kept in a list, none is freed before the loop ends, so device memory grows
        with the dataset: an evaluation that passes on a small validation set runs out of memory
        on the full test set. Synchronising (a metric update, `.asscalar()`) bounds how far the
        engine runs ahead, not what the list keeps.
    """
    example = """
        preds = []
        for data, label in val_loader:
            out = net(data.as_in_context(ctx))
            metric.update(label, out)
            preds.append(out)
        scores = nd.concat(*preds, dim=0)
    """
    use_instead = """
        preds = []
        for data, label in val_loader:
            out = net(data.as_in_context(ctx))
            metric.update(label, out)
            preds.append(out.asnumpy())
        scores = np.concatenate(preds, axis=0)
    """
    fix_safety = """
        No automatic fix: whether the kept values can be NumPy arrays depends on what the code
        does with them after the loop.
    """
    invalid = (
        Example(
            """
from mxnet import nd

def predict(net, val_loader, metric):
    preds = []
    for data, label in val_loader:
        out = net(data)
        metric.update(label, out)
        preds.append(out)
    return nd.concat(*preds, dim=0)
""",
            line=9,
        ),
        Example(
            """
import mxnet as mx

def embed(model, test_data):
    feats = []
    for batch in test_data:
        feats.append(model(batch))
        print(len(feats), feats[-1].sum().asscalar())
    return mx.nd.concat(*feats, dim=0)
""",
            line=7,
        ),
    )
    valid = (
        # A host copy per batch.
        Valid("""
import numpy as np
from mxnet import nd

def predict(net, val_loader, metric):
    preds = []
    for data, label in val_loader:
        out = net(data)
        metric.update(label, out)
        preds.append(out.asnumpy())
    return np.concatenate(preds)
"""),
        # A new list each batch (the multi-device idiom).
        Valid("""
from mxnet import gluon

def evaluate(net, val_data, ctx, metric):
    for batch in val_data:
        data = gluon.utils.split_and_load(batch[0], ctx)
        outputs = []
        for x in data:
            outputs.append(net(x))
        metric.update(batch[1], outputs)
"""),
        # A bounded buffer: emptied in the loop.
        Valid("""
from mxnet import nd

def smooth(net, val_loader, metric):
    window = []
    for data, label in val_loader:
        out = net(data)
        metric.update(label, out)
        window.append(out)
        if len(window) > 4:
            window.pop(0)
    return nd.stack(*window)
"""),
        # Losses are MXL401's and MXL402's business; a scalar per batch is not an output.
        Valid("""
from mxnet import nd

def validate(net, loss_fn, val_loader):
    losses = []
    for data, label in val_loader:
        loss = loss_fn(net(data), label)
        losses.append(loss.mean().asscalar())
        nd.waitall()
    return sum(losses) / len(losses)
"""),
    )


#: List methods that take elements out (a bounded buffer).
_EMPTYING = frozenset({"pop", "clear", "remove", "popleft"})


#: Methods whose result is the output's size again (still a batch on the device).
_PER_SAMPLE = frozenset(
    {
        "softmax",
        "log_softmax",
        "sigmoid",
        "astype",
        "reshape",
        "squeeze",
        "flatten",
        "transpose",
        "expand_dims",
        "detach",
        "copy",
        "exp",
        "clip",
    }
)


def check_kept_outputs(checker: MemoryChecker, loop: cst.For) -> None:
    """MXL406 on one synchronising data loop."""
    outputs = _network_outputs(loop)
    emptied = _emptied(loop)
    rebound = _rebound(loop)
    counters = {n.value for n in iter_nodes(loop.target) if type(n) is cst.Name}
    for node in checker._direct_statements(loop):
        if node in checker._record_nodes:
            continue
        found = _kept(node, rebound, counters)
        if found is None:
            continue
        target, value = found
        if target in emptied or not _output(value, outputs):
            continue
        code = checker.ctx.code(value).strip()
        if "\n" in code or len(code) > 30:
            code = "out"
        message = OutputsKeptAcrossLoop.format(target=target, value=code)
        if _extends(node):
            message = message.replace(
                f"`{target}.append({code}.asnumpy())`",
                f"`{target}.extend(o.asnumpy() for o in {code})`",
            )
        checker.ctx.report(
            node,
            OutputsKeptAcrossLoop,
            message,
            data={"function": checker.ctx.symbol() or "<module>", "loop_line": 0},
        )


def _extends(node: cst.CSTNode) -> bool:
    return (
        type(node) is cst.Expr
        and type(node.value) is cst.Call
        and type(node.value.func) is cst.Attribute
        and node.value.func.attr.value == "extend"
    )


def _kept(
    node: cst.CSTNode, rebound: set[str], counters: set[str]
) -> tuple[str, cst.BaseExpression] | None:
    """(container, value) for a statement that adds a value to a container the loop does not
    re-create: `preds.append(v)`, `preds.extend(vs)`, `self.outputs.append(v)`, `preds += [v]`,
    `preds[i] = v` (`i` one of the loop's own variables, a new key each batch)."""
    if type(node) is cst.Expr and type(node.value) is cst.Call:
        call = node.value
        func = call.func
        if (
            type(func) is cst.Attribute
            and func.attr.value in ("append", "extend")
            and len(call.args) == 1
            and call.args[0].keyword is None
            and not call.args[0].star
        ):
            target = dotted_name(func.value)
            if target is not None and target not in rebound:
                return target, call.args[0].value
        return None
    if (
        type(node) is cst.AugAssign
        and type(node.operator) is cst.AddAssign
        and type(node.target) is cst.Name
        and node.target.value not in rebound
        and type(node.value) is cst.List
        and len(node.value.elements) == 1
        and type(node.value.elements[0]) is cst.Element
    ):
        return node.target.value, node.value.elements[0].value
    if type(node) is cst.Assign and len(node.targets) == 1:
        store = node.targets[0].target
        if (
            type(store) is cst.Subscript
            and type(store.value) is cst.Name
            and store.value.value not in rebound
            and len(store.slice) == 1
            and type(store.slice[0].slice) is cst.Index
            and type(store.slice[0].slice.value) is cst.Name
            and store.slice[0].slice.value.value in counters
        ):
            return store.value.value, node.value
    return None


def _output(value: cst.BaseExpression, outputs: set[str]) -> bool:
    """A network's output, a per-sample map of one (`out.softmax()`), or a list of them."""
    if type(value) is cst.Name:
        return value.value in outputs
    if _runs_network(value):
        return True
    if (
        type(value) is cst.Call
        and type(value.func) is cst.Attribute
        and value.func.attr.value in _PER_SAMPLE
    ):
        return _output(value.func.value, outputs)
    if type(value) is cst.ListComp:
        return _output(value.elt, outputs)
    return False


def _runs_network(value: cst.BaseExpression) -> bool:
    """`net(x)`, `self.model(x)`, `net.forward(x)`: a network called on data."""
    if type(value) is not cst.Call:
        return False
    func = value.func
    if type(func) is cst.Attribute and func.attr.value == "forward":
        func = func.value
    key = dotted_name(func)
    return key is not None and names_a_network(key)


def _mapped(value: cst.BaseExpression) -> cst.BaseExpression:
    """What a chain of same-size maps is applied to (`net(x).sigmoid()` → `net(x)`)."""
    while (
        type(value) is cst.Call
        and type(value.func) is cst.Attribute
        and value.func.attr.value in _PER_SAMPLE
    ):
        value = value.func.value
    return value


def _network_outputs(loop: cst.For) -> set[str]:
    """Names the loop binds only to a network's output (or a list of outputs, one per slice
    of a batch split across devices)."""
    bound: dict[str, bool] = {}
    for node in iter_nodes(loop.body, stop=NESTED_SCOPES):
        if type(node) is cst.Assign:
            for target in node.targets:
                if type(target.target) is cst.Name:
                    name = target.target.value
                    bound[name] = bound.get(name, True) and (
                        _runs_network(_mapped(node.value))
                        or (
                            type(node.value) is cst.ListComp
                            and _runs_network(_mapped(node.value.elt))
                        )
                    )
        elif type(node) in (cst.AugAssign, cst.AnnAssign, cst.For):
            for inner in iter_nodes(node.target):  # type: ignore[attr-defined]
                if type(inner) is cst.Name:
                    bound[inner.value] = False
    return {name for name, only in bound.items() if only}


def _rebound(loop: cst.For) -> set[str]:
    """Names (and `self.` members) the loop binds anew (`preds = []` per batch): what it keeps
    in them lives one batch."""
    out: set[str] = set()
    for node in iter_nodes(loop.body, stop=NESTED_SCOPES):
        targets: list[cst.BaseExpression] = []
        if type(node) is cst.Assign:
            targets = [t.target for t in node.targets]
        elif type(node) in (cst.AnnAssign, cst.For):
            targets = [node.target]  # type: ignore[attr-defined]
        elif type(node) is cst.CompFor:
            targets = [node.target]
        while targets:
            target = targets.pop()
            if isinstance(target, (cst.Tuple, cst.List)):
                targets.extend(e.value for e in target.elements)
            elif type(target) is cst.StarredElement:
                targets.append(target.value)
            elif type(target) in (cst.Name, cst.Attribute):
                key = dotted_name(target)
                if key is not None:
                    out.add(key)
    return out


def _emptied(loop: cst.For) -> set[str]:
    """Lists the loop takes elements out of (`buf.pop(0)`, `buf.clear()`, `del buf[:]`)."""
    out: set[str] = set()
    for node in iter_nodes(loop.body, stop=NESTED_SCOPES):
        if (
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and node.func.attr.value in _EMPTYING
            and type(node.func.value) is cst.Name
        ):
            out.add(node.func.value.value)
        elif type(node) is cst.Del:
            for inner in iter_nodes(node.target):
                if type(inner) is cst.Name:
                    out.add(inner.value)
    return out
