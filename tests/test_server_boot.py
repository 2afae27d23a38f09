"""The server's start-up reads the client's `initialize` itself, then hands it on unread."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mxlint.server_boot import Replay, initialize_root, read_message
from mxlint.workspace import Workspace

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def framed(body: dict[str, object]) -> bytes:
    data = json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def test_the_protocol_reader_gets_every_byte_again(tmp_path: Path) -> None:
    first = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"rootUri": tmp_path.as_uri()},
    }
    second = {"jsonrpc": "2.0", "method": "initialized", "params": {}}
    stream = io.BytesIO(framed(first) + framed(second))
    raw, message = read_message(stream)
    assert message == first
    replay = Replay(raw, stream)
    # As pygls reads: header lines, then the body by its length.
    assert replay.readline() == b"Content-Length: %d\r\n" % len(json.dumps(first))
    assert replay.readline() == b"\r\n"
    assert json.loads(replay.read(len(json.dumps(first)))) == first
    assert replay.readline().startswith(b"Content-Length:")
    assert replay.readline() == b"\r\n"
    assert json.loads(replay.read(-1)) == second


def test_the_folder_is_the_one_the_server_takes(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    params = {
        "rootUri": tmp_path.as_uri(),
        "workspaceFolders": [{"uri": other.as_uri(), "name": "other"}],
    }
    assert initialize_root({"method": "initialize", "params": params}) == other.resolve()
    assert initialize_root({"method": "initialize", "params": {"rootPath": str(tmp_path)}}) == (
        tmp_path.resolve()
    )
    # A name with a percent sign: decoded once, as the server decodes it.
    odd = tmp_path / "a%41 b"
    odd.mkdir()
    assert odd.as_uri().endswith("/a%2541%20b")
    assert initialize_root({"method": "initialize", "params": {"rootUri": odd.as_uri()}}) == (
        odd.resolve()
    )
    # Not a folder on this machine, not initialize, nothing readable: no early index.
    gone = {"rootUri": (tmp_path / "missing").as_uri()}
    assert initialize_root({"method": "initialize", "params": gone}) is None
    assert initialize_root({"method": "shutdown", "params": params}) is None
    assert initialize_root(None) is None
    assert read_message(io.BytesIO(b"Content-Length: 5\r\n\r\n{oops"))[1] is None


EARLY_INDEX = r"""
import json, multiprocessing, os, sys
from pathlib import Path
from mxlint.server_boot import EarlyIndex
from mxlint.workers import default_jobs

root = Path(sys.argv[1]).resolve()
os.chdir(root)
early = EarlyIndex(root)
forked = [p for p in multiprocessing.active_children() if p.pid != os.getpid()]
jobs = default_jobs()
workspace = early.take(root)
unopened = workspace.findings()
partial = sorted(name for name, r in workspace.results.items() if r.facts_only)
for name in sorted(workspace.results):  # every document opened as it is on disk
    workspace.open(name, Path(name).read_text(encoding="utf-8"))
found = workspace.findings()
print(json.dumps({
    "unopened": sum(len(group) for group in unopened.values()),
    "partial": partial,
    "forked": len(forked),
    "expected": jobs if jobs > 1 else 0,
    "findings": sorted(
        [f.code, f.filename, f.location.row, f.location.column]
        for group in found.values()
        for f in group
    ),
}))
"""


def test_the_early_index_forks_its_workers_and_finds_what_check_finds(tmp_path: Path) -> None:
    """The workers of the early index are forked before its thread starts (no fork server to
    wait for); it reads the files for their facts only, and the findings of the documents
    opened then are those of `mxlint check` on the same folder, cross-file ones included."""
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "hybridization", root / "hybridization")
    shutil.copytree(FIXTURES / "contexts", root / "contexts")
    env = {**os.environ, "MXLINT_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-c", EARLY_INDEX, str(root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=True,
    )
    early = json.loads(proc.stdout)
    assert early["forked"] == early["expected"]
    assert early["unopened"] == 0 and len(early["partial"]) > 20
    check = subprocess.run(
        [sys.executable, "-m", "mxlint", "check", "--no-cache", "--output-format", "json", "."],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert check.returncode == 1, check.stderr
    reported = sorted(
        [f["code"], f["filename"], f["location"]["row"], f["location"]["column"]]
        for f in json.loads(check.stdout)
    )
    assert len(reported) > 50
    assert early["findings"] == reported


def test_a_document_opened_as_the_index_read_it_is_not_linted_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a whole index, opening a file the index has just linted, with the text it has on
    disk, keeps the index's result (the first diagnostics need no second lint); other text, or
    a file modified since the index started, is linted again."""
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "hybridization" / "bad", root)
    past = time.time() - 60
    for path in root.rglob("*"):
        os.utime(path, (past, past))
    monkeypatch.chdir(root)
    workspace = Workspace(root.resolve(), whole_index=True)
    workspace.index(jobs=1, use_cache=False)
    same, edited, touched = "api_mismatch.py", "block_state.py", "outputs.py"
    kept = {name: workspace.results[name] for name in (same, edited, touched)}
    before = workspace.findings()
    assert all(before[name] for name in kept)

    workspace.open(same, Path(same).read_text(encoding="utf-8"))
    assert workspace.results[same] is kept[same]
    assert workspace.findings() == before

    workspace.open(edited, "\n" + Path(edited).read_text(encoding="utf-8"))
    assert workspace.results[edited] is not kept[edited]
    assert [f.location.row for f in workspace.findings()[edited]] == [
        f.location.row + 1 for f in before[edited]
    ]

    Path(touched).write_text(Path(touched).read_text(encoding="utf-8"), encoding="utf-8")
    workspace.open(touched, Path(touched).read_text(encoding="utf-8"))
    assert workspace.results[touched] is not kept[touched]
    assert workspace.findings()[touched] == before[touched]


def test_a_helper_in_a_file_that_names_nothing_of_mxnet_is_followed_as_it_is_edited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The editor loop over a helper the index does not parse (its text names nothing of
    MXNet): the block calling it is reported while the helper branches on a tensor, also
    after an edit of the model, and no longer once an edit of the helper stops that."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "helpers.py").write_text(
        "def centre(t):\n    if t.mean() > 0:\n        return t - t.mean()\n    return t\n"
    )
    model = (
        "from mxnet.gluon import nn\n\nfrom helpers import centre\n\n\n"
        "class Net(nn.HybridBlock):\n    def hybrid_forward(self, F, x):\n"
        "        return centre(x)\n\n\nnet = Net()\nnet.hybridize()\n"
    )
    (root / "model.py").write_text(model)
    monkeypatch.chdir(root)
    workspace = Workspace(root.resolve())
    workspace.index(jobs=1, use_cache=False)
    assert workspace.findings() == {}  # nothing open: every file read for its facts only
    workspace.open("model.py", model)
    assert [(f.code, f.location.row) for f in workspace.findings()["model.py"]] == [("MXL101", 8)]
    workspace.open("model.py", "\n" + model)
    assert [(f.code, f.location.row) for f in workspace.findings()["model.py"]] == [("MXL101", 9)]
    workspace.open("helpers.py", "def centre(t):\n    return t - t.mean()\n")
    assert workspace.findings().get("model.py", []) == []


def test_an_index_reads_unopened_files_for_their_facts_and_an_opened_one_in_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's index: the files are read for their cross-file facts (no findings of their
    own, a result the cache keeps apart from `mxlint check`'s); a document opened is read in
    full and gets what a whole index says of it; closed, it is read for its facts again."""
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "hybridization" / "bad", root)
    monkeypatch.chdir(root)
    whole = Workspace(root.resolve(), whole_index=True)
    whole.index(jobs=1, use_cache=False)
    expected = whole.findings()
    name = "outputs.py"
    assert expected[name]

    cache_dir = tmp_path / "cache"
    workspace = Workspace(root.resolve())
    workspace.index(jobs=1, cache_dir=cache_dir)
    assert all(r.facts_only for r in workspace.results.values() if r.parsed or r.facts_only)
    assert workspace.results[name].facts_only and workspace.findings() == {}
    assert {n: r.facts for n, r in workspace.results.items()} == {
        n: r.facts for n, r in whole.results.items()
    }
    workspace.open(name, Path(name).read_text(encoding="utf-8"))
    assert not workspace.results[name].facts_only
    assert workspace.findings() == {name: expected[name]}
    workspace.close(name)
    assert workspace.results[name].facts_only and workspace.findings() == {}

    # The cache the server left serves another server start, and not `mxlint check`.
    again = Workspace(root.resolve())
    again.index(jobs=1, cache_dir=cache_dir)
    assert again.results[name].facts_only
    from mxlint.cache import Cache

    cache = Cache.load(cache_dir, workspace.settings)
    key, kept = cache.entries[name]
    assert kept.facts_only
    assert cache.get(name, key) is None and cache.get(name, key, facts_only=True) is kept
