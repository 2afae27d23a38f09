"""What the MXL5xx rules judge: dependency sets and MXNet's release tables.

A *dependency set* is what one `pip install` ends up with: a requirements file with its
`-r`/`-c` files, a pyproject's base dependencies plus one extra, a Dockerfile stage. Each set is
judged against the release tables in `mxlint/data/mxnet_releases.json`.

Kept apart from `versions` (the rules and the checker that selects files) so that a run over
Python files alone never imports `packaging` and the dependency-file readers.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

from mxlint.rules.versions._files import file_kind
from mxlint.rules.versions.conflicting_mxnet_variants import ConflictingMxnetVariants
from mxlint.rules.versions.cuda_variant_mismatch import CudaVariantMismatch
from mxlint.rules.versions.numpy_breaks_mxnet_import import NumpyBreaksMxnetImport
from mxlint.rules.versions.onnx_breaks_mxnet_export import OnnxBreaksMxnetExport
from mxlint.rules.versions.unpinned_mxnet import UnpinnedMxnet
from mxlint.rules.versions.unreleased_mxnet_version import UnreleasedMxnetVersion
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

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

if TYPE_CHECKING:
    from mxlint.config import Settings

# --- release tables --------------------------------------------------------------------------

_MXNET_DIST = re.compile(r"^mxnet(?:-cu(\d+)(?:mkl)?|-mkl|-native)?$")
NUMPY_BREAKS = Version("1.24")
ONNX_BREAKS = Version("1.19")
FUTURE = "9999"


@dataclass(frozen=True)
class Releases:
    variants: dict[str, tuple[str, ...]]
    numpy: tuple[str, ...]
    onnx: tuple[str, ...]


@lru_cache(maxsize=1)
def releases() -> Releases:
    data = json.loads(resources.files("mxlint").joinpath("data/mxnet_releases.json").read_text())
    return Releases(
        {name: tuple(v["releases"]) for name, v in data["mxnet_variants"].items()},
        tuple(data["numpy"]),
        tuple(data["onnx"]),
    )


def is_mxnet_dist(name: str) -> bool:
    return _MXNET_DIST.match(name) is not None


def cuda_of_variant(name: str) -> str | None:
    """ "11.2" for mxnet-cu112 / mxnet-cu112mkl."""
    m = _MXNET_DIST.match(name)
    if not m or not m.group(1):
        return None
    digits = m.group(1)
    if len(digits) < 2:  # `mxnet-cu0`: no CUDA version to read
        return None
    return f"{int(digits[:-1])}.{digits[-1]}"


def _final(versions: tuple[str, ...]) -> list[Version]:
    out = []
    for v in versions:
        try:
            parsed = Version(v)
        except InvalidVersion:
            continue
        if not parsed.is_prerelease:
            out.append(parsed)
    return sorted(out, reverse=True)


def latest_release(name: str) -> str:
    known = releases().variants.get(name) or releases().variants["mxnet"]
    return str(_final(known)[0])


# --- dependency sets -------------------------------------------------------------------------


@dataclass
class DepSet:
    requirements: list[Requirement]
    cuda: str | None = None
    image: str | None = None
    from_line: int = 0
    custom_index: bool = False


Hit = tuple[Requirement, type[Rule], str]


def _spec(records: list[Requirement]) -> SpecifierSet | None:
    """The intersection of the records' specifiers; None when a record is unparseable."""
    total = SpecifierSet()
    for r in records:
        spec = r.specifier_set()
        if spec is None:
            return None
        total &= spec
    return total


def _admits_from(spec: SpecifierSet, threshold: Version, known: tuple[str, ...]) -> bool:
    if spec.contains(FUTURE):
        return True
    return any(Version(v) >= threshold for v in spec.filter(known))


def _overlap(a: Requirement, b: Requirement) -> bool:
    return a.marker is None or b.marker is None or a.marker == b.marker


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
        hits += _check_pin(name, by_name[name])
        if not dep.custom_index:
            hits += _check_released(name, by_name[name])
        if dep.cuda is not None:
            hits += _check_cuda(name, by_name[name], dep)
    hits += _check_conflicts(mx_names, by_name)
    if not mx_names or _old_python(by_name.get("python", [])):
        return hits
    if "numpy" in present and any(_mxnet_1x(n, by_name[n]) for n in mx_names):
        hits += _check_cap(by_name["numpy"], NUMPY_BREAKS, releases().numpy, NumpyBreaksMxnetImport)
    if "onnx" in present:
        hits += _check_cap(by_name["onnx"], ONNX_BREAKS, releases().onnx, OnnxBreaksMxnetExport)
    return hits


def _check_pin(name: str, records: list[Requirement]) -> list[Hit]:
    if any(r.direct for r in records):
        return []
    spec = _spec(records)
    if spec is None or not spec.contains(FUTURE, prereleases=True):
        return []
    return [
        (
            r,
            UnpinnedMxnet,
            UnpinnedMxnet.format(text=r.text, name=name, version=_pin_for(name, spec)),
        )
        for r in records
        if not r.constraint
    ]


def _pin_for(name: str, spec: SpecifierSet) -> str:
    """The release to pin: the newest final one the spec admits, else the newest pre-release
    it admits (`mxnet>=2.0.0a` -> a 2.0 beta, never 1.9.1), else the newest final one."""
    known = releases().variants.get(name) or releases().variants["mxnet"]
    finals = [v for v in _final(known) if spec.contains(v)]
    if finals:
        return str(max(finals))
    pre = [v for v in known if spec.contains(v, prereleases=True)]
    return str(max(pre)) if pre else latest_release(name)


def _check_released(name: str, records: list[Requirement]) -> list[Hit]:
    known = releases().variants.get(name)
    if known is None:
        return []
    hits: list[Hit] = []
    for r in records:
        spec = r.specifier_set()
        if r.direct or r.conda or spec is None or not str(spec):
            continue
        if not any(spec.contains(v, prereleases=True) for v in known):
            shown = ", ".join(str(v) for v in _final(known)[:6])
            more = ", ..." if len(_final(known)) > 6 else ""
            hits.append(
                (
                    r,
                    UnreleasedMxnetVersion,
                    UnreleasedMxnetVersion.format(text=r.text, name=name, released=shown + more),
                )
            )
    return hits


def _check_cuda(name: str, records: list[Requirement], dep: DepSet) -> list[Hit]:
    wanted = cuda_of_variant(name)
    if wanted is None or wanted == dep.cuda:
        return []
    major, minor = (dep.cuda or "0.0").split(".")
    guess = f"mxnet-cu{major}{minor}"
    suggest = guess if guess in releases().variants else f"an mxnet build for CUDA {dep.cuda}"
    return [
        (
            r,
            CudaVariantMismatch,
            CudaVariantMismatch.format(
                text=r.text,
                wanted=wanted,
                image=dep.image,
                from_line=dep.from_line,
                have=dep.cuda,
                suggest=suggest,
            ),
        )
        for r in records
        if not r.constraint
    ]


def _check_conflicts(mx_names: list[str], by_name: dict[str, list[Requirement]]) -> list[Hit]:
    hits: list[Hit] = []
    firsts = [next(r for r in by_name[n] if not r.constraint) for n in mx_names]
    for i, later in enumerate(firsts):
        for earlier in firsts[:i]:
            if _overlap(earlier, later):
                hits.append(
                    (
                        later,
                        ConflictingMxnetVariants,
                        ConflictingMxnetVariants.format(text=later.text, other=earlier.text),
                    )
                )
                break
    return hits


def _mxnet_1x(name: str, records: list[Requirement]) -> bool:
    """Whether the set may install MXNet 1.6 to 1.9 (the releases that import `np.bool`)."""
    if any(r.direct for r in records):
        return True
    spec = _spec(records)
    if spec is None:
        return False
    known = releases().variants.get(name, ()) + releases().variants["mxnet"]
    return any(Version("1.6") <= v < Version("2") for v in _final(known) if spec.contains(v))


def _old_python(records: list[Requirement]) -> bool:
    """A conda `python=3.7` (or older): numpy 1.24 cannot be installed there anyway."""
    spec = _spec(records) if records else None
    if spec is None or not str(spec):
        return False
    return not any(spec.contains(v) for v in ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13"))


def _check_cap(
    records: list[Requirement], threshold: Version, known: tuple[str, ...], rule: type[Rule]
) -> list[Hit]:
    if any(r.direct for r in records):
        return []
    spec = _spec(records)
    if spec is None or not _admits_from(spec, threshold, known):
        return []
    hits: list[Hit] = []
    for r in records:
        own = r.specifier_set()
        if not r.constraint and own is not None and _admits_from(own, threshold, known):
            hits.append((r, rule, rule.format(text=r.text)))
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
            parsed = parse_requirements_txt(text, constraint=constraint)
            parsed.requirements = [replace(r, path=path) for r in parsed.requirements]
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
    parsed.requirements = [replace(r, path=path) for r in parsed.requirements]
    parsed.groups = {g: [replace(r, path=path) for r in rs] for g, rs in parsed.groups.items()}
    return parsed


def _grouped_sets(project: _Project, path: str, parsed: ParsedFile) -> list[DepSet]:
    base, custom = project.closure(path, parsed)
    sets = [DepSet(base, custom_index=custom)]
    sets += [DepSet(base + group, custom_index=custom) for group in parsed.groups.values()]
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
                    custom_index=custom,
                )
            )
    return sets


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


def check_files(files: list[tuple[str, str]], settings: Settings) -> list[Finding]:
    """Every dependency file of the run, read together (Dockerfiles see their `-r` files)."""
    project = _Project({_norm(p): t for p, t in files})
    sets: list[DepSet] = []
    requirement_files: list[str] = []
    for raw_path, text in files:
        path = _norm(raw_path)
        kind = file_kind(os.path.basename(path))
        if kind == "requirements":
            requirement_files.append(path)
        elif kind == "dockerfile":
            sets += _docker_sets(project, path, parse_dockerfile(text))
        elif kind == "pyproject":
            sets += _grouped_sets(project, path, _with_path(parse_pyproject(text), path))
        elif kind == "setup.cfg":
            sets += _grouped_sets(project, path, _with_path(parse_setup_cfg(text), path))
        elif kind == "setup.py":
            sets += _grouped_sets(project, path, _with_path(parse_setup_py(text), path))
        elif kind == "environment":
            sets += _grouped_sets(project, path, _with_path(parse_environment_yml(text), path))
    for path in requirement_files:  # includes of every file are known by now
        project.closure(path, project.requirements_file(path) or ParsedFile())
    for path in requirement_files:
        if path not in project.included:
            parsed = project.requirements_file(path)
            if parsed is not None:
                sets += _grouped_sets(project, path, parsed)
    return _findings(sets, settings)


def _findings(sets: list[DepSet], settings: Settings) -> list[Finding]:
    out: dict[tuple[str, int, int, str], Finding] = {}
    for dep in sets:
        for req, rule, message in evaluate(dep):
            if not settings.enabled(rule, req.path):
                continue
            key = (req.path, req.line, req.col, rule.code)
            out.setdefault(key, _finding(req, rule, message))
    return sorted(out.values(), key=Finding.sort_key)
