"""From findings to verify tasks: which block or script to run, how, and for which findings.

Hybridization findings (and context findings inside a block's forward) become one *block* task
per class; the other runtime families become *script* tasks on the entry script that runs the
flagged code. Everything here is static (the `ast` module); nothing imports user code.
"""

from __future__ import annotations

import ast
import contextlib
import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mxlint import registry
from mxlint.argparse_options import argument_calls
from mxlint.rule import Finding, FindingKey, Runtime
from mxlint.verify import callsites, targets


def runtime(code: str) -> Runtime | None:
    """How a finding of `code` is proven: its rule's declared `runtime` (None: static only)."""
    rule = registry.get_rule(code)
    return rule.runtime if rule is not None else None


@dataclass
class Item:
    """One finding under verification: its index in the run's finding list and where it is."""

    index: int
    finding: Finding
    path: str  # real path
    line: int
    #: The function or method holding the line (targets.Target.to_json()), if any.
    target: dict[str, Any] | None = None
    #: The program that writes the file the line reads, run first (`writer_run`), if any.
    writer: dict[str, Any] | None = None

    @property
    def key(self) -> FindingKey:
        """What the finding's verdict is kept under."""
        return self.finding.key()


@dataclass
class Task:
    kind: str  # "block" | "script" | "launch"
    key: str
    items: list[Item]
    job: dict[str, Any]
    #: For script tasks: the finding file when it is not the script itself.
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Skipped:
    item: Item
    reason: str


def module_of(path: Path) -> tuple[str, list[str]]:
    """Dotted module name of a file and the sys.path roots that make it importable."""
    path = path.resolve()
    parts = [path.stem]
    directory = path.parent
    while (directory / "__init__.py").is_file():
        parts.insert(0, directory.name)
        directory = directory.parent
    roots = [str(directory)]
    if str(path.parent) not in roots:
        roots.append(str(path.parent))
    return ".".join(parts), roots


#: Source text of the files parsed by `_parse` (a quick test before walking a tree).
_TEXTS: dict[Path, str] = {}


def _parse(path: Path, cache: dict[Path, ast.Module | None]) -> ast.Module | None:
    if path not in cache:
        try:
            text = path.read_text(encoding="utf-8")
            cache[path] = ast.parse(text)
            _TEXTS[path] = text
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            cache[path] = None
    return cache[path]


def enclosing_class(tree: ast.Module, line: int) -> str | None:
    """Dotted name of the innermost class (nested in classes only) whose body holds `line`."""
    best: str | None = None

    def walk(body: list[ast.stmt], prefix: str) -> None:
        nonlocal best
        for node in body:
            if isinstance(node, ast.ClassDef):
                end = node.end_lineno or node.lineno
                if node.lineno <= line <= end:
                    best = prefix + node.name
                    walk(node.body, prefix + node.name + ".")

    walk(tree.body, "")
    return best


def is_runnable(tree: ast.Module) -> bool:
    """A script: a `__main__` guard or top-level statements that do work."""
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return True
        if isinstance(node, (ast.Expr, ast.For, ast.While, ast.With)) and not (
            isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        ):
            return True
    return False


def _literal(node: ast.expr) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return False, None


def constructor_args(
    cls: str, sources: list[Path], cache: dict[Path, ast.Module | None]
) -> dict[str, Any] | None:
    """Literal arguments from the first place the project itself instantiates `cls`."""
    name = cls.rsplit(".", 1)[-1]
    for path in sources:
        tree = _parse(path, cache)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            called = (
                func.id
                if isinstance(func, ast.Name)
                else (func.attr if isinstance(func, ast.Attribute) else None)
            )
            if called != name or not (node.args or node.keywords):
                continue
            args, kwargs, ok = [], {}, True
            for a in node.args:
                good, value = _literal(a)
                ok = ok and good and not isinstance(a, ast.Starred)
                args.append(value)
            for kw in node.keywords:
                good, value = _literal(kw.value)
                ok = ok and good and kw.arg is not None
                kwargs[kw.arg or ""] = value
            if ok:
                return {"args": args, "kwargs": kwargs}
    return None


def call_inputs(
    cls: str, sources: list[Path], cache: dict[Path, ast.Module | None], limit: int = 3
) -> list[list[dict[str, Any]]]:
    """Literal inputs the project calls `cls` with (its scripts, tests, `__main__` blocks)."""
    name = cls.rsplit(".", 1)[-1]
    found: list[list[dict[str, Any]]] = []
    for path in sources:
        tree = _parse(path, cache)
        if tree is None or name not in _TEXTS.get(path, ""):
            continue
        for inputs in callsites.block_inputs(name, tree):
            if inputs not in found:
                found.append(inputs)
            if len(found) >= limit:
                return found
    return found


def rng_of(source_line: str, code: str) -> str:
    """Which RNG a seed finding is about, from the flagged line."""
    text = source_line.replace(" ", "")
    if "mx.random" in text or "nd.random" in text or "mxnet.random" in text:
        return "mxnet"
    if (
        "np.random" in text
        or "numpy" in text
        or "DataLoader" in text
        or "shuffle=" in text
        or "Sampler" in text
    ):
        return "numpy"
    if code == "MXL303" or "random." in text:
        return "random"
    return "numpy"


def _config_for(cls: str, table: dict[str, Any]) -> dict[str, Any]:
    blocks = table.get("blocks", {})
    entry = blocks.get(cls) or blocks.get(cls.rsplit(".", 1)[-1]) or {}
    return entry if isinstance(entry, dict) else {}


def build(
    findings: list[Finding], scripts: list[Path], options: dict[str, Any]
) -> tuple[list[Task], list[Skipped]]:
    """Group findings into tasks. `scripts` are the run's Python files (entry candidates)."""
    cache: dict[Path, ast.Module | None] = {}
    _TEXTS.clear()
    tasks: dict[str, Task] = {}
    skipped: list[Skipped] = []
    sources = [p.resolve() for p in scripts]
    config = options.get("config", {})
    for index, finding in enumerate(findings):
        path = Path(finding.filename).resolve()
        item = Item(index, finding, str(path), finding.location.row)
        code = finding.code
        how = runtime(code)
        if how is not None and how.check == "static":
            skipped.append(Skipped(item, f"{code} has no runtime check: {how.reason}"))
            continue
        if how is None:
            skipped.append(
                Skipped(
                    item,
                    f"{code} has no runtime check; "
                    + (
                        "see `mxlint doctor`"
                        if code.startswith("MXL5")
                        else "the finding is static only"
                    ),
                )
            )
            continue
        if finding.cell is not None:
            skipped.append(Skipped(item, "notebook cells are not run by --verify"))
            continue
        rule = registry.get_rule(code)
        if how.check == "dist" and rule is not None and rule.kind == "launch":
            # A launch file's finding: the job it describes is started, not a program.
            key = f"launch:{path}:{item.line}:{finding.location.column}"
            tasks[key] = Task("launch", key, [item], {"kind": "launch"})
            continue
        if path.suffix != ".py":
            skipped.append(
                Skipped(
                    item,
                    f"{path.name} is not a Python program: the finding shows when the image or "
                    "launch script it describes runs; --verify runs Python entry scripts",
                )
            )
            continue
        tree = _parse(path, cache)
        if tree is None:
            skipped.append(Skipped(item, "the file does not parse"))
            continue
        cls = enclosing_class(tree, item.line)
        if how.check == "onnx":
            found = _onnx_task(item, cls, tasks, sources, cache, config)
            if isinstance(found, Skipped):
                skipped.append(found)
            continue
        if how.check == "hybrid" or (how.in_block and cls):
            if cls is None:
                data_cls = finding.data.get("class") if finding.data else None
                if not isinstance(data_cls, str):
                    skipped.append(Skipped(item, "not inside a class: no block to run"))
                    continue
                cls = data_cls.rsplit(".", 1)[-1]
            mode = "hybrid" if how.check == "hybrid" else "context"
            key = f"block:{path}:{cls}:{mode}"
            task = tasks.get(key)
            if task is None:
                module, roots = module_of(path)
                conf = _config_for(cls, config)
                ctor = conf.get("args") and {
                    "args": conf.get("args", []),
                    "kwargs": conf.get("kwargs", {}),
                }
                if not ctor and conf.get("kwargs"):
                    ctor = {"args": [], "kwargs": conf["kwargs"]}
                job = {
                    "kind": "block",
                    "file": str(path),
                    "module": module,
                    "roots": roots,
                    "class": cls,
                    "mode": mode,
                    "ctx_map": mode == "context",
                    "ctor": ctor or constructor_args(cls, sources, cache),
                    "input_shapes": conf.get("input-shapes") or conf.get("input_shapes"),
                    "call_inputs": call_inputs(cls, sources, cache),
                    "lines": [],
                    "state": False,
                }
                task = tasks[key] = Task("block", key, [], job)
            task.items.append(item)
            task.job["lines"].append([str(path), item.line])
            task.job["state"] = task.job["state"] or "state" in how.shows
            continue
        holder = targets.enclosing(tree, item.line)
        item.target = holder.to_json() if holder is not None else None
        item.writer = writer_run(item, tree, sources, cache, config)
        script = path if is_runnable(tree) else _entry_for(path, sources, cache)
        if script is None:
            if item.target is None:
                skipped.append(
                    Skipped(item, "module-level code of a file no entry script of the run runs")
                )
                continue
            key = f"call:{path}:{item.target['qualname']}"
            task = tasks.get(key)
            if task is None:
                task = tasks[key] = Task("script", key, [item], call_job([item], options))
            else:
                task.items.append(item)
                add_watch(task.job, item)
            continue
        key = f"script:{script}"
        task = tasks.get(key)
        if task is None:
            _module, roots = module_of(script)
            job = {
                "kind": "script",
                "file": str(script),
                "roots": roots,
                "steps": int(options.get("steps", 8)),
                "ctx_map": True,
                "argv": argv_for(script, config),
                "watch": [],
                "trace_files": [],
                "contexts": False,
                "ctx_exprs": [],
            }
            task = tasks[key] = Task("script", key, [], job)
        task.items.append(item)
        add_watch(task.job, item)
        flags = guard_flags(tree, item.line, _parse(script, cache))
        task.job["argv"] += [f for f in flags if f not in task.job["argv"]]
    return list(tasks.values()), skipped


def statement_span(path: str, line: int) -> tuple[int, int]:
    """The lines of the simple statement that holds `line` (a call written over several
    lines runs its line events on each of them)."""
    tree = _parse(Path(path), {})
    best = (line, line)
    if tree is None:
        return best
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        ):
            continue
        start, end = node.lineno, getattr(node, "end_lineno", None) or node.lineno
        compound = hasattr(node, "body") and isinstance(node.body, list)
        if compound:  # a loop's or with's header only
            first = node.body[0].lineno if node.body else end + 1  # type: ignore[attr-defined]
            end = first - 1
        if start <= line <= end and (best == (line, line) or end - start < best[1] - best[0]):
            best = (start, end)
    return best


def add_watch(job: dict[str, Any], item: Item) -> None:
    """Watch the item's line (and trace its file) in a script or call job."""
    job["watch"].append([item.path, item.line])
    if item.path != job["file"] and item.path not in job["trace_files"]:
        job["trace_files"].append(item.path)
    how = runtime(item.finding.code)
    if how is not None and how.check == "context":
        job["contexts"] = True
    if how is not None and how.loud and how.error and how.error not in job.setdefault("expect", []):
        job["expect"].append(how.error)
    ctx = (item.finding.data or {}).get("ctx")
    if isinstance(ctx, str) and ctx not in job["ctx_exprs"]:
        job["ctx_exprs"].append(ctx)
    if item.writer is not None and item.writer not in job.setdefault("before", []):
        job["before"].append(item.writer)


def writer_run(
    item: Item,
    tree: ast.Module,
    sources: list[Path],
    cache: dict[Path, ast.Module | None],
    config: dict[str, Any],
) -> dict[str, Any] | None:
    """The program to run before the one that reaches a line reading a model file, when the
    finding names the line that writes the file (MXL704, MXL705): the writer's script with its
    configured arguments, in the same working directory, so the line reads what the writer
    wrote (a missing file would otherwise get a stand-in in another format). None when the
    writer runs before the reader in the same function anyway, or no script runs it."""
    written = (item.finding.data or {}).get("writer")
    if not isinstance(written, dict):
        return None
    path, line = Path(str(written.get("path", ""))).resolve(), written.get("line")
    if not isinstance(line, int):
        return None
    if item.target is not None and path == Path(item.path) and line < item.line:
        holder = targets.enclosing(tree, line)
        if holder is not None and holder.qualname == item.target["qualname"]:
            return None
    writer_tree = _parse(path, cache)
    if writer_tree is None:
        return None
    script = path if is_runnable(writer_tree) else _entry_for(path, sources, cache)
    if script is None:
        return None
    _module, roots = module_of(script)
    return {
        "file": str(script),
        "roots": roots,
        "argv": argv_for(script, config),
        "line": line,
        "writer": str(path),
    }


def call_job(items: list[Item], options: dict[str, Any]) -> dict[str, Any]:
    """A job calling the function that holds these items' lines (all in one function)."""
    first = items[0]
    assert first.target is not None
    module, roots = module_of(Path(first.path))
    job: dict[str, Any] = {
        "kind": "call",
        "file": first.path,
        "module": module,
        "roots": roots,
        "target": first.target,
        "steps": int(options.get("steps", 8)),
        "ctx_map": True,
        "watch": [],
        "trace_files": [],
        "contexts": False,
        "ctx_exprs": [],
    }
    for item in items:
        add_watch(job, item)
    return job


def argv_for(script: Path, config: dict[str, Any]) -> list[str]:
    """Command-line arguments for a script: `argv` for every script, then those of the
    `[tool.mxlint.verify.scripts."<name or glob>"]` tables that match it."""
    argv = [str(a) for a in config.get("argv", [])]
    table = config.get("scripts", {})
    if isinstance(table, dict):
        for pattern, entry in table.items():
            if not isinstance(entry, dict):
                continue
            if script.name == pattern or fnmatch.fnmatch(str(script), f"*{pattern}"):
                argv += [str(a) for a in entry.get("argv", [])]
    return argv


def guard_flags(tree: ast.Module, line: int, script: ast.Module | None) -> list[str]:
    """`--flag`s of the script's argparse parser (`store_true` options) that the `if args.X:`
    tests around `line` need, so the run reaches it (`--amp` for `if args.amp: amp.init()`)."""
    if script is None:
        return []
    dests: set[str] = set()

    def walk(body: list[ast.stmt]) -> None:
        for node in body:
            end = getattr(node, "end_lineno", None) or node.lineno
            if not node.lineno <= line <= end:
                continue
            if isinstance(node, ast.If) and any(
                s.lineno <= line <= (getattr(s, "end_lineno", None) or s.lineno) for s in node.body
            ):
                test = node.test
                if isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name):
                    dests.add(test.attr)
            for field_name in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field_name, None)
                if isinstance(inner, list):
                    walk(inner)

    walk(tree.body)
    flags = []
    for options, keywords in argument_calls(script):
        action = keywords.get("action")
        if not (isinstance(action, ast.Constant) and action.value == "store_true"):
            continue
        long = next((o for o in options if o.startswith("--")), None)
        dest = keywords.get("dest")
        name = (
            dest.value
            if isinstance(dest, ast.Constant)
            else (long[2:].replace("-", "_") if long else None)
        )
        if name in dests and long:
            flags.append(long)
    return flags


def _onnx_task(
    item: Item,
    cls: str | None,
    tasks: dict[str, Task],
    sources: list[Path],
    cache: dict[Path, ast.Module | None],
    config: dict[str, Any],
) -> Task | Skipped:
    """An ONNX finding's block task: the class holding the operator, or the exported block's
    class (in the file that defines it) for a finding on the export call's arguments."""
    data = item.finding.data or {}
    export = bool(data.get("export"))
    path = Path(item.path)
    keywords = data.get("keywords")
    if isinstance(keywords, dict):
        # A keyword the exporter has no parameter for: MXNet's exporter is called with it on
        # a one-operator graph; no block of the project is needed.
        key = f"onnx-keywords:{path}:{item.line}:{item.finding.location.column}"
        module, roots = module_of(path)
        job = {
            "kind": "block",
            "file": str(path),
            "module": module,
            "roots": roots,
            "class": "",
            "mode": "onnx",
            "ctx_map": False,
            "keywords": keywords,
            "callee": data.get("callee", ""),
        }
        made = tasks[key] = Task("block", key, [item], job)
        return made
    if export or cls is None:
        named = data.get("class")
        where = data.get("class_file")
        if not isinstance(named, str) or not isinstance(where, str):
            return Skipped(item, "the exported block is not a class of the run: nothing to build")
        cls, path = named.rsplit(".", 1)[-1], Path(where).resolve()
    # Each export call is converted with its own arguments: one task per call site.
    key = f"block:{path}:{cls}:onnx" + (f"-call:{item.path}:{item.line}" if export else "")
    task = tasks.get(key)
    if task is None:
        module, roots = module_of(path)
        conf = _config_for(cls, config)
        ctor = conf.get("args") or conf.get("kwargs")
        job = {
            "kind": "block",
            "file": str(path),
            "module": module,
            "roots": roots,
            "class": cls,
            "mode": "onnx",
            "ctx_map": False,
            "ctor": {"args": conf.get("args", []), "kwargs": conf.get("kwargs", {})}
            if ctor
            else constructor_args(cls, sources, cache),
            "input_shapes": conf.get("input-shapes") or conf.get("input_shapes"),
            "onnx": data.get("onnx") or {},
            "export": export,
        }
        task = tasks[key] = Task("block", key, [], job)
    task.items.append(item)
    return task


def _entry_for(
    path: Path, sources: list[Path], cache: dict[Path, ast.Module | None]
) -> Path | None:
    """A runnable file of the run that imports the module defined in `path`."""
    module, _ = module_of(path)
    names = {module, module.rsplit(".", 1)[-1]}
    for candidate in sources:
        if candidate == path:
            continue
        tree = _parse(candidate, cache)
        if tree is None or not is_runnable(tree):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                if (
                    node.module in names
                    or node.module.rsplit(".", 1)[-1] in names
                    or any(a.name in names for a in node.names)
                ):
                    return candidate
            elif isinstance(node, ast.Import) and any(a.name in names for a in node.names):
                return candidate
    return None


def shard(tasks: list[Task], index: int, total: int) -> list[Task]:
    """Tasks for CI job `index` of `total` (1-based): every job computes the same task list from
    the same checkout, orders it by a machine-independent key and takes every `total`-th task,
    so shards are disjoint, cover everything and differ in size by at most one."""

    def rel(key: str) -> str:
        kind, _, rest = key.partition(":")
        with contextlib.suppress(ValueError):
            rest = os.path.relpath(rest.split(":", 1)[0]) + rest[len(rest.split(":", 1)[0]) :]
        return f"{kind}:{rest}"

    ordered = sorted(tasks, key=lambda t: rel(t.key))
    return ordered[index - 1 :: total]
