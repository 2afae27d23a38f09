"""Output formats: concise, full, json, sarif, github, and --statistics.

`json` is a contract (Ruff's shape, consumed by --verify and CI tools); `sarif` is SARIF 2.1.0
as GitHub code scanning reads it. Every renderer returns the whole text, so machine formats can
be written to stdout or `-o FILE` without anything else mixed in.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mxlint import __version__, registry
from mxlint.rule import Edit, Finding, Fix, Rule
from mxlint.style import PLAIN, Style

if TYPE_CHECKING:
    from mxlint.notebooks import Notebook

FORMATS = ("concise", "full", "json", "sarif", "github")
MACHINE_FORMATS = frozenset({"json", "sarif", "github"})
ENV_VAR = "MXLINT_OUTPUT_FORMAT"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _edit_json(e: Edit) -> dict[str, Any]:
    out: dict[str, Any] = {
        "content": e.content,
        "location": {"row": e.location.row, "column": e.location.column},
        "end_location": {"row": e.end_location.row, "column": e.end_location.column},
    }
    if e.cell is not None:  # a notebook: rows are relative to this cell
        out["cell"] = e.cell
    return out


def _fix_json(fix: Fix | None) -> dict[str, Any] | None:
    if fix is None:
        return None
    return {
        "applicability": fix.applicability,
        "message": fix.message,
        "edits": [_edit_json(e) for e in fix.edits],
    }


def verify_json(f: Finding) -> dict[str, Any] | None:
    """The `verify` object `mxlint --verify` attached to a finding (None when verify did not run)."""
    return f.verification


def finding_json(f: Finding) -> dict[str, Any]:
    out = {
        "cell": f.cell,
        "code": f.code,
        "end_location": {"row": f.end_location.row, "column": f.end_location.column},
        "filename": f.filename,
        "fix": _fix_json(f.fix),
        "location": {"row": f.location.row, "column": f.location.column},
        "message": f.message,
        "noqa_row": f.location.row,
        "url": f.url,
    }
    verify = verify_json(f)
    if verify is not None:
        out["verify"] = verify
    return out


def render_json(findings: Sequence[Finding]) -> str:
    import json  # the machine formats only

    return json.dumps([finding_json(f) for f in findings], indent=2) + "\n"


def _marker(f: Finding, unsafe: bool) -> str:
    if f.fix is None:
        return ""
    if f.fix.applicability == "safe" or (unsafe and f.fix.applicability == "unsafe"):
        return " [*]"
    return ""


def where(f: Finding) -> str:
    """`row:col`, or `cell N:row:col` in a notebook (Ruff's notation)."""
    cell = f"cell {f.cell}:" if f.cell is not None else ""
    return f"{cell}{f.location.row}:{f.location.column}"


def _header(f: Finding, unsafe: bool, style: Style) -> str:
    """`path:row:col: CODE [*] message` (`path:cell N:row:col: ...` in a notebook)."""
    sep = style.sep
    cell = f"cell {f.cell}{sep}" if f.cell is not None else ""
    marker = f" {style.fix_marker}" if _marker(f, unsafe) else ""
    return (
        f"{style.path(f.filename)}{sep}{cell}{f.location.row}{sep}{f.location.column}{sep} "
        f"{style.code(f.code)}{marker} {f.message}"
    )


def render_concise(findings: Sequence[Finding], unsafe: bool = False, style: Style = PLAIN) -> str:
    lines = [_header(f, unsafe, style) for f in findings]
    return "\n".join(lines) + ("\n" if lines else "")


# -- full -------------------------------------------------------------------------------------


class _Sources:
    """File text read once per file, for the renderers that show source."""

    def __init__(self) -> None:
        self._cache: dict[str, list[str] | None] = {}
        self._notebooks: dict[str, Notebook | None] = {}

    def notebook(self, filename: str) -> Notebook | None:
        if filename not in self._notebooks:
            from mxlint import notebooks

            self._notebooks[filename] = notebooks.read(filename)
        return self._notebooks[filename]

    def finding_lines(self, f: Finding, cell: int | None = None) -> list[str] | None:
        """The lines a finding's rows refer to: its file's, or its notebook cell's."""
        cell = cell if cell is not None else f.cell
        if cell is None:
            return self.lines(f.filename)
        notebook = self.notebook(f.filename)
        return notebook.cell_lines(cell) if notebook is not None else None

    def finding_line(self, f: Finding) -> str:
        lines = self.finding_lines(f) or []
        return lines[f.location.row - 1] if 0 < f.location.row <= len(lines) else ""

    def json_rows(self, f: Finding) -> tuple[int, int] | None:
        """A notebook finding's first and last line in the notebook file, if known."""
        notebook = self.notebook(f.filename) if f.cell is not None else None
        if notebook is None or f.cell is None:
            return None
        try:
            start = notebook.json_line(f.cell, f.location.row)
            end = notebook.json_line(f.cell, f.end_location.row)
        except (ValueError, SyntaxError):  # the file changed under us
            return None
        if start is None:
            return None
        return start, max(end or start, start)

    def lines(self, filename: str) -> list[str] | None:
        if filename not in self._cache:
            try:
                data = Path(filename).read_bytes()
                from mxlint.parsing import decode_source

                try:
                    text = decode_source(data)
                except (SyntaxError, UnicodeDecodeError, LookupError):
                    text = data.decode("utf-8", errors="replace")
                self._cache[filename] = text.splitlines(keepends=True)
            except OSError:
                self._cache[filename] = None
        return self._cache[filename]


def _fix_diff(lines: list[str], fix: Fix) -> list[str]:
    return _edits_diff(lines, fix.edits)


def _edits_diff(lines: list[str], edits: Sequence[Edit]) -> list[str]:
    import difflib  # only when fixes are shown

    from mxlint.fixes import OverlappingEdits, apply_edits

    rows = [e.location.row for e in edits] + [e.end_location.row for e in edits]
    first, last = max(min(rows), 1), min(max(rows), len(lines))
    before = "".join(lines)
    try:
        after = apply_edits(before, edits)
    except OverlappingEdits:
        return []
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    out = [d for d in diff if not d.startswith(("---", "+++", "@@"))]
    return out or [f"  (lines {first}-{last} unchanged)"]


def _notebook_fix_diff(f: Finding, sources: _Sources) -> list[str]:
    """A notebook fix as a diff per cell it edits (a seed may go into another cell)."""
    assert f.fix is not None
    by_cell: dict[int, list[Edit]] = {}
    for e in f.fix.edits:
        by_cell.setdefault(e.cell if e.cell is not None else f.cell or 0, []).append(e)
    out: list[str] = []
    for cell, edits in sorted(by_cell.items()):
        lines = sources.finding_lines(f, cell)
        if lines is None:
            continue
        if len(by_cell) > 1 or cell != f.cell:
            out.append(f"cell {cell}:")
        out.extend(_edits_diff(lines, edits))
    return out


def render_full(findings: Sequence[Finding], unsafe: bool = False, style: Style = PLAIN) -> str:
    """Each finding with its source lines, a caret under the range, and the fix as a diff."""
    sources = _Sources()
    out: list[str] = []
    for f in findings:
        out.append(_header(f, unsafe, style))
        lines = sources.finding_lines(f)
        if lines and 1 <= f.location.row <= len(lines):
            width = len(str(f.end_location.row))
            pad = " " * width
            bar = style.gutter(f"{pad} |")
            out.append(bar)
            last = min(f.end_location.row, f.location.row + 4, len(lines))
            for row in range(f.location.row, last + 1):
                text = lines[row - 1].rstrip("\r\n").expandtabs(1)
                out.append(f"{style.gutter(f'{row:>{width}} |')} {text}")
                if row == f.location.row:
                    start = f.location.column - 1
                    end = f.end_location.column - 1 if f.end_location.row == row else len(text)
                    out.append(f"{bar} {' ' * start}{style.carets('^' * max(end - start, 1))}")
            out.append(bar)
            if f.fix is not None:
                label = {"safe": "Safe fix", "unsafe": "Unsafe fix", "display": "Suggested change"}[
                    f.fix.applicability
                ]
                out.append(f"{pad} = {style.help('help')}: {f.fix.message}")
                out.append(f"{pad}   {label}:")
                diff = (
                    _notebook_fix_diff(f, sources)
                    if f.cell is not None
                    else _fix_diff(lines, f.fix)
                )
                out.extend(f"{pad}   {style.diff_line(d)}" for d in diff)
        out.append(f"  = docs: `mxlint rule {f.code}`")  # the page ships with mxlint
        out.append("")
    return "\n".join(out) + ("\n" if out else "")


# -- github -----------------------------------------------------------------------------------


def _gh_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def render_github(findings: Sequence[Finding], unsafe: bool = False) -> str:
    """GitHub Actions workflow commands: one `::error` annotation per finding.

    A notebook finding is annotated on the line of the notebook file that holds its cell's
    row, and its message starts with `cell N:row:col:`.
    """
    sources = _Sources()
    lines = []
    for f in findings:
        file = f"file={_gh_escape(Path(f.filename).as_posix(), True)}"
        title = f"title={_gh_escape(f.code, True)}"
        if f.cell is None:
            props = (
                f"{file},line={f.location.row},col={f.location.column},"
                f"endLine={f.end_location.row},endColumn={f.end_location.column},{title}"
            )
            text = f"{f.code} {f.message}"
        else:
            rows = sources.json_rows(f)
            props = (
                f"{file},line={rows[0]},endLine={rows[1]},{title}" if rows else f"{file},{title}"
            )
            text = f"{where(f)}: {f.code} {f.message}"
        lines.append(f"::error {props}::{_gh_escape(text)}")
    return "\n".join(lines) + ("\n" if lines else "")


# -- sarif ------------------------------------------------------------------------------------


def repo_root(start: Path | None = None) -> Path:
    """The repository root (the nearest directory holding `.git`), else the start directory."""
    start = (start or Path.cwd()).resolve()
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return start


def _uri(filename: str, root: Path) -> str:
    path = Path(filename)
    absolute = path if path.is_absolute() else Path.cwd() / path
    try:
        rel = Path(os.path.normpath(absolute)).relative_to(root)
        return rel.as_posix()
    except ValueError:
        return Path(os.path.normpath(absolute)).as_uri()


def sarif_rule(rule: type[Rule]) -> dict[str, Any]:
    doc = rule.documentation()
    return {
        "id": rule.code,
        "name": "".join(part.capitalize() for part in rule.name.split("-")),
        "shortDescription": {"text": rule.summary()},
        "fullDescription": {"text": " ".join(_dedent_text(rule.what).split())},
        # The page itself: a results viewer shows it, and no link can go stale or point at
        # the machine that wrote the log.
        "help": {"text": doc, "markdown": doc},
        "defaultConfiguration": {"level": "error", "enabled": bool(rule.default_enabled)},
        "properties": {"tags": [rule.family(), rule.name], "precision": "high"},
    }


def _dedent_text(text: str) -> str:
    import textwrap

    return textwrap.dedent(text).strip()


def _fingerprints(findings: Sequence[Finding], root: Path, sources: _Sources) -> list[str]:
    """Stable across line moves: rule, file, the stripped source line, and its occurrence."""
    from hashlib import sha256  # only for the formats that carry fingerprints

    seen: Counter[tuple[str, str, str]] = Counter()
    out = []
    for f in findings:
        text = sources.finding_line(f).strip()
        key = (f.code, _uri(f.filename, root), " ".join(text.split()))
        seen[key] += 1
        digest = sha256("\0".join((*key, str(seen[key]))).encode()).hexdigest()
        out.append(f"{digest[:32]}:{seen[key]}")
    return out


def _region(start_row: int, start_col: int, end_row: int, end_col: int) -> dict[str, int]:
    return {
        "startLine": start_row,
        "startColumn": start_col,
        "endLine": end_row,
        "endColumn": end_col,
    }


def render_sarif(
    findings: Sequence[Finding], unsafe: bool = False, root: Path | None = None
) -> str:
    """SARIF 2.1.0 for GitHub code scanning: repo-relative URIs under %SRCROOT%."""
    root = (root or repo_root()).resolve()
    rules = registry.all_rules()
    codes = sorted(rules)
    index = {code: i for i, code in enumerate(codes)}
    sources = _Sources()
    results = []
    for f, fingerprint in zip(findings, _fingerprints(findings, root, sources)):
        uri = _uri(f.filename, root)
        location: dict[str, Any] = {"uri": uri}
        if not uri.startswith("file:"):
            location["uriBaseId"] = "%SRCROOT%"
        physical: dict[str, Any] = {"artifactLocation": location}
        if f.cell is None:
            physical["region"] = _region(
                f.location.row, f.location.column, f.end_location.row, f.end_location.column
            )
        else:
            # Rows of a notebook cell are not rows of the .ipynb file: the region is the line
            # of the file that holds the cell's row; the cell position goes in the message
            # and the properties.
            rows = sources.json_rows(f)
            physical["region"] = {
                "startLine": rows[0] if rows else 1,
                "endLine": rows[1] if rows else 1,
            }
        text = f.message if f.cell is None else f"{where(f)}: {f.message}"
        result: dict[str, Any] = {
            "ruleId": f.code,
            "level": "error",
            "message": {"text": text},
            "locations": [{"physicalLocation": physical}],
            "partialFingerprints": {"mxlintFinding/v1": fingerprint},
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        if f.cell is not None:
            result["properties"] = {
                "cell": f.cell,
                "cellLocation": {
                    "row": f.location.row,
                    "column": f.location.column,
                    "endRow": f.end_location.row,
                    "endColumn": f.end_location.column,
                },
            }
        if f.fix is not None and f.fix.edits and f.cell is None:
            result["fixes"] = [
                {
                    "description": {"text": f"{f.fix.message} ({f.fix.applicability})"},
                    "artifactChanges": [
                        {
                            "artifactLocation": location,
                            "replacements": [
                                {
                                    "deletedRegion": _region(
                                        e.location.row,
                                        e.location.column,
                                        e.end_location.row,
                                        e.end_location.column,
                                    ),
                                    "insertedContent": {"text": e.content},
                                }
                                for e in f.fix.edits
                            ],
                        }
                    ],
                }
            ]
        if f.symbol:
            result.setdefault("properties", {})["symbol"] = f.symbol
        if verify_json(f) is not None:
            result.setdefault("properties", {})["verify"] = verify_json(f)
        results.append(result)
    doc = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "mxlint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": [sarif_rule(rules[c]) for c in codes],
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": root.as_uri() + "/"}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    import json

    return json.dumps(doc, indent=2) + "\n"


# -- statistics -------------------------------------------------------------------------------


def render_statistics(
    findings: Sequence[Finding], fmt: str, unsafe: bool = False, style: Style = PLAIN
) -> str:
    """Counts per code, most frequent first (JSON for the json format)."""
    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for f in findings if _marker(f, unsafe))
    rules = registry.all_rules()
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if fmt == "json":
        import json

        data = [
            {
                "code": code,
                "name": rules[code].name if code in rules else None,
                "count": n,
                "fixable": fixable[code] > 0,
            }
            for code, n in rows
        ]
        return json.dumps(data, indent=2) + "\n"
    width = max((len(str(n)) for n in counts.values()), default=1)
    lines = [
        f"{style.count(f'{n:>{width}}')}\t{style.statistics_code(code)}\t"
        f"{style.fix_marker if fixable[code] else '[ ]'} "
        f"{rules[code].name if code in rules else ''}".rstrip()
        for code, n in rows
    ]
    return "\n".join(lines) + ("\n" if lines else "")


RENDERERS: dict[str, Callable[..., str]] = {
    "concise": render_concise,
    "full": render_full,
    "json": lambda findings, unsafe=False: render_json(findings),
    "sarif": render_sarif,
    "github": render_github,
}


def render(
    fmt: str, findings: Sequence[Finding], unsafe: bool = False, style: Style = PLAIN
) -> str:
    """The report in format `fmt`; `style` colours the text formats (machine formats never)."""
    if fmt in MACHINE_FORMATS:
        return RENDERERS[fmt](findings, unsafe=unsafe)
    return RENDERERS[fmt](findings, unsafe=unsafe, style=style)
