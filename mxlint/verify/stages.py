"""Time limits for the stages of one verify job (runs inside the verify subprocess).

A job is a sequence of experiments (probe an input, run hybridized, run the imperative
reference, call a function); one that loops forever (a `while` on random weights) must not eat
the budget of the others. The limit is a SIGALRM timer raising `StageTimeout`, a BaseException
so that user `except Exception` blocks do not swallow it; MXNet operators are short, so the
signal is seen between two Python bytecodes of the user's loop. Python discards an exception
raised while a finalizer runs (`NDArray.__del__`, freeing the array a loop just replaced,
"Exception ignored in ..."), so the timer keeps firing every `REPEAT` seconds until the stage
has ended: a timeout that lands in a finalizer is raised again where it counts.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: Seconds between two raises of one timeout, should a finalizer swallow one.
REPEAT = 0.5


class StageTimeout(BaseException):
    """A stage ran out of its time."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"did not finish within {seconds:g}s")
        self.seconds = seconds


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise StageTimeout in the main thread after `seconds` (no limit: None, 0, or not the
    main thread, where signals cannot be delivered)."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    start = time.monotonic()
    outer, _ = signal.getitimer(signal.ITIMER_REAL)
    limit = min(seconds, outer) if outer else seconds

    def expire(_signum: int, _frame: Any) -> None:
        raise StageTimeout(limit)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, limit, REPEAT)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:  # the enclosing stage's limit keeps running
            left = max(0.001, outer - (time.monotonic() - start))
            signal.setitimer(signal.ITIMER_REAL, left, REPEAT)
