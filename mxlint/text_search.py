"""Searches of a file's whole text that `re` alone makes slow.

A pattern that starts with `\\b` (or an alternation whose branches start with common letters)
gives `re` no literal to look for first: it tries the pattern at every character, a third of a
millisecond per pattern on a typical file, and several such searches run on every file.
"""

from __future__ import annotations

import re


def search_at_word_start(pattern: re.Pattern[str], text: str) -> bool:
    """Whether `\\b(?:pattern)` matches somewhere in `text`, for a `pattern` whose every match
    starts with a word character: `pattern` is searched as it is (a literal start it has is
    found at `str.find` speed) and the boundary is checked at each match found."""
    pos = 0
    while True:
        found = pattern.search(text, pos)
        if found is None:
            return False
        start = found.start()
        if start == 0 or not _is_word(text[start - 1]):
            return True
        pos = start + 1


def _is_word(ch: str) -> bool:
    """`re`'s `\\w` for one character of a str pattern: alphanumeric (Unicode) or `_`."""
    return ch.isalnum() or ch == "_"


def contains_ascii_word(text: str, words: tuple[str, ...]) -> bool:
    """Whether `text` contains one of `words` (lower-case ASCII) in any mix of cases.

    `str.lower` maps only two non-ASCII characters to ASCII letters (`İ` to `i` and a combining
    dot, the Kelvin sign to `k`): for words without `i` or `k` this is exactly a search for
    each word with `[gG][pP][uU]` character classes."""
    lowered = text.lower()
    return any(word in lowered for word in words)
