"""Lines another finding's line kept a program from reaching: the program runs again with that
earlier line skipped. Three exports in one function, the first raising, leave the other two
unreached; each is then shown to fail by itself."""

from __future__ import annotations

import ast
from collections.abc import Iterable


def skip_statements(source: str, lines: Iterable[int]) -> tuple[str, list[int]]:
    """`source` with the statements starting on `lines` replaced by `pass`, where each is a
    call whose value is not used (`net.export(...)`), alone on its lines: removing it changes
    nothing else the program computes. Line numbers stay as they were. Returns the text and the
    lines actually skipped."""
    wanted = set(lines)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    out = source.splitlines(keepends=True)
    statements = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    skipped: list[int] = []
    for node in statements:
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
            continue
        if node.lineno not in wanted or node.end_lineno is None:
            continue
        first, last = node.lineno, node.end_lineno
        shares = any(
            other is not node
            and not _contains(other, node)
            and other.lineno <= last
            and (other.end_lineno or other.lineno) >= first
            for other in statements
        )
        indent = out[first - 1][: node.col_offset]
        if shares or indent.strip():
            continue
        out[first - 1] = f"{indent}pass\n"
        for index in range(first, last):
            out[index] = "\n"
        skipped.append(first)
    return "".join(out), sorted(skipped)


def _contains(outer: ast.stmt, inner: ast.stmt) -> bool:
    return any(n is inner for n in ast.walk(outer))
