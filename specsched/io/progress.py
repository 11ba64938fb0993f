"""The one progress printer of specbed: done/total, rate and ETA for long loops, written to stderr.

Role: below every package that runs long work (analysis sweeps, engine.lm training, ...), so there is one
printer rather than one per package; specsched is the floor both sim and engine may import, and this needs
only the standard library. On a terminal the bar is redrawn in place (at most 10 times a second); elsewhere
(CI logs, pipes) a line is printed at each 10 % and at least every `every` seconds, so logs stay short.

May import: the standard library.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """`total` items ("cells", "steps", ...: `unit`), `done` of them finished before this run (cached, not
    counted in the rate); call `advance(n)` per batch of items or `update(done)` with the count so far, each
    with an optional `note` (e.g. the current loss) shown after the bar."""

    def __init__(
        self,
        total: int,
        *,
        done: int = 0,
        label: str = "sweep",
        unit: str = "cells",
        every: float = 30.0,
        stream: TextIO | None = None,
        enabled: bool = True,
    ) -> None:
        self.total, self.done, self.label, self.unit, self.every = total, done, label, unit, every
        self.start_done, self.note = done, ""
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and total > 0
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.monotonic()
        self._last_draw = 0.0
        self._last_decile = -1
        if self.enabled and self.done:
            self._draw(force=True)

    def text(self) -> str:
        elapsed = time.monotonic() - self.t0
        ran = self.done - self.start_done
        frac = self.done / self.total if self.total else 1.0
        width = 24
        filled = int(frac * width)
        bar = "=" * filled + (">" if filled < width else "") + " " * max(0, width - filled - 1)
        if ran > 0:
            rate = ran / max(elapsed, 1e-9)
            eta = (self.total - self.done) / rate
            tail = f"{rate:.2f} {self.unit}/s  ETA {_clock(eta)}"
        else:
            tail = "ETA --:--"
        note = f"  {self.note}" if self.note else ""
        count = f"{self.done}/{self.total} {frac:4.0%}"
        return f"{self.label} [{bar}] {count}  {_clock(elapsed)} elapsed  {tail}{note}"

    def advance(self, n: int = 1, note: str = "") -> None:
        self.update(self.done + n, note)

    def update(self, done: int, note: str = "") -> None:
        self.done, self.note = done, note
        if self.enabled:
            self._draw()

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.tty:
            if force or now - self._last_draw >= 0.1 or self.done == self.total:
                self.stream.write("\r" + self.text() + "\x1b[K")
                self.stream.flush()
                self._last_draw = now
            return
        decile = int(10 * self.done / self.total)
        if force or decile > self._last_decile or now - self._last_draw >= self.every:
            self.stream.write(self.text() + "\n")
            self.stream.flush()
            self._last_decile, self._last_draw = decile, now

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()
