"""The sync family's own checker: MXNet's profiler started and never stopped (MXL605). Each file's
profiler calls are kept as facts; whether anything stops the profiler is decided once the run
has read every file, over the file and the project modules it imports or that import it. (The
family's loop rules run in the memory family's `MemoryChecker`.)
"""

from __future__ import annotations

from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

import libcst as cst

from mxlint.checker import Checker, shortened
from mxlint.positions import node_ranges
from mxlint.rule import Finding, Location
from mxlint.rules.sync.profiler_left_running import SET_STATE, STOPS, ProfilerLeftRunning
from mxlint.semantic.program import is_test_file

if TYPE_CHECKING:
    from mxlint.checker import FileFacts
    from mxlint.project import ProjectIndex

_NAMES = frozenset({"set_state", "profiler_set_state", "dump", "dump_profile", "pause"})


class ProfilerChecker(Checker):
    rules = (ProfilerLeftRunning,)
    name = "profiler"
    cross_file = True

    def begin(self) -> None:
        self._runs: list[tuple[cst.Call, str | None]] = []
        self._stops = False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        last = func.attr.value if type(func) is cst.Attribute else None
        if type(func) is cst.Name:
            last = func.value
        if last not in _NAMES:
            return
        name = self.ctx.resolve(func)
        if name in STOPS:
            self._stops = True
        elif name in SET_STATE:
            state = _state(node)
            if state == "run":
                self._runs.append((node, self.ctx.symbol()))
            else:
                self._stops = True  # 'stop', or a state only known when it runs

    def end(self) -> None:
        if not self._runs and not self._stops:
            return
        runs: list[tuple[tuple[int, int, int, int], str, str | None]] = []
        if (
            self._runs
            and self.ctx.settings.enabled(ProfilerLeftRunning, self.ctx.path)
            and not is_test_file(self.ctx.settings.relative(self.ctx.path))
        ):
            ranges = node_ranges(self.ctx.module, [c for c, _ in self._runs], self.ctx.source)
            for call, symbol in self._runs:
                rng = ranges.get(call)
                if rng is None:
                    continue
                (sl, sc), (el, ec) = rng
                runs.append(((sl, sc + 1, el, ec + 1), shortened(self.ctx.code(call)), symbol))
        self.ctx.facts.checker_facts[self.name] = {"runs": runs, "stops": self._stops}

    @classmethod
    def finalize(cls, project: ProjectIndex) -> list[Finding]:
        files = [f for f in project.files if cls.name in f.checker_facts]
        stopping = [f for f in files if _facts(f).get("stops")]
        modules = {f.module for f in project.files}
        out: list[Finding] = []
        for f in files:
            facts = _facts(f)
            if facts.get("stops") or not facts.get("runs"):
                continue
            if any(_neighbours(f, g) for g in stopping):
                continue
            if _unread_neighbour(f, modules):
                continue  # a module of the project the run did not read may stop it
            for span, expr, symbol in facts["runs"]:
                sl, sc, el, ec = span
                out.append(
                    Finding(
                        ProfilerLeftRunning.code,
                        ProfilerLeftRunning.format(expr=expr),
                        f.path,
                        Location(sl, sc),
                        Location(el, ec),
                        symbol=symbol,
                    )
                )
        return out


def _facts(f: FileFacts) -> dict[str, Any]:
    facts = f.checker_facts.get(ProfilerChecker.name)
    return facts if isinstance(facts, dict) else {}


def _state(call: cst.Call) -> str | None:
    """The literal `state` of `set_state(...)`: its first positional argument or `state=`
    (`'stop'` when given none, as MXNet's default)."""
    for i, arg in enumerate(call.args):
        if (arg.keyword is None and i == 0) or (
            arg.keyword is not None and arg.keyword.value == "state"
        ):
            value = arg.value
            if isinstance(value, (cst.SimpleString, cst.ConcatenatedString)):
                text = value.evaluated_value
                return text if isinstance(text, str) else None
            return None
    return "stop"


def _imports(importer: FileFacts, module: FileFacts) -> bool:
    """Whether `importer` imports `module` (a top-level module only from its own folder, where
    Python finds it)."""
    name = module.module
    if not name or importer is module:
        return False
    if not any(i == name or i.startswith(name + ".") for i in importer.imports):
        return False
    return "." in name or PurePath(importer.path).parent == PurePath(module.path).parent


def _neighbours(a: FileFacts, b: FileFacts) -> bool:
    return _imports(a, b) or _imports(b, a)


def _unread_neighbour(f: FileFacts, modules: set[str]) -> bool:
    """`f` imports a module of its project that the run did not read (one file checked alone:
    flake8, an editor) and whose text mentions the profiler: it may stop it. A module the run
    skipped as showing no sign of MXNet cannot."""
    root = Path(f.path).parent
    for _ in range(f.module.count(".")):
        root = root.parent
    for name in f.imports:
        parts = name.split(".")
        prefixes = [".".join(parts[:i]) for i in range(len(parts), 0, -1)]
        if any(prefix in modules for prefix in prefixes):
            continue
        for prefix in prefixes:
            base = root.joinpath(*prefix.split("."))
            for candidate in (base.with_suffix(".py"), base / "__init__.py"):
                if candidate.is_file():
                    return _mentions_profiler(candidate)
    return False


def _mentions_profiler(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            text = handle.read(1_000_000)
    except OSError:
        return True  # unreadable: it may
    return "profiler" in text or "set_state" in text
