"""Whether importing a package runs `import mxnet`: the packages beside a metadata file (setup.py,
setup.cfg, pyproject.toml), their `__init__.py` and the modules it imports at top level, read
with `ast` (never imported).

Only module-level imports count: an `import mxnet` inside `try:`, a function or a framework
module the package does not import itself (d2l's `d2l/mxnet.py`) makes MXNet optional, which a
package may leave undeclared.
"""

from __future__ import annotations

import ast
import os
import warnings
from dataclasses import dataclass

#: Directories beside a metadata file that hold no installed package.
_NOT_PACKAGES = frozenset(
    {
        "benchmark",
        "benchmarks",
        "build",
        "ci",
        "dist",
        "doc",
        "docs",
        "example",
        "examples",
        "script",
        "scripts",
        "test",
        "tests",
        "tools",
    }
)
_MAX_MODULES = 2000
_MAX_BYTES = 1_000_000


@dataclass(frozen=True)
class MxnetImport:
    """Where importing `package` imports mxnet."""

    package: str
    path: str
    line: int


def mxnet_import(directory: str) -> MxnetImport | None:
    """The first module-level `import mxnet` that `import <package>` runs, for the packages in
    `directory` (where the metadata file is) or its `src/`."""
    for root in (directory, os.path.join(directory, "src")):
        try:
            names = sorted(os.listdir(root or "."))
        except OSError:
            continue
        for name in names:
            if name in _NOT_PACKAGES or not name.isidentifier():
                continue
            if os.path.isfile(os.path.join(root, name, "__init__.py")):
                found = _imports_mxnet(root, name)
                if found is not None:
                    return found
    return None


def _imports_mxnet(root: str, package: str) -> MxnetImport | None:
    todo = [package]
    seen = {package}
    while todo and len(seen) <= _MAX_MODULES:
        module = todo.pop(0)
        path = _module_file(root, module)
        tree = _parse(path) if path else None
        if path is None or tree is None:
            continue
        is_init = path.endswith("__init__.py")
        for stmt in tree.body:  # module level only: `try:`/`if` imports are optional
            for target, line in _imported(stmt, module, is_init):
                if target == "mxnet" or target.startswith("mxnet."):
                    return MxnetImport(package, path, line)
                if target == package or target.startswith(package + "."):
                    parts = target.split(".")
                    for end in range(2, len(parts) + 1):  # `a.b.c` runs `a/b/__init__.py`
                        name = ".".join(parts[:end])
                        if name not in seen:
                            seen.add(name)
                            todo.append(name)
    return None


def _imported(stmt: ast.stmt, module: str, is_init: bool) -> list[tuple[str, int]]:
    """The modules a module-level statement imports (`from .x import y`: `pkg.x` and, if it
    is one, the submodule `pkg.x.y`)."""
    if isinstance(stmt, ast.Import):
        return [(alias.name, stmt.lineno) for alias in stmt.names]
    if not isinstance(stmt, ast.ImportFrom):
        return []
    if stmt.level:
        package = module if is_init else module.rpartition(".")[0]
        parts = package.split(".")
        if stmt.level > 1:
            parts = parts[: len(parts) - stmt.level + 1]
        base = ".".join([*parts, stmt.module] if stmt.module else parts)
    else:
        base = stmt.module or ""
    return [(base, stmt.lineno)] + [(f"{base}.{alias.name}", stmt.lineno) for alias in stmt.names]


def _module_file(root: str, module: str) -> str | None:
    base = os.path.join(root, *module.split("."))
    for candidate in (os.path.join(base, "__init__.py"), base + ".py"):
        if os.path.isfile(candidate):
            return candidate
    return None


def _parse(path: str) -> ast.Module | None:
    try:
        if os.path.getsize(path) > _MAX_BYTES:
            return None
        with open(path, "rb") as handle, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in old code: not ours to report
            return ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return None
