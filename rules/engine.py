"""MXL0xx: what the engine itself reports about a file it could not read or check."""

from __future__ import annotations

from mxlint.rule import Example, Rule


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


class UnreadableFileRule(Rule):
    code = "MXL003"
    name = "unreadable-file"
    message = "Cannot read file: {detail}"
    what = """
        Reports a file that could not be read or decoded (permissions, a broken symlink, bytes
        that are not valid in the declared encoding), and a directory that could not be listed
        (the files in it would otherwise drop out of the check unseen).
    """
    why = """
        A file that silently drops out of the check gives a false sense of safety.
    """
    example = "# a file saved as Latin-1 without an encoding declaration"
    use_instead = "# -*- coding: latin-1 -*-  (or save the file as UTF-8)"


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
        A stale suppression hides the next real finding on that line. Only rules that are
        enabled for the file and are decided per file are judged, so a directive for a disabled
        rule, or for a rule that needs the whole project, is left alone.
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
