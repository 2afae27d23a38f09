"""MXL003 unreadable-file: reports a file that could not be read or decoded (permissions, a broken
symlink, bytes that are not valid in the declared encoding), and a directory that could not be
listed (the files in it would otherwise drop out of the check unseen).

Its findings are decided by the engine (`mxlint/engine.py`, `mxlint/sources.py`,
`mxlint/suppressions.py`); its tests are the examples below (run by
`tests/test_rule_examples.py`), `tests/test_suppressions.py, tests/test_robustness.py` and
`tests/snapshots/MXL003.txt`.
"""

from __future__ import annotations

from mxlint.rule import Rule


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
