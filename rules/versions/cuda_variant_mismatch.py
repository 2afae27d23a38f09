"""MXL503 cuda-variant-mismatch: checks for an `mxnet-cuXXX` variant installed into a Docker stage
whose base image has a different CUDA version (`FROM
nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04` needs `mxnet-cu112`).

The function after the class decides and words its findings for one dependency set
(`rules/versions/_dependency_sets.py` runs it); its tests are the
examples below (run by `tests/test_rule_examples.py`), `tests/test_versions.py` and
`tests/snapshots/MXL503.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mxlint.rule import Example, Rule, Valid

if TYPE_CHECKING:
    pass
from mxlint.rules.versions._docs import _NOT_FLAKE8

if TYPE_CHECKING:
    from mxlint.requirements_parsing import Requirement
    from mxlint.rules.versions._releases import DepSet, Hit


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


def check(name: str, records: list[Requirement], dep: DepSet) -> list[Hit]:
    from mxlint.rules.versions._releases import (  # packaging: dependency files only
        cuda_of_variant,
        releases,
    )

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
