"""MXL807 undeclared-launch-option: checks the options a distributed launch passes to a Python
script of the project (`python train.py --kvstore dist_async --num-data-partitions 8` under
`DMLC_ROLE`, after `launch.py`, under `mpirun`/`horovodrun`, or with a `dist_*` kvstore option)
against what the script's `argparse` parser declares.

The function after the class decides and words its findings over what `_launches.py` and
`mxlint.argparse_options` read; `launch_checker.py` runs it. Its tests are the examples below
(run by `tests/test_distributed.py`), `tests/test_distributed.py` and
`tests/snapshots/MXL807.txt`.
"""

from __future__ import annotations

import os
import posixpath
from typing import TYPE_CHECKING

from mxlint.rule import Example, Finding, Location, Rule, Runtime, Valid

if TYPE_CHECKING:
    from mxlint.argparse_options import Parser
    from mxlint.rules.distributed._launches import LaunchFile, ScriptCall
    from mxlint.shell import Word

_TRAIN = """import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--kvstore", default="device")
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()
"""


class UndeclaredLaunchOption(Rule):
    code = "MXL807"
    name = "undeclared-launch-option"
    message = "{detail}"
    kind = "launch"
    runtime = Runtime("dist", loud=True, error=r"unrecognized arguments")
    what = """
        Checks the options a distributed launch passes to a Python script of the project
        against the options the script's `argparse` parser declares. A launch is a command
        run with `DMLC_ROLE`, the command after MXNet's `launch.py`, a `python` command under
        `mpirun`/`horovodrun`/`srun`, or a command that passes a `dist_*` kvstore
        (`--kvstore dist_sync`). The script must be a file of the run (found next to the
        launch script, or from the current directory), and its parser must be one the file
        shows in full: one `ArgumentParser` without `parents`, whose options are all added in
        the file with literal names, parsed from the command line.
    """
    why = """
        MXNet has no setting of its own behind most options people pass to a training script
        (there is no `--num-data-partitions` in MXNet: the kvstore splits big arrays across the
        servers by `MXNET_KVSTORE_BIGARRAY_BOUND`), and a misspelt one (`--kvstore` for
        `--kv-store`) is just as unknown. With `parse_args()` every process of the job stops at
        start with `error: unrecognized arguments` — on a cluster, where the launcher may only
        show that a worker died; with `parse_known_args()` the option is dropped without a word
        and the setting never takes effect. Abbreviations argparse accepts (`--batch` for
        `--batch-size`) are accepted.
    """
    example = """
        # run_async.sh
        python ../tools/launch.py -n 2 --launcher local \\
            python train.py --kvstore dist_async --num-data-partitions 8
    """
    use_instead = """
        # run_async.sh
        export MXNET_KVSTORE_BIGARRAY_BOUND=1000000
        python ../tools/launch.py -n 2 --launcher local \\
            python train.py --kvstore dist_async
    """
    fix_safety = """
        No automatic fix: the option may be a misspelling of a declared one (the message names
        the closest), or a setting the script should add.
    """
    invalid = (
        Example(
            "python ../tools/launch.py -n 2 --launcher local \\\n"
            "    python train.py --kvstore dist_async --num-data-partitions 8\n",
            line=2,
            filename="run_async.sh",
            project=(("train.py", _TRAIN),),
        ),
        Example(
            "export DMLC_PS_ROOT_URI=10.0.0.1 DMLC_PS_ROOT_PORT=9000\n"
            "export DMLC_NUM_WORKER=2 DMLC_NUM_SERVER=1 DMLC_ROLE=worker\n"
            "python train.py --kvstore dist_sync --batchsize 64\n",
            line=3,
            filename="worker.sh",
            project=(("train.py", _TRAIN),),
        ),
    )
    valid = (
        Valid(
            "python ../tools/launch.py -n 2 --launcher local \\\n"
            "    python train.py --kvstore dist_async --batch 64 --lr=0.05\n",
            filename="run_async.sh",
            project=(("train.py", _TRAIN),),
        ),
        # Not a distributed launch: not judged.
        Valid(
            "python train.py --kvstore device --num-data-partitions 8\n",
            filename="run.sh",
            project=(("train.py", _TRAIN),),
        ),
        # The parser gets more options from another module.
        Valid(
            "python train.py --kvstore dist_sync --num-epochs 3\n",
            filename="run.sh",
            project=(
                (
                    "train.py",
                    "import argparse\nfrom common import fit\n\n"
                    "parser = argparse.ArgumentParser()\nfit.add_fit_args(parser)\n"
                    "args = parser.parse_args()\n",
                ),
            ),
        ),
    )


def _target(call: ScriptCall, python: dict[str, str]) -> str | None:
    """The run's file the launch runs: next to the launch script, or from the current
    directory; None when neither (or both, differently) exists."""
    value = call.script.value
    if value is None or posixpath.isabs(value):
        return None
    here = os.path.normpath(os.path.join(os.path.dirname(call.path), value))
    cwd = os.path.normpath(value)
    found = {p for p in (here, cwd) if p in python}
    return found.pop() if len(found) == 1 else None


def check(files: list[LaunchFile], python: dict[str, str]) -> list[Finding]:
    """Every option a distributed launch passes that its script's parser does not take.
    `python` holds the run's Python files by normalized path."""
    from mxlint.argparse_options import read_parser

    parsers: dict[str, Parser | None] = {}
    found: list[Finding] = []
    for launch in files:
        for call in launch.scripts:
            target = _target(call, python)
            if target is None:
                continue
            if target not in parsers:
                parsers[target] = read_parser(python[target])
            parser = parsers[target]
            if parser is None:
                continue
            for i, word in enumerate(call.args):
                value = word.value
                if value is None or value == "--":
                    break
                if not value.startswith("--"):
                    continue
                option = value.partition("=")[0]
                if parser.accepts(option) is not False:
                    continue
                found.append(_finding(call, word, option, parser, target, call.args[i:]))
    return found


def _finding(
    call: ScriptCall, word: Word, option: str, parser: Parser, target: str, rest: list[Word]
) -> Finding:
    script = os.path.basename(target)
    import difflib  # only when a name is not known

    close = difflib.get_close_matches(
        option, sorted(o for o in parser.options if o.startswith("--")), n=1, cutoff=0.6
    )
    hint = f" (did you mean `{close[0]}`?)" if close else ""
    if parser.lenient:
        effect = f"`parse_known_args()` leaves it over, and the setting never takes effect{hint}"
    else:
        words = [rest[0].value or option]
        if len(rest) > 1 and rest[1].value and not rest[1].value.startswith("-"):
            words.append(rest[1].value)  # a value no option takes is left over too
        shown = " ".join(words)
        effect = (
            f'`parse_args()` stops every process of the job at start with "error: '
            f'unrecognized arguments: {shown}"{hint}'
        )
    detail = (
        f"`{option}` is not an option of `{script}`, whose parser does not declare it: {effect}"
    )
    rule = UndeclaredLaunchOption
    line, column = word.line, word.column
    argv = [w.value for w in call.args if w.value is not None]
    return Finding(
        rule.code,
        rule.format(detail=detail),
        call.path,
        Location(line, column),
        Location(line, column + len(option)),
        data={"check": "argv", "script": target, "argv": argv, "option": option},
    )
