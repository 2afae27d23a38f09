"""MXL5xx: the environment an MXNet project declares (requirements, pyproject, setup.py/cfg,
conda environment.yml, Dockerfile) — pins, variants, CUDA and the numpy/onnx releases that break
MXNet 1.x.

The readers are in `mxlint.requirements_parsing` and `mxlint.dockerfile`; this module groups what
they read into *dependency sets* (what one `pip install` ends up with: a requirements file with
its `-r`/`-c` files, a pyproject's base dependencies plus one extra, a Dockerfile stage) and
judges each set against the release tables in `mxlint/data/mxnet_releases.json`.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from mxlint.checker import TextChecker
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
from mxlint.rule import Example, Finding, Location, Rule, Valid

if TYPE_CHECKING:
    from mxlint.config import Settings

_NOT_FLAKE8 = """
        It reads dependency files, not Python code, so it runs only under `mxlint check`: the
        flake8 plugin cannot report it (flake8 only hands `.py` files to plugins, one at a
        time).
"""

# --- the rules -------------------------------------------------------------------------------


class UnpinnedMxnet(Rule):
    code = "MXL501"
    name = "unpinned-mxnet"
    message = "`{text}` does not pin MXNet: pin `{name}=={version}`"
    kind = "requirements"
    what = """
        Checks for an `mxnet` distribution (`mxnet`, `mxnet-cuXXX`, `mxnet-mkl`,
        `mxnet-cuXXXmkl`, `mxnet-native`) required without a version or with a lower bound only
        (`mxnet-cu112>=1.8`), in requirements/constraints files, pyproject.toml (PEP 621 and
        Poetry), setup.py/setup.cfg, conda environment.yml and Dockerfile `pip install` lines.
    """ + _NOT_FLAKE8
    why = """
        MXNet's releases changed behaviour between minor versions (operators, defaults,
        the numpy front end), and an open range lets a rebuild pick up another release — or,
        with `--pre`, the 2.0 betas, which replace `hybrid_forward` with `forward`. A model that
        trained yesterday then fails to rebuild or to load. An upper bound (`<1.10`, `~=1.9.0`)
        or an exact pin keeps the environment reproducible. A constraint in a `-c` file that
        pins the version counts.
    """
    example = """
        # requirements.txt
        mxnet-cu112>=1.8
    """
    use_instead = """
        # requirements.txt
        mxnet-cu112==1.9.1
    """
    invalid = (
        Example("mxnet\n", line=1, filename="requirements.txt"),
        Example("numpy<1.24\nmxnet-cu112>=1.8  # GPU build\n", line=2, filename="requirements.txt"),
        Example('[project]\nname = "x"\ndependencies = [\n  "mxnet>=1.6",\n  "numpy<1.24",\n]\n',
                line=4, filename="pyproject.toml"),
        Example("[tool.poetry.dependencies]\npython = \"^3.8\"\nmxnet = \"*\"\n",
                line=3, filename="pyproject.toml"),
        Example("FROM python:3.8\nRUN pip install --no-cache-dir mxnet 'numpy<1.24'\n",
                line=2, filename="Dockerfile"),
        Example("name: env\ndependencies:\n  - python=3.8\n  - pip:\n    - mxnet-cu112\n",
                line=5, filename="environment.yml"),
        Example("[options]\ninstall_requires =\n    mxnet>=1.5\n", line=3, filename="setup.cfg"),
        Example("from setuptools import setup\nsetup(name='x', install_requires=['mxnet'])\n",
                line=2, filename="setup.py"),
    )
    valid = (
        Valid("mxnet==1.9.1\n", filename="requirements.txt"),
        Valid("mxnet-cu112>=1.8,<1.10\n", filename="requirements.txt"),
        Valid("mxnet~=1.9.0\n", filename="requirements.txt"),
        Valid("-c constraints.txt\nmxnet\n", filename="requirements.txt",
              project=(("constraints.txt", "mxnet==1.9.1\n"),)),
        Valid("[tool.poetry.dependencies]\nmxnet = \"^1.9.1\"\n", filename="pyproject.toml"),
        Valid("mxnet-model-server\ngluoncv>=0.10\n", filename="requirements.txt"),
        Valid("https://example.com/wheels/mxnet_cu112-1.9.1-py3-none-manylinux2014_x86_64.whl\n",
              filename="requirements.txt"),
        Valid("name: env\ndependencies:\n  - mxnet=1.9\n", filename="environment.yml"),
    )


class ConflictingMxnetVariants(Rule):
    code = "MXL502"
    name = "conflicting-mxnet-variants"
    message = ("`{text}` and `{other}` are both installed: both provide the `mxnet` package and "
               "the one installed last silently replaces the other; keep one")
    kind = "requirements"
    what = """
        Checks for two different MXNet distributions in one dependency set: the CPU `mxnet` and
        a GPU `mxnet-cu112`, two CUDA variants, or `mxnet` and `mxnet-mkl`.
    """ + _NOT_FLAKE8
    why = """
        Every variant installs the same `mxnet` import package. pip installs both, and whichever
        comes last overwrites the other's files: a GPU image ends up with the CPU build
        (`mx.gpu()` fails with "Compile with USE_CUDA=1"), or a mix of both builds'
        files that fails to load. Variants that sit in different extras, or behind exclusive
        environment markers, are not reported.
    """
    example = """
        # requirements.txt
        mxnet==1.9.1
        mxnet-cu112==1.9.1
    """
    use_instead = """
        # requirements.txt (GPU machines)
        mxnet-cu112==1.9.1
    """
    invalid = (
        Example("mxnet==1.9.1\nnumpy<1.24\nmxnet-cu112==1.9.1\n", line=3,
                filename="requirements.txt"),
        Example("-r base.txt\nmxnet-cu101==1.9.1\n", line=2, filename="requirements-gpu.txt",
                project=(("base.txt", "mxnet-mkl==1.6.0\nnumpy<1.24\n"),)),
        Example("FROM nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04\n"
                "RUN pip install mxnet==1.9.1 'numpy<1.24' && \\\n"
                "    pip install mxnet-cu112==1.9.1\n", line=3, filename="Dockerfile"),
    )
    valid = (
        Valid("mxnet-cu112==1.9.1\nnumpy<1.24\n", filename="requirements.txt"),
        Valid('mxnet==1.9.1; sys_platform == "darwin"\n'
              'mxnet-cu112==1.9.1; sys_platform == "linux"\n', filename="requirements.txt"),
        Valid('[project]\nname = "x"\ndependencies = ["numpy<1.24"]\n'
              '[project.optional-dependencies]\ncpu = ["mxnet==1.9.1"]\n'
              'gpu = ["mxnet-cu112==1.9.1"]\n', filename="pyproject.toml"),
        Valid("FROM python:3.8 AS cpu\nRUN pip install mxnet==1.9.1 'numpy<1.24'\n"
              "FROM nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04 AS gpu\n"
              "RUN pip install mxnet-cu112==1.9.1 'numpy<1.24'\n", filename="Dockerfile"),
    )


class CudaVariantMismatch(Rule):
    code = "MXL503"
    name = "cuda-variant-mismatch"
    message = ("`{text}` is built for CUDA {wanted} but `{image}` (line {from_line}) has CUDA "
               "{have}: install `{suggest}` or use a CUDA {wanted} image")
    kind = "requirements"
    what = """
        Checks for an `mxnet-cuXXX` variant installed into a Docker stage whose base image has a
        different CUDA version (`FROM nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04` needs
        `mxnet-cu112`). The requirement may be on the `RUN pip install` line or in a
        requirements file it installs with `-r` (found through `COPY`). The stage is the one
        `pip` runs in; `ARG`s with defaults are resolved, and a `FROM` that cannot be resolved
        is not judged.
    """ + _NOT_FLAKE8
    why = """
        `mxnet-cu112` links against the CUDA 11.2 runtime libraries. In an image with another
        CUDA version `import mxnet` fails with `OSError: libcudart.so.11.0: cannot open shared
        object file` (or the cuDNN/NVRTC equivalent), or the GPU build falls back to
        errors at the first `mx.gpu()` operator — only once the image runs on a GPU host.
    """
    example = """
        # Dockerfile
        FROM nvidia/cuda:10.1-cudnn7-runtime-ubuntu18.04
        RUN pip3 install mxnet-cu112==1.9.1 "numpy<1.24"
    """
    use_instead = """
        # Dockerfile
        FROM nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04
        RUN pip3 install mxnet-cu112==1.9.1 "numpy<1.24"
    """
    invalid = (
        Example("FROM nvidia/cuda:10.1-cudnn7-runtime-ubuntu18.04\n"
                "RUN pip3 install mxnet-cu112==1.9.1 \"numpy<1.24\"\n", line=2,
                filename="Dockerfile"),
        Example("ARG CUDA=11.0.3\nFROM nvidia/cuda:${CUDA}-cudnn8-runtime-ubuntu20.04\n"
                "COPY requirements.txt /app/\nRUN python3 -m pip install -r /app/requirements.txt\n",
                filename="Dockerfile",
                project=(("requirements.txt", "mxnet-cu112==1.9.1\nnumpy<1.24\n"),)),
    )
    valid = (
        Valid("FROM nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04\n"
              "RUN pip3 install mxnet-cu112==1.9.1 \"numpy<1.24\"\n", filename="Dockerfile"),
        Valid("ARG BASE\nFROM ${BASE}\nRUN pip install mxnet-cu112==1.9.1 'numpy<1.24'\n",
              filename="Dockerfile"),
        Valid("FROM nvidia/cuda:10.1-devel-ubuntu18.04 AS build\nRUN make\n"
              "FROM nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04\n"
              "RUN pip install mxnet-cu112==1.9.1 'numpy<1.24'\n", filename="Dockerfile"),
    )


class UnreleasedMxnetVersion(Rule):
    code = "MXL504"
    name = "unreleased-mxnet-version"
    message = ("`{text}`: no `{name}` release matches; released: {released}")
    kind = "requirements"
    what = """
        Checks for an MXNet variant pinned to a version that was never released for that
        variant, e.g. `mxnet-cu100==1.9.1` (CUDA 10.0 builds stop at 1.9.0) or
        `mxnet-cu112==1.8.0` (only `1.8.0.post0` exists). The release tables are PyPI's, taken
        once (MXNet is retired, so they are final). Sets that install from another index or
        `--find-links` are not judged.
    """ + _NOT_FLAKE8
    why = """
        `pip install` fails with "No matching distribution found" — often only in CI or in a
        Docker build, long after the pin was written.
    """
    example = """
        # requirements.txt
        mxnet-cu100==1.9.1
    """
    use_instead = """
        # requirements.txt
        mxnet-cu100==1.9.0
    """
    invalid = (
        Example("mxnet-cu100==1.9.1\nnumpy<1.24\n", line=1, filename="requirements.txt"),
        Example("mxnet-cu112==1.8.0\nnumpy<1.24\n", line=1, filename="constraints.txt"),
        Example("FROM nvidia/cuda:9.2-cudnn7-runtime\nRUN pip install mxnet-cu92==1.8.0\n",
                line=2, filename="Dockerfile"),
    )
    valid = (
        Valid("mxnet-cu100==1.9.0\nnumpy<1.24\n", filename="requirements.txt"),
        Valid("mxnet-cu112==1.8.0.post0\nnumpy<1.24\n", filename="requirements.txt"),
        Valid("--find-links https://example.com/wheels/\nmxnet-cu100==1.9.1\nnumpy<1.24\n",
              filename="requirements.txt"),
    )


class OnnxBreaksMxnetExport(Rule):
    code = "MXL505"
    name = "onnx-breaks-mxnet-export"
    message = ("`{text}` admits onnx 1.19+, which removed `onnx.mapping` that MXNet's ONNX "
               "exporter imports: add `onnx<1.19`")
    kind = "requirements"
    what = """
        Checks for `onnx` required without an upper bound below 1.19 (unpinned, `onnx>=1.10`,
        `onnx==1.19.0`) in a dependency set that also installs MXNet.
    """ + _NOT_FLAKE8
    why = """
        MXNet 1.9.1's exporter (`mx.onnx.export_model`) runs `from onnx import helper,
        mapping, shape_inference`. onnx 1.19.0 removed the long-deprecated `onnx.mapping`
        module, and the import failure is re-raised as the misleading `ImportError: Onnx and
        protobuf need to be installed`. Checked on MXNet 1.9.1: export works with onnx 1.14.1
        through 1.18.0 (with a DeprecationWarning) and fails with 1.19.0. The threshold is
        1.19 — not the 1.15/1.16 sometimes quoted for the removal.
    """
    example = """
        # requirements.txt
        mxnet==1.9.1
        numpy<1.24
        onnx>=1.10
    """
    use_instead = """
        # requirements.txt
        mxnet==1.9.1
        numpy<1.24
        onnx>=1.10,<1.19
    """
    invalid = (
        Example("mxnet==1.9.1\nnumpy<1.24\nonnx\n", line=3, filename="requirements.txt"),
        Example("mxnet==1.9.1\nnumpy<1.24\nonnx==1.19.0\n", line=3, filename="requirements.txt"),
        Example("FROM python:3.8\nRUN pip install mxnet==1.9.1 'numpy<1.24' onnx>=1.10\n",
                line=2, filename="Dockerfile"),
    )
    valid = (
        Valid("mxnet==1.9.1\nnumpy<1.24\nonnx==1.14.1\n", filename="requirements.txt"),
        Valid("mxnet==1.9.1\nnumpy<1.24\nonnx>=1.10,<1.19\n", filename="requirements.txt"),
        Valid("torch==2.1.0\nonnx>=1.15\n", filename="requirements.txt"),
    )


class NumpyBreaksMxnetImport(Rule):
    code = "MXL506"
    name = "numpy-breaks-mxnet-import"
    message = ("`{text}` admits numpy 1.24+, where `import mxnet` fails (`np.bool` was "
               "removed): add `numpy<1.24`")
    kind = "requirements"
    what = """
        Checks for `numpy` required without an upper bound below 1.24 (unpinned,
        `numpy>=1.20`, `numpy==1.26.4`) in a dependency set that installs MXNet 1.6 or later
        1.x (`mx.np` exists from 1.6 on).
    """ + _NOT_FLAKE8
    why = """
        MXNet 1.x's `mxnet/numpy/utils.py` runs `bool = onp.bool` at import. numpy 1.24 removed
        the `np.bool` alias, so `import mxnet` raises `AttributeError: module 'numpy' has no
        attribute 'bool'`. MXNet 1.9.1 itself only requires `numpy<2.0.0,>1.16.0`, so pip
        happily installs 1.24–1.26 next to it (on Python 3.8+).
    """
    example = """
        # requirements.txt
        mxnet==1.9.1
        numpy>=1.20
    """
    use_instead = """
        # requirements.txt
        mxnet==1.9.1
        numpy>=1.20,<1.24
    """
    invalid = (
        Example("mxnet==1.9.1\nnumpy>=1.20\n", line=2, filename="requirements.txt"),
        Example("mxnet-cu112==1.9.1 \\\n    --hash=sha256:00\nnumpy\n", line=3,
                filename="requirements.txt"),
        Example("name: env\ndependencies:\n  - python=3.9\n  - numpy>=1.21\n  - pip:\n"
                "    - mxnet==1.9.1\n", line=4, filename="environment.yml"),
        Example("[tool.poetry.dependencies]\nmxnet = \"1.9.1\"\nnumpy = \"^1.21\"\n", line=3,
                filename="pyproject.toml"),
        Example("REQUIRED = ['mxnet==1.8.0', 'numpy']\n"
                "from setuptools import setup\nsetup(install_requires=REQUIRED)\n", line=1,
                filename="setup.py"),
    )
    valid = (
        Valid("mxnet==1.9.1\nnumpy<1.24\n", filename="requirements.txt"),
        Valid("mxnet==1.9.1\nnumpy\n-c constraints.txt\n", filename="requirements.txt",
              project=(("constraints.txt", "numpy==1.23.5\n"),)),
        Valid("mxnet==1.5.1\nnumpy\n", filename="requirements.txt"),
        Valid("torch==2.1\nnumpy>=1.24\n", filename="requirements.txt"),
        Valid("name: env\ndependencies:\n  - python=3.7\n  - numpy\n  - pip:\n"
              "    - mxnet==1.9.1\n", filename="environment.yml"),
    )


VERSION_RULES: tuple[type[Rule], ...] = (
    UnpinnedMxnet, ConflictingMxnetVariants, CudaVariantMismatch, UnreleasedMxnetVersion,
    OnnxBreaksMxnetExport, NumpyBreaksMxnetImport,
)

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
        tuple(data["numpy"]), tuple(data["onnx"]),
    )


def is_mxnet_dist(name: str) -> bool:
    return _MXNET_DIST.match(name) is not None


def cuda_of_variant(name: str) -> str | None:
    """"11.2" for mxnet-cu112 / mxnet-cu112mkl."""
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
        hits += _check_cap(by_name["numpy"], NUMPY_BREAKS, releases().numpy,
                           NumpyBreaksMxnetImport)
    if "onnx" in present:
        hits += _check_cap(by_name["onnx"], ONNX_BREAKS, releases().onnx, OnnxBreaksMxnetExport)
    return hits


def _check_pin(name: str, records: list[Requirement]) -> list[Hit]:
    if any(r.direct for r in records):
        return []
    spec = _spec(records)
    if spec is None or not spec.contains(FUTURE, prereleases=True):
        return []
    return [(r, UnpinnedMxnet, UnpinnedMxnet.format(text=r.text, name=name,
                                                    version=_pin_for(name, spec)))
            for r in records if not r.constraint]


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
            hits.append((r, UnreleasedMxnetVersion, UnreleasedMxnetVersion.format(
                text=r.text, name=name, released=shown + more)))
    return hits


def _check_cuda(name: str, records: list[Requirement], dep: DepSet) -> list[Hit]:
    wanted = cuda_of_variant(name)
    if wanted is None or wanted == dep.cuda:
        return []
    major, minor = (dep.cuda or "0.0").split(".")
    guess = f"mxnet-cu{major}{minor}"
    suggest = guess if guess in releases().variants else f"an mxnet build for CUDA {dep.cuda}"
    return [(r, CudaVariantMismatch, CudaVariantMismatch.format(
        text=r.text, wanted=wanted, image=dep.image, from_line=dep.from_line, have=dep.cuda,
        suggest=suggest)) for r in records if not r.constraint]


def _check_conflicts(mx_names: list[str], by_name: dict[str, list[Requirement]]) -> list[Hit]:
    hits: list[Hit] = []
    firsts = [next(r for r in by_name[n] if not r.constraint) for n in mx_names]
    for i, later in enumerate(firsts):
        for earlier in firsts[:i]:
            if _overlap(earlier, later):
                hits.append((later, ConflictingMxnetVariants, ConflictingMxnetVariants.format(
                    text=later.text, other=earlier.text)))
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


def _check_cap(records: list[Requirement], threshold: Version, known: tuple[str, ...],
               rule: type[Rule]) -> list[Hit]:
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


# --- the text checker --------------------------------------------------------------------------

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

    def closure(self, path: str, parsed: ParsedFile, seen: set[str] | None = None,
                constraint: bool = False) -> tuple[list[Requirement], bool]:
        """A file's requirements with those of its `-r`/`-c` files (marked as included)."""
        seen = seen if seen is not None else {_norm(path)}
        parts: list[tuple[int, list[Requirement]]] = [
            (r.line, [replace(r, constraint=True) if constraint else r])
            for r in parsed.requirements]
        custom = parsed.custom_index
        for inc in parsed.includes:
            target = _norm(os.path.join(os.path.dirname(path), inc.target))
            r, c = self.include(target, inc.kind == "c" or constraint, seen)
            parts.append((inc.line, r))
            custom = custom or c
        parts.sort(key=lambda part: part[0])  # in file order: an include where it is written
        return [r for _, rs in parts for r in rs], custom

    def include(self, target: str, constraint: bool, seen: set[str]) -> tuple[list[Requirement], bool]:
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
            sets.append(DepSet(reqs, cuda=stage.cuda, image=stage.image, from_line=stage.line,
                               custom_index=custom))
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
    return Finding(rule.code, message, req.path, Location(req.line, req.col),
                   Location(req.line, req.col + width))


class DependencyFilesChecker(TextChecker):
    """Reads every dependency file of the run together (Dockerfiles see their `-r` files)."""

    rules = VERSION_RULES
    name = "versions"

    @classmethod
    def matches(cls, filename: str) -> bool:
        return file_kind(filename) is not None

    def check_files(self, files: list[tuple[str, str]], settings: Settings) -> list[Finding]:
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
                sets += _grouped_sets(project, path,
                                      _with_path(parse_environment_yml(text), path))
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
