"""Readers for the files that declare a Python environment.

Each reader turns one file format into `Requirement` records that point at the exact line and
column of the requirement, so that the versions rules can report there. Readers never execute
anything (setup.py is read with libcst) and never raise on odd syntax: an entry that pip or the
build backend would refuse becomes a `Malformed` record (pip fails on the whole file, so it must
not pass silently); what is not a requirement at all (options, paths, URLs), they skip.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import libcst as cst
from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as PkgRequirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from mxlint.parsing import split_lines

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class Requirement:
    """One declared dependency, where it is written and what it admits."""

    name: str  # canonical (PEP 503): lower case, `-` separated
    specifier: str  # PEP 440 specifier set ("" admits every version)
    line: int  # 1-based
    col: int  # 1-based
    text: str  # as written, for messages
    extras: tuple[str, ...] = ()
    marker: str | None = None
    #: A direct URL, VCS or path reference: the artifact fixes the version.
    direct: bool = False
    #: From a constraints file (`-c`): limits versions, installs nothing.
    constraint: bool = False
    #: From a conda spec (not a PyPI distribution).
    conda: bool = False
    path: str = ""
    #: The syntax node (setup.py) the record came from.
    ref: object = field(default=None, compare=False, hash=False, repr=False)

    def specifier_set(self) -> SpecifierSet | None:
        try:
            return SpecifierSet(self.specifier)
        except InvalidSpecifier:
            return None


@dataclass(frozen=True)
class Include:
    """`-r other.txt` (kind "r") or `-c constraints.txt` (kind "c")."""

    kind: str
    target: str
    line: int


@dataclass(frozen=True)
class Malformed:
    """A dependency entry that pip (or the build backend) refuses: where reading stops, and
    what was probably meant."""

    line: int  # 1-based
    col: int  # 1-based, where reading stops
    text: str  # the entry as written, for messages
    hint: str
    width: int = 1  # columns from `col` to the end of the entry on its line
    path: str = ""
    #: The syntax node (setup.py) the record came from, and the offset of `col` inside its value.
    ref: object = field(default=None, compare=False, hash=False, repr=False)
    offset: int = 0


@dataclass(frozen=True)
class Metadata:
    """Where a package's metadata declares its dependencies (or would): the place to add one."""

    line: int
    col: int
    text: str  # the anchor as written (`install_requires=`, `[project]`), for messages
    target: str  # the dependency list a fix goes into (`install_requires`, `dependencies`)
    ref: object = field(default=None, compare=False, hash=False, repr=False)


@dataclass
class ParsedFile:
    requirements: list[Requirement] = field(default_factory=list)
    includes: list[Include] = field(default_factory=list)
    #: Installs from somewhere other than PyPI (`--find-links`, `--index-url`): builds that
    #: were never on PyPI may exist there.
    custom_index: bool = False
    #: Named dependency groups (extras): group -> requirements, installed on top of the base.
    groups: dict[str, list[Requirement]] = field(default_factory=dict)
    malformed: list[Malformed] = field(default_factory=list)
    #: A package's metadata (setup.py `setup()`, setup.cfg, pyproject `[project]`/Poetry).
    metadata: Metadata | None = None
    #: Dependencies the reader cannot see (`install_requires` computed by a function or read
    #: from a file, PEP 621 `dynamic`): what the metadata declares is unknown.
    opaque: bool = False
    #: Poetry's `python` constraint: its resolver locks versions that install on every Python
    #: the constraint admits.
    lock_python: str | None = None
    #: The Pythons the package installs on (`requires-python`, `python_requires`).
    python_requires: str | None = None


# --- one requirement string ------------------------------------------------------------------

_WHEEL = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.]*)-(\d[^-/]*)-[^/]*\.whl$")
_SDIST = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.-]*?)-(\d[^-/]*)\.(?:tar\.gz|zip|tar\.bz2)$")
_EGG = re.compile(r"#egg=([A-Za-z0-9][A-Za-z0-9_.-]*)")


_URL = re.compile(r"^(?:[a-z+]+://|git\+|hg\+|svn\+|bzr\+|file:)")
_ARCHIVES = (".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar")
_OPERATOR = re.compile(r"^(?:===|==|!=|~=|<=|>=|<|>)")


def parse_requirement(text: str, line: int, col: int) -> Requirement | None:
    """A PEP 508 string (or a bare wheel/sdist/VCS URL) as a record; None if unparseable."""
    text = text.strip()
    if not text or "$" in text:
        return None
    if _URL.match(text):
        return _from_url(text, line, col)
    try:
        req = PkgRequirement(text)
    except InvalidRequirement:
        return None
    return Requirement(
        name=canonicalize_name(req.name),
        specifier=str(req.specifier),
        line=line,
        col=col,
        text=text,
        extras=tuple(sorted(req.extras)),
        marker=str(req.marker) if req.marker else None,
        direct=req.url is not None,
    )


def _from_url(url: str, line: int, col: int) -> Requirement | None:
    base = url.split("#", 1)[0].split("?", 1)[0]
    for pattern in (_WHEEL, _SDIST):
        m = pattern.search(base)
        if m:
            name = canonicalize_name(m.group(1).replace("_", "-"))
            return Requirement(name, f"=={m.group(2)}", line, col, url, direct=True)
    egg = _EGG.search(url)
    if egg:
        return Requirement(canonicalize_name(egg.group(1)), "", line, col, url, direct=True)
    return None


def requirement_problem(text: str, entry: str = "line") -> tuple[int, str] | None:
    """Why pip refuses `text` as a requirement: (offset where reading stops, what was probably
    meant); None if it is one, or is something else pip takes (a path, a URL, a variable).

    `entry` names what holds one requirement ("line" in requirements files, "string" in lists):
    the hint for two requirements run together says what separates them."""
    text = text.strip()
    if not text or "$" in text or _URL.match(text) or _path_like(text):
        return None
    try:
        PkgRequirement(text)
    except InvalidRequirement as exc:
        return _diagnose(text, str(exc), entry)
    return None


def _path_like(text: str) -> bool:
    """pip installs a local directory or archive named on the line (`.`, `./pkg`, `x.whl`)."""
    lower = text.split(";", 1)[0].strip().lower()
    return (
        "/" in lower or "\\" in lower or lower.startswith((".", "~")) or lower.endswith(_ARCHIVES)
    )


def _valid(text: str) -> bool:
    try:
        PkgRequirement(text)
    except InvalidRequirement:
        return False
    return True


def _diagnose(text: str, error: str, entry: str) -> tuple[int, str]:
    lines = error.splitlines()
    caret = lines[2].find("^") - 4 if len(lines) > 2 and "^" in lines[2] else 0
    offset = min(max(caret, 0), len(text) - 1)
    head, rest = text[:offset].rstrip(), text[offset:].strip()
    if head and rest.startswith("=") and not rest.startswith("=="):
        return offset, f"`=` is not a version operator: `{head}=={rest[1:].strip()}`"
    if head and _valid(head):
        if _OPERATOR.match(rest):
            return offset, f"version clauses are separated by commas: `{head},{rest}`"
        if re.match(r"^v?\d", rest):
            return offset, f"a version needs an operator: `{head}=={rest.lstrip('v')}`"
        if re.match(r"^[A-Za-z]", rest) and _valid(rest):
            if entry == "line":
                return offset, f"two requirements run together: put `{rest}` on a line of its own"
            return offset, (
                f"two requirements in one string (a missing comma joins adjacent literals): "
                f"make `{head}` and `{rest}` two entries"
            )
    reason = lines[0].strip() if lines else error
    return offset, reason[:1].lower() + reason[1:]


# --- requirements.txt / constraints.txt --------------------------------------------------------

_COMMENT = re.compile(r"(^|\s+)#.*$")
_PYPI = ("pypi.org", "pypi.python.org", "files.pythonhosted.org")
_INCLUDE_OPTS = {"-r": "r", "--requirement": "r", "-c": "c", "--constraint": "c"}
_INDEX_OPTS = ("-i", "--index-url", "--extra-index-url", "-f", "--find-links")


def _logical_lines(text: str) -> Iterator[tuple[int, str, str]]:
    """(first physical line, logical line, first physical line's text) with `\\` joined."""
    start = 0
    parts: list[str] = []
    first = ""
    for number, raw in enumerate(split_lines(text), start=1):
        if not parts:
            start, first = number, raw
        if raw.endswith("\\") and not _COMMENT.search(raw):
            parts.append(raw[:-1])
            continue
        parts.append(raw)
        yield start, "".join(parts), first
        parts = []
    if parts:
        yield start, "".join(parts), first


def parse_requirements_txt(text: str, constraint: bool = False) -> ParsedFile:
    """pip's requirements/constraints file format: options, includes, hashes, markers, URLs."""
    out = ParsedFile()
    for number, logical, first in _logical_lines(text):
        line = _COMMENT.sub("", logical).strip()
        if not line:
            continue
        if line.startswith("-"):
            _option_line(line, number, out)
            continue
        # Per-requirement options (`--hash=...`) follow the requirement.
        tokens = line.split()
        cut = next((i for i, t in enumerate(tokens) if t.startswith("-")), len(tokens))
        spec = " ".join(tokens[:cut])
        offset = first.find(tokens[0]) if tokens else -1
        col = offset + 1 if offset >= 0 else 1
        req = parse_requirement(spec, number, col)
        if req is not None:
            out.requirements.append(replace(req, constraint=constraint))
            continue
        problem = requirement_problem(spec)
        if problem is not None:
            out.malformed.append(_malformed(spec, first, number, col, *problem))
    return out


def _malformed(spec: str, raw: str, line: int, col: int, offset: int, hint: str) -> Malformed:
    """The record for `spec` written at `col` of `raw`: at the offset where reading stops when
    the entry is written as read (one space between words), else at its start."""
    written = raw[col - 1 :].startswith(spec)
    at = col + offset if written else col
    width = max(len(spec) - offset, 1) if written else max(len(spec), 1)
    return Malformed(line, at, spec, hint, width=min(width, max(len(raw) - at + 1, 1)))


def _option_line(line: str, number: int, out: ParsedFile) -> None:
    # pip separates an option from its value by "=" or by any whitespace (tabs too), and takes
    # a short option's value attached (`-rbase.txt`).
    parts = line.split(None, 1)
    if not parts:
        return
    name, value = parts[0], parts[1].strip() if len(parts) > 1 else ""
    if name.startswith("--") and "=" in name:
        name, _, attached = name.partition("=")
        value = f"{attached} {value}".strip()
    elif len(name) > 2 and name[:2] in ("-r", "-c", "-i", "-f", "-e") and not name.startswith("--"):
        name, value = name[:2], name[2:]
    if name in _INCLUDE_OPTS and value:
        out.includes.append(Include(_INCLUDE_OPTS[name], value.split()[0], number))
    elif name in _INDEX_OPTS and value and not any(host in value for host in _PYPI):
        out.custom_index = True


# --- pyproject.toml ----------------------------------------------------------------------------


def _locate_string(text: str, value: str, used: set[int]) -> tuple[int, int]:
    """(line, col) of the quoted `value` in `text`, the first occurrence not used yet."""
    for quote in ('"', "'"):
        needle = quote + value + quote
        start = 0
        while True:
            pos = text.find(needle, start)
            if pos < 0:
                break
            if pos not in used:
                used.add(pos)
                return _line_col(text, pos + 1)
            start = pos + 1
    return 1, 1


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def parse_pyproject(text: str) -> ParsedFile:
    """PEP 621 `dependencies`/`optional-dependencies`, PEP 735 groups and Poetry tables."""
    out = ParsedFile()
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        out.malformed.append(_toml_error(text, str(exc)))
        return out
    used: set[int] = set()

    def strings(values: object) -> list[Requirement]:
        found: list[Requirement] = []
        if not isinstance(values, list):
            return found
        for value in values:
            if isinstance(value, str):
                line, col = _locate_string(text, value, used)
                req = parse_requirement(value, line, col)
                if req is not None:
                    found.append(req)
                    continue
                problem = requirement_problem(value, "string")
                if problem is not None:
                    raw = split_lines(text)[line - 1] if line <= len(split_lines(text)) else ""
                    out.malformed.append(_malformed(value, raw, line, col, *problem))
        return found

    project = data.get("project")
    if isinstance(project, dict):
        out.metadata = _toml_anchor(text, "project", "dependencies")
        if isinstance(project.get("requires-python"), str):
            out.python_requires = project["requires-python"]
        dynamic = project.get("dynamic")
        out.opaque = isinstance(dynamic, list) and bool(
            {"dependencies", "optional-dependencies"} & set(dynamic)
        )
        out.requirements.extend(strings(project.get("dependencies")))
        optional = project.get("optional-dependencies")
        if isinstance(optional, dict):
            for group, values in optional.items():
                out.groups[f"extra:{group}"] = strings(values)
    groups = data.get("dependency-groups")
    if isinstance(groups, dict):
        for group, values in groups.items():
            out.groups[f"group:{group}"] = strings(values)
    poetry = data.get("tool", {}).get("poetry") if isinstance(data.get("tool"), dict) else None
    if isinstance(poetry, dict):
        dependencies = poetry.get("dependencies")
        if out.metadata is None:
            out.metadata = _toml_anchor(text, "tool.poetry", None)
        if isinstance(dependencies, dict) and isinstance(dependencies.get("python"), str):
            out.lock_python = poetry_to_pep440(dependencies["python"])
        out.requirements.extend(
            _poetry_table(text, dependencies, r"tool\.poetry\.dependencies", out)
        )
        out.groups["poetry:dev"] = _poetry_table(
            text, poetry.get("dev-dependencies"), r"tool\.poetry\.dev-dependencies", out
        )
        for group, table in (poetry.get("group") or {}).items():
            if isinstance(table, dict):
                out.groups[f"poetry:{group}"] = _poetry_table(
                    text,
                    table.get("dependencies"),
                    rf"tool\.poetry\.group\.{re.escape(group)}\.dependencies",
                    out,
                )
    return out


def _toml_error(text: str, error: str) -> Malformed:
    """A pyproject.toml that is not TOML: pip and the build backend read none of it."""
    at = re.search(r"\(at line (\d+), column (\d+)\)", error)
    line, col = (int(at.group(1)), int(at.group(2))) if at else (1, 1)
    lines = split_lines(text)
    raw = lines[line - 1] if 0 < line <= len(lines) else ""
    reason = re.sub(r"\s*\(at .*\)$", "", error)
    hint = f"the file is not TOML ({reason[:1].lower() + reason[1:]}), so none of it is read"
    return Malformed(line, col, raw.strip() or "pyproject.toml", hint, max(len(raw) - col + 1, 1))


def _toml_anchor(text: str, table: str, key: str | None) -> Metadata:
    """Where a dependency goes in `[table]`: its `key = ...` line, else the table header (for
    Poetry, its `[tool.poetry.dependencies]` header if there is one)."""
    lines = split_lines(text)
    target_list = "dependencies" if key else "[tool.poetry.dependencies]"
    header = re.compile(rf"^\s*\[\s*{re.escape(table)}\s*\]")
    target = re.compile(r"^\s*\[\s*tool\.poetry\.dependencies\s*\]") if key is None else None
    key_re = re.compile(rf"^\s*{re.escape(key)}\s*=") if key else None
    found: tuple[int, str] | None = None
    inside = False
    for number, raw in enumerate(lines, start=1):
        if target is not None and target.match(raw):
            return Metadata(number, raw.index("[") + 1, raw.strip(), target_list)
        if raw.lstrip().startswith("["):
            inside = bool(header.match(raw))
            if inside and found is None:
                found = (number, raw)
            continue
        if inside and key_re is not None and key_re.match(raw):
            found = (number, raw)
            break
    if found is None:
        return Metadata(1, 1, table, target_list)
    number, raw = found
    shown = _COMMENT.sub("", raw).strip()
    return Metadata(number, len(raw) - len(raw.lstrip()) + 1, shown, target_list)


def _poetry_table(text: str, table: object, header: str, out: ParsedFile) -> list[Requirement]:
    found: list[Requirement] = []
    if not isinstance(table, dict):
        return found
    for name, value in table.items():
        if name.lower() == "python":
            continue
        line, col = _locate_key(text, header, name)
        raw = split_lines(text)[line - 1] if line else name
        shown = _COMMENT.sub("", raw).strip()
        entries = value if isinstance(value, list) else [value]
        for entry in entries:
            req = _poetry_entry(name, entry, line, col)
            if req is not None:
                found.append(replace(req, text=shown))
                continue
            version = entry.get("version") if isinstance(entry, dict) else entry
            if isinstance(version, str) and poetry_problem(version):
                at = raw.find(version, col - 1)
                start = at + 1 if at >= 0 else col
                width = len(version) if at >= 0 else len(raw) - col + 1
                hint = (
                    f"`{version}` is not a Poetry version constraint "
                    "(`^1.9`, `~1.9.1`, `>=1.9,<2`, `1.9.1`)"
                )
                out.malformed.append(Malformed(line, start, shown, hint, width=max(width, 1)))
    return found


def _locate_key(text: str, header: str, key: str) -> tuple[int, int]:
    """The line of `key = ...` in the table `[header]` (or of `[header.key]`)."""
    lines = split_lines(text)
    key_re = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    sub_re = re.compile(rf"^\s*\[\s*{header}\.[\"']?{re.escape(key)}[\"']?\s*\]")
    head_re = re.compile(rf"^\s*\[\s*{header}\s*\]")
    inside = False
    for number, raw in enumerate(lines, start=1):
        if sub_re.match(raw):
            return number, raw.index("[") + 1
        if raw.lstrip().startswith("["):
            inside = bool(head_re.match(raw))
            continue
        if inside and key_re.match(raw):
            return number, len(raw) - len(raw.lstrip()) + 1
    return 1, 1


def _poetry_entry(name: str, value: object, line: int, col: int) -> Requirement | None:
    marker = None
    direct = False
    if isinstance(value, dict):
        direct = any(k in value for k in ("git", "path", "url", "file"))
        marker = value.get("markers") or (
            f"python {value['python']}" if "python" in value else None
        )
        version = value.get("version", "*")
    else:
        version = value
    if not isinstance(version, str):
        return None
    spec = poetry_to_pep440(version)
    if spec is None:
        return None
    return Requirement(
        canonicalize_name(name),
        spec,
        line,
        col,
        name,
        marker=str(marker) if marker else None,
        direct=direct,
    )


def _bump(parts: list[str], index: int) -> str:
    head = [int(p) if p.isdigit() else 0 for p in parts[: index + 1]]
    head[index] += 1
    return ".".join(str(p) for p in head)


def poetry_problem(version: str) -> bool:
    """Whether Poetry refuses the constraint (each `||` alternative must read on its own)."""
    return any(poetry_to_pep440(alt) is None for alt in version.split("||"))


def poetry_to_pep440(version: str) -> str | None:
    """Poetry's `^1.2`, `~1.2.3`, `=1.9.1`, `1.9.1`, `1.9.*`, `*` and comma or space separated
    lists in PEP 440 terms (None for `||`, which a specifier set cannot say)."""
    out: list[str] = []
    if "||" in version:
        return None
    # Clauses are separated by commas or by spaces (`>=1.2 <2`); `>= 1.2` is one clause.
    for piece in (p.strip() for p in re.split(r",|(?<=[\w*])\s+(?=[<>=!~^\d])", version)):
        piece = re.sub(r"\.[xX](?=$|\.)", ".*", piece)
        if piece in ("", "*"):
            continue
        if re.match(r"^[<>]=?", piece):  # Poetry reads `>=2.9.*` as `>=2.9`
            piece = re.sub(r"(?:\.\*)+$", "", piece)
        if piece[0] == "=" and not piece.startswith("=="):
            piece = "=" + piece
        if piece[0] == "^":
            parts = piece[1:].strip().split(".")
            nonzero = next((i for i, p in enumerate(parts) if p != "0"), len(parts) - 1)
            out += [f">={piece[1:].strip()}", f"<{_bump(parts, min(nonzero, len(parts) - 1))}"]
        elif piece[0] == "~" and not piece.startswith("~="):
            parts = piece[1:].strip().split(".")
            out += [f">={piece[1:].strip()}", f"<{_bump(parts, 1 if len(parts) > 1 else 0)}"]
        elif piece[0].isdigit():
            out.append(f"=={piece}")
        else:
            out.append(piece.replace(" ", ""))
    spec = ",".join(out)
    try:
        SpecifierSet(spec)
    except InvalidSpecifier:
        return None
    return spec


# --- setup.cfg ---------------------------------------------------------------------------------


def parse_setup_cfg(text: str) -> ParsedFile:
    """`[options] install_requires` and `[options.extras_require]` (dangling lists).

    As setuptools reads a list option: a value on several lines has one requirement per line;
    a value all on the key's line is split at `;` (`install_requires = a; b` is two)."""
    out = ParsedFile()
    section = ""
    key: str | None = None
    #: The value on the key's line, until it is known whether continuation lines follow.
    pending: tuple[str, str, str, int, int, str] | None = None

    def flush(split: bool) -> None:
        nonlocal pending
        if pending is None:
            return
        sect, name, value, number, col, raw = pending
        pending = None
        if not split:
            _cfg_value(out, sect, name, value, number, col, raw)
            return
        value = _COMMENT.sub("", value)
        offset = 0
        for part in value.split(";"):
            lead = len(part) - len(part.lstrip())
            _cfg_value(out, sect, name, part, number, col + offset + lead, raw)
            offset += len(part) + 1

    for number, raw in enumerate(split_lines(text), start=1):
        stripped = raw.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            flush(split=True)
            section, key = stripped[1:-1].strip(), None
            if section in ("metadata", "options") and out.metadata is None:
                out.metadata = Metadata(number, raw.index("[") + 1, stripped, "install_requires")
            continue
        if not stripped or stripped[0] in "#;":
            continue
        indent = len(raw) - len(raw.lstrip())
        if indent == 0:
            flush(split=True)
            name, sep, value = raw.partition("=")
            if not sep:
                key = None
                continue
            key = name.strip()
            if section == "options" and key == "python_requires":
                out.python_requires = _COMMENT.sub("", value).strip()
            if section == "options" and key == "install_requires":
                shown = _COMMENT.sub("", raw).strip()
                out.metadata = Metadata(number, 1, shown, "install_requires")
            value_col = len(name) + 1 + (len(value) - len(value.lstrip())) + 1
            pending = (section, key, value.lstrip(), number, value_col, raw)
        elif key is not None:
            flush(split=False)
            _cfg_value(out, section, key, raw, number, indent + 1, raw)
    flush(split=True)
    return out


def _cfg_value(
    out: ParsedFile, section: str, key: str, value: str, line: int, col: int, raw: str
) -> None:
    if section == "options" and key == "install_requires":
        target = out.requirements
    elif section == "options.extras_require":
        target = out.groups.setdefault(f"extra:{key}", [])
    else:
        return
    value = _COMMENT.sub("", value).strip()
    if value.startswith("file:"):
        out.opaque = True
    if not value or value.startswith("file:"):
        return
    req = parse_requirement(value, line, col)
    if req is not None:
        target.append(req)
        return
    problem = requirement_problem(value)
    if problem is not None:
        out.malformed.append(_malformed(value, raw, line, col, *problem))


# --- conda environment.yml ---------------------------------------------------------------------

_CONDA_NAME = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.-]*)\s*(.*)$")


def conda_to_pep440(rest: str) -> str | None:
    """A conda version spec (`=1.9`, `==1.9.1`, `>=1.2,<2`, `1.9.1 build`) as PEP 440."""
    rest = rest.strip()
    if not rest:
        return ""
    if "|" in rest:
        return None
    if rest.startswith("==") or (rest[0].isdigit()):
        words = rest.lstrip("=").split()
        if not words:  # `python==`: no version
            return None
        version = words[0].split("=")[0]
        spec = f"=={version}"
    elif rest.startswith("="):
        words = rest[1:].split("=")[0].split()
        if not words:  # `python=`: no version
            return None
        version = words[0]
        spec = f"=={version}" if version.endswith("*") else f"=={version}.*"
    else:
        spec = rest.split()[0]
    spec = spec.replace(".*.*", ".*")
    try:
        SpecifierSet(spec)
    except InvalidSpecifier:
        return None
    return spec


def parse_environment_yml(text: str) -> ParsedFile:
    """conda `dependencies:` (conda specs) and their `- pip:` list (pip requirement strings)."""
    out = ParsedFile()
    in_deps = False
    pip_indent: int | None = None
    for number, raw in enumerate(split_lines(text), start=1):
        content = re.sub(r"\s+#.*$", "", raw).rstrip()
        stripped = content.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(content) - len(content.lstrip())
        if indent == 0 and not (in_deps and stripped.startswith("- ")):
            # YAML lets a list sit at its key's indent (`dependencies:` then `- numpy`).
            in_deps = stripped.startswith("dependencies:")
            pip_indent = None
            continue
        if not in_deps or not stripped.startswith("-"):
            continue
        item = stripped[1:].strip()
        col = indent + (len(stripped) - len(item)) + 1
        if pip_indent is not None and indent <= pip_indent:
            pip_indent = None
        if item.rstrip(":").strip() == "pip" and item.endswith(":"):
            pip_indent = indent
            continue
        if item[:1] in "\"'":
            item, col = item.strip("\"'"), col + 1
        if pip_indent is not None:
            if item.startswith("-"):
                _option_line(item, number, out)
            else:
                req = parse_requirement(item, number, col)
                problem = requirement_problem(item) if req is None else None
                if req is not None:
                    out.requirements.append(req)
                elif problem is not None:
                    out.malformed.append(_malformed(item, raw, number, col, *problem))
            continue
        req = _conda_requirement(item, number, col)
        if req is not None:
            out.requirements.append(req)
    return out


def _conda_requirement(item: str, line: int, col: int) -> Requirement | None:
    spec_text = item.split("::", 1)[-1]
    m = _CONDA_NAME.match(spec_text)
    if not m:
        return None
    spec = conda_to_pep440(m.group(2))
    if spec is None:
        return None
    return Requirement(canonicalize_name(m.group(1)), spec, line, col, item, conda=True)


# --- setup.py ----------------------------------------------------------------------------------

_SETUP_NAMES = {"setup", "setuptools.setup", "distutils.core.setup"}


def _dotted(node: cst.BaseExpression) -> str | None:
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        head = _dotted(node.value)
        return f"{head}.{node.attr.value}" if head else None
    return None


def _string_nodes(
    node: cst.BaseExpression, names: dict[str, cst.BaseExpression], depth: int = 0
) -> list[tuple[cst.BaseExpression, str]]:
    """The string literals of a list/tuple literal, a module-level list variable, or a sum."""
    if depth > 5:
        return []
    if isinstance(node, (cst.List, cst.Tuple)):
        found: list[tuple[cst.BaseExpression, str]] = []
        for element in node.elements:
            if type(element) is cst.Element and isinstance(
                element.value, (cst.SimpleString, cst.ConcatenatedString)
            ):
                value = element.value.evaluated_value
                if isinstance(value, str):
                    found.append((element.value, value))
        return found
    if type(node) is cst.Name and node.value in names:
        return _string_nodes(names[node.value], names, depth + 1)
    if type(node) is cst.BinaryOperation and type(node.operator) is cst.Add:
        return _string_nodes(node.left, names, depth + 1) + _string_nodes(
            node.right, names, depth + 1
        )
    return []


def _literal_list(
    node: cst.BaseExpression,
    names: dict[str, cst.BaseExpression],
    changed: frozenset[str],
    depth: int = 0,
) -> bool:
    """Whether every entry of `node` is a string literal the reader sees (a list, a module-level
    list name, a sum of those): else the declared dependencies are unknown."""
    if depth > 5:
        return False
    if isinstance(node, (cst.List, cst.Tuple)):
        return all(
            type(e) is cst.Element
            and isinstance(e.value, (cst.SimpleString, cst.ConcatenatedString))
            for e in node.elements
        )
    if type(node) is cst.Name:
        return (
            node.value in names
            and node.value not in changed
            and _literal_list(names[node.value], names, changed, depth + 1)
        )
    if type(node) is cst.BinaryOperation and type(node.operator) is cst.Add:
        return _literal_list(node.left, names, changed, depth + 1) and _literal_list(
            node.right, names, changed, depth + 1
        )
    return False


def module_assignments(module: cst.Module) -> dict[str, cst.BaseExpression]:
    """Module-level `NAME = <expr>` (the last one wins, as at run time for straight code)."""
    names: dict[str, cst.BaseExpression] = {}
    for stmt in module.body:
        if type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                if (
                    type(small) is cst.Assign
                    and len(small.targets) == 1
                    and type(small.targets[0].target) is cst.Name
                ):
                    names[small.targets[0].target.value] = small.value
    return names


def setup_call_requirements(
    call: cst.Call, names: dict[str, cst.BaseExpression], changed: frozenset[str] = frozenset()
) -> ParsedFile:
    """Records (line 0; `ref` is the string node) from one `setup(...)` call; `changed`: list
    names the module changes after assigning them (their entries are not all known)."""
    out = ParsedFile()
    if _dotted(call.func) not in _SETUP_NAMES:
        return out

    def records(node: cst.BaseExpression) -> list[Requirement]:
        found = []
        for string_node, value in _string_nodes(node, names):
            req = parse_requirement(value, 0, 0)
            if req is not None:
                found.append(replace(req, ref=string_node))
                continue
            problem = requirement_problem(value, "string")
            if problem is not None:
                out.malformed.append(_literal_malformed(string_node, value, *problem))
        return found

    out.metadata = Metadata(0, 0, "setup(", "install_requires", ref=call.func)
    for arg in call.args:
        keyword = arg.keyword.value if arg.keyword else None
        if arg.star:  # `setup(**config)`: its dependencies are out of sight
            out.opaque = True
        if keyword == "python_requires" and type(arg.value) is cst.SimpleString:
            pythons = arg.value.evaluated_value
            out.python_requires = pythons if isinstance(pythons, str) else None
        if keyword == "install_requires" and arg.keyword is not None:
            out.metadata = Metadata(0, 0, "install_requires=", "install_requires", ref=arg.keyword)
            out.requirements.extend(records(arg.value))
            out.opaque = out.opaque or not _literal_list(arg.value, names, changed)
        elif keyword == "extras_require":
            value = arg.value
            if type(value) is cst.Name and value.value in names:
                value = names[value.value]
            out.opaque = out.opaque or type(value) is not cst.Dict
            if type(value) is cst.Dict:
                for element in value.elements:
                    if type(element) is cst.DictElement and type(element.key) is cst.SimpleString:
                        group = element.key.evaluated_value
                        if isinstance(group, str):
                            out.groups[f"extra:{group}"] = records(element.value)
    return out


def _literal_malformed(node: cst.BaseExpression, value: str, offset: int, hint: str) -> Malformed:
    """A refused string literal (line 0: placed by `parse_setup_py`); the offset counts inside
    the literal only when its text is its value (no escapes, no implicit concatenation)."""
    text = " ".join(value.split())
    if type(node) is cst.SimpleString and node.raw_value == value:
        skip = len(node.prefix) + len(node.quote)
        return Malformed(0, 0, text, hint, len(value) - offset, ref=node, offset=skip + offset)
    return Malformed(0, 0, text, hint, 1, ref=node)


def parse_setup_py(text: str) -> ParsedFile:
    """setup.py read with libcst, never executed: literal lists and module-level list names."""
    from mxlint.parsing import ParseFailure, parse_module
    from mxlint.positions import node_ranges

    module = parse_module(text)
    if isinstance(module, ParseFailure):
        return ParsedFile()
    names = module_assignments(module)
    out = ParsedFile()
    changed = frozenset(name for name in names if _changed_later(text, name))
    for call in _find_calls(module):
        found = setup_call_requirements(call, names, changed)
        out.requirements.extend(found.requirements)
        out.groups.update(found.groups)
        out.malformed.extend(found.malformed)
        out.metadata = out.metadata or found.metadata
        out.opaque = out.opaque or found.opaque
        out.python_requires = out.python_requires or found.python_requires
    everything = out.requirements + [r for g in out.groups.values() for r in g]
    refs = [r.ref for r in [*everything, *out.malformed, out.metadata] if r is not None]
    ranges = node_ranges(module, [ref for ref in refs if isinstance(ref, cst.CSTNode)], text)

    def at(ref: object) -> tuple[int, int] | None:
        rng = ranges.get(ref) if isinstance(ref, cst.CSTNode) else None
        return (rng[0][0], rng[0][1] + 1) if rng else None

    def place(req: Requirement) -> Requirement:
        where = at(req.ref)
        return replace(req, line=where[0], col=where[1]) if where else req

    def place_malformed(bad: Malformed) -> Malformed:
        where = at(bad.ref)
        return replace(bad, line=where[0], col=where[1] + bad.offset) if where else bad

    out.requirements = [place(r) for r in out.requirements]
    out.groups = {g: [place(r) for r in rs] for g, rs in out.groups.items()}
    out.malformed = [place_malformed(m) for m in out.malformed]
    if out.metadata is not None:
        where = at(out.metadata.ref)
        if where:
            out.metadata = replace(out.metadata, line=where[0], col=where[1])
    return out


def _changed_later(text: str, name: str) -> bool:
    """`REQUIRED.append(...)`, `REQUIRED += [...]`, a second assignment: the list is not its
    literal."""
    mutations = rf"\b{re.escape(name)}\s*(?:\.\s*(?:append|extend|insert)\s*\(|\+=)"
    assignments = re.findall(rf"(?m)^\s*{re.escape(name)}\s*=[^=]", text)
    return re.search(mutations, text) is not None or len(assignments) > 1


def _find_calls(module: cst.Module) -> list[cst.Call]:
    from mxlint.walker import iter_nodes

    return [
        n for n in iter_nodes(module) if type(n) is cst.Call and _dotted(n.func) in _SETUP_NAMES
    ]
