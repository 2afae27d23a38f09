"""Expected findings written in fixtures as `# expect: MXL101` (or `# expect: MXL101, MXL205`)
on the reported line; for text files (requirements, Dockerfile) the marker is the same comment.
Where a comment cannot end the line (a Dockerfile `ENV` instruction), `# expect-next-line:
MXL801` on the line before marks the line after it."""

from __future__ import annotations

import re
from pathlib import Path

from mxlint.api import check_paths
from mxlint.config import Settings

MARK = re.compile(r"#\s*expect(-next-line)?:\s*((?:MXL\d{3}\s*,?\s*)+)")


def expected(root: Path) -> set[tuple[str, int, str]]:
    """{(relative path, line, code)} from the markers under `root` (a file or a directory)."""
    out: set[tuple[str, int, str]] = set()
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        rel = path.relative_to(root.parent if root.is_file() else root).as_posix()
        for lineno, line in enumerate(text.splitlines(), start=1):
            m = MARK.search(line)
            if m:
                row = lineno + 1 if m.group(1) else lineno
                for code in re.findall(r"MXL\d{3}", m.group(2)):
                    out.add((rel, row, code))
    return out


def actual(
    root: Path, settings: Settings | None = None, prefix: str | None = None
) -> set[tuple[str, int, str]]:
    """{(relative path, line, code)} that mxlint reports under `root` (all rules selected)."""
    settings = settings or Settings(select=("ALL",), root=root if root.is_dir() else root.parent)
    result = check_paths([root], settings)
    base = (root if root.is_dir() else root.parent).resolve()
    out = set()
    for f in result.findings:
        if prefix and not f.code.startswith(prefix):
            continue
        rel = Path(f.filename).resolve().relative_to(base).as_posix()
        out.add((rel, f.location.row, f.code))
    return out
