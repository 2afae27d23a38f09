from __future__ import annotations

import ast
import re
from pathlib import Path

from mxlint import registry
from mxlint.rule import FAMILIES, FAMILY_FOLDERS

ROOT = Path(__file__).resolve().parents[1]


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


def test_every_reported_rule_belongs_to_one_checker_per_kind_of_file():
    """One Python checker decides a rule on Python files, one text checker on the other files
    it reads (the environment rules read `os.environ` writes and Dockerfiles or launch
    scripts alike): never two analyses of the same file for one code."""
    for checkers in (registry.python_checkers(), registry.text_checkers()):
        owners: dict[str, str] = {}
        for checker in checkers:
            for rule in checker.rules:
                assert rule.code not in owners, (rule.code, owners.get(rule.code), checker.__name__)
                owners[rule.code] = checker.__name__


def test_each_rule_has_its_own_file_in_its_family_folder():
    """`rules/<family>/<rule>.py`: one rule per file, in the folder of its code's family, so
    that a rule's page (`Defined in ...`) leads to the one file that holds it."""
    files: dict[str, str] = {}
    for code, rule in registry.all_rules().items():
        path = rule.source_file()
        folder = FAMILY_FOLDERS[code[3]]
        assert re.fullmatch(rf"rules/{folder}/[a-z][a-z0-9_]*\.py", path), (code, path)
        assert path not in files, f"{code} and {files[path]} share {path}"
        files[path] = code
        assert (ROOT / path).is_file(), path
        assert f"Defined in `{path}`" in rule.documentation()


def test_rule_examples_are_written_inside_the_class():
    """Examples next to the code they test: never attached after the module ends."""
    for code, rule in registry.all_rules().items():
        tree = ast.parse((ROOT / rule.source_file()).read_text(encoding="utf-8"))
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                assert not isinstance(target, ast.Attribute), (code, ast.unparse(target))
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == rule.__name__)
        assigned = {
            t.id
            for n in cls.body
            if isinstance(n, ast.Assign)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        assert {"code", "message", "what", "why"} <= assigned, (code, sorted(assigned))
