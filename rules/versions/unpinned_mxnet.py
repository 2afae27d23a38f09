"""MXL501 unpinned-mxnet: checks for an `mxnet` distribution (`mxnet`, `mxnet-cuXXX`, `mxnet-mkl`,
`mxnet-cuXXXmkl`, `mxnet-native`) required without a version or with a lower bound only
(`mxnet-cu112>=1.8`), in requirements/constraints files, pyproject.toml (PEP 621 and Poetry),
setup.py/setup.cfg, conda environment.yml and Dockerfile `pip install` lines.

The function after the class decides and words its findings for one dependency set
(`rules/versions/_dependency_sets.py` runs it); its tests are the
examples below (run by `tests/test_rule_examples.py`), `tests/test_versions.py` and
`tests/snapshots/MXL501.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mxlint.rule import Example, Rule, Valid

if TYPE_CHECKING:
    pass
from mxlint.rules.versions._docs import _NOT_FLAKE8

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    from mxlint.requirements_parsing import Requirement
    from mxlint.rules.versions._releases import Hit


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
        the numpy front end), and an open range lets a rebuild pick up another release: with
        `--pre` (or a tool that allows pre-releases), the 2.0 betas of `mxnet` and of the CUDA
        10.1–11.2 builds, which replace `hybrid_forward` with `forward`. A model that trained
        yesterday then fails to rebuild or to load. An upper bound (`<1.10`, `~=1.9.0`) or an
        exact pin keeps the environment reproducible. A constraint in a `-c` file that pins the
        version counts. MXNet is retired and its release tables are final: a distribution with
        no release past its last one (`mxnet-mkl`, whose last is 1.6.0; the CUDA 9 builds)
        resolves to that release on every rebuild, and is not reported.
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
        # The last releases are 1.6.0 and 1.0.0, and nothing was published past them: no
        # rebuild drifts.
        Valid("mxnet-mkl\n", filename="requirements.txt"),
        Valid("mxnet-cu90mkl>=0.12\n", filename="requirements.txt"),
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


def check(name: str, records: list[Requirement]) -> list[Hit]:
    from mxlint.rules.versions._releases import FUTURE, spec_of  # packaging: dependency files only

    if any(r.direct for r in records):
        return []
    spec = spec_of(records)
    if spec is None or not spec.contains(FUTURE, prereleases=True) or _settled(name, spec):
        return []
    return [
        (
            r,
            UnpinnedMxnet,
            UnpinnedMxnet.format(text=r.text, name=name, version=pin_for(name, spec)),
        )
        for r in records
        if not r.constraint
    ]


def _settled(name: str, spec: SpecifierSet) -> bool:
    """The spec admits the distribution's last release and nothing was published past it
    (MXNet's release tables are final): every rebuild resolves to that one release."""
    from mxlint.rules.versions._releases import final_releases, releases

    known = releases().variants.get(name)
    finals = final_releases(known) if known else []
    if not finals:
        return False
    last = finals[0]
    later = [v for v in known or () if _newer(v, last)]
    return not later and spec.contains(last)


def _newer(version: str, than: Version) -> bool:
    from packaging.version import InvalidVersion, Version  # noqa: F811 (dependency files only)

    try:
        return Version(version) > than
    except InvalidVersion:
        return False


def pin_for(name: str, spec: SpecifierSet) -> str:
    """The release to pin: the newest final one the spec admits, else the newest pre-release
    it admits (`mxnet>=2.0.0a` -> a 2.0 beta, never 1.9.1), else the newest final one."""
    from mxlint.rules.versions._releases import (  # packaging: dependency files only
        final_releases,
        latest_release,
        releases,
    )

    known = releases().variants.get(name) or releases().variants["mxnet"]
    finals = [v for v in final_releases(known) if spec.contains(v)]
    if finals:
        return str(max(finals))
    pre = [v for v in known if spec.contains(v, prereleases=True)]
    return str(max(pre)) if pre else latest_release(name)
