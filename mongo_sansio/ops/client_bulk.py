"""``MongoClient.bulk_write``: write models on any namespaces, sent as MongoDB 8.0's ``bulkWrite``.

Theory of operation.  :func:`plan_client_bulk` checks the models and turns each into its
``ops`` document at once, before anything is sent (a model that is not one, a model without a
namespace, an invalid update or replacement raise, and nothing is written; an insert's document
without ``_id`` gets one, as ``insert_one``'s does).  The flow :func:`client_bulk_write` then

1. decides the write concern: the ``write_concern`` argument, else the client's; none inside a
   transaction, where an explicit one is refused.  An unacknowledged one is refused with
   ``ordered`` or ``verbose_results`` (the bulk write specification's two client-side errors);
2. selects a writable server, which must speak wire version 25 (MongoDB 8.0);
3. splits the ops into batches (:func:`split_client_bulk`): at most ``maxWriteBatchSize`` ops,
   and ops plus ``nsInfo`` at most ``maxMessageSizeBytes`` less 1000 bytes (the spec's
   allowance for the message header and the fields every command gets) less the command
   document.  A batch lists only the namespaces its ops use, and each op names its namespace
   by its index in that batch's list;
4. sends each batch to the admin database as ``{bulkWrite: 1, errorsOnly, ordered, ...}`` with
   ``ops`` and ``nsInfo`` as OP_MSG document sequences, to a server selected for it (the
   first batch's is the one step 2 chose), through
   :func:`~mongo_sansio.ops.retryable.retryable_write_batch` (so sessions, transactions,
   retryable writes -- a batch with an UpdateMany or DeleteMany is not retryable -- timeouts and
   command monitoring apply as to every write), and reads its results cursor to the end with
   getMore (killCursors when the bulk write stops before its end);
5. merges what came back (:class:`~mongo_sansio.ops.client_bulk_outcome.ClientBulkOutcome`).

A write error stops an ordered bulk write; an unordered one runs every batch.  Any error that
ends the bulk write once its first command was sent -- a network error, a command's ``ok: 0``, a
failed getMore (the top-level errors) -- is raised as a
:class:`~mongo_sansio.errors.ClientBulkWriteException` carrying it as ``error`` (and its
labels), the write errors and write concern errors met so far and the partial result; write
errors and write concern errors raise one at the end.  Errors met before anything is sent
(bad arguments, server selection, an op too large for any message) are raised as they are.
An unacknowledged bulk write returns ``ClientBulkWriteResult({}, False, False)``.

Inputs: write models (:mod:`mongo_sansio.ops.models`, each with ``namespace``), the options,
the client's write concern and codec options.  Outputs: a ``Flow[ClientBulkWriteResult]``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import attrs

from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from mongo_sansio.cursors.cursor import Cursor, Namespace, cursor_close, cursor_next_batch
from mongo_sansio.errors import (
    ConfigurationError,
    DocumentTooLarge,
    InvalidOperation,
    LocalProtocolError,
    MongoError,
)
from mongo_sansio.flow import Flow, OperationContext, ServerInfo
from mongo_sansio.ops.client_bulk_outcome import ClientBulkOutcome
from mongo_sansio.ops.crud import note_write_concern_error, select_server
from mongo_sansio.ops.crud_commands import ArgumentTypeError, check_bool, put_write_options
from mongo_sansio.ops.models import WriteModel
from mongo_sansio.ops.results import ClientBulkWriteResult
from mongo_sansio.ops.retryable import operation_context, retryable_write_batch
from mongo_sansio.ops.write_concern import WriteConcern
from mongo_sansio.wire.encode import Buffer, document_bytes

__all__ = [
    "CLIENT_BULK_WRITE_WIRE_VERSION",
    "MESSAGE_OVERHEAD_BYTES",
    "ClientWriteOp",
    "ClientBulkBatch",
    "plan_client_bulk",
    "client_bulk_command",
    "split_client_bulk",
    "client_bulk_write",
]

#: the first wire version with the bulkWrite command (MongoDB 8.0)
CLIENT_BULK_WRITE_WIRE_VERSION: Final = 25
#: what every bulkWrite message keeps for its header and the fields every command gets
#: (lsid, txnNumber, $clusterTime, Stable API...): the spec's fixed allowance
MESSAGE_OVERHEAD_BYTES: Final = 1000
#: where the results cursor lives when a reply does not say (it always does)
_CURSOR_NAMESPACE: Final = Namespace("admin", "$cmd.bulkWrite")
_INT32 = struct.Struct("<i")
_BSON_INT32: Final = 0x10


@attrs.frozen
class ClientWriteOp:
    """One model's ``ops`` document and what the results need to know of it.

    ``op`` starts with its kind (``insert``, ``update`` or ``delete``) whose value is the
    index of ``namespace`` in its batch's ``nsInfo`` (0 here: the batch sets it); ``multi``
    is True for UpdateMany and DeleteMany; ``inserted_id`` is an insert's ``_id``."""

    kind: str
    namespace: str
    op: Mapping[str, Any]
    multi: bool = False
    inserted_id: Any = None


def _namespace(model: WriteModel) -> str:
    namespace = getattr(model, "namespace", None)
    if not namespace:
        raise InvalidOperation(
            "MongoClient.bulk_write requires a namespace to be provided for each write operation"
        )
    assert isinstance(namespace, str)  # (the models check its type when built)
    return namespace


def _op(model: WriteModel, id_factory: Callable[[], Any]) -> ClientWriteOp:
    """The model's ``ops`` document, made from its collection-level statement (which checks
    the update or replacement and shapes hint and sort)."""
    namespace = _namespace(model)
    statement, inserted_id = model.statement(id_factory)
    kind = model.kind
    if kind == "insert":
        return ClientWriteOp(
            kind, namespace, {"insert": 0, "document": statement}, False, inserted_id
        )
    op: dict[str, Any] = {kind: 0, "filter": statement["q"]}
    if kind == "update":
        multi = bool(statement.get("multi"))
        op["updateMods"] = statement["u"]
        op["multi"] = multi
        upsert = getattr(model, "upsert", None)
        if upsert is not None:  # sent only when the caller gave it, False too
            op["upsert"] = upsert
        for field in ("arrayFilters", "hint", "collation", "sort"):
            if field in statement:
                op[field] = statement[field]
    else:
        multi = statement["limit"] == 0
        op["multi"] = multi
        for field in ("hint", "collation"):
            if field in statement:
                op[field] = statement[field]
    return ClientWriteOp(kind, namespace, op, multi)


def plan_client_bulk(models: Any, id_factory: Callable[[], Any]) -> list[ClientWriteOp]:
    """Check ``models`` (a non-empty list of write models, each with a namespace) and make
    their ops (see the module docstring)."""
    if not isinstance(models, list):
        raise ArgumentTypeError(f"models must be a list, not {type(models).__name__}")
    for model in models:
        if not isinstance(model, WriteModel):
            raise ArgumentTypeError(f"{model!r} is not a valid request")
    if not models:
        raise InvalidOperation("No operations to execute")
    return [_op(model, id_factory) for model in models]


def client_bulk_command(
    *,
    ordered: bool = True,
    verbose_results: bool = False,
    bypass_document_validation: bool | None = None,
    comment: Any = None,
    let: Mapping[str, Any] | None = None,
    raw_data: bool | None = None,
    write_concern: WriteConcern | None = None,
) -> dict[str, Any]:
    """The ``bulkWrite`` command without its ``ops`` and ``nsInfo`` (document sequences):
    ``ordered`` always sent, ``errorsOnly`` the inverse of ``verbose_results``, the options
    only when given."""
    body: dict[str, Any] = {
        "bulkWrite": 1,
        "errorsOnly": not check_bool(verbose_results, "verbose_results"),
        "ordered": check_bool(ordered, "ordered"),
    }
    return put_write_options(
        body,
        write_concern=write_concern,
        bypass_document_validation=bypass_document_validation,
        comment=comment,
        let=let,
        raw_data=raw_data,
    )


@attrs.frozen
class ClientBulkBatch:
    """One command's share of the ops: the caller's models ``start`` to ``start + count``,
    encoded with their batch's namespace indexes, the batch's ``nsInfo`` entries, and the
    ops as documents (a batch is retryable only when none of them is ``multi``)."""

    start: int
    ops: tuple[Buffer, ...]
    ns_info: tuple[Buffer, ...]
    statements: tuple[Mapping[str, Any], ...]

    @property
    def count(self) -> int:
        return len(self.ops)


def _with_namespace_index(encoded: Buffer, kind: str, index: int) -> Buffer:
    """``encoded`` (an op whose first field is ``kind: <int32>``) naming ``index`` instead.
    The size does not change, so the op is encoded once and patched for its batch."""
    if index == 0:
        return encoded
    patched = bytearray(encoded)
    _INT32.pack_into(patched, 4 + 1 + len(kind) + 1, index)
    return bytes(patched)


def split_client_bulk(
    ops: Sequence[ClientWriteOp],
    *,
    command_size: int,
    max_write_batch_size: int,
    max_message_size: int,
    codec_options: CodecOptions | None = None,
) -> list[ClientBulkBatch]:
    """The batches of ``ops`` (see the module docstring, step 3).  ``command_size`` is the
    size of the encoded command document.  An op that does not fit even alone in a message
    raises :class:`~mongo_sansio.errors.DocumentTooLarge` naming its index."""
    opts = DEFAULT_CODEC_OPTIONS if codec_options is None else codec_options
    room = max_message_size - (MESSAGE_OVERHEAD_BYTES + command_size)
    ns_documents: dict[str, Buffer] = {}
    batches: list[ClientBulkBatch] = []
    start = 0
    encoded: list[tuple[ClientWriteOp, Buffer]] = []
    namespaces: dict[str, int] = {}  # the batch's nsInfo: namespace -> its index
    used = 0

    def close() -> None:
        batches.append(
            ClientBulkBatch(
                start=start,
                ops=tuple(
                    _with_namespace_index(data, op.kind, namespaces[op.namespace])
                    for op, data in encoded
                ),
                ns_info=tuple(ns_documents[name] for name in namespaces),
                statements=tuple(op.op for op, _ in encoded),
            )
        )

    for index, op in enumerate(ops):
        data = document_bytes(op.op, opts)
        if data[4] != _BSON_INT32:  # (a namespace index that is not an int32 cannot be patched)
            raise LocalProtocolError(f"ops[{index}]: its {op.kind!r} field must be an int32")
        ns_data = ns_documents.get(op.namespace)
        if ns_data is None:
            ns_data = ns_documents[op.namespace] = document_bytes({"ns": op.namespace}, opts)
        added = len(data) + (0 if op.namespace in namespaces else len(ns_data))
        if encoded and (used + added > room or len(encoded) >= max_write_batch_size):
            close()
            start, encoded, namespaces, used = index, [], {}, 0
            added = len(data) + len(ns_data)
        if added > room:
            raise DocumentTooLarge(
                f"ops[{index}] ({len(data)} bytes) and its namespace ({len(ns_data)} bytes) do "
                f"not fit in a bulkWrite message under maxMessageSizeBytes {max_message_size} "
                f"({room} bytes for ops and nsInfo)",
                index=index,
                size=added,
                limit=room,
            )
        namespaces.setdefault(op.namespace, len(namespaces))
        encoded.append((op, data))
        used += added
    if encoded:
        close()
    return batches


def _write_concern(
    context: OperationContext, explicit: WriteConcern | None, default: WriteConcern
) -> WriteConcern | None:
    """The write concern to send: none in a transaction (where an explicit one is refused:
    the transaction's applies at commit), else the caller's or the client's."""
    if context.in_transaction:
        if explicit is not None and not explicit.is_server_default:
            raise InvalidOperation("Cannot set write concern after starting a transaction")
        return None
    return default if explicit is None else explicit


def _check_unacknowledged(context: OperationContext, ordered: bool, verbose_results: bool) -> None:
    if ordered:
        raise InvalidOperation("Cannot request unacknowledged write concern and ordered writes")
    if verbose_results:
        raise InvalidOperation("Cannot request unacknowledged write concern and verbose results")
    session = context.session
    if session is not None and not getattr(session, "implicit", True):
        # (checked before anything is sent; the session layer would refuse the command too)
        raise ConfigurationError(
            "Explicit sessions are incompatible with unacknowledged write concern"
        )


def _read_results(cursor: Cursor, outcome: ClientBulkOutcome, batch: ClientBulkBatch) -> Flow[bool]:
    """Read the batch's results cursor to its end (or to an ordered bulk write's write
    error, killing the cursor then); returns whether the bulk write stops."""
    try:
        while entries := (yield from cursor_next_batch(cursor)):
            for entry in entries:
                if outcome.add_entry(entry, batch.start, batch.count):
                    yield from cursor_close(cursor)
                    return True
    except MongoError:
        # a getMore closes its cursor when it fails; a bad entry leaves it to close here
        if cursor.alive:
            yield from cursor_close(cursor)
        raise
    return False


def _select_server() -> Flow[ServerInfo]:
    server = yield from select_server(for_writes=True, operation="bulkWrite")
    if server.max_wire_version < CLIENT_BULK_WRITE_WIRE_VERSION:
        raise InvalidOperation("MongoClient.bulk_write requires MongoDB server version 8.0+.")
    return server


def _run_batches(
    context: OperationContext,
    server: ServerInfo,
    body: Mapping[str, Any],
    batches: Sequence[ClientBulkBatch],
    outcome: ClientBulkOutcome,
    acknowledged: bool,
) -> Flow[None]:
    for number, batch in enumerate(batches):
        if number:
            # each command selects its server: a write concern error naming a state change
            # (a primary shutting down) has marked the last one unknown and cleared its pool,
            # and the bulk write goes on once the deployment has a primary again
            server = yield from _select_server()
        server, reply = yield from retryable_write_batch(
            context,
            server,
            "admin",
            body,
            sequences={"ops": batch.ops, "nsInfo": batch.ns_info},
            statements=batch.statements,
            acknowledged=acknowledged,
        )
        if not acknowledged:
            continue  # (the reply of a moreToCome message is only {ok: 1})
        yield from note_write_concern_error(server, reply)
        outcome.add_reply(reply, batch.count)
        cursor = Cursor.from_reply(reply, server, namespace=_CURSOR_NAMESPACE)
        # its getMores go out in the bulk write's session (a transaction's, or the implicit one)
        cursor.hold_session(context.session)
        if (yield from _read_results(cursor, outcome, batch)):
            return


def client_bulk_write(
    ops: Sequence[ClientWriteOp],
    *,
    ordered: bool = True,
    verbose_results: bool = False,
    bypass_document_validation: bool | None = None,
    comment: Any = None,
    let: Mapping[str, Any] | None = None,
    raw_data: bool | None = None,
    write_concern: WriteConcern | None = None,
    default_write_concern: WriteConcern | None = None,
    codec_options: CodecOptions | None = None,
) -> Flow[ClientBulkWriteResult]:
    """Run the planned ``ops`` (:func:`plan_client_bulk`); see the module docstring.
    ``write_concern`` is the caller's, ``default_write_concern`` the client's."""
    context = yield from operation_context()
    concern = _write_concern(context, write_concern, default_write_concern or WriteConcern())
    body = client_bulk_command(  # (checks the options' types first)
        ordered=ordered,
        verbose_results=verbose_results,
        bypass_document_validation=bypass_document_validation,
        comment=comment,
        let=let,
        raw_data=raw_data,
        write_concern=concern,
    )
    acknowledged = concern is None or concern.acknowledged
    if not acknowledged:
        _check_unacknowledged(context, ordered, verbose_results)
    opts = DEFAULT_CODEC_OPTIONS if codec_options is None else codec_options
    server = yield from _select_server()
    batches = split_client_bulk(
        ops,
        command_size=len(document_bytes(body, opts)),
        max_write_batch_size=max(server.max_write_batch_size, 1),
        max_message_size=server.max_message_size_bytes,
        codec_options=opts,
    )
    outcome = ClientBulkOutcome(
        [op.kind for op in ops],
        [op.inserted_id for op in ops],
        ordered=ordered,
        verbose=verbose_results,
    )
    try:
        yield from _run_batches(context, server, body, batches, outcome, acknowledged)
    except MongoError as error:
        raised = outcome.exception(error)
        assert raised is not None
        raise raised from error
    if not acknowledged:
        return ClientBulkWriteResult({}, False, False)
    failure = outcome.exception()
    if failure is not None:
        raise failure
    return outcome.result()
