"""The program model: which files of a run other files import.

A `if __name__ == "__main__":` block marks a file that can run as a program, but a library
module often ends with one only to try itself out (a smoke test). A file other files of the
run import is a module first: its main block is not where a training run starts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path, PurePath

#: `name = package.module:function` in `console_scripts`, `[project.scripts]`,
#: `[tool.poetry.scripts]` or `[options.entry_points]`.
_SCRIPT = re.compile(r"""=\s*["']?([A-Za-z_][\w.]*)\s*:\s*[A-Za-z_][\w.]*""")
_PACKAGING_FILES = ("setup.py", "setup.cfg", "pyproject.toml")


def console_script_modules(root: Path) -> frozenset[str]:
    """Modules a project installs as commands (their `main` runs as a program)."""
    found: set[str] = set()
    for name in _PACKAGING_FILES:
        try:
            text = (root / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if "scripts" not in text and "entry_points" not in text:
            continue
        found.update(m.group(1) for m in _SCRIPT.finditer(text))
    return frozenset(found)


def is_test_file(path: str) -> bool:
    """A test module: under a `test`/`tests`/`testing` directory, or named `test_*.py` or
    `*_test.py`. Tests set bad values and leave switches on on purpose."""
    parts = path.replace("\\", "/").split("/")
    return any(p in ("test", "tests", "testing") for p in parts[:-1]) or bool(
        re.match(r"(?:test_.*|.*_test)\.py$", parts[-1])
    )


def import_root(module: str, path: str, is_package: bool | None = None) -> PurePath:
    """Where absolute imports of the file at `path` (read as `module`) start: its folder for a
    script, above its top package for a module of a package (`core/__init__.py` as `core`:
    the folder holding `core/`). `is_package` defaults to whether the file is an
    `__init__.py`."""
    if is_package is None:
        is_package = PurePath(path).name == "__init__.py"
    root = PurePath(path).parent
    for _ in range(module.count(".") + (1 if is_package else 0)):
        root = root.parent
    return root


#: The separator `PurePath` writes between parts.
_SEP = str(PurePath("a", "b"))[1]


class ImportGraph:
    """The modules the files of a run import, for asking whether a module is imported."""

    def __init__(self, files: Iterable[tuple[str, str, Iterable[str]]]) -> None:
        #: Every dotted prefix of an imported name -> the (module, directory) that import it.
        self._importers: dict[str, set[tuple[str, str]]] = {}
        #: Files a dotted import names through directories without `__init__.py` (namespace
        #: packages found from the importer's folder): `a/b/c.py` for `a.b.c` -> importers.
        self._by_file: dict[str, set[str]] = {}
        for importer, path, names in files:
            folder = str(PurePath(path).parent)
            root = import_root(importer, path)
            # `str(PurePath(root, *parts))` as text: the root's own text once per file (a
            # path object per dotted prefix was most of a large run's cross-file pass).
            head = str(PurePath(root, "_"))[:-1]
            for name in names:
                parts = name.split(".")
                plain = all(parts)
                for end in range(1, len(parts) + 1):
                    key = ".".join(parts[:end])
                    self._importers.setdefault(key, set()).add((importer, folder))
                    if end > 1:
                        if plain:
                            target = head + _SEP.join(parts[:end]) + ".py"
                        else:
                            target = str(PurePath(root, *parts[:end]).with_suffix(".py"))
                        self._by_file.setdefault(target, set()).add(importer)

    def is_imported(self, module: str, path: str) -> bool:
        """Whether another file imports `module` (the file at `path`). A module of a package
        is found by its full name; a top-level module (a script's neighbour, `image_iter`)
        only by files of its own folder, where Python finds it: a `train` imported in one
        folder says nothing of a `train.py` in another. A dotted import from a script's folder
        through directories without `__init__.py` (`multivariate.datasets.dataset`) names the
        file it finds there."""
        if not module:
            return False
        if self._by_file.get(str(PurePath(path)), set()) - {module}:
            return True  # `from pkg.sub.mod import ...` in a script next to `pkg/`
        folder = str(PurePath(path).parent)
        for importer, where in self._importers.get(module, ()):
            if importer == module:
                continue
            if "." in module or where == folder:
                return True
        return False
