"""Start-up: keep the code that `dataclasses` (and `attrs`) generate, and the regular
expressions modules compile as they load, the way Python keeps module bytecode.

libcst defines some 250 node classes as frozen dataclasses. For each class, `dataclasses`
writes the source of `__init__`, `__eq__`, `__repr__`, `__hash__`, `__setattr__` and
`__delattr__` and compiles it with `exec`: about 600 compilations, half of the time
`import libcst` takes on CPython 3.11. A one-file run (pre-commit, the editor) pays that on every
start. While `dataclass_code_cache()` is active, `dataclasses` gets its code from a cache file
keyed by the exact source text, so the classes it builds are the ones it would build anyway.

The cache lives beside mxlint's own bytecode (`__pycache__`, or under `PYTHONPYCACHEPREFIX`),
is written only where Python would write bytecode (not under `PYTHONDONTWRITEBYTECODE`), and a
missing, unreadable or foreign file only means compiling as usual.

Regular expressions are the same story at a smaller scale: the modules a run loads compile some
eighty patterns (mxlint's, libcst's, the standard library's), each parsed and translated to
`re`'s internal code by Python code, a few milliseconds of every start (`regex_code_cache`).
"""

from __future__ import annotations

import builtins
import marshal
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from importlib.util import MAGIC_NUMBER, cache_from_source
from pathlib import Path
from types import CodeType
from typing import Any

#: A cache holding more sources than this is started afresh (sources of old libcst versions
#: would otherwise pile up).
MAX_ENTRIES = 4096


def default_path(kind: str = "dataclass") -> Path | None:
    """Where Python would put the bytecode of this module, under a name of its own."""
    return beside_bytecode(__file__, f"{kind}-code")


def beside_bytecode(source: str, stem: str) -> Path | None:
    """`<stem>.<cache tag>.marshal` in the folder where Python keeps the bytecode of the module
    file `source` (`__pycache__`, or under `PYTHONPYCACHEPREFIX`); None where it keeps none."""
    tag = sys.implementation.cache_tag
    if tag is None:  # an implementation without bytecode caching
        return None
    try:
        pyc = Path(cache_from_source(source))
    except (NotImplementedError, ValueError):
        return None
    return pyc.with_name(f"{stem}.{tag}.marshal")


def load(path: Path) -> dict[str, CodeType]:
    """The cached code by source text; empty when the file is missing, damaged or was written
    by another Python (a different bytecode magic number)."""
    codes = read_keyed(path, MAGIC_NUMBER)
    if type(codes) is not dict:
        return {}
    return {k: v for k, v in codes.items() if type(k) is str and type(v) is CodeType}


def read_keyed(path: Path, key: Any) -> Any:
    """The value of a file written as `(key, value)` (see `write_marshal`) under this `key`;
    None when the file is missing, damaged or was written under another key (another Python,
    other sources). Every cache kept beside the bytecode is read this way."""
    try:
        with open(path, "rb") as fh:
            blob = fh.read()
        data = marshal.loads(blob)  # marshal.load(fh) reads object by object: many times slower
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if type(data) is not tuple or len(data) != 2 or data[0] != key:
        return None
    return data[1]


def write_marshal(path: Path, value: Any) -> None:
    """Replace the file with `value` marshalled, atomically; a file that cannot be written is
    no error (every cache kept beside the bytecode is only a shortcut)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            marshal.dump(value, fh)
        os.replace(tmp, path)
    except (OSError, ValueError):
        with suppress(OSError):
            tmp.unlink()


def keep(path: Path, known: dict[Any, Any], fresh: dict[Any, Any], key: Any = MAGIC_NUMBER) -> None:
    """Add what was compiled this time to the file (written as `(key, entries)`), where Python
    would write bytecode (a file holding too much is started afresh)."""
    if fresh and not sys.dont_write_bytecode:
        merged = {**known, **fresh} if len(known) + len(fresh) <= MAX_ENTRIES else fresh
        write_marshal(path, (key, merged))


@contextmanager
def dataclass_code_cache(path: Path | None = None) -> Iterator[dict[str, CodeType]]:
    """Classes that `dataclasses` builds meanwhile take compiled code from `path` (default:
    `default_path()`); code it had to compile is added to the file on the way out. Yields the
    code compiled during the block (by source), for those who want to know."""
    import dataclasses

    def hook(known: dict[str, CodeType], fresh: dict[str, CodeType]) -> Any:
        def cached_exec(
            source: Any, globals: dict[str, Any] | None = None, locals: Any = None, /
        ) -> None:
            if type(source) is str:
                code = known.get(source) or fresh.get(source)
                if code is None:
                    # What exec(source) in dataclasses compiles: no __future__ flags of ours.
                    code = fresh[source] = compile(source, "<string>", "exec", dont_inherit=True)
                source = code
            if globals is None:  # exec's default: the caller's namespace
                frame = sys._getframe(1)
                globals = frame.f_globals
                if locals is None:
                    locals = frame.f_locals
            builtins.exec(source, globals, locals)

        return cached_exec

    with _hooked(dataclasses, "exec", path or default_path(), hook) as fresh:
        yield fresh


#: What attrs writes for a hashable class (see `attrs_code_cache`).
_HASH_METHOD = "def __hash__(self"


@contextmanager
def attrs_code_cache(path: Path | None = None) -> Iterator[dict[str, CodeType]]:
    """The same for classes `attrs` builds meanwhile (the language server's protocol library,
    `lsprotocol`, defines some 570 of them: half of its import time is compiling their
    methods). attrs compiles with `compile(script, filename, "exec")`, where the file name
    names the class and method; the cache is keyed by both (default path: `default_path("attrs")`)."""
    import __future__

    try:
        from attr import _make
    except ImportError:  # no attrs: nothing to cache
        yield {}
        return
    # compile() in attrs' module inherits that module's `from __future__` flags.
    flags = 0
    for value in vars(_make).values():
        if isinstance(value, __future__._Feature):
            flags |= value.compiler_flag

    def hook(known: dict[str, CodeType], fresh: dict[str, CodeType]) -> Any:
        def cached_compile(source: Any, filename: Any, mode: str, *args: Any, **kwargs: Any) -> Any:
            if type(source) is not str or type(filename) is not str or args or kwargs:
                return compile(source, filename, mode, *args, **kwargs)
            if _HASH_METHOD in source:
                # attrs salts a class's `__hash__` with the hash of a string, which differs
                # from process to process: kept, it would never be found again, and would
                # have the whole file written again on every start.
                return compile(source, filename, mode, flags, dont_inherit=True)
            key = f"{filename}\0{source}"
            code = known.get(key) or fresh.get(key)
            if code is None:
                code = fresh[key] = compile(source, filename, mode, flags, dont_inherit=True)
            return code

        return cached_compile

    with _hooked(_make, "compile", path or default_path("attrs"), hook) as fresh:
        yield fresh


@contextmanager
def _hooked(
    module: Any,
    name: str,
    path: Path | None,
    hook: Callable[[dict[str, CodeType], dict[str, CodeType]], Any],
) -> Iterator[dict[str, CodeType]]:
    """`module.name` replaced, for the block, by `hook(known, fresh)`: the code in `path`, and
    what it compiles meanwhile, kept in the file on the way out. Nothing is replaced without
    a place for the file or where someone else's hook is there already."""
    if path is None or name in vars(module):
        yield {}
        return
    known = load(path)
    fresh: dict[str, CodeType] = {}
    replacement = hook(known, fresh)
    setattr(module, name, replacement)
    try:
        yield fresh
    finally:
        if vars(module).get(name) is replacement:
            delattr(module, name)
        keep(path, known, fresh)


#: Flags under which a pattern's compiled form is not kept: DEBUG prints as it compiles.
_REGEX_UNCACHED = 128  # re.DEBUG


@contextmanager
def regex_code_cache(path: Path | None = None) -> Iterator[dict[Any, Any]]:
    """Patterns `re` compiles meanwhile take their compiled form from `path` (default:
    `default_path("regex")`), and what had to be compiled is added to the file on the way out.

    `re` turns a pattern into a program for its matching engine in Python (`re._compiler`) and
    hands it to `_sre.compile`, which checks it and builds the pattern object. The arguments of
    that call depend only on the pattern, its flags and the interpreter: they are what is kept,
    and a pattern built from them is the one `re` builds. The file is for one interpreter
    version; a program the engine rejects is compiled as usual. Yields what was compiled during
    the block (by pattern and flags), for those who want to know."""
    import re
    import threading

    compiler: Any = getattr(re, "_compiler", None) or getattr(re, "sre_compile", None)
    where = path or default_path("regex")
    original = getattr(compiler, "compile", None)
    sre = getattr(compiler, "_sre", None)
    if where is None or original is None or sre is None or getattr(original, "_mxlint", False):
        yield {}
        return
    header = (MAGIC_NUMBER, sys.version, getattr(sre, "MAGIC", None))
    known = _load_regexes(where, header)
    fresh: dict[Any, Any] = {}
    lock = threading.Lock()

    def cached_compile(p: Any, flags: Any = 0) -> Any:
        if (type(p) is not str and type(p) is not bytes) or type(flags) is not int:
            return original(p, flags)
        if flags & _REGEX_UNCACHED:
            return original(p, flags)
        key = (p, flags)
        args = known.get(key) or fresh.get(key)
        if args is not None:
            try:
                return sre.compile(p, *args)
            except Exception:  # a program this engine does not accept: compile it afresh
                known.pop(key, None)
        with lock:  # the recorder stands in for `_sre` in `re`'s compiler meanwhile
            recorder = _SreCall(sre)
            compiler._sre = recorder
            try:
                compiled = original(p, flags)
            finally:
                compiler._sre = sre
        if recorder.args is not None and recorder.args[0] is p:
            final_flags, code, groups, groupindex, indexgroup = recorder.args[1:]
            # The program's opcodes are named int constants: kept as the ints they are.
            fresh[key] = (
                int(final_flags),
                [int(op) for op in code],
                groups,
                groupindex,
                indexgroup,
            )
        return compiled

    cached_compile._mxlint = True  # type: ignore[attr-defined]
    compiler.compile = cached_compile
    try:
        yield fresh
    finally:
        if compiler.compile is cached_compile:
            compiler.compile = original
        keep(where, known, fresh, header)


class _SreCall:
    """`_sre` as `re`'s compiler sees it while one pattern compiles: the arguments of its
    `compile` call are kept."""

    def __init__(self, sre: Any) -> None:
        self._sre = sre
        self.args: tuple[Any, ...] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sre, name)

    def compile(self, *args: Any) -> Any:
        self.args = args
        return self._sre.compile(*args)


def _load_regexes(path: Path, header: tuple[Any, ...]) -> dict[Any, Any]:
    """The kept arguments by (pattern, flags); empty when the file is missing, damaged or was
    written by another interpreter."""
    kept = read_keyed(path, header)
    if type(kept) is not dict:
        return {}
    return {
        key: args
        for key, args in kept.items()
        if type(key) is tuple and len(key) == 2 and type(args) is tuple and len(args) == 5
    }
