"""The blocking change stream: an iterator over the core's change stream flows.

``watch()`` on a client, database or collection opens the stream at once (its aggregate runs
before ``watch`` returns, so no change made afterwards is missed) and returns a
:class:`ChangeStream`.  Iterating, :meth:`ChangeStream.next` and :meth:`ChangeStream.try_next`
run :func:`~mongo_sansio.cursors.change_stream_next` / ``change_stream_try_next``, which resume
after resumable errors as the change streams specification says; the resume token is
:attr:`ChangeStream.resume_token`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from mongo_sansio.bson import Timestamp
from mongo_sansio.cursors import ChangeStream as ChangeStreamMachine
from mongo_sansio.cursors import (
    ChangeStreamClosed,
    ChangeStreamOptions,
    ChangeStreamTarget,
    change_stream_close,
    change_stream_next,
    change_stream_open,
    change_stream_try_next,
)
from mongo_sansio.selection import ReadPreference

from ._closing import ClosesOnExit
from ._engine import Engine

__all__ = ["ChangeStream", "watch_options"]


def watch_options(
    *,
    full_document: str | None = None,
    full_document_before_change: str | None = None,
    resume_after: Mapping[str, Any] | None = None,
    start_after: Mapping[str, Any] | None = None,
    start_at_operation_time: Timestamp | None = None,
    max_await_time_ms: int | None = None,
    batch_size: int | None = None,
    collation: Mapping[str, Any] | None = None,
    comment: Any = None,
    show_expanded_events: bool | None = None,
    split_large_events: bool = False,
) -> ChangeStreamOptions:
    """``watch()``'s keyword arguments (PyMongo's names) as the core's options."""
    return ChangeStreamOptions(
        full_document=full_document,
        full_document_before_change=full_document_before_change,
        resume_after=resume_after,
        start_after=start_after,
        start_at_operation_time=start_at_operation_time,
        max_await_time_ms=max_await_time_ms,
        batch_size=batch_size,
        collation=collation,
        comment=comment,
        show_expanded_events=show_expanded_events,
        split_large_events=split_large_events,
    )


class ChangeStream(ClosesOnExit):
    """A change stream (see the module docstring).

    ``next()`` (and iteration) blocks until a change arrives, resuming as needed, and ends
    (StopIteration) once the stream is closed or invalidated.  ``try_next()`` returns the next
    change or None after at most one getMore (and one resume); it returns None, with ``alive``
    False, once the stream has ended: loop ``while stream.alive: stream.try_next()``.
    """

    def __init__(
        self,
        engine: Engine,
        target: ChangeStreamTarget,
        pipeline: Sequence[Mapping[str, Any]] | None,
        options: ChangeStreamOptions,
        read_preference: ReadPreference,
        read_concern: Mapping[str, Any] | None,
        session: Any = None,
    ) -> None:
        self._engine = engine
        self._session = session
        self._stream = ChangeStreamMachine(
            target,
            list(pipeline or ()),
            options,
            read_preference,
            read_concern=read_concern,
        )
        engine.run(change_stream_open(self._stream), session=session)

    @property
    def resume_token(self) -> Mapping[str, Any] | None:
        """The token to resume after the last change returned (or the batch's
        postBatchResumeToken): pass it as ``resume_after`` (or ``start_after`` after an
        invalidate) to a new ``watch()``."""
        return self._stream.resume_token

    @property
    def alive(self) -> bool:
        """Whether the stream may still return changes."""
        return self._stream.alive

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return self

    def __next__(self) -> Mapping[str, Any]:
        try:
            return self._engine.run(change_stream_next(self._stream), session=self._session)
        except ChangeStreamClosed:
            raise StopIteration from None

    next = __next__

    def try_next(self) -> Mapping[str, Any] | None:
        """The next change if one is ready after at most one getMore; else None."""
        if not self._stream.alive:
            return None
        try:
            return self._engine.run(change_stream_try_next(self._stream), session=self._session)
        except ChangeStreamClosed:
            return None

    def close(self) -> None:
        """Close the stream (its server cursor is killed, best effort)."""
        if not self._stream.closed:
            self._engine.run(change_stream_close(self._stream), session=self._session)

    def __del__(self) -> None:
        # Dropped while open: queue the killCursors for the upkeep task (no I/O here).
        stream = getattr(self, "_stream", None)
        if stream is None or stream.closed:
            return
        session = stream.session
        kill = stream.close()
        if kill is not None:
            server, db, body = kill
            self._engine.kill_cursor_later(server.address, db, body, session)

    def __repr__(self) -> str:
        return f"<ChangeStream {self._stream.target!r} alive={self.alive}>"
