"""The single source of truth for rules: every rule module under `mxlint.rules` (one folder per
family, one file per rule), loaded once."""

from __future__ import annotations

import importlib
import os
from functools import lru_cache

from mxlint.checker import Checker, TextChecker
from mxlint.rule import CODE_RE, Rule


class RegistryError(Exception):
    pass


@lru_cache(maxsize=1)
def _load() -> tuple[
    dict[str, type[Rule]], tuple[type[Checker], ...], tuple[type[TextChecker], ...]
]:
    rules: dict[str, type[Rule]] = {}
    checkers: list[type[Checker]] = []
    text_checkers: list[type[TextChecker]] = []
    for name in rule_module_names():
        module = importlib.import_module(name)
        for obj in vars(module).values():
            if not isinstance(obj, type) or obj.__module__ != module.__name__:
                continue
            if issubclass(obj, Rule) and obj is not Rule and "code" in vars(obj):
                if not CODE_RE.match(obj.code):
                    raise RegistryError(f"{obj.__name__}: bad code {obj.code!r}")
                if obj.code in rules and rules[obj.code] is not obj:
                    raise RegistryError(
                        f"duplicate code {obj.code}: {rules[obj.code].__name__} and {obj.__name__}"
                    )
                rules[obj.code] = obj
            elif issubclass(obj, Checker) and obj is not Checker and obj.rules:
                checkers.append(obj)
            elif issubclass(obj, TextChecker) and obj is not TextChecker and obj.rules:
                text_checkers.append(obj)
    owners: list[type[Checker] | type[TextChecker]] = [*checkers, *text_checkers]
    for checker in owners:
        for rule in checker.rules:
            if rules.get(rule.code) is not rule:
                raise RegistryError(
                    f"{checker.__name__} reports {rule.code}, which is not defined in a rule module"
                )
    return dict(sorted(rules.items())), tuple(checkers), tuple(text_checkers)


def _rule_modules(path: list[str], prefix: str) -> list[str]:
    """Every public module of the rules package and of its family folders (`rules/memory/...`),
    in name order. Names starting with `_` hold a family's shared analysis: rule modules import
    what they use of it, and the registry does not (some of it loads only when needed)."""
    names: list[str] = []
    for module, is_package in _listing(path):
        if module.startswith("_"):
            continue
        name = f"{prefix}.{module}"
        if is_package:
            package = importlib.import_module(name)
            names.extend(_rule_modules(list(package.__path__), name))
        else:
            names.append(name)
    return names


def _listing(path: list[str]) -> list[tuple[str, bool]]:
    """The modules (`x.py`) and packages (`x/__init__.py`) in the folders `path`, by name: what
    `pkgutil.iter_modules` lists of source folders, in a tenth of its time (every run lists
    the rules)."""
    found: dict[str, bool] = {}
    for folder in path:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if name.endswith(".py") and name != "__init__.py" and entry.is_file():
                found.setdefault(name[:-3], False)
            elif (
                "." not in name
                and entry.is_dir()
                and os.path.isfile(os.path.join(entry.path, "__init__.py"))
            ):
                found.setdefault(name, True)
    return sorted((n, p) for n, p in found.items() if n.isidentifier())


def rule_module_names() -> list[str]:
    """The rule modules `_load` imports (only their family packages are imported to list them)."""
    import mxlint.rules as pkg

    return _rule_modules(pkg.__path__, pkg.__name__)


def all_rules() -> dict[str, type[Rule]]:
    return _load()[0]


def get_rule(code: str) -> type[Rule] | None:
    return _load()[0].get(code)


def python_checkers() -> tuple[type[Checker], ...]:
    return _load()[1]


def text_checkers() -> tuple[type[TextChecker], ...]:
    return _load()[2]
