"""Fewer cyclic garbage collector passes while an executor turns documents into rows.

Why: a read keeps thousands of containers alive at a time (a decoded batch of a thousand
events is about seven thousand dicts and lists, then their rows until Arrow takes them), so
with CPython's default threshold (a first-generation pass every 700 net allocations) the
collector runs ten times a batch, and its older-generation passes walk everything the worker
holds (Spark's and pyarrow's modules: about a hundred thousand objects).  None of that finds
garbage: decoded documents and rows hold no reference cycles.  Measured on a read of 20,000
change events from the simulator: CPU 0.34 -> 0.28 s, wall 0.48 -> 0.41 s with the threshold
raised, the same as with the collector off.

The threshold is raised, not the collector turned off: a cycle made meanwhile (by the user's
code, or Spark's) is still collected, after 10,000 allocations instead of 700.  The raise is
counted, so overlapping reads in one process (threads) restore the setting once, when the
last of them ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["READ_THRESHOLD", "fewer_gc_passes"]

#: The first generation's threshold while a read runs (CPython's default is 700).
READ_THRESHOLD = 10_000

_lock = threading.Lock()
_readers = 0
_saved: tuple[int, ...] = ()


@contextmanager
def fewer_gc_passes() -> Iterator[None]:
    """Raise the collector's first threshold to :data:`READ_THRESHOLD` (never lower it) for
    the ``with`` block; the setting found is restored when the last overlapping block ends."""
    global _readers, _saved
    with _lock:
        if _readers == 0:
            _saved = gc.get_threshold()
            if _saved[0] < READ_THRESHOLD:
                gc.set_threshold(READ_THRESHOLD, *_saved[1:])
        _readers += 1
    try:
        yield
    finally:
        with _lock:
            _readers -= 1
            if _readers == 0:
                gc.set_threshold(*_saved)
