"""MXL305 shuffled-evaluation-loader: finds an evaluation data loader (named for validation or
test data) that shuffles and drops or rolls over its last incomplete batch, so that every
evaluation scores a different subset of the data.

The function after the class decides and words its findings; the family's
`EvaluationLoaderChecker` (`rules/reproducibility/checker.py`) runs it. Its tests are the
examples below (run by `tests/test_rule_examples.py`), `tests/test_reproducibility.py` and
`tests/snapshots/MXL305.txt`.
"""

from __future__ import annotations

import re

import libcst as cst

from mxlint import knowledge
from mxlint.checker import FileContext, FixSpec, NodeEdit
from mxlint.names import dotted_name
from mxlint.rule import Example, Rule, Runtime, Valid


class ShuffledEvaluationLoader(Rule):
    code = "MXL305"
    name = "shuffled-evaluation-loader"
    runtime = Runtime("seed")
    message = (
        "`{what}` shuffles evaluation data and {drops}: each evaluation scores a different "
        "subset, so the metric changes from run to run (and from epoch to epoch) with nothing "
        "learned; pass `shuffle=False` and keep the last batch"
    )
    what = """
        Finds a data loader for evaluation (`DataLoader`, `mx.io.NDArrayIter`, `ImageIter`
        whose target or dataset is named for validation or test data, `val_loader`,
        `test_iter`, `DataLoader(val_set, ...)`) that shuffles and drops the last incomplete
        batch (`last_batch="discard"`) or rolls it over into the next pass
        (`last_batch="rollover"`, `last_batch_handle="roll_over"`).
    """
    why = """
        Shuffling alone does not change an evaluation metric: every sample is scored once.
        Together with dropping or rolling over the last batch, the samples left out are drawn
        anew on every pass, so two evaluations of the same weights disagree and a model
        selected on the best validation score is partly selected on luck. Seeding the
        generator only makes the subset repeatable, not complete.
    """
    example = """
        val_loader = gluon.data.DataLoader(
            val_set, batch_size=64, shuffle=True, last_batch="discard"
        )
    """
    use_instead = """
        val_loader = gluon.data.DataLoader(val_set, batch_size=64, shuffle=False)
    """
    fix_safety = """
        The fix sets `shuffle=False` and is unsafe: the loader then yields its samples in
        order (and the `last_batch` setting still drops the tail), which may matter to code
        that expected a random order.
    """

    invalid = (
        Example(
            """from mxnet import gluon

val_loader = gluon.data.DataLoader(
    val_set, batch_size=64, shuffle=True, last_batch="discard"
)
score(net, val_loader)
""",
            line=4,
            expected_fix="""from mxnet import gluon

val_loader = gluon.data.DataLoader(
    val_set, batch_size=64, shuffle=False, last_batch="discard"
)
score(net, val_loader)
""",
        ),
        Example(
            """import mxnet as mx


def loaders(x, y, batch_size):
    test_iter = mx.io.NDArrayIter(x, y, batch_size, shuffle=True, last_batch_handle="roll_over")
    return test_iter
""",
            line=5,
        ),
        Example(
            """from mxnet.gluon.data import DataLoader

loader = DataLoader(valid_dataset, 32, True, last_batch="rollover")
print(evaluate(loader))
""",
            line=3,
        ),
    )
    valid = (
        # Every sample is scored: the order does not change the metric.
        """from mxnet import gluon

val_loader = gluon.data.DataLoader(val_set, batch_size=64, shuffle=True)
""",
        # Training data may be shuffled and its tail dropped.
        """from mxnet import gluon

train_loader = gluon.data.DataLoader(
    train_set, batch_size=64, shuffle=True, last_batch="discard"
)
""",
        """from mxnet import gluon

val_loader = gluon.data.DataLoader(
    val_set, batch_size=64, shuffle=False, last_batch="discard"
)
""",
        # Built and never used (a notebook's leftover): nothing is evaluated with it.
        """from mxnet import gluon

test_data = gluon.data.DataLoader(test_set, 64, shuffle=True, last_batch="rollover")
""",
        # A flag decides: nothing is known here.
        """from mxnet import gluon


def loader(dataset, shuffle):
    return gluon.data.DataLoader(dataset, 64, shuffle=shuffle, last_batch="discard")
""",
        # A validation split of the training data, named for what it is used for: training.
        Valid("""from mxnet import gluon

train_loader = gluon.data.DataLoader(
    train_val_set, batch_size=64, shuffle=True, last_batch="rollover"
)
"""),
    )


#: Loader -> (position of `shuffle`, keyword of the last-batch policy, values that drop or roll).
_LOADERS: dict[str, tuple[int, str, frozenset[str]]] = {
    knowledge.DATALOADER: (2, "last_batch", frozenset({"discard", "rollover"})),
    "mxnet.io.NDArrayIter": (
        3,
        "last_batch_handle",
        frozenset({"discard", "roll_over"}),
    ),
}
_EVALUATION = re.compile(r"(?:^|_)(?:val|valid|validation|test|eval|evaluation|dev)(?:_|$)")
_TRAINING = re.compile(r"(?:^|_)train(?:ing)?(?:_|$)")


def _named_for_evaluation(name: str | None) -> bool:
    if not name:
        return False
    leaf = re.sub(r"([a-z])([A-Z])", r"\1_\2", name.rsplit(".", 1)[-1]).lower()
    return bool(_EVALUATION.search(leaf)) and not _TRAINING.search(leaf)


def _argument(call: cst.Call, keyword: str, position: int) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[position] if len(positional) > position else None


def evaluation_subset(
    ctx: FileContext, call: cst.Call, target: str | None
) -> tuple[cst.BaseExpression, str, str] | None:
    """(the `shuffle=True` value, the loader as quoted, what it does with the last batch) when
    `call` builds a shuffling evaluation loader that drops or rolls over; else None."""
    name = ctx.resolve(call.func)
    spec = _LOADERS.get(knowledge.canonical(name)) if name else None
    if spec is None:
        return None
    position, keyword, dropping = spec
    shuffle = _argument(call, "shuffle", position)
    if shuffle is None or not (type(shuffle.value) is cst.Name and shuffle.value.value == "True"):
        return None
    policy = _argument(call, keyword, 99)
    if policy is None or type(policy.value) is not cst.SimpleString:
        return None
    value = policy.value.evaluated_value
    if value not in dropping:
        return None
    data = call.args[0].value if call.args and call.args[0].keyword is None else None
    if not (
        _named_for_evaluation(target) or _named_for_evaluation(dotted_name(data) if data else None)
    ):
        return None
    if target is not None and "." not in target:
        uses = re.findall(rf"(?<![\w.]){re.escape(target)}\b", ctx.source)
        if len(uses) < 2:
            return None  # built and never used: nothing is evaluated with it
    drops = (
        "drops its last incomplete batch"
        if value == "discard"
        else "rolls its last batch over into the next pass"
    )
    return shuffle.value, f"{ctx.code(call.func)}(shuffle=True, {keyword}={value!r})", drops


def check_loader(ctx: FileContext, call: cst.Call, target: str | None) -> None:
    """Report `call` if it builds a shuffling evaluation loader that drops or rolls over."""
    found = evaluation_subset(ctx, call, target)
    if found is None:
        return
    shuffle, what, drops = found
    ctx.report(
        shuffle,
        ShuffledEvaluationLoader,
        ShuffledEvaluationLoader.format(what=what, drops=drops),
        fix=FixSpec("unsafe", "Set `shuffle=False`", (NodeEdit(shuffle, "False"),)),
    )
