"""What `mxlint server` does before it imports the protocol library (half a second of the first
diagnostics): take the protocol's stdout, read the client's `initialize` request itself, fork
the workers while the process has no thread, and start indexing the folder the request names.
The protocol library then reads the request again from `Replay`, as if nothing had been read."""

from __future__ import annotations

import json
import os
import sys
import threading
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, BinaryIO

from pygls.uris import to_fs_path

from mxlint.workers import default_jobs, fork_pool
from mxlint.workspace import Workspace


class Replay:
    """A binary stream that gives `head` again before the rest of `stream` (what the protocol
    reader calls: `readline` and `read`)."""

    def __init__(self, head: bytes, stream: BinaryIO) -> None:
        self.head = head
        self.stream = stream

    def readline(self) -> bytes:
        if not self.head:
            return self.stream.readline()
        end = self.head.find(b"\n")
        if end < 0:
            line, self.head = self.head, b""
            return line + self.stream.readline()
        line, self.head = self.head[: end + 1], self.head[end + 1 :]
        return line

    def read(self, n: int = -1) -> bytes:
        if n < 0:
            out, self.head = self.head, b""
            return out + self.stream.read()
        out, self.head = self.head[:n], self.head[n:]
        if len(out) < n:
            out += self.stream.read(n - len(out))
        return out


def read_message(stream: BinaryIO) -> tuple[bytes, dict[str, Any] | None]:
    """One LSP message: its raw bytes, and its JSON body when it could be read."""
    raw = b""
    length = None
    while True:
        line = stream.readline()
        raw += line
        if not line:
            return raw, None  # the client went away
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length":
            try:
                length = int(value.strip())
            except ValueError:
                return raw, None
    if length is None:
        return raw, None
    body = stream.read(length)
    raw += body
    try:
        message = json.loads(body)
    except ValueError:
        return raw, None
    return raw, message if isinstance(message, dict) else None


def initialize_root(message: dict[str, Any] | None) -> Path | None:
    """The folder an `initialize` request opens, as the server will take it (`server._root`):
    the first workspace folder, else the root URI or path."""
    if message is None or message.get("method") != "initialize":
        return None
    params = message.get("params")
    if not isinstance(params, dict):
        return None
    folders = params.get("workspaceFolders") or []
    uri = folders[0].get("uri") if folders and isinstance(folders[0], dict) else None
    uri = uri or params.get("rootUri")
    if isinstance(uri, str):
        # pygls' own conversion, as `server._root` takes it (urllib.request's would load http,
        # email and ssl: a third of the boot, before the workers start).
        fs_path = to_fs_path(uri)
        if fs_path is None:  # not a file URI
            return None
        path = Path(fs_path)
    elif isinstance(params.get("rootPath"), str):
        path = Path(params["rootPath"])
    else:
        return None
    path = path.resolve()
    return path if path.is_dir() else None


#: The longest the server waits for the early index to hand out its files before it goes on.
STARTING_SECONDS = 5.0


class EarlyIndex:
    """The index of one folder, built in a thread from the start, by workers forked before the
    thread starts (a process with threads must not fork: see `workers._context`)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.workspace = Workspace(root)
        self.error: BaseException | None = None
        # The files are found here, before the protocol library's import competes for the
        # interpreter with the thread: the workers wait for nothing else.
        files: tuple[list[Path], list[Path]] | None
        try:
            files = self.workspace.discover()
        except Exception:  # noqa: BLE001 - the thread's index looks again, and fails as it may
            files = None
        pool = fork_pool(self.workspace.settings, default_jobs())
        self._started = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(pool, files), name="mxlint-early-index", daemon=True
        )
        self._thread.start()
        # The caller imports the protocol library next: it waits until the workers have their
        # files, so that the import does not hold the interpreter while they wait for them.
        self._started.wait(timeout=STARTING_SECONDS)

    def _run(self, pool: Executor | None, files: tuple[list[Path], list[Path]] | None) -> None:
        try:
            self.workspace.index(pool=pool, files=files, on_start=self._started.set)
        except BaseException as exc:  # noqa: BLE001 - the server indexes again itself
            self.error = exc
        finally:
            self._started.set()
            if pool is not None:
                pool.shutdown(wait=False)

    def take(self, root: Path) -> Workspace | None:
        """The finished index, if it is of `root`."""
        self._thread.join()
        if self.error is not None or root != self.root:
            return None
        return self.workspace


def boot(stdin: BinaryIO | None = None) -> tuple[BinaryIO, Any, EarlyIndex | None]:
    """The protocol's own copy of stdout (file descriptor 1 becomes stderr: a stray print of a
    rule, a library or a worker cannot corrupt the protocol), its input, and the early index."""
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    stream = stdin or sys.stdin.buffer
    raw, message = read_message(stream)
    root = initialize_root(message)
    early = None
    if root is not None:
        os.chdir(root)  # the index reads paths relative to its root, as `mxlint check .` does
        early = EarlyIndex(root)
    return protocol_out, Replay(raw, stream), early
