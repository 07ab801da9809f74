"""The blocking change stream: an iterator over the core's change stream flows.

``watch()`` on a client, database or collection opens the stream at once (its aggregate runs
before ``watch`` returns, so no change made afterwards is missed) and returns a
:class:`ChangeStream`.  Iterating and :meth:`ChangeStream.next` wait for the next change,
resuming after resumable errors as the change streams specification says, and end
(StopIteration) once the stream is closed or invalidated; ``try_next()``, ``close()``,
``alive`` and ``resume_token`` are shared with the async stream
(:mod:`mongo_sansio.adapters._api.change_stream`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .._api.change_stream import ChangeStreamBase, watch_options
from .._api.closing import ClosesOnExit
from .._api.cursor import END
from .._api.program import Blocking, run_blocking

__all__ = ["ChangeStream", "watch_options"]


class ChangeStream(Blocking, ClosesOnExit, ChangeStreamBase):
    """A change stream (see the module docstring); ``with`` closes it on the way out."""

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return self

    def __next__(self) -> Mapping[str, Any]:
        buffered = self._next_buffered()
        if buffered is not None:
            return buffered
        change: Mapping[str, Any] = run_blocking(self._engine, self._next_change())
        if change is END:
            raise StopIteration
        return change

    next = __next__

    def try_next(self) -> Mapping[str, Any] | None:
        """The next change if one is ready after at most one getMore; else None.  An event
        already in the batch is handed out here, without a round of the engine."""
        buffered = self._next_buffered()
        if buffered is not None:
            return buffered
        change: Mapping[str, Any] | None = super().try_next()
        return change
