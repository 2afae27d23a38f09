"""`# noqa` suppressions, the same whichever way mxlint is called.

Line directives follow flake8's grammar exactly (`# noqa`, `# noqa: MXL101,E501`, code prefixes
match), so that a comment means the same thing to `mxlint check` and to `flake8`. mxlint adds two
things flake8 cannot know about, and applies them in both modes:

* a directive on the first line of a multi-line statement covers the whole statement;
* file-level `# mxlint: noqa` (everything) and `# mxlint: noqa: MXL3,MXL401` (codes/prefixes).

Under flake8 (`Settings.inline_noqa = False`) the same-line directive is left to flake8, so that
`flake8 --disable-noqa` keeps working; unused-directive accounting (MXL004) is identical.

This module reads directives and judges the unused ones; `mxlint.funnel` applies them.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mxlint.checker import CommentStyle
from mxlint.parsing import split_lines
from mxlint.rule import Edit, Finding, Fix, Location, Rule

if TYPE_CHECKING:
    from mxlint.settings import Settings

#: flake8's own inline pattern (flake8.defaults.NOQA_INLINE_REGEXP).
NOQA_INLINE = re.compile(r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)
FILE_NOQA = re.compile(
    r"^#\s*mxlint\s*:\s*noqa(?:\s*:\s*(?P<codes>[A-Z]+[0-9]*(?:[,\s]+[A-Z]+[0-9]*)*))?\s*$",
    re.IGNORECASE,
)
_SPLIT = re.compile(r"[,\s]+")


@dataclass
class Directive:
    """One `# noqa` comment: where it is and which codes it names (None: bare)."""

    row: int
    column: int  # 0-based column of the `#` of the directive
    end_column: int  # 0-based end of the matched directive text
    comment_start: int  # 0-based column of the comment token
    comment_end: int
    codes: tuple[str, ...] | None
    used: set[str] = field(default_factory=set)
    #: The text of its row (without the line ending): what a fix of the directive edits.
    line: str = ""

    def covers(self, code: str) -> str | None:
        """The entry of this directive that covers `code` ("" for bare), or None."""
        if self.codes is None:
            return ""
        for entry in self.codes:
            if code.startswith(entry):
                return entry
        return None


@dataclass
class Suppressions:
    """Every directive of one file; picklable so that cached results carry it."""

    lines: dict[int, Directive] = field(default_factory=dict)
    #: row -> the row whose directive also covers it: the first line of a multi-line Python
    #: statement, the last line of a requirement continued with backslashes, the comment line
    #: directly above a Dockerfile instruction.
    covered_by: dict[int, int] = field(default_factory=dict)
    file_all: bool = False
    file_codes: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.lines or self.file_all or self.file_codes)

    def copy(self) -> Suppressions:
        """The same directives with their own record of use: what a run decides after the
        file's own findings (cross-file findings) is marked on a copy, never on the cached
        result a later run starts from."""
        lines = {
            row: Directive(
                d.row,
                d.column,
                d.end_column,
                d.comment_start,
                d.comment_end,
                d.codes,
                set(d.used),
                d.line,
            )
            for row, d in self.lines.items()
        }
        return Suppressions(lines, self.covered_by, self.file_all, self.file_codes)

    def match(self, code: str, row: int, inline: bool = True) -> bool:
        """Whether a finding of `code` on `row` is suppressed (and mark the directive used)."""
        if self.file_all or any(code.startswith(p) for p in self.file_codes):
            return True
        rows = [row] if inline else []
        anchor = self.covered_by.get(row)
        if anchor is not None and anchor != row:
            rows.append(anchor)
        hit = False
        for r in rows:
            directive = self.lines.get(r)
            if directive is None:
                continue
            entry = directive.covers(code)
            if entry is not None:
                directive.used.add(entry)
                hit = True
        if not inline:
            # Same-line directives are flake8's job; account for them all the same.
            directive = self.lines.get(row)
            if directive is not None:
                entry = directive.covers(code)
                if entry is not None:
                    directive.used.add(entry)
        return hit


def parse(source: str) -> Suppressions:
    """Directives from the comments of `source` (comments only: never strings)."""
    out = Suppressions()
    if "noqa" not in source.lower():
        return out
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source, newline=None).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return parse_lines(source)
    logical_start: int | None = None
    for tok in tokens:
        kind = tok.type
        if kind == tokenize.COMMENT:
            _add_comment(out, tok.string, tok.start[0], tok.start[1])
            continue
        if kind in (
            tokenize.NL,
            tokenize.INDENT,
            tokenize.DEDENT,
            tokenize.ENCODING,
            tokenize.ENDMARKER,
        ):
            continue
        if kind == tokenize.NEWLINE:
            if logical_start is not None and tok.start[0] > logical_start:
                for r in range(logical_start, tok.start[0] + 1):
                    out.covered_by[r] = logical_start
            logical_start = None
            continue
        if logical_start is None:
            logical_start = tok.start[0]
    _fill_lines(out, source)
    return out


def _fill_lines(out: Suppressions, source: str) -> None:
    if not out.lines:
        return
    lines = split_lines(source)
    for row, directive in out.lines.items():
        directive.line = lines[row - 1] if row - 1 < len(lines) else ""


def parse_lines(text: str, style: CommentStyle = "line") -> Suppressions:
    """Line-based reading for sources that do not tokenize and for dependency files (`#`
    comments). A directive covers its own row, and by the file's `style` (`checker.
    CommentStyle`): a requirement's last line covers the lines the entry continues over
    (pip reads a comment only there), and a Dockerfile comment line directly above an
    instruction covers the instruction (a `#` after an instruction is no comment to Docker)."""
    out = Suppressions()
    if "noqa" not in text.lower():  # both directives say it: most files have none
        return out
    lines = split_lines(text)
    for row, line in enumerate(lines, start=1):
        index = line.find("#")
        while index >= 0:
            comment = line[index:]
            if NOQA_INLINE.search(comment) or FILE_NOQA.match(comment.rstrip()):
                _add_comment(out, comment.rstrip("\r\n"), row, index)
                break
            index = line.find("#", index + 1)
    if style == "requirements":
        for first, last in requirement_entries(lines):
            if last in out.lines:
                out.covered_by.update((r, last) for r in range(first, last))
    elif style == "dockerfile":
        for first, last in dockerfile_instructions(lines):
            above = first - 1
            if above >= 1 and above in out.lines and lines[above - 1].lstrip().startswith("#"):
                out.covered_by.update((r, above) for r in range(first, last + 1))
    _fill_lines(out, text)
    return out


def requirement_entries(lines: Sequence[str]) -> list[tuple[int, int]]:
    """(first, last) rows of each requirements-file entry that continues over lines ending
    in a backslash, as pip joins them."""
    entries: list[tuple[int, int]] = []
    first: int | None = None
    for row, line in enumerate(lines, start=1):
        continued = line.rstrip().endswith("\\") and not line.lstrip().startswith("#")
        if first is None and continued:
            first = row
        if first is not None and not continued:
            entries.append((first, row))
            first = None
    return entries


_PARSER_DIRECTIVE = re.compile(r"^#\s*([A-Za-z]+)\s*=\s*(\S+)\s*$")


def dockerfile_instructions(lines: Sequence[str]) -> list[tuple[int, int]]:
    """(first, last) rows of each Dockerfile instruction: lines continued with the escape
    character (`\\`, or the one an `# escape=` parser directive sets), comment lines inside a
    continuation skipped as Docker skips them."""
    escape = "\\"
    for line in lines:  # parser directives: `# key=value` lines at the very top
        m = _PARSER_DIRECTIVE.match(line.strip())
        if m is None:
            break
        if m.group(1).lower() == "escape":
            escape = m.group(2)
    out: list[tuple[int, int]] = []
    first: int | None = None
    for row, line in enumerate(lines, start=1):
        stripped = line.strip()
        if first is None:
            if not stripped or stripped.startswith("#"):
                continue
            first = row
        elif not stripped or stripped.startswith("#"):
            continue
        if not stripped.endswith(escape):
            out.append((first, row))
            first = None
    if first is not None:
        out.append((first, len(lines)))
    return out


def _add_comment(out: Suppressions, text: str, row: int, col: int) -> None:
    m = FILE_NOQA.match(text.strip())
    if m:
        if m.group("codes"):
            out.file_codes += tuple(c.upper() for c in _SPLIT.split(m.group("codes")) if c)
        else:
            out.file_all = True
        return
    m = NOQA_INLINE.search(text)
    if m is None:
        return
    codes = m.group("codes")
    parsed = tuple(c.upper() for c in _SPLIT.split(codes) if c) if codes else None
    out.lines[row] = Directive(row, col + m.start(), col + m.end(), col, col + len(text), parsed)


def unused_directives(
    path: str,
    sup: Suppressions,
    settings: Settings,
    judged: Callable[[type[Rule]], bool],
    unknown: bool = True,
) -> list[Finding]:
    """MXL004 for MXL codes in `# noqa: ...` that suppressed nothing.

    Judged are codes of rules `judged` accepts (rules that ran on the file, and whose findings
    there are all known) and, with `unknown`, full MXL codes that name no rule. A bare
    `# noqa`, other tools' codes, prefixes, engine codes (MXL0) and rules that are off for
    the file are left alone: mxlint cannot know whether they are needed.
    """
    from mxlint import registry

    rules = registry.all_rules()
    unused_rule = rules.get("MXL004")
    if unused_rule is None or not settings.enabled(unused_rule, path):
        return []
    if sup.file_all or any("MXL004".startswith(p) for p in sup.file_codes):
        return []
    out: list[Finding] = []
    for directive in sup.lines.values():
        if not directive.codes or directive.covers("MXL004") is not None:
            continue
        unused: list[str] = []
        for code in directive.codes:
            if not code.startswith("MXL") or code in directive.used:
                continue
            rule = rules.get(code)
            if rule is None:
                if unknown and len(code) == 6:
                    unused.append(code)  # not a rule at all
                continue
            if code[3] == "0" or not settings.enabled(rule, path) or not judged(rule):
                continue
            unused.append(code)
        if unused:
            out.append(_unused_finding(path, directive, unused, unused_rule))
    return out


def _unused_finding(path: str, d: Directive, unused: list[str], rule: type[Rule]) -> Finding:
    names = ", ".join(unused)
    start = Location(d.row, d.column + 1)
    end = Location(d.row, d.end_column + 1)
    fix = _removal_fix(d, unused, d.line)
    message = rule.format(codes=names)
    return Finding(rule.code, message, path, start, end, fix=fix)


def _removal_fix(d: Directive, unused: list[str], line: str) -> Fix | None:
    assert d.codes is not None
    keep = [c for c in d.codes if c not in unused]
    body = line.rstrip("\r\n")
    comment = body[d.comment_start : d.comment_end]
    rest = body[d.end_column : d.comment_end].strip()
    if keep:
        text = "# noqa: " + ", ".join(keep)
        edit = Edit(text, Location(d.row, d.column + 1), Location(d.row, d.end_column + 1))
        if body[d.end_column : d.end_column + 1] not in ("", " ", "\t") and rest:
            text += " "
            edit = Edit(text, edit.location, edit.end_location)
        return Fix("safe", f"Remove unused {', '.join(unused)} from `# noqa`", (edit,))
    if rest or d.column != d.comment_start or not comment:
        return None  # the comment says more than the directive: leave it to the author
    start = d.comment_start
    while start > 0 and body[start - 1] in " \t":
        start -= 1
    if not body[:start].strip():
        return None  # a directive alone on its line: removing it would leave an empty line
    return Fix(
        "safe",
        "Remove unused `# noqa` directive",
        (Edit("", Location(d.row, start + 1), Location(d.row, d.comment_end + 1)),),
    )
