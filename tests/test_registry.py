from __future__ import annotations

import re

from mxlint import registry
from mxlint.rule import FAMILIES


def test_codes_are_unique_and_well_formed():
    rules = registry.all_rules()
    names = [r.name for r in rules.values()]
    assert len(names) == len(set(names)), "rule names must be unique"
    for code, rule in rules.items():
        assert re.fullmatch(r"MXL\d{3}", code)
        assert rule.code == code
        assert code[3] in FAMILIES


def test_every_rule_is_documented():
    for rule in registry.all_rules().values():
        doc = rule.documentation()
        for heading in (
            "## What it does",
            "## Why is this bad?",
            "## Example",
            "## Use instead",
            "## Fix safety",
        ):
            assert heading in doc, (rule.code, heading)
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name), rule.name
        assert rule.message.strip()


def test_every_reported_rule_belongs_to_one_checker():
    owners: dict[str, str] = {}
    for checker in (*registry.python_checkers(), *registry.text_checkers()):
        for rule in checker.rules:
            assert rule.code not in owners, (rule.code, owners.get(rule.code), checker.__name__)
            owners[rule.code] = checker.__name__
