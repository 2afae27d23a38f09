"""A package whose `__init__` is deferred: its submodules import without it, and it runs once,
when a name of its own is first read; libcst's metadata package loaded that way by the command
is the package a plain import gives."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mxlint.deferred_init import defer_init


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A top-level package `deferdemo_<n>` with a subpackage `inner` whose `__init__` counts
    its runs in `deferdemo_<n>.runs` and re-exports `value` from `inner/core.py`."""
    name = f"deferdemo_{os.getpid()}_{tmp_path.name}".replace("-", "_")
    top = tmp_path / name
    (top / "inner").mkdir(parents=True)
    (top / "__init__.py").write_text("runs = []\n")
    (top / "inner" / "core.py").write_text("value = 42\n")
    (top / "inner" / "__init__.py").write_text(
        f"import {name}\n{name}.runs.append(1)\nfrom {name}.inner.core import value\n"
        "__all__ = ['value']\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for key in [k for k in sys.modules if k == name or k.startswith(f"{name}.")]:
        del sys.modules[key]


def test_submodules_import_without_the_init_which_runs_once_when_asked(package):
    inner = defer_init(f"{package}.inner")
    assert inner is not None and sys.modules[f"{package}.inner"] is inner
    top = __import__(package)
    core = __import__(f"{package}.inner.core", fromlist=["value"])
    assert core.value == 42
    assert top.runs == []  # the submodule came without the package's __init__
    assert inner.value == 42  # a name of its own: the __init__ runs now
    assert top.runs == [1]
    assert inner.__all__ == ["value"] and inner.core is core
    with pytest.raises(AttributeError):
        inner.missing  # noqa: B018
    assert top.runs == [1]


def test_from_import_runs_the_init(package):
    defer_init(f"{package}.inner")
    namespace: dict[str, object] = {}
    exec(f"from {package}.inner import value", namespace)
    assert namespace["value"] == 42
    assert __import__(package).runs == [1]


def test_nothing_is_deferred_once_the_parent_is_imported_or_where_nothing_is_found(package):
    assert defer_init("no_such_package_anywhere.sub") is None
    assert defer_init(f"{package}.no_such_subpackage") is None
    __import__(package)
    assert defer_init(f"{package}.inner") is None
    assert f"{package}.inner" not in sys.modules
    import libcst  # noqa: F401

    assert defer_init("libcst.metadata") is None


_PROBE = textwrap.dedent("""\
    import sys
    if sys.argv[1] == "deferred":
        from mxlint.launch import load
        load()
        assert "subprocess" not in sys.modules, "the providers were loaded"
        assert "libcst.metadata.type_inference_provider" not in sys.modules
    import libcst
    import libcst.metadata
    from libcst.metadata import MetadataWrapper, ScopeProvider
    assert libcst.metadata is sys.modules["libcst.metadata"]
    assert ScopeProvider is libcst.metadata.scope_provider.ScopeProvider
    wrapper = MetadataWrapper(libcst.parse_module("import os\\n"))
    scopes = {type(s).__name__ for s in wrapper.resolve(ScopeProvider).values() if s}
    public = sorted(n for n in dir(libcst.metadata) if not n.startswith("__"))
    print(sorted(libcst.metadata.__all__), public, sorted(scopes))
    """)


def test_libcst_metadata_deferred_by_the_command_is_the_package_an_import_gives():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    runs = [
        subprocess.run([sys.executable, "-c", _PROBE, how], capture_output=True, text=True, env=env)
        for how in ("deferred", "plain")
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert runs[0].stdout == runs[1].stdout
    assert "'ScopeProvider'" in runs[0].stdout and "'GlobalScope'" in runs[0].stdout


def test_the_command_fixes_with_libcst_scopes_loaded_on_demand(tmp_path: Path):
    """The unused-import removal reads libcst's scopes: the first use of the metadata package
    in a command that deferred it."""
    net = tmp_path / "net.py"
    net.write_text(
        "from mxnet import gluon, nd\nfrom mxnet.gluon import nn\n\n\n"
        "class Net(nn.HybridBlock):\n    def hybrid_forward(self, F, x):\n"
        "        return nd.relu(x)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "mxlint", "check", "--isolated", "--no-cache", "--fix", "net.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert net.read_text() == (
        "from mxnet import gluon\nfrom mxnet.gluon import nn\n\n\n"
        "class Net(nn.HybridBlock):\n    def hybrid_forward(self, F, x):\n"
        "        return F.relu(x)\n"
    )
