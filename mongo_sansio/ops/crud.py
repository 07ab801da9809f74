"""The CRUD flows: select a server, run the command(s), read the replies into results or errors.

Every flow here is a generator over :mod:`mongo_sansio.flow`.  It first yields
:class:`~mongo_sansio.flow.SelectServer` (``for_writes=True`` for writes, the caller's read
preference for reads) and receives a :class:`~mongo_sansio.flow.ServerInfo`; it then sends its
commands through :func:`~mongo_sansio.command.run_command`, which yields
:class:`~mongo_sansio.flow.RunCommand` and raises the typed error of an ``ok: 0`` reply.

Inputs: command bodies built by :mod:`mongo_sansio.ops.crud_commands` (the
:class:`~mongo_sansio.ops.collection.CollectionOps` methods build them and call these flows),
the server the adapter chose, the reply documents.  Outputs: result values
(:mod:`mongo_sansio.ops.results`), cursors (:class:`~mongo_sansio.cursors.cursor.Cursor`),
documents, counts; or typed errors.

Rules kept here:

* Reads add ``$readPreference`` by :func:`~mongo_sansio.ops.crud_commands.read_preference_field`;
  writes never carry one.
* Every body is sent as :func:`~mongo_sansio.ops.crud_commands.for_server` shapes it for the
  chosen server (``rawData`` only to 8.2 and later), but a user's own commands
  (:func:`database_command`, and :func:`read_cursor` with ``as_given``), sent as written.
* Writes split their documents by the server's maxWriteBatchSize, maxBsonObjectSize and
  maxMessageSizeBytes (:func:`~mongo_sansio.wire.batching.write_batches`), less
  :data:`BODY_RESERVE` bytes for the fields the connection adds to the body later (``$db``,
  ``lsid``, ``$clusterTime``, ``txnNumber``, Stable API).  The documents travel already
  encoded, as an OP_MSG document sequence.  An ordered write stops after the first batch with
  a write error.
* An unacknowledged write (``w: 0``) still waits for the server's reply in this first client
  (moreToCome is not used yet), but its result says ``acknowledged=False`` and its write
  errors are not reported -- the caller asked not to know.  Inside a transaction the
  collection's ``w: 0`` is not sent (the transaction's write concern applies at commit), so
  the write is acknowledged like any other.
* A ``writeConcernError`` whose code is an SDAM state-change error (a primary stepping down
  while waiting for replication) marks the server unknown, as an ``ok: 0`` reply would.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from mongo_sansio.bson.codec_options import CodecOptions
from mongo_sansio.command import run_command
from mongo_sansio.cursors.cursor import (
    Cursor,
    check_max_await,
    cursor_close,
    cursor_next,
    cursor_next_batch,
    open_cursor,
)
from mongo_sansio.errors import LocalProtocolError, RemoteProtocolError, ServerError
from mongo_sansio.flow import Flow, MarkServerUnknown, ServerInfo
from mongo_sansio.ops.crud_commands import for_server, read_preference_field
from mongo_sansio.ops.decoding import reply_values
from mongo_sansio.ops.results import (
    DeleteResult,
    InsertManyResult,
    InsertOneResult,
    UpdateResult,
    reply_count,
)
from mongo_sansio.ops.retryable import (
    operation_context,
    overload_retried,
    retryable_read,
    retryable_write_batch,
    select,
)
from mongo_sansio.ops.write_errors import WriteSummary
from mongo_sansio.sdam.errors import is_state_change_error
from mongo_sansio.selection.read_preference import PRIMARY, ReadPreference
from mongo_sansio.sessions.commands import is_unacknowledged
from mongo_sansio.wire.batching import WRITE_SEQUENCES, WriteLimits, write_batches

__all__ = [
    "BODY_RESERVE",
    "NAMESPACE_NOT_FOUND",
    "MERGE_ON_SECONDARY_WIRE_VERSION",
    "select_server",
    "execute_write",
    "note_write_concern_error",
    "insert_one",
    "insert_many",
    "update",
    "delete",
    "read_command",
    "write_command",
    "retryable_write_command",
    "database_command",
    "read_cursor",
    "find_one",
    "count_documents",
    "estimated_document_count",
    "distinct",
    "drop",
    "list_names",
    "list_database_names",
]

#: bytes of every write message kept free for the fields the connection adds to the body
BODY_RESERVE: Final = 1024
#: the server's code for "no such collection/namespace"
NAMESPACE_NOT_FOUND: Final = 26
#: from MongoDB 5.0 (wire 13) secondaries can run $out/$merge, so the read preference is sent
MERGE_ON_SECONDARY_WIRE_VERSION: Final = 13


def select_server(
    read_preference: ReadPreference = PRIMARY, *, for_writes: bool = False, operation: str = ""
) -> Flow[ServerInfo]:
    """Ask the adapter for a server for the command named ``operation``."""
    return (yield from select(read_preference, for_writes=for_writes, operation=operation))


def _with_read_preference(
    body: Mapping[str, Any], read_preference: ReadPreference, server: ServerInfo
) -> Mapping[str, Any]:
    field = read_preference_field(read_preference, server)
    if field is None or "$readPreference" in body:
        return body
    return {**body, "$readPreference": field}


# (batch size, message size, document size) -> WriteLimits: a server's limits seldom change,
# and making the validated record costs about a microsecond a write.
_LIMITS: dict[tuple[int, int, int], WriteLimits] = {}


def _write_limits(server: ServerInfo) -> WriteLimits:
    key = (server.max_write_batch_size, server.max_message_size_bytes, server.max_bson_object_size)
    limits = _LIMITS.get(key)
    if limits is None:
        if len(_LIMITS) >= 64:
            _LIMITS.clear()
        limits = _LIMITS[key] = WriteLimits(
            max_write_batch_size=max(key[0], 1),
            max_message_size=max(key[1] - BODY_RESERVE, 1),
            max_bson_object_size=max(key[2], 1),
        )
    return limits


def note_write_concern_error(server: ServerInfo, reply: Mapping[str, Any]) -> Flow[None]:
    """Mark ``server`` unknown when ``reply``'s writeConcernError is an SDAM state-change
    error (see the module docstring)."""
    concern = reply.get("writeConcernError")
    if concern is None or not isinstance(concern, Mapping):  # (None: no ABC check, the usual)
        return
    code = concern.get("code")
    errmsg = concern.get("errmsg")
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    if is_state_change_error(code, errmsg if isinstance(errmsg, str) else ""):
        yield MarkServerUnknown(
            server.address, ServerError(str(errmsg), code=code, details=concern)
        )


def execute_write(
    db: str,
    command: Mapping[str, Any],
    statements: Sequence[Any],
    *,
    ordered: bool = True,
    codec_options: CodecOptions | None = None,
    check_server: Callable[[ServerInfo], None] | None = None,
    progress: list[WriteSummary] | None = None,
) -> Flow[WriteSummary]:
    """Run an insert/update/delete ``command`` over ``statements`` in as many batches as the
    server's limits need; return the merged :class:`WriteSummary` (errors are not raised
    here: the caller knows whether it was one document or many, acknowledged or not).
    ``progress``, when given, gets the summary as soon as it is made: a caller then still
    holds the batches acknowledged before an error that ends the write.

    ``command`` is the body without its statements (:func:`~mongo_sansio.ops.crud_commands.write_command`).
    ``check_server`` may refuse the chosen server before anything is sent.  A document over
    the size limits raises :class:`~mongo_sansio.errors.DocumentTooLarge` (with its index in
    ``statements``) before the first batch is sent.
    """
    name = next(iter(command), "")
    identifier = WRITE_SEQUENCES.get(name)
    if identifier is None:
        raise LocalProtocolError(f"execute_write runs insert, update or delete, not {name!r}")
    context = yield from operation_context()
    server = yield from select_server(for_writes=True, operation=name)
    if check_server is not None:
        check_server(server)
    # Sized with $db, which the connection adds; BODY_RESERVE covers the other added fields.
    batches = write_batches(
        command,
        statements,
        limits=_write_limits(server),
        identifier=identifier,
        codec_options=codec_options,
        db=db,
    )
    summary = WriteSummary(name, in_transaction=context.in_transaction)
    if progress is not None:
        progress.append(summary)
    acknowledged = summary.in_transaction or not is_unacknowledged(command)
    for batch in batches:
        server, reply = yield from retryable_write_batch(
            context,
            server,
            db,
            command,
            sequences={identifier: batch.documents},
            statements=statements[batch.start : batch.start + len(batch.documents)],
            acknowledged=acknowledged,
        )
        summary.add(reply, batch.start)
        yield from note_write_concern_error(server, reply)
        if ordered and summary.write_errors:
            break
    return summary


def _raise_single(summary: WriteSummary) -> None:
    error = summary.single_error()
    if error is not None:
        raise error


def insert_one(
    db: str,
    command: Mapping[str, Any],
    document: Mapping[str, Any],
    inserted_id: Any,
    *,
    acknowledged: bool = True,
    codec_options: CodecOptions | None = None,
) -> Flow[InsertOneResult]:
    """Insert one (prepared) document; DuplicateKeyError / WriteError / WriteConcernError."""
    summary = yield from execute_write(db, command, [document], codec_options=codec_options)
    acknowledged = acknowledged or summary.in_transaction
    if acknowledged:
        _raise_single(summary)
    return InsertOneResult(inserted_id, acknowledged)


def insert_many(
    db: str,
    command: Mapping[str, Any],
    documents: Sequence[Mapping[str, Any]],
    inserted_ids: list[Any],
    *,
    ordered: bool = True,
    acknowledged: bool = True,
    codec_options: CodecOptions | None = None,
) -> Flow[InsertManyResult]:
    """Insert (prepared) documents in batches; any write error or write concern error raises
    :class:`~mongo_sansio.ops.write_errors.BulkWriteError` with indexes in ``documents``."""
    summary = yield from execute_write(
        db, command, documents, ordered=ordered, codec_options=codec_options
    )
    acknowledged = acknowledged or summary.in_transaction
    if acknowledged:
        error = summary.bulk_error()
        if error is not None:
            raise error
    return InsertManyResult(inserted_ids, acknowledged)


def update(
    db: str,
    command: Mapping[str, Any],
    statement: Mapping[str, Any],
    *,
    acknowledged: bool = True,
    codec_options: CodecOptions | None = None,
) -> Flow[UpdateResult]:
    """Run one update statement (update_one, update_many, replace_one)."""
    summary = yield from execute_write(db, command, [statement], codec_options=codec_options)
    if not (acknowledged or summary.in_transaction):
        return UpdateResult.from_reply(None, acknowledged=False)
    _raise_single(summary)
    return UpdateResult.from_reply(reply_values(summary.last_reply, codec_options))


#: wire version of MongoDB 4.4, the first to accept a hint on an unacknowledged delete
_DELETE_HINT_UNACKNOWLEDGED_WIRE_VERSION: Final = 9


def delete(
    db: str,
    command: Mapping[str, Any],
    statement: Mapping[str, Any],
    *,
    acknowledged: bool = True,
    codec_options: CodecOptions | None = None,
) -> Flow[DeleteResult]:
    """Run one delete statement (delete_one, delete_many)."""

    def check_server(server: ServerInfo) -> None:
        # crud.md: an unacknowledged delete with a hint is refused by the client for servers
        # before 4.4 (they would silently ignore the hint).
        if (
            not acknowledged
            and "hint" in statement
            and server.max_wire_version < _DELETE_HINT_UNACKNOWLEDGED_WIRE_VERSION
        ):
            raise LocalProtocolError(
                "hint: an unacknowledged delete with a hint needs MongoDB 4.4 or later"
            )

    summary = yield from execute_write(
        db, command, [statement], codec_options=codec_options, check_server=check_server
    )
    if not (acknowledged or summary.in_transaction):
        return DeleteResult.from_reply(None, acknowledged=False)
    _raise_single(summary)
    return DeleteResult.from_reply(summary.last_reply)


def read_command(
    db: str, body: Mapping[str, Any], *, read_preference: ReadPreference = PRIMARY
) -> Flow[Mapping[str, Any]]:
    """Run a read command on a server chosen by ``read_preference`` (retried once after a
    retryable error); return its reply."""

    def attempt(server: ServerInfo) -> Flow[Mapping[str, Any]]:
        sent = _with_read_preference(for_server(body, server), read_preference, server)
        return (yield from run_command(server, db, sent))

    return (yield from retryable_read(attempt, read_preference, operation=next(iter(body), "")))


def write_command(db: str, body: Mapping[str, Any]) -> Flow[Mapping[str, Any]]:
    """Run a command that changes data or metadata (create, drop...) on a writable server;
    retried only after retryable overload errors (with ``retryWrites``)."""

    def attempt(server: ServerInfo) -> Flow[Mapping[str, Any]]:
        return (yield from run_command(server, db, for_server(body, server)))

    return (
        yield from overload_retried(
            attempt, for_writes=True, operation=next(iter(body), ""), writes=True
        )
    )


def retryable_write_command(db: str, body: Mapping[str, Any]) -> Flow[Mapping[str, Any]]:
    """Run a single-statement write command other than insert/update/delete (findAndModify)
    on a writable server, retried once after a retryable write error."""
    context = yield from operation_context()
    server = yield from select_server(for_writes=True, operation=next(iter(body), ""))
    acknowledged = context.in_transaction or not is_unacknowledged(body)
    _, reply = yield from retryable_write_batch(
        context, server, db, body, acknowledged=acknowledged
    )
    return reply


def database_command(
    db: str, body: Mapping[str, Any], *, read_preference: ReadPreference = PRIMARY
) -> Flow[Mapping[str, Any]]:
    """A user's command (``db.command(...)``, run-command.md): the body is sent as given (its
    first key names the command), with ``$readPreference`` added for the server chosen by
    ``read_preference`` unless the body has one.  ``ok: 0`` raises the typed ServerError."""
    if not isinstance(body, Mapping) or not body:
        raise LocalProtocolError("a command must be a non-empty document whose first key names it")

    def attempt(server: ServerInfo) -> Flow[Mapping[str, Any]]:
        return (
            yield from run_command(server, db, _with_read_preference(body, read_preference, server))
        )

    # retried only after retryable overload errors, and only when both retryReads and
    # retryWrites allow it (client-backpressure.md: runCommand counts as either)
    return (
        yield from overload_retried(
            attempt, read_preference, operation=next(iter(body)), reads=True, writes=True
        )
    )


def read_cursor(
    db: str,
    body: Mapping[str, Any],
    *,
    read_preference: ReadPreference = PRIMARY,
    batch_size: int | None = None,
    limit: int = 0,
    max_await_time_ms: int | None = None,
    comment: Any = None,
    as_given: bool = False,
) -> Flow[Cursor]:
    """Run a cursor-producing read (find, aggregate, listCollections...) and return its cursor.
    ``as_given``: the body is the user's (``cursor_command``), not shaped for the server.

    An aggregate ending in ``$out``/``$merge`` goes to a writable server; it carries the read
    preference only for servers of wire version 13 (5.0) or later, which may run it on a
    secondary (crud.md, "Aggregation pipelines with write stages").
    """
    writes = _is_write_aggregate(body)
    if body.get("awaitData") or next(iter(body), None) == "aggregate":
        yield from check_max_await(max_await_time_ms)

    def attempt(server: ServerInfo) -> Flow[Cursor]:
        sent = body if as_given else for_server(body, server)
        if not writes or server.max_wire_version >= MERGE_ON_SECONDARY_WIRE_VERSION:
            sent = _with_read_preference(sent, read_preference, server)
        return (
            yield from open_cursor(
                server,
                db,
                sent,
                batch_size=batch_size,
                limit=limit,
                max_await_time_ms=max_await_time_ms,
                comment=comment,
            )
        )

    if writes:
        # $out / $merge aggregates write: not a retryable read; retried only after retryable
        # overload errors (with retryWrites)
        return (
            yield from overload_retried(
                attempt, read_preference, for_writes=True, operation="aggregate", writes=True
            )
        )
    return (yield from retryable_read(attempt, read_preference, operation=next(iter(body), "")))


def _is_write_aggregate(body: Mapping[str, Any]) -> bool:
    if next(iter(body), None) != "aggregate":
        return False
    pipeline = body.get("pipeline")
    if not isinstance(pipeline, list) or not pipeline or not isinstance(pipeline[-1], Mapping):
        return False
    return next(iter(pipeline[-1]), None) in ("$out", "$merge")


def find_one(
    db: str, body: Mapping[str, Any], *, read_preference: ReadPreference = PRIMARY
) -> Flow[Any | None]:
    """The first document of a single-batch find (``limit: 1, singleBatch: true``), or None;
    the cursor is closed if the server kept one."""
    cursor = yield from read_cursor(db, body, read_preference=read_preference, limit=-1)
    document = cursor.next_buffered()
    yield from cursor_close(cursor)
    return document


def count_documents(
    db: str, body: Mapping[str, Any], *, read_preference: ReadPreference = PRIMARY
) -> Flow[int]:
    """Run the countDocuments aggregate; its one document's ``n``, or 0 when nothing matched."""
    cursor = yield from read_cursor(db, body, read_preference=read_preference)
    document = yield from cursor_next(cursor)
    yield from cursor_close(cursor)
    if document is None:
        return 0
    if not isinstance(document, Mapping):
        raise RemoteProtocolError(f"countDocuments: expected a document, got {document!r}")
    return reply_count(document, "n")


def estimated_document_count(
    db: str, body: Mapping[str, Any], *, read_preference: ReadPreference = PRIMARY
) -> Flow[int]:
    """Run the count command; its ``n`` (0 for a collection that does not exist)."""
    try:
        reply = yield from read_command(db, body, read_preference=read_preference)
    except ServerError as error:
        if error.code == NAMESPACE_NOT_FOUND:
            return 0
        raise
    return reply_count(reply, "n")


def distinct(
    db: str, body: Mapping[str, Any], *, read_preference: ReadPreference = PRIMARY
) -> Flow[list[Any]]:
    """Run the distinct command; its ``values``."""
    reply = yield from read_command(db, body, read_preference=read_preference)
    values = reply.get("values")
    if not isinstance(values, list):
        raise RemoteProtocolError(f"distinct: reply has no 'values' array (got {values!r})")
    return values


def drop(db: str, body: Mapping[str, Any]) -> Flow[None]:
    """Drop a collection or database; "ns not found" (code 26) is success, as in PyMongo."""
    try:
        yield from write_command(db, body)
    except ServerError as error:
        if error.code != NAMESPACE_NOT_FOUND and error.errmsg != "ns not found":
            raise


def list_names(
    db: str, body: Mapping[str, Any], *, read_preference: ReadPreference = PRIMARY
) -> Flow[list[str]]:
    """Run a listX command (listCollections, listIndexes) to the end; the ``name`` of each
    document."""
    cursor = yield from read_cursor(db, body, read_preference=read_preference)
    names: list[str] = []
    while batch := (yield from cursor_next_batch(cursor)):
        for document in batch:
            name = document.get("name") if isinstance(document, Mapping) else None
            if not isinstance(name, str):
                raise RemoteProtocolError(f"{next(iter(body))}: entry without a name: {document!r}")
            names.append(name)
    return names


def list_database_names(*, comment: Any = None) -> Flow[list[str]]:
    """``listDatabases`` (names only) on the admin database."""
    body: dict[str, Any] = {"listDatabases": 1, "nameOnly": True}
    if comment is not None:
        body["comment"] = comment
    reply = yield from read_command("admin", body)
    databases = reply.get("databases")
    if not isinstance(databases, list):
        raise RemoteProtocolError("listDatabases: reply has no 'databases' array")
    names: list[str] = []
    for entry in databases:
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str):
            raise RemoteProtocolError(f"listDatabases: entry without a name: {entry!r}")
        names.append(name)
    return names
