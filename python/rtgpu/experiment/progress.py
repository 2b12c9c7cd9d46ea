"""Progress with rate and ETA: a tqdm bar on a terminal (when tqdm is
installed); otherwise plain lines (no carriage-return frames in log files),
at most once a second on a terminal and once every 10 s elsewhere, and a
last line when done."""

from __future__ import annotations

import importlib
import sys
import time
from typing import Any

__all__ = ["Progress"]


class Progress:
    def __init__(self, total: int, initial: int, name: str, enabled: bool = True) -> None:
        self.enabled = enabled
        self.total, self.done = total, initial
        self._bar: Any = None
        self._start = time.perf_counter()
        self._initial = initial
        self._last = 0.0
        self._every = 1.0 if sys.stderr.isatty() else 10.0
        if not enabled or not sys.stderr.isatty():
            return
        try:
            tqdm: Any = importlib.import_module("tqdm").tqdm
        except ImportError:
            return
        self._bar = tqdm(
            total=total,
            initial=initial,
            unit="sets",
            unit_scale=True,
            desc=name,
            smoothing=0.05,
            file=sys.stderr,
            dynamic_ncols=True,
        )

    def update(self, n: int) -> None:
        self.done += n
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(n)
            return
        now = time.perf_counter()
        if now - self._last >= self._every or self.done >= self.total:
            self._last = now
            rate = (self.done - self._initial) / max(now - self._start, 1e-9)
            eta = (self.total - self.done) / rate if rate > 0 else float("inf")
            pct = 100.0 * self.done / max(self.total, 1)
            print(
                f"{self.done}/{self.total} sets ({pct:.0f}%)  {rate:,.0f} sets/s  ETA {eta:,.0f} s",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
