"""A fix removes the import it leaves unused, and only that one: the exact rewrite through
`mxlint check --fix`, and the traps (unused before, other uses left, `__all__`, explicit
re-exports, a package's `__init__.py`, `try` imports, class attributes, dynamic name use)."""

from __future__ import annotations

import textwrap
from pathlib import Path, PurePath

import pytest

from mxlint.cli import main
from mxlint.unused_imports import remove_unused_imports


def _block(imports: str, body: str, tail: str = "") -> str:
    """A 1.x HybridBlock whose hybrid_forward returns `body`."""
    return (
        textwrap.dedent(imports)
        + "from mxnet.gluon import nn\n\n\nclass Net(nn.HybridBlock):\n"
        + f"    def hybrid_forward(self, F, x):\n        return {body}\n"
        + textwrap.dedent(tail)
    )


def _fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, name: str) -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    monkeypatch.chdir(tmp_path)
    main(["check", "--isolated", "--no-cache", "--select", "MXL105", "--fix", name])
    return path.read_text()


@pytest.mark.parametrize(
    ("imports", "fixed_imports"),
    [
        ("from mxnet import nd\n", ""),
        ("import mxnet.ndarray as nd\n", ""),
        ("from mxnet import gluon, nd\n", "from mxnet import gluon\n"),
        ("from mxnet import nd, gluon\n", "from mxnet import gluon\n"),
        ("from mxnet import (\n    gluon,\n    nd,\n)\n", "from mxnet import (\n    gluon,\n)\n"),
        ("import os; from mxnet import nd\n", "import os\n"),
        # A comment above the removed line stays.
        ("# operators\nfrom mxnet import nd\n", "# operators\n"),
    ],
)
def test_the_import_the_fix_left_unused_goes(tmp_path, monkeypatch, imports, fixed_imports):
    source = _block(imports, "nd.relu(x)")
    assert _fix(tmp_path, monkeypatch, source, "net.py") == _block(fixed_imports, "F.relu(x)")


def test_mx_goes_when_mx_nd_was_its_only_use(tmp_path, monkeypatch):
    source = _block("import mxnet as mx\n", "mx.nd.relu(x)")
    assert _fix(tmp_path, monkeypatch, source, "net.py") == _block("", "F.relu(x)")


@pytest.mark.parametrize(
    ("imports", "tail"),
    [
        # Unused before the fix: kept (a side effect, or on purpose).
        ("from mxnet import nd\nimport mxnet as mx\n", ""),
        # Other uses left.
        ("from mxnet import nd\n", "\n\ndef predict(x):\n    return nd.softmax(x)\n"),
        # Exported.
        ("from mxnet import nd\n__all__ = ['Net', 'nd']\n", ""),
        ("from mxnet import nd\n__all__ = make_all()\n", ""),
        # Explicit re-export.
        ("from mxnet import nd as nd\n", ""),
        # Feature detection.
        ("try:\n    from mxnet import nd\nexcept ImportError:\n    nd = None\n", ""),
        # Names reached through strings.
        ("from mxnet import nd\n", "\n\nOPS = eval('nd.relu')\n"),
    ],
    ids=["unused-before", "other-uses", "all", "dynamic-all", "reexport", "try", "eval"],
)
def test_imports_that_stay(tmp_path, monkeypatch, imports, tail):
    source = _block(imports, "nd.relu(x)", tail)
    expected = source.replace("return nd.relu(x)", "return F.relu(x)")
    if imports.startswith("from mxnet import nd\nimport mxnet as mx"):
        # `nd` goes with its only use; `mx` was unused already and stays.
        expected = expected.replace("from mxnet import nd\n", "")
    assert _fix(tmp_path, monkeypatch, source, "net.py") == expected


def test_nothing_is_removed_from_a_package_init(tmp_path, monkeypatch):
    source = _block("from mxnet import nd\n", "nd.relu(x)")
    fixed = _fix(tmp_path, monkeypatch, source, "pkg/__init__.py")
    assert fixed == source.replace("return nd.relu(x)", "return F.relu(x)")


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        # A block left empty gets `pass`, its comment kept.
        (
            "if USE:\n    # the ops\n    from mxnet import nd\nx = nd.zeros(1)\n",
            "if USE:\n    # the ops\n    from mxnet import nd\nx = F.zeros(1)\n",
            "if USE:\n    # the ops\n    pass\nx = F.zeros(1)\n",
        ),
        (
            "if USE: from mxnet import nd\nx = nd.zeros(1)\n",
            "if USE: from mxnet import nd\nx = F.zeros(1)\n",
            "if USE: pass\nx = F.zeros(1)\n",
        ),
        # `import a.b` binds `a`: it goes when no `a.` is left.
        (
            "import mxnet.ndarray\nx = mxnet.ndarray.zeros(1)\n",
            "import mxnet.ndarray\nx = F.zeros(1)\n",
            "x = F.zeros(1)\n",
        ),
        # A function's own import.
        (
            "def f(F):\n    from mxnet import nd\n    return nd.zeros(1)\n",
            "def f(F):\n    from mxnet import nd\n    return F.zeros(1)\n",
            "def f(F):\n    return F.zeros(1)\n",
        ),
        # Still used in a string annotation.
        (
            "from mxnet import nd\nx: 'nd.NDArray' = nd.zeros(1)\n",
            "from mxnet import nd\nx: 'nd.NDArray' = F.zeros(1)\n",
            "from mxnet import nd\nx: 'nd.NDArray' = F.zeros(1)\n",
        ),
        # A class body's import is a class attribute.
        (
            "class A:\n    from mxnet import nd\n    z = nd.zeros(1)\n",
            "class A:\n    from mxnet import nd\n    z = F.zeros(1)\n",
            "class A:\n    from mxnet import nd\n    z = F.zeros(1)\n",
        ),
        # Two identical imports: which one a use belonged to cannot be told.
        (
            "from mxnet import nd\nfrom mxnet import nd\nx = nd.zeros(1)\n",
            "from mxnet import nd\nfrom mxnet import nd\nx = F.zeros(1)\n",
            "from mxnet import nd\nfrom mxnet import nd\nx = F.zeros(1)\n",
        ),
    ],
    ids=["block", "one-line-suite", "dotted", "local", "annotation", "class", "twice"],
)
def test_rewrites(before, after, expected):
    assert remove_unused_imports(before, after, PurePath("m.py")) == expected
