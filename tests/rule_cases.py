"""Rules' own examples, as cases for the tests of the machinery around the rules.

Suppressions, fixes and the flake8 bridge must hold for every rule, including rules written
after these tests: the cases are drawn from the registry, not from a fixed list.
"""

from __future__ import annotations

from mxlint import registry
from mxlint.checker import Checker
from mxlint.config import Settings
from mxlint.rule import Example, Rule, Valid


def cross_file_codes() -> set[str]:
    """Codes some checker may report from `finalize` (decided per run, not per file)."""
    codes: set[str] = set()
    for checker in registry.python_checkers():
        if getattr(checker.finalize, "__func__", None) is not getattr(
            Checker.finalize, "__func__", None
        ):
            codes.update(r.code for r in checker.rules)
    return codes


def python_rules() -> list[type[Rule]]:
    return [r for r in registry.all_rules().values() if r.kind == "python"]


def linted_by_cli(code: str) -> bool:
    """Whether `mxlint check` reads this source at all (the engine skips non-MXNet files)."""
    from mxlint.engine import MXNET_HINT

    return bool(MXNET_HINT.search(code.encode("utf-8")))


def invalid_examples(
    *, single_file: bool = True, with_line: bool = True, with_fix: bool = False, cli: bool = False
) -> list[tuple[type[Rule], Example, str]]:
    """(rule, example, test id) for every python rule's invalid examples."""
    out = []
    for rule in python_rules():
        for i, ex in enumerate(rule.invalid):
            ex = ex if isinstance(ex, Example) else Example(ex)
            if single_file and ex.project:
                continue
            if with_line and ex.line is None:
                continue
            if with_fix and ex.expected_fix is None:
                continue
            if cli and not linted_by_cli(ex.code):
                continue
            out.append((rule, ex, f"{rule.code}-invalid-{i}"))
    return out


def valid_examples() -> list[tuple[type[Rule], Valid, str]]:
    out = []
    for rule in python_rules():
        for i, ex in enumerate(rule.valid):
            ex = ex if isinstance(ex, Valid) else Valid(ex)
            if not ex.project:
                out.append((rule, ex, f"{rule.code}-valid-{i}"))
    return out


def settings(rule: type[Rule], mxnet: str, *extra: str) -> Settings:
    return Settings(select=(rule.code, *extra), mxnet_version=mxnet)
