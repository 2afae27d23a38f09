"""Lint never executes or imports the code it reads.

The project below writes a marker file if any of its files is imported or run: at module level,
in a package's `__init__.py`, in `setup.py` and `conftest.py`, in a `hybrid_forward`, under
`if __name__ == "__main__"` and in a notebook cell. `mxlint check` (also with fixes) and
flake8 with the mxlint plugin read all of it, report findings on it, and no marker appears.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

#: What each file holds; `{marker}` is the file it writes if it ever runs.
FILES = {
    "setup.py": """\
        open({marker!r}, "w").write("setup.py ran")
        from setuptools import setup
        setup(name="victim", install_requires=["mxnet"])
        """,
    "conftest.py": """\
        open({marker!r}, "w").write("conftest.py ran")
        import mxnet as mx
        """,
    "victim/__init__.py": """\
        open({marker!r}, "w").write("package imported")
        import mxnet as mx
        """,
    "victim/model.py": """\
        import mxnet as mx
        from mxnet.gluon import nn

        open({marker!r}, "w").write("module imported")


        class Net(nn.HybridBlock):
            def hybrid_forward(self, F, x):
                open({marker!r} + ".forward", "w").write("hybrid_forward ran")
                if x.sum() > 0:
                    return x
                return x * 2
        """,
    "train.py": """\
        import mxnet as mx
        from mxnet import gluon

        if __name__ == "__main__":
            open({marker!r}, "w").write("script ran")
            loader = gluon.data.DataLoader(dataset, batch_size=8, shuffle=True)
            for data, label in loader:
                pass
        """,
    "requirements.txt": "mxnet\n",
}
#: What must be reported, so that a run that reads nothing cannot pass.
EXPECTED = {
    ("victim/model.py", "MXL101"),
    ("train.py", "MXL301"),
    ("requirements.txt", "MXL501"),
    ("setup.py", "MXL501"),
    ("notebook.ipynb", "MXL101"),
}


@pytest.fixture
def victim(tmp_path: Path) -> tuple[Path, Path]:
    root, markers = tmp_path / "project", tmp_path / "markers"
    markers.mkdir()
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).format(marker=str(markers / name.replace("/", "_"))))
    cell = [
        "import mxnet as mx\n",
        "from mxnet.gluon import nn\n",
        f"open({str(markers / 'notebook')!r}, 'w')\n",
        "\n",
        "class Net(nn.HybridBlock):\n",
        "    def hybrid_forward(self, F, x):\n",
        "        if x.sum() > 0:\n",
        "            return x\n",
        "        return x * 2\n",
    ]
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": cell,
            }
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (root / "notebook.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    return root, markers


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MXLINT_OUTPUT_FORMAT"}
    # Nothing from the project may become importable by accident.
    env.pop("PYTHONPATH", None)
    return env


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600, env=_env())


def test_mxlint_check_reads_but_never_runs(victim):
    root, markers = victim
    proc = _run(
        [
            sys.executable,
            "-m",
            "mxlint",
            "check",
            "--isolated",
            "--no-cache",
            "--output-format",
            "json",
            ".",
        ],
        root,
    )
    assert proc.returncode == 1, proc.stderr
    found = {(Path(f["filename"]).as_posix(), f["code"]) for f in json.loads(proc.stdout)}
    assert found >= EXPECTED
    assert list(markers.iterdir()) == []


def test_fixes_never_run_the_code(victim):
    root, markers = victim
    for flags in (["--diff"], ["--fix", "--unsafe-fixes"], ["--add-noqa"]):
        proc = _run(
            [sys.executable, "-m", "mxlint", "check", "--isolated", "--no-cache", *flags, "."], root
        )
        assert proc.returncode in (0, 1), proc.stderr
        assert list(markers.iterdir()) == []
    assert "np.random.seed(0)" in (root / "train.py").read_text()  # --fix did run


def test_flake8_plugin_reads_but_never_runs(victim):
    root, markers = victim
    proc = _run(
        [
            sys.executable,
            "-m",
            "flake8",
            "--isolated",
            "--select",
            "MXL",
            "--format",
            "%(path)s:%(row)d:%(col)d:%(code)s",
            ".",
        ],
        root,
    )
    assert proc.returncode == 1, proc.stderr
    found = {
        (Path(line.split(":")[0]).as_posix().removeprefix("./"), line.rsplit(":", 1)[1])
        for line in proc.stdout.splitlines()
    }
    assert ("victim/model.py", "MXL101") in found
    assert ("train.py", "MXL301") in found
    assert list(markers.iterdir()) == []


def test_checking_does_not_import_mxnet_or_numpy(victim):
    root, _ = victim
    code = textwrap.dedent("""\
        import sys
        from mxlint.cli import main
        code = main(["check", "--isolated", "--no-cache", "-j", "1", "."])
        heavy = sorted(m for m in ("mxnet", "numpy", "victim", "conftest", "setup", "train")
                       if m in sys.modules)
        assert code == 1, code
        assert heavy == [], heavy
        """)
    proc = _run([sys.executable, "-c", code], root)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_project_is_armed(victim, tmp_path):
    """Run for real, the same files do write their markers: the tests above prove something.
    (A stand-in `mxnet` and no site-packages keep this fast; each run fails after its write.)"""
    root, markers = victim
    fake = tmp_path / "fake"
    (fake / "mxnet" / "gluon").mkdir(parents=True)
    (fake / "mxnet" / "__init__.py").write_text("")
    (fake / "mxnet" / "gluon" / "__init__.py").write_text("class nn:\n    HybridBlock = object\n")
    env = {**_env(), "PYTHONPATH": str(fake)}
    for args in (["-c", "import victim.model"], ["train.py"], ["setup.py", "--name"]):
        subprocess.run(
            [sys.executable, "-S", *args], cwd=root, capture_output=True, env=env, timeout=60
        )
    assert {p.name for p in markers.iterdir()} == {
        "victim___init__.py",
        "victim_model.py",
        "train.py",
        "setup.py",
    }


def test_a_python_file_alone_loads_neither_packaging_nor_workers(tmp_path):
    """Start-up is most of a one-file run (pre-commit, editors): the dependency-file readers
    (`packaging`) load only when the run has a dependency file, the worker pool only when
    there are enough files to share out, the notebook reader only for a notebook, verify's
    model and sandboxes only for `--verify`, the fix machinery only for `--fix`/`--diff`, the
    TOML reader only for a configuration file, package data never through
    `importlib.resources`, and shutil (argparse's width) never."""
    (tmp_path / "train.py").write_text(
        "from mxnet.gluon import nn\n\n\nclass Net(nn.HybridBlock):\n"
        "    def hybrid_forward(self, F, x):\n        return x * x.asscalar()\n"
    )
    (tmp_path / "requirements.txt").write_text("mxnet\n")
    code = textwrap.dedent("""\
        import sys
        present = set(sys.modules)  # what the interpreter's start-up loaded (site, .pth files)
        from mxlint.cli import main
        code = main(["check", "--isolated", "--no-cache", "--select", "ALL", *sys.argv[1:]])
        lazy = ("packaging", "concurrent.futures", "multiprocessing", "mxlint.notebooks",
                "mxlint.verify.model", "mxlint.verify.isolation", "mxlint.fix_run",
                "mxlint.fixes", "tomllib", "tomli", "importlib.resources", "tempfile",
                "shutil")
        print(code, *sorted(m for m in lazy if m in sys.modules and m not in present))
        """)
    alone = _run([sys.executable, "-c", code, "train.py"], tmp_path)
    assert alone.stdout.splitlines()[-1] == "1", alone.stdout + alone.stderr
    both = _run([sys.executable, "-c", code, "train.py", "requirements.txt"], tmp_path)
    toml = "tomllib" if sys.version_info >= (3, 11) else "tomli"  # pyproject's reader
    assert both.stdout.splitlines()[-1] == f"1 packaging {toml}", both.stdout + both.stderr
    assert "requirements.txt:1:1: MXL501" in both.stdout


@pytest.mark.parametrize(
    ("source", "parsed"),
    [
        ('"""The gradient :math:`F` of the loss."""\nx = (\n', False),
        ('DESCRIPTOR = b"\\x12\\t\\"F\\n\\x0ePowerParameter"\nx = (\n', False),
        ("def act(F, x):\n    return F.relu(x)\nx = (\n", True),
        ("def act(F):\n    pass\nx = (\n", True),
        ("import numpy as np\nx = (\n", True),
    ],
)
def test_files_with_no_sign_of_mxnet_are_not_parsed(source, parsed):
    """The text screen before parsing: a capital F counts only where code uses it (helpers
    that take `F` are read for cross-file analysis); in prose or generated byte strings it
    does not make a file MXNet code. The unclosed bracket shows whether the file was parsed."""
    from mxlint.config import Settings
    from mxlint.engine import lint_source

    result = lint_source("helpers.py", source, Settings())
    assert [f.code for f in result.findings] == (["MXL001"] if parsed else [])


@pytest.mark.parametrize(
    ("source", "parsed"),
    [
        # Another framework's program: numpy and random in a PyTorch or TensorFlow file.
        ("import numpy as np\nimport torch\nx = (\n", False),
        ("import random\nfrom torch import nn\nx = (\n", False),
        ("import numpy as np\nimport tensorflow as tf\nx = (\n", False),
        ("import numpy as np\ndef main():\n    import jax.numpy as jnp\nx = (\n", False),
        # ... unless it imports MXNet too (a conversion script, a comparison).
        ("import torch\nimport mxnet as mx\nx = (\n", True),
        ("import torch\nfrom mxnet import nd\nx = (\n", True),
        (
            "import torch\ntry:\n    from mxnet.gluon import nn\nexcept ImportError:\n    nn = None\nx = (\n",
            True,
        ),
        # gluon-cv's PyTorch half.
        ("import torch\nfrom gluoncv.torch.model_zoo import get_model\nx = (\n", False),
        # A package named like a framework's prefix is not that framework.
        ("import numpy as np\nimport torchvision\nx = (\n", True),
        # A framework named in prose only.
        ('"""Ported from torch."""\nimport numpy as np\nx = (\n', True),
    ],
)
def test_other_frameworks_programs_are_not_parsed(source, parsed):
    """A file that imports PyTorch, TensorFlow or JAX and nothing of MXNet is read for its
    imports only, as a file with no sign of MXNet is (`engine.needs_parse`)."""
    from mxlint.config import Settings
    from mxlint.engine import lint_source, needs_parse

    assert needs_parse(source) is parsed
    result = lint_source("helpers.py", source, Settings())
    assert [f.code for f in result.findings] == (["MXL001"] if parsed else [])
    if not parsed:
        assert result.facts is not None and result.facts.skimmed
        assert any(
            name.split(".")[0] in ("torch", "tensorflow", "jax") for name in result.facts.imports
        )


@pytest.mark.parametrize(
    ("module", "parsed"),
    [
        ("mxnet", False),
        ("mxnet.gluon.nn.conv_layers", False),
        ("mxnet_utils", True),  # a module of the project named like MXNet is the project's
        ("mymodels.mxnet", True),
        ("train", True),
    ],
)
def test_mxnets_own_source_is_read_for_its_imports_only(module: str, parsed: bool):
    """A module of the `mxnet` package itself (MXNet's source tree, its master branch being
    MXNet 2) is not a program that uses a release of MXNet: its `F.npx.cond` is its own
    operator, its `x.shape` in a deferred-compute `forward` is fine. It is read as another
    framework's program is (`engine.is_mxnet_itself`)."""
    from mxlint.config import Settings
    from mxlint.engine import lint_source

    source = (
        "from mxnet.gluon import HybridBlock\n\n\nclass Op(HybridBlock):\n"
        "    def hybrid_forward(self, F, x):\n        return F.npx.cond(x.shape[0], x, x)\n\n\n"
        "net = Op()\nnet.hybridize()\n"
    )
    result = lint_source("op.py", source, Settings(), module_name=module)
    codes = sorted(f.code for f in [*result.findings, *(f for f, _ in result.conditional)])
    assert codes == (["MXL103", "MXL110"] if parsed else [])
    assert result.parsed is parsed
    assert result.facts is not None and result.facts.skimmed is not parsed
