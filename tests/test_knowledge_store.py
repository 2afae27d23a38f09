"""The marshal cache of the generated MXNet facts: what it returns is what the JSON says."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mxlint.knowledge import store
from mxlint.knowledge.api import api, compact_text, data_file, parse

DATA = "data/mxnet_releases.json"
calls: list[str] = []


def _build(text: str) -> dict[str, object]:
    calls.append(text[:10])
    return {"numpy": tuple(json.loads(text)["numpy"])}


@pytest.fixture
def writable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    calls.clear()


def _expected() -> dict[str, object]:
    raw = json.loads((store.PACKAGE / DATA).read_text(encoding="utf-8"))
    return {"numpy": tuple(raw["numpy"])}


def test_facts_built_once_are_taken_from_the_file_next_time(tmp_path: Path, writable):
    path = tmp_path / "releases.marshal"
    assert store.cached(DATA, _build, path) == _expected()
    assert len(calls) == 1 and path.is_file()
    assert store.cached(DATA, _build, path) == _expected()
    assert len(calls) == 1


@pytest.mark.parametrize(
    "content",
    [b"", b"\x00garbage", marshal.dumps(("another key", {"numpy": ()})), marshal.dumps([1, 2])],
)
def test_a_damaged_or_foreign_file_means_reading_the_json(tmp_path: Path, writable, content):
    path = tmp_path / "releases.marshal"
    path.write_bytes(content)
    assert store.cached(DATA, _build, path) == _expected()
    assert len(calls) == 1
    assert store.cached(DATA, _build, path) == _expected()  # rewritten by the first call
    assert len(calls) == 1


def test_a_changed_data_file_is_read_again(tmp_path: Path, writable, monkeypatch):
    path = tmp_path / "releases.marshal"
    store.cached(DATA, _build, path)
    real = store._stamp
    monkeypatch.setattr(store, "_stamp", lambda p: (0, 0) if str(p).endswith(DATA) else real(p))
    assert store.cached(DATA, _build, path) == _expected()
    assert len(calls) == 2


def test_nothing_is_written_where_python_writes_no_bytecode(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    path = tmp_path / "releases.marshal"
    assert store.cached(DATA, _build, path) == _expected()
    assert not path.exists()


def test_an_unwritable_place_is_no_error(tmp_path: Path, writable):
    (tmp_path / "file").write_text("")
    assert store.cached(DATA, _build, tmp_path / "file" / "releases.marshal") == _expected()


def test_the_default_place_is_beside_the_builders_bytecode():
    path = store.cache_path(data_file(), compact_text)
    assert path is not None
    assert path.name == f"mxnet_api_1.9.1.{sys.implementation.cache_tag}.marshal"
    from importlib.util import cache_from_source

    assert (
        path.parent == Path(cache_from_source(str(store.PACKAGE / "knowledge" / "api.py"))).parent
    )


def test_the_api_facts_from_the_cache_are_those_of_the_json(tmp_path: Path, writable):
    path = tmp_path / "api.marshal"
    store.cached(data_file(), compact_text, path)
    cached = store.cached(data_file(), compact_text, path)
    from mxlint.knowledge.api import from_compact

    facts = from_compact(cached)
    expected = parse(json.loads((store.PACKAGE / data_file()).read_text(encoding="utf-8")))
    for name in (
        "version",
        "namespaces",
        "ndarray",
        "symbol",
        "np_ndarray",
        "takes_ctx",
        "draws",
        "broadcasts",
        "reshape_forms",
        "symbol_nodes",
    ):
        assert getattr(facts, name) == getattr(expected, name), name
    assert dict(facts.signatures.items()) == dict(expected.signatures.items())
    assert (
        facts.signatures["nd.concat"]
        == expected.signatures["nd.concat"]
        == api().signatures["nd.concat"]
    )
    # Parameter names stay interned: 1,800 signatures share them.
    names = facts.signatures["nd.concat"].operator_params
    assert "dim" in names
    assert next(n for n in names if n == "dim") is sys.intern("dim")


def test_the_command_keeps_the_facts_beside_its_bytecode_and_reports_the_same(
    tmp_path: Path, fixtures_dir: Path
):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "pycache")
    command = [
        sys.executable,
        "-m",
        "mxlint",
        "check",
        "--isolated",
        "--no-cache",
        "--select",
        "ALL",
        str(fixtures_dir),
    ]
    unwritten = subprocess.run(
        command, capture_output=True, text=True, env={**env, "PYTHONDONTWRITEBYTECODE": "1"}
    )
    assert not (tmp_path / "pycache").exists()
    first = subprocess.run(command, capture_output=True, text=True, env=env)
    kept = list((tmp_path / "pycache").rglob("mxnet_api_*.marshal"))
    assert [p.name for p in kept] == [f"mxnet_api_1.9.1.{sys.implementation.cache_tag}.marshal"]
    second = subprocess.run(command, capture_output=True, text=True, env=env)
    assert unwritten.returncode == first.returncode == second.returncode == 1
    assert "MXL1" in first.stdout
    assert unwritten.stdout == first.stdout == second.stdout


def test_a_run_with_the_facts_cached_does_not_load_json(tmp_path: Path, fixtures_dir: Path):
    """json is for the machine formats and for data not cached yet."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "pycache")
    script = (
        "import sys\n"
        "from mxlint.launch import load\n"
        "load()\n"
        "from mxlint.cli import main\n"
        "main(['check', '--isolated', '--no-cache', '-j1', '--select', 'ALL', sys.argv[1]])\n"
        "print('json' in sys.modules)\n"
    )
    target = str(fixtures_dir / "sample_project" / "train.py")
    runs = [
        subprocess.run(
            [sys.executable, "-c", script, target], capture_output=True, text=True, env=env
        )
        for _ in range(2)
    ]
    assert [r.stdout.splitlines()[-1] for r in runs] == ["True", "False"], runs[1].stderr
