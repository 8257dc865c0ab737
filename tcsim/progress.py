"""Progress of a long computation: a bar on stderr when it is a terminal, nothing otherwise.

    with progress(total, "kernel2 M=4096 N=4096 K=4096") as tick:
        for part in parts:
            ...
            tick(len(part))          # units of work done since the last tick

The bar shows up only once the work has run for ``delay`` seconds (a quick call prints
nothing), redraws at most ten times a second, and is erased when the work ends, so the
terminal keeps only what the program prints itself. Piped or redirected stderr (a log, a
test, a notebook) gets nothing. ``TCSIM_PROGRESS=0`` turns the bar off, ``=1`` on even
without a terminal. `tick` may be called from several threads.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from .isa.validate import integer

WIDTH = 30  # characters of the bar itself
DELAY_SECONDS = 1.0  # no bar for work that ends sooner
REDRAW_SECONDS = 0.1


def wanted(stream: TextIO) -> bool:
    """Whether to draw on ``stream``: TCSIM_PROGRESS if set ("0" or "1"), else whether the
    stream is a terminal."""
    setting = os.environ.get("TCSIM_PROGRESS", "").strip()
    if setting in ("0", "1"):
        return setting == "1"
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


@contextmanager
def progress(total: int, label: str, *, stream: TextIO | None = None,
             enabled: bool | None = None,
             delay: float | None = None) -> Iterator[Callable[[int], None]]:
    """A `tick(done=1)` function that counts ``done`` of ``total`` units of work, drawing a
    bar on ``stream`` (default stderr) as it goes; see the module docstring. ``enabled``
    (default: `wanted`) and ``delay`` (seconds before the first drawing, default
    `DELAY_SECONDS`) are for callers and tests that know better."""
    total = integer(total, "progress total", minimum=0)
    out = sys.stderr if stream is None else stream
    bar = _Bar(total, str(label), out, wanted(out) if enabled is None else bool(enabled),
               DELAY_SECONDS if delay is None else delay)
    try:
        yield bar.tick
    finally:
        bar.close()


class _Bar:
    def __init__(self, total: int, label: str, stream: TextIO, enabled: bool,
                 delay: float) -> None:
        self.total, self.label, self.stream, self.enabled = total, label, stream, enabled
        self.delay = delay
        self.done = 0
        self.start = time.monotonic()
        self.drawn_at: float | None = None  # when the bar was last drawn; None: never
        self.width = 0  # characters on the line now, to erase them
        self.lock = threading.Lock()

    def tick(self, done: int = 1) -> None:
        with self.lock:
            self.done = min(self.total, self.done + done)
            if not self.enabled:
                return
            now = time.monotonic()
            if now - self.start < self.delay:
                return
            if self.drawn_at is not None and now - self.drawn_at < REDRAW_SECONDS \
                    and self.done < self.total:
                return
            self._draw(now)

    def _draw(self, now: float) -> None:
        share = self.done / self.total if self.total else 1.0
        filled = round(WIDTH * share)
        elapsed = now - self.start
        left = (f", {_seconds(elapsed * (1 - share) / share)} left" if 0 < share < 1
                else "")
        line = (f"{self.label} [{'#' * filled}{'.' * (WIDTH - filled)}] {100 * share:3.0f}%"
                f" ({_seconds(elapsed)}{left})")
        self._write("\r" + line + " " * max(0, self.width - len(line)))
        self.width = len(line)
        self.drawn_at = now

    def close(self) -> None:
        with self.lock:
            if self.drawn_at is not None:  # erase the bar: the line is the program's again
                self._write("\r" + " " * self.width + "\r")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed terminal: the work goes on without a bar
            self.enabled = False


def _seconds(s: float) -> str:
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{s // 60:.0f} min {s % 60:02.0f} s"
    return f"{s // 3600:.0f} h {s % 3600 // 60:02.0f} min"
