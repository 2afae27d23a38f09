"""MXL507 invalid-requirement: checks for a dependency entry that pip or the build backend cannot
read (`mxnet=1.9.1`, two requirements run together as `mxnet==1.9.1numpy<1.24`, `numpy>=1.20<1.24`)
in requirements/constraints files, pyproject.toml (PEP 621 strings and Poetry constraints),
setup.cfg, setup.py string literals and the `pip:` list of a conda environment.yml.

The readers (`mxlint/requirements_parsing.py`) find the entries and say where reading stops and
what was probably meant; the function after the class words the finding. Its tests are the
examples below (run by `tests/test_rule_examples.py`), `tests/test_versions.py` and
`tests/snapshots/MXL507.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mxlint.rule import Example, Rule, Valid
from mxlint.rules.versions._docs import _NOT_FLAKE8

if TYPE_CHECKING:
    from mxlint.requirements_parsing import Malformed


class InvalidRequirement(Rule):
    code = "MXL507"
    name = "invalid-requirement"
    message = "`{text}` is not a requirement pip can read: {hint}"
    kind = "requirements"
    what = (
        """
        Checks for a dependency entry that pip or the build backend cannot read: `mxnet=1.9.1`
        (`=` is conda's operator, not pip's), two requirements run together by a missing line
        break or comma (`mxnet==1.9.1numpy<1.24`, `"mxnet==1.9.1" "numpy<1.24"` in a list),
        `numpy>=1.20<1.24` (clauses without a comma), `mxnet 1.9.1` (no operator), or a Poetry
        constraint Poetry does not read; and a pyproject.toml that is not TOML at all (a
        missing comma between two strings of a list). It reads requirements and constraints files (also
        those only reached through `-r`/`-c`), PEP 621 and Poetry tables in pyproject.toml,
        setup.cfg `install_requires`, string literals in setup.py's `install_requires` and
        `extras_require`, and the `pip:` list of a conda environment file. Lines pip takes for
        something other than a requirement (options, URLs, local paths and archives,
        `${VARIABLES}`) are not judged, nor are Dockerfile `pip install` arguments (shell
        words). The finding points where reading stops.
    """
        + _NOT_FLAKE8
    )
    why = """
        pip refuses the whole file on one unreadable line (`Invalid requirement:
        'mxnet==1.9.1numpy<1.24'`), and a build backend refuses the whole package, so nothing
        is installed — or, with older pip, the glued text is read as one odd version and no
        release matches. The other versions rules cannot judge what they cannot read: a
        dropped `numpy<1.24` cap is as silent as a dropped `mxnet` pin, until the install or
        the image build fails.
    """
    example = """
        # requirements.txt
        mxnet==1.9.1numpy<1.24
        onnx=1.14.1
    """
    use_instead = """
        # requirements.txt
        mxnet==1.9.1
        numpy<1.24
        onnx==1.14.1
    """
    fix_safety = """
        This rule has no automatic fix. What was meant is a guess: `mxnet=1.9.1` may mean
        `==1.9.1` or conda's `1.9.1.*`, and where a missing line break or comma goes, or
        whether the text after it was meant at all, is the author's to say. The message
        shows the likely reading.
    """
    invalid = (
        Example("mxnet==1.9.1numpy<1.24\n", line=1, filename="requirements.txt"),
        Example("gluoncv==0.10.5\nmxnet=1.9.1\n", line=2, filename="constraints.txt"),
        Example(
            '[project]\nname = "x"\ndependencies = [\n  "mxnet==1.9.1 numpy<1.24",\n]\n',
            line=4,
            filename="pyproject.toml",
        ),
        Example(
            '[project]\nname = "x"\ndependencies = [\n  "mxnet==1.9.1" "numpy<1.24",\n]\n',
            line=4,
            filename="pyproject.toml",
        ),
        Example(
            "from setuptools import setup\n"
            "setup(name='x', install_requires=['mxnet==1.9.1' 'numpy<1.24'])\n",
            line=2,
            filename="setup.py",
        ),
        Example(
            '[tool.poetry.dependencies]\npython = "^3.8"\nmxnet = "1.9.1,numpy"\n',
            line=3,
            filename="pyproject.toml",
        ),
        Example(
            "from setuptools import setup\nsetup(name='x', install_requires=['numpy>=1.20<1.24'])\n",
            line=2,
            filename="setup.py",
        ),
        Example("[options]\ninstall_requires =\n    mxnet 1.9.1\n", line=3, filename="setup.cfg"),
        Example(
            "name: env\ndependencies:\n- python=3.8\n- pip:\n  - mxnet=1.9.1\n",
            line=5,
            filename="environment.yml",
        ),
    )
    valid = (
        Valid(
            "mxnet==1.9.1\nnumpy>=1.20,<1.24 ; python_version >= '3.8'\n",
            filename="requirements.txt",
        ),
        Valid(
            "-e .\n./vendor/gluoncv\nwheels/mxnet-1.9.1-py3-none-any.whl\n"
            "git+https://github.com/dmlc/gluon-nlp.git#egg=gluonnlp\nmxnet==${MXNET_VERSION}\n",
            filename="requirements.txt",
        ),
        Valid(
            '[tool.poetry.dependencies]\nmxnet = "=1.9.1"\nnumpy = ">=1.20 <1.24"\n'
            'onnx = "^1.10 || ~1.9"\n',
            filename="pyproject.toml",
        ),
        Valid(
            "name: env\ndependencies:\n  - mxnet=1.9.1\n  - numpy 1.23.*\n",
            filename="environment.yml",
        ),
    )


def message(bad: Malformed) -> str:
    return InvalidRequirement.format(text=bad.text, hint=bad.hint)
