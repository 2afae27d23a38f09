"""Which discovered files git ignores: `.gitignore` files at any depth, `.git/info/exclude` and
the user's excludes, read by git itself (one `git check-ignore` per directory checked, and one
per repository for the paths named on the command line under `--force-exclude`).

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


def ignored_named(paths: Sequence[Path]) -> set[Path]:
    """Those of `paths` (named on the command line: files or directories, anywhere) that git
    ignores, asked once per git work tree they are in; a path in no work tree is not ignored."""
    by_repo: dict[Path, list[Path]] = {}
    tops: dict[Path, Path | None] = {}
    for path in paths:
        top = _work_tree(Path(os.path.abspath(path)).parent, tops)
        if top is not None:
            by_repo.setdefault(top, []).append(path)
    out: set[Path] = set()
    for top, named in by_repo.items():
        out |= ignored(top, named)
    return out


def _work_tree(directory: Path, tops: dict[Path, Path | None]) -> Path | None:
    """The nearest directory at or above `directory` that holds `.git` (memoised in `tops`)."""
    seen: list[Path] = []
    found: Path | None = None
    for d in (directory, *directory.parents):
        if d in tops:
            found = tops[d]
            break
        seen.append(d)
        if (d / ".git").exists():
            found = d
            break
    for d in seen:
        tops[d] = found
    return found
