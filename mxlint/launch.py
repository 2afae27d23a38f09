"""The `mxlint` command and `python -m mxlint`: load what a run needs, then run it.

Loading is done with `module_bundle()`, `dataclass_code_cache()` and `regex_code_cache()`
active: libcst and the rules are most of a one-file run's start-up (see `mxlint.module_bundle`
and `mxlint.codegen_cache`). `mxlint.cli.main` does not touch
`dataclasses`: programs that call it in their own process (tests, tools) keep theirs as it is.
libcst's metadata providers, which a check does not use, load when first asked for (see
`mxlint.deferred_init`).

The command also loads with the cyclic garbage collector off: loading allocates some fifty
thousand objects that live for the whole run (classes, functions, their dicts) and no garbage,
and the default thresholds scanned them again and again (a tenth of the start-up of a one-file
run); `cli.entry` then freezes them out of every later scan and turns the collector back on.
When the run is over and nothing is left to do at exit, the process ends without the
interpreter's teardown (see `exit_without_teardown`).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mxlint.rule import Rule


def load(command: bool = False) -> dict[str, type[Rule]]:
    """libcst, the rules and the engine that runs them (and with `command`, the command line's
    module), with their bytecode, generated dataclass code and regular expressions cached (the
    hooks last only while they load). The rules by code."""
    from mxlint.codegen_cache import dataclass_code_cache, regex_code_cache
    from mxlint.deferred_init import defer_init
    from mxlint.module_bundle import module_bundle

    with module_bundle(), dataclass_code_cache(), regex_code_cache():
        metadata = defer_init("libcst.metadata")  # None once libcst is imported
        import libcst

        if metadata is not None:
            libcst.metadata = metadata  # type: ignore[attr-defined]
        from mxlint import engine, registry, runner  # noqa: F401  (what a run calls)
        from mxlint.semantic import constructions  # noqa: F401  (every file's facts: `context`)

        if command:
            from mxlint import cli, progress  # noqa: F401
            from mxlint.verify import cli as verify_cli  # noqa: F401  (`usage_error`)
        return registry.all_rules()


def entry() -> int:
    import gc

    gc.disable()  # turned back on by cli.entry, with what is loaded frozen
    load(command=True)
    from mxlint import cli

    code = cli.entry()
    exit_without_teardown(code)
    return code


def exit_without_teardown(code: int) -> None:
    """End the process with `code` now, when the interpreter's teardown has nothing left to do
    but free every module and object one by one (a few milliseconds of a one-file run). The
    `atexit` handlers run first, as they would at the usual exit: worker pools, logging and
    verify register theirs, and so may whatever the environment loads at start-up (a `.pth`
    file that imports `certifi`). A non-daemon thread still running, or an exit hook of
    `threading`'s own (`concurrent.futures`), means the usual exit: it waits for them. So
    does an output that cannot be flushed (the usual exit reports it)."""
    import atexit
    import threading

    if getattr(threading, "_threading_atexits", None):
        return
    main = threading.main_thread()
    if any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate()):
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe or stream: the usual exit reports it
        return
    if atexit._ncallbacks():
        atexit._run_exitfuncs()  # prints what a handler raises, as the usual exit does
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            return
    os._exit(code)
