"""MXL509 cuda-base-image: checks for an `mxnet-cuXXX` build installed into a Docker stage whose
image is an NVIDIA CUDA *base* image (`nvidia/cuda:11.2.2-base-ubuntu20.04`), which holds only the
CUDA runtime.

The function after the class decides and words its findings for one dependency set
(`rules/versions/_dependency_sets.py` runs it); its tests are the examples below (run by
`tests/test_versions.py`), `tests/test_versions.py` and `tests/snapshots/MXL509.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.versions._docs import _NOT_FLAKE8

if TYPE_CHECKING:
    from mxlint.requirements_parsing import Requirement
    from mxlint.rules.versions._releases import DepSet, Hit


class CudaBaseImage(Rule):
    code = "MXL509"
    name = "cuda-base-image"
    message = (
        "`{text}` loads cuBLAS, cuDNN and NVRTC, which `{image}` (line {from_line}), a CUDA "
        "base image, does not have: `import mxnet` fails; use `{suggest}`"
    )
    kind = "requirements"
    runtime = Runtime(
        "static",
        reason="it describes a Docker image, whose missing libraries show when the image runs on a "
        "GPU host; --verify runs Python entry scripts, not images",
    )
    what = (
        """
        Checks for an `mxnet-cuXXX` build installed into a Docker stage whose image is an NVIDIA
        CUDA *base* image (`nvidia/cuda:<version>-base-<os>`), when the stage does not install
        the CUDA libraries itself (`apt-get install cuda-libraries-11-2 libcudnn8`, the
        `nvidia-*-cu11` wheels, conda's `cudatoolkit`/`cudnn`). The requirement may be on the
        `RUN pip install` line or in a requirements file it installs. A CUDA version that does
        not match the build is MXL503's.
    """
        + _NOT_FLAKE8
    )
    why = """
        The `base` flavour of the CUDA images holds the CUDA runtime (`libcudart`) and nothing
        else; the `runtime` flavour adds cuBLAS, cuFFT, cuRAND, cuSOLVER, cuSPARSE and NVRTC,
        and the `cudnnN-runtime` flavour cuDNN. The `libmxnet.so` of `mxnet-cu112` is linked
        against all of them (`libcublas.so.11`, `libcudnn.so.8`, `libnvrtc.so.11.2`...), so in a
        base image `import mxnet` fails with `OSError: libcublas.so.11: cannot open shared
        object file` — only once the image runs. MXNet's own release images use the
        `cudnn8-runtime` flavour (`cd/utils/mxnet_base_image.sh`).
    """
    example = """
        # Dockerfile
        FROM nvidia/cuda:11.2.2-base-ubuntu20.04
        RUN pip3 install mxnet-cu112==1.9.1 "numpy<1.24"
    """
    use_instead = """
        # Dockerfile
        FROM nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04
        RUN pip3 install mxnet-cu112==1.9.1 "numpy<1.24"
    """
    invalid = (
        Example(
            "FROM nvidia/cuda:11.2.2-base-ubuntu20.04\n"
            "RUN apt-get update && apt-get install -y python3-pip\n"
            'RUN pip3 install mxnet-cu112==1.9.1 "numpy<1.24"\n',
            line=3,
            filename="Dockerfile",
        ),
    )
    valid = (
        Valid(
            "FROM nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04\n"
            'RUN pip3 install mxnet-cu112==1.9.1 "numpy<1.24"\n',
            filename="Dockerfile",
        ),
        Valid(
            "FROM nvidia/cuda:11.2.2-base-ubuntu20.04\n"
            "RUN apt-get update && apt-get install -y cuda-libraries-11-2 libcudnn8 python3-pip\n"
            'RUN pip3 install mxnet-cu112==1.9.1 "numpy<1.24"\n',
            filename="Dockerfile",
        ),
        Valid(
            "FROM nvidia/cuda:11.2.2-base-ubuntu20.04\n"
            'RUN pip3 install mxnet==1.9.1 "numpy<1.24"\n',
            filename="Dockerfile",
        ),
    )


def check(name: str, records: list[Requirement], dep: DepSet) -> list[Hit]:
    from mxlint.rules.versions._releases import cuda_of_variant, cudnn_of_build, installed_release

    wanted = cuda_of_variant(name)
    if (
        wanted is None
        or wanted != dep.cuda
        or dep.cuda_kind is None
        or dep.cuda_kind[0] != "base"
        or dep.installs_cuda_libraries
    ):
        return []
    image = dep.image or ""
    version = installed_release(name, records)
    cudnn = cudnn_of_build(name, version) if version is not None else None
    repo, _, tag = image.rpartition(":")
    suggest = (
        f"{repo}:{tag.replace('-base', f'-cudnn{cudnn}-runtime', 1)}"
        if cudnn is not None
        else "the `cudnnN-runtime` image of the cuDNN the build was linked against"
    )
    return [
        (
            r,
            CudaBaseImage,
            CudaBaseImage.format(
                text=r.text, image=image, from_line=dep.from_line, suggest=suggest
            ),
        )
        for r in records
        if not r.constraint
    ]
