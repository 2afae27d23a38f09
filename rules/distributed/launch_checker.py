"""The launch checker (MXL801): reads the run's shell scripts, Dockerfiles and the Python files
that set `DMLC_ROLE`, all together, into the processes each starts (`_launches.py`), and judges
them as jobs (`inconsistent_dmlc_settings.py`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from mxlint.checker import TextChecker
from mxlint.rule import Finding
from mxlint.rules.distributed.inconsistent_dmlc_settings import InconsistentDmlcSettings
from mxlint.rules.versions._files import file_kind

if TYPE_CHECKING:
    from mxlint.settings import Settings

_SHELL_SUFFIXES = (".sh", ".bash")


class LaunchFilesChecker(TextChecker):
    """Shell scripts, Dockerfiles and Python files, read together as the project's jobs."""

    rules = (InconsistentDmlcSettings,)
    name = "launch"

    @classmethod
    def matches(cls, filename: str) -> bool:
        lowered = filename.lower()
        if lowered.endswith((*_SHELL_SUFFIXES, ".py")):
            return True
        return file_kind(filename) == "dockerfile"

    def check_files(self, files: list[tuple[str, str]], settings: Settings) -> list[Finding]:
        if not any("DMLC_" in text for _, text in files):
            return []
        from mxlint.rules.distributed import _launches, inconsistent_dmlc_settings

        read = []
        for path, text in files:
            if "DMLC_" not in text:
                continue
            lowered = path.lower()
            if lowered.endswith(".py"):
                read.append(_launches.read_python(path, text))
            elif lowered.endswith(_SHELL_SUFFIXES):
                read.append(_launches.read_shell(path, text))
            elif file_kind(os.path.basename(path)) == "dockerfile":
                read.append(_launches.read_dockerfile(path, text))
        return inconsistent_dmlc_settings.check(read)
