"""Resolving names across the files of a run (`mxlint.names.ProjectNames`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from mxlint.cli import main
from mxlint.names import ProjectNames

NAMES = ProjectNames(
    ["pkg.models.Net", "pkg.layers.Block", "pkg.other.Block", "top", "pkg.x.y.Deep"]
)


def test_exact_names_resolve_to_themselves():
    assert NAMES.resolve("pkg.models.Net") == "pkg.models.Net"
    assert NAMES.resolve("top") == "top"


def test_a_reexport_resolves_to_the_one_name_under_its_package():
    assert NAMES.resolve("pkg.Net") == "pkg.models.Net"
    assert NAMES.resolve("pkg.Deep") == "pkg.x.y.Deep"
    assert NAMES.resolve("pkg.x.Deep") == "pkg.x.y.Deep"


def test_ambiguous_unknown_and_unqualified_names_do_not_resolve():
    assert NAMES.resolve("pkg.Block") is None  # two candidates
    assert NAMES.resolve("other.Net") is None  # not under that package
    assert NAMES.resolve("Net") is None
    assert NAMES.resolve("pkg.models.Missing") is None
    assert NAMES.resolve("pkg.modelsNet") is None


def test_a_base_class_reexported_by_its_package_is_found(tmp_path: Path, monkeypatch, capsys):
    """`from pkg import Base` where `pkg/__init__.py` re-exports `pkg.models.Base`, a plain
    Block: `Net` is then not hybridized, and its Python control flow is fine."""
    files = {
        "pkg/__init__.py": "from .models import Base\n",
        "pkg/models.py": "from mxnet.gluon import nn\n\n\nclass Base(nn.Block):\n    pass\n",
        "train.py": textwrap.dedent("""\
            from pkg import Base


            class Net(Base):
                def hybrid_forward(self, F, x):
                    if x.sum() > 0:
                        return x
                    return -x
            """),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--isolated", "--no-cache", "-j", "1", "."]) == 0
    (tmp_path / "pkg" / "models.py").write_text(
        files["pkg/models.py"].replace("nn.Block", "nn.HybridBlock")
    )
    capsys.readouterr()
    assert (
        main(["check", "--isolated", "--no-cache", "-j", "1", "--output-format", "concise", "."])
        == 1
    )
    assert "train.py:6:12: MXL101" in capsys.readouterr().out


def test_imports_are_read_from_the_text_of_a_file_that_is_not_parsed():
    from mxlint.names import imports_in_text

    text = (
        "import os, a.b as c\nfrom . import (x,\n   y)\nfrom .m import *\n"
        "if True:\n    from q.r import \\\n        s\n"
        '"""\nfrom in a docstring\n"""\n'
    )
    assert imports_in_text(text, "pkg.mod", False) == (
        "a.b",
        "os",
        "pkg.m",
        "pkg.x",
        "pkg.y",
        "q.r.s",
    )
