"""MXL605 profiler-left-running: finds `mx.profiler.set_state('run')` when nothing in the program
stops the profiler: no `set_state('stop')`, `dump()`, `dump_profile()` or `pause()` in the file,
in the project modules it imports, or in those that import it.

The family's checker (`rules/sync/checker.py`) collects the profiler calls of each file and
decides once every file of the run is read. Its tests are the examples below (run by
`tests/test_rule_examples.py`), `tests/test_sync.py` and `tests/snapshots/MXL605.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule, Runtime, Valid


class ProfilerLeftRunning(Rule):
    code = "MXL605"
    name = "profiler-left-running"
    message = (
        "`{expr}` starts MXNet's profiler and nothing stops it (no `set_state('stop')`, "
        "`dump()` or `pause()` in this file or the modules it imports or that import it): "
        "every operator's event is kept in memory for the rest of the run and the profile is "
        "written only at exit (never, if the job is killed); stop and dump it after the part "
        "you profile"
    )
    runtime = Runtime("profiler")
    what = """
        Finds `mx.profiler.set_state('run')` (or `profiler_set_state('run')`) when nothing in
        the program stops the profiler: no `set_state('stop')` (or a state that is not a
        literal), `dump()`, `dump_profile()` or `pause()` in the same file, in the project
        modules it imports, or in the project modules that import it (a helper that stops it,
        a caller that starts and stops it around a call). Reading the statistics with `dumps()`
        neither stops the profiler nor writes the profile. Tests are not judged (a profiler
        test may rely on the profile MXNet writes at exit).
    """
    why = """
        A running profiler records an event for every operator (about 5 KB each) and keeps them
        in memory until they are dumped: a training run that never stops it grows without
        bound, and its profile is written only when the process exits normally (by MXNet's
        destructor) — not at all when the job is killed or times out, which is how long
        training jobs usually end. The profile then also covers the whole run, so the steps
        meant to be studied drown in millions of events.
    """
    example = """
        mx.profiler.set_config(profile_all=True, filename="profile.json")
        mx.profiler.set_state("run")
        train(net, train_loader, epochs=90)
        print(mx.profiler.dumps())
    """
    use_instead = """
        mx.profiler.set_config(profile_all=True, filename="profile.json")
        mx.profiler.set_state("run")
        train(net, train_loader, epochs=1)
        mx.nd.waitall()
        mx.profiler.set_state("stop")
        mx.profiler.dump()
    """
    fix_safety = """
        No automatic fix: where profiling should end is the author's choice. `--verify` runs
        the entry script and reports whether the profiler was still running (and had not
        written its profile) when the bounded run ended.
    """
    invalid = (
        Example(
            """
import mxnet as mx
from mxnet import autograd


def train(net, loss_fn, trainer, loader):
    mx.profiler.set_config(profile_all=True, filename="profile.json")
    mx.profiler.set_state("run")
    for data, label in loader:
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(data.shape[0])
    print(mx.profiler.dumps())
""",
            line=8,
        ),
        Example(
            """
from mxnet import profiler

profiler.set_config(profile_symbolic=True, filename="train_profile.json")
profiler.set_state(state="run", profile_process="worker")
""",
            line=5,
        ),
    )
    valid = (
        Valid("""
import mxnet as mx


def profile(run_steps):
    mx.profiler.set_state("run")
    run_steps(10)
    mx.nd.waitall()
    mx.profiler.set_state("stop")
    mx.profiler.dump()
"""),
        Valid("""
from mxnet import profiler


class ProfileCallback:
    def on_epoch_begin(self, epoch):
        if epoch == 1:
            profiler.set_state("run")

    def on_epoch_end(self, epoch):
        if epoch == 1:
            profiler.set_state("stop")
"""),
        Valid(
            """
from mxnet import profiler


def start_profiling():
    profiler.set_config(profile_all=True)
    profiler.set_state("run")
""",
            project=(
                (
                    "train",
                    """
from mxnet import profiler
from example import start_profiling


def main(run):
    start_profiling()
    run()
    profiler.dump()
""",
                ),
            ),
        ),
    )


#: Profiler calls that end recording or write the profile (`dump` also stops it).
STOPS = frozenset({"mxnet.profiler.dump", "mxnet.profiler.dump_profile", "mxnet.profiler.pause"})
SET_STATE = frozenset({"mxnet.profiler.set_state", "mxnet.profiler.profiler_set_state"})
