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


def test_the_rules_are_listed_as_pkgutil_lists_them(tmp_path):
    """`registry._listing` reads the folders itself (a tenth of `pkgutil.iter_modules`' time):
    the same modules and packages, in name order, for every folder of the rules."""
    import importlib
    import pkgutil

    import mxlint.rules as rules_package
    from mxlint import registry

    def listed(path: list[str]) -> list[tuple[str, bool]]:
        return sorted((i.name, i.ispkg) for i in pkgutil.iter_modules(path))

    folders = [list(rules_package.__path__)]
    for name, is_package in registry._listing(folders[0]):
        if is_package:
            folders.append(list(importlib.import_module(f"mxlint.rules.{name}").__path__))
    assert len(folders) > 5
    for path in folders:
        assert registry._listing(path) == listed(path)
    # Not modules: data files, a folder with no __init__.py, caches, names Python cannot import.
    (tmp_path / "rule_a.py").write_text("")
    (tmp_path / "notes.txt").write_text("")
    (tmp_path / "fam").mkdir()
    (tmp_path / "fam" / "__init__.py").write_text("")
    (tmp_path / "loose").mkdir()
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "bad-name.py").write_text("")
    assert registry._listing([str(tmp_path)]) == [("fam", True), ("rule_a", False)]
