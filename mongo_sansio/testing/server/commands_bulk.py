"""mongod 8.0's ``bulkWrite`` admin command: inserts, updates and deletes on any namespaces.

Inputs: a :class:`~.context.Context` whose command is ``{bulkWrite: 1, ops, nsInfo, errorsOnly?,
ordered?, bypassDocumentValidation?, let?, cursor: {batchSize}?, ...}`` on the admin database;
``ops`` and ``nsInfo`` come as OP_MSG document sequences or as arrays in the body.  Each op is
``{insert: i, document}``, ``{update: i, filter, updateMods, multi?, upsert?, arrayFilters?,
collation?, hint?, sort?}`` or ``{delete: i, filter, multi?, collation?, hint?}``, ``i`` an
index in ``nsInfo`` (``[{ns: "db.coll"}]``).

Outputs: ``{cursor: {id, firstBatch, ns: "admin.$cmd.bulkWrite"}, nErrors, nInserted,
nMatched, nModified, nUpserted, nDeleted, ok: 1}``; the cursor holds one entry per op, in op
order -- ``{ok: 1, idx, n, nModified?, upserted?: {_id}}`` or ``{ok: 0, idx, code, codeName,
errmsg, ...}`` -- or only the errors with ``errorsOnly``.  As mongod's, the first batch holds
every entry unless ``cursor.batchSize`` is smaller (or 16 MiB is reached); the rest is read with
getMore on ``admin.$cmd.bulkWrite``.  A malformed command (no ops, a bad nsInfo index, an
unknown op field) fails whole, before any op runs.

The ops run through the insert/update/delete paths of :mod:`.commands_crud`
(:func:`~.commands_crud.run_statements`, :func:`~.commands_crud.apply_update`,
:func:`~.commands_crud.apply_delete`), so waiting on a transaction's lock, ordered stopping at the
first error and a transaction failing on a transient error behave as in those commands.  The
dispatcher handles what every write shares (failpoints, transactions, write concern errors,
retryable writes: the full results are recorded, and a retry answers them from a new cursor).

Only a simulator answering as mongod 8.0 (maxWireVersion 25) has the command; 7.0 answers
CommandNotFound.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.bson import Int64
from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.engine.order import render
from mongo_sansio.testing.server.commands_crud import (
    apply_delete,
    apply_update,
    bypass_validation,
    command_let,
    lsid_key,
    run_statements,
)
from mongo_sansio.testing.server.context import CommandSpec, Context, Outcome
from mongo_sansio.testing.server.views import definition, view_write_error

__all__ = ["BULK_COMMANDS", "failed_first_op"]

CURSOR_NS = "admin.$cmd.bulkWrite"
MAX_OPS = 100_000  # mongod's maxWriteBatchSize
_KINDS = ("insert", "update", "delete")
# The fields mongod's parser knows in each kind of op (it refuses any other: 40415).
_OP_FIELDS = {
    "insert": frozenset({"insert", "document"}),
    "update": frozenset({"update", "filter", "updateMods", "multi", "upsert", "upsertSupplied", "arrayFilters",
                         "hint", "collation", "sort", "constants", "sampleId",
                         "$_allowShardKeyUpdatesWithoutFullShardKeyInQuery"}),
    "delete": frozenset({"delete", "filter", "multi", "hint", "collation", "sampleId"}),
}
_REQUIRED = {"insert": ("document",), "update": ("filter", "updateMods"), "delete": ("filter",)}
_SUMMARY = ("nErrors", "nInserted", "nMatched", "nModified", "nUpserted", "nDeleted")


def _sequence(ctx: Context, field: str) -> list[Any]:
    if field in ctx.request.sequences:
        return list(ctx.request.sequences[field])
    value = ctx.body.get(field)
    if value is None:
        raise CommandError(40414, "Location40414", f"BSON field 'bulkWrite.{field}' is missing but a required field")
    if not isinstance(value, list):
        raise CommandError(14, "TypeMismatch", f"BSON field 'bulkWrite.{field}' is the wrong type, expected type 'array'")
    return value


def _namespaces(ctx: Context) -> list[tuple[str, str]]:
    """``nsInfo`` as (database, collection) pairs; an invalid namespace fails the command."""
    found: list[tuple[str, str]] = []
    for entry in _sequence(ctx, "nsInfo"):
        if not isinstance(entry, Mapping):
            raise CommandError(14, "TypeMismatch", "BSON field 'bulkWrite.nsInfo' is the wrong type, expected type 'object'")
        ns = entry.get("ns")
        if not isinstance(ns, str):
            raise CommandError(40414, "Location40414", "BSON field 'bulkWrite.nsInfo.ns' is missing but a required field")
        database, dot, name = ns.partition(".")
        if not dot or not database or not name or "$" in database or " " in database:
            raise CommandError(73, "InvalidNamespace", f"Invalid namespace specified for bulkWrite: '{ns}'")
        found.append((database, name))
    return found


def _parse_ops(ctx: Context, namespaces: list[tuple[str, str]]) -> list[tuple[str, int, Mapping[str, Any]]]:
    """Each op as (kind, nsInfo index, op).  mongod parses the whole command before it runs
    an op, so a malformed op fails the command and nothing is written."""
    ops = _sequence(ctx, "ops")
    if not 0 < len(ops) <= MAX_OPS:
        raise CommandError(10, "InvalidLength",
                           f"Write batch sizes must be between 1 and {MAX_OPS}. Got {len(ops)} operations.")
    parsed: list[tuple[str, int, Mapping[str, Any]]] = []
    for op in ops:
        if not isinstance(op, Mapping) or not op:
            raise CommandError(14, "TypeMismatch", "BSON field 'bulkWrite.ops' is the wrong type, expected type 'object'")
        kind = next(iter(op))  # mongod's parser reads the op's kind from its first field
        if kind not in _KINDS:
            raise CommandError(40415, "Location40415", f"BSON field 'bulkWrite.{kind}' is an unknown field.")
        for field in op:
            if field not in _OP_FIELDS[kind]:
                raise CommandError(40415, "Location40415", f"BSON field 'bulkWrite.ops.{field}' is an unknown field.")
        for field in _REQUIRED[kind]:
            if field not in op:
                raise CommandError(40414, "Location40414", f"BSON field 'bulkWrite.ops.{field}' is missing but a required field")
        index = op[kind]
        if isinstance(index, bool) or not isinstance(index, int | float) or index != int(index):
            raise CommandError(14, "TypeMismatch", f"BSON field 'bulkWrite.ops.{kind}' is the wrong type, expected type 'int'")
        if index < 0:
            raise CommandError(51024, "Location51024", f"BSON field '{kind}' value must be >= 0, actual value '{int(index)}'")
        parsed.append((kind, int(index), op))
    for _kind, index, op in parsed:  # (mongod checks the indexes once every op has parsed)
        if index >= len(namespaces):
            raise CommandError(2, "BadValue", f"BulkWrite ops entry {render(op)} has an invalid nsInfo index.")
    return parsed


def _error_entry(index: int, error: CommandError, kind: str) -> dict[str, Any]:
    """A failed op's cursor entry: mongod sets ``n`` 0 on it (and ``nModified`` 0 for an update)."""
    entry: dict[str, Any] = {"ok": 0.0, "idx": index, "code": error.code, "codeName": error.code_name,
                             "errmsg": error.errmsg, **error.extra, "n": 0}
    if kind == "update":
        entry["nModified"] = 0
    return entry


def bulk_write(ctx: Context) -> Outcome:
    if ctx.db != "admin":
        raise CommandError(13, "Unauthorized", "bulkWrite may only be run against the admin database.")
    namespaces = _namespaces(ctx)
    ops = _parse_ops(ctx, namespaces)
    errors_only = bool(ctx.body.get("errorsOnly", False))
    batch_size = _batch_size(ctx)
    values = command_let(ctx)
    bypass = bypass_validation(ctx)
    results: list[dict[str, Any]] = []
    summary = dict.fromkeys(_SUMMARY, 0)

    def run(index: int, parsed: tuple[str, int, Mapping[str, Any]]) -> None:
        kind, ns_index, op = parsed
        database, name = namespaces[ns_index]
        if definition(ctx, database, name) is not None:
            raise view_write_error(database, name)  # (the op's error, as a statement's on a view)
        if kind == "insert":
            document = op["document"]
            if not isinstance(document, Mapping):
                raise CommandError(14, "TypeMismatch", "BSON field 'bulkWrite.ops.document' is the wrong type, expected type 'object'")
            collection = ctx.collection(database, name, create=True)
            assert collection is not None
            collection.insert_one(document, bypass_validation=bypass)
            summary["nInserted"] += 1
            results.append({"ok": 1.0, "idx": index, "n": 1})
        elif kind == "update":
            if op.get("sort") is not None and op.get("multi"):
                raise CommandError(9, "FailedToParse", "Cannot specify sort with multi=true")
            collection = ctx.collection(database, name, create=True)
            assert collection is not None
            outcome = apply_update(ctx, collection, op["filter"], op["updateMods"], op, values,
                                   bypass=bypass, where="bulkWrite.ops.collation")
            entry: dict[str, Any] = {"ok": 1.0, "idx": index, "n": outcome.matched, "nModified": outcome.modified}
            summary["nModified"] += outcome.modified
            if outcome.upserted:
                entry["n"] = 1
                entry["upserted"] = {"_id": outcome.upserted_id}
                summary["nUpserted"] += 1
            else:
                summary["nMatched"] += outcome.matched
            results.append(entry)
        else:
            deleted = apply_delete(ctx, database, name, op["filter"], op, values, limit=0 if op.get("multi") else 1,
                                   where="bulkWrite.ops.collation")
            summary["nDeleted"] += deleted
            results.append({"ok": 1.0, "idx": index, "n": deleted})

    def finish(errors: list[dict[str, Any]]) -> dict[str, Any]:
        summary["nErrors"] = len(errors)
        entries = sorted(errors if errors_only else results + errors, key=lambda entry: int(entry["idx"]))
        record = {"cursor": {"id": Int64(0), "firstBatch": entries, "ns": CURSOR_NS},
                  **{key: summary[key] for key in _SUMMARY}, "ok": 1.0}
        ctx.retry_record = record  # every entry, for a retry of this write (see replay)
        return _reply(ctx, record, batch_size)

    def shape(index: int, error: CommandError) -> dict[str, Any]:
        return _error_entry(index, error, ops[index][0])

    return run_statements(ctx, list(ops), run, finish, shape)


def _batch_size(ctx: Context) -> int | None:
    """``cursor.batchSize`` (None: every entry fits the first batch, as mongod's default)."""
    options = ctx.body.get("cursor")
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise CommandError(14, "TypeMismatch", "BSON field 'bulkWrite.cursor' is the wrong type, expected type 'object'")
    size = options.get("batchSize")
    if size is None:
        return None
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise CommandError(51024, "Location51024", f"BSON field 'batchSize' value must be >= 0, actual value '{size}'")
    return int(size)


def _reply(ctx: Context, record: Mapping[str, Any], batch_size: int | None) -> dict[str, Any]:
    """The reply to the command whose every cursor entry is in ``record``: a cursor is left
    open on the member only when the entries do not all fit the first batch."""
    entries = record["cursor"]["firstBatch"]
    # (mongod never answers an empty first batch with an open cursor: batchSize 0 with entries
    # to return keeps them all for getMore, which the registry does too)
    opened = ctx.member.cursors.open(CURSOR_NS, entries, batch_size=len(entries) if batch_size is None else batch_size,
                                     lsid=lsid_key(ctx))
    reply = {key: value for key, value in record.items() if key not in ("cursor", "ok")}
    return {"cursor": opened["cursor"], **reply, "ok": 1.0}


def replay(ctx: Context, record: dict[str, Any]) -> dict[str, Any]:
    """The answer to a retry of a bulkWrite that was applied: its results again, in a new
    cursor (the first one may be spent, or on a member that is no longer primary)."""
    return _reply(ctx, record, _batch_size(ctx))


def failed_first_op(ctx: Context, error: CommandError) -> dict[str, Any]:
    """The reply when the onPrimaryTransactionalWrite failpoint fails the first op before its
    commit: the op's error in the cursor, nothing applied (mongod turns a statement's failure
    into the op's error, as for the other write commands)."""
    ops = _parse_ops(ctx, _namespaces(ctx))
    summary = dict.fromkeys(_SUMMARY, 0)
    summary["nErrors"] = 1
    record = {"cursor": {"id": Int64(0), "firstBatch": [_error_entry(0, error, ops[0][0])], "ns": CURSOR_NS},
              **summary, "ok": 1.0}
    return _reply(ctx, record, _batch_size(ctx))


BULK_COMMANDS = [
    CommandSpec("bulkWrite", bulk_write, access="write", retryable_write=True, min_wire_version=25, replay=replay),
]
