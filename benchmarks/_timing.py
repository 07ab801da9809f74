"""The timer the benchmarks share: calibrated trials of one call, reported as a median."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


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


class PureClient:
    """The main side of a benchmark's ``--pure-worker`` mode: ``script`` runs again in a
    subprocess with PyMongo's C extensions blocked and times PyMongo's pure path on request
    ("NAME PART" in, seconds per call out), so that its trials interleave with ours and the C
    extension's (the machine's speed drifts)."""

    def __init__(self, script: str, trial_seconds: float) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
        command = [sys.executable, script, "--pure-worker", "--trial-seconds", str(trial_seconds)]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, env=env)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin, self.stdout = self.process.stdin, self.process.stdout
        assert self.stdout.readline().strip() == "ready", "the pure-Python worker failed"
        self.results: dict[tuple[str, str], list[float]] = {}

    def trial(self, name: str, part: str) -> None:
        self.stdin.write(f"{name} {part}\n")
        self.stdin.flush()
        self.results.setdefault((name, part), []).append(float(self.stdout.readline()))

    def median(self, name: str, part: str) -> float:
        return statistics.median(self.results[name, part])

    def close(self) -> None:
        self.stdin.close()
        self.process.wait()


def side_by_side_options(description: str) -> tuple[float, int, bool]:
    """The command line of a benchmark that runs PyMongo's pure path in a worker process:
    ``(trial_seconds, trials, is_pure_worker)``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="few iterations (under a minute)")
    parser.add_argument("--trial-seconds", type=float, default=None)
    parser.add_argument("--trials", type=int, default=None)
    parser.add_argument("--pure-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    trial_seconds = args.trial_seconds or (0.02 if args.quick else 0.1)
    trials = args.trials or (5 if args.quick else 11)
    return trial_seconds, trials, args.pure_worker
