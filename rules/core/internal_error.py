"""MXL002 internal-error: reports that one of mxlint's checkers failed on this file.

Its findings are decided by the engine (`mxlint/engine.py`, `mxlint/sources.py`,
`mxlint/suppressions.py`); its tests are the examples below (run by
`tests/test_rule_examples.py`), `tests/test_suppressions.py, tests/test_robustness.py` and
`tests/snapshots/MXL002.txt`.
"""

from __future__ import annotations

from mxlint.rule import Rule


class InternalErrorRule(Rule):
    code = "MXL002"
    name = "internal-error"
    message = "Internal error in {checker} while checking this file: {detail}"
    what = """
        Reports that one of mxlint's checkers failed on this file. Every other checker and file
        still reports; the run exits with code 2.
    """
    why = """
        A crash in one rule must not hide the findings of the others. Please report the file
        (or a reduced version of it) together with this message.
    """
    example = "# any file that triggers a bug in a checker"
    use_instead = "# nothing to change in your code; report the bug"
