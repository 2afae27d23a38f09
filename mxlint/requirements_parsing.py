"""Readers for the files that declare a Python environment.

Each reader turns one file format into `Requirement` records that point at the exact line and
column of the requirement, so that the versions rules can report there. Readers never execute
anything (setup.py is read with libcst) and never raise on odd syntax: what they cannot parse,
they skip.
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


@dataclass
class ParsedFile:
    requirements: list[Requirement] = field(default_factory=list)
    includes: list[Include] = field(default_factory=list)
    #: Installs from somewhere other than PyPI (`--find-links`, `--index-url`): builds that
    #: were never on PyPI may exist there.
    custom_index: bool = False
    #: Named dependency groups (extras): group -> requirements, installed on top of the base.
    groups: dict[str, list[Requirement]] = field(default_factory=dict)


# --- one requirement string ------------------------------------------------------------------

_WHEEL = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.]*)-(\d[^-/]*)-[^/]*\.whl$")
_SDIST = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.-]*?)-(\d[^-/]*)\.(?:tar\.gz|zip|tar\.bz2)$")
_EGG = re.compile(r"#egg=([A-Za-z0-9][A-Za-z0-9_.-]*)")


def parse_requirement(text: str, line: int, col: int) -> Requirement | None:
    """A PEP 508 string (or a bare wheel/sdist/VCS URL) as a record; None if unparseable."""
    text = text.strip()
    if not text or "$" in text:
        return None
    if re.match(r"^(?:[a-z+]+://|git\+|hg\+|svn\+|bzr\+|file:)", text):
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
    return out


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
    except (tomllib.TOMLDecodeError, ValueError):
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
        return found

    project = data.get("project")
    if isinstance(project, dict):
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
        out.requirements.extend(
            _poetry_table(text, poetry.get("dependencies"), r"tool\.poetry\.dependencies")
        )
        out.groups["poetry:dev"] = _poetry_table(
            text, poetry.get("dev-dependencies"), r"tool\.poetry\.dev-dependencies"
        )
        for group, table in (poetry.get("group") or {}).items():
            if isinstance(table, dict):
                out.groups[f"poetry:{group}"] = _poetry_table(
                    text,
                    table.get("dependencies"),
                    rf"tool\.poetry\.group\.{re.escape(group)}\.dependencies",
                )
    return out


def _poetry_table(text: str, table: object, header: str) -> list[Requirement]:
    found: list[Requirement] = []
    if not isinstance(table, dict):
        return found
    for name, value in table.items():
        if name.lower() == "python":
            continue
        line, col = _locate_key(text, header, name)
        shown = _COMMENT.sub("", split_lines(text)[line - 1]).strip() if line else name
        entries = value if isinstance(value, list) else [value]
        for entry in entries:
            req = _poetry_entry(name, entry, line, col)
            if req is not None:
                found.append(replace(req, text=shown))
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


def poetry_to_pep440(version: str) -> str | None:
    """Poetry's `^1.2`, `~1.2.3`, `1.9.1`, `1.9.*`, `*` and comma lists in PEP 440 terms."""
    out: list[str] = []
    if "||" in version:
        return None
    for piece in (p.strip() for p in version.split(",")):
        if piece in ("", "*"):
            continue
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
    """`[options] install_requires` and `[options.extras_require]` (dangling lists)."""
    out = ParsedFile()
    section = ""
    key: str | None = None
    for number, raw in enumerate(split_lines(text), start=1):
        stripped = raw.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            section, key = stripped[1:-1].strip(), None
            continue
        if not stripped or stripped[0] in "#;":
            continue
        indent = len(raw) - len(raw.lstrip())
        if indent == 0:
            name, sep, value = raw.partition("=")
            if not sep:
                key = None
                continue
            key = name.strip()
            value_col = len(name) + 1 + (len(value) - len(value.lstrip())) + 1
            _cfg_value(out, section, key, value, number, value_col)
        elif key is not None:
            _cfg_value(out, section, key, raw, number, indent + 1)
    return out


def _cfg_value(out: ParsedFile, section: str, key: str, value: str, line: int, col: int) -> None:
    if section == "options" and key == "install_requires":
        target = out.requirements
    elif section == "options.extras_require":
        target = out.groups.setdefault(f"extra:{key}", [])
    else:
        return
    value = _COMMENT.sub("", value).strip()
    if not value or value.startswith("file:"):
        return
    req = parse_requirement(value, line, col)
    if req is not None:
        target.append(req)


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
        if indent == 0:
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
                if req is not None:
                    out.requirements.append(req)
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


def setup_call_requirements(call: cst.Call, names: dict[str, cst.BaseExpression]) -> ParsedFile:
    """Records (line 0; `ref` is the string node) from one `setup(...)` call."""
    out = ParsedFile()
    if _dotted(call.func) not in _SETUP_NAMES:
        return out

    def records(node: cst.BaseExpression) -> list[Requirement]:
        found = []
        for string_node, value in _string_nodes(node, names):
            req = parse_requirement(value, 0, 0)
            if req is not None:
                found.append(replace(req, ref=string_node))
        return found

    for arg in call.args:
        keyword = arg.keyword.value if arg.keyword else None
        if keyword == "install_requires":
            out.requirements.extend(records(arg.value))
        elif keyword == "extras_require":
            value = arg.value
            if type(value) is cst.Name and value.value in names:
                value = names[value.value]
            if type(value) is cst.Dict:
                for element in value.elements:
                    if type(element) is cst.DictElement and type(element.key) is cst.SimpleString:
                        group = element.key.evaluated_value
                        if isinstance(group, str):
                            out.groups[f"extra:{group}"] = records(element.value)
    return out


def parse_setup_py(text: str) -> ParsedFile:
    """setup.py read with libcst, never executed: literal lists and module-level list names."""
    from mxlint.parsing import ParseFailure, parse_module
    from mxlint.positions import node_ranges

    module = parse_module(text)
    if isinstance(module, ParseFailure):
        return ParsedFile()
    names = module_assignments(module)
    out = ParsedFile()
    for call in _find_calls(module):
        found = setup_call_requirements(call, names)
        out.requirements.extend(found.requirements)
        out.groups.update(found.groups)
    everything = out.requirements + [r for g in out.groups.values() for r in g]
    ranges = node_ranges(module, [r.ref for r in everything if isinstance(r.ref, cst.CSTNode)])

    def place(req: Requirement) -> Requirement:
        rng = ranges.get(req.ref) if isinstance(req.ref, cst.CSTNode) else None
        return replace(req, line=rng[0][0], col=rng[0][1] + 1) if rng else req

    out.requirements = [place(r) for r in out.requirements]
    out.groups = {g: [place(r) for r in rs] for g, rs in out.groups.items()}
    return out


def _find_calls(module: cst.Module) -> list[cst.Call]:
    from mxlint.walker import iter_nodes

    return [
        n for n in iter_nodes(module) if type(n) is cst.Call and _dotted(n.func) in _SETUP_NAMES
    ]
