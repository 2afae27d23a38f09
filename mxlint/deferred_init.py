"""Start-up: a package whose `__init__` runs when one of its own names is first read, not when
one of its submodules is imported.

`import libcst` imports `libcst.metadata.base_provider` and `libcst.metadata.wrapper`, and with
them runs `libcst/metadata/__init__.py`, which imports every metadata provider: the type
inference provider alone loads `subprocess` and `json`. That was a tenth of a one-file run's
start-up, for providers a check never asks for (only the unused-import fix reads scopes). With
the package's `__init__` deferred, the two submodules load as they did and the rest loads on
the first `from libcst.metadata import X` or `libcst.metadata.X`, as it would have.
"""

from __future__ import annotations

import sys
import threading
from importlib.machinery import PathFinder
from importlib.util import find_spec, module_from_spec
from types import ModuleType
from typing import Any


def defer_init(name: str) -> ModuleType | None:
    """Put package `name` (a subpackage of a top-level package not imported yet) in
    `sys.modules` with its `__path__`, so that its submodules import, and run its `__init__`
    when an attribute it lacks is first read. The caller sets it on its parent package once
    that is imported (the import system sets a child only when it loads it). None, and nothing
    done, when the package or its parent is imported already or cannot be found."""
    parent, _, _ = name.rpartition(".")
    if not parent or "." in parent or name in sys.modules or parent in sys.modules:
        return None
    try:
        parent_spec = find_spec(parent)  # a top-level name: nothing is imported to find it
        locations = parent_spec.submodule_search_locations if parent_spec else None
        spec = PathFinder.find_spec(name, list(locations)) if locations else None
    except (ImportError, ValueError):
        return None
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return None
    module = module_from_spec(spec)
    loader = spec.loader
    lock = threading.RLock()

    def __getattr__(attr: str) -> Any:
        with lock:
            if vars(module).get("__getattr__") is __getattr__:
                del module.__getattr__
                loader.exec_module(module)
        return getattr(module, attr)

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[name] = module
    return module
