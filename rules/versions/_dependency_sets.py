"""What the MXL5xx rules judge: dependency sets and MXNet's release tables.

A *dependency set* is what one `pip install` ends up with: a requirements file with its
`-r`/`-c` files, a pyproject's base dependencies plus one extra, a Dockerfile stage. Each set is
judged against the release tables in `mxlint/data/mxnet_releases.json`, and with what its project
declares anywhere (a `numpy<1.24` in another of its files); a package's metadata is also judged
against what importing the package imports (MXL508), and every entry a reader could not read is
reported (MXL507).

Kept apart from `versions` (the rules and the checker that selects files) so that a run over
Python files alone never imports `packaging` and the dependency-file readers.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from mxlint.dockerfile import Stage, context_path, parse_dockerfile
from mxlint.requirements_parsing import (
    ParsedFile,
    Requirement,
    parse_environment_yml,
    parse_pyproject,
    parse_requirements_txt,
    parse_setup_cfg,
    parse_setup_py,
)
from mxlint.rule import Finding, Location, Rule
from mxlint.rules.versions import (
    conflicting_mxnet_variants,
    cuda_base_image,
    cuda_variant_mismatch,
    cudnn_mismatch,
    invalid_requirement,
    numpy_breaks_mxnet_import,
    undeclared_mxnet,
    unpinned_mxnet,
    unreleased_mxnet_version,
)
from mxlint.rules.versions._files import file_kind, named_kind
from mxlint.rules.versions._packages import mxnet_import
from mxlint.rules.versions._releases import (
    NUMPY_BREAKS,
    ONNX_BREAKS,
    DepSet,
    Hit,
    admits_from,
    check_cap,
    is_mxnet_dist,
    locks_old_python,
    mxnet_1x,
    old_python,
    releases,
)
from mxlint.rules.versions.invalid_requirement import InvalidRequirement
from mxlint.rules.versions.numpy_breaks_mxnet_import import NumpyBreaksMxnetImport
from mxlint.rules.versions.onnx_breaks_mxnet_export import OnnxBreaksMxnetExport
from mxlint.rules.versions.undeclared_mxnet import UndeclaredMxnet

if TYPE_CHECKING:
    from mxlint.config import Settings

# --- dependency sets -------------------------------------------------------------------------


def evaluate(dep: DepSet) -> list[Hit]:
    """Everything wrong with one dependency set."""
    hits: list[Hit] = []
    by_name: dict[str, list[Requirement]] = {}
    for r in dep.requirements:
        by_name.setdefault(r.name, []).append(r)
    present = {n for n, rs in by_name.items() if any(not r.constraint for r in rs)}
    mx_names: list[str] = []  # in order of appearance
    for r in dep.requirements:
        if not r.constraint and is_mxnet_dist(r.name) and r.name not in mx_names:
            mx_names.append(r.name)
    for name in mx_names:
        hits += unpinned_mxnet.check(name, by_name[name])
        if not dep.custom_index:
            hits += unreleased_mxnet_version.check(name, by_name[name])
        if dep.cuda is not None:
            hits += cuda_variant_mismatch.check(name, by_name[name], dep)
            hits += cuda_base_image.check(name, by_name[name], dep)
            hits += cudnn_mismatch.check(name, by_name[name], dep)
    hits += conflicting_mxnet_variants.check(mx_names, by_name)
    if not mx_names or old_python(by_name.get("python", [])):
        return hits
    mx_1x = [n for n in mx_names if mxnet_1x(n, by_name[n])]
    if mx_1x and not locks_old_python(dep.lock_python):
        if "numpy" in present:
            numpy = by_name["numpy"]
            hits += check_cap(numpy, NUMPY_BREAKS, releases().numpy, NumpyBreaksMxnetImport)
        elif dep.judge_missing_numpy and not dep.numpy_capped:
            mxnet = [r for n in mx_1x for r in by_name[n] if not r.constraint]
            hits += numpy_breaks_mxnet_import.check_undeclared(mxnet, by_name.get("numpy", []))
    if "onnx" in present:
        hits += check_cap(by_name["onnx"], ONNX_BREAKS, releases().onnx, OnnxBreaksMxnetExport)
    return hits


# --- the run's dependency files -------------------------------------------------------------


def _norm(path: str) -> str:
    return os.path.normpath(path)


@dataclass
class _Project:
    """The run's dependency files, parsed once, with includes resolved between them."""

    texts: dict[str, str]
    parsed: dict[str, ParsedFile] = field(default_factory=dict)
    included: set[str] = field(default_factory=set)
    #: The run's pyproject, setup and environment files, parsed.
    others: list[ParsedFile] = field(default_factory=list)

    def requirements_file(self, path: str, constraint: bool = False) -> ParsedFile | None:
        path = _norm(path)
        if path not in self.parsed:
            text = self.texts.get(path)
            if text is None:
                try:
                    # Only a regular file: `-r /dev/zero` or a FIFO would never end.
                    if not os.path.isfile(path):
                        return None
                    with open(path, encoding="utf-8", errors="replace") as handle:
                        text = handle.read()
                except (OSError, ValueError):  # ValueError: a NUL byte in the included name
                    return None
            parsed = _with_path(parse_requirements_txt(text, constraint=constraint), path)
            self.parsed[path] = parsed
        return self.parsed[path]

    def closure(
        self, path: str, parsed: ParsedFile, seen: set[str] | None = None, constraint: bool = False
    ) -> tuple[list[Requirement], bool]:
        """A file's requirements with those of its `-r`/`-c` files (marked as included)."""
        seen = seen if seen is not None else {_norm(path)}
        parts: list[tuple[int, list[Requirement]]] = [
            (r.line, [replace(r, constraint=True) if constraint else r])
            for r in parsed.requirements
        ]
        custom = parsed.custom_index
        for inc in parsed.includes:
            target = _norm(os.path.join(os.path.dirname(path), inc.target))
            r, c = self.include(target, inc.kind == "c" or constraint, seen)
            parts.append((inc.line, r))
            custom = custom or c
        parts.sort(key=lambda part: part[0])  # in file order: an include where it is written
        return [r for _, rs in parts for r in rs], custom

    def include(
        self, target: str, constraint: bool, seen: set[str]
    ) -> tuple[list[Requirement], bool]:
        if target in seen:
            return [], False
        sub = self.requirements_file(target, constraint)
        if sub is None:
            return [], False
        seen.add(target)
        self.included.add(target)
        return self.closure(target, sub, seen, constraint)


def _with_path(parsed: ParsedFile, path: str) -> ParsedFile:
    """A copy of `parsed` whose entries name `path` (a read may serve several files)."""
    return replace(
        parsed,
        requirements=[replace(r, path=path) for r in parsed.requirements],
        groups={g: [replace(r, path=path) for r in rs] for g, rs in parsed.groups.items()},
        malformed=[replace(m, path=path) for m in parsed.malformed],
    )


#: A run's reads of dependency file texts, by reader and text: the files of the run are read
#: again as neighbours of their project root (`_numpy_caps`), setup.py with a full parse.
Reads = dict[tuple[str, str], ParsedFile]


def _read(reads: Reads, kind: str | None, text: str) -> ParsedFile:
    reader = _READERS.get(kind or "", parse_requirements_txt)
    key = (reader.__name__, text)
    parsed = reads.get(key)
    if parsed is None:
        parsed = reads[key] = reader(text)
    return parsed


def _grouped_sets(project: _Project, path: str, parsed: ParsedFile) -> list[DepSet]:
    base, custom = project.closure(path, parsed)
    if parsed.python_requires:  # judged as a conda `python=` is: which numpy can install
        base.append(Requirement("python", parsed.python_requires, 0, 0, "", constraint=True))
    lock = parsed.lock_python
    sets = [DepSet(base, custom_index=custom, lock_python=lock)]
    sets += [
        DepSet(base + group, custom_index=custom, lock_python=lock)
        for group in parsed.groups.values()
    ]
    return sets


def _docker_sets(project: _Project, path: str, stages: list[Stage]) -> list[DepSet]:
    sets: list[DepSet] = []
    directory = os.path.dirname(path)
    for stage in stages:
        reqs = [replace(r, path=path) for r in stage.requirements]
        custom = stage.custom_index
        for inc in stage.includes:
            target = _docker_include(project, directory, stage, inc.target)
            if target is None:
                continue
            r, c = project.include(target, inc.kind == "c", {path})
            reqs += r
            custom = custom or c
        if reqs:
            sets.append(
                DepSet(
                    reqs,
                    cuda=stage.cuda,
                    image=stage.image,
                    from_line=stage.line,
                    cuda_kind=stage.cuda_kind,
                    installs_cuda_libraries=any(_CUDA_LIBRARIES.search(run) for run in stage.runs),
                    custom_index=custom,
                    judge_missing_numpy=_bare_image(stage.image),
                )
            )
    return sets


#: A `RUN` that installs CUDA libraries: apt's `libcudnn8`/`cuda-libraries-11-2`, pip's
#: `nvidia-cudnn-cu11`, conda's `cudatoolkit`/`cudnn`, a CUDA toolkit installer.
_CUDA_LIBRARIES = re.compile(
    r"cudnn|cublas|nvrtc|cuda-(?:libraries|runtime|toolkit|compat|cudart)|cudatoolkit"
    r"|cuda_\d|nvidia-cuda",
    re.I,
)
_PYTHON_IMAGE = re.compile(r"^(?:(?:docker\.io/)?library/)?python:(?:(\d+)\.(\d+))?", re.I)
_DISTRO_IMAGE = re.compile(
    r"(?:^|[/:-])(?:ubuntu[:-]?(\d\d)\.04|debian:(?:bullseye|bookworm|1[12]))", re.I
)


def _bare_image(image: str | None) -> bool:
    """An image that comes with Python 3.8+ and no numpy (`python:3.9`, Ubuntu 20.04+ and
    images built on it, Debian 11+): what pip installs there is what the stage says."""
    if image is None:
        return False
    python = _PYTHON_IMAGE.match(image)
    if python:
        return python.group(1) is None or (int(python.group(1)), int(python.group(2))) >= (3, 8)
    if "/mxnet" in image.lower() or "conda" in image.lower():
        return False
    distro = _DISTRO_IMAGE.search(image)
    return distro is not None and (distro.group(1) is None or int(distro.group(1)) >= 20)


def _docker_include(project: _Project, directory: str, stage: Stage, target: str) -> str | None:
    candidates = []
    source = context_path(stage, target)
    if source is not None:
        candidates.append(_norm(os.path.join(directory, source)))
    if not target.startswith("/"):
        candidates.append(_norm(os.path.join(directory, target)))
    candidates.append(_norm(os.path.join(directory, os.path.basename(target))))
    for candidate in candidates:
        if candidate in project.texts or os.path.isfile(candidate):
            return candidate
    return None


def _finding(req: Requirement, rule: type[Rule], message: str) -> Finding:
    width = len(req.text.splitlines()[0]) if req.text else 1
    return Finding(
        rule.code,
        message,
        req.path,
        Location(req.line, req.col),
        Location(req.line, req.col + width),
    )


_READERS: dict[str, Callable[[str], ParsedFile]] = {
    "pyproject": parse_pyproject,
    "setup.cfg": parse_setup_cfg,
    "setup.py": parse_setup_py,
    "environment": parse_environment_yml,
}


def check_files(files: list[tuple[str, str]], settings: Settings) -> list[Finding]:
    """Every dependency file of the run, read together (Dockerfiles see their `-r` files). A
    file whose name says no kind was named on the command line: a requirements file."""
    project = _Project({_norm(p): t for p, t in files})
    origins: list[tuple[str, list[DepSet]]] = []
    packages: list[tuple[str, ParsedFile]] = []
    requirement_files: list[str] = []
    reads: Reads = {}
    for raw_path, text in files:
        path = _norm(raw_path)
        kind = named_kind(path)
        if kind == "requirements":
            requirement_files.append(path)
        elif kind == "dockerfile":
            origins.append((path, _docker_sets(project, path, parse_dockerfile(text))))
        elif kind in _READERS:
            read = _with_path(_read(reads, kind, text), path)
            project.others.append(read)
            origins.append((path, _grouped_sets(project, path, read)))
            if read.metadata is not None:
                packages.append((path, read))
    for path in requirement_files:  # includes of every file are known by now
        project.closure(path, project.requirements_file(path) or ParsedFile())
    for path in requirement_files:
        if path not in project.included:
            parsed = project.requirements_file(path)
            if parsed is not None:
                origins.append((path, _grouped_sets(project, path, parsed)))
    capped = _numpy_caps(origins, reads)
    for path, sets in origins:
        for dep in sets:
            dep.numpy_capped = capped[_project_root(path)]
    found = _findings([dep for _, sets in origins for dep in sets], settings)
    found += _malformed_findings(project, settings)
    found += _package_findings(packages, capped, settings)
    return sorted(found, key=Finding.sort_key)


def _findings(sets: list[DepSet], settings: Settings) -> list[Finding]:
    out: dict[tuple[str, int, int, str], Finding] = {}
    for dep in sets:
        for req, rule, message in evaluate(dep):
            if not settings.enabled(rule, req.path):
                continue
            key = (req.path, req.line, req.col, rule.code)
            out.setdefault(key, _finding(req, rule, message))
    return list(out.values())


def _malformed_findings(project: _Project, settings: Settings) -> list[Finding]:
    """MXL507 for every entry no reader could read, in the run's files and those they
    include (each file once, however often it is included)."""
    out: list[Finding] = []
    parsed = [*project.parsed.values(), *project.others]
    for bad in (m for p in parsed for m in p.malformed):
        if settings.enabled(InvalidRequirement, bad.path):
            start = Location(bad.line, bad.col)
            end = Location(bad.line, bad.col + bad.width)
            message = invalid_requirement.message(bad)
            out.append(Finding(InvalidRequirement.code, message, bad.path, start, end))
    return out


# --- what the whole project declares ---------------------------------------------------------

_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def _project_root(path: str) -> str:
    """The directory of the project a dependency file belongs to: the nearest one above it
    with packaging metadata or a `.git`, else its own (`requirements/`'s parent)."""
    start = os.path.dirname(os.path.abspath(path))
    directory = start
    while True:
        if any(os.path.exists(os.path.join(directory, m)) for m in _ROOT_MARKERS):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return os.path.dirname(start) if os.path.basename(start).lower() == "requirements" else start


def _caps_numpy(req: Requirement) -> bool:
    spec = req.specifier_set()
    return (
        req.name == "numpy"
        and not req.direct
        and spec is not None
        and bool(str(spec))
        and not admits_from(spec, NUMPY_BREAKS, releases().numpy)
    )


def _numpy_caps(origins: list[tuple[str, list[DepSet]]], reads: Reads) -> dict[str, bool]:
    """Per project root: whether any of its dependency files declares `numpy<1.24` — those of
    the run, what they include, and the dependency files beside them on disk (a hook that
    checks one staged file still sees the project's cap)."""
    capped: dict[str, bool] = {}
    for path, sets in origins:
        root = _project_root(path)
        mine = any(_caps_numpy(r) for dep in sets for r in dep.requirements)
        capped[root] = capped.get(root, False) or mine
    for root in [r for r, known in capped.items() if not known]:
        directories = {root, os.path.join(root, "requirements")}
        directories.update(os.path.dirname(os.path.abspath(p)) for p, _ in origins)
        capped[root] = any(
            _caps_numpy(r)
            for path in _neighbours(sorted(directories), root)
            for r in _declared(path, reads)
        )
    return capped


def _neighbours(directories: list[str], root: str) -> list[str]:
    out: list[str] = []
    for directory in directories:
        if directory != root and not directory.startswith(root + os.sep):
            continue
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        out += [
            os.path.join(directory, n)
            for n in names
            if file_kind(os.path.join(directory, n)) not in (None, "dockerfile")
        ]
    return out


def _declared(path: str, reads: Reads) -> list[Requirement]:
    """What one dependency file on disk requires (base and extras); nothing if unreadable."""
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > 1_000_000:
            return []
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return []
    parsed = _read(reads, file_kind(path), text)
    return [*parsed.requirements, *(r for g in parsed.groups.values() for r in g)]


# --- a package's own metadata ----------------------------------------------------------------


def _package_findings(
    packages: list[tuple[str, ParsedFile]], capped: dict[str, bool], settings: Settings
) -> list[Finding]:
    """MXL508 for metadata whose package imports mxnet and requires no MXNet build."""
    out: list[Finding] = []
    for path, parsed in packages:
        anchor = parsed.metadata
        if anchor is None or parsed.opaque or not settings.enabled(UndeclaredMxnet, path):
            continue
        declared = [*parsed.requirements, *(r for g in parsed.groups.values() for r in g)]
        if any(is_mxnet_dist(r.name) for r in declared):
            continue
        directory = os.path.dirname(path)
        found = mxnet_import(directory)
        if found is None:
            continue
        where = f"{os.path.relpath(found.path, directory or '.')}:{found.line}"
        mxnet_2 = (settings.mxnet_version or "1")[0] == "2"
        cap = capped.get(_project_root(path), False) or mxnet_2
        numpy = next(
            (r for r in parsed.requirements if r.name == "numpy" and not _caps_numpy(r)), None
        )
        message = undeclared_mxnet.message(found, where, anchor, None if mxnet_2 else numpy, cap)
        start = Location(anchor.line, anchor.col)
        end = Location(anchor.line, anchor.col + len(anchor.text))
        out.append(Finding(UndeclaredMxnet.code, message, path, start, end))
    return out
