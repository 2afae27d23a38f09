"""Start-up: the bytecode of the modules a run loads, kept together in one file.

A one-file run imports some two hundred modules of mxlint and libcst. For each one, Python's
path finder looks the name up, stats the source, opens and reads the bytecode file and checks
its header before the module's code runs: that bookkeeping, not the modules' own code, was a
tenth of the start-up. While `module_bundle()` is active, the modules it kept the last time are
served from one file read at once, each still checked against its source as Python checks its
bytecode (here: modification time to the nanosecond, and size). A module that changed, or that
the file does not hold, is imported as usual, and the file is then written again with what
this start loaded, from the bytecode Python wrote for it.

The file lives beside mxlint's own bytecode (see `mxlint.codegen_cache`), one per set of places
the root packages are imported from (an editable install shared by two environments keeps one
for each), is written only where Python would write bytecode, and a missing, unreadable or
foreign file only means importing as usual. The modules are loaded by `SourceFileLoader`, so that they are what they would be
otherwise: the same `__file__`, `__cached__`, `__spec__`, source for tracebacks.
"""

from __future__ import annotations

import _imp
import marshal
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from importlib.machinery import PathFinder, SourceFileLoader
from importlib.util import MAGIC_NUMBER, spec_from_file_location
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

from mxlint.codegen_cache import beside_bytecode, read_keyed, write_marshal

#: The top-level packages whose modules are kept.
ROOTS = ("mxlint", "libcst")

#: name -> (source file, its st_mtime_ns, its size, the package's __path__ or None, code)
Entry = tuple[str, int, int, "list[str] | None", CodeType]
#: Each root package and the `__init__.py` this interpreter imports it from (see `_origins`).
Origins = tuple[tuple[str, "str | None"], ...]


#: What Python's own loader calls on the code it reads from a bytecode file (the file names in
#: the code are made the source's, should the files have moved since it was compiled).
_fix_co_filename: Any = getattr(_imp, "_fix_co_filename", lambda code, path: None)


def default_path(roots: tuple[str, ...] = ROOTS, origins: Origins | None = None) -> Path | None:
    """Beside mxlint's bytecode, one file per set of root packages' origins (`_origins`)."""
    origins = _origins(roots) if origins is None else origins
    return beside_bytecode(__file__, f"module-code-{_fnv1a(repr(origins).encode()):08x}")


def _fnv1a(data: bytes) -> int:
    """A stable 32-bit hash (FNV-1a) for a file name: `hashlib` would load OpenSSL, 2 ms of a
    start that has no other use for it."""
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


class _BundledLoader(SourceFileLoader):
    """Python's loader of a source file, with the module's code already at hand."""

    def __init__(self, fullname: str, path: str, code: CodeType) -> None:
        super().__init__(fullname, path)
        self._code: CodeType | None = code

    def get_code(self, fullname: str) -> CodeType | None:
        code, self._code = self._code, None
        if code is not None and fullname == self.name:
            _fix_co_filename(code, self.path)  # as Python does for the bytecode it reads
            return code
        return super().get_code(fullname)


class _BundleFinder:
    """First on `sys.meta_path` while active: the kept modules whose source did not change."""

    def __init__(self, entries: dict[str, Entry], roots: tuple[str, ...]) -> None:
        self.entries = entries
        self.roots = roots
        self.asked: list[str] = []
        self.served: set[str] = set()
        self.stale = False

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname.partition(".")[0] not in self.roots:
            return None
        self.asked.append(fullname)
        entry = self.entries.get(fullname)
        if entry is None:
            return None
        file, mtime_ns, size, search, code = entry
        try:
            st = os.stat(file)
        except OSError:
            self.stale = True
            return None
        if st.st_mtime_ns != mtime_ns or st.st_size != size:
            self.stale = True
            return None
        loader = _BundledLoader(fullname, file, code)
        spec = spec_from_file_location(
            fullname,
            file,
            loader=loader,
            submodule_search_locations=list(search) if search is not None else None,
        )
        self.served.add(fullname)
        return spec


@contextmanager
def module_bundle(
    path: Path | None = None, roots: tuple[str, ...] = ROOTS
) -> Iterator[_BundleFinder | None]:
    """Modules of the packages `roots` imported meanwhile come from the file at `path`
    (default: `default_path()`) where it holds them unchanged; the file is written again on the
    way out when this start imported some that it did not hold."""
    origins = _origins(roots)  # before the block imports anything of them
    where = path or default_path(roots, origins)
    if where is None:
        yield None
        return
    finder = _BundleFinder(load(where, roots, origins), roots)
    sys.meta_path.insert(0, finder)
    try:
        yield finder
    finally:
        with suppress(ValueError):
            sys.meta_path.remove(finder)
        if not sys.dont_write_bytecode:
            _keep(where, finder, origins)


def _origins(roots: tuple[str, ...]) -> Origins:
    """Where each root package is imported from by this interpreter now (its `__init__.py`).
    One source tree can serve several environments (an editable install in two virtual
    environments, each with its own libcst): what one of them kept is not the other's, so the
    origins name the file and are checked when it is read."""
    out = []
    for root in roots:
        module = sys.modules.get(root)
        file = getattr(module, "__file__", None)
        if module is None:
            try:
                spec = PathFinder.find_spec(root)
            except (ImportError, ValueError):
                spec = None
            file = spec.origin if spec is not None else None
        out.append((root, file if isinstance(file, str) else None))
    return tuple(out)


def load(
    path: Path, roots: tuple[str, ...] = ROOTS, origins: Origins | None = None
) -> dict[str, Entry]:
    """The kept modules by name; empty when the file is missing, damaged or was written by
    another Python or for packages imported from elsewhere (`origins`, default: now)."""
    origins = _origins(roots) if origins is None else origins
    entries = read_keyed(path, (MAGIC_NUMBER, origins))
    if type(entries) is not dict:
        return {}
    return {
        name: entry
        for name, entry in entries.items()
        if type(name) is str
        and type(entry) is tuple
        and len(entry) == 5
        and type(entry[4]) is CodeType
    }


def _keep(path: Path, finder: _BundleFinder, origins: Origins) -> None:
    """Write the file again when the block imported modules it did not hold (or held changed):
    every module imported in the block, from what the file held or the bytecode Python wrote."""
    loaded = [name for name in dict.fromkeys(finder.asked) if _source_module(name) is not None]
    missing = [name for name in loaded if name not in finder.served]
    if not missing and not finder.stale:
        return
    if not _writable(path):
        return  # an installation this user cannot write to: gathering the code would be lost
    entries: dict[str, Entry] = {}
    for name in loaded:
        entry = finder.entries.get(name) if name in finder.served else None
        if entry is None:
            entry = _entry_from_bytecode(name)
        if entry is not None:
            entries[name] = entry
    if not finder.stale and entries.keys() == finder.entries.keys():
        return  # what is missing has no bytecode to keep: writing would change nothing
    write_marshal(path, ((MAGIC_NUMBER, origins), entries))


def _writable(path: Path) -> bool:
    """Whether the file could be written: its folder, or the nearest one that exists (where
    the folder would be made), is writable."""
    folder = path.parent
    while not folder.exists():
        if folder.parent == folder:
            return False
        folder = folder.parent
    return os.access(folder, os.W_OK)


def _source_module(name: str) -> ModuleType | None:
    module = sys.modules.get(name)
    file = getattr(module, "__file__", None)
    if module is None or not isinstance(file, str) or not file.endswith(".py"):
        return None
    return module


def _entry_from_bytecode(name: str) -> Entry | None:
    """The module's code from the bytecode file Python wrote for it, if that file is
    current for its source (the check Python makes when it imports it)."""
    module = _source_module(name)
    cached = getattr(module, "__cached__", None)
    if module is None or not isinstance(cached, str):
        return None
    file: str = module.__file__  # type: ignore[assignment]
    try:
        st = os.stat(file)
        with open(cached, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    if (
        data[:4] != MAGIC_NUMBER
        or int.from_bytes(data[4:8], "little") != 0  # hash-based bytecode: not checked by time
        or int.from_bytes(data[8:12], "little") != int(st.st_mtime) & 0xFFFFFFFF
        or int.from_bytes(data[12:16], "little") != st.st_size & 0xFFFFFFFF
    ):
        return None
    try:
        code = marshal.loads(data[16:])
    except (EOFError, ValueError, TypeError):
        return None
    if type(code) is not CodeType:
        return None
    search = getattr(module, "__path__", None)
    return (file, st.st_mtime_ns, st.st_size, list(search) if search is not None else None, code)
