"""The progress indicator of a long `mxlint check` on a terminal: files checked of the total,
drawn on stderr with rich once the run has lasted a moment (`MXLINT_PROGRESS_DELAY` seconds,
default 1), so a quick run prints nothing, and erased before the report is printed.

It draws only when it is redrawn (no refresh thread): the run forks its workers meanwhile, and a
thread that holds a lock at a fork would leave that lock held in every worker.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

DELAY_ENV = "MXLINT_PROGRESS_DELAY"
DEFAULT_DELAY = 1.0
#: At most this often (seconds) is the bar redrawn, but always at the last file.
REDRAW_EVERY = 0.1


def progress_for(stream: TextIO, quiet: bool) -> FileProgress | None:
    """A progress indicator on `stream` when it is a terminal and the run is not `--quiet`."""
    if quiet:
        return None
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return FileProgress(stream, delay_from_env())


def delay_from_env() -> float:
    text = os.environ.get(DELAY_ENV, "").strip()
    try:
        return max(0.0, float(text)) if text else DEFAULT_DELAY
    except ValueError:
        return DEFAULT_DELAY


class FileProgress:
    """`start(total)` at each pass over the files, `advance(n)` as files are done, `close()`
    before anything else is printed."""

    def __init__(self, stream: TextIO, delay: float) -> None:
        self._stream = stream
        self._shown_after = time.monotonic() + delay
        self._total = 0
        self._done = 0
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._drawn_at = 0.0

    @property
    def shown(self) -> bool:
        return self._bar is not None

    def start(self, total: int) -> None:
        self._total, self._done = total, 0
        self._draw(force=True)

    def advance(self, n: int = 1) -> None:
        self._done += n
        self._draw(force=self._done >= self._total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()  # transient: erases itself
            self._bar = None

    def _draw(self, force: bool) -> None:
        now = time.monotonic()
        if self._bar is None:
            if now < self._shown_after or not self._total:
                return
            self._bar, self._task = _rich_bar(self._stream, self._total)
        elif not force and now - self._drawn_at < REDRAW_EVERY:
            return
        assert self._task is not None
        self._bar.update(self._task, total=self._total, completed=self._done)
        self._bar.refresh()
        self._drawn_at = now


def _rich_bar(stream: TextIO, total: int) -> tuple[Progress, TaskID]:
    """`Checking ━━━━━━━━━━━ 120/617 files 0:00:03`, loaded only when first shown."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    bar = Progress(
        TextColumn("Checking"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("files"),
        TimeElapsedColumn(),
        console=Console(file=stream),
        transient=True,
        auto_refresh=False,
        redirect_stdout=False,
        redirect_stderr=False,
    )
    task = bar.add_task("check", total=total)
    bar.start()
    return bar, task
