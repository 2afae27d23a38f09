"""Where a run's files come from: discovery under the paths given, reading, decoding, the name a
file is shown by, its module name, and the MXL003 finding for what cannot be read or listed.

Everything above (the engine, the workers, the runner, fixes) takes a file path down through
here; nothing here lints.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from mxlint import registry
from mxlint.parsing import decode_source
from mxlint.rule import Finding, Location
from mxlint.settings import Settings

#: `mxlint.notebooks.SUFFIX`, named here so that discovery does not load the notebook reader.
NOTEBOOK_SUFFIX = ".ipynb"

__all__ = [
    "NOTEBOOK_SUFFIX",
    "decode_source",
    "discover",
    "display",
    "is_force_excluded",
    "module_name_for",
    "read_regular",
    "read_text",
    "unlisted_findings",
    "unreadable_finding",
    "why_unreadable",
]


def discover(
    paths: Sequence[Path], settings: Settings, *, unlisted: list[tuple[Path, OSError]] | None = None
) -> tuple[list[Path], list[Path]]:
    """Python files (and notebooks) and the files a text checker reads, in a stable order: under
    a directory those its name patterns match, and any file named in `paths` that one reads.
    Under a directory, excluded entries are left out, and so are files git ignores unless
    `settings.respect_gitignore` is off. A path named in `paths` is always checked (a
    directory is walked), unless `settings.force_exclude` applies both to it too.

    Directories that cannot be listed go to `unlisted` (nothing under them is checked)."""
    text_types = registry.text_checkers()
    python: list[Path] = []
    text: list[Path] = []
    seen: set[Path] = set()
    named_out = _force_excluded(paths, settings) if settings.force_exclude else set()

    def consider(path: Path, explicit: bool) -> None:
        if path in seen:
            return
        if not explicit and settings.is_excluded(path, ancestors=False):
            return
        if path.suffix == ".py" or (explicit and path.suffix == ".pyi"):
            if not path.is_dir():
                seen.add(path)
                python.append(path)
                # setup.py is also a dependency file, read (never run) by a text checker.
                if any(t.matches(path.as_posix()) for t in text_types):
                    text.append(path)
        elif path.suffix == NOTEBOOK_SUFFIX:
            if not path.is_dir():
                seen.add(path)
                python.append(path)  # lint_file reads it as a notebook
        elif any(t.matches(path.as_posix()) for t in text_types) or (
            explicit and any(t.reads_named(path.as_posix()) for t in text_types)
        ):
            seen.add(path)
            text.append(path)

    for root in paths:
        if root in named_out:
            continue
        if root.is_dir():
            first_python, first_text = len(python), len(text)
            for path in _walk(root, settings, unlisted):
                consider(path, explicit=False)
            if settings.respect_gitignore:
                from mxlint.gitignore import ignored

                found = python[first_python:] + text[first_text:]
                skipped = ignored(root, list(dict.fromkeys(found)))
                if skipped:
                    python[first_python:] = [p for p in python[first_python:] if p not in skipped]
                    text[first_text:] = [p for p in text[first_text:] if p not in skipped]
                    seen -= skipped  # named later on the command line, it is checked
        else:
            consider(root, explicit=True)
    return python, text


def is_force_excluded(path: Path, settings: Settings) -> bool:
    """Whether `--force-exclude` leaves out `path`, a name given by the user (a file named on
    the command line, `--stdin-filename`)."""
    return path in _force_excluded([path], settings)


def _force_excluded(paths: Sequence[Path], settings: Settings) -> set[Path]:
    """Those of the named `paths` an exclude pattern matches (the path or a directory above it,
    up to the project root), or git ignores when `settings.respect_gitignore` is on."""
    out = {p for p in paths if settings.is_excluded(p)}
    rest = [p for p in paths if p not in out]
    if rest and settings.respect_gitignore:
        from mxlint.gitignore import ignored_named

        out |= ignored_named(rest)
    return out


def _walk(
    root: Path, settings: Settings, unlisted: list[tuple[Path, OSError]] | None = None
) -> Iterator[Path]:
    def failed(exc: OSError) -> None:
        if unlisted is not None and exc.filename is not None:
            unlisted.append((Path(exc.filename), exc))

    for dirpath, dirnames, filenames in os.walk(root, onerror=failed):
        base = Path(dirpath)
        dirnames[:] = sorted(
            d for d in dirnames if not settings.is_excluded(base / d, ancestors=False)
        )
        for name in sorted(filenames):
            yield base / name


def unlisted_findings(unlisted: list[tuple[Path, OSError]]) -> list[Finding]:
    """An MXL003 per directory that could not be listed: silently skipping it would pass
    every file under it unchecked."""
    return [
        unreadable_finding(
            display(path),
            Location(1, 1),
            f"cannot list the directory ({exc.strerror or exc}); nothing in it is checked",
        )
        for path, exc in unlisted
    ]


def unreadable_finding(shown: str, loc: Location, detail: str) -> Finding:
    """MXL003 for a file or directory mxlint could not read (selection is the funnel's)."""
    rule = registry.all_rules()["MXL003"]
    return Finding(rule.code, rule.format(detail=detail), shown, loc, loc)


def display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def read_regular(path: Path) -> bytes:
    """The bytes of a regular file: reading a FIFO or a device named `x.py` would never end."""
    if not stat.S_ISREG(path.stat().st_mode):
        raise OSError(errno.EINVAL, "not a regular file")
    return path.read_bytes()


def read_text(path: Path) -> str:
    """A dependency file's text (requirements, Dockerfile...), with universal newlines as
    `Path.read_text` reads; bytes that are not UTF-8 are replaced, never fatal."""
    text = read_regular(path).decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def why_unreadable(exc: Exception, data: bytes) -> tuple[Location, str]:
    """Where and why a file cannot be read or decoded."""
    if isinstance(exc, OSError):
        return Location(1, 1), exc.strerror or str(exc)
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return Location(1, 1), (
            "the file is UTF-16 or UTF-32; Python source must be UTF-8 or "
            "an ASCII-compatible encoding declared in a coding comment"
        )
    if isinstance(exc, SyntaxError):  # no valid coding line: point at the first bad byte
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            exc = bad
    if isinstance(exc, UnicodeDecodeError):
        lines = re.split(rb"\r\n|\r|\n", data[: exc.start])
        column = len(lines[-1].decode(exc.encoding, errors="replace")) + 1
        byte = data[exc.start : exc.start + 1].hex()
        return Location(len(lines), column), (
            f"byte 0x{byte} is not valid {exc.encoding} ({exc.reason}); declare the file's "
            "encoding in a coding comment (`# -*- coding: latin-1 -*-`) or save it as UTF-8"
        )
    return Location(1, 1), str(exc)


def module_name_for(path: Path, packages: dict[Path, list[str]] | None = None) -> tuple[str, bool]:
    """Dotted module name of a file from the packages (`__init__.py`) above it.

    `packages`: the package path of each directory seen so far, for callers that name many
    files (the directories above them are then looked at once, not once per file)."""
    path = path.resolve() if path.exists() else path
    is_package = path.name == "__init__.py"
    package = packages.get(path.parent) if packages is not None else None
    if package is None:
        package = []
        directory = path.parent
        while (directory / "__init__.py").is_file() and directory.parent != directory:
            package.append(directory.name)
            directory = directory.parent
        package.reverse()
        if packages is not None:
            packages[path.parent] = package
    parts = package if is_package else [*package, path.stem]
    return ".".join(p for p in parts if p), is_package
