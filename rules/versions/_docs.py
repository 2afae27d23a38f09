"""What every versions rule's page says about where it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


_NOT_FLAKE8 = """
        It reads dependency files, not Python code, so it runs only under `mxlint check`: the
        flake8 plugin cannot report it (flake8 only hands `.py` files to plugins, one at a
        time).
"""
