"""The module bundle: modules served from it are the modules Python imports anyway, and a
changed source is never served from it."""

from __future__ import annotations

import importlib
import inspect
import marshal
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mxlint import module_bundle
from mxlint.module_bundle import module_bundle as bundle

ROOT = "mxb_toy"


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package `mxb_toy` with a submodule and a subpackage, importable, bytecode written."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    src = tmp_path / "src"
    pkg = src / ROOT
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("NAME = 'toy'\n")
    (pkg / "values.py").write_text("def answer():\n    return 42\n")
    (pkg / "sub" / "__init__.py").write_text(
        "from mxb_toy.values import answer\nDOUBLE = 2 * answer()\n"
    )
    monkeypatch.syspath_prepend(str(src))
    yield pkg
    _forget()


def _forget() -> None:
    for name in [n for n in sys.modules if n == ROOT or n.startswith(ROOT + ".")]:
        del sys.modules[name]
    importlib.invalidate_caches()


def _import_all(path: Path) -> module_bundle._BundleFinder:
    _forget()
    with bundle(path, roots=(ROOT,)) as finder:
        sub = importlib.import_module(f"{ROOT}.sub")
    assert finder is not None and finder not in sys.meta_path
    assert sys.modules[f"{ROOT}.values"].answer() * 2 == sub.DOUBLE
    return finder


def test_modules_imported_once_are_served_from_the_file_next_time(toy: Path, tmp_path: Path):
    path = tmp_path / "bundle.marshal"
    first = _import_all(path)
    assert first.served == set()
    assert set(module_bundle.load(path, (ROOT,))) == {ROOT, f"{ROOT}.sub", f"{ROOT}.values"}
    written = path.stat().st_mtime_ns
    usual = {
        name: _attributes(sys.modules[name]) for name in (ROOT, f"{ROOT}.sub", f"{ROOT}.values")
    }

    second = _import_all(path)
    assert second.served == {ROOT, f"{ROOT}.sub", f"{ROOT}.values"}
    assert path.stat().st_mtime_ns == written  # nothing new: the file is left as it is
    for name, attributes in usual.items():
        assert _attributes(sys.modules[name]) == attributes
    values = sys.modules[f"{ROOT}.values"]
    assert inspect.getsource(values.answer) == "def answer():\n    return 42\n"
    assert values.answer.__code__.co_filename == str(toy / "values.py")
    assert sys.modules[f"{ROOT}.sub"].DOUBLE == 84


def _attributes(module) -> tuple:
    spec = module.__spec__
    return (
        module.__file__,
        module.__cached__,
        getattr(module, "__path__", None),
        module.__package__,
        spec.origin,
        spec.cached,
        spec.submodule_search_locations,
        spec.has_location,
        type(spec.loader).__mro__[-3].__name__,  # a SourceFileLoader either way
    )


def test_a_changed_source_is_imported_as_usual_and_the_file_written_again(
    toy: Path, tmp_path: Path
):
    path = tmp_path / "bundle.marshal"
    _import_all(path)
    (toy / "values.py").write_text("def answer():\n    return 4200  # changed\n")
    changed = _import_all(path)
    assert changed.served == {ROOT, f"{ROOT}.sub"} and changed.stale
    assert sys.modules[f"{ROOT}.sub"].DOUBLE == 8400
    again = _import_all(path)  # the file holds the new code now
    assert again.served == {ROOT, f"{ROOT}.sub", f"{ROOT}.values"}
    assert sys.modules[f"{ROOT}.sub"].DOUBLE == 8400


def test_what_another_environment_kept_is_not_served(
    toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """One source tree, two environments: the package found first on this interpreter's path
    is another copy (another virtual environment's), so the kept modules are not its."""
    path = tmp_path / "bundle.marshal"
    _import_all(path)
    other = tmp_path / "other"
    shutil.copytree(toy, other / ROOT)
    (other / ROOT / "values.py").write_text("def answer():\n    return 7\n")
    monkeypatch.syspath_prepend(str(other))
    finder = _import_all(path)
    assert finder.served == set()
    assert sys.modules[f"{ROOT}.sub"].DOUBLE == 14
    assert sys.modules[ROOT].__file__ == str(other / ROOT / "__init__.py")


def test_a_deleted_source_is_not_served(toy: Path, tmp_path: Path):
    path = tmp_path / "bundle.marshal"
    _import_all(path)
    (toy / "values.py").unlink()
    _forget()
    with pytest.raises(ImportError), bundle(path, roots=(ROOT,)):
        importlib.import_module(f"{ROOT}.values")


@pytest.mark.parametrize(
    "content",
    [b"", b"not marshal data", marshal.dumps(((b"\x00\x00\r\n", (ROOT,)), {})), marshal.dumps([1])],
)
def test_a_damaged_or_foreign_file_means_importing_as_usual(
    toy: Path, tmp_path: Path, content: bytes
):
    path = tmp_path / "bundle.marshal"
    path.write_bytes(content)
    assert _import_all(path).served == set()
    assert len(module_bundle.load(path, (ROOT,))) == 3  # replaced by a good file


def test_nothing_is_written_where_python_writes_no_bytecode(
    toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    path = tmp_path / "bundle.marshal"
    _import_all(path)
    assert not path.exists()


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes to read-only folders"
)
def test_a_folder_that_cannot_be_written_is_no_error(toy: Path, tmp_path: Path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert _import_all(locked / "sub" / "bundle.marshal").served == set()
        assert not (locked / "sub").exists()
    finally:
        locked.chmod(0o700)


def test_nothing_is_gathered_where_the_file_cannot_be_written(
    toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Gathering two hundred modules' code for a file that cannot be written would cost every
    start of a read-only installation."""
    gathered: list[str] = []
    monkeypatch.setattr(module_bundle, "_entry_from_bytecode", lambda name: gathered.append(name))
    monkeypatch.setattr(module_bundle, "_writable", lambda path: False)
    _import_all(tmp_path / "bundle.marshal")
    assert gathered == [] and not (tmp_path / "bundle.marshal").exists()


def test_the_finder_is_removed_when_the_block_raises(toy: Path, tmp_path: Path):
    with pytest.raises(ZeroDivisionError), bundle(tmp_path / "b.marshal", roots=(ROOT,)) as finder:
        raise ZeroDivisionError
    assert finder not in sys.meta_path


# The command itself (the bundle written by a first start, taken by the second, the same
# report): `tests/test_codegen_cache.py`, beside the other start-up caches.
