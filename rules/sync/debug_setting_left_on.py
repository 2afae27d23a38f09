"""MXL606 debug-setting-left-on: finds MXNet debugging switches (`MXNET_ENGINE_TYPE=NaiveEngine`,
`MXNET_EXEC_VERBOSE`, verbose engine or executor logging, the profiler started from the
environment, oneDNN result checking) that a training entry point always sets: in its code
(`os.environ`), its Docker image (`ENV`) or its launch script (`export`).

The functions after the class decide and word its findings; the environment checkers
(`rules/versions/environment.py`) run them on Python files, Dockerfiles and shell scripts. Its
tests are the examples below (run by `tests/test_rule_examples.py`), `tests/test_sync.py` and
`tests/snapshots/MXL606.txt`.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from mxlint.rule import Example, Rule, Runtime, Valid


class DebugSettingLeftOn(Rule):
    code = "MXL606"
    name = "debug-setting-left-on"
    message = (
        "`{setting}` is a debugging setting left on for training: {effect}; remove it, or set "
        "it only behind a debug flag"
    )
    runtime = Runtime("engine")
    what = """
        Finds MXNet debugging switches that a training entry point always sets:
        `MXNET_ENGINE_TYPE=NaiveEngine`, `MXNET_EXEC_VERBOSE`/`MXNET_EXEC_VERBOSE_LOGGING`,
        `MXNET_ENGINE_INFO`, `MXNET_PROFILER_AUTOSTART` and `MXNET_MKLDNN_DEBUG` — written in
        the program (`os.environ[...] = ...`, `os.environ.setdefault`, `os.putenv`), in its
        Docker image (`ENV` of the final stage) or in the shell script that launches it
        (`export NAME=value`, `NAME=value python train.py`). A setting behind a condition (an
        `if` on a debug flag, `[ -n "$DEBUG" ] && export ...`, a `case` branch, a function) is
        not reported, nor one in tests, in a script that runs a test runner (`python -m pytest`),
        or in a script, program or Dockerfile whose name says debug, profile, test or benchmark. A Python file is judged when it is a program that
        trains (`backward()`, `trainer.step()`, `fit()`).
    """
    why = """
        These switches exist to debug MXNet, and each costs a production run: `NaiveEngine`
        executes every operator synchronously on the Python thread, so data loading, Python
        and device work no longer overlap (MXNet's own docs: "Remember to set
        MXNET_ENGINE_TYPE back to empty after debugging"); `MXNET_EXEC_VERBOSE_LOGGING` and
        `MXNET_ENGINE_INFO` log every executor plan or operator; `MXNET_PROFILER_AUTOSTART`
        keeps every operator event in memory for the whole run and writes them only at exit;
        `MXNET_MKLDNN_DEBUG` checks each oneDNN result against the reference implementation.
        `MXNET_EXEC_VERBOSE` is not read by MXNet 1.9.1 at all (the executor's switch is
        `MXNET_EXEC_VERBOSE_LOGGING`): a leftover that only misleads.
    """
    example = """
        import os
        os.environ["MXNET_ENGINE_TYPE"] = "NaiveEngine"

        def main():
            ...
            loss.backward()
            trainer.step(batch_size)
    """
    use_instead = """
        import os
        if args.debug:
            os.environ["MXNET_ENGINE_TYPE"] = "NaiveEngine"

        def main():
            ...
            loss.backward()
            trainer.step(batch_size)
    """
    fix_safety = """
        In Python, the fix deletes the assignment (or replaces it with `pass` when it is the
        only statement of its block), and `--fix` removes an `import os` it leaves unused. It is unsafe: the setting may have been left on purpose
        (to work around a race in a custom operator). Dockerfiles and shell scripts get no
        fix. `--verify` times the training loop with the setting and without it (the fix
        applied), on the threaded engine, after checking that both give the same losses.
    """
    fixable = "unsafe"
    invalid = (
        Example(
            """
import os
import mxnet as mx
from mxnet import autograd, gluon

os.environ["MXNET_ENGINE_TYPE"] = "NaiveEngine"


def main():
    net = gluon.nn.Dense(1)
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd")
    for data, label in gluon.data.DataLoader(gluon.data.ArrayDataset([1.0], [1.0]), 1):
        with autograd.record():
            loss = (net(data) - label) ** 2
        loss.backward()
        trainer.step(1)


if __name__ == "__main__":
    main()
""",
            line=6,
            filename="train.py",
            expected_fix="""
import mxnet as mx
from mxnet import autograd, gluon



def main():
    net = gluon.nn.Dense(1)
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd")
    for data, label in gluon.data.DataLoader(gluon.data.ArrayDataset([1.0], [1.0]), 1):
        with autograd.record():
            loss = (net(data) - label) ** 2
        loss.backward()
        trainer.step(1)


if __name__ == "__main__":
    main()
""",
        ),
        Example(
            """
import os
import mxnet as mx


def main(args):
    os.environ.setdefault("MXNET_EXEC_VERBOSE", "1")
    mod = mx.mod.Module(mx.sym.var("data"))
    mod.fit(args.train_iter, num_epoch=args.epochs)


if __name__ == "__main__":
    main(parse_args())
""",
            line=7,
            filename="train.py",
        ),
    )
    valid = (
        Valid(
            """
import os
import mxnet as mx
from mxnet import autograd


def main(args):
    if args.debug:
        os.environ["MXNET_ENGINE_TYPE"] = "NaiveEngine"
    for data, label in args.loader:
        with autograd.record():
            loss = args.net(data)
        loss.backward()
        args.trainer.step(1)


if __name__ == "__main__":
    main(parse_args())
""",
            filename="train.py",
        ),
        Valid(
            """
import os
os.environ["MXNET_ENGINE_TYPE"] = "NaiveEngine"
import mxnet as mx


def test_custom_op_is_deterministic():
    out = mx.nd.ones((2, 2)) * 2
    assert out.sum().asscalar() == 8
""",
            filename="tests/test_custom_op.py",
        ),
        Valid(
            """
import os
os.environ["MXNET_ENGINE_TYPE"] = "NaiveEngine"
from mxnet import autograd


def main(net, loss_fn, trainer, loader):
    for data, label in loader:
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(data.shape[0])


if __name__ == "__main__":
    main(*build())
""",
            filename="debug_train.py",
        ),
        Valid(
            """
import os
os.environ["MXNET_ENGINE_TYPE"] = "ThreadedEnginePerDevice"
import mxnet as mx


if __name__ == "__main__":
    mod = mx.mod.Module(mx.sym.var("data"))
    mod.fit(train_iter, num_epoch=10)
""",
            filename="train.py",
        ),
    )


def _truthy(value: str) -> bool:
    """How dmlc reads a boolean or integer switch: "1", "true" or any other nonzero number."""
    text = value.strip().lower()
    if text in ("true", "yes", "on"):
        return True
    try:
        return float(text) != 0
    except ValueError:
        return False


def effect(name: str, value: str | None) -> str | None:
    """What a debugging setting does to a training run; None when `name=value` is not one."""
    if value is None:
        return None
    if name == "MXNET_ENGINE_TYPE":
        if value.strip() != "NaiveEngine":
            return None
        return (
            "NaiveEngine runs every operator synchronously on the Python thread, so data "
            "loading, Python and device work no longer overlap"
        )
    if name == "MXNET_EXEC_VERBOSE":
        if not value.strip():
            return None
        return (
            "MXNet 1.9.1 does not read `MXNET_EXEC_VERBOSE` (the executor's logging switch is "
            "`MXNET_EXEC_VERBOSE_LOGGING`), so it is a leftover that only misleads"
        )
    if not _truthy(value):
        return None
    return {
        "MXNET_EXEC_VERBOSE_LOGGING": (
            "every symbolic executor logs its memory plan and operators when it is bound"
        ),
        "MXNET_ENGINE_INFO": "the threaded engine logs every operator it runs",
        "MXNET_PROFILER_AUTOSTART": (
            "the profiler records every operator from the first one, keeps the events in memory "
            "for the whole run and writes profile.json only at exit"
        ),
        "MXNET_MKLDNN_DEBUG": (
            "every oneDNN (MKL-DNN) operator's output is checked against the reference "
            "implementation"
        ),
    }.get(name)


#: A path part that says the file is not a production run: tests and test runners,
#: debugging, profiling, benchmarks (`tests/`, `debug_train.py`, `profile.sh`,
#: `benchmark/run.sh`, `python -m pytest`).
_NOT_PRODUCTION = re.compile(
    r"(?:^|[_.\-])(?:tests?|testing|py\.?test|nose\w*|unittest|debug\w*|profil\w*|bench\w*)"
    r"(?:$|[_.\-])",
    re.I,
)


def production_path(path: str) -> bool:
    """Whether nothing in the (project-relative) path says test, debug, profile or benchmark."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    return not any(_NOT_PRODUCTION.search(part) for part in parts)
