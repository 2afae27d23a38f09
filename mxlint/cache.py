"""Per-file results kept between runs, keyed by what decides them.

A file's own result (its findings, conditional findings and cross-file facts) depends only on its
bytes, its place in the package tree (module name), the settings, and mxlint itself. The cache
keeps that result; what depends on other files (HybridBlock ancestry, helpers, seeding helpers)
is never cached: `runner.resolve_project` recomputes it on every run from all files' facts, cached
or fresh, so a change in one file re-checks that file and still reaches every file it affects.

One pickle per settings fingerprint under `.mxlint_cache/` (Ruff's layout: a directory at the
project root that tools and git ignore), written atomically at the end of a run.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mxlint import __version__

if TYPE_CHECKING:
    from mxlint.engine import FileResult
    from mxlint.settings import Settings

DIRNAME = ".mxlint_cache"
ENV_VAR = "MXLINT_CACHE_DIR"
#: Bumped when the layout of a cache file changes.
FORMAT = 6

_GITIGNORE = "# Automatically created by mxlint.\n*\n"
_CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by mxlint.\n"
)


def default_dir(settings: Settings) -> Path:
    env = os.environ.get(ENV_VAR, "").strip()
    return Path(env) if env else settings.root / DIRNAME


def _code_stamp() -> str:
    """mxlint's own code: a version string does not change while developing mxlint. The rules
    package may live apart from `mxlint/` (an editable install maps it from `rules/`)."""
    import mxlint.rules

    roots = {Path(p).resolve() for p in (*mxlint.__path__, *mxlint.rules.__path__)}
    parts: list[str] = []
    for root in sorted(roots):
        for path in sorted(root.rglob("*.py")) + sorted(root.rglob("*.json")):
            try:
                st = path.stat()
            except OSError:
                continue
            parts.append(f"{path}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def fingerprint(settings: Settings) -> str:
    """Everything besides a file itself that its result depends on."""
    import libcst

    libcst_version = getattr(libcst, "__version__", "")
    text = "\n".join(
        (
            f"format={FORMAT}",
            f"mxlint={__version__}",
            _code_stamp(),
            f"python={sys.version}",
            f"libcst={libcst_version}",
            repr(settings),
        )
    )
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def file_key(data: bytes, module: str) -> str:
    return hashlib.blake2b(data + b"\0" + module.encode(), digest_size=20).hexdigest()


@dataclass
class Cache:
    """Results of one settings fingerprint: display path -> (key, result)."""

    directory: Path
    fingerprint: str
    entries: dict[str, tuple[str, FileResult]] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0
    dirty: bool = False
    #: Function summaries held when the cache was read (a run that learned more writes it).
    _summaries: int = 0

    @property
    def file(self) -> Path:
        return self.directory / f"{__version__}-{self.fingerprint}.pickle"

    @classmethod
    def load(cls, directory: Path, settings: Settings) -> Cache:
        cache = cls(directory, fingerprint(settings))
        try:
            with cache.file.open("rb") as fh:
                data = pickle.load(fh)
            if isinstance(data, dict) and data.get("format") == FORMAT:
                cache.entries = data["entries"]
                cache._summaries = cache._summary_count()
        except (
            OSError,
            EOFError,
            pickle.UnpicklingError,
            AttributeError,
            ImportError,
            KeyError,
            TypeError,
            ValueError,
            IndexError,
        ):
            cache.entries = {}  # a missing, foreign or damaged cache is an empty one
        return cache

    def get(self, path: str, key: str, *, facts_only: bool = False) -> FileResult | None:
        """The kept result of `path` if it was linted with this `key`; one read for its facts
        only (the language server's index) serves only a caller that asks for no more."""
        found = self.entries.get(path)
        if found is not None and found[0] == key and (facts_only or not found[1].facts_only):
            self.hits += 1
            return found[1]
        self.misses += 1
        return None

    def put(self, path: str, key: str, result: FileResult) -> None:
        if not result.error:  # an internal error is retried next run, not remembered
            self.entries[path] = (key, result)
            self.dirty = True
        elif path in self.entries:
            del self.entries[path]
            self.dirty = True

    def _summary_count(self) -> int:
        """How many function summaries the kept results hold (a cross-file analysis adds them
        to a file's facts when it first needs them)."""
        return sum(
            len(result.facts.effects)
            for _, result in self.entries.values()
            if result.facts is not None
        )

    def save(self) -> None:
        """Write atomically; a cache that cannot be written is skipped, never an error."""
        if not self.dirty and self._summary_count() == self._summaries:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            for name, text in (("CACHEDIR.TAG", _CACHEDIR_TAG), (".gitignore", _GITIGNORE)):
                marker = self.directory / name
                if not marker.exists():
                    marker.write_text(text, encoding="utf-8")
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".pickle")
            try:
                with os.fdopen(fd, "wb") as fh:
                    pickle.dump(
                        {"format": FORMAT, "entries": self.entries},
                        fh,
                        protocol=pickle.HIGHEST_PROTOCOL,
                    )
                os.replace(tmp, self.file)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
        except (OSError, pickle.PicklingError):
            return
        self.dirty = False
        self._summaries = self._summary_count()


def clean(directory: Path) -> bool:
    """Remove a cache directory; True if there was one. Refuses what mxlint did not create."""
    if not directory.is_dir():
        return False
    if not (directory / "CACHEDIR.TAG").is_file() and directory.name != DIRNAME:
        raise ValueError(f"{directory}: not an mxlint cache directory (no CACHEDIR.TAG)")
    shutil.rmtree(directory)
    return True
