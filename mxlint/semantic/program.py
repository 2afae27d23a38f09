"""The program model: which files of a run other files import.

A `if __name__ == "__main__":` block marks a file that can run as a program, but a library
module often ends with one only to try itself out (a smoke test). A file other files of the
run import is a module first: its main block is not where a training run starts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

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


class ImportGraph:
    """The modules the files of a run import, for asking whether a module is imported."""

    def __init__(self, imports: Iterable[tuple[str, Iterable[str]]]) -> None:
        #: Every dotted prefix of an imported name -> the modules that import it.
        self._importers: dict[str, set[str]] = {}
        for importer, names in imports:
            for name in names:
                parts = name.split(".")
                for end in range(1, len(parts) + 1):
                    self._importers.setdefault(".".join(parts[:end]), set()).add(importer)

    def is_imported(self, module: str) -> bool:
        """Whether another file imports `module` (written in full, or relative to a directory
        the run did not treat as a package: `image_iter` for `recognition.image_iter`)."""
        if not module:
            return False
        parts = module.split(".")
        for start in range(len(parts)):
            importers = self._importers.get(".".join(parts[start:]))
            if importers and importers - {module}:
                return True
        return False
