"""MXL508 undeclared-mxnet: checks for a package whose `import` runs `import mxnet` while its
metadata (setup.py `install_requires`, setup.cfg, pyproject `dependencies` or Poetry) requires no
MXNet build, in its base dependencies or in any extra.

Which packages a metadata file installs and whether importing them imports mxnet is read by
`rules/versions/_packages.py`; the function after the class words the finding, reported where
the requirement goes. Its tests are the examples below (run by `tests/test_rule_examples.py`),
`tests/test_versions.py` and `tests/snapshots/MXL508.txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mxlint.rule import Example, Rule, Valid
from mxlint.rules.versions._docs import _NOT_FLAKE8

if TYPE_CHECKING:
    from mxlint.requirements_parsing import Metadata, Requirement
    from mxlint.rules.versions._packages import MxnetImport

_SETUP = "from setuptools import setup\n"
_INIT = "mxproj/__init__.py"


class UndeclaredMxnet(Rule):
    code = "MXL508"
    name = "undeclared-mxnet"
    message = (
        "`import {package}` imports mxnet ({where}), but the metadata requires no MXNet build: "
        "add one to `{field}` (a range of `mxnet` releases, or an extra per build){numpy}"
    )
    kind = "requirements"
    what = (
        """
        Checks for a package whose `import` runs `import mxnet` — in its `__init__.py` or a
        module that imports at module level — while its metadata requires no MXNet build
        (`mxnet`, `mxnet-cuXXX`, ...) in its base dependencies or in any extra. The finding is
        on the dependency list (`install_requires=`, `dependencies = [`) or, if there is none,
        on the metadata block (`setup(`, `[project]`, `[options]`, `[tool.poetry]`). Packages
        are the directories with an `__init__.py` beside the metadata file or under its
        `src/`. An `import mxnet` inside `try:`, a function or a module the package does not
        import itself makes MXNet optional, and is not judged; nor is metadata whose
        dependencies the reader cannot see (a function's result, `file:`, `dynamic`).
    """
        + _NOT_FLAKE8
    )
    why = """
        `pip install` of the package then succeeds and `import` fails with
        `ModuleNotFoundError: No module named 'mxnet'`; and when MXNet is installed by hand,
        nothing holds numpy below 1.24 for it, so `import mxnet` 1.x fails with
        `AttributeError: module 'numpy' has no attribute 'bool'` (MXNet 1.9.1's own metadata
        admits numpy up to 2.0). A package that leaves the choice of build (CPU, CUDA) to its
        user can still say so: one extra per build (`pip install mxproj[cu112]`) declares
        each.
    """
    example = """
        # setup.py (mxproj/__init__.py runs `import mxnet as mx`)
        setup(name="mxproj", install_requires=["numpy"])
    """
    use_instead = """
        # setup.py
        setup(
            name="mxproj",
            install_requires=["mxnet>=1.6,<2", "numpy<1.24"],
            extras_require={"cu112": ["mxnet-cu112>=1.6,<2"]},
        )
    """
    fix_safety = """
        This rule has no automatic fix: which build (CPU or a CUDA variant), which range of
        releases and whether to use extras are the package's choices.
    """
    invalid = (
        Example(
            _SETUP + "setup(name='mxproj', install_requires=['numpy<1.24'])\n",
            line=2,
            filename="setup.py",
            project=((_INIT, "import mxnet as mx\n"),),
        ),
        Example(
            '[project]\nname = "mxproj"\nversion = "1.0"\n',
            line=1,
            filename="pyproject.toml",
            project=(
                (_INIT, "from . import model\n"),
                ("mxproj/model.py", "from mxnet import gluon\n"),
            ),
        ),
        Example(
            "[metadata]\nname = mxproj\n[options]\npackages = find:\ninstall_requires =\n"
            "    numpy<1.24\n",
            line=5,
            filename="setup.cfg",
            project=(
                (_INIT, "from mxproj.nets import resnet\n"),
                ("mxproj/nets/__init__.py", "import mxnet.gluon.nn as nn\n"),
            ),
        ),
    )
    valid = (
        Valid(
            _SETUP + "setup(name='mxproj', install_requires=['numpy<1.24'])\n",
            filename="setup.py",
            project=((_INIT, "try:\n    import mxnet\nexcept ImportError:\n    mxnet = None\n"),),
        ),
        Valid(
            _SETUP + "setup(name='mxproj', extras_require={'cu112': ['mxnet-cu112==1.9.1']})\n",
            filename="setup.py",
            project=((_INIT, "import mxnet\n"),),
        ),
        Valid(
            _SETUP
            + "setup(name='mxproj', install_requires=open('requirements.txt').read().split())\n",
            filename="setup.py",
            project=((_INIT, "import mxnet\n"),),
        ),
        Valid(
            _SETUP + "setup(name='mxproj', install_requires=['numpy'])\n",
            filename="setup.py",
            project=(
                (_INIT, "from . import torch_backend\n"),
                ("mxproj/mxnet_backend.py", "import mxnet\n"),
            ),
        ),
        Valid(
            _SETUP + "setup(name='mxproj', install_requires=['numpy<1.24'])\n",
            filename="setup.py",
            project=(("examples/train.py", "import mxnet\n"), ("mxproj/__init__.py", "")),
        ),
    )


def message(
    found: MxnetImport, where: str, anchor: Metadata, numpy: Requirement | None, capped: bool
) -> str:
    """`numpy`: the metadata's own numpy requirement, if it admits the releases that break
    MXNet 1.x; `capped`: whether the project caps numpy anywhere (or uses MXNet 2)."""
    if numpy is not None:
        tail = f", and cap `{numpy.text}` (line {numpy.line}) with `<1.24`"
    else:
        tail = "" if capped else ", with `numpy<1.24`"
    return UndeclaredMxnet.format(
        package=found.package, where=where, field=anchor.target, numpy=tail
    )
