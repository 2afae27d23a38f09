"""What a verify job's code tried outside its sandbox: writes outside the scratch directory and
network connections, seen through Python's audit hooks (PEP 578) in the job itself.

The sandbox does the blocking; these records tell the user what it blocked (or, without a
sandbox, what the project's code did). Code that swallows the resulting OSError still shows
up here. The parent describes the job's sandbox in `SANDBOX_ENV`.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Mapping, Sequence
from typing import Any

SANDBOX_ENV = "MXLINT_VERIFY_SANDBOX"
#: Records kept per job (a loop writing files would otherwise fill the result).
LIMIT = 20

_WRITE_MODE = set("wax+")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PATH_EVENTS = {"os.mkdir": "create directory", "os.remove": "delete", "os.rmdir": "delete"}
_MOVE_EVENTS = ("os.rename", "os.replace")
_NET_EVENTS = ("socket.connect", "socket.sendto")


def sandbox_env(
    name: str, scratch: str, writable: Sequence[str] | None, readonly: Sequence[str], network: bool
) -> dict[str, str]:
    facts = {
        "name": name,
        "scratch": scratch,
        "writable": list(writable) if writable is not None else None,
        "readonly": list(readonly),
        "network": network,
    }
    return {SANDBOX_ENV: json.dumps(facts)}


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class Monitor:
    """Collects the job's escape attempts; `records` goes into the job's result."""

    def __init__(self, facts: Mapping[str, Any]) -> None:
        self.scratch = os.path.realpath(str(facts.get("scratch") or os.getcwd()))
        writable = facts.get("writable")
        self.writable = [os.path.realpath(p) for p in writable] if writable is not None else None
        self.readonly = [os.path.realpath(p) for p in facts.get("readonly", [])]
        self.network = bool(facts.get("network", True))
        self.sandbox = str(facts.get("name", "none"))
        self.records: list[dict[str, Any]] = []
        self._seen: set[tuple[str, str]] = set()

    def _add(self, what: str, target: str, blocked: bool) -> None:
        key = (what, target)
        if key in self._seen or len(self.records) >= LIMIT:
            return
        self._seen.add(key)
        self.records.append({"what": what, "target": target, "blocked": blocked})

    def _write(self, what: str, raw: Any) -> None:
        if isinstance(raw, int):
            return  # an open file descriptor
        path = os.path.abspath(os.fsdecode(raw))
        if _under(path, self.scratch) or path.startswith(("/dev/", "/proc/")):
            return
        if any(_under(path, r) for r in self.readonly):
            self._add(what, path, True)
        elif self.writable is None:
            self._add(what, path, False)
        elif not any(_under(path, w) for w in self.writable):
            self._add(what, path, True)
        # else: a private directory of the sandbox (its /tmp), discarded afterwards

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        try:
            if event == "open":
                path, mode, flags = args
                if (isinstance(mode, str) and _WRITE_MODE & set(mode)) or (
                    isinstance(flags, int) and flags & _WRITE_FLAGS
                ):
                    self._write("write", path)
            elif event in _PATH_EVENTS:
                self._write(_PATH_EVENTS[event], args[0])
            elif event in _MOVE_EVENTS:
                self._write("move to", args[1])
            elif event in _NET_EVENTS:
                sock, address = args
                if sock.family in (socket.AF_INET, socket.AF_INET6):
                    host, port = address[0], address[1]
                    self._add("connect", f"{host}:{port}", not self.network)
        except Exception:  # noqa: BLE001 - an audit hook must never break the job
            return


def install() -> Monitor | None:
    """Watch this process when the parent described its sandbox."""
    raw = os.environ.get(SANDBOX_ENV)
    if not raw:
        return None
    monitor = Monitor(json.loads(raw))
    sys.addaudithook(monitor.hook)
    return monitor


_VERBS = {"write": "write to", "connect": "connect to", "move to": "move a file to"}


def describe(record: Mapping[str, Any]) -> str:
    """'blocked: write to /x', 'not blocked: connect to 10.0.0.1:80'."""
    what, target = str(record.get("what", "?")), str(record.get("target", "?"))
    state = "blocked" if record.get("blocked") else "not blocked"
    return f"{state}: {_VERBS.get(what, what)} {target}"
