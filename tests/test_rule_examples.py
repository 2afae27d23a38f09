"""Every rule's valid and invalid examples, generated into tests (Fixit style)."""

from __future__ import annotations

from pathlib import PurePath

import pytest

from mxlint import registry
from mxlint.api import check_source
from mxlint.config import Settings
from mxlint.fixes import apply_edits
from mxlint.rule import Example, Valid
from mxlint.unused_imports import remove_unused_imports

PY_RULES = [r for r in registry.all_rules().values() if r.kind == "python"]


def _settings(rule, mxnet: str) -> Settings:
    return Settings(select=(rule.code,), mxnet_version=mxnet)


def _cases(kind: str):
    for rule in PY_RULES:
        for i, ex in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, ex, id=f"{rule.code}-{kind}-{i}")


@pytest.mark.parametrize(("rule", "example"), list(_cases("invalid")))
def test_invalid_example_is_reported(rule, example):
    ex = example if isinstance(example, Example) else Example(example)
    findings = check_source(ex.code, ex.filename, _settings(rule, ex.mxnet), ex.project)
    hits = [f for f in findings if f.code == rule.code]
    assert hits, f"{rule.code} not reported on:\n{ex.code}"
    if ex.line is not None:
        assert ex.line in [f.location.row for f in hits], [f.location.row for f in hits]
    if ex.expected_fix is not None:
        fixable = [f for f in hits if f.fix is not None]
        assert fixable, f"{rule.code} offers no fix"
        fixed = apply_edits(ex.code, [e for f in fixable[:1] for e in f.fix.edits])
        # As `--fix` applies it: with the imports it leaves unused.
        fixed = remove_unused_imports(ex.code, fixed, PurePath(ex.filename))
        assert fixed == ex.expected_fix


@pytest.mark.parametrize(("rule", "example"), list(_cases("valid")))
def test_valid_example_is_silent(rule, example):
    ex = example if isinstance(example, Valid) else Valid(example)
    findings = check_source(ex.code, ex.filename, _settings(rule, ex.mxnet), ex.project)
    assert [f for f in findings if f.code == rule.code] == []


def test_every_python_rule_has_examples():
    for rule in PY_RULES:
        if rule.code.startswith("MXL0"):
            continue
        assert rule.invalid, f"{rule.code} has no invalid example"
        assert rule.valid, f"{rule.code} has no valid example"
