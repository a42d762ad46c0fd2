"""Progress reporting for long work: a tqdm bar on a terminal, one plain line every few
seconds otherwise (a log file, CI, ``nohup``) with the elapsed time and an estimate of
the time left, nothing with ``SPML_NO_PROGRESS=1``.

A training run's progress is a callback of the loop
(:class:`spmlkit.training.callbacks.ProgressBar`), inside long epochs too.
"""
from __future__ import annotations

import os
import sys

from tqdm.auto import tqdm
import time

#: seconds between two lines of :class:`LineProgress`
EVERY = 5.0


def format_seconds(s: float) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 07 min``.

    >>> format_seconds(42.4), format_seconds(185), format_seconds(7620)
    ('42 s', '3 min 05 s', '2 h 07 min')
    """
    s = max(0, int(round(s)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class LineProgress:
    """Progress when stderr is not a terminal (a log file, CI, ``nohup``): one plain line
    per step, at most one every ``every`` seconds (and always the last), instead of a bar
    that tqdm would hide until the end::

        bench: step 120/960 yeast an bs 8 (12 s elapsed, about 1 min 24 s left)

    The time left is extrapolated from the rate since the first update (from the start
    while there is only one), so a resumed run that jumps to its epoch 20 is not taken
    for a fast one after its second line."""

    def __init__(self, total: int, desc: str, unit: str, every: float | None = None, initial: int = 0):
        self.total, self.desc, self.unit = total, desc, unit
        self.every = EVERY if every is None else every
        self.n, self.postfix, self._clock = initial, "", time.monotonic
        self.t0 = self._last = self._clock()
        self._start = (self.t0, initial)  # where the rate is measured from
        self._first = None  # (time, position) of the first update
        self._last -= self.every  # the first update prints at once

    def update(self, n: int = 1) -> None:
        self.advance_to(self.n + n)

    def advance_to(self, n: int) -> None:
        """Set the position (e.g. the epoch a resumed run is at) and print if it is time."""
        if n <= self.n:  # (a resumed member repeats an epoch: never move back)
            return
        self.n = n
        now = self._clock()
        if self._first is None:
            self._first = (now, n)
        elif self._start == (self.t0, 0):  # (an explicit initial position keeps the start)
            self._start = self._first
        if now - self._last >= self.every or self.n >= self.total:
            self._last = now
            print(self.line(now), file=sys.stderr, flush=True)

    def line(self, now: float | None = None) -> str:
        now = self._clock() if now is None else now
        t_from, n_from = self._start
        left = ""
        if self.n > n_from and self.n < self.total and now > t_from:
            left = f", about {format_seconds((now - t_from) / (self.n - n_from) * (self.total - self.n))} left"
        return (f"{self.desc}: {self.unit} {self.n}/{self.total}{self.postfix} "
                f"({format_seconds(now - self.t0)} elapsed{left})")

    def set_postfix(self, **kw) -> None:
        self.postfix = "".join(f" {k}={v}" for k, v in kw.items())

    def set_postfix_str(self, text: str) -> None:
        self.postfix = f" {text}" if text else ""

    def close(self) -> None:
        pass


def advance_to(bar, n: int) -> None:
    """Move ``bar`` (a :class:`LineProgress` or a tqdm bar) forward to position ``n``."""
    if isinstance(bar, LineProgress):
        bar.advance_to(n)
    elif n > bar.n:
        bar.update(n - bar.n)


def progress(total: int, desc: str, unit: str = "epoch", *, disable: bool | None = None):
    """A bar on a terminal, :class:`LineProgress` otherwise; nothing with
    ``SPML_NO_PROGRESS=1`` or ``disable=True``."""
    if disable or (disable is None and os.environ.get("SPML_NO_PROGRESS") == "1"):
        return tqdm(total=total, disable=True)
    if not sys.stderr.isatty():
        return LineProgress(total, desc, unit)

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True, smoothing=0.05)
