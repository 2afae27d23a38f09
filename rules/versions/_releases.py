"""What the versions rules judge with: MXNet's release tables (`mxlint/data/mxnet_releases.json`),
dependency sets and the version arithmetic on them. Loads `packaging`: imported only by runs that
have a dependency file (through `_dependency_sets.py` and the rules' checks).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from mxlint.knowledge.store import read_text
from mxlint.requirements_parsing import Requirement
from mxlint.rule import Rule

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
    data = json.loads(read_text("data/mxnet_releases.json"))
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


#: The cuDNN major each CUDA build was linked against, per release line: MXNet's build script
#: (`tools/setup_gpu_build_tools.sh` at the tags 1.5.0 to 1.9.1) installs these before building
#: the pip wheels; its release images (`cd/utils/mxnet_base_image.sh`) match them for 1.9.
_CUDNN_BY_LINE: dict[str, dict[str, int]] = {
    "1.5": {"cu75": 6, "cu80": 7, "cu90": 7, "cu91": 7, "cu92": 7, "cu100": 7, "cu101": 7},
    "1.6": {"cu75": 6, "cu80": 7, "cu90": 7, "cu91": 7, "cu92": 7, "cu100": 7, "cu101": 7},
    "1.7": {"cu75": 6, "cu80": 7, "cu90": 7, "cu91": 7, "cu92": 7, "cu100": 7, "cu101": 7}
    | {"cu102": 7},
    "1.8": {"cu75": 6, "cu80": 7, "cu90": 7, "cu91": 7, "cu92": 7, "cu100": 7, "cu101": 7}
    | {"cu102": 7, "cu110": 8},
    "1.9": {"cu100": 7, "cu101": 7, "cu102": 8, "cu110": 8, "cu112": 8},
}


def cudnn_of_build(name: str, version: Version) -> int | None:
    """The cuDNN major `name==version` loads (`libcudnn.so.8`), None when not known. Every
    CUDA 11 build uses cuDNN 8: cuDNN 7 has no CUDA 11 release, and cuDNN 9 came after
    MXNet's last one."""
    m = _MXNET_DIST.match(name)
    if not m or not m.group(1):
        return None
    variant = f"cu{m.group(1)}"
    if variant.startswith("cu11"):
        return 8
    return _CUDNN_BY_LINE.get(f"{version.major}.{version.minor}", {}).get(variant)


def installed_release(name: str, records: list[Requirement]) -> Version | None:
    """The release pip picks for these records: the newest final release they admit (None for
    a direct reference or a specifier that admits no known release)."""
    if any(r.direct for r in records):
        return None
    spec = spec_of(records)
    if spec is None:
        return None
    known = final_releases(releases().variants.get(name, ()))
    return next((v for v in known if spec.contains(v)), None)


def final_releases(versions: tuple[str, ...]) -> list[Version]:
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
    return str(final_releases(known)[0])


# --- dependency sets ---------------------------------------------------------------------------


@dataclass
class DepSet:
    requirements: list[Requirement]
    cuda: str | None = None
    image: str | None = None
    from_line: int = 0
    #: (flavor, cuDNN major) of an `nvidia/cuda` base image: ("base", None), ("runtime", "8").
    cuda_kind: tuple[str, str | None] | None = None
    #: The stage installs CUDA libraries itself (`apt-get install libcudnn8`,
    #: `pip install nvidia-cudnn-cu11`, `conda install cudatoolkit`).
    installs_cuda_libraries: bool = False
    custom_index: bool = False
    #: A `numpy<1.24` in any dependency file of the project: a set without numpy is capped by
    #: the author elsewhere (a base file, the package metadata, `pip install -e .`).
    numpy_capped: bool = False
    #: Poetry's `python` constraint: the resolver locks what installs on each Python it admits.
    lock_python: str | None = None
    #: Whether numpy is judged when the set does not require it: not for a Dockerfile stage
    #: whose image may already hold one (anything but a bare Python or distribution image).
    judge_missing_numpy: bool = True


Hit = tuple[Requirement, type[Rule], str]


def spec_of(records: list[Requirement]) -> SpecifierSet | None:
    """The intersection of the records' specifiers; None when a record is unparseable."""
    total = SpecifierSet()
    for r in records:
        spec = r.specifier_set()
        if spec is None:
            return None
        total &= spec
    return total


def admits_from(spec: SpecifierSet, threshold: Version, known: tuple[str, ...]) -> bool:
    if spec.contains(FUTURE):
        return True
    return any(Version(v) >= threshold for v in spec.filter(known))


def overlap(a: Requirement, b: Requirement) -> bool:
    return a.marker is None or b.marker is None or a.marker == b.marker


def mxnet_1x(name: str, records: list[Requirement]) -> bool:
    """Whether the set may install MXNet 1.6 to 1.9 (the releases that import `np.bool`)."""
    if any(r.direct for r in records):
        return True
    spec = spec_of(records)
    if spec is None:
        return False
    known = releases().variants.get(name, ()) + releases().variants["mxnet"]
    return any(
        Version("1.6") <= v < Version("2") for v in final_releases(known) if spec.contains(v)
    )


def old_python(records: list[Requirement]) -> bool:
    """A conda `python=3.7` (or older): numpy 1.24 cannot be installed there anyway."""
    spec = spec_of(records) if records else None
    if spec is None or not str(spec):
        return False
    return not any(spec.contains(v) for v in ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13"))


def locks_old_python(spec: str | None) -> bool:
    """A Poetry `python` range that admits 3.7: its lock holds numpy below 1.22 (the last that
    installs on 3.7), below the break."""
    if spec is None:
        return False
    try:
        return SpecifierSet(spec).contains("3.7")
    except InvalidSpecifier:
        return False


def check_cap(
    records: list[Requirement], threshold: Version, known: tuple[str, ...], rule: type[Rule]
) -> list[Hit]:
    if any(r.direct for r in records):
        return []
    spec = spec_of(records)
    if spec is None or not admits_from(spec, threshold, known):
        return []
    hits: list[Hit] = []
    for r in records:
        own = r.specifier_set()
        if not r.constraint and own is not None and admits_from(own, threshold, known):
            hits.append((r, rule, rule.format(text=r.text)))
    return hits
