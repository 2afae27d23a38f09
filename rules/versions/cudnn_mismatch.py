"""MXL510 cudnn-mismatch: checks for an `mxnet-cuXXX` build installed into a Docker stage whose
NVIDIA CUDA image has another cuDNN major version than the build was linked against, or no cuDNN
at all (`nvidia/cuda:10.2-cudnn7-runtime-ubuntu18.04` for `mxnet-cu102==1.9.1`, built with
cuDNN 8).

The function after the class decides and words its findings for one dependency set
(`rules/versions/_dependency_sets.py` runs it); its tests are the examples below (run by
`tests/test_versions.py`), `tests/test_versions.py` and `tests/snapshots/MXL510.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mxlint.rule import Example, Rule, Runtime, Valid
from mxlint.rules.versions._docs import _NOT_FLAKE8

if TYPE_CHECKING:
    from mxlint.requirements_parsing import Requirement
    from mxlint.rules.versions._releases import DepSet, Hit


class CudnnMismatch(Rule):
    code = "MXL510"
    name = "cudnn-mismatch"
    message = (
        "`{text}` installs {release}, linked against cuDNN {wanted} (`libcudnn.so.{wanted}`), "
        "but `{image}` (line {from_line}) {has}: `import mxnet` fails; use `{suggest}`"
    )
    kind = "requirements"
    runtime = Runtime(
        "static",
        reason="it describes a Docker image, whose missing libraries show when the image runs on a "
        "GPU host; --verify runs Python entry scripts, not images",
    )
    what = (
        """
        Checks for an `mxnet-cuXXX` build installed into a Docker stage whose NVIDIA CUDA image
        (`nvidia/cuda:<version>-cudnnN-<flavor>-<os>`) has another cuDNN major version than the
        build was linked against, or has no cuDNN (a `runtime` or `devel` tag without
        `cudnnN`), when the stage does not install cuDNN itself. The build is the release pip
        picks for the requirement (the newest it admits): `mxnet-cu102` 1.7 and 1.8 were built
        with cuDNN 7, 1.9 with cuDNN 8; every CUDA 11 build with cuDNN 8. A CUDA version that
        does not match the build is MXL503's, a `base` image MXL509's.
    """
        + _NOT_FLAKE8
    )
    why = """
        `libmxnet.so` is linked against one cuDNN major (`libcudnn.so.8`); the dynamic loader
        does not take `libcudnn.so.7` for it, so `import mxnet` fails with `OSError:
        libcudnn.so.8: cannot open shared object file` — only when the image runs. Which
        cuDNN each build uses comes from MXNet's build script at each release
        (`tools/setup_gpu_build_tools.sh`), and MXNet's own 1.9 release images use the matching
        `cudnn8-runtime` tags (`cd/utils/mxnet_base_image.sh`).
    """
    example = """
        # Dockerfile
        FROM nvidia/cuda:10.2-cudnn7-runtime-ubuntu18.04
        RUN pip3 install mxnet-cu102==1.9.1 "numpy<1.24"
    """
    use_instead = """
        # Dockerfile
        FROM nvidia/cuda:10.2-cudnn8-runtime-ubuntu18.04
        RUN pip3 install mxnet-cu102==1.9.1 "numpy<1.24"
    """
    invalid = (
        Example(
            "FROM nvidia/cuda:10.2-cudnn7-runtime-ubuntu18.04\n"
            'RUN pip3 install mxnet-cu102==1.9.1 "numpy<1.24"\n',
            line=2,
            filename="Dockerfile",
        ),
        Example(
            "FROM nvidia/cuda:11.2.2-runtime-ubuntu20.04\n"
            'RUN pip3 install mxnet-cu112==1.9.1 "numpy<1.24"\n',
            line=2,
            filename="Dockerfile",
        ),
    )
    valid = (
        Valid(
            "FROM nvidia/cuda:10.2-cudnn7-devel-ubuntu18.04\nRUN pip3 install mxnet-cu102==1.7.0\n",
            filename="Dockerfile",
        ),
        Valid(
            "FROM nvidia/cuda:11.2.2-runtime-ubuntu20.04\n"
            "RUN apt-get update && apt-get install -y libcudnn8=8.1.1.33-1+cuda11.2\n"
            'RUN pip3 install mxnet-cu112==1.9.1 "numpy<1.24"\n',
            filename="Dockerfile",
        ),
        Valid(
            "FROM nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04\n"
            'RUN pip3 install "mxnet-cu112>=1.8" "numpy<1.24"\n',
            filename="Dockerfile",
        ),
    )


def check(name: str, records: list[Requirement], dep: DepSet) -> list[Hit]:
    from mxlint.rules.versions._releases import cuda_of_variant, cudnn_of_build, installed_release

    wanted_cuda = cuda_of_variant(name)
    if (
        wanted_cuda is None
        or wanted_cuda != dep.cuda
        or dep.cuda_kind is None
        or dep.cuda_kind[0] == "base"
        or dep.installs_cuda_libraries
    ):
        return []
    version = installed_release(name, records)
    wanted = cudnn_of_build(name, version) if version is not None else None
    have = dep.cuda_kind[1]
    if wanted is None or have == str(wanted):
        return []
    image = dep.image or ""
    repo, _, tag = image.rpartition(":")
    flavor = dep.cuda_kind[0]
    if have is None:
        fixed = tag.replace(f"-{flavor}", f"-cudnn{wanted}-{flavor}", 1)
        has = "has no cuDNN"
    else:
        fixed = tag.replace(f"-cudnn{have}-", f"-cudnn{wanted}-", 1)
        has = f"has cuDNN {have}"
    return [
        (
            r,
            CudnnMismatch,
            CudnnMismatch.format(
                text=r.text,
                release=f"{name} {version}",
                wanted=wanted,
                image=image,
                from_line=dep.from_line,
                has=has,
                suggest=f"{repo}:{fixed}",
            ),
        )
        for r in records
        if not r.constraint
    ]
