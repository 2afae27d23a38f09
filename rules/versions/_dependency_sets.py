"""What the MXL5xx rules judge: dependency sets and MXNet's release tables.

A *dependency set* is what one `pip install` ends up with: a requirements file with its
`-r`/`-c` files, a pyproject's base dependencies plus one extra, a Dockerfile stage. Each set is
judged against the release tables in `mxlint/data/mxnet_releases.json`.

Kept apart from `versions` (the rules and the checker that selects files) so that a run over
Python files alone never imports `packaging` and the dependency-file readers.
"""

from __future__ import annotations

import os
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
    cuda_variant_mismatch,
    unpinned_mxnet,
    unreleased_mxnet_version,
)
from mxlint.rules.versions._files import file_kind
from mxlint.rules.versions._releases import (
    NUMPY_BREAKS,
    ONNX_BREAKS,
    DepSet,
    Hit,
    check_cap,
    is_mxnet_dist,
    mxnet_1x,
    old_python,
    releases,
)
from mxlint.rules.versions.numpy_breaks_mxnet_import import NumpyBreaksMxnetImport
from mxlint.rules.versions.onnx_breaks_mxnet_export import OnnxBreaksMxnetExport

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
    hits += conflicting_mxnet_variants.check(mx_names, by_name)
    if not mx_names or old_python(by_name.get("python", [])):
        return hits
    if "numpy" in present and any(mxnet_1x(n, by_name[n]) for n in mx_names):
        hits += check_cap(by_name["numpy"], NUMPY_BREAKS, releases().numpy, NumpyBreaksMxnetImport)
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
