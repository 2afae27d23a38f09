"""MXL305 shuffled-evaluation-loader: finds an evaluation data loader (named for validation or
test data) that shuffles and drops or rolls over its last incomplete batch, so that every
evaluation scores a different subset of the data.

The function after the class words its findings; what decides them, `evaluation_subset`, is in
`rules/reproducibility/_analysis.py` (MXL301 reads it too, to leave such a loader to this rule);
the family's `EvaluationLoaderChecker` (`rules/reproducibility/checker.py`) runs it. Its tests are the
examples below (run by `tests/test_rule_examples.py`), `tests/test_reproducibility.py` and
`tests/snapshots/MXL305.txt`.
"""

from __future__ import annotations

import libcst as cst

from mxlint.checker import FileContext, FixSpec, NodeEdit
from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.reproducibility._analysis import evaluation_subset
from mxlint.walker import NESTED_SCOPES, iter_nodes


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
        Finds a data loader for evaluation (`DataLoader`, `mx.io.NDArrayIter`) whose target or
        dataset is named for validation or test data (`val_loader`, `test_iter`,
        `DataLoader(val_set, ...)`) and that shuffles and drops the last incomplete batch
        (`last_batch="discard"`) or rolls it over into the next pass (`last_batch="rollover"`,
        `last_batch_handle="roll_over"`). Also a loader a function of the file builds from its
        parameters, at a call that passes `True` for the shuffle and evaluation data
        (`val_loader = make_loader(val_set, 64, True)`).
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


def check_built_loader(
    ctx: FileContext, site: cst.Call, builder: cst.FunctionDef, target: str | None
) -> None:
    """Report the `True` a call of a loader factory of the file passes (`make_loader(val_set,
    64, True)`) when the loader the factory builds with what the call gives it is a shuffling
    evaluation loader that drops or rolls over its tail."""
    params = [p.name.value for p in (*builder.params.posonly_params, *builder.params.params)]
    bound: dict[str, cst.BaseExpression] = {}
    for index, arg in enumerate(site.args):
        if arg.star:
            return
        if arg.keyword is not None:
            bound[arg.keyword.value] = arg.value
        elif index < len(params):
            bound[params[index]] = arg.value
    for param in (*builder.params.params, *builder.params.kwonly_params):
        if param.name.value not in bound and param.default is not None:
            bound[param.name.value] = param.default
    for node in iter_nodes(builder.body, stop=NESTED_SCOPES):
        if type(node) is not cst.Call:
            continue
        found = evaluation_subset(ctx, node, target, bound)
        if found is None:
            continue
        shuffle, what, drops = found
        if not any(shuffle is arg.value for arg in site.args):
            continue  # the factory's own `shuffle=True`: reported where it is written
        ctx.report(
            shuffle,
            ShuffledEvaluationLoader,
            ShuffledEvaluationLoader.format(what=what, drops=drops).replace(
                "shuffles evaluation data",
                f"(built by `{builder.name.value}()`) shuffles evaluation data",
                1,
            ),
            fix=FixSpec("unsafe", "Pass `False`", (NodeEdit(shuffle, "False"),)),
        )
        return
