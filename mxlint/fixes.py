"""Applying fix edits to source text."""

from __future__ import annotations

from collections.abc import Iterable

from mxlint.rule import Edit


class OverlappingEdits(Exception):
    pass


def _offsets(source: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(source):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def apply_edits(source: str, edits: Iterable[Edit]) -> str:
    """Apply edits (1-based rows and columns) to `source`; later edits first, no overlaps."""
    starts = _offsets(source)

    def offset(row: int, column: int) -> int:
        return starts[row - 1] + column - 1 if row - 1 < len(starts) else len(source)

    spans = sorted(((offset(e.location.row, e.location.column),
                     offset(e.end_location.row, e.end_location.column), e.content) for e in edits),
                   key=lambda s: (s[0], s[1]))
    for (a0, a1, _), (b0, _b1, _c) in zip(spans, spans[1:]):
        if b0 < a1:
            raise OverlappingEdits(f"edits overlap at offsets {a0}-{a1} and {b0}")
    out = source
    for start, end, content in reversed(spans):
        out = out[:start] + content + out[end:]
    return out
