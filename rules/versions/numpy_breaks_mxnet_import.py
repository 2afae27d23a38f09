"""MXL506 numpy-breaks-mxnet-import: checks for `numpy` required without an upper bound below 1.24
(unpinned, `numpy>=1.20`, `numpy==1.26.4`), or not required at all, in a dependency set that
installs MXNet 1.6 or later 1.x (`mx.np` exists from 1.6 on).

An unbounded `numpy` is judged by the cap check it shares with the other release cap
(`check_cap` in `rules/versions/_releases.py`); a set without `numpy` by `check_undeclared`
below, once per dependency set with what the whole project declares (a `numpy<1.24` in any of
its dependency files is the author's cap). Its tests are the examples below (run by
`tests/test_rule_examples.py`), `tests/test_versions.py` and `tests/snapshots/MXL506.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mxlint.rule import Example, Rule, Valid
from mxlint.rules.versions._docs import _NOT_FLAKE8

if TYPE_CHECKING:
    from mxlint.requirements_parsing import Requirement
    from mxlint.rules.versions._releases import Hit


class NumpyBreaksMxnetImport(Rule):
    code = "MXL506"
    name = "numpy-breaks-mxnet-import"
    message = (
        "`{text}` admits numpy 1.24+, where `import mxnet` fails (`np.bool` was "
        "removed): add `numpy<1.24`"
    )
    #: The finding on the MXNet requirement of a set that does not require numpy.
    message_undeclared = (
        "`{text}` leaves numpy to MXNet's own `numpy<2.0.0,>1.16.0`, which installs numpy "
        "1.24+, where `import mxnet` fails (`np.bool` was removed): add `numpy<1.24`"
    )
    kind = "requirements"
    what = (
        """
        Checks for `numpy` required without an upper bound below 1.24 (unpinned,
        `numpy>=1.20`, `numpy==1.26.4`) in a dependency set that installs MXNet 1.6 or later
        1.x (`mx.np` exists from 1.6 on) — a pin, or a range that admits such a release
        (`mxnet>=1.6`, Poetry's `^1.8`). A set that does not require numpy at all is reported
        on its MXNet requirement, unless a `-c` constraint caps numpy or any dependency file of
        the project (the files checked, their `-r`/`-c` files, and the dependency files beside
        them) declares `numpy<1.24`, or it is a Dockerfile stage whose image may already hold
        numpy (only bare Python and distribution images are judged). Sets where numpy 1.24
        cannot install are not judged: a conda `python=3.7`, a package's `requires-python` /
        `python_requires` below 3.8, or a Poetry `python` range that admits 3.7 (Poetry locks
        what installs on every Python of the range).
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
    fix_safety = """
        This rule has no automatic fix. Where the cap belongs is the project's layout: the
        file reported, a base file it includes, a constraints file, or the package metadata;
        and a cap on an existing `numpy>=1.20` may also need its lower bound checked.
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
        Example("gluoncv==0.10.5\nmxnet-cu112==1.9.1\n", line=2, filename="requirements.txt"),
        Example(
            '[tool.poetry.dependencies]\npython = "^3.8"\nmxnet = "^1.8.0"\n',
            line=3,
            filename="pyproject.toml",
        ),
        Example(
            "FROM python:3.9-slim\nRUN pip install --no-cache-dir mxnet==1.9.1\n",
            line=2,
            filename="Dockerfile",
        ),
        Example(
            "mxnet>=1.6\n-c constraints.txt\n",
            line=1,
            filename="requirements/base.txt",
            project=(("requirements/constraints.txt", "numpy>=1.20\n"),),
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
        Valid(
            "mxnet==1.9.1\n",
            filename="requirements.txt",
            project=(("requirements-base.txt", "numpy<1.24\n"),),
        ),
        Valid("mxnet>=2.0.0b1\n", filename="requirements.txt"),
        Valid("mxnet==1.9.2\n", filename="requirements.txt"),
        Valid(
            "sphinx\nmxtheme\n",
            filename="requirements-docs.txt",
            project=(("requirements.txt", "mxnet==1.9.1\nnumpy<1.24\n"),),
        ),
        Valid(
            "FROM nvcr.io/nvidia/mxnet:23.04-py3\nRUN pip install mxnet==1.9.1\n",
            filename="Dockerfile",
        ),
        Valid(
            '[tool.poetry.dependencies]\npython = "^3.7"\nmxnet = "^1.8.0"\n',
            filename="pyproject.toml",
        ),
        Valid(
            "from setuptools import setup\n"
            "setup(name='x', install_requires=['mxnet'], python_requires='~=2.7')\n",
            filename="setup.py",
        ),
    )


def check_undeclared(mxnet: list[Requirement], numpy: list[Requirement]) -> list[Hit]:
    """A set that installs MXNet 1.x and leaves numpy to MXNet's metadata: reported on each
    MXNet requirement unless the set's `-c` constraints (`numpy`) cap it."""
    from mxlint.rules.versions._releases import (  # packaging: dependency files only
        NUMPY_BREAKS,
        admits_from,
        releases,
        spec_of,
    )

    spec = spec_of(numpy)
    if spec is None or not admits_from(spec, NUMPY_BREAKS, releases().numpy):
        return []
    message = NumpyBreaksMxnetImport.message_undeclared
    return [(r, NumpyBreaksMxnetImport, message.format(text=r.text)) for r in mxnet]
