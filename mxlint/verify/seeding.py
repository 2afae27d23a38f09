"""One line's randomness, alone (runs inside the verify subprocess).

To show that a seed finding matters by itself, every generator is seeded before the user's code
runs, and only the flagged line's draws of the finding's generator come from a stream of their
own: while that line runs, the generator's state is swapped for the line's stream and swapped
back after, so the rest of the program draws the same numbers in every run. Samplers,
transforms, loaders and iterators built on that line (a `DataLoader(shuffle=True)`, a random
crop) draw later; they are tagged when built and draw from the line's stream whenever they do.
Two runs whose line streams start from different seeds (0 and 1: the first uniform draws of
both Python's and NumPy's generators fall on either side of 0.5) and differ show the line
matters; the verdicts are repeatable. Once the program seeds the generator itself, the line
draws from the program's state again: a seeded program's draws are the same in every run.
"""

from __future__ import annotations

import os
import random
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import mxnet as mx
import numpy as np


class LiveLines:
    """The flagged lines whose draws of `rng` stay random."""

    def __init__(self, lines: list[list[Any]], rng: str | None, seed: int = 0) -> None:
        """`lines`: [file, first, last] of each live statement."""
        self.spans = [(os.path.realpath(e[0]), int(e[1]), int(e[-1])) for e in lines]
        self.lines = {(f, n) for f, a, b in self.spans for n in range(a, b + 1)}
        self.rng = rng or "numpy"
        self.seed = seed
        self.stream: Any = None
        self.frame: Any = None
        self.key: tuple[str, int] | None = None
        self.saved: Any = None
        self.reseeds = 0
        self.tagged: weakref.WeakSet[Any] = weakref.WeakSet()
        #: The program seeded the generator itself: nothing is swapped any more.
        self.program_seeded = False
        #: Set while this class reseeds or restores a generator (not the program seeding it).
        self.ours = False
        if self.lines:
            self._hooks()
            self._watch_seeding()

    def _watch_seeding(self) -> None:
        """Notice the program seeding the generator (with a value: `seed()` with none draws
        from the clock and stays unseeded)."""
        live = self
        module: Any = {"numpy": np.random, "random": random, "mxnet": mx.random}[self.rng]
        names = ("seed", "set_state") if self.rng == "numpy" else ("seed", "setstate")
        for name in names:
            original = getattr(module, name, None)
            if original is None:
                continue

            def seeding(*a: Any, _original: Any = original, **k: Any) -> Any:
                if not live.ours and (a or k) and (a[:1] != (None,)):
                    live.program_seeded = True
                return _original(*a, **k)

            setattr(module, name, seeding)

    # -- the generator's state ---------------------------------------------------------------

    def _swap_in(self) -> Any:
        """Save the program's state; continue the line's own stream (seeded on first use)."""
        self.ours = True
        try:
            return self._swap_in_state()
        finally:
            self.ours = False

    def _swap_in_state(self) -> Any:
        if self.rng == "numpy":
            state = np.random.get_state()
            if self.stream is None:
                np.random.seed(self.seed)
            else:
                np.random.set_state(self.stream)
            return state
        if self.rng == "random":
            kept = random.getstate()
            if self.stream is None:
                random.seed(self.seed)
            else:
                random.setstate(self.stream)
            return kept
        self.reseeds += 1  # MXNet's state cannot be read back: one seed per entry
        mx.random.seed(self.seed * 7919 + self.reseeds)
        return None

    def _swap_back(self, saved: Any) -> None:
        self.ours = True
        try:
            self._swap_back_state(saved)
        finally:
            self.ours = False

    def _swap_back_state(self, saved: Any) -> None:
        if self.rng == "numpy":
            self.stream = np.random.get_state()
            np.random.set_state(saved)
        elif self.rng == "random":
            self.stream = random.getstate()
            random.setstate(saved)
        else:  # a fixed reseed keeps the rest of the program repeatable
            mx.random.seed(1000 + self.reseeds)

    @contextmanager
    def fresh(self) -> Iterator[None]:
        saved = self._swap_in()
        try:
            yield
        finally:
            self._swap_back(saved)

    # -- lines (called by the line tracer) ---------------------------------------------------

    def on_line(self, frame: Any, key: tuple[str, int]) -> None:
        if self.frame is frame and key not in self.lines:
            self.leave(frame)
        if key in self.lines and self.frame is None and not self.program_seeded:
            self.frame, self.key = frame, key
            self.saved = self._swap_in()

    def leave(self, frame: Any) -> None:
        if self.frame is frame:
            self._swap_back(self.saved)
            self.frame, self.key, self.saved = None, None, None

    @property
    def active(self) -> bool:
        return self.frame is not None

    # -- objects built on a live line --------------------------------------------------------

    def _hooks(self) -> None:
        from mxnet import gluon

        live = self

        def tag(cls: Any, draws: tuple[str, ...]) -> None:
            init = cls.__init__

            def tagged_init(obj: Any, *a: Any, **k: Any) -> None:
                init(obj, *a, **k)
                if live.active:
                    live.tagged.add(obj)

            cls.__init__ = tagged_init
            for name in draws:
                original = getattr(cls, name)

                def drawing(obj: Any, *a: Any, _original: Any = original, **k: Any) -> Any:
                    if obj in live.tagged and not live.active and not live.program_seeded:
                        with live.fresh():
                            return _original(obj, *a, **k)
                    return _original(obj, *a, **k)

                setattr(cls, name, drawing)

        tag(gluon.data.RandomSampler, ("__iter__",))
        tag(gluon.Block, ("__call__",))
        tag(mx.io.NDArrayIter, ("reset",))
        tag(gluon.data.DataLoader, ())

    def built(self) -> list[Any]:
        """The first batch of each loader or iterator built on a live line (read now, from
        the line's stream), whether or not the program went on to use it."""
        from mxnet import gluon

        out = []
        for obj in list(self.tagged):
            if not isinstance(obj, (gluon.data.DataLoader, mx.io.DataIter)):
                continue
            try:
                with self.fresh():
                    if isinstance(obj, mx.io.DataIter):
                        obj.reset()
                        batch = next(iter(obj))
                        out.append(batch.data)
                    else:
                        raw = getattr(type(obj), "_mxlint_iter", type(obj).__iter__)
                        out.append(next(iter(raw(obj))))
            except Exception:  # noqa: BLE001 - a loader that cannot be read is left out
                continue
        return out
