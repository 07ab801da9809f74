"""The change stream flows: open, next, try_next and close, resuming as the spec says.

Each flow is a generator over :mod:`mongo_sansio.flow` that drives a
:class:`~mongo_sansio.cursors.change_stream.ChangeStream` machine: it asks the machine for a
command, runs it with :func:`~mongo_sansio.command.run_command`, and hands the machine the
reply or the error.  The machine decides (resume or raise, which resume point, which token); the
flows only sequence the requests.

Inputs (sent in by the adapter): the :class:`~mongo_sansio.flow.ServerInfo` chosen for a
:class:`~mongo_sansio.flow.SelectServer`, command replies, and
:class:`~mongo_sansio.errors.NetworkError` thrown in for I/O failures.
Outputs (yielded): ``SelectServer`` with the stream's read preference, ``RunCommand`` for
aggregate, getMore and killCursors (and the ``MarkServerUnknown`` that ``run_command`` adds);
returned: change events.

A resume is: select a server with the original read preference, kill the old cursor on the
server that held it (errors swallowed), run the aggregate with the resume point.  An error of
that aggregate is raised.  Errors that leave a flow close the stream (killing its cursor, best
effort), except a resumable error raised because it followed a resume without progress: then
the stream stays open and the next call resumes first.

getMore timeouts: the getMore carries ``maxTimeMS`` = maxAwaitTimeMS; the ``RunCommand`` is sent
without ``timeout`` and the adapter extends its socket timeout by the command's ``maxTimeMS``.
Sessions: the first aggregate's session (the caller's, or the operation's implicit one) is
kept by the stream and sent with every later getMore, resume and killCursors, so the server
sees one session for the stream's whole life; an implicit one returns to the pool once the
stream is closed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from mongo_sansio.command import run_command, run_command_quietly
from mongo_sansio.cursors.change_stream import ChangeStream, ResumeDecision
from mongo_sansio.cursors.cursor import check_max_await
from mongo_sansio.cursors.errors import ChangeStreamClosed
from mongo_sansio.errors import InvalidOperation, MongoError
from mongo_sansio.flow import Flow, GetContext, SelectServer, ServerInfo
from mongo_sansio.ops.retryable import retryable_read

__all__ = [
    "change_stream_open",
    "change_stream_next",
    "change_stream_try_next",
    "change_stream_close",
]

T = TypeVar("T")


def change_stream_open(cs: ChangeStream) -> Flow[None]:
    """Select a server for the stream's read preference and run its first aggregate.  An error
    is raised as it is (never resumed) and closes the stream."""
    if cs.started:
        raise InvalidOperation("the change stream was opened already")
    try:
        yield from check_max_await(cs.options.max_await_time_ms)
        context = yield GetContext()
        cs.hold_session(getattr(context, "session", None))

        def attempt(server: ServerInfo) -> Flow[None]:
            db, body = cs.aggregate_command(server)
            reply = yield from run_command(server, db, body, session=cs.session)
            cs.handle_aggregate_reply(reply, server)

        # the first aggregate is a retryable read (Retryable Reads); resumes follow their own
        # rules below
        yield from retryable_read(attempt, cs.read_preference, operation="aggregate")
    except MongoError:
        yield from change_stream_close(cs)
        raise
    except BaseException:
        cs.close()
        raise


def change_stream_next(cs: ChangeStream) -> Flow[Mapping[str, Any]]:
    """The next change event, sending getMores (and resuming) until one comes.  Raises
    :class:`~mongo_sansio.cursors.errors.ChangeStreamClosed` when the stream is closed or its
    cursor ends."""
    return (yield from _read(cs, _wait_for_event(cs)))


def change_stream_try_next(cs: ChangeStream) -> Flow[Mapping[str, Any] | None]:
    """The next change event if one is buffered or comes with a single getMore (or the single
    resume that follows its resumable error); None otherwise.  The resume token
    (``cs.resume_token``) is up to date either way.  Raises
    :class:`~mongo_sansio.cursors.errors.ChangeStreamClosed` when the stream is closed."""
    return (yield from _read(cs, _event_after_one_step(cs)))


def change_stream_close(cs: ChangeStream) -> Flow[None]:
    """Close the stream; killCursors (best effort) when the server still holds its cursor."""
    session = cs.session
    kill = cs.close()
    if kill is not None:
        server, db, body = kill
        yield from run_command_quietly(server, db, body, session=session)


def _read(cs: ChangeStream, reading: Flow[T]) -> Flow[T]:
    """Run a flow that reads events from ``cs``: an error leaving it ends the stream as the
    module documentation says, and a stream whose cursor is exhausted is closed."""
    try:
        result = yield from reading
    except MongoError:
        yield from _after_error(cs)
        raise
    except BaseException:
        _abandon(cs)
        raise
    if not cs.alive:
        yield from change_stream_close(cs)
    return result


def _wait_for_event(cs: ChangeStream) -> Flow[Mapping[str, Any]]:
    while True:
        event = cs.next_event()
        if event is not None:
            return event
        if not cs.alive:
            raise ChangeStreamClosed("the server closed the change stream's cursor")
        yield from _advance(cs)


def _event_after_one_step(cs: ChangeStream) -> Flow[Mapping[str, Any] | None]:
    event = cs.next_event()
    if event is None and cs.alive and cs.needs_resume:
        # a resume left pending by an earlier call is not this call's step: its getMore is
        yield from _resume(cs)
        event = cs.next_event()
    if event is None and cs.alive:
        yield from _advance(cs)
        event = cs.next_event()
    return event


def _advance(cs: ChangeStream) -> Flow[None]:
    """One step towards more events: a pending resume, or a getMore (resuming once if it fails
    with a resumable error)."""
    if cs.needs_resume:
        yield from _resume(cs)
        return
    server, db, body = cs.get_more_command()
    try:
        reply = yield from run_command(server, db, body, session=cs.session)
    except MongoError as error:
        if cs.handle_get_more_error(error) is ResumeDecision.RAISE:
            raise
        if getattr(error, "timeout", False):
            context = yield GetContext()
            if getattr(context, "deadline", None) is not None:
                # CSOT: this call's time is up, so it raises the timeout; the stream stays
                # open and the next call resumes (the change streams' CSOT rule)
                cs.interrupt()
                raise
        yield from _resume(cs)
        return
    cs.handle_get_more_reply(reply)


def _resume(cs: ChangeStream) -> Flow[None]:
    server = yield SelectServer(cs.read_preference)
    kill = cs.begin_resume()
    if kill is not None:
        old_server, kill_db, kill_body = kill
        yield from run_command_quietly(old_server, kill_db, kill_body, session=cs.session)
    db, body = cs.aggregate_command(server)
    reply = yield from run_command(server, db, body, session=cs.session)
    cs.handle_aggregate_reply(reply, server)


def _after_error(cs: ChangeStream) -> Flow[None]:
    # A resumable error raised after a resume leaves the stream waiting to resume; any other
    # error ends it.
    if not cs.needs_resume:
        yield from change_stream_close(cs)


def _abandon(cs: ChangeStream) -> None:
    # Not a library error (the task was cancelled, a timeout around the call, a bug): no more
    # requests may be yielded now; the stream resumes from its token on the next call (the old
    # cursor gets its killCursors then).
    cs.interrupt()
