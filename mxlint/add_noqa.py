"""`--add-noqa`: a directive for every current finding, written the way its file's kind reads it.

Python files and notebooks' cells: `# noqa: CODE` ending the reported line, or the first line
of its statement when the reported line cannot end with a comment (inside a string, continued
with a backslash). Dependency files, by their kind's spelling (`checker.CommentStyle`): a
comment ending the reported line (pyproject.toml, setup.cfg, environment.yml, setup.py), ending
a requirement's last line, or on a comment line directly above a Dockerfile instruction. Codes
join a directive already in place.

Nothing is skipped in silence: a finding no comment can suppress is named with the reason —
MXL001 (the file does not parse), MXL002 (mxlint failed), MXL003 (the file cannot be read),
MXL004 (an unused directive: `--fix` removes it), and a line no comment can end. The directives
are added in memory and the run is checked again before anything is written: a file whose new
comments do not silence what they are for, or change what it says, is left as it was.
"""

from __future__ import annotations

import io
import tokenize
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mxlint import registry
from mxlint.fixes import ChangedOnDisk, SourceFile, file_stats, newline_of, parses, write_bytes
from mxlint.parsing import split_lines
from mxlint.rule import Finding
from mxlint.suppressions import (
    Suppressions,
    dockerfile_instructions,
    parse,
    parse_lines,
    requirement_entries,
)

if TYPE_CHECKING:
    from mxlint.checker import CommentStyle
    from mxlint.runner import Project
    from mxlint.settings import Settings

#: Findings of the engine itself, which no noqa comment suppresses, and why.
NOT_BY_COMMENT = {
    "MXL001": "a file that does not parse is not read for comments: fix its syntax, or leave "
    "it out (`extend-exclude`, or `per-file-ignores`)",
    "MXL002": "mxlint failed on this file (please report it); `per-file-ignores` hides it",
    "MXL003": "a file that cannot be read is not read for comments: leave it out "
    "(`extend-exclude`, or `per-file-ignores`)",
    "MXL004": "an unused directive is not silenced with another: `--fix` removes it",
}
BLOCKED_PYTHON = (
    "the line and its statement's first line are inside a string or continued with a "
    "backslash: no comment can end them"
)


@dataclass
class NoqaReport:
    added: int = 0
    #: Findings no directive was added for, and why.
    refused: list[tuple[Finding, str]] = field(default_factory=list)
    #: Files left unwritten (changed on disk, cannot be read or written), and why.
    skipped: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Plan:
    """Where the directives of one file go: codes for a directive ending a row (joining one
    already there), codes for a comment line inserted above a row, and what cannot go."""

    end: dict[int, list[str]] = field(default_factory=dict)
    above: dict[int, list[str]] = field(default_factory=dict)
    refused: list[tuple[Finding, str]] = field(default_factory=list)

    def add(self, where: dict[int, list[str]], row: int, code: str) -> None:
        codes = where.setdefault(row, [])
        if code not in codes:
            codes.append(code)


def plan_python(source: str, findings: Sequence[Finding]) -> Plan:
    """Python source (a notebook's joined cells): the reported row, or the first row of its
    statement (which mxlint and its flake8 plugin both honour). A dependency rule's finding
    in a Python file (setup.py) is read line by line: its own row only."""
    plan = Plan()
    sup = parse(source)
    rows = len(split_lines(source))
    blocked = rows_without_comment_end(source)
    for f in findings:
        row = f.location.row
        if sup.match(f.code, row) or not 1 <= row <= rows:
            continue
        rule = registry.get_rule(f.code)
        if row in blocked:
            start = sup.covered_by.get(row, row) if rule is None or rule.kind == "python" else row
            if start in blocked:
                plan.refused.append((f, BLOCKED_PYTHON))
                continue
            row = start
        plan.add(plan.end, row, f.code)
    return plan


def add_to_python(source: str, findings: Sequence[Finding]) -> tuple[str, int]:
    """Python `source` with a directive for each of `findings` (positioned in it): (new
    source, codes added). What the language server's "disable for this line" writes."""
    return write_plan(source, plan_python(source, findings), parse(source))


def plan_text(text: str, findings: Sequence[Finding], style: CommentStyle) -> Plan:
    """A dependency file, by its kind's spelling (see the module's documentation)."""
    plan = Plan()
    sup = parse_lines(text, style)
    lines = split_lines(text)
    last_of = {r: last for first, last in requirement_entries(lines) for r in range(first, last)}
    instruction = {
        r: (first, last)
        for first, last in dockerfile_instructions(lines)
        for r in range(first, last + 1)
    }
    for f in findings:
        row = f.location.row
        if sup.match(f.code, row, inline=True) or not 1 <= row <= len(lines):
            continue
        if style == "requirements":
            plan.add(plan.end, last_of.get(row, row), f.code)
        elif style == "dockerfile":
            if row not in instruction:
                plan.refused.append((f, "the line is no part of a Dockerfile instruction"))
                continue
            first = instruction[row][0]
            above = first - 1
            mine = sup.lines.get(row)
            if above in sup.lines and lines[above - 1].lstrip().startswith("#"):
                plan.add(plan.end, above, f.code)  # join the directive above the instruction
            elif mine is not None and mine.codes is not None:
                plan.add(plan.end, row, f.code)  # join the one already on the line
            else:
                plan.add(plan.above, first, f.code)
        else:
            plan.add(plan.end, row, f.code)
    return plan


def write_plan(text: str, plan: Plan, sup: Suppressions) -> tuple[str, int]:
    """`text` with the planned directives; (new text, codes added)."""
    lines = split_lines(text, keepends=True)
    newline = newline_of(text)
    count = 0
    for row, codes in plan.end.items():
        line = lines[row - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body) :] or (newline if row < len(lines) else "")
        directive = sup.lines.get(row)
        if directive is not None and directive.codes is not None:
            merged = list(directive.codes) + [c for c in codes if c not in directive.codes]
            new = "# noqa: " + ", ".join(merged)
            body = body[: directive.column] + new + body[directive.end_column :]
            count += len(merged) - len(directive.codes)
        else:
            body = body.rstrip() + "  # noqa: " + ", ".join(codes)
            count += len(codes)
        lines[row - 1] = body + ending
    for row in sorted(plan.above, reverse=True):
        codes = plan.above[row]
        target = lines[row - 1]
        indent = target[: len(target) - len(target.lstrip(" \t"))]
        lines.insert(row - 1, f"{indent}# noqa: {', '.join(codes)}{newline}")
        count += len(codes)
    return "".join(lines), count


@dataclass
class _Change:
    original: SourceFile
    data: bytes
    count: int
    findings: list[Finding]


def add_noqa_paths(paths: Sequence[Path], settings: Settings, *, jobs: int = 1) -> NoqaReport:
    """Add a directive for every current finding under `paths`, and write the files."""
    from mxlint.runner import Project

    before = file_stats(paths, settings)
    project = Project.lint(paths, settings, jobs=jobs)
    first = project.result()
    report = NoqaReport()
    by_file: dict[str, list[Finding]] = {}
    for f in first.findings:
        why = NOT_BY_COMMENT.get(f.code)
        if why is not None:
            report.refused.append((f, why))
        else:
            by_file.setdefault(f.filename, []).append(f)
    changes: dict[str, _Change] = {}
    for filename, findings in sorted(by_file.items()):
        path = Path(filename)
        try:
            src = SourceFile.read(path)
            st = path.stat()
        except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
            report.skipped.append((filename, f"cannot read: {exc}"))
            report.refused.extend((f, "the file cannot be read") for f in findings)
            continue
        if before.get(filename) != (st.st_mtime_ns, st.st_size):
            report.skipped.append((filename, "changed on disk during the run"))
            report.refused.extend((f, "the file changed during the run") for f in findings)
            continue
        change = _change(project, src, findings, report)
        if change is not None:
            changes[filename] = change
            project.replace(filename, change.data)
    _check_again(project, first.findings, changes, report)
    for filename, change in sorted(changes.items()):
        try:
            write_bytes(change.original, change.data)
        except ChangedOnDisk:
            report.skipped.append((filename, "changed on disk during the run"))
        except (OSError, UnicodeError) as exc:  # UnicodeError: not in its encoding
            report.skipped.append((filename, f"cannot write: {exc}"))
        else:
            report.added += change.count
            continue
        report.refused.extend((f, "the file could not be written") for f in change.findings)
    report.refused.sort(key=lambda item: item[0].sort_key())
    return report


def _change(
    project: Project, src: SourceFile, findings: list[Finding], report: NoqaReport
) -> _Change | None:
    """The file with its directives, or None (what cannot go is in `report.refused`)."""
    positioned = src.in_text(findings)
    if src.python:
        plan = plan_python(src.text, positioned)
        sup = parse(src.text)
    else:
        style = project.comment_style(src.path)
        plan = plan_text(src.text, positioned, style)
        sup = parse_lines(src.text, style)
    back = {id(p): f for p, f in zip(positioned, findings)}
    report.refused.extend((back.get(id(p), p), why) for p, why in plan.refused)
    planned = [f for p, f in zip(positioned, findings) if all(p is not r for r, _ in plan.refused)]
    text, count = write_plan(src.text, plan, sup)
    if not count:
        return None
    if src.python and not parses(text):
        report.refused.extend((f, "a comment there would break the file") for f in planned)
        return None
    try:
        data = src.encode(text)
    except (OSError, UnicodeError) as exc:  # a notebook cell that cannot be written back
        report.refused.extend((f, f"cannot write: {exc}") for f in planned)
        return None
    return _Change(src, data, count, planned)


def _check_again(
    project: Project,
    first: Sequence[Finding],
    changes: dict[str, _Change],
    report: NoqaReport,
) -> None:
    """Lint the run again with the directives in place: per file and code, no more findings
    than those left unsuppressed on purpose. A changed file that fails is restored (and its
    findings named); if a file nobody changed fails, the dependency files changed with it
    are (they are read together)."""
    refused = Counter((f.filename, f.code) for f, _ in report.refused)
    for _attempt in range(len(changes) + 1):
        if not changes:
            return
        now = Counter((f.filename, f.code) for f in project.result().findings)
        wrong = {name for (name, code), n in now.items() if n > refused[(name, code)]}
        if not wrong:
            return
        culprits = {n for n in wrong if n in changes}
        if wrong - set(changes):
            culprits |= {n for n, c in changes.items() if not c.original.python}
        if not culprits:
            return
        for name in culprits:
            change = changes.pop(name)
            project.replace(name, change.original.data)
            still = sorted({code for (file, code), n in now.items() if file == name and n})
            why = "linted again with the comments in place, the file still reports " + (
                ", ".join(still) if still else "other findings"
            )
            report.refused.extend((f, why) for f in change.findings)
            refused.update((f.filename, f.code) for f in change.findings)


def rows_without_comment_end(source: str) -> set[int]:
    """Rows whose end is inside a string or continued with a backslash."""
    rows: set[int] = set()
    for row, line in enumerate(split_lines(source), start=1):
        if line.rstrip().endswith("\\"):
            rows.add(row)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source, newline=None).readline):
            if tok.type == tokenize.STRING or getattr(tokenize, "FSTRING_MIDDLE", -1) == tok.type:
                rows.update(range(tok.start[0], tok.end[0]))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return rows
