"""The one way a finding into a run's result: selection, per-file ignores, `supersedes` and
`# noqa` suppressions, applied the same to every kind of finding.

Checker reports and the engine's own findings of a file (MXL001-MXL004), findings decided only
once every file is known (`finalize`, conditional findings), dependency-file and Dockerfile
findings and notebook cells all pass `admit`, so `--select`, `--ignore`, per-file ignores and
`# noqa` mean the same thing for every code. Checkers and the engine may skip work for rules
that are off (`Settings.code_enabled`), but whether a finding is reported is decided here only.
"""

from __future__ import annotations

from collections.abc import Iterable

from mxlint import registry
from mxlint.rule import Finding
from mxlint.settings import Settings
from mxlint.suppressions import Suppressions


def admit(
    findings: Iterable[Finding],
    settings: Settings,
    noqa: Suppressions | None = None,
    *,
    inline: bool | None = None,
) -> list[Finding]:
    """The findings that are reported, in their order.

    `noqa`: the directives of the findings' file (None where the file has none that can be
    read: it does not parse or cannot be read). `inline`: whether same-line directives apply
    here (default `settings.inline_noqa`: under flake8 they are flake8's, though their use is
    still accounted for MXL004). Suppressions mark the directives they use, so MXL004 is
    decided after a file's findings passed here.
    """
    selected = [f for f in findings if _selected(f, settings)]
    # Taken before suppressions and applied after: a `noqa` for the precise rule silences the
    # problem, one for the rule it supersedes still counts as used.
    replaced = superseded(selected)
    if noqa is not None:
        same_line = settings.inline_noqa if inline is None else inline
        selected = [f for f in selected if not noqa.match(f.code, f.location.row, same_line)]
    if replaced:
        selected = [f for f in selected if _place(f) not in replaced]
    return selected


def superseded(findings: Iterable[Finding]) -> set[tuple[str, int, int]]:
    """One finding per problem: where a rule that names others in `supersedes` reports, their
    findings at the same place go."""
    replaced: set[tuple[str, int, int]] = set()
    for f in findings:
        rule = registry.get_rule(f.code)
        if rule is not None and rule.supersedes:
            replaced.update((code, f.location.row, f.location.column) for code in rule.supersedes)
    return replaced


def _place(f: Finding) -> tuple[str, int, int]:
    return (f.code, f.location.row, f.location.column)


def _selected(f: Finding, settings: Settings) -> bool:
    rule = registry.get_rule(f.code)
    return rule is not None and settings.enabled(rule, f.filename)
