"""The `mxlint` command and `python -m mxlint`: load what a run needs, then run it.

Loading is done with `dataclass_code_cache()` active: libcst and the rules are most of a
one-file run's start-up (see `mxlint.codegen_cache`). `mxlint.cli.main` does not touch
`dataclasses`: programs that call it in their own process (tests, tools) keep theirs as it is.
"""

from __future__ import annotations


def entry() -> int:
    from mxlint.codegen_cache import dataclass_code_cache

    with dataclass_code_cache():
        from mxlint import cli, registry, runner  # noqa: F401  (runner: what `check` runs)

        registry.all_rules()
    return cli.entry()
