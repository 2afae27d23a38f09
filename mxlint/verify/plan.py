"""From findings to verify tasks: which block or script to run, how, and for which findings.

Hybridization findings (and context findings inside a block's forward) become one *block* task
per class; the other runtime families become *script* tasks on the entry script that runs the
flagged code. Everything here is static (the `ast` module); nothing imports user code.
"""

from __future__ import annotations

import ast
import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mxlint import registry
from mxlint.rule import Finding, FindingKey, Runtime


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


def _parse(path: Path, cache: dict[Path, ast.Module | None]) -> ast.Module | None:
    if path not in cache:
        try:
            cache[path] = ast.parse(path.read_text(encoding="utf-8"))
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
                }
                task = tasks[key] = Task("block", key, [], job)
            task.items.append(item)
            continue
        script = path if is_runnable(tree) else _entry_for(path, sources, cache)
        if script is None:
            skipped.append(Skipped(item, "no entry script in the run executes this file"))
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
                "argv": list(config.get("argv", [])),
                "watch": [],
                "trace_files": [],
            }
            task = tasks[key] = Task("script", key, [], job)
        task.items.append(item)
        task.job["watch"].append([str(path), item.line])
        if str(path) != str(script) and str(path) not in task.job["trace_files"]:
            task.job["trace_files"].append(str(path))
    return list(tasks.values()), skipped


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
    if export or cls is None:
        named = data.get("class")
        where = data.get("class_file")
        if not isinstance(named, str) or not isinstance(where, str):
            return Skipped(item, "the exported block is not a class of the run: nothing to build")
        cls, path = named.rsplit(".", 1)[-1], Path(where).resolve()
    key = f"block:{path}:{cls}:onnx" + ("-call" if export else "")
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
