"""MXL405 evaluation-in-record: finds evaluation work inside `with autograd.record():`: updates of
evaluation metrics (`mx.metric.*`/`mx.gluon.metric.*` objects), forward passes on validation or
test data (`net(val_data)`, `evaluate(net, val_loader)`, a loop over a validation loader, or a
record block in an `evaluate`/`validate`/`test` function), and readbacks of recorded values
(`.asscalar()`, `.asnumpy()`) passed to `print` or a logger.

The functions after the class decide and word its findings; the family's checker
(`rules/memory/checker.py`) runs them. Its tests are the
examples below (run by `tests/test_rule_examples.py`), `tests/test_memory.py` and
`tests/snapshots/MXL405.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.memory._analysis import _call_args, _chain_names, _Record
from mxlint.semantic.effects import Effects
from mxlint.walker import NESTED_SCOPES, iter_nodes

if TYPE_CHECKING:
    from mxlint.rules.memory.checker import RecordChecker


class EvaluationInRecord(Rule):
    code = "MXL405"
    name = "evaluation-in-record"
    runtime = Runtime("memory")
    message = "{what} inside `autograd.record()`: {why}; {advice}"
    what = """
        Finds evaluation work inside `with autograd.record():`: updates of evaluation metrics
        (`mx.metric.*`/`mx.gluon.metric.*` objects), forward passes on validation or test data
        (`net(val_data)`, `evaluate(net, val_loader)`, a loop over a validation loader, or a
        record block in an `evaluate`/`validate`/`test` function), and readbacks of recorded
        values (`.asscalar()`, `.asnumpy()`) passed to `print` or a logger. A helper of the
        file that calls `.update(labels, preds)` on the metric it is given
        (`log_stats(metric, y, out)`) updates that metric where it is called.
    """
    why = """
        Everything under `record()` is recorded for differentiation. Evaluation is never
        backpropagated, so its graph only costs memory and time; layers such as Dropout and
        BatchNorm also run in training mode there (dropping units, updating running
        statistics with validation data), so validation numbers are wrong. A readback inside
        the block stalls the pipeline before `backward()` is even queued. Forward passes whose
        result is backpropagated (adversarial examples, saliency maps on test images) are not
        reported, nor an evaluation helper (of this file or another) that runs its forward
        passes under `autograd.pause()`/`predict_mode()`, nor a metric update that follows
        `backward()` in the block (moving it would change nothing).
    """
    example = """
        for data, label in train_data:
            with autograd.record():
                out = net(data)
                loss = loss_fn(out, label)
                metric.update([label], [out])
                val_out = net(val_data)
            loss.backward()
            trainer.step(batch_size)
    """
    use_instead = """
        for data, label in train_data:
            with autograd.record():
                out = net(data)
                loss = loss_fn(out, label)
            loss.backward()
            trainer.step(batch_size)
            metric.update([label], [out])
        val_out = net(val_data)  # not recording: inference mode
    """
    fix_safety = """
        No automatic fix: moving statements out of the block changes what is recorded, and
        validation usually belongs in its own loop.
    """
    invalid = (
        Example(
            """
import mxnet as mx
from mxnet import autograd

def train(net, loss_fn, trainer, loader):
    metric = mx.metric.Accuracy()
    for data, label in loader:
        with autograd.record():
            out = net(data)
            loss = loss_fn(out, label)
            metric.update([label], [out])
        loss.backward()
        trainer.step(data.shape[0])
""",
            line=11,
        ),
        Example(
            """
from mxnet import autograd

def train(net, loss_fn, trainer, train_data, val_x, val_y):
    for x, y in train_data:
        with autograd.record():
            loss = loss_fn(net(x), y)
            val_loss = loss_fn(net(val_x), val_y)
        loss.backward()
        trainer.step(x.shape[0])
""",
            line=8,
        ),
        Example(
            """
from mxnet import autograd

def train(net, loss_fn, trainer, loader):
    for i, (x, y) in enumerate(loader):
        with autograd.record():
            loss = loss_fn(net(x), y)
            print(i, loss.mean().asscalar())
        loss.backward()
        trainer.step(x.shape[0])
""",
            line=8,
        ),
    )
    valid = (
        Valid("""
import mxnet as mx
from mxnet import autograd

def train(net, loss_fn, trainer, loader, val_x):
    metric = mx.gluon.metric.Accuracy()
    for data, label in loader:
        with autograd.record():
            out = net(data)
            loss = loss_fn(out, label)
        loss.backward()
        trainer.step(data.shape[0])
        metric.update([label], [out])
    print(metric.get(), net(val_x).mean().asscalar())
"""),
        Valid("""
from mxnet import autograd

def adversarial(net, loss_fn, x_test, y_test, eps):
    x_test.attach_grad()
    with autograd.record():
        loss = loss_fn(net(x_test), y_test)
    loss.backward()
    return x_test + eps * x_test.grad.sign()
"""),
        Valid("""
import mxnet as mx

def train(model, loss_fn, trainer, loader):
    total = 0.0
    for tokens, valid_length, label in loader:
        with mx.autograd.record():
            loss = loss_fn(model(tokens, valid_length), label).mean()
            total += loss.asscalar()
        loss.backward()
        trainer.step(1)
"""),
        Valid("""
from mxnet import autograd

def train(net, loss_fn, trainer, train_data, val_data, evaluate):
    for x, y in train_data:
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
        print(loss.mean().asscalar())
    return evaluate(net, val_data)
"""),
        # The evaluation helper pauses recording (inference mode) around its forward passes,
        # and the metric update follows backward(): nothing more is recorded.
        Valid("""
import mxnet as mx
from mxnet import autograd

def evaluate(net, val_data):
    with autograd.pause(train_mode=False):
        return [net(x) for x, _ in val_data]

def train(net, loss_fn, trainer, loader, val_data, metric):
    for data, label in loader:
        with autograd.record():
            out = net(data)
            loss = loss_fn(out, label)
            loss.backward()
            metric.update([label], [out])
            evaluate(net, val_data)
        trainer.step(data.shape[0])
"""),
    )


def check_evaluation(
    checker: RecordChecker, rec: _Record, call: cst.Call, stmt: cst.CSTNode
) -> None:
    func = call.func

    def quoted() -> str:
        """The call as the message quotes it: generated only for a finding (a recording block
        holds tens of calls that are not one)."""
        code = rec.ctx.code(call).strip()
        return code if len(code) <= 60 else code[:57] + "..."

    if (
        type(func) is cst.Attribute
        and func.attr.value == "update"
        and checker._is_metric(rec, func.value, call)
    ):
        if _after_backward(rec, stmt):
            # The graph was already handed to backward(): moving the update out of the block
            # changes nothing.
            return
        checker._report(
            call,
            EvaluationInRecord,
            what=f"`{quoted()}` updates an evaluation metric",
            why="it reads the outputs back (a sync) and any operator it runs is "
            "recorded into a graph that is never backpropagated",
            advice="move it after the `with` block, next to `trainer.step()`",
        )
        return
    updated = _metric_updated_by_helper(checker, rec, call)
    if updated is not None:
        if not _after_backward(rec, stmt):
            checker._report(
                call,
                EvaluationInRecord,
                what=f"`{quoted()}` updates the evaluation metric `{updated}` (the helper calls "
                f"`{updated}.update(...)`)",
                why="it reads the outputs back (a sync) and any operator it runs is "
                "recorded into a graph that is never backpropagated",
                advice="call it after the `with` block, next to `trainer.step()`",
            )
        return
    if checker._is_logging(call):
        if any(rec.readback(a) for a in _call_args(call)):
            checker._report(
                call,
                EvaluationInRecord,
                what=f"`{quoted()}` reads a recorded value back for logging",
                why="it blocks until the forward pass has run, before "
                "`backward()` is even queued, and records the reductions "
                "it logs",
                advice="log after the `with` block (after `backward()`)",
            )
        return
    if rec.predict or stmt in checker._evaluated or not rec.forward_like(call):
        return
    args = _call_args(call)
    if any(rec.graph_expr(a) for a in args):
        return
    validation = [a for a in args if rec.scope.is_validation(a)]
    if not validation and not (rec.eval_function and args):
        return
    if rec.scope.feeds_backward(stmt):
        return
    if any(rec.scope.attaches_grad(n) for a in validation for n in _chain_names(a)):
        return
    effects = rec.ctx.effects.of_call(call)
    if isinstance(effects, Effects) and effects.inference:
        return  # the helper pauses recording around its forward passes
    checker._evaluated.add(stmt)
    what = (
        f"`{quoted()}` runs the network on validation data"
        if validation
        else f"`{quoted()}` runs the network in an evaluation function"
    )
    checker._report(
        call,
        EvaluationInRecord,
        requires=("records", effects) if isinstance(effects, str) else None,
        what=what,
        why="its graph is recorded but never backpropagated (memory, time) and "
        "Dropout/BatchNorm run in training mode",
        advice="run it outside `autograd.record()` (after the `with` block, in "
        "its own loop; Gluon layers default to inference mode there, or "
        "use `autograd.predict_mode()`)",
    )


def _metric_updated_by_helper(checker: RecordChecker, rec: _Record, call: cst.Call) -> str | None:
    """The metric a call of a helper of this file updates (`log_stats(metric, y, out)`, where
    the helper calls `metric.update(y, out)` on that parameter), as the call spells it."""
    cls = checker.ctx.enclosing_class()
    effects = rec.ctx.effects.of_call(call, cls.name.value if cls is not None else None)
    if not isinstance(effects, Effects) or not effects.updates_metric:
        return None
    positional = list(effects.params)
    if type(call.func) is cst.Attribute:
        positional = positional[1:]  # `self.log_stats(...)`: `self` is bound
    index = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            name = arg.keyword.value
        else:
            name = positional[index] if index < len(positional) else ""
            index += 1
        if name in effects.updates_metric and checker._metric_object(rec, arg.value):
            return rec.ctx.code(arg.value).strip()
    return None


def _after_backward(rec: _Record, stmt: cst.CSTNode) -> bool:
    """A statement of the record block that follows a `backward()` call in the block itself
    (not inside a loop of it, whose next iteration records again)."""
    body = rec.with_node.body
    if type(body) is not cst.IndentedBlock:
        return False
    for top in body.body:
        if stmt is top or stmt in set(iter_nodes(top, stop=NESTED_SCOPES)):
            return False
        if isinstance(top, (cst.For, cst.While)):
            continue
        for node in iter_nodes(top, stop=NESTED_SCOPES):
            if (
                type(node) is cst.Call
                and type(node.func) is cst.Attribute
                and node.func.attr.value == "backward"
            ):
                return True
    return False
