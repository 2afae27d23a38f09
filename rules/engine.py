"""MXL0xx: what the engine itself reports about a file it could not read or check."""

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
        that are not valid in the declared encoding).
    """
    why = """
        A file that silently drops out of the check gives a false sense of safety.
    """
    example = "# a file saved as Latin-1 without an encoding declaration"
    use_instead = "# -*- coding: latin-1 -*-  (or save the file as UTF-8)"
