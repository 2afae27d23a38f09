"""Which discovered files git ignores: `.gitignore` files at any depth, `.git/info/exclude` and
the user's excludes, read by git itself (one `git check-ignore` per directory checked).

A file git tracks is not ignored (git's rule). Without git, or outside a work tree, nothing is.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path


def ignored(root: Path, paths: Sequence[Path]) -> set[Path]:
    """Those of `paths` (found under the directory `root`) that git ignores; none when `root`
    itself is ignored: a directory named on the command line is checked, as a file is."""
    if not paths:
        return set()
    by_name = {os.fsencode(os.path.relpath(p, root)): p for p in paths}
    try:
        proc = subprocess.run(
            ["git", "check-ignore", "--stdin", "-z"],
            cwd=root,
            input=b"\0".join([b".", *by_name]) + b"\0",
            capture_output=True,
            check=False,
        )
    except OSError:  # git is not installed (or cannot run)
        return set()
    if proc.returncode not in (0, 1):  # 128: not a git work tree
        return set()
    names = proc.stdout.split(b"\0")
    if b"." in names:
        return set()
    return {by_name[n] for n in names if n in by_name}
