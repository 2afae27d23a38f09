"""The server's start-up reads the client's `initialize` itself, then hands it on unread."""

from __future__ import annotations

import io
import json
from pathlib import Path

from mxlint.server_boot import Replay, initialize_root, read_message


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
    # Not a folder on this machine, not initialize, nothing readable: no early index.
    gone = {"rootUri": (tmp_path / "missing").as_uri()}
    assert initialize_root({"method": "initialize", "params": gone}) is None
    assert initialize_root({"method": "shutdown", "params": params}) is None
    assert initialize_root(None) is None
    assert read_message(io.BytesIO(b"Content-Length: 5\r\n\r\n{oops"))[1] is None
