"""MXL5xx: the environment an MXNet project declares (requirements, pyproject, setup.py/cfg,
conda environment.yml, Dockerfile) — pins, variants, CUDA and the numpy/onnx releases that break
MXNet 1.x.

This module holds the rules and picks the files; `_dependency_sets` groups what the readers
(`mxlint.requirements_parsing`, `mxlint.dockerfile`) find into *dependency sets* and judges
them. It is imported only when a run has a dependency file, so linting Python alone never
loads `packaging`.
"""

from __future__ import annotations

import fnmatch
import re
from typing import TYPE_CHECKING

from mxlint.checker import TextChecker
from mxlint.rule import Example, Finding, Rule, Valid

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
    what = (
        """
        Checks for an `mxnet` distribution (`mxnet`, `mxnet-cuXXX`, `mxnet-mkl`,
        `mxnet-cuXXXmkl`, `mxnet-native`) required without a version or with a lower bound only
        (`mxnet-cu112>=1.8`), in requirements/constraints files, pyproject.toml (PEP 621 and
        Poetry), setup.py/setup.cfg, conda environment.yml and Dockerfile `pip install` lines.
    """
        + _NOT_FLAKE8
    )
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
        Example(
            '[project]\nname = "x"\ndependencies = [\n  "mxnet>=1.6",\n  "numpy<1.24",\n]\n',
            line=4,
            filename="pyproject.toml",
        ),
        Example(
            '[tool.poetry.dependencies]\npython = "^3.8"\nmxnet = "*"\n',
            line=3,
            filename="pyproject.toml",
        ),
        Example(
            "FROM python:3.8\nRUN pip install --no-cache-dir mxnet 'numpy<1.24'\n",
            line=2,
            filename="Dockerfile",
        ),
        Example(
            "name: env\ndependencies:\n  - python=3.8\n  - pip:\n    - mxnet-cu112\n",
            line=5,
            filename="environment.yml",
        ),
        Example("[options]\ninstall_requires =\n    mxnet>=1.5\n", line=3, filename="setup.cfg"),
        Example(
            "from setuptools import setup\nsetup(name='x', install_requires=['mxnet'])\n",
            line=2,
            filename="setup.py",
        ),
    )
    valid = (
        Valid("mxnet==1.9.1\n", filename="requirements.txt"),
        Valid("mxnet-cu112>=1.8,<1.10\n", filename="requirements.txt"),
        Valid("mxnet~=1.9.0\n", filename="requirements.txt"),
        Valid(
            "-c constraints.txt\nmxnet\n",
            filename="requirements.txt",
            project=(("constraints.txt", "mxnet==1.9.1\n"),),
        ),
        Valid('[tool.poetry.dependencies]\nmxnet = "^1.9.1"\n', filename="pyproject.toml"),
        Valid("mxnet-model-server\ngluoncv>=0.10\n", filename="requirements.txt"),
        Valid(
            "https://example.com/wheels/mxnet_cu112-1.9.1-py3-none-manylinux2014_x86_64.whl\n",
            filename="requirements.txt",
        ),
        Valid("name: env\ndependencies:\n  - mxnet=1.9\n", filename="environment.yml"),
    )


class ConflictingMxnetVariants(Rule):
    code = "MXL502"
    name = "conflicting-mxnet-variants"
    message = (
        "`{text}` and `{other}` are both installed: both provide the `mxnet` package and "
        "the one installed last silently replaces the other; keep one"
    )
    kind = "requirements"
    what = (
        """
        Checks for two different MXNet distributions in one dependency set: the CPU `mxnet` and
        a GPU `mxnet-cu112`, two CUDA variants, or `mxnet` and `mxnet-mkl`.
    """
        + _NOT_FLAKE8
    )
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
        Example(
            "mxnet==1.9.1\nnumpy<1.24\nmxnet-cu112==1.9.1\n", line=3, filename="requirements.txt"
        ),
        Example(
            "-r base.txt\nmxnet-cu101==1.9.1\n",
            line=2,
            filename="requirements-gpu.txt",
            project=(("base.txt", "mxnet-mkl==1.6.0\nnumpy<1.24\n"),),
        ),
        Example(
            "FROM nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04\n"
            "RUN pip install mxnet==1.9.1 'numpy<1.24' && \\\n"
            "    pip install mxnet-cu112==1.9.1\n",
            line=3,
            filename="Dockerfile",
        ),
    )
    valid = (
        Valid("mxnet-cu112==1.9.1\nnumpy<1.24\n", filename="requirements.txt"),
        Valid(
            'mxnet==1.9.1; sys_platform == "darwin"\nmxnet-cu112==1.9.1; sys_platform == "linux"\n',
            filename="requirements.txt",
        ),
        Valid(
            '[project]\nname = "x"\ndependencies = ["numpy<1.24"]\n'
            '[project.optional-dependencies]\ncpu = ["mxnet==1.9.1"]\n'
            'gpu = ["mxnet-cu112==1.9.1"]\n',
            filename="pyproject.toml",
        ),
        Valid(
            "FROM python:3.8 AS cpu\nRUN pip install mxnet==1.9.1 'numpy<1.24'\n"
            "FROM nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04 AS gpu\n"
            "RUN pip install mxnet-cu112==1.9.1 'numpy<1.24'\n",
            filename="Dockerfile",
        ),
    )


class CudaVariantMismatch(Rule):
    code = "MXL503"
    name = "cuda-variant-mismatch"
    message = (
        "`{text}` is built for CUDA {wanted} but `{image}` (line {from_line}) has CUDA "
        "{have}: install `{suggest}` or use a CUDA {wanted} image"
    )
    kind = "requirements"
    what = (
        """
        Checks for an `mxnet-cuXXX` variant installed into a Docker stage whose base image has a
        different CUDA version (`FROM nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04` needs
        `mxnet-cu112`). The requirement may be on the `RUN pip install` line or in a
        requirements file it installs with `-r` (found through `COPY`). The stage is the one
        `pip` runs in; `ARG`s with defaults are resolved, and a `FROM` that cannot be resolved
        is not judged.
    """
        + _NOT_FLAKE8
    )
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
        Example(
            "FROM nvidia/cuda:10.1-cudnn7-runtime-ubuntu18.04\n"
            'RUN pip3 install mxnet-cu112==1.9.1 "numpy<1.24"\n',
            line=2,
            filename="Dockerfile",
        ),
        Example(
            "ARG CUDA=11.0.3\nFROM nvidia/cuda:${CUDA}-cudnn8-runtime-ubuntu20.04\n"
            "COPY requirements.txt /app/\nRUN python3 -m pip install -r /app/requirements.txt\n",
            filename="Dockerfile",
            project=(("requirements.txt", "mxnet-cu112==1.9.1\nnumpy<1.24\n"),),
        ),
    )
    valid = (
        Valid(
            "FROM nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04\n"
            'RUN pip3 install mxnet-cu112==1.9.1 "numpy<1.24"\n',
            filename="Dockerfile",
        ),
        Valid(
            "ARG BASE\nFROM ${BASE}\nRUN pip install mxnet-cu112==1.9.1 'numpy<1.24'\n",
            filename="Dockerfile",
        ),
        Valid(
            "FROM nvidia/cuda:10.1-devel-ubuntu18.04 AS build\nRUN make\n"
            "FROM nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04\n"
            "RUN pip install mxnet-cu112==1.9.1 'numpy<1.24'\n",
            filename="Dockerfile",
        ),
    )


class UnreleasedMxnetVersion(Rule):
    code = "MXL504"
    name = "unreleased-mxnet-version"
    message = "`{text}`: no `{name}` release matches; released: {released}"
    kind = "requirements"
    what = (
        """
        Checks for an MXNet variant pinned to a version that was never released for that
        variant, e.g. `mxnet-cu100==1.9.1` (CUDA 10.0 builds stop at 1.9.0) or
        `mxnet-cu112==1.8.0` (only `1.8.0.post0` exists). The release tables are PyPI's, taken
        once (MXNet is retired, so they are final). Sets that install from another index or
        `--find-links` are not judged.
    """
        + _NOT_FLAKE8
    )
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
        Example(
            "FROM nvidia/cuda:9.2-cudnn7-runtime\nRUN pip install mxnet-cu92==1.8.0\n",
            line=2,
            filename="Dockerfile",
        ),
    )
    valid = (
        Valid("mxnet-cu100==1.9.0\nnumpy<1.24\n", filename="requirements.txt"),
        Valid("mxnet-cu112==1.8.0.post0\nnumpy<1.24\n", filename="requirements.txt"),
        Valid(
            "--find-links https://example.com/wheels/\nmxnet-cu100==1.9.1\nnumpy<1.24\n",
            filename="requirements.txt",
        ),
    )


class OnnxBreaksMxnetExport(Rule):
    code = "MXL505"
    name = "onnx-breaks-mxnet-export"
    message = (
        "`{text}` admits onnx 1.19+, which removed `onnx.mapping` that MXNet's ONNX "
        "exporter imports: add `onnx<1.19`"
    )
    kind = "requirements"
    what = (
        """
        Checks for `onnx` required without an upper bound below 1.19 (unpinned, `onnx>=1.10`,
        `onnx==1.19.0`) in a dependency set that also installs MXNet.
    """
        + _NOT_FLAKE8
    )
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
        Example(
            "FROM python:3.8\nRUN pip install mxnet==1.9.1 'numpy<1.24' onnx>=1.10\n",
            line=2,
            filename="Dockerfile",
        ),
    )
    valid = (
        Valid("mxnet==1.9.1\nnumpy<1.24\nonnx==1.14.1\n", filename="requirements.txt"),
        Valid("mxnet==1.9.1\nnumpy<1.24\nonnx>=1.10,<1.19\n", filename="requirements.txt"),
        Valid("torch==2.1.0\nonnx>=1.15\n", filename="requirements.txt"),
    )


class NumpyBreaksMxnetImport(Rule):
    code = "MXL506"
    name = "numpy-breaks-mxnet-import"
    message = (
        "`{text}` admits numpy 1.24+, where `import mxnet` fails (`np.bool` was "
        "removed): add `numpy<1.24`"
    )
    kind = "requirements"
    what = (
        """
        Checks for `numpy` required without an upper bound below 1.24 (unpinned,
        `numpy>=1.20`, `numpy==1.26.4`) in a dependency set that installs MXNet 1.6 or later
        1.x (`mx.np` exists from 1.6 on).
    """
        + _NOT_FLAKE8
    )
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
        Example(
            "mxnet-cu112==1.9.1 \\\n    --hash=sha256:00\nnumpy\n",
            line=3,
            filename="requirements.txt",
        ),
        Example(
            "name: env\ndependencies:\n  - python=3.9\n  - numpy>=1.21\n  - pip:\n"
            "    - mxnet==1.9.1\n",
            line=4,
            filename="environment.yml",
        ),
        Example(
            '[tool.poetry.dependencies]\nmxnet = "1.9.1"\nnumpy = "^1.21"\n',
            line=3,
            filename="pyproject.toml",
        ),
        Example(
            "REQUIRED = ['mxnet==1.8.0', 'numpy']\n"
            "from setuptools import setup\nsetup(install_requires=REQUIRED)\n",
            line=1,
            filename="setup.py",
        ),
    )
    valid = (
        Valid("mxnet==1.9.1\nnumpy<1.24\n", filename="requirements.txt"),
        Valid(
            "mxnet==1.9.1\nnumpy\n-c constraints.txt\n",
            filename="requirements.txt",
            project=(("constraints.txt", "numpy==1.23.5\n"),),
        ),
        Valid("mxnet==1.5.1\nnumpy\n", filename="requirements.txt"),
        Valid("torch==2.1\nnumpy>=1.24\n", filename="requirements.txt"),
        Valid(
            "name: env\ndependencies:\n  - python=3.7\n  - numpy\n  - pip:\n    - mxnet==1.9.1\n",
            filename="environment.yml",
        ),
    )


VERSION_RULES: tuple[type[Rule], ...] = (
    UnpinnedMxnet,
    ConflictingMxnetVariants,
    CudaVariantMismatch,
    UnreleasedMxnetVersion,
    OnnxBreaksMxnetExport,
    NumpyBreaksMxnetImport,
)


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


class DependencyFilesChecker(TextChecker):
    """Reads every dependency file of the run together (Dockerfiles see their `-r` files)."""

    rules = VERSION_RULES
    name = "versions"

    @classmethod
    def matches(cls, filename: str) -> bool:
        return file_kind(filename) is not None

    def check_files(self, files: list[tuple[str, str]], settings: Settings) -> list[Finding]:
        from mxlint.rules._dependency_sets import check_files  # only runs that have such files

        return check_files(files, settings)
