"""Which files the versions rules read: by name (and, for `requirements/*.txt`, by directory), and
any file named on the command line that no name claims, read as a requirements file."""

from __future__ import annotations

import fnmatch
import functools
import os
import re

_REQ_FILE = re.compile(r"^(?:.*requirements.*|.*constraints.*)\.(?:txt|in|pip)$", re.I)
_REQ_SUFFIX = re.compile(r"\.(?:txt|in|pip)$", re.I)
_DOCKERFILE = re.compile(r"^(?:dockerfile(?:[._-].*)?|.*\.dockerfile|containerfile)$", re.I)
_ENV_FILE = re.compile(r"^(?:environment|conda|env)[._-]?.*\.ya?ml$", re.I)
_PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")
#: Documents, data and configuration of other tools: a file named on the command line with one
#: of these suffixes is not a requirements file whatever it mentions (a README quoting
#: `pip install mxnet` is prose, not a list of requirements).
_NOT_REQUIREMENTS = (
    *_PYTHON_SUFFIXES,
    ".md",
    ".markdown",
    ".rst",
    ".adoc",
    ".html",
    ".htm",
    ".json",
    ".yaml",
    ".yml",
    ".toml",
    ".cfg",
    ".ini",
    ".csv",
    ".tsv",
    ".log",
    ".png",
    ".jpg",
    ".jpeg",
    ".gif",
    ".svg",
    ".pdf",
)


@functools.lru_cache(maxsize=256)
def file_kind(path: str) -> str | None:
    """The kind of dependency file `path` is by its name; None for any other file. (Asked by
    each text checker in turn about every file a run finds: kept for the last few.)"""
    basename = os.path.basename(path)
    if basename == "pyproject.toml":
        return "pyproject"
    if basename == "setup.cfg":
        return "setup.cfg"
    if basename == "setup.py":
        return "setup.py"
    if _REQ_FILE.match(basename):
        return "requirements"
    # `requirements/base.txt`, `requirements/dev.in`: the directory names what they are.
    parent = os.path.basename(os.path.dirname(path.replace("\\", "/")))
    if parent.lower() == "requirements" and _REQ_SUFFIX.search(basename):
        return "requirements"
    if _DOCKERFILE.match(basename):
        return "dockerfile"
    if _ENV_FILE.match(basename) or fnmatch.fnmatch(basename, "environment*.y*ml"):
        return "environment"
    return None


def named_kind(path: str) -> str | None:
    """The kind of a file named on the command line: what its name says, else a requirements
    file (pip reads `-r` files whatever their name, and so does a named file here), unless its
    suffix says it is a document, data or another tool's configuration."""
    kind = file_kind(path)
    if kind is None and not path.lower().endswith(_NOT_REQUIREMENTS):
        return "requirements"
    return kind
