"""MXL502 conflicting-mxnet-variants: checks for two different MXNet distributions in one
dependency set: the CPU `mxnet` and a GPU `mxnet-cu112`, two CUDA variants, or `mxnet` and
`mxnet-mkl`.

The function after the class decides and words its findings for one dependency set
(`rules/versions/_dependency_sets.py` runs it); its tests are the
examples below (run by `tests/test_rule_examples.py`), `tests/test_versions.py` and
`tests/snapshots/MXL502.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mxlint.rule import Example, Rule, Valid

if TYPE_CHECKING:
    pass
from mxlint.rules.versions._docs import _NOT_FLAKE8

if TYPE_CHECKING:
    from mxlint.requirements_parsing import Requirement
    from mxlint.rules.versions._releases import Hit


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


def check(mx_names: list[str], by_name: dict[str, list[Requirement]]) -> list[Hit]:
    from mxlint.rules.versions._releases import overlap  # packaging: dependency files only

    hits: list[Hit] = []
    firsts = [next(r for r in by_name[n] if not r.constraint) for n in mx_names]
    for i, later in enumerate(firsts):
        for earlier in firsts[:i]:
            if overlap(earlier, later):
                hits.append(
                    (
                        later,
                        ConflictingMxnetVariants,
                        ConflictingMxnetVariants.format(text=later.text, other=earlier.text),
                    )
                )
                break
    return hits
