"""The change stream machine: commands to send, the cached resume token, resume-or-raise.

Theory of operation
-------------------
A change stream (change-streams.md) is an ``aggregate`` whose pipeline starts with
``$changeStream``, read through a tailable-await cursor, that *resumes* by itself after a
transient failure: it opens a new cursor from the last point it reported to the user.
:class:`ChangeStream` holds everything that decides how: the cached resume token, the saved
operation time, whether an event was returned yet, and the cursor.  It never sends anything
itself: the flows in :mod:`mongo_sansio.cursors.change_stream_flow` ask it for commands, run
them, and hand it the replies and errors.

Inputs: the target (collection, database or cluster), the user's pipeline and
:class:`ChangeStreamOptions`, the read preference; aggregate and getMore replies; getMore errors.
Outputs: ``aggregate``, ``getMore`` and ``killCursors`` commands; change events one at a time;
:class:`ResumeDecision` for each getMore error; the resume token (:attr:`ChangeStream.resume_token`).

The rules, from the spec:

* Resume token: ``startAfter`` or else ``resumeAfter`` when the stream starts; the
  ``postBatchResumeToken`` of an aggregate or getMore that returned an empty batch; for an event
  returned to the user, the batch's ``postBatchResumeToken`` when the event was the batch's last
  one, else the event's ``_id``.  An event without ``_id`` raises :class:`MissingResumeToken`
  and closes the stream.
* Resumable errors (:func:`is_resumable_error`) of a *getMore* only -- an aggregate's error is
  always raised: network errors and timeouts, CursorNotFound (43), and then by wire version of
  the server that ran the getMore: from 9 (4.4) the ``ResumableChangeStreamError`` label, before
  it the codes of :data:`RESUMABLE_CODES_BEFORE_WIRE_9`.
* One resume per error: an error that comes before the stream made progress since its last
  resume (a getMore succeeded or an event was returned) is raised instead of resumed again.
  The stream stays open in that case and resumes at the start of the next call; every other
  error that leaves a flow closes the stream.
* The resume point (:func:`choose_resume_point`): with a cached token, ``startAfter`` when the
  stream was started with ``startAfter`` and has returned no event yet, else ``resumeAfter``;
  without one, ``startAtOperationTime`` (the user's, or the ``operationTime`` saved from the first
  aggregate) on wire version 7+; else the original command.
* ``operationTime`` of the first aggregate is saved when the user gave none of
  ``startAfter``/``resumeAfter``/``startAtOperationTime``, the server's wire version is 7+, the
  first batch is empty and the reply has no ``postBatchResumeToken``.
* An ``invalidate`` event is returned to the user and then the stream is closed: further calls
  raise :class:`ChangeStreamClosed`.  A stream started with ``startAfter`` set to the invalidate
  event's ``_id`` goes on after it.
* Events split by ``$changeStreamSplitLargeEvent`` are returned as they come, unless
  ``split_large_events`` is set: then the stage is appended to the pipeline and the fragments are
  merged into one event (:mod:`mongo_sansio.cursors.split_events`).  While an event is partly
  received the token is not advanced (a resume starts over with its first fragment).

States: NEW -> OPEN (aggregate reply) -> RESUMING (resume begun) -> OPEN, and OPEN ->
RESUME_PENDING (a resumable error raised to the user) -> RESUMING; anything -> CLOSED.  An input
in a state that does not take it raises :class:`~mongo_sansio.errors.LocalProtocolError` before
anything changes; a reply that breaks the protocol closes the stream.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from mongo_sansio.bson import RawDocument, Timestamp
from mongo_sansio.bson._twins import pymongo_marker
from mongo_sansio.cmap.errors import PoolClearedError
from mongo_sansio.cursors.cursor import Cursor, Namespace
from mongo_sansio.cursors.errors import (
    ChangeStreamClosed,
    ChangeStreamError,
    MissingResumeToken,
    SplitEventError,
)
from mongo_sansio.cursors.split_events import FragmentAssembler, is_fragment
from mongo_sansio.errors import (
    ConfigurationError,
    LocalProtocolError,
    NetworkError,
    RemoteProtocolError,
    ServerError,
)
from mongo_sansio.flow import ServerInfo
from mongo_sansio.selection.read_preference import PRIMARY, ReadPreference

__all__ = [
    "ChangeStreamOptions",
    "ChangeStreamTarget",
    "ChangeStream",
    "ResumeDecision",
    "KillCursors",
    "ChangeStreamError",
    "ChangeStreamClosed",
    "MissingResumeToken",
    "SplitEventError",
    "RESUMABLE_CODES_BEFORE_WIRE_9",
    "RESUMABLE_LABEL",
    "CURSOR_NOT_FOUND",
    "is_resumable_error",
    "choose_resume_point",
]

#: The error label servers of wire version 9+ put on errors a change stream may resume after.
RESUMABLE_LABEL: Final = "ResumableChangeStreamError"
CURSOR_NOT_FOUND: Final = 43
#: From this wire version (4.4) the label alone decides (besides CursorNotFound).
LABEL_WIRE_VERSION: Final = 9
#: From this wire version (4.0) the server takes ``startAtOperationTime``.
OPERATION_TIME_WIRE_VERSION: Final = 7

#: Resumable server error codes for servers before wire version 9 (change-streams.md,
#: "Resumable Error").
RESUMABLE_CODES_BEFORE_WIRE_9: Final = frozenset(
    {
        6,  # HostUnreachable
        7,  # HostNotFound
        89,  # NetworkTimeout
        91,  # ShutdownInProgress
        189,  # PrimarySteppedDown
        262,  # ExceededTimeLimit
        9001,  # SocketException
        10107,  # NotWritablePrimary
        11600,  # InterruptedAtShutdown
        11602,  # InterruptedDueToReplStateChange
        13435,  # NotPrimaryNoSecondaryOk
        13436,  # NotPrimaryOrSecondary
        63,  # StaleShardVersion
        150,  # StaleEpoch
        13388,  # StaleConfig
        234,  # RetryChangeStream
        133,  # FailedToSatisfyReadPreference
    }
)

_SPLIT_STAGE: Final = "$changeStreamSplitLargeEvent"
_RESUME_FIELDS: Final = ("resumeAfter", "startAfter", "startAtOperationTime")


def is_resumable_error(error: BaseException, max_wire_version: int) -> bool:
    """Whether a change stream resumes after ``error`` from a getMore sent to a server of
    ``max_wire_version`` (the wire version of that getMore's connection, not of a later one).

    Other errors of the library (a malformed reply, a misuse) are not resumed: a new cursor
    cannot fix them.
    """
    if isinstance(error, NetworkError):
        return True
    if isinstance(error, PoolClearedError):
        # the cursor's server was marked Unknown after a network error elsewhere (a mongos
        # killed): not a server's answer, so resumable (on another server, as after a
        # network error)
        return True
    if not isinstance(error, ServerError):
        return False
    if error.code == CURSOR_NOT_FOUND:
        return True
    if max_wire_version >= LABEL_WIRE_VERSION:
        return error.has_error_label(RESUMABLE_LABEL)
    return error.code in RESUMABLE_CODES_BEFORE_WIRE_9


def choose_resume_point(
    *,
    resume_token: Mapping[str, Any] | None,
    started_with_start_after: bool,
    returned_any: bool,
    operation_time: Timestamp | None,
    max_wire_version: int,
) -> dict[str, Any] | None:
    """The ``$changeStream`` field a resume sets (change-streams.md, "Resume Process"); None
    means "resend the original command" (the other two resume fields are then not set)."""
    if resume_token is not None:
        if started_with_start_after and not returned_any:
            return {"startAfter": resume_token}
        return {"resumeAfter": resume_token}
    if operation_time is not None and max_wire_version >= OPERATION_TIME_WIRE_VERSION:
        return {"startAtOperationTime": operation_time}
    return None


def _optional_int(name: str) -> Any:
    def check(_instance: object, _attribute: object, value: object) -> None:
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 0
        ):
            raise ConfigurationError(f"{name}: must be a non-negative integer, got {value!r}")

    return check


def _optional_document(name: str) -> Any:
    def check(_instance: object, _attribute: object, value: object) -> None:
        if value is not None and not isinstance(value, Mapping):
            raise ConfigurationError(f"{name}: must be a document, got {value!r}")

    return check


def _optional_timestamp(_instance: object, _attribute: object, value: Any) -> None:
    if value is not None and not isinstance(value, Timestamp):
        raise ConfigurationError(f"startAtOperationTime: must be a Timestamp, got {value!r}")


def _ours_timestamp(value: Any) -> Any:
    """PyMongo's ``bson.Timestamp`` (a session's ``operation_time`` when the client's values
    are PyMongo's) made ours; anything else unchanged, for the validator."""
    if value is not None and not isinstance(value, Timestamp) and pymongo_marker(type(value)) == 17:
        return Timestamp(value.time, value.inc)
    return value


@attrs.frozen(kw_only=True)
class ChangeStreamOptions:
    """The options of ``watch`` (change-streams.md, "ChangeStreamOptions").

    ``full_document``, ``full_document_before_change``, ``resume_after``, ``start_after``,
    ``start_at_operation_time`` and ``show_expanded_events`` go in the ``$changeStream`` stage;
    ``batch_size``, ``collation`` and ``comment`` on the aggregate (``batch_size`` and, for wire
    version 9+, ``comment`` on getMore too); ``max_await_time_ms`` only on getMore, as
    ``maxTimeMS``.  Unknown ``full_document*`` values are passed on for the server to judge, as
    are conflicting start options.  ``split_large_events`` appends ``$changeStreamSplitLargeEvent``
    and reassembles its fragments.
    """

    full_document: str | None = None
    full_document_before_change: str | None = None
    resume_after: Mapping[str, Any] | None = attrs.field(
        default=None, validator=_optional_document("resumeAfter")
    )
    start_after: Mapping[str, Any] | None = attrs.field(
        default=None, validator=_optional_document("startAfter")
    )
    start_at_operation_time: Timestamp | None = attrs.field(
        default=None, converter=_ours_timestamp, validator=_optional_timestamp
    )
    max_await_time_ms: int | None = attrs.field(
        default=None, validator=_optional_int("maxAwaitTimeMS")
    )
    batch_size: int | None = attrs.field(default=None, validator=_optional_int("batchSize"))
    collation: Mapping[str, Any] | None = attrs.field(
        default=None, validator=_optional_document("collation")
    )
    comment: Any = None
    show_expanded_events: bool | None = None
    split_large_events: bool = False


@attrs.frozen
class ChangeStreamTarget:
    """What a change stream watches: a collection (``coll`` set), a database (``coll`` None),
    or the whole cluster (``cluster=True``, which needs ``db="admin"`` and no ``coll``)."""

    db: str
    coll: str | None = None
    cluster: bool = False

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.db, str) or not self.db:
            raise ConfigurationError(
                f"watch: database name must be a non-empty string, got {self.db!r}"
            )
        if self.coll is not None and (not isinstance(self.coll, str) or not self.coll):
            raise ConfigurationError(
                f"watch: collection name must be a non-empty string, got {self.coll!r}"
            )
        if self.cluster and (self.db != "admin" or self.coll is not None):
            raise ConfigurationError(
                "watch: a cluster-wide change stream runs on 'admin' without a collection"
            )

    @classmethod
    def collection(cls, db: str, coll: str) -> ChangeStreamTarget:
        return cls(db, coll)

    @classmethod
    def database(cls, db: str) -> ChangeStreamTarget:
        return cls(db)

    @classmethod
    def whole_cluster(cls) -> ChangeStreamTarget:
        return cls("admin", None, cluster=True)


_NO_ID: Final = object()  # an event without _id (the stream then errors in the flows)


class ResumeDecision(enum.Enum):
    """What to do after a getMore error: resume now, or raise it (the machine's state then says
    whether the stream stays open, see :attr:`ChangeStream.needs_resume`)."""

    RESUME = "resume"
    RAISE = "raise"


#: A killCursors to send, best effort: the server, the database and the command body.
KillCursors = tuple[ServerInfo, str, dict[str, Any]]


class _State(enum.Enum):
    NEW = "new"
    OPEN = "open"
    RESUME_PENDING = "resume pending"
    RESUMING = "resuming"
    CLOSED = "closed"


# (state, input) -> next state.  ``close`` is taken in every state; inputs that only read
# (commands, buffered events) are listed in _READS.
_TRANSITIONS: Final[dict[tuple[_State, str], _State]] = {
    (_State.NEW, "aggregate reply"): _State.OPEN,
    (_State.RESUMING, "aggregate reply"): _State.OPEN,
    (_State.OPEN, "getMore reply"): _State.OPEN,
    (_State.OPEN, "getMore error"): _State.OPEN,
    (_State.OPEN, "begin resume"): _State.RESUMING,
    (_State.RESUME_PENDING, "begin resume"): _State.RESUMING,
}
_READS: Final[dict[str, frozenset[_State]]] = {
    "aggregate command": frozenset({_State.NEW, _State.RESUMING}),
    "getMore command": frozenset({_State.OPEN}),
    "next event": frozenset({_State.OPEN, _State.RESUME_PENDING}),
}


class ChangeStream:
    """One change stream's state (see the module docstring for the rules)."""

    def __init__(
        self,
        target: ChangeStreamTarget,
        pipeline: Sequence[Mapping[str, Any]] = (),
        options: ChangeStreamOptions | None = None,
        read_preference: ReadPreference = PRIMARY,
        *,
        read_concern: Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(pipeline, Mapping) or not all(isinstance(s, Mapping) for s in pipeline):
            raise ConfigurationError("pipeline: must be a list of documents")
        self.target = target
        self.pipeline: tuple[Mapping[str, Any], ...] = tuple(pipeline)
        self.options = options if options is not None else ChangeStreamOptions()
        self.read_preference = read_preference
        self.read_concern = read_concern
        self._state = _State.NEW
        start = self.options.start_after
        self._resume_token = start if start is not None else self.options.resume_after
        self._operation_time = self.options.start_at_operation_time
        self._returned_any = False
        self._resumed_since_progress = False
        self._cursor: Cursor | None = None
        self._fragments = FragmentAssembler()
        #: the session of every command of the stream (the first aggregate's, kept across
        #: resumes); held, so an implicit one stays out of the pool while the stream is open
        self.session: Any = None
        self._holding = False

    def hold_session(self, session: Any) -> None:
        """Use ``session`` for the stream's commands until it closes."""
        if self._holding or session is None or self._state is _State.CLOSED:
            return
        self.session = session
        session.cursor_holds += 1
        self._holding = True

    # --- what the flows and users read -------------------------------------------------

    @property
    def resume_token(self) -> Mapping[str, Any] | None:
        """The token a resume would use now (getResumeToken in the spec)."""
        return self._resume_token

    @property
    def operation_time(self) -> Timestamp | None:
        """The user's ``startAtOperationTime``, or the one saved from the first aggregate."""
        return self._operation_time

    @property
    def cursor(self) -> Cursor | None:
        return self._cursor

    @property
    def closed(self) -> bool:
        return self._state is _State.CLOSED

    @property
    def started(self) -> bool:
        """The first aggregate was sent (or the stream closed before it)."""
        return self._state is not _State.NEW

    @property
    def needs_resume(self) -> bool:
        """A resumable error was raised to the user; the next call resumes first."""
        return self._state is _State.RESUME_PENDING

    @property
    def alive(self) -> bool:
        """The stream may still return events (it is not closed, and its cursor has not ended
        with nothing left to read)."""
        if self._state is _State.CLOSED:
            return False
        if self._state is _State.OPEN and self._cursor is not None:
            return self._cursor.alive or self._cursor.buffered > 0
        return True

    @property
    def state(self) -> str:
        return self._state.value

    # --- commands ----------------------------------------------------------------------

    def aggregate_command(self, server: ServerInfo) -> tuple[str, dict[str, Any]]:
        """``(db, body)`` of the aggregate to run on ``server``: the original command when the
        stream opens, the resume command while resuming."""
        self._check_read("aggregate command")
        resume_point = None
        if self._state is _State.RESUMING:
            resume_point = choose_resume_point(
                resume_token=self._resume_token,
                started_with_start_after=self.options.start_after is not None,
                returned_any=self._returned_any,
                operation_time=self._operation_time,
                max_wire_version=server.max_wire_version,
            )
        return self.target.db, self._aggregate_body(resume_point)

    def _aggregate_body(self, resume_point: Mapping[str, Any] | None) -> dict[str, Any]:
        options = self.options
        stage: dict[str, Any] = {}
        if self.target.cluster:
            stage["allChangesForCluster"] = True
        if options.full_document is not None:
            stage["fullDocument"] = options.full_document
        if options.full_document_before_change is not None:
            stage["fullDocumentBeforeChange"] = options.full_document_before_change
        if resume_point is None:
            original = (options.resume_after, options.start_after, options.start_at_operation_time)
            for name, value in zip(_RESUME_FIELDS, original, strict=True):
                if value is not None:
                    stage[name] = value
        else:
            stage.update(resume_point)
        if options.show_expanded_events is not None:
            stage["showExpandedEvents"] = options.show_expanded_events
        pipeline: list[Mapping[str, Any]] = [{"$changeStream": stage}, *self.pipeline]
        if options.split_large_events and not any(_SPLIT_STAGE in s for s in self.pipeline):
            pipeline.append({_SPLIT_STAGE: {}})
        cursor: dict[str, Any] = {}
        if options.batch_size is not None:
            cursor["batchSize"] = options.batch_size
        body: dict[str, Any] = {
            "aggregate": self.target.coll if self.target.coll is not None else 1,
            "pipeline": pipeline,
            "cursor": cursor,
        }
        if options.collation is not None:
            body["collation"] = options.collation
        if self.read_concern is not None:
            body["readConcern"] = self.read_concern
        if options.comment is not None:
            body["comment"] = options.comment
        return body

    def get_more_command(self) -> tuple[ServerInfo, str, dict[str, Any]]:
        """``(server, db, body)`` of the next getMore."""
        self._check_read("getMore command")
        assert self._cursor is not None  # OPEN always has a cursor
        db, body = self._cursor.get_more_command()
        return self._cursor.server, db, body

    # --- replies and errors --------------------------------------------------------------

    def handle_aggregate_reply(self, reply: Mapping[str, Any], server: ServerInfo) -> None:
        """Read the ``ok: 1`` reply of the aggregate run on ``server``."""
        first = self._state is _State.NEW
        next_state = self._transition("aggregate reply")
        fallback = Namespace(self.target.db, self.target.coll or "$cmd.aggregate")
        options = self.options
        try:
            cursor = Cursor.from_reply(
                reply,
                server,
                batch_size=options.batch_size,
                max_await_time_ms=options.max_await_time_ms,
                comment=options.comment,
                namespace=fallback,
            )
        except RemoteProtocolError:
            self._state = _State.CLOSED
            raise
        self._state = next_state
        self._cursor = cursor
        self._fragments.reset()
        if (
            first
            and options.start_after is None
            and options.resume_after is None
            and options.start_at_operation_time is None
            and server.max_wire_version >= OPERATION_TIME_WIRE_VERSION
            and cursor.buffered == 0
            and cursor.post_batch_resume_token is None
        ):
            operation_time = reply.get("operationTime")
            if isinstance(operation_time, Timestamp):
                self._operation_time = operation_time
        self._note_batch()

    def handle_get_more_reply(self, reply: Mapping[str, Any]) -> None:
        """Read the ``ok: 1`` reply of a getMore."""
        next_state = self._transition("getMore reply")
        assert self._cursor is not None
        try:
            self._cursor.handle_get_more_reply(reply)
        except RemoteProtocolError:
            self._state = _State.CLOSED
            raise
        self._state = next_state
        self._resumed_since_progress = False
        self._note_batch()

    def _note_batch(self) -> None:
        # An empty batch with a postBatchResumeToken moves the token on (but not in the middle
        # of a split event: resuming there would lose its first fragments).
        cursor = self._cursor
        assert cursor is not None
        token = cursor.post_batch_resume_token
        if cursor.buffered == 0 and token is not None and not self._fragments.pending:
            self._resume_token = token

    def handle_get_more_error(self, error: BaseException) -> ResumeDecision:
        """Decide about a getMore's error: resume now, or raise it.  When it is raised the
        stream is closed, unless the error was resumable but came right after a resume (then
        the stream waits in RESUME_PENDING and the next call resumes)."""
        self._transition("getMore error")
        assert self._cursor is not None
        self._cursor.handle_get_more_error(error)
        if not is_resumable_error(error, self._cursor.server.max_wire_version):
            self._state = _State.CLOSED
            return ResumeDecision.RAISE
        if self._resumed_since_progress:
            self._state = _State.RESUME_PENDING
            return ResumeDecision.RAISE
        return ResumeDecision.RESUME

    def interrupt(self) -> None:
        """A call on the stream was cut mid-way (its task cancelled, a timeout around it):
        nothing is lost -- the resume token is the last event returned -- so the next call
        resumes from there.  A stream cut before its first aggregate answered is closed."""
        if self._state in (_State.OPEN, _State.RESUMING, _State.RESUME_PENDING):
            self._state = _State.RESUME_PENDING
            self._fragments.reset()
        elif self._state is _State.NEW:
            self.close()

    def begin_resume(self) -> KillCursors | None:
        """Start a resume: forget the old cursor (returning the killCursors to send for it, to
        its own server, errors ignored) and any partly received split event."""
        self._state = self._transition("begin resume")
        kill = self._drop_cursor()
        self._fragments.reset()
        self._resumed_since_progress = True
        return kill

    def _drop_cursor(self) -> KillCursors | None:
        cursor, self._cursor = self._cursor, None
        if cursor is None:
            return None
        command = cursor.close()
        return None if command is None else (cursor.server, *command)

    def close(self) -> KillCursors | None:
        """Close the stream (in any state); returns the killCursors to send, if the server
        still holds the cursor."""
        self._state = _State.CLOSED
        self._fragments.reset()
        if self._holding:
            self._holding = False
            self.session.cursor_holds -= 1
        return self._drop_cursor()

    # --- events --------------------------------------------------------------------------

    def next_event(self) -> Mapping[str, Any] | None:
        """The next event of the current batch (split events merged when asked for), or None;
        updates the resume token.  Raises :class:`ChangeStreamClosed` on a closed stream."""
        if self._state is _State.CLOSED:
            raise ChangeStreamClosed("the change stream is closed")
        self._check_read("next event")
        cursor = self._cursor
        if cursor is None:
            # RESUME_PENDING after a call was cut mid-resume (the old cursor dropped, the new
            # aggregate not answered): nothing is buffered; the next step resumes
            return None
        while True:
            document = cursor.next_buffered()
            if document is None:
                return None
            event = self._take(document)
            if event is None:
                continue
            last_in_batch = cursor.buffered == 0
            token = cursor.post_batch_resume_token
            self._resume_token = token if last_in_batch and token is not None else event["_id"]
            self._returned_any = True
            self._resumed_since_progress = False
            if event.get("operationType") == "invalidate":
                # The server ends the stream after it; the flows free its cursor if need be.
                self._state = _State.CLOSED
            return event

    def next_buffered_event(self) -> Mapping[str, Any] | None:
        """The next buffered event when :meth:`next_event` would give it and the flows would
        then send nothing (the stream open on a live cursor; a whole event with its ``_id``,
        not an invalidate); None otherwise, and nothing changes.  An adapter's fast path
        (:mod:`.buffered`)."""
        cursor = self._cursor
        if self._state is not _State.OPEN or cursor is None or self.options.split_large_events:
            return None
        document = cursor.peek_buffered()
        if document is None or cursor.interrupted or not cursor.alive:
            return None
        kind = type(document)  # (the usual two first: an ABC isinstance check costs more)
        if kind is not dict and kind is not RawDocument and not isinstance(document, Mapping):
            return None
        event_id = document.get("_id", _NO_ID)  # (one lookup: a RawDocument walks for each)
        if event_id is _NO_ID or document.get("operationType") == "invalidate":
            return None
        cursor.next_buffered()
        token = cursor.post_batch_resume_token
        self._resume_token = token if token is not None and not cursor.buffered else event_id
        self._returned_any = True
        self._resumed_since_progress = False
        event: Mapping[str, Any] = document
        return event

    def _take(self, document: Any) -> Mapping[str, Any] | None:
        """Check one document of a batch; None while a split event is incomplete."""
        try:
            if not isinstance(document, Mapping):
                raise ChangeStreamError(
                    f"a change event must be a document, got {type(document).__name__}"
                )
            if "_id" not in document:
                raise MissingResumeToken(
                    "Cannot provide resume functionality when the resume token is missing "
                    "(the change event has no _id)"
                )
            if self.options.split_large_events and is_fragment(document):
                return self._fragments.add(document)
            if self._fragments.pending:
                raise SplitEventError(
                    f"an event came after fragment {self._fragments.received} of a split "
                    "event, before its last fragment"
                )
            return document
        except ChangeStreamError:
            self._state = _State.CLOSED
            raise

    # --- the table -----------------------------------------------------------------------

    def _transition(self, event: str) -> _State:
        next_state = _TRANSITIONS.get((self._state, event))
        if next_state is None:
            raise LocalProtocolError(
                f"change stream: {event} is not expected in state {self.state}"
            )
        return next_state

    def _check_read(self, what: str) -> None:
        if self._state not in _READS[what]:
            raise LocalProtocolError(f"change stream: no {what} in state {self.state}")

    def __repr__(self) -> str:
        return (
            f"ChangeStream(target={self.target!r}, state={self.state!r}, "
            f"resume_token={self._resume_token!r})"
        )
