"""Colour in the text reports (`concise`, `full`, `--statistics`), with Ruff's escape sequences:
the path bold, `:` separators cyan, the code bold red, the `*` of `[*]` cyan.

Whether to colour is decided once per stream (`--color auto|always|never`): `auto` colours a
terminal only, and `NO_COLOR` (any non-empty value) turns it off, `FORCE_COLOR` on, in that
order, as Ruff reads them. Machine formats and `-o FILE` are never coloured (the caller's rule).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

COLOR_MODES = ("auto", "always", "never")

RESET = "\x1b[0m"
BOLD = "\x1b[1m"
RED = "\x1b[31m"
GREEN = "\x1b[32m"
CYAN = "\x1b[36m"
BRIGHT_RED = "\x1b[91m"
BRIGHT_BLUE = "\x1b[94m"
BRIGHT_CYAN = "\x1b[96m"


def color_enabled(mode: str, stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Whether text written to `stream` is coloured under `--color mode`."""
    if mode == "always":
        return True
    if mode == "never":
        return False
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no such method, or a closed stream
        return False


@dataclass(frozen=True)
class Style:
    """The pieces of a report, coloured or plain (`enabled`)."""

    enabled: bool = False

    def _wrap(self, start: str, text: str) -> str:
        return f"{start}{text}{RESET}" if self.enabled and text else text

    def path(self, text: str) -> str:
        return self._wrap(BOLD, text)

    @property
    def sep(self) -> str:
        return self._wrap(CYAN, ":")

    def code(self, text: str) -> str:
        return self._wrap(BOLD + RED, text)

    @property
    def fix_marker(self) -> str:
        """`[*]`: a fix `--fix` applies."""
        return f"[{self._wrap(CYAN, '*')}]"

    def passed(self, text: str) -> str:
        return self._wrap("\x1b[1;32m", text)

    def count(self, text: str) -> str:
        return self._wrap(BOLD, text)

    def statistics_code(self, text: str) -> str:
        return self._wrap("\x1b[1;31m", text)

    # `full`: the source excerpt, as Ruff draws it.

    def gutter(self, text: str) -> str:
        return self._wrap(BOLD + BRIGHT_BLUE, text)

    def carets(self, text: str) -> str:
        return self._wrap(BOLD + BRIGHT_RED, text)

    def help(self, text: str) -> str:
        return self._wrap(BOLD + BRIGHT_CYAN, text)

    def diff_line(self, text: str) -> str:
        """A line of a fix's diff: removed lines red, added lines green."""
        if text.startswith("-"):
            return self._wrap(RED, text)
        if text.startswith("+"):
            return self._wrap(GREEN, text)
        return text


PLAIN = Style(False)
