"""The timer the benchmarks share: calibrated trials of one call, reported as a median."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


class Timer:
    """Times ``fn(arg)``: ``warmup`` calls first (so that caches such as the BSON shape trie
    are warm), then one call calibrates the trial to about ``trial_seconds``; each
    :meth:`trial` records one trial's seconds per call.  (No lambda around the call: its
    ~50 ns would be charged to every implementation.)"""

    def __init__(
        self, fn: Callable[[Any], Any], arg: Any, trial_seconds: float, warmup: int = 3
    ) -> None:
        self.fn, self.arg = fn, arg
        for _ in range(warmup):
            fn(arg)
        start = time.perf_counter()
        fn(arg)
        once = max(time.perf_counter() - start, 1e-9)
        self.n = max(1, int(trial_seconds / once))
        self.results: list[float] = []

    def trial(self) -> float:
        fn, arg, n = self.fn, self.arg, self.n
        start = time.perf_counter()
        for _ in range(n):
            fn(arg)
        self.results.append((time.perf_counter() - start) / n)
        return self.results[-1]

    def median(self) -> float:
        return statistics.median(self.results)
