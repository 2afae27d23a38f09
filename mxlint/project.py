"""Cross-file facts of one run: class ancestry, what calling a function of the run does
(`semantic.effects`), which modules other files import, and checkers' facts."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mxlint import knowledge
from mxlint.checker import FileFacts
from mxlint.context import context_for
from mxlint.names import ProjectNames
from mxlint.parsing import decode_source
from mxlint.placement import tensor_helpers
from mxlint.semantic.effects import Effects, Slot
from mxlint.semantic.program import ImportGraph, console_script_modules, import_root
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
        *,
        previous: ProjectIndex | None = None,
    ) -> None:
        """`previous`: the index of an earlier pass over mostly the same files (the language
        server's, before an edit): the parsed files and the import graph that did not change
        are taken from it instead of being built again."""
        self.files: list[FileFacts] = []
        #: Files of the run that were not parsed (`FileFacts.skimmed`), by module name.
        self._skimmed: dict[str, list[FileFacts]] = {}
        for f in facts:
            if f.skimmed:
                self._skimmed.setdefault(f.module, []).append(f)
            else:
                self.files.append(f)
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
        #: Files defining each function (scripts in different folders often share a name), and
        #: how names resolve to them: built when a finding first asks about a function.
        self._function_files: dict[str, list[FileFacts]] | None = None
        self._function_names: ProjectNames | None = None
        self._effects: dict[str, Effects | None] = {}
        self._hybridized: dict[tuple[str, Slot | None, str], bool | None] = {}
        self._imports: ImportGraph | None = None
        self._scripts: frozenset[str] = frozenset()
        #: The file whose code is being followed: a module name several folders define
        #: (each example script beside its own `models.py`) means the one beside it.
        self._near: FileFacts | None = None
        self._by_path: dict[str, FileFacts] | None = None
        self._declined: dict[str, bool] = {}
        self._any_declines: bool | None = None
        self._imports_resolved: list[set[str]] | None = None
        #: Name -> the indices (in `files`) of the files whose imports name it.
        self._importers: dict[str, list[int]] | None = None
        #: Class -> the classes that list it among their bases, in `classes` order.
        self._subclass_index: dict[str, list[str]] | None = None
        self._never: dict[str, bool] = {}
        #: class -> (what became of an object of it, the file that built it)
        self._built: dict[str, list[tuple[tuple[object, ...], FileFacts]]] | None = None
        #: `_unread_paths()`, once per index (carried to the next when the run's files are the
        #: same): `_UNSET` until asked.
        self._unread: list[str] | None | object = _UNSET
        #: Method name -> the project's methods of that name (`_methods`).
        self._method_index: dict[str, list[str]] | None = None
        #: The words and `def` names of those files (`outside_words`), read on first need.
        self._outside: tuple[frozenset[bytes], frozenset[bytes]] | None | object = _UNSET
        #: The previous pass's resolver of function names (reused when the names are the same).
        self._previous_names: ProjectNames | None = None
        #: Per file: its functions that return an array made without `ctx`.
        self._host_helpers: dict[str, frozenset[str]] = {}
        if previous is not None:
            self._reuse(previous)

    def _reuse(self, previous: ProjectIndex) -> None:
        # The same FileFacts object is the same file content (results are replaced on change).
        same = {id(f) for f in previous._every_file()} & {id(f) for f in self._every_file()}
        for f in self._every_file():
            if id(f) in same and f.path in previous._contexts:
                self._contexts[f.path] = previous._contexts[f.path]
        if previous._imports is not None and self._import_key() == previous._import_key():
            self._imports, self._scripts = previous._imports, previous._scripts
        self._previous_names = previous._function_names
        if previous._unread is not _UNSET and self._read_key() == previous._read_key():
            # The same files, parsed or skimmed alike (an edit that keeps them so): the files
            # outside the run are those the previous pass listed.
            self._unread = previous._unread

    def _read_key(self) -> frozenset[tuple[str, bool]]:
        return frozenset((f.path, f.skimmed) for f in self._every_file())

    def _every_file(self) -> Iterator[FileFacts]:
        """The facts of every file of the run, parsed (`files`) or skimmed."""
        yield from self.files
        for files in self._skimmed.values():
            yield from files

    def _import_key(self) -> list[tuple[str, str, tuple[str, ...]]]:
        return [(f.module, f.path, tuple(f.imports)) for f in self._every_file()]

    def sees_dependencies(self, facts: FileFacts) -> bool:
        """Whether every module of the project that the file of `facts` imports, itself or
        through other files of the run, is a file of this run: only then is a finding that
        needs another file known to be absent. A module of the project is one whose file
        exists beside the importing file's package (or script); others (mxnet, numpy) are
        not the project's."""
        modules = {f.module: f for f in self.files}
        seen = {facts.module}
        todo = [facts]
        while todo:
            current = todo.pop()
            root = _import_root(current)
            for name in current.imports:
                found = _run_module(name, modules)
                if found is not None:
                    if found.module not in seen:
                        seen.add(found.module)
                        todo.append(found)
                elif root is not None and _module_file_exists(root, name):
                    return False
        return True

    def skimmed_file(self, name: str) -> FileFacts | None:
        """The file of the run, not parsed for mentioning nothing of MXNet, that the function
        `name` (`pkg.helpers.norm`, `pkg.helpers.Class.method`) would be defined in: a helper
        of plain tensor arithmetic (`x.sum()`, `x.shape`) another file's code calls. Several
        files of one module name (scripts' folders): the one beside the file being followed."""
        parts = name.split(".")
        for module in (".".join(parts[:-1]), ".".join(parts[:-2])):  # a function, a method
            files = self._skimmed.get(module) if module else None
            if files:
                return self._nearest(files)[0]
        return None

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

    def hybridize_declined(self, name: str, _seen: frozenset[str] = frozenset()) -> bool:
        """Whether the project builds the class `name` only where it says `hybridize=False`
        (`FileFacts.declines_hybridize`: an estimator that trains it with
        `Trainer(hybridize=False)`): every other file that imports it declines, and at least
        one does; a class no other file imports, through each of its subclasses."""
        if name in self._declined:
            return self._declined[name]
        if self._any_declines is None:
            self._any_declines = any(f.declines_hybridize for f in self.files)
        if not self._any_declines:
            return False
        found = self._lookup(name) or name
        module = found.rsplit(".", 1)[0]
        answer = False
        if found not in _seen:
            # Files that import the class, re-exported or not, or its module.
            importers = [f for f in self._importing(found, module) if found not in f.classes]
            if importers:
                answer = all(f.declines_hybridize for f in importers)
            else:
                subclasses = self._subclasses(found)
                answer = bool(subclasses) and all(
                    self.hybridize_declined(c, _seen | {found}) for c in subclasses
                )
        self._declined[name] = answer
        return answer

    def never_hybridized(self, name: str, _seen: frozenset[str] = frozenset()) -> bool:
        """Whether no object of the class `name` can meet `hybridize()`: the run sees every
        object of it (or of a subclass) the project builds, and each is kept where it is
        built, called and never hybridized, exported or handed to code that might
        (`FileFacts.builds`), and no file outside the run names the class. A class built
        nowhere (a library's, or built by code the run does not show) is not."""
        found = self._lookup(name) or name
        if found in self._never:
            return self._never[found]
        answer = False
        if found not in _seen:
            self._never[found] = False  # asked again while being answered: a cycle
            fates = self._fates().get(found, [])
            subclasses = self._subclasses(found)
            answer = (
                bool(fates or subclasses)
                and all(self._unhybridized(fate, file) for fate, file in fates)
                and all(self.never_hybridized(c, _seen | {found}) for c in subclasses)
                and not self._named_outside(found.rsplit(".", 1)[-1])
            )
        self._never[found] = answer
        return answer

    def _fates(self) -> dict[str, list[tuple[tuple[object, ...], FileFacts]]]:
        if self._built is None:
            self._built = {}
            for f in self.files:
                for key, fates in f.builds.items():
                    entry = self._built.setdefault(self._lookup(key) or key, [])
                    entry.extend((fate, f) for fate in fates)
        return self._built

    def _unhybridized(self, fate: tuple[object, ...], file: FileFacts) -> bool:
        """Whether an object `file` built meets no `hybridize()` by that fate (a callee of
        several modules of one name is the one beside `file`, as Python imports it)."""
        if fate == ("free",):
            return True
        if len(fate) == 2 and fate[0] == "child" and isinstance(fate[1], str):
            return self.never_hybridized(fate[1])  # a child meets hybridize() with its owner
        if len(fate) == 4 and fate[0] == "hand" and fate[1] == "project":
            callee, slot = fate[2], fate[3]
            if isinstance(callee, str) and isinstance(slot, (int, str)):
                with self._following(file):
                    return self.param_hybridized(callee, slot) is False
        return False

    def _named_outside(self, name: str, *, defines: bool = False) -> bool:
        """Whether a file the run did not read names `name` as a word (with `defines`: has a
        `def name`), as far as the run can tell (a file that cannot be read might; so might one
        of more files than can be listed). Their words are read once (`outside_words`)."""
        if self._outside is _UNSET:
            self._outside = outside_words(self._unread_paths())
        words = self._outside
        if not isinstance(words, tuple):
            return True  # the files could not all be read, or are too many to
        return name.encode() in words[1 if defines else 0]

    def _unread_paths(self) -> list[str] | None:
        """The project's Python files this run did not parse: skimmed ones, and those under
        the import roots of its files on disk that it was not given (a run of some files;
        files checked from memory are a project of their own); None when there are too many
        to list."""
        if self._unread is _UNSET:
            self._unread = self._list_unread()
        return self._unread  # type: ignore[return-value]

    def _list_unread(self) -> list[str] | None:
        read = {os.path.abspath(f.path) for f in self.files}
        roots = {
            root
            for f in self.files
            if f.path not in self.sources
            and os.path.isfile(f.path)
            and (root := _import_root(f)) is not None
        }
        paths = [os.path.abspath(f.path) for files in self._skimmed.values() for f in files]
        for root in sorted(roots):
            listed = python_files_under(root)
            if listed is None:
                return None
            paths.extend(p for p in listed if p not in read)
        return list(dict.fromkeys(paths))

    def _subclasses(self, name: str) -> list[str]:
        """The classes of the project that list `name` among their bases (one reverse index
        per run, not a scan of every class for each class asked about)."""
        if self._subclass_index is None:
            index: dict[str, list[str]] = {}
            for cls, bases in self.classes.items():
                for base in dict.fromkeys(bases):
                    index.setdefault(base, []).append(cls)
            self._subclass_index = index
        return self._subclass_index.get(name, [])

    def _importing(self, *names: str) -> list[FileFacts]:
        """The files (in `files` order) whose imports name any of `names`."""
        if self._importers is None:
            importers: dict[str, list[int]] = {}
            for i, imported in enumerate(self._imported_classes()):
                for name in imported:
                    importers.setdefault(name, []).append(i)
            self._importers = importers
        hits = sorted({i for name in names for i in self._importers.get(name, ())})
        return [self.files[i] for i in hits]

    def _imported_classes(self) -> list[set[str]]:
        """What each file (in `files` order) imports, with the project class each re-exported
        name stands for."""
        if self._imports_resolved is None:
            self._imports_resolved = []
            for f in self.files:
                names = set(f.imports)
                names.update(c for c in map(self._lookup, f.imports) if c is not None)
                self._imports_resolved.append(names)
        return self._imports_resolved

    def is_library_module(self, module: str, path: str) -> bool:
        """Whether `module` is imported by another file of the run and is not installed as a
        command: a `__main__` block in it is then a smoke test, not a program."""
        if self._imports is None:
            self._imports = ImportGraph(self._import_key())
            root = self.settings.root if self.settings is not None else Path.cwd()
            self._scripts = console_script_modules(root)
        return module not in self._scripts and self._imports.is_imported(module, path)

    def effects(self, name: str, _active: frozenset[str] = frozenset()) -> Effects | None:
        """What calling the project function `name` (possibly re-exported) does, with the
        functions it calls in any file of the run; None if the run does not define it."""
        qual, files = self._function_files_of(name)
        if qual is None or qual in _active:
            return None
        memo = f"{qual}@{'|'.join(f.path for f in files)}"
        if memo in self._effects:
            return self._effects[memo]
        effects: Effects | None = None
        # A name several files define may be any of them: what one of them does, it may do.
        for file in files:
            with self._following(file):
                one = self._file_effects(file, qual, _active)
            if one is not None:
                effects = one if effects is None else effects.union(one)
        self._effects[memo] = effects
        return effects

    def _file_effects(self, file: FileFacts, qual: str, _active: frozenset[str]) -> Effects | None:
        local = qual[len(file.module) + 1 :] if file.module else qual
        if local in file.effects:
            one = file.effects[local]  # learned by an earlier run, cached with the file
        else:
            ctx = self.context(file)  # memoised
            found = ctx.effects if ctx is not None else None
            one = found.of(local) if found is not None else None
            if found is not None:
                file.effects[local] = one
        if one is None:
            return None
        for callee in one.external:
            if one.syncs:
                break
            inner = self.effects(callee, _active | {qual})
            if inner is not None:
                one = one.merged(inner)
        return one

    @contextlib.contextmanager
    def _following(self, file: FileFacts | None) -> Iterator[None]:
        outer, self._near = self._near, file
        try:
            yield
        finally:
            self._near = outer

    def _function_files_of(self, name: str) -> tuple[str | None, list[FileFacts]]:
        if self._function_files is None or self._function_names is None:
            self._function_files = {}
            for f in self.files:
                for defined in f.functions:
                    self._function_files.setdefault(defined, []).append(f)
            previous = self._previous_names
            if previous is not None and previous.names == self._function_files.keys():
                self._function_names = previous  # how names resolve depends on the names only
            else:
                self._function_names = ProjectNames(self._function_files)
        qual = self._function_names.resolve(name)
        files = self._function_files[qual] if qual is not None else []
        if qual is None:
            skimmed = self.skimmed_file(name)
            if skimmed is not None:
                qual, files = name, [skimmed]
        return qual, self._nearest(files)

    def _nearest(self, files: list[FileFacts]) -> list[FileFacts]:
        """Of several files of one module name, those Python imports from the file being
        followed: its own folder (a script's) or its package's root comes first on the path."""
        if len(files) > 1 and self._near is not None:
            root = _import_root(self._near)
            beside = [f for f in files if root is not None and _import_root(f) == root]
            if beside:
                return beside
        return files

    def result_hybridized(self, name: str) -> bool | None:
        """Whether the project function (or class) `name` returns a network hybridized on the
        way, followed through the files of the run (`FileEffects.result_hybridized`)."""
        return self._ask_hybridized(name, None)

    def param_hybridized(self, name: str, slot: Slot) -> bool | None:
        """Whether calling the project function `name` hybridizes the network in `slot`."""
        return self._ask_hybridized(name, slot)

    def method_hybridized(self, method: str) -> bool | None:
        """Whether `x.<method>(...)`, on a network of a class the caller does not know, can
        hybridize it: a method of that name of a project class that hybridizes its `self` or
        hands it on. None when a file the run did not read defines one; False when no
        class of the project defines one (then it is one of MXNet's `Block`, whose methods
        other than `hybridize`, `export` and `optimize_for` leave the block as it is)."""
        if method in knowledge.HYBRIDIZING_METHODS:
            return True
        if self._named_outside(method, defines=True):
            return None
        verdicts = [self.param_hybridized(q, 0) for q in self._methods().get(method, ())]
        if any(verdicts):
            return True
        return None if None in verdicts else False

    def _methods(self) -> dict[str, list[str]]:
        """The methods of the project's classes by their name (qualified), indexed once."""
        if self._method_index is None:
            index: dict[str, dict[str, None]] = {}
            for f in self.files:
                for qual in f.functions:
                    owner, _, name = qual.rpartition(".")
                    if owner in self.classes:
                        index.setdefault(name, {})[qual] = None
            self._method_index = {name: list(quals) for name, quals in index.items()}
        return self._method_index

    def _ask_hybridized(self, name: str, slot: Slot | None) -> bool | None:
        qual, files = self._function_files_of(name)
        is_class = False
        if qual is None:
            # A class of another file: its `__init__` (the instance is its first parameter).
            qual, files = self._function_files_of(name + ".__init__")
            is_class = qual is not None
            if not is_class and slot is None and self._lookup(name) is not None:
                return False  # a class of the run without its own `__init__`
        key = (name, slot, "|".join(f.path for f in files))
        if key in self._hybridized:
            return self._hybridized[key]
        self._hybridized[key] = None  # asked again while being answered: a cycle, unknown
        answers: list[bool | None] = []
        for file in files:
            ctx = self.context(file)
            if ctx is None or qual is None:
                answers.append(None)
                continue
            local = qual[len(file.module) + 1 :] if file.module else qual
            with self._following(file):
                if is_class:
                    at: Slot = 0 if slot is None else (slot + 1 if isinstance(slot, int) else slot)
                    answers.append(ctx.effects.param_hybridized(local, at, self))
                elif slot is None:
                    answers.append(ctx.effects.result_hybridized(local, self))
                else:
                    answers.append(ctx.effects.param_hybridized(local, slot, self))
        answer: bool | None
        if not answers:
            answer = None
        elif any(answers):
            answer = True
        elif any(a is None for a in answers):
            answer = None
        else:
            answer = False
        self._hybridized[key] = answer
        return answer

    def satisfies(self, requirement: tuple[str, str], near: str | None = None) -> bool:
        """Whether the run proves what a conditional finding requires. Kinds: `hybridblock`,
        `block` (a class's ancestry); `hybridized`, `hybridized-or-unknown` (a HybridBlock,
        or a class whose ancestry is partly unknown, that the project does not build only to
        run imperatively: `hybridize_declined`); `hybridblock-unhybridized` (a
        HybridBlock whose constructor is seen not to hybridize it); `no-sync` (none of the
        space-separated project functions synchronises); `records` (the project function
        does not run its network calls under `autograd.pause()`); `no-record` (the project
        function records nothing, as far as the run shows: what it returns is in no graph); `unhybridized` (the
        project function is known and what it returns is seen not to be hybridized on the way,
        `result_hybridized`). `near`: the file of the finding, whose imports name the
        functions (a module name several folders define means the one it imports)."""
        if near is not None:
            if self._by_path is None:
                self._by_path = {f.path: f for f in self.files}
            with self._following(self._by_path.get(near)):
                return self._satisfies(requirement)
        return self._satisfies(requirement)

    def _satisfies(self, requirement: tuple[str, str]) -> bool:
        kind, name = requirement
        if kind == "no-sync":
            for callee in name.split():
                effects = self.effects(callee)
                if effects is not None and effects.syncs:
                    return False
            return True
        if kind == "records":
            effects = self.effects(name)
            return effects is None or not effects.inference
        if kind == "no-record":
            effects = self.effects(name)
            return effects is None or not effects.records
        if kind == "unhybridized":
            return self.result_hybridized(name) is False
        if kind == "hybridblock":
            return self.is_hybrid_block(name) is True
        if kind == "hybridblock-unhybridized":
            return self.is_hybrid_block(name) is True and self.result_hybridized(name) is False
        if kind == "hybridized":
            return (
                self.is_hybrid_block(name) is True
                and not self.hybridize_declined(name)
                and not self.never_hybridized(name)
            )
        if kind == "hybridized-or-unknown":
            return (
                self.is_hybrid_block(name) is not False
                and not self.hybridize_declined(name)
                and not self.never_hybridized(name)
            )
        if kind == "block":
            return self.is_block(name) is True
        if kind == "host-array":
            return self.returns_host_array(name)
        raise ValueError(f"unknown requirement {kind!r}")

    def returns_host_array(self, name: str) -> bool:
        """Whether the project function `name` returns, on every path, an array it makes
        without `ctx` (on the default context, the cpu) and takes no context
        (`placement.tensor_helpers`), in every file of the run that defines it."""
        qual, files = self._function_files_of(name)
        if qual is None or not files:
            return False
        for file in files:
            local = qual[len(file.module) + 1 :] if file.module else qual
            if "." in local:
                return False  # a method: its object decides
            if file.path not in self._host_helpers:
                ctx = self.context(file)
                self._host_helpers[file.path] = (
                    frozenset(tensor_helpers(ctx.module, ctx.imports, ctx.code))
                    if ctx is not None
                    else frozenset()
                )
            if local not in self._host_helpers[file.path]:
                return False
        return True


def _run_module(name: str, modules: Mapping[str, FileFacts]) -> FileFacts | None:
    """The file of the run that the imported `name` (a module or a name in one) comes from."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        found = modules.get(".".join(parts[:end]))
        if found is not None:
            return found
    return None


def _import_root(facts: FileFacts) -> Path | None:
    """The directory absolute imports of the file start from (`program.import_root`)."""
    if not facts.path or not facts.module:
        return None
    return Path(import_root(facts.module, facts.path, facts.is_package))


def _module_file_exists(root: Path, name: str) -> bool:
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        base = root.joinpath(*parts[:end])
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return True
    return False


_UNSET = object()
#: A project this large is not searched for the names of its classes (`outside_words`).
MAX_UNREAD_FILES = 20_000
_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "build", "dist"})
#: The words and `def` names of the files the run does not read, by the files' (path,
#: modification time, size): a server asks again after every edit (`outside_words`).
_WORDS: dict[tuple[tuple[str, int, int], ...], tuple[frozenset[bytes], frozenset[bytes]]] = {}
_WORD = re.compile(rb"[A-Za-z_]\w*")
_DEFINED = re.compile(rb"\bdef\s+(\w+)")


def python_files_under(root: Path) -> tuple[str, ...] | None:
    """The `.py` files under `root` (absolute paths), outside hidden folders, caches and
    virtual environments; None when there are too many to list."""
    found: list[str] = []
    for top, dirs, files in os.walk(os.path.abspath(root)):
        dirs[:] = [
            d
            for d in dirs
            if not d.startswith(".")
            and d not in _SKIPPED_DIRS
            and not os.path.exists(os.path.join(top, d, "pyvenv.cfg"))
        ]
        found.extend(os.path.abspath(os.path.join(top, f)) for f in files if f.endswith(".py"))
        if len(found) > MAX_UNREAD_FILES:
            return None
    return tuple(found)


def outside_words(
    paths: Iterable[str] | None,
) -> tuple[frozenset[bytes], frozenset[bytes]] | None:
    """Every word of the files, and every name they define with `def`: read once for the
    files as they are now (a run asks about many classes and methods; a server asks again
    after each edit, of files that seldom change). None when the files cannot all be read."""
    if paths is None:
        return None
    stamps: list[tuple[str, int, int]] = []
    for path in paths:
        if len(stamps) >= MAX_UNREAD_FILES:
            return None
        try:
            stat = os.stat(path)
        except OSError:
            continue  # gone since it was listed
        stamps.append((path, stat.st_mtime_ns, stat.st_size))
    key = tuple(stamps)
    found = _WORDS.get(key)
    if found is not None:
        return found
    named: set[bytes] = set()
    defined: set[bytes] = set()
    for path, _, _ in stamps:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            return None
        named.update(_WORD.findall(data))
        defined.update(_DEFINED.findall(data))
    _WORDS.clear()  # one set of files at a time: the run's, or the server's project's
    found = _WORDS[key] = (frozenset(named), frozenset(defined))
    return found
