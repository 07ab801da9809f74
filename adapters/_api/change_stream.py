"""What the blocking and async change streams share: the core's change stream flows, written
once as programs (:mod:`.program`).

``watch()`` on a client, database or collection opens the stream at once (its aggregate runs
before ``watch`` returns, or before the awaited ``watch`` does, so no change made afterwards is
missed) and returns the flavour's change stream.  Reading (``next``, iteration, ``try_next``)
runs :func:`~mongo_sansio.cursors.change_stream_next` / ``change_stream_try_next``, which
resume after resumable errors as the change streams specification says; the resume token is
:attr:`ChangeStreamBase.resume_token`.

``next()`` waits until a change arrives, resuming as needed, and the stream's iteration ends
once it is closed or invalidated.  ``try_next()`` returns the next change or None after at
most one getMore (and one resume); it returns None, with ``alive`` False, once the stream has
ended: loop ``while stream.alive: stream.try_next()``.  Each flavour adds iteration and
``with`` / ``async with`` around :meth:`ChangeStreamBase._next_change`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mongo_sansio.bson import Timestamp
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
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
from mongo_sansio.cursors.buffered import change_stream_next_buffered
from mongo_sansio.ops.decoding import apply_codec_options
from mongo_sansio.selection import ReadPreference

from .cursor import END
from .program import Program, Run, operation
from .validators import check_pipeline

__all__ = ["ChangeStreamBase", "watch_options"]


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


class ChangeStreamBase:
    """A change stream (see the module docstring).  Built unopened: :meth:`_opening` is the
    program ``watch()`` runs before handing it out."""

    def __init__(
        self,
        engine: Any,
        target: ChangeStreamTarget,
        pipeline: Sequence[Mapping[str, Any]] | None,
        options: ChangeStreamOptions,
        read_preference: ReadPreference,
        read_concern: Mapping[str, Any] | None,
        session: Any = None,
        codec_options: CodecOptions | None = None,
        timeout: float | None = None,
    ) -> None:
        self._engine = engine
        self._session = session
        # the watched database's or collection's timeoutMS (seconds; None: the client's), for
        # the opening aggregate and every read, as for the object's other operations
        self._timeout = timeout
        # events decode with the watched object's codec options (RawDocument ones leave each
        # event a view over its reply's bytes: see Connection.send_command)
        self._codec_options = DEFAULT_CODEC_OPTIONS if codec_options is None else codec_options
        self._stream = ChangeStreamMachine(
            target,
            list(check_pipeline(pipeline) or ()),
            options,
            read_preference,
            read_concern=read_concern,
        )

    def _step(self, flow: Any) -> Run:
        return Run(flow, self._session, self._timeout, self._codec_options)

    def _opening(self) -> Program[None]:
        """Open the stream (``watch()`` runs this before handing the stream out)."""
        yield self._step(change_stream_open(self._stream))

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

    def _next_buffered(self) -> Mapping[str, Any] | None:
        """An event already in memory, when reading it sends nothing (None: run a program)."""
        event = change_stream_next_buffered(self._stream)
        if event is None or self._codec_options is DEFAULT_CODEC_OPTIONS:
            return event
        return apply_codec_options(event, self._codec_options)  # type: ignore[no-any-return]

    def _next_change(self) -> Program[Any]:
        """The next change, waiting for it; :data:`~.cursor.END` once the stream is closed."""
        try:
            change = yield self._step(change_stream_next(self._stream))
        except ChangeStreamClosed:
            return END
        return apply_codec_options(change, self._codec_options)

    @operation
    def try_next(self) -> Program[Mapping[str, Any] | None]:
        """The next change if one is ready after at most one getMore; else None."""
        buffered = self._next_buffered()
        if buffered is not None:
            return buffered
        if not self._stream.alive:
            return None
        try:
            change: Mapping[str, Any] | None = yield self._step(
                change_stream_try_next(self._stream)
            )
        except ChangeStreamClosed:
            return None
        return apply_codec_options(change, self._codec_options)  # type: ignore[no-any-return]

    @operation
    def close(self) -> Program[None]:
        """Close the stream (its server cursor is killed, best effort)."""
        if not self._stream.closed:
            yield self._step(change_stream_close(self._stream))

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
        return f"<{type(self).__name__} {self._stream.target!r} alive={self.alive}>"
