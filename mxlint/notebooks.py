"""Jupyter notebooks: code cells read as one program, findings reported per cell (the engine's
`lint_notebook` lints them).

A notebook is read with the standard `json` module (nbformat 4). Its code cells are joined, in
order, into one Python source, the way a kernel runs them: a name defined in cell 1 is known in
cell 5, and the notebook counts as an entry script for the reproducibility rules. Findings are
reported with `cell` (the 1-based position of the cell among the notebook's *code* cells, as
Ruff counts them; markdown and raw cells are not counted) and rows and columns inside that cell.
Fix edits carry their own cell (a seed inserted after the imports may land in another cell than
the finding), also with cell-relative rows; `--fix` maps them back to the joined source, applies
them there and writes only the code cells that changed.

IPython syntax is neutralised line by line, so that the joined source parses and every row keeps
its number:

* line magics (`%matplotlib inline`), shell escapes (`!pip install mxnet`, `files = !ls`,
  `x = %env HOME`) and help (`?obj`, `obj?`, `obj??`) at the start of a logical line, with their
  backslash-continued lines, become a comment (`# mxlint: magic N`; `pass  # mxlint: magic N`
  when indented, so that a block stays a block);
* a cell magic whose body is Python run in the kernel (`%%time`, `%%timeit`, `%%capture`,
  `%%prun`, `%%debug`) has only its first line neutralised; a cell under any other cell magic
  (`%%bash`, `%%writefile`, `%%html`, ...) is not Python of the program and is not linted.

Bare automagics (`pip install x` without `%`) are not recognised and read as syntax errors. The
placeholders are never written back: a fix that would change a neutralised line leaves the
notebook alone. Notebooks whose kernel language is not Python are skipped, an empty (0-byte)
notebook is an empty notebook, and one that is not valid JSON or not nbformat 4 is reported as
unreadable (MXL003). A `# mxlint: noqa` comment in any cell covers the whole notebook; `# noqa`
works on its line as in a `.py` file.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from mxlint.rule import Edit, Finding, Fix, Location

SUFFIX = ".ipynb"
#: The line that separates two cells in the joined source (the number is the next cell's).
MARKER = "# mxlint: cell {}"
_PLACEHOLDER_RE = re.compile(r"[ \t]*(?:pass  )?# mxlint: magic (\d+)")
#: Cell magics whose body is Python executed in the kernel's namespace.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})

_CELL_MAGIC = re.compile(r"%%(\w+)")
_HELP = re.compile(r"[ \t]*[A-Za-z_*][\w.*]*\?{1,2}[ \t]*")
_ASSIGN_MAGIC = re.compile(
    r"[ \t]*[A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*[ \t]*=[ \t]*[!%]"
)
_WS = re.compile(r"[ \t\n\r]*")
#: A \uXXXX escape of a non-ASCII character: the file was written with ensure_ascii.
_NON_ASCII_ESCAPE = re.compile(r"\\u(?!00[0-7])[0-9a-fA-F]{4}")


class NotebookError(SyntaxError):
    """Not a notebook mxlint can read (invalid JSON, not nbformat 4).

    A SyntaxError, like a bad encoding declaration in a `.py` file, so that every caller that
    reports or skips unreadable files handles it the same way.
    """


class UnwritableFix(OSError):
    """A fix would change a neutralised IPython line or a cell boundary: nothing is written."""


def _lines(text: str) -> list[str]:
    """Lines with their endings, split on `\\n` only (as rows are counted)."""
    if not text:
        return []
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


# -- neutralising IPython syntax ----------------------------------------------------------------


def _is_magic(body: str) -> bool:
    stripped = body.lstrip(" \t")
    return (
        stripped[:1] in ("%", "!", "?")
        or bool(_HELP.fullmatch(body))
        or bool(_ASSIGN_MAGIC.match(body))
    )


def _logical_length(lines: list[str], start: int) -> int:
    """How many physical lines the logical line starting at `start` spans."""
    rest = itertools.islice(lines, start, None)
    try:
        for tok in tokenize.generate_tokens(lambda: next(rest, "")):
            if tok.type == tokenize.NEWLINE:
                return max(tok.start[0], 1)
            if tok.type == tokenize.ENDMARKER:
                break
    except (tokenize.TokenError, SyntaxError):
        return len(lines) - start  # an unterminated string or bracket runs to the end
    return 1


@dataclass
class _Cell:
    """A code cell of a notebook, and the text that is linted in its place."""

    number: int  # 1-based among code cells
    index: int  # position in the notebook's cell list
    text: str  # the source as written
    as_list: bool  # `source` is a list of lines (else one string)
    neutral: str | None = None  # what is linted; None: not linted
    #: placeholder number -> (placeholder line, original line), without line endings
    magics: dict[int, tuple[str, str]] = field(default_factory=dict)


def _neutralise(cell: _Cell, counter: itertools.count) -> None:
    lines = _lines(cell.text)
    if not "".join(lines).strip():
        return
    out = list(lines)

    def replace(row: int, indent: str) -> None:
        number = next(counter)
        content = lines[row].rstrip("\r\n")
        placeholder = (f"{indent}pass  " if indent else "") + f"# mxlint: magic {number}"
        cell.magics[number] = (placeholder, content)
        out[row] = placeholder + lines[row][len(content) :]

    i = 0
    first = next(k for k, line in enumerate(lines) if line.strip())
    m = _CELL_MAGIC.match(lines[first])
    if m:
        if m.group(1) not in PYTHON_CELL_MAGICS:
            return  # %%bash, %%writefile...: not Python of this program
        replace(first, "")
        i = first + 1
    while i < len(lines):
        body = lines[i].rstrip("\r\n")
        stripped = body.lstrip(" \t")
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        if _is_magic(body):
            indent = body[: len(body) - len(stripped)]
            while True:
                continued = lines[i].rstrip("\r\n").endswith("\\")
                replace(i, indent)
                i += 1
                if not continued or i >= len(lines):
                    break
            continue
        i += _logical_length(lines, i)
    text = "".join(out)
    cell.neutral = text if text.endswith("\n") else text + "\n"


# -- rows of the joined source <-> cells ---------------------------------------------------------


@dataclass(frozen=True)
class CellMap:
    """Rows of the joined source and the cells they belong to (picklable, kept in FileFacts).

    `cells` holds (first row in the joined source, cell number) per linted cell, in order. A
    row just past a cell's last line (an edit's end, a separator) belongs to that cell.
    """

    cells: tuple[tuple[int, int], ...]

    def cell_row(self, row: int) -> tuple[int, int]:
        cell_first, number = self.cells[0]
        for first, n in self.cells:
            if first > row:
                break
            cell_first, number = first, n
        return number, max(row - cell_first + 1, 1)

    def source_row(self, cell: int, row: int) -> int:
        for first, number in self.cells:
            if number == cell:
                return first + row - 1
        raise KeyError(cell)

    def _local(self, loc: Location) -> tuple[int, Location]:
        cell, row = self.cell_row(loc.row)
        return cell, Location(row, loc.column)

    def localize(self, finding: Finding) -> Finding:
        """A finding of the joined source, reported in its cell (idempotent)."""
        if finding.cell is not None or not self.cells:
            return finding
        cell, start = self._local(finding.location)
        end_cell, end = self._local(finding.end_location)
        if end_cell != cell:
            end = start
        fix = finding.fix
        if fix is not None:
            edits = []
            for e in fix.edits:
                a_cell, a = self._local(e.location)
                b_cell, b = self._local(e.end_location)
                if a_cell != b_cell:  # an edit across cells cannot be written back
                    fix = None
                    break
                edits.append(Edit(e.content, a, b, cell=a_cell))
            if fix is not None:
                fix = Fix(fix.applicability, fix.message, tuple(edits))
        return dataclasses.replace(
            finding,
            location=start,
            end_location=end,
            fix=fix,
            cell=cell,
            message=self._message(finding),
        )

    def _message(self, finding: Finding) -> str:
        """Joined-source positions quoted in a message (`nb.ipynb:37` for a helper's break,
        a parser's `error at 37:5`, an earlier statement's `(line 37)`), as cell positions."""

        def cell_pos(row: str) -> str:
            number, local = self.cell_row(int(row))
            return f"cell {number}:{local}"

        name = PurePath(finding.filename).name
        message = re.sub(
            re.escape(name) + r":(\d+)\b(?!:)",
            lambda m: f"{name}:{cell_pos(m.group(1))}",
            finding.message,
        )
        # "(line 48)": an earlier statement a message points back to (MXL304's first draw).
        message = re.sub(r"\(line (\d+)\)", lambda m: f"({cell_pos(m.group(1))})", message)
        if finding.code == "MXL001":
            message = re.sub(
                r"\berror at (\d+):(\d+)",
                lambda m: f"error at {cell_pos(m.group(1))}:{m.group(2)}",
                message,
            )
        return message

    def to_source(self, finding: Finding) -> Finding:
        """The reverse of `localize`: positions in the joined source, for applying fixes."""
        if finding.cell is None:
            return finding
        cell = finding.cell

        def loc(c: int, x: Location) -> Location:
            return Location(self.source_row(c, x.row), x.column)

        fix = finding.fix
        if fix is not None:
            fix = Fix(
                fix.applicability,
                fix.message,
                tuple(
                    Edit(
                        e.content,
                        loc(e.cell or cell, e.location),
                        loc(e.cell or cell, e.end_location),
                    )
                    for e in fix.edits
                ),
            )
        return dataclasses.replace(
            finding,
            location=loc(cell, finding.location),
            end_location=loc(cell, finding.end_location),
            fix=fix,
            cell=None,
        )


# -- the notebook ---------------------------------------------------------------------------


def _decode(data: bytes | str) -> str:
    if isinstance(data, bytes):
        data = data.decode("utf-8")
    return data[1:] if data.startswith("\ufeff") else data


def _language(doc: dict[str, Any]) -> str | None:
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        return None
    for key, name in (("kernelspec", "language"), ("language_info", "name")):
        value = meta.get(key)
        if isinstance(value, dict) and isinstance(value.get(name), str):
            return str(value[name])
    return None


class Notebook:
    """One notebook as read: its JSON text, its code cells and the joined source."""

    def __init__(self, text: str, doc: dict[str, Any]) -> None:
        self.text = text
        self.doc = doc
        language = _language(doc)
        self.python = language is None or language.lower().startswith(("python", "ipython"))
        self.cells: list[_Cell] = []
        raw_cells = doc.get("cells", [])
        number = 0
        counter = itertools.count(1)
        for index, raw in enumerate(raw_cells):
            if not isinstance(raw, dict):
                raise NotebookError(f"not a Jupyter notebook: cell {index + 1} is not an object")
            if raw.get("cell_type") != "code":
                continue
            number += 1
            source = raw.get("source", "")
            if isinstance(source, list) and all(isinstance(s, str) for s in source):
                cell = _Cell(number, index, "".join(source), True)
            elif isinstance(source, str):
                cell = _Cell(number, index, source, False)
            else:
                raise NotebookError(f"not a Jupyter notebook: code cell {number} has no text")
            if self.python:
                _neutralise(cell, counter)
            self.cells.append(cell)
        self.linted = [c for c in self.cells if c.neutral is not None]
        parts: list[str] = []
        starts: list[tuple[int, int]] = []
        row = 1
        for cell in self.linted:
            assert cell.neutral is not None
            if parts:
                parts.append(MARKER.format(cell.number) + "\n")
                row += 1
            starts.append((row, cell.number))
            parts.append(cell.neutral)
            row += cell.neutral.count("\n")
        #: The joined, neutralised source that is linted.
        self.source = "".join(parts)
        self.cell_map = CellMap(tuple(starts))
        self._spans: dict[int, tuple[int, int]] | None = None

    @classmethod
    def parse(cls, data: bytes | str) -> Notebook:
        text = _decode(data)
        if not text.strip():
            return cls(text, {"cells": []})  # a 0-byte file: an empty notebook
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise NotebookError(f"invalid notebook JSON: {exc}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
            if isinstance(doc, dict) and "worksheets" in doc:
                raise NotebookError(
                    "nbformat 3 notebooks are not supported (convert with "
                    "`jupyter nbconvert --to notebook --nbformat 4`)"
                )
            raise NotebookError("not a Jupyter notebook: no `cells` list")
        return cls(text, doc)

    def cell(self, number: int) -> _Cell | None:
        for cell in self.cells:
            if cell.number == number:
                return cell
        return None

    def cell_lines(self, number: int) -> list[str] | None:
        """A code cell's lines as written (magics included), with their endings."""
        cell = self.cell(number)
        return _lines(cell.text) if cell is not None else None

    # -- writing back -----------------------------------------------------------------------

    def render(self, source: str) -> str:
        """The notebook's JSON text with the code cells of the fixed joined `source`.

        Only the `source` values of cells whose text changed are replaced, in the original
        representation (a list of lines or one string) and layout; every other byte of the file
        is kept. Raises UnwritableFix if a neutralised line or a cell separator was changed.
        """
        if source == self.source:
            return self.text
        pieces = self._split(source)
        replacements: list[tuple[int, int, str]] = []
        for cell in self.linted:
            new = pieces[cell.number]
            if new == cell.neutral:
                continue
            text = self._restore(cell, new)
            if text == cell.text:
                continue
            start, end = self.spans()[cell.index]
            replacements.append((start, end, self._format(cell, text, self.text[start:end])))
        out = self.text
        for start, end, value in sorted(replacements, reverse=True):
            out = out[:start] + value + out[end:]
        return out

    def _split(self, source: str) -> dict[int, str]:
        expected = [c.number for c in self.linted[1:]]
        chunks: dict[int, str] = {}
        buf: list[str] = []
        current, k = self.linted[0].number, 0
        for line in _lines(source):
            if k < len(expected) and line.rstrip("\r\n") == MARKER.format(expected[k]):
                chunks[current] = "".join(buf)
                current, buf, k = expected[k], [], k + 1
                continue
            buf.append(line)
        chunks[current] = "".join(buf)
        if k != len(expected):
            raise UnwritableFix("a fix would merge two cells; the notebook is left unchanged")
        return chunks

    def _restore(self, cell: _Cell, new: str) -> str:
        out: list[str] = []
        restored: set[int] = set()
        for line in _lines(new):
            content = line.rstrip("\r\n")
            m = _PLACEHOLDER_RE.fullmatch(content)
            if m:
                number = int(m.group(1))
                placeholder, original = cell.magics.get(number, ("", ""))
                if placeholder != content or number in restored:
                    raise UnwritableFix(
                        "a fix would change an IPython magic or shell line; "
                        "the notebook is left unchanged"
                    )
                restored.add(number)
                out.append(original + line[len(content) :])
            else:
                out.append(line)
        if restored != set(cell.magics):
            raise UnwritableFix(
                "a fix would remove an IPython magic or shell line; the notebook is left unchanged"
            )
        text = "".join(out)
        if not cell.text.endswith("\n") and text.endswith("\n"):
            text = text[:-1]
        return text

    def _ensure_ascii(self) -> bool:
        if any(ord(ch) > 127 for ch in self.text):
            return False
        return bool(_NON_ASCII_ESCAPE.search(self.text))

    def _format(self, cell: _Cell, text: str, original: str) -> str:
        ascii_only = self._ensure_ascii()
        if not cell.as_list:
            return json.dumps(text, ensure_ascii=ascii_only)
        items = _array_items(original, 0)
        raw: dict[str, str] = {}
        for start, end in items:
            raw.setdefault(json.loads(original[start:end]), original[start:end])
        first_ws = original[1 : items[0][0]] if items else "\n"
        close_ws = original[items[-1][1] : len(original) - 1] if items else "\n"
        if len(items) > 1:
            sep = original[items[0][1] : items[1][0]]
        else:
            sep = "," + first_ws if "\n" in first_ws else ", "
        values = [
            raw.get(line) or json.dumps(line, ensure_ascii=ascii_only) for line in _lines(text)
        ]
        if not values:
            return "[]"
        return "[" + first_ws + sep.join(values) + close_ws + "]"

    # -- where things are in the JSON text --------------------------------------------------

    def spans(self) -> dict[int, tuple[int, int]]:
        """Cell index -> (start, end) of its `source` value in the JSON text."""
        if self._spans is None:
            self._spans = _source_spans(self.text)
        return self._spans

    def json_line(self, cell_number: int, row: int) -> int | None:
        """The line of the notebook file that holds a cell's row (for annotations)."""
        cell = self.cell(cell_number)
        if cell is None or cell.index not in self.spans():
            return None
        start, end = self.spans()[cell.index]
        value = self.text[start:end]
        offset = start
        if cell.as_list:
            at = 1  # the cell row where the item starts
            for a, b in _array_items(value, 0):
                item = json.loads(value[a:b])
                offset = start + a
                last = at + item.count("\n") - (1 if item.endswith("\n") else 0)
                if row <= max(last, at):
                    break
                at = last + 1
        return self.text.count("\n", 0, offset) + 1


def _skip_ws(text: str, i: int) -> int:
    m = _WS.match(text, i)
    return m.end() if m else i


_DECODER = json.JSONDecoder()


def _value_end(text: str, i: int) -> int:
    return _DECODER.raw_decode(text, i)[1]


def _array(text: str, i: int) -> tuple[list[tuple[int, int]], int]:
    """(start, end) of each item of the JSON array at `text[i]`, and the array's end."""
    items: list[tuple[int, int]] = []
    i = _skip_ws(text, i)
    if text[i : i + 1] != "[":
        raise NotebookError("expected a JSON array")
    i = _skip_ws(text, i + 1)
    if text[i : i + 1] == "]":
        return items, i + 1
    while True:
        end = _value_end(text, i)
        items.append((i, end))
        i = _skip_ws(text, end)
        if text[i : i + 1] != ",":
            return items, i + 1  # the closing bracket
        i = _skip_ws(text, i + 1)


def _array_items(text: str, i: int) -> list[tuple[int, int]]:
    return _array(text, i)[0]


def _object_members(text: str, i: int) -> Iterator[tuple[str, int, int]]:
    """(key, value start, value end) of each member of the JSON object at `text[i]`."""
    i = _skip_ws(text, i)
    if text[i : i + 1] != "{":
        raise NotebookError("expected a JSON object")
    i = _skip_ws(text, i + 1)
    if text[i : i + 1] == "}":
        return
    while True:
        key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        i = _skip_ws(text, i)
        i = _skip_ws(text, i + 1)  # the colon
        # The cells are walked once more by the caller: only find where the array ends.
        end = _array(text, i)[1] if key == "cells" else _value_end(text, i)
        yield key, i, end
        i = _skip_ws(text, end)
        if text[i : i + 1] != ",":
            return
        i = _skip_ws(text, i + 1)


def _source_spans(text: str) -> dict[int, tuple[int, int]]:
    spans: dict[int, tuple[int, int]] = {}
    for key, start, _end in _object_members(text, 0):
        if key != "cells":
            continue
        for index, (a, _b) in enumerate(_array_items(text, start)):
            for cell_key, s, e in _object_members(text, a):
                if cell_key == "source":
                    spans[index] = (s, e)
    return spans


# -- showing cells ----------------------------------------------------------------------------


def unified_diff(name: str, before: str, after: str) -> str:
    """The changes between two versions of a notebook's JSON text, cell by cell."""
    import difflib  # only when a fix is shown

    try:
        old, new = Notebook.parse(before), Notebook.parse(after)
    except NotebookError:
        return "".join(
            difflib.unified_diff(
                before.splitlines(keepends=True),
                after.splitlines(keepends=True),
                fromfile=f"a/{name}",
                tofile=f"b/{name}",
            )
        )
    out: list[str] = []
    for a, b in zip(old.cells, new.cells):
        if a.text == b.text:
            continue
        a_lines = [line if line.endswith("\n") else line + "\n" for line in _lines(a.text)]
        b_lines = [line if line.endswith("\n") else line + "\n" for line in _lines(b.text)]
        out.extend(
            difflib.unified_diff(
                a_lines,
                b_lines,
                fromfile=f"a/{name}:cell {a.number}",
                tofile=f"b/{name}:cell {b.number}",
            )
        )
    return "".join(out)


def read(path: object) -> Notebook | None:
    """The notebook at `path` for display, or None if it cannot be read."""
    from pathlib import Path

    try:
        return Notebook.parse(Path(str(path)).read_bytes())
    except (OSError, UnicodeDecodeError, NotebookError):
        return None


__all__ = [
    "SUFFIX",
    "CellMap",
    "Notebook",
    "NotebookError",
    "UnwritableFix",
    "unified_diff",
]
