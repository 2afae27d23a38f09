"""Cross-file facts: class ancestry across the files of one run, and checker facts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mxlint import knowledge
from mxlint.checker import FileFacts
from mxlint.context import context_for
from mxlint.names import ProjectNames
from mxlint.parsing import decode_source
from mxlint.settings import Settings

if TYPE_CHECKING:
    from mxlint.checker import FileContext


class ProjectIndex:
    """All files' facts, queried after every file has been read once."""

    def __init__(
        self,
        facts: Iterable[FileFacts],
        settings: Settings | None = None,
        sources: Mapping[str, str] | None = None,
    ) -> None:
        self.files: list[FileFacts] = list(facts)
        self.settings = settings
        #: Text of files that are not (or not yet) on disk, by path: in-memory checks.
        self.sources = dict(sources or {})
        self._contexts: dict[str, FileContext | None] = {}
        self.classes: dict[str, list[str]] = {}
        for f in self.files:
            self.classes.update(f.classes)
        self._class_names = ProjectNames(self.classes)
        self._hybrid: dict[str, bool | None] = {}
        self._block: dict[str, bool | None] = {}

    def checker_facts(self, checker: str) -> list[tuple[str, object]]:
        """(module, facts) of one checker, for every file that has some."""
        return [
            (f.module, f.checker_facts[checker]) for f in self.files if checker in f.checker_facts
        ]

    def context(self, facts: FileFacts) -> FileContext | None:
        """A file of the run parsed again (memoised), for analyses that need its tree only when
        another file turns out to call into it; None if it cannot be read or parsed now."""
        if facts.path in self._contexts:
            return self._contexts[facts.path]
        ctx = None
        if facts.path in self.sources:
            ctx = context_for(facts, self.sources[facts.path], self.settings or Settings())
        elif facts.path.endswith((".py", ".pyi")):
            try:
                source = decode_source(Path(facts.path).read_bytes())
            except (OSError, UnicodeDecodeError, SyntaxError, LookupError):
                source = None
            if source is not None:
                ctx = context_for(facts, source, self.settings or Settings())
        self._contexts[facts.path] = ctx
        return ctx

    def _lookup(self, name: str) -> str | None:
        """The project class a (possibly re-exported) name refers to."""
        return self._class_names.resolve(name)

    def _classify(
        self,
        name: str,
        targets: frozenset[str],
        negatives: frozenset[str],
        memo: dict[str, bool | None],
        seen: frozenset[str] = frozenset(),
    ) -> bool | None:
        """True if `name` derives from `targets`, False if only from known non-targets,
        None if some base is outside what this run can see."""
        if name in memo:
            return memo[name]
        canon = knowledge.canonical(name)
        if canon in targets:
            return True
        if canon in negatives or canon in ("object", "builtins.object"):
            return False
        found = self._lookup(name)
        if found is None or found in seen:
            return None
        answer: bool | None = False
        for base in self.classes[found]:
            verdict = self._classify(base, targets, negatives, memo, seen | {found})
            if verdict:
                answer = True
                break
            if verdict is None:
                answer = None
        memo[name] = answer
        return answer

    def is_hybrid_block(self, name: str) -> bool | None:
        return self._classify(
            name, knowledge.HYBRID_BLOCK_CLASSES, knowledge.PLAIN_BLOCK_CLASSES, self._hybrid
        )

    def is_block(self, name: str) -> bool | None:
        return self._classify(
            name,
            knowledge.HYBRID_BLOCK_CLASSES | knowledge.PLAIN_BLOCK_CLASSES,
            frozenset(),
            self._block,
        )

    def satisfies(self, requirement: tuple[str, str]) -> bool:
        kind, name = requirement
        if kind == "hybridblock":
            return self.is_hybrid_block(name) is True
        if kind == "hybridblock-or-unknown":
            return self.is_hybrid_block(name) is not False
        if kind == "block":
            return self.is_block(name) is True
        raise ValueError(f"unknown requirement {kind!r}")
