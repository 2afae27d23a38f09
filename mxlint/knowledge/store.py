"""The generated MXNet facts (`mxlint/data/*.json`), read fast.

The JSON files are the committed, reviewed form; reading one and turning it into the sets and
tuples rules ask about took a tenth of a one-file run. `cached()` keeps that result with
`marshal` beside mxlint's bytecode (`__pycache__`, or under `PYTHONPYCACHEPREFIX`), the way
Python keeps module bytecode: written only where Python writes bytecode (not under
`PYTHONDONTWRITEBYTECODE`), valid while the data file and the module that builds the facts keep
their size and modification time (as bytecode is checked against its source), and a missing,
damaged or foreign file only means reading the JSON as before.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

#: The package directory the data paths (`data/...`) are relative to.
PACKAGE = Path(__file__).resolve().parent.parent
#: Bumped when the layout of a cache file changes.
LAYOUT = 1


def read_text(name: str) -> str:
    """The package data file `name` (`data/...`): from disk, or through `importlib.resources`
    for an installation that keeps no files on disk (a zip)."""
    try:
        return (PACKAGE / name).read_text(encoding="utf-8")
    except OSError:
        from importlib import resources

        return resources.files("mxlint").joinpath(name).read_text(encoding="utf-8")


def _stamp(path: str | Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def cache_path(name: str, builder: Callable[..., Any]) -> Path | None:
    """Where the facts built from data file `name` are kept: beside the bytecode of the module
    that defines `builder`; None where Python keeps no bytecode."""
    from mxlint.codegen_cache import beside_bytecode

    module = sys.modules.get(builder.__module__)
    source = getattr(module, "__file__", None)
    return beside_bytecode(source, Path(name).stem) if source else None


def _key(name: str, builder: Callable[..., Any]) -> tuple[Any, ...] | None:
    """What a cache file must have been written for: this Python's bytecode, the layout, and
    the data file and builder's module as they are now (None: one of them is not on disk)."""
    from importlib.util import MAGIC_NUMBER

    data = _stamp(PACKAGE / name)
    module = sys.modules.get(builder.__module__)
    code = _stamp(module.__file__) if module is not None and module.__file__ else None
    if data is None or code is None:
        return None
    return (MAGIC_NUMBER, LAYOUT, name, builder.__qualname__, data, code)


def cached(name: str, builder: Callable[[str], T], path: Path | None = None) -> T:
    """`builder(text of data file name)`, taken from the cache file when one was written for
    the same data and builder. `builder` must return what `marshal` can store (dicts, tuples,
    frozensets, strings, numbers); `path` replaces the default place (`cache_path`)."""
    key = _key(name, builder)
    path = path or (cache_path(name, builder) if key is not None else None)
    if key is None or path is None:
        return builder(read_text(name))
    from mxlint.codegen_cache import read_keyed, write_marshal

    stored = read_keyed(path, key)
    if stored is not None:
        return stored  # type: ignore[no-any-return]
    value = builder(read_text(name))
    if not sys.dont_write_bytecode:
        write_marshal(path, (key, value))
    return value
