"""The cursor machine: the results of find, aggregate and the listX commands, batch by batch.

Theory of operation
-------------------
A server answers a cursor-producing command with ``{cursor: {id, ns, firstBatch}}`` and each
``getMore`` with ``{cursor: {id, ns, nextBatch}}``.  :class:`Cursor` keeps the documents of the
current batch, builds the ``getMore`` and ``killCursors`` commands, and reads the replies.  It
knows nothing about connections: the flows at the bottom of this module (:func:`cursor_next`,
:func:`cursor_try_next`, :func:`cursor_close`, :func:`open_cursor`) send its commands through
:func:`~mongo_sansio.command.run_command`.

Inputs: the reply of the command that opened the cursor, the replies of getMore, and the caller's
options (batchSize, limit, maxAwaitTimeMS, comment).
Outputs: documents one by one; ``getMore`` and ``killCursors`` commands as ``(db, body)``.

Rules kept here:

* getMore and killCursors go to the namespace the *server* returned in ``cursor.ns`` (a database
  or cluster aggregate answers ``db.$cmd.aggregate``), on the server that opened the cursor.
* A cursor id of 0 means the server has closed the cursor: no getMore, no killCursors.
* ``limit`` (the CRUD spec's): at most ``limit`` documents are returned; a getMore never asks for
  more than the documents still allowed, and the flows kill the server cursor as soon as the
  limit is reached.  A negative limit means "one batch of at most ``-limit`` documents".
* ``comment`` is repeated on getMore only for servers of wire version 9 (4.4) or later, which
  accept any BSON value there; earlier servers refuse it.
* ``maxAwaitTimeMS`` becomes the getMore's ``maxTimeMS`` (for tailable-await cursors, change
  streams).  The flows leave :class:`~mongo_sansio.flow.RunCommand`'s ``timeout`` unset: the
  adapter adds the command's ``maxTimeMS`` to its socket timeout.  Under a client-side
  operations timeout, :func:`check_max_await` refuses a ``maxAwaitTimeMS`` not below the time
  the operation has (the CSOT spec: maxAwaitTimeMS >= timeoutMS is a client-side error).

After a getMore fails the flows close the cursor (best effort killCursors unless the server
said CursorNotFound); a closed cursor refuses further getMores with
:class:`~mongo_sansio.errors.InvalidOperation`.  A malformed reply raises
:class:`~mongo_sansio.errors.RemoteProtocolError`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from mongo_sansio._numbers import is_int
from mongo_sansio.bson import Int64
from mongo_sansio.command import run_command, run_command_quietly
from mongo_sansio.errors import (
    CursorNotFound,
    InvalidOperation,
    LocalProtocolError,
    MongoError,
    RemoteProtocolError,
)
from mongo_sansio.flow import Flow, GetContext, Now, ServerInfo
from mongo_sansio.ops.retryable import overload_retried

__all__ = [
    "Namespace",
    "InvalidNamespace",
    "Cursor",
    "CursorInterrupted",
    "COMMENT_ON_GET_MORE_WIRE_VERSION",
    "cursor_next",
    "cursor_try_next",
    "cursor_next_batch",
    "cursor_close",
    "check_max_await",
    "open_cursor",
]

#: Servers from this wire version on (4.4) accept ``comment`` on getMore.
COMMENT_ON_GET_MORE_WIRE_VERSION = 9


class InvalidNamespace(LocalProtocolError, ValueError):
    """A namespace string is not ``"<db>.<collection>"`` with both parts non-empty."""


@attrs.frozen
class Namespace:
    """A database and collection name; ``str()`` gives ``"db.coll"``."""

    db: str
    coll: str

    @classmethod
    def parse(cls, value: str) -> Namespace:
        """Split ``"db.coll"`` at its first dot (collection names may contain dots; database
        names may not)."""
        if not isinstance(value, str):
            raise InvalidNamespace(f"namespace must be a string, got {type(value).__name__}")
        db, dot, coll = value.partition(".")
        if not dot or not db or not coll:
            raise InvalidNamespace(f"namespace {value!r} is not of the form 'db.collection'")
        return cls(db, coll)

    def __str__(self) -> str:
        return f"{self.db}.{self.coll}"


def _cursor_section(
    reply: Mapping[str, Any], batch_field: str
) -> tuple[Mapping[str, Any], int, Sequence[Any]]:
    """The reply's ``cursor`` document, its id and its batch, checked.  (Each check tests the
    usual exact type first: the ABC checks behind it cost several times more, on every
    reply.)"""
    if type(reply) is not dict and not isinstance(reply, Mapping):
        raise RemoteProtocolError(f"cursor reply must be a document, got {type(reply).__name__}")
    section = reply.get("cursor")
    if type(section) is not dict and not isinstance(section, Mapping):
        raise RemoteProtocolError("cursor reply has no 'cursor' document")
    cursor_id = section.get("id")
    if not is_int(cursor_id):
        raise RemoteProtocolError(f"cursor reply has no integer 'cursor.id' (got {cursor_id!r})")
    batch = section.get(batch_field)
    if type(batch) is not list and (
        not isinstance(batch, Sequence) or isinstance(batch, str | bytes | bytearray)
    ):
        raise RemoteProtocolError(f"cursor reply has no array 'cursor.{batch_field}'")
    return section, int(cursor_id), batch


def _post_batch_resume_token(section: Mapping[str, Any]) -> Mapping[str, Any] | None:
    token = section.get("postBatchResumeToken")
    if token is None:
        return None
    if not isinstance(token, Mapping):
        raise RemoteProtocolError("cursor.postBatchResumeToken must be a document")
    return token


class CursorInterrupted(InvalidOperation):
    """A cursor was used after one of its getMores was cut mid-way (its batch is lost)."""


class Cursor:
    """One server cursor and the documents of its current batch.

    ``alive`` is True while the server still holds the cursor (its id is not 0 and it was not
    closed here): only then are getMore and killCursors sent.  Documents already buffered can
    still be read when it is False; ``exhausted`` says that nothing more will come.
    """

    def __init__(
        self,
        cursor_id: int,
        namespace: Namespace,
        server: ServerInfo,
        first_batch: Sequence[Any] = (),
        *,
        batch_size: int | None = None,
        limit: int = 0,
        max_await_time_ms: int | None = None,
        comment: Any = None,
        post_batch_resume_token: Mapping[str, Any] | None = None,
    ) -> None:
        if batch_size is not None and (not is_int(batch_size) or batch_size < 0):
            raise LocalProtocolError(
                f"batchSize must be a non-negative integer, got {batch_size!r}"
            )
        if not is_int(limit):
            raise LocalProtocolError(f"limit must be an integer, got {limit!r}")
        self.cursor_id = cursor_id
        self.namespace = namespace
        self.server = server
        self.batch_size = batch_size
        #: 0: no limit.  A negative limit asks for a single batch.
        self.limit = abs(limit)
        self.single_batch = limit < 0
        self.max_await_time_ms = max_await_time_ms
        self.comment = comment
        self.post_batch_resume_token = post_batch_resume_token
        self.returned = 0
        self.closed = False
        self._buffer: deque[Any] = deque(first_batch)
        #: the session the cursor was opened in: its getMores and killCursors use it, and an
        #: implicit one goes back to the pool only when the server holds the cursor no more
        self.session: Any = None
        self._holding = False
        #: a getMore was cut while its reply was awaited: the server moved on, that batch is
        #: lost, so the cursor must not carry on as if nothing happened
        self.interrupted = False
        #: opened with ``tailable`` (a find with CursorType.TAILABLE or TAILABLE_AWAIT): an
        #: empty getMore ends the current iteration but not the cursor (PyMongo's behaviour;
        #: looping on would send getMores back to back, forever, while nothing is inserted)
        self.tailable = False

    def hold_session(self, session: Any) -> None:
        """Keep ``session`` for the cursor's later commands (held while the cursor is alive)."""
        self.session = session
        if session is not None and self.alive:
            session.cursor_holds += 1
            self._holding = True

    def _dead(self) -> None:
        # the server holds the cursor no more: its session is free for other operations
        if self._holding and (self.cursor_id == 0 or self.closed):
            self._holding = False
            self.session.cursor_holds -= 1

    @classmethod
    def from_reply(
        cls,
        reply: Mapping[str, Any],
        server: ServerInfo,
        *,
        batch_size: int | None = None,
        limit: int = 0,
        max_await_time_ms: int | None = None,
        comment: Any = None,
        namespace: Namespace | None = None,
    ) -> Cursor:
        """The cursor a find/aggregate/listX reply opened on ``server``.

        ``namespace`` is used only when the reply names none (the server always does; a reply
        with a live cursor and no readable ``ns`` and no fallback is a protocol error).
        """
        section, cursor_id, batch = _cursor_section(reply, "firstBatch")
        returned_ns = section.get("ns")
        try:
            parsed = Namespace.parse(returned_ns) if returned_ns is not None else namespace
        except InvalidNamespace as error:
            raise RemoteProtocolError(f"cursor.ns: {error}") from None
        if parsed is None:
            if cursor_id != 0:
                raise RemoteProtocolError("cursor reply has a live cursor but no 'cursor.ns'")
            parsed = Namespace("", "")
        return cls(
            cursor_id,
            parsed,
            server,
            batch,
            batch_size=batch_size,
            limit=limit,
            max_await_time_ms=max_await_time_ms,
            comment=comment,
            post_batch_resume_token=_post_batch_resume_token(section),
        )

    # --- state ---------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        """The server still holds this cursor."""
        return self.cursor_id != 0 and not self.closed

    @property
    def buffered(self) -> int:
        """How many documents of the current batch are left to read."""
        return len(self._buffer)

    @property
    def limit_reached(self) -> bool:
        return self.limit != 0 and self.returned >= self.limit

    @property
    def can_get_more(self) -> bool:
        """Whether a getMore may bring more documents (alive, not single-batch, under the limit)."""
        return self.alive and not self.single_batch and not self.limit_reached

    @property
    def exhausted(self) -> bool:
        """Nothing more will come: the buffer is empty (or the limit reached) and no getMore may
        be sent."""
        if self.limit_reached:
            return True
        return not self._buffer and not self.can_get_more

    # --- inputs and outputs ----------------------------------------------------------------

    def next_buffered(self) -> Any | None:
        """The next document of the current batch, or None (buffer empty or limit reached)."""
        if not self._buffer or self.limit_reached:
            return None
        self.returned += 1
        return self._buffer.popleft()

    def next_without_io(self) -> Any | None:
        """The next document of the current batch when :func:`~.cursor.cursor_next` would
        return it without sending anything, else None: not interrupted, and not the limit-th
        document of a cursor the server still holds (the flow kills it after that one).  The
        tests of :meth:`next_buffered` and the flow's in one call: it runs per document."""
        buffer = self._buffer
        if not buffer or self.interrupted:
            return None
        limit = self.limit
        if limit and (
            self.returned >= limit
            or (self.returned + 1 >= limit and self.cursor_id != 0 and not self.closed)
        ):
            return None
        self.returned += 1
        return buffer.popleft()

    def peek_buffered(self) -> Any | None:
        """The next document of the current batch without taking it, or None."""
        return self._buffer[0] if self._buffer else None

    def take_buffered(self) -> list[Any]:
        """Every document of the current batch still allowed by the limit."""
        documents = []
        while (document := self.next_buffered()) is not None:
            documents.append(document)
        return documents

    def get_more_command(self) -> tuple[str, dict[str, Any]]:
        """``(db, body)`` of the next getMore."""
        if not self.alive:
            raise InvalidOperation("cannot send getMore: the cursor is closed")
        body: dict[str, Any] = {"getMore": Int64(self.cursor_id), "collection": self.namespace.coll}
        batch_size = self.batch_size or 0
        if self.limit:
            remaining = self.limit - self.returned - len(self._buffer)
            if remaining <= 0:
                raise InvalidOperation("cannot send getMore: the cursor's limit is reached")
            batch_size = min(batch_size, remaining) if batch_size else remaining
        if batch_size:
            # batchSize 0 is omitted: the server refuses it on getMore ("default" is absence).
            body["batchSize"] = batch_size
        if self.max_await_time_ms is not None:
            body["maxTimeMS"] = self.max_await_time_ms
        if (
            self.comment is not None
            and self.server.max_wire_version >= COMMENT_ON_GET_MORE_WIRE_VERSION
        ):
            body["comment"] = self.comment
        return self.namespace.db, body

    def handle_get_more_reply(self, reply: Mapping[str, Any]) -> None:
        """Read a getMore's ``ok: 1`` reply: the next batch, the new id (0 = exhausted)."""
        if self.closed:
            raise InvalidOperation("getMore reply for a closed cursor")
        section, cursor_id, batch = _cursor_section(reply, "nextBatch")
        if cursor_id not in (0, self.cursor_id):
            raise RemoteProtocolError(
                f"getMore reply names cursor {cursor_id}, expected {self.cursor_id}"
            )
        self.cursor_id = cursor_id
        self.post_batch_resume_token = _post_batch_resume_token(section)
        self._buffer.extend(batch)
        if cursor_id == 0:
            self._dead()

    def handle_get_more_error(self, error: BaseException) -> None:
        """A getMore failed: CursorNotFound means the server holds the cursor no more."""
        if isinstance(error, CursorNotFound):
            self.cursor_id = 0
            self._dead()

    def kill_cursors_command(self) -> tuple[str, dict[str, Any]] | None:
        """``(db, body)`` of the killCursors for this cursor, or None when the server holds it
        no more."""
        if not self.alive:
            return None
        return self.namespace.db, {
            "killCursors": self.namespace.coll,
            "cursors": [Int64(self.cursor_id)],
        }

    def close(self) -> tuple[str, dict[str, Any]] | None:
        """Close the cursor here: drop the buffered documents and return the killCursors to
        send (None when the server holds no cursor)."""
        command = self.kill_cursors_command()
        self.closed = True
        self._buffer.clear()
        # the session stays named by the killCursors; it returns to the pool when the
        # operation sending that command ends
        self._dead()
        return command

    def command_session(self) -> Any:
        """The session to send the cursor's commands with (the one it was opened in)."""
        return self.session

    def __repr__(self) -> str:
        return (
            f"Cursor(id={self.cursor_id}, ns={str(self.namespace)!r}, "
            f"server={self.server.address!r}, buffered={len(self._buffer)}, alive={self.alive})"
        )


# --- flows ---------------------------------------------------------------------------------


def check_max_await(max_await_time_ms: int | None) -> Flow[None]:
    """Refuse, before anything is sent, a ``maxAwaitTimeMS`` not below the time the operation
    has left (timeoutMS when it starts): no awaitData getMore could wait that long and still
    answer in time.  Nothing to check without a deadline or without maxAwaitTimeMS."""
    if max_await_time_ms is None:
        return
    context = yield GetContext()
    deadline = getattr(context, "deadline", None)
    if deadline is None or deadline == float("inf"):
        return
    now = yield Now()
    if max_await_time_ms >= (deadline - now) * 1000:
        raise InvalidOperation(
            f"maxAwaitTimeMS ({max_await_time_ms}) must be less than timeoutMS (the operation's "
            "client-side timeout)"
        )


def _within_deadline(body: dict[str, Any]) -> Flow[dict[str, Any]]:
    """A cursor's killCursors, under a client-side operations timeout, carries what is left
    of it as ``maxTimeMS`` (the CSOT spec's close-cursors tests: a close has a timeout of its
    own).  The client's background kills run without one."""
    context = yield GetContext()
    deadline = getattr(context, "deadline", None)
    if deadline is None or deadline == float("inf"):
        return body
    now = yield Now()
    return {**body, "maxTimeMS": max(1, int((deadline - now) * 1000))}


def _await_within_deadline(body: dict[str, Any]) -> Flow[dict[str, Any]]:
    """An awaitData getMore waits at most what is left of the operation's timeout (CSOT: the
    smaller of maxAwaitTimeMS and the remaining timeoutMS); at least 1 ms, so that a getMore
    sent just before the deadline still carries a valid maxTimeMS."""
    context = yield GetContext()
    deadline = getattr(context, "deadline", None)
    if deadline is None or deadline == float("inf"):
        return body
    now = yield Now()
    left_ms = max(1, int((deadline - now) * 1000))
    if left_ms < body["maxTimeMS"]:
        body = {**body, "maxTimeMS": left_ms}
    return body


def open_cursor(
    server: ServerInfo,
    db: str,
    body: Mapping[str, Any],
    *,
    batch_size: int | None = None,
    limit: int = 0,
    max_await_time_ms: int | None = None,
    comment: Any = None,
) -> Flow[Cursor]:
    """Run a cursor-producing command (find, aggregate, listCollections, listIndexes) on
    ``server`` and return its :class:`Cursor`."""
    reply = yield from run_command(server, db, body)
    command_name = next(iter(body), None)
    target = body.get(command_name) if command_name is not None else None
    fallback = Namespace(db, target if isinstance(target, str) and target else "$cmd.aggregate")
    cursor = Cursor.from_reply(
        reply,
        server,
        batch_size=batch_size,
        limit=limit,
        max_await_time_ms=max_await_time_ms,
        comment=comment,
        namespace=fallback,
    )
    cursor.tailable = body.get("tailable") is True
    if cursor.alive:  # (only a cursor the server holds sends more commands, in that session)
        context = yield GetContext()
        cursor.hold_session(getattr(context, "session", None))
    return cursor


def _get_more(cursor: Cursor) -> Flow[None]:
    """One getMore; on failure the cursor is closed (killCursors unless CursorNotFound)."""
    db, body = cursor.get_more_command()
    if "maxTimeMS" in body:  # maxAwaitTimeMS: only tailable-await cursors pay for the check
        body = yield from _await_within_deadline(body)

    def attempt(server: ServerInfo) -> Flow[Mapping[str, Any]]:
        return (yield from run_command(server, db, body, session=cursor.command_session()))

    try:
        # a getMore is retried on its cursor's server after retryable overload errors only
        # (client-backpressure.md; with retryReads)
        reply = yield from overload_retried(
            attempt, operation="getMore", reads=True, server=cursor.server
        )
        cursor.handle_get_more_reply(reply)
    except MongoError as error:
        cursor.handle_get_more_error(error)
        if cursor.server.load_balanced and cursor.alive:
            # load-balanced: the cursor keeps its pinned connection until it is closed
            # (load-balancers.md, "Behaviour With Cursors"; no killCursors after a network
            # error, see mongo_sansio.client.pinning)
            raise
        if getattr(error, "timeout", False) and cursor.alive:
            # the operation's time is up: its killCursors could not be sent in time, so the
            # cursor is left interrupted (close() kills it with a timeout of its own; the
            # next iteration kills it and says the batch is lost)
            cursor.interrupted = True
            raise
        yield from cursor_close(cursor)
        raise
    except BaseException:
        cursor.interrupted = True
        raise


def _check_interrupted(cursor: Cursor) -> Flow[None]:
    yield from cursor_close(cursor)
    raise CursorInterrupted(
        "the cursor's last getMore was interrupted while its reply was awaited: that "
        "batch is lost, so the cursor is closed (open a new one to read on)"
    )


def cursor_close(cursor: Cursor) -> Flow[None]:
    """Close the cursor; killCursors (best effort, errors swallowed) when the server holds it."""
    session = cursor.command_session()
    command = cursor.close()
    if command is not None:
        db, body = command
        body = yield from _within_deadline(body)
        yield from run_command_quietly(cursor.server, db, body, session=session)


def _after_document(cursor: Cursor) -> Flow[None]:
    # The limit-th document: the server cursor has nothing more for us, free it now.
    if cursor.limit_reached and cursor.alive:
        yield from cursor_close(cursor)


def cursor_next(cursor: Cursor) -> Flow[Any | None]:
    """The next document, sending getMores while batches come back empty and the cursor is
    alive; None once the cursor is exhausted (its server cursor then closed).  A tailable
    cursor sends at most one getMore: an empty batch gives None with the cursor still alive
    (the iteration ends; a later one reads what was inserted since), as in PyMongo."""
    if cursor.interrupted:
        yield from _check_interrupted(cursor)
    sent = False
    while True:
        document = cursor.next_buffered()
        if document is not None:
            yield from _after_document(cursor)
            return document
        if not cursor.can_get_more:
            yield from cursor_close(cursor)
            return None
        if sent and cursor.tailable:
            return None
        yield from _get_more(cursor)
        sent = True


def cursor_try_next(cursor: Cursor) -> Flow[Any | None]:
    """The next document, sending at most one getMore; None when that batch was empty too."""
    if cursor.interrupted:
        yield from _check_interrupted(cursor)
    document = cursor.next_buffered()
    if document is None:
        if not cursor.can_get_more:
            yield from cursor_close(cursor)
            return None
        yield from _get_more(cursor)
        document = cursor.next_buffered()
    if document is not None:
        yield from _after_document(cursor)
    return document


def cursor_next_batch(cursor: Cursor) -> Flow[list[Any]]:
    """The rest of the current batch, or the next non-empty one; an empty list once the cursor
    is exhausted."""
    if cursor.interrupted:
        yield from _check_interrupted(cursor)
    sent = False
    while True:
        documents = cursor.take_buffered()
        if documents:
            yield from _after_document(cursor)
            return documents
        if not cursor.can_get_more:
            yield from cursor_close(cursor)
            return []
        if sent and cursor.tailable:  # as in cursor_next: the cursor stays alive
            return []
        yield from _get_more(cursor)
        sent = True
