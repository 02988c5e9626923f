"""A long check says how far it got: one line on stderr, rewritten in place.

Shown only when stderr is a terminal and the run has gone on for :data:`DELAY` seconds (a
quick run, a pipe or a CI log sees nothing), redrawn at most every :data:`INTERVAL` seconds,
and erased when the scan ends, so the report that follows starts on a clean line. It never
reaches a run record (:mod:`driftcheck.replay` keeps the report only).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

DELAY = 1.0
INTERVAL = 0.1
ERASE = "\r\x1b[K"


class Progress:
    """``progress(done, total)`` while files are scanned; :meth:`close` when the scan ends."""

    def __init__(
        self,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        delay: float = DELAY,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.enabled = self.stream.isatty()
        self.start = clock()
        self.delay = delay
        self.shown = False
        self._drawn = float("-inf")

    def __call__(self, done: int, total: int) -> None:
        """Draw ``driftcheck: scanned 120 of 4719 files`` when it is time to."""
        if not self.enabled:
            return
        now = self.clock()
        if now - self.start < self.delay or (now - self._drawn < INTERVAL and done < total):
            return
        self._drawn = now
        self.shown = True
        self.stream.write(f"{ERASE}driftcheck: scanned {done} of {total} files")
        self.stream.flush()

    def close(self) -> None:
        """Erase the line, if one was drawn."""
        if self.shown:
            self.stream.write(ERASE)
            self.stream.flush()
            self.shown = False
