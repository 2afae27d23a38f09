"""`mxlint server` latency, measured by a real LSP client over stdio, against `mxlint check`.

    python benchmarks/server_latency.py --corpus path/to/repo [--edits 50] [--json out.json]

Figures (wall time, one process each, the server from start-up; every process runs from
compiled bytecode, as installed code does, kept in a scratch directory and filled by an untimed
warm-up run):
- first diagnostics: from starting the server (empty results cache) to the diagnostics of one
  open file, which need the whole workspace indexed; against a cold `mxlint check` of the same
  directory: an empty results cache, which it fills as the server fills its own (what "cold"
  means in `benchmarks/speed.py`); run by the same script in `--rounds` rounds that rotate
  which goes first (the ratio, the median over rounds of the ratio within a round, is what the
  project tracks: <= 1). Also shown: the ratio to `mxlint check --no-cache`, which writes no
  cache;
- the same start with the cache the first start left (what a second editor session costs);
- diagnostics after a change: the open file is a median-size file among those mxlint parses;
  each edit inserts or removes a blank line at its top (every finding moves, so every edit has
  new diagnostics), and the time is from sending `didChange` to receiving the
  diagnostics of that version: median and p95 over `--edits` edits, after 3 untimed ones.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from mxlint.engine import needs_parse
from mxlint.sources import decode_source

SERVER = [sys.executable, "-m", "mxlint", "server"]

#: The children's environment: bytecode kept in a scratch directory (`main` sets it).
ENV: dict[str, str] = dict(os.environ)


def median_file(root: Path) -> Path:
    """A median-size Python file among those mxlint parses (`engine.needs_parse`)."""
    files = []
    for path in root.rglob("*.py"):
        try:
            data = path.read_bytes()
            if needs_parse(decode_source(data)):
                files.append((len(data), str(path)))
        except (OSError, UnicodeDecodeError, SyntaxError, LookupError):
            continue
    files.sort()
    return Path(files[len(files) // 2][1])


def cold_check(root: Path, cache_dir: Path | None) -> float:
    """`mxlint check` of `root` with the empty cache `cache_dir`, or with no cache at all."""
    cache = ["--no-cache"] if cache_dir is None else ["--cache-dir", str(cache_dir)]
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "mxlint", "check", *cache, "-q", "."],
        cwd=root,
        capture_output=True,
        check=False,
        env=ENV,
    )
    return time.perf_counter() - start


class Session:
    """One server process and a client that records when each document's diagnostics arrive."""

    def __init__(self) -> None:
        self.client = LanguageClient("mxlint-bench", "1")
        self.arrived: dict[str, asyncio.Event] = {}
        self.versions: dict[str, int | None] = {}

        @self.client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
            self.versions[params.uri] = params.version
            self.arrived.setdefault(params.uri, asyncio.Event()).set()

        @self.client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
        def register(params: lsp.RegistrationParams) -> None:
            return None

    async def start(self, root: Path, cache_dir: Path) -> None:
        env = {**ENV, "MXLINT_CACHE_DIR": str(cache_dir)}
        await self.client.start_io(*SERVER, env=env, cwd=str(root))
        await self.client.initialize_async(
            lsp.InitializeParams(
                capabilities=lsp.ClientCapabilities(),
                root_uri=root.as_uri(),
                workspace_folders=[lsp.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
            )
        )
        self.client.initialized(lsp.InitializedParams())

    async def wait(self, uri: str, version: int) -> None:
        while True:
            event = self.arrived.setdefault(uri, asyncio.Event())
            await event.wait()
            event.clear()
            if self.versions.get(uri) == version:
                return

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


async def first_diagnostics(root: Path, target: Path, cache_dir: Path) -> float:
    session = Session()
    start = time.perf_counter()
    await session.start(root, cache_dir)
    uri = target.as_uri()
    session.client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=target.read_text(encoding="utf-8")
            )
        )
    )
    await session.wait(uri, 1)
    elapsed = time.perf_counter() - start
    await session.stop()
    return elapsed


async def change_latency(root: Path, target: Path, cache_dir: Path, edits: int) -> list[float]:
    session = Session()
    await session.start(root, cache_dir)
    uri = target.as_uri()
    text = target.read_text(encoding="utf-8")
    session.client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        )
    )
    await session.wait(uri, 1)
    times: list[float] = []
    for i in range(edits + 3):
        version = i + 2
        new = ("\n" + text) if i % 2 == 0 else text
        start = time.perf_counter()
        session.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=new)],
            )
        )
        await session.wait(uri, version)
        if i >= 3:
            times.append(time.perf_counter() - start)
    await session.stop()
    return times


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="a project directory")
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3, help="cold check vs first diagnostics")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args()
    root = args.corpus.resolve()
    target = median_file(root)
    with tempfile.TemporaryDirectory() as scratch:
        ENV.pop("PYTHONDONTWRITEBYTECODE", None)
        ENV["PYTHONPYCACHEPREFIX"] = str(Path(scratch) / "pyc")
        asyncio.run(first_diagnostics(root, target, Path(scratch) / "warm-up"))
        colds: list[float] = []
        uncached: list[float] = []
        firsts: list[float] = []
        for n in range(max(1, args.rounds)):
            cache = Path(scratch) / f"cache{n}"
            check_cache = Path(scratch) / f"check{n}"
            runs: list[Callable[[], None]] = [
                lambda d=check_cache: colds.append(cold_check(root, d)),
                lambda: uncached.append(cold_check(root, None)),
                lambda c=cache: firsts.append(asyncio.run(first_diagnostics(root, target, c))),
            ]
            for k in range(len(runs)):  # each goes first in turn
                runs[(n + k) % len(runs)]()
        warm_first = asyncio.run(first_diagnostics(root, target, cache))
        changes = asyncio.run(change_latency(root, target, cache, args.edits))
    cold, first = min(colds), min(firsts)
    ratio = statistics.median(f / c for f, c in zip(firsts, colds))
    ratio_uncached = statistics.median(f / c for f, c in zip(firsts, uncached))
    figures = {
        "corpus": root.name,
        "file": str(target.relative_to(root)),
        "file_bytes": target.stat().st_size,
        "cold_check_s": cold,
        "first_diagnostics_cold_s": first,
        "first_diagnostics_cached_s": warm_first,
        "first_over_cold_check": ratio,
        "cold_check_no_cache_s": min(uncached),
        "first_over_cold_check_no_cache": ratio_uncached,
        "rounds": len(colds),
        "change_median_ms": statistics.median(changes) * 1000,
        "change_p95_ms": p95(changes) * 1000,
        "edits": len(changes),
    }
    print(f"corpus {root.name}: median-size file {figures['file']} ({figures['file_bytes']} B)")
    print(f"cold `mxlint check` (empty cache)    {cold:8.2f} s   (best of {len(colds)})")
    print(
        f"`mxlint check --no-cache`            {min(uncached):8.2f} s   (best of {len(uncached)})"
    )
    print(
        f"server, first diagnostics (no cache) {first:8.2f} s   (best of {len(firsts)}); "
        f"ratio {ratio:.2f} to the cold check, {ratio_uncached:.2f} to --no-cache "
        "(medians over rounds)"
    )
    print(f"server, first diagnostics (cached)   {warm_first:8.2f} s")
    print(
        f"diagnostics after a change           median {figures['change_median_ms']:.0f} ms, "
        f"p95 {figures['change_p95_ms']:.0f} ms over {len(changes)} edits"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
