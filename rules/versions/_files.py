"""Which files the versions rules read, by name."""

from __future__ import annotations

import fnmatch
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


_REQ_FILE = re.compile(r"^(?:.*requirements.*|.*constraints.*)\.(?:txt|in|pip)$", re.I)
_DOCKERFILE = re.compile(r"^(?:dockerfile(?:[._-].*)?|.*\.dockerfile|containerfile)$", re.I)
_ENV_FILE = re.compile(r"^(?:environment|conda|env)[._-]?.*\.ya?ml$", re.I)


def file_kind(basename: str) -> str | None:
    if basename == "pyproject.toml":
        return "pyproject"
    if basename == "setup.cfg":
        return "setup.cfg"
    if basename == "setup.py":
        return "setup.py"
    if _REQ_FILE.match(basename):
        return "requirements"
    if _DOCKERFILE.match(basename):
        return "dockerfile"
    if _ENV_FILE.match(basename) or fnmatch.fnmatch(basename, "environment*.y*ml"):
        return "environment"
    return None
