"""MXL004 unused-noqa: reports an MXL code in a `# noqa: ...` comment that suppresses nothing on
its line (or statement), and MXL codes that name no rule.

Its findings are decided once the whole run is known (`mxlint/runner.py`, with
`mxlint/suppressions.py`); its tests are the examples below (run by
`tests/test_rule_examples.py`), `tests/test_suppressions.py`, `tests/test_unused_noqa.py`,
`tests/test_robustness.py` and
`tests/snapshots/MXL004.txt`.
"""

from __future__ import annotations

from mxlint.rule import Example, Rule


class UnusedNoqaRule(Rule):
    code = "MXL004"
    name = "unused-noqa"
    message = "Unused `noqa` directive (unused: {codes})"
    what = """
        Reports an MXL code in a `# noqa: ...` comment that suppresses nothing on its line (or
        statement), and MXL codes that name no rule. Bare `# noqa` and other tools' codes are
        never reported: mxlint cannot know what they silence.
    """
    why = """
        A stale suppression hides the next real finding on that line. Every rule that ran on
        the file is judged, once the whole run is known (the hybridization and reproducibility
        rules decide some findings from other files). A directive is left alone for a rule that
        is off for the file, that failed (MXL002), or whose findings may need a file of the
        project the run does not include: checking a few files of a project, as pre-commit
        does, never calls a directive unused that the whole project uses. In a requirements
        file, Dockerfile or other dependency file, the versions rules' codes are judged.
    """
    example = """
        loss = loss_fn(net(x), y)  # noqa: MXL101
    """
    use_instead = """
        loss = loss_fn(net(x), y)
    """
    fix_safety = """
        The fix removes only the unused MXL codes (or the whole directive when nothing else is
        in it) and is safe: the suppressed set does not change.
    """
    fixable = "safe"
    valid = (
        "import mxnet as mx\nx = mx.nd.zeros((1,))  # noqa\n",
        "import mxnet as mx\nx = mx.nd.zeros((1,))  # noqa: E501\n",
        "import mxnet as mx\nx = mx.nd.zeros((1,))  # noqa: MXL1\n",
        "import mxnet as mx\ns = '# noqa: MXL101'\n",
    )
    invalid = (
        Example(
            "import mxnet as mx\nx = mx.nd.zeros((1,))  # noqa: MXL999\n",
            line=2,
            expected_fix="import mxnet as mx\nx = mx.nd.zeros((1,))\n",
        ),
        Example(
            "import mxnet as mx\nx = mx.nd.zeros((1,))  # noqa: E501, MXL998\n",
            line=2,
            expected_fix="import mxnet as mx\nx = mx.nd.zeros((1,))  # noqa: E501\n",
        ),
    )
