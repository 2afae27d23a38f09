"""The launch checker (MXL801, MXL807): reads the run's shell scripts, Dockerfiles and the Python
files that set `DMLC_ROLE`, all together, into the processes each starts (`_launches.py`), and
judges them as jobs (`inconsistent_dmlc_settings.py`) and the options they pass to the run's
Python scripts (`undeclared_launch_option.py`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from mxlint.checker import CommentStyle, TextChecker
from mxlint.rule import Finding
from mxlint.rules.distributed.inconsistent_dmlc_settings import InconsistentDmlcSettings
from mxlint.rules.distributed.undeclared_launch_option import UndeclaredLaunchOption
from mxlint.rules.versions._files import file_kind

if TYPE_CHECKING:
    from mxlint.settings import Settings

_SHELL_SUFFIXES = (".sh", ".bash")


class LaunchFilesChecker(TextChecker):
    """Shell scripts, Dockerfiles and Python files, read together as the project's jobs."""

    rules = (InconsistentDmlcSettings, UndeclaredLaunchOption)
    name = "launch"

    @classmethod
    def comment_style(cls, filename: str) -> CommentStyle:
        """Dockerfiles as the versions rules read them (a comment line covers the instruction
        below it: a `#` after an instruction is no comment to Docker); a shell command continued
        with backslashes as a requirements entry is read (the comment goes on its last line,
        where it ends no continuation, and covers every line of the command)."""
        if file_kind(filename) == "dockerfile":
            return "dockerfile"
        return "requirements" if filename.lower().endswith(_SHELL_SUFFIXES) else "line"

    @classmethod
    def matches(cls, filename: str) -> bool:
        lowered = filename.lower()
        if lowered.endswith((*_SHELL_SUFFIXES, ".py")):
            return True
        return file_kind(filename) == "dockerfile"

    def check_files(self, files: list[tuple[str, str]], settings: Settings) -> list[Finding]:
        shells = [(p, t) for p, t in files if p.lower().endswith(_SHELL_SUFFIXES)]
        if not shells and not any("DMLC_" in text for _, text in files):
            return []
        from mxlint.rules.distributed import (
            _launches,
            inconsistent_dmlc_settings,
            undeclared_launch_option,
        )

        read = []
        python: dict[str, str] = {}
        for path, text in files:
            lowered = path.lower()
            if lowered.endswith(".py"):
                python[os.path.normpath(path)] = text
                if "DMLC_" in text:
                    read.append(_launches.read_python(path, text))
            elif lowered.endswith(_SHELL_SUFFIXES):
                read.append(_launches.read_shell(path, text))
            elif "DMLC_" in text and file_kind(os.path.basename(path)) == "dockerfile":
                read.append(_launches.read_dockerfile(path, text))
        found = []
        if settings.code_enabled(InconsistentDmlcSettings):
            found += inconsistent_dmlc_settings.check(read)
        if settings.code_enabled(UndeclaredLaunchOption):
            found += undeclared_launch_option.check(read, python)
        return found
