"""The `mxlint` command and `python -m mxlint`: load what a run needs, then run it.

Loading is done with `dataclass_code_cache()` active: libcst and the rules are most of a
one-file run's start-up (see `mxlint.codegen_cache`). `mxlint.cli.main` does not touch
`dataclasses`: programs that call it in their own process (tests, tools) keep theirs as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mxlint.rule import Rule


def load() -> dict[str, type[Rule]]:
    """libcst, the rules and the engine that runs them, with generated dataclass code cached
    (the hook on `dataclasses` lasts only while they load). The rules by code."""
    from mxlint.codegen_cache import dataclass_code_cache

    with dataclass_code_cache():
        from mxlint import engine, registry, runner  # noqa: F401  (what a run calls)

        return registry.all_rules()


def entry() -> int:
    load()
    from mxlint import cli

    return cli.entry()
