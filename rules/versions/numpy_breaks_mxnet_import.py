"""MXL506 numpy-breaks-mxnet-import: checks for `numpy` required without an upper bound below 1.24
(unpinned, `numpy>=1.20`, `numpy==1.26.4`) in a dependency set that installs MXNet 1.6 or later
1.x (`mx.np` exists from 1.6 on).

Its findings are decided by the cap check it shares with the other release cap
(`check_cap` in `rules/versions/_releases.py`), per dependency set; its tests are the
examples below (run by `tests/test_rule_examples.py`), `tests/test_versions.py` and
`tests/snapshots/MXL506.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mxlint.rule import Example, Rule, Valid

if TYPE_CHECKING:
    pass
from mxlint.rules.versions._docs import _NOT_FLAKE8


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
