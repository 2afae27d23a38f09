"""MXL001 syntax-error: reports a file that does not parse as Python 3, with the parser's message
and position.

Its findings are decided by the engine (`mxlint/engine.py`, `mxlint/sources.py`,
`mxlint/suppressions.py`); its tests are the examples below (run by
`tests/test_rule_examples.py`), `tests/test_suppressions.py, tests/test_robustness.py` and
`tests/snapshots/MXL001.txt`.
"""

from __future__ import annotations

from mxlint.rule import Rule


class SyntaxErrorRule(Rule):
    code = "MXL001"
    name = "syntax-error"
    message = "Syntax error: {detail}"
    what = """
        Reports a file that does not parse as Python 3, with the parser's message and position.
    """
    why = """
        mxlint cannot check a file it cannot parse. Old MXNet repositories still carry Python 2
        files (`print x`); they are reported once, and the rest of the run goes on.
    """
    example = "print 'epoch', epoch"
    use_instead = "print('epoch', epoch)"
