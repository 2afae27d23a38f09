"""Constructors for libcst's nodes that cost less while the parser builds a tree.

Every node of every file is built through its class's `__init__`. libcst's nodes are frozen
dataclasses with slots, whose generated `__init__` sets each field with
`object.__setattr__(self, name, value)` (a frozen class's own `__setattr__` refuses) and then
validates the node (`__post_init__`). `install()` gives each node class an `__init__` with the
same parameters, defaults and default factories that sets the fields through their slots
directly, and validates unless `validation(False)` is in force (the parse of a source CPython
has accepted: see `parsing._unvalidated`). The parse of gluon-cv's files took 7-13 % less time
with it than with the generated constructors and validation skipped alone.

A class is changed only where its `__init__` is what `dataclasses` generated for exactly its
init fields, each held in a slot; any other (a later libcst's own constructor, an `InitVar`, a
field set only by `__init__`) keeps its own. With validation on, a node is built as before.
"""

from __future__ import annotations

import dataclasses
import keyword
import sys
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

import libcst as cst

#: Marks a parameter left to its default factory (the generated constructors use their own).
_FACTORY = object()
#: Globals of the generated constructors: the switch, the marker, and each class's slot
#: setters, defaults and default factories under names prefixed by the class's number.
_namespace: dict[str, Any] = {"VALIDATE": True, "_FACTORY": _FACTORY}
#: The classes given a constructor here, with the one each had.
_originals: dict[type, Callable[..., None]] = {}
_lock = threading.Lock()
#: Names a generated constructor reads besides its parameters' own.
_RESERVED = frozenset({"self", "VALIDATE", "_FACTORY"})
_VALIDATE = vars(cst.CSTNode).get("__post_init__")


def validation(on: bool) -> None:
    """Validate the nodes built from now on (`on`), or not: the constructors installed here
    read a switch, libcst's own call `CSTNode.__post_init__`, replaced meanwhile."""
    _namespace["VALIDATE"] = on
    if _VALIDATE is not None:
        cst.CSTNode.__post_init__ = _VALIDATE if on else _skip  # type: ignore[method-assign]


def _skip(self: cst.CSTNode) -> None:
    pass


def install() -> int:
    """Give every node class of libcst a constructor of this module where that is safe;
    how many classes have one. Calling it again changes nothing. It takes some 10 ms: worth
    it for a run that parses many files, not for one."""
    with _lock:
        if not _originals:
            for number, cls in enumerate(_node_classes()):
                init = _constructor(cls, number)
                if init is not None:
                    _originals[cls] = vars(cls)["__init__"]
                    cls.__init__ = init  # type: ignore[misc]
        return len(_originals)


def installed() -> tuple[type, ...]:
    """The classes that have a constructor of this module now."""
    with _lock:
        return tuple(_originals)


def uninstall() -> None:
    """libcst's own constructors back."""
    with _lock:
        for cls, init in _originals.items():
            cls.__init__ = init  # type: ignore[misc]
        _originals.clear()


def _node_classes() -> Iterator[type]:
    """The node classes libcst's modules export (a slotted dataclass replaces the class it
    was made from; the replaced one may linger among the subclasses until collected)."""
    seen: set[type] = set()
    todo: list[type] = [cst.CSTNode]
    while todo:
        subclasses: list[type] = todo.pop().__subclasses__()
        for sub in subclasses:
            if sub in seen:
                continue
            seen.add(sub)
            todo.append(sub)
            module = sys.modules.get(sub.__module__)
            if getattr(module, sub.__name__, None) is sub and "__slots__" in vars(sub):
                yield sub


def _constructor(cls: type, number: int) -> Callable[..., None] | None:
    init = vars(cls).get("__init__")
    if init is None or not dataclasses.is_dataclass(cls) or not _generated(init):
        return None
    fields = dataclasses.fields(cls)
    params = [f for f in fields if f.init]
    code = init.__code__
    names = code.co_varnames[1 : code.co_argcount + code.co_kwonlyargcount]
    if (
        len(params) != len(fields)  # fields the constructor sets itself
        or tuple(f.name for f in params) != names  # InitVars
        or code.co_kwonlyargcount
        or not all(f.name.isidentifier() and not keyword.iskeyword(f.name) for f in params)
        or any(f.name in _RESERVED for f in params)  # a parameter would hide a global
    ):
        return None
    prefix = f"_{number}_"
    signature: list[str] = []
    body: list[str] = []
    for f in params:
        setter = _slot_setter(cls, f.name)
        if setter is None:
            return None
        _namespace[f"{prefix}set_{f.name}"] = setter
        if f.default is not dataclasses.MISSING:
            _namespace[f"{prefix}default_{f.name}"] = f.default
            signature.append(f"{f.name}={prefix}default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            _namespace[f"{prefix}factory_{f.name}"] = f.default_factory
            signature.append(f"{f.name}=_FACTORY")
            body.append(f"    if {f.name} is _FACTORY:\n")
            body.append(f"        {f.name} = {prefix}factory_{f.name}()\n")
        else:
            signature.append(f.name)
    body.extend(f"    {prefix}set_{f.name}(self, {f.name})\n" for f in params)
    if hasattr(cls, "__post_init__"):
        body.append("    if VALIDATE:\n        self.__post_init__()\n")
    body.append("    return None\n")
    source = f"def __init__(self, {', '.join(signature)}):\n{''.join(body)}"
    local: dict[str, Any] = {}
    exec(source, _namespace, local)  # noqa: S102 - generated from the class's own fields
    made: Callable[..., None] = local["__init__"]
    made.__qualname__ = f"{cls.__qualname__}.__init__"
    made.__module__ = cls.__module__
    made.__doc__ = init.__doc__
    return made


def _generated(init: Any) -> bool:
    """Whether `init` is the constructor `dataclasses` wrote (it is compiled from a string)."""
    code = getattr(init, "__code__", None)
    return code is not None and code.co_filename == "<string>" and init.__name__ == "__init__"


def _slot_setter(cls: type, name: str) -> Callable[[object, object], None] | None:
    for klass in cls.__mro__:
        descriptor = vars(klass).get(name)
        if descriptor is not None:
            is_slot = isinstance(descriptor, types.MemberDescriptorType)
            return descriptor.__set__ if is_slot else None  # type: ignore[no-any-return]
    return None
