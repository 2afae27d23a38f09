"""A run over paths: discover files, lint each once, then resolve cross-file facts."""

from __future__ import annotations

import codecs
import errno
import io
import os
import re
import stat
import tokenize
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mxlint import notebooks, registry, suppressions
from mxlint.config import Settings
from mxlint.engine import FileResult, internal_error, lint_source
from mxlint.project import ProjectIndex
from mxlint.rule import Finding, Location

if TYPE_CHECKING:
    from mxlint.cache import Cache
    from mxlint.checker import TextChecker


@dataclass
class RunResult:
    findings: list[Finding] = field(default_factory=list)
    files_checked: int = 0
    error: bool = False


def decode_source(data: bytes) -> str:
    """Decode Python source as the interpreter would (PEP 263 cookie, BOM); raises on bad bytes."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def discover(
    paths: Sequence[Path], settings: Settings, *, unlisted: list[tuple[Path, OSError]] | None = None
) -> tuple[list[Path], list[Path]]:
    """Python files (and notebooks) and the files a text checker reads, in a stable order.

    Directories that cannot be listed go to `unlisted` (nothing under them is checked)."""
    text_types = registry.text_checkers()
    python: list[Path] = []
    text: list[Path] = []
    seen: set[Path] = set()

    def consider(path: Path, explicit: bool) -> None:
        if path in seen:
            return
        if settings.is_excluded(path):
            return
        if path.suffix == ".py" or (explicit and path.suffix == ".pyi"):
            if not path.is_dir():
                seen.add(path)
                python.append(path)
                # setup.py is also a dependency file, read (never run) by a text checker.
                if any(t.matches(path.name) for t in text_types):
                    text.append(path)
        elif path.suffix == notebooks.SUFFIX:
            if not path.is_dir():
                seen.add(path)
                python.append(path)  # lint_file reads it as a notebook
        elif any(t.matches(path.name) for t in text_types):
            seen.add(path)
            text.append(path)

    for root in paths:
        if root.is_dir():
            for path in _walk(root, settings, unlisted):
                consider(path, explicit=False)
        else:
            consider(root, explicit=True)
    return python, text


def _walk(
    root: Path, settings: Settings, unlisted: list[tuple[Path, OSError]] | None = None
) -> Iterator[Path]:
    def failed(exc: OSError) -> None:
        if unlisted is not None and exc.filename is not None:
            unlisted.append((Path(exc.filename), exc))

    for dirpath, dirnames, filenames in os.walk(root, onerror=failed):
        base = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not settings.is_excluded(base / d))
        for name in sorted(filenames):
            yield base / name


def _unlisted(unlisted: list[tuple[Path, OSError]], settings: Settings) -> list[Finding]:
    """An MXL003 per directory that could not be listed: silently skipping it would pass
    every file under it unchecked."""
    out = []
    for path, exc in unlisted:
        detail = f"cannot list the directory ({exc.strerror or exc}); nothing in it is checked"
        result = _unreadable_result(_display(path), Location(1, 1), detail, settings)
        out.extend(result.findings)
    return out


def _unreadable_result(shown: str, loc: Location, detail: str, settings: Settings) -> FileResult:
    """MXL003 (where enabled) for a file or directory mxlint could not read."""
    rule = registry.all_rules()["MXL003"]
    result = FileResult(shown)
    if settings.enabled(rule, shown):
        result.findings.append(Finding(rule.code, rule.format(detail=detail), shown, loc, loc))
    return result


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def read_regular(path: Path) -> bytes:
    """The bytes of a regular file: reading a FIFO or a device named `x.py` would never end."""
    if not stat.S_ISREG(path.stat().st_mode):
        raise OSError(errno.EINVAL, "not a regular file")
    return path.read_bytes()


def lint_file(path: Path, settings: Settings, data: bytes | None = None) -> FileResult:
    """Lint one file; `data`, when given, is its content already read (e.g. to hash it)."""
    shown = _display(path)
    content = b"" if data is None else data
    try:
        if data is None:
            content = read_regular(path)
        if path.suffix == notebooks.SUFFIX:
            return notebooks.lint_notebook(shown, content, settings)
        source = decode_source(content)
    except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
        return _unreadable_result(shown, *_unreadable(exc, content), settings)
    return lint_source(shown, source, settings)


def _unreadable(exc: Exception, data: bytes) -> tuple[Location, str]:
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


def resolve_project(
    results: Iterable[FileResult], settings: Settings, sources: Mapping[str, str] | None = None
) -> list[Finding]:
    """Findings that need the whole run: conditional ones and checkers' cross-file reports.
    `sources` gives the text of files checked from memory rather than read from disk."""
    results = list(results)
    index = ProjectIndex((r.facts for r in results if r.facts is not None), settings, sources)
    findings: list[Finding] = []
    for result in results:
        for finding, requirement in result.conditional:
            if index.satisfies(requirement):
                findings.append(finding)
    from mxlint.engine import enabled_checkers

    failures: list[Finding] = []
    for checker in enabled_checkers(settings):
        try:
            found = checker.finalize(index)
        except Exception as exc:  # a rule bug must not stop the run
            if results:
                failures.append(
                    internal_error(results[0].path, f"{checker.__name__} (cross-file)", exc)
                )
            continue
        for finding in found:
            rule = registry.get_rule(finding.code)
            if rule is not None and settings.enabled(rule, finding.filename):
                findings.append(finding)
    return suppressions.filter_cross_file(findings, results, settings) + failures


def check_text_files(paths: Sequence[Path], settings: Settings) -> list[Finding]:
    findings: list[Finding] = []
    for checker_type in registry.text_checkers():
        if not any(settings.code_enabled(r) for r in checker_type.rules):
            continue
        files: list[tuple[str, str]] = []
        for path in paths:
            if not checker_type.matches(path.name):
                continue
            try:
                text = read_regular(path).decode("utf-8", errors="replace")
                # Universal newlines, as Path.read_text reads.
                files.append((_display(path), text.replace("\r\n", "\n").replace("\r", "\n")))
            except OSError:
                continue
        if files:
            found = _check_text(checker_type, files, settings)
            for finding in suppressions.filter_text(found, dict(files)):
                rule = registry.get_rule(finding.code)
                if rule is not None and settings.enabled(rule, finding.filename):
                    findings.append(finding)
    return findings


def _check_text(
    checker_type: type[TextChecker], files: list[tuple[str, str]], settings: Settings
) -> list[Finding]:
    """A text checker over the files of the run; if it raises, each file alone, so that one
    file that breaks it gets an MXL002 and every other file still reports."""
    try:
        return checker_type().check_files(files, settings)
    except Exception:  # a rule bug must not stop the run
        pass
    good: list[tuple[str, str]] = []
    failures: list[Finding] = []
    for name, text in files:
        try:
            checker_type().check_files([(name, text)], settings)
        except Exception as exc:
            failures.append(internal_error(name, checker_type.__name__, exc))
        else:
            good.append((name, text))
    try:
        found = checker_type().check_files(good, settings) if good else []
    except Exception:  # only together: each good file on its own
        found = [f for item in good for f in checker_type().check_files([item], settings)]
    return found + failures


def run(
    paths: Sequence[Path], settings: Settings, *, jobs: int = 1, cache: Cache | None = None
) -> RunResult:
    """Lint `paths`: each file on its own (`jobs` processes; 0 = one per core; results of
    unchanged files from `cache`), then what needs every file, then dependency files."""
    from mxlint.workers import lint_all

    unlisted: list[tuple[Path, OSError]] = []
    python, text = discover(paths, settings, unlisted=unlisted)
    out = RunResult(files_checked=len(python) + len(text))
    out.findings.extend(_unlisted(unlisted, settings))
    results = lint_all(python, settings, jobs=jobs, cache=cache)
    for r in results:
        out.findings.extend(r.findings)
        out.error = out.error or r.error
    out.findings.extend(resolve_project(results, settings))
    out.findings.extend(check_text_files(text, settings))
    # A checker that failed on the whole project or on a dependency file is an error too.
    out.error = out.error or any(f.code == "MXL002" for f in out.findings)
    out.findings.sort(key=Finding.sort_key)
    return out
