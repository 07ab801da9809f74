"""CRUD commands: insert, update, delete, findAndModify, find, getMore, killCursors,
aggregate (``$changeStream`` pipelines are handed to :mod:`.changestreams`), count, distinct.

Inputs: a :class:`~.context.Context` (the command document, its document sequences, the
cluster's data, ``now``).  Outputs: mongod's reply documents -- ``{n, ok}`` with
``writeErrors: [{index, code, errmsg, keyPattern?, keyValue?}]`` for writes, cursor replies for
reads -- or a :class:`~.context.Waiting` for an awaitData getMore with nothing to return yet.
Failures are raised as CommandError (the dispatcher turns them into ``ok: 0`` replies).
aggregate reads its source and its ``$lookup`` sources with :func:`.views.read`, so a view
reads as its documents; the other commands on a view are answered by :mod:`.views`.

A write's ``bypassDocumentValidation: true`` (insert, update, findAndModify, and an aggregate
writing with $out or $merge) skips the target collection's document validation.

A command's ``collation`` (a write statement's own, for update and delete) is parsed as mongod
parses it and handed to the engine; without one, the collection's default applies (the engine
resolves that).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from mongo_sansio.testing.engine import MISSING, Collection, CommandError, run_pipeline
from mongo_sansio.testing.engine.aggregate import lite_parse_pipeline
from mongo_sansio.testing.engine.collation import parse_collation
from mongo_sansio.testing.engine.collection import OperationCollation, UpdateOutcome
from mongo_sansio.testing.engine.errors import bad_value
from mongo_sansio.testing.engine.order import Missing
from mongo_sansio.testing.engine.plan import hint_names_an_index
from mongo_sansio.testing.engine.variables import bind_expression, bind_filter, let_values
from mongo_sansio.testing.server.api_version import check_same
from mongo_sansio.testing.server.coll_stats import coll_stats_document, is_coll_stats
from mongo_sansio.testing.server.context import CommandSpec, Context, Outcome, Waiting
from mongo_sansio.testing.server.cursors import Cursor
from mongo_sansio.testing.server.tailable import check_tailable, tailable_source
from mongo_sansio.testing.server.transactions import (
    TRANSIENT_CODES,
    WriteBlocked,
    wait_for_transaction,
)
from mongo_sansio.testing.server.views import read as read_namespace

__all__ = ["CRUD_COMMANDS"]

DEFAULT_AWAIT_MS = 1000  # mongod's awaitData getMore wait without maxTimeMS


def _type_error(message: str) -> CommandError:
    return CommandError(14, "TypeMismatch", message)


def collection_name(ctx: Context) -> str:
    value = ctx.body.get(ctx.request.name)
    if not isinstance(value, str) or not value:
        raise CommandError(
            73, "InvalidNamespace", f"collection name has invalid type {type(value).__name__}"
        )
    return value


def _int(ctx: Context, field: str, default: int | None = None) -> int | None:
    value = ctx.body.get(field, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _type_error(f"Field '{field}' should be a number")
    return int(value)


def _doc(ctx: Context, field: str) -> Mapping[str, Any] | None:
    value = ctx.body.get(field)
    if value is not None and not isinstance(value, Mapping):
        raise _type_error(f"BSON field '{ctx.request.name}.{field}' is the wrong type, expected type 'object'")
    return value


def _collation(holder: Mapping[str, Any], where: str) -> OperationCollation:
    """The collation ``holder`` (a command, or one statement of it) names at ``where``;
    MISSING when it names none (the collection's default then applies)."""
    return parse_collation(holder["collation"], where) if "collation" in holder else MISSING


def bypass_validation(ctx: Context) -> bool:
    """The command's ``bypassDocumentValidation`` (mongod reads it as a boolean, numbers too)."""
    value = ctx.body.get("bypassDocumentValidation", False)
    if not isinstance(value, bool | int | float):
        raise _type_error("BSON field 'bypassDocumentValidation' is the wrong type, expected type 'bool'")
    return bool(value)


def _items(ctx: Context, field: str) -> list[Any]:
    """A write command's statements: the body's array or the OP_MSG document sequence."""
    if field in ctx.request.sequences:
        return list(ctx.request.sequences[field])
    value = ctx.body.get(field)
    if not isinstance(value, list):
        raise CommandError(40414, "Location40414", f"BSON field '{ctx.request.name}.{field}' is missing but a required field")
    return value


def run_statements(ctx: Context, items: list[Any], run: Callable[[int, Any], None],
                   finish: Callable[[list[dict[str, Any]]], dict[str, Any]],
                   error_entry: Callable[[int, CommandError], dict[str, Any]] | None = None) -> Outcome:
    """Run a write command's statements in order (``run(index, statement)``), collecting write
    errors (an ordered command stops at the first).  A statement that meets a document an
    open transaction holds waits for it, then the command goes on from that statement.  In a
    transaction, a transient error (a write conflict) fails the whole command instead, as
    mongod's does.  ``error_entry`` shapes a statement's error (default: a writeErrors entry;
    bulkWrite gives its own cursor entry); ``finish`` gets the list of them."""
    shape = _write_error if error_entry is None else error_entry
    ordered = ctx.body.get("ordered", True) is not False
    errors: list[dict[str, Any]] = []

    def go(start: int) -> Outcome:
        for index in range(start, len(items)):
            try:
                run(index, items[index])
            except WriteBlocked as blocked:
                return wait_for_transaction(ctx, blocked.holder, functools.partial(go, index))
            except CommandError as error:
                if ctx.txn is not None and error.code in TRANSIENT_CODES:
                    raise
                errors.append(shape(index, error))
                if ordered or ctx.txn is not None:
                    break
        return finish(errors)

    return go(0)


def _write_error(index: int, error: CommandError) -> dict[str, Any]:
    return {"index": index, "code": error.code, "errmsg": error.errmsg, **error.extra}


def _finish_write(reply: dict[str, Any], errors: list[dict[str, Any]]) -> dict[str, Any]:
    if errors:
        reply["writeErrors"] = errors
    reply["ok"] = 1.0
    return reply


def _target(ctx: Context) -> Collection:
    collection = ctx.collection(ctx.db, collection_name(ctx), create=True)
    assert collection is not None
    return collection


def readable_collection(ctx: Context, name: str, database: str | None = None) -> Collection:
    """The collection a read (or a delete) runs on (in the command's database unless
    ``database``); a missing one reads as empty.  mongod parses the filter, projection and
    sort before it looks for the collection, so a bad query fails the same way whether the
    collection exists or not: running on an empty stand-in keeps that one parsing path."""
    database = ctx.db if database is None else database
    found = ctx.collection(database, name)
    if found is not None:
        return found
    return Collection(database, name, id_factory=ctx.cluster.new_object_id)


def apply_update(ctx: Context, collection: Collection, query: Any, mods: Any, statement: Mapping[str, Any],
                 values: dict[str, Any], *, bypass: bool, where: str) -> UpdateOutcome:
    """One update statement on ``collection``: ``query`` and ``mods`` (an update document,
    a replacement or a pipeline) with the statement's ``multi``, ``upsert``,
    ``arrayFilters``, ``sort`` and ``collation`` (``where`` names that field in errors), the
    command's ``let`` ``values`` bound in.  The update and bulkWrite commands share it."""
    return collection.update(
        bind_filter(query, values), _bind_update(mods, values),
        multi=bool(statement.get("multi", False)), upsert=bool(statement.get("upsert", False)),
        now=ctx.cluster.write_datetime(), array_filters=statement.get("arrayFilters"),
        sort=statement.get("sort"), collation=_collation(statement, where), bypass_validation=bypass,
    )


def apply_delete(ctx: Context, database: str, name: str, query: Any, statement: Mapping[str, Any],
                 values: dict[str, Any], *, limit: int, where: str) -> int:
    """One delete statement (``limit`` 1: the first match only); how many it deleted.  The
    delete and bulkWrite commands share it."""
    collation = _collation(statement, where)
    return readable_collection(ctx, name, database).delete(bind_filter(query, values), limit=limit, collation=collation)


def insert(ctx: Context) -> Outcome:
    documents = _items(ctx, "documents")
    collection = _target(ctx)
    bypass = bypass_validation(ctx)
    counts = {"n": 0}

    def run(_index: int, document: Any) -> None:
        if not isinstance(document, Mapping):
            raise CommandError(2, "BadValue", "a document to insert must be an object")
        collection.insert_one(document, bypass_validation=bypass)
        counts["n"] += 1

    return run_statements(ctx, documents, run, lambda errors: _finish_write({"n": counts["n"]}, errors))


def command_let(ctx: Context) -> dict[str, Any]:
    """The command's ``let`` variables (bound into filters and pipelines before they compile)."""
    return let_values(ctx.body.get("let"))


def _bind_update(spec: Any, values: dict[str, Any]) -> Any:
    """Variables reach a pipeline update; in operator updates ``$$x`` is a plain string."""
    return bind_expression(spec, values) if isinstance(spec, list) else spec


#: the fields of an update statement mongod 7.0 parses (its parser is strict); 8.0 adds sort
_UPDATE_STATEMENT_FIELDS = frozenset({
    "q", "u", "c", "arrayFilters", "hint", "multi", "upsert", "upsertSupplied", "collation",
    "sampleId", "$_allowShardKeyUpdatesWithoutFullShardKeyInQuery",
})


def _check_update_fields(ctx: Context, statements: list[Any]) -> None:
    """Refuse a statement field the server's version does not know.  mongod parses the whole
    command before running any statement, so this fails the command, not a statement."""
    known = _UPDATE_STATEMENT_FIELDS | ({"sort"} if ctx.cluster.max_wire_version >= 25 else set())
    for statement in statements:
        for field in statement if isinstance(statement, Mapping) else ():
            if field not in known:
                raise CommandError(40415, "Location40415", f"BSON field 'update.updates.{field}' is an unknown field.")


def update(ctx: Context) -> Outcome:
    statements = _items(ctx, "updates")
    _check_update_fields(ctx, statements)
    values = command_let(ctx)
    collection = _target(ctx)
    bypass = bypass_validation(ctx)
    upserted: list[dict[str, Any]] = []
    counts = {"n": 0, "modified": 0}

    def run(index: int, statement: Any) -> None:
        if not isinstance(statement, Mapping) or "q" not in statement or "u" not in statement:
            raise CommandError(40414, "Location40414", "BSON field 'update.updates.q' is missing but a required field")
        outcome = apply_update(ctx, collection, statement["q"], statement["u"], statement, values,
                               bypass=bypass, where="update.updates.collation")
        if outcome.upserted:
            upserted.append({"index": index, "_id": outcome.upserted_id})
            counts["n"] += 1
        counts["n"] += outcome.matched
        counts["modified"] += outcome.modified

    def finish(errors: list[dict[str, Any]]) -> dict[str, Any]:
        # After running the statements mongod lite-parses every pipeline update again (to
        # count the stages it uses); a stage it does not know fails the whole command there,
        # the writes already made staying made.
        for statement in statements:
            if isinstance(statement, Mapping) and isinstance(statement.get("u"), list):
                lite_parse_pipeline(statement["u"])
        reply: dict[str, Any] = {"n": counts["n"], "nModified": counts["modified"]}
        if upserted:
            reply["upserted"] = upserted
        return _finish_write(reply, errors)

    return run_statements(ctx, statements, run, finish)


def delete(ctx: Context) -> Outcome:
    statements = _items(ctx, "deletes")
    values = command_let(ctx)
    name = collection_name(ctx)
    counts = {"n": 0}

    def run(_index: int, statement: Any) -> None:
        if not isinstance(statement, Mapping) or "q" not in statement or "limit" not in statement:
            raise CommandError(40414, "Location40414", "BSON field 'delete.deletes.q' is missing but a required field")
        limit = statement["limit"]
        if limit not in (0, 1):
            raise CommandError(9, "FailedToParse", "The limit field in delete objects must be 0 or 1. Got " + str(limit))
        counts["n"] += apply_delete(ctx, ctx.db, name, statement["q"], statement, values, limit=int(limit),
                                    where="delete.deletes.collation")

    return run_statements(ctx, statements, run, lambda errors: _finish_write({"n": counts["n"]}, errors))


def find_and_modify(ctx: Context) -> Outcome:
    body = ctx.body
    values = command_let(ctx)
    collection = _target(ctx)
    fields = _doc(ctx, "fields")
    value, last_error = collection.find_and_modify(
        bind_filter(_doc(ctx, "query"), values), sort=_doc(ctx, "sort"), update=_bind_update(body.get("update"), values),
        remove=bool(body.get("remove", False)), new=bool(body.get("new", False)),
        upsert=bool(body.get("upsert", False)), fields=bind_expression(fields, values) if fields else fields,
        now=ctx.cluster.write_datetime(), array_filters=body.get("arrayFilters"),
        collation=_collation(body, f"{ctx.request.name}.collation"), bypass_validation=bypass_validation(ctx),
    )
    return {"lastErrorObject": last_error, "value": value, "ok": 1.0}


def _batch_size(ctx: Context, default: int | None) -> int | None:
    size = _int(ctx, "batchSize", default)
    if size is not None and size < 0:
        raise CommandError(51024, "Location51024", "BatchSize value must be non-negative, but received: " + str(size))
    return size


def find(ctx: Context) -> Outcome:
    name = collection_name(ctx)
    ns = f"{ctx.db}.{name}"
    limit = _int(ctx, "limit", 0) or 0
    skip = _int(ctx, "skip", 0) or 0
    if limit < 0:
        raise CommandError(51024, "Location51024", f"LIMIT value must be non-negative, but received: {limit}")
    if skip < 0:
        raise CommandError(51024, "Location51024", f"SKIP value must be non-negative, but received: {skip}")
    batch_size = _batch_size(ctx, None)
    collation = _collation(ctx.body, "find.collation")
    tailable, await_data = check_tailable(ctx, ns)
    collection = readable_collection(ctx, name)
    hint = ctx.body.get("hint")
    if ctx.collection(ctx.db, name) is not None and not hint_names_an_index(
        collection.planner_indexes(), hint
    ):  # (on a collection that does not exist, mongod's plan is the empty one: no error)
        raise bad_value(
            "planner returned error :: caused by :: hint provided does not correspond to an "
            "existing index"
        )
    values = command_let(ctx)
    projection = _doc(ctx, "projection")
    documents = collection.find(
        bind_filter(_doc(ctx, "filter"), values), bind_expression(projection, values) if projection else projection,
        sort=_doc(ctx, "sort"), skip=skip, limit=limit, hint=ctx.body.get("hint"),
        return_key=bool(ctx.body.get("returnKey", False)),
        show_record_id=bool(ctx.body.get("showRecordId", False)), collation=collation,
    )
    effective = collection.collation if isinstance(collation, Missing) else collation
    source = tailable_source(ctx, ctx.db, name, len(collection), effective) if tailable else None
    return ctx.member.cursors.open(
        ns, documents, batch_size=batch_size, limit=limit,
        single_batch=bool(ctx.body.get("singleBatch", False)),
        lsid=lsid_key(ctx), tailable=tailable, await_data=await_data, source=source,
    )


def lsid_key(ctx: Context) -> bytes | None:
    from mongo_sansio.testing.server.sessions import session_key

    return session_key(ctx.request.lsid)


def get_more(ctx: Context) -> Outcome:
    cursor_id = ctx.body.get("getMore")
    if not isinstance(cursor_id, int) or isinstance(cursor_id, bool):
        raise _type_error("Field 'getMore' must be of type long")
    name = ctx.body.get("collection")
    if not isinstance(name, str):
        raise _type_error("Field 'collection' must be of type string")
    cursor = ctx.member.cursors.lookup(int(cursor_id), f"{ctx.db}.{name}")
    if cursor.api is not None and ctx.api is not None:
        check_same("getMore", ctx.api, cursor.api, "the cursor-creating command")
    failure = ctx.member.failpoints.get_more_error()
    if failure is not None:
        from mongo_sansio.testing.server.dispatch import code_name  # dispatch imports this module

        raise CommandError(failure, code_name(failure), "Failing getMore via 'failGetMoreAfterCursorCheckout' failpoint")
    batch_size = _batch_size(ctx, None)
    registry = ctx.member.cursors
    wall = ctx.cluster.wall(ctx.now)
    if not (cursor.tailable and cursor.await_data):
        return registry.next_batch(cursor, batch_size, wall)
    reply = _await_batch(ctx, cursor, batch_size)
    if reply is not None:
        return reply
    wait_ms = _int(ctx, "maxTimeMS", DEFAULT_AWAIT_MS) or DEFAULT_AWAIT_MS

    def poll(now: float, timed_out: bool) -> Outcome | None:
        if cursor.id not in registry.cursors:
            raise CommandError(43, "CursorNotFound", f"cursor id {cursor.id} not found")
        found = _await_batch(ctx, cursor, batch_size, now)
        if found is not None or not timed_out:
            return found
        return registry.next_batch(cursor, batch_size, ctx.cluster.wall(now))

    return Waiting(ctx.now + wait_ms / 1000.0, poll)


def _await_batch(ctx: Context, cursor: Cursor, batch_size: int | None, now: float | None = None) -> dict[str, Any] | None:
    """A getMore batch if there is something to return now, else None (keep waiting)."""
    wall = ctx.cluster.wall(ctx.now if now is None else now)
    if cursor.source is not None and not cursor.pending:
        cursor.pending.extend(cursor.source(wall))
    if not cursor.pending:
        return None
    return ctx.member.cursors.next_batch(cursor, batch_size, wall)


def kill_cursors(ctx: Context) -> Outcome:
    name = collection_name(ctx)
    ids = ctx.body.get("cursors")
    if not isinstance(ids, list):
        raise _type_error("Field 'cursors' must be an array")
    return ctx.member.cursors.kill(f"{ctx.db}.{name}", ids)


def aggregate(ctx: Context) -> Outcome:
    target = ctx.body.get("aggregate")
    pipeline = ctx.body.get("pipeline")
    if not isinstance(pipeline, list):
        raise _type_error("'pipeline' option must be specified as an array")
    if ctx.body.get("explain") is True:
        from mongo_sansio.testing.server.commands_explain import explain_reply  # (a cycle)

        return explain_reply(ctx, {"aggregate": target, "pipeline": pipeline}, "queryPlanner")
    options = ctx.body.get("cursor")
    if not isinstance(options, Mapping):
        raise CommandError(9, "FailedToParse", "The 'cursor' option is required, except for aggregate with the explain argument")
    batch_size = options.get("batchSize")
    if batch_size is not None and (not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 0):
        raise CommandError(51024, "Location51024", "BatchSize value must be non-negative")
    collation = _collation(ctx.body, "aggregate.collation")
    if pipeline and isinstance(pipeline[0], Mapping) and "$listSearchIndexes" in pipeline[0]:
        from mongo_sansio.testing.server.commands_search import search_not_enabled

        raise search_not_enabled()  # as a mongod without Atlas Search
    if pipeline and isinstance(pipeline[0], Mapping) and "$changeStream" in pipeline[0]:
        if ctx.cluster.standalone:
            raise CommandError(40573, "Location40573", "The $changeStream stage is only supported on replica sets")
        from mongo_sansio.testing.server.changestreams import open_change_stream

        return open_change_stream(ctx, target, pipeline, batch_size)
    def lookup(name: str) -> list[dict[str, Any]]:
        return read_namespace(ctx, name)  # (a collection's documents, or a view's)

    if isinstance(target, str):
        ns = f"{ctx.db}.{target}"
        found = ctx.collection(ctx.db, target)
        if isinstance(collation, Missing):  # the collection's default, if it has one
            collation = found.collation if found is not None else None
        if any(is_coll_stats(stage) for stage in pipeline):
            source: list[dict[str, Any]] = [coll_stats_document(ctx, ctx.db, target, pipeline)]
            pipeline = pipeline[1:]
        else:
            source = lookup(target)
    elif target == 1 and not isinstance(target, bool):
        source = []
        ns = f"{ctx.db}.$cmd.aggregate"
        first = pipeline[0] if pipeline else None
        if isinstance(first, Mapping) and "$listLocalSessions" in first:
            if not isinstance(first["$listLocalSessions"], Mapping):
                raise CommandError(14, "TypeMismatch", "$listLocalSessions must take a nested object but found: " f"{first['$listLocalSessions']!r}")
            # the sessions this deployment has seen (the allUsers / users filters: one user)
            source = ctx.cluster.sessions.listed(ctx.cluster.write_datetime())
            pipeline = pipeline[1:]
        elif isinstance(first, Mapping) and "$documents" in first:
            given = first["$documents"]
            if not isinstance(given, list) or not all(isinstance(d, Mapping) for d in given):
                raise CommandError(5858203, "Location5858203", "an array is expected")
            source = [dict(d) for d in given]
            pipeline = pipeline[1:]
    else:
        raise CommandError(73, "InvalidNamespace", "the aggregate target must be a collection name or 1")
    pipeline = bind_expression(pipeline, let_values(ctx.body.get("let"), rand=ctx.cluster.random_fraction))
    out = _out_target(ctx, pipeline)
    merge = _merge_spec(ctx, pipeline)
    if out is not None or merge is not None:
        pipeline = pipeline[:-1]
    text_index = found.text_index() if isinstance(target, str) and found is not None else None
    results = run_pipeline(source, pipeline, lookup=lookup, now=ctx.cluster.write_datetime(),
                           collation=None if isinstance(collation, Missing) else collation, text_index=text_index)
    if out is not None:
        _write_out(ctx, out, results)
        results = []
    if merge is not None:
        _write_merge(ctx, merge, results)
        results = []
    return ctx.member.cursors.open(ns, results, batch_size=batch_size, lsid=lsid_key(ctx))


def _out_target(ctx: Context, pipeline: list[Any]) -> tuple[str, str] | None:
    """The (db, collection) of a final ``$out`` stage, or None."""
    last = pipeline[-1] if pipeline else None
    if not isinstance(last, Mapping) or "$out" not in last:
        return None
    if ctx.txn is not None:
        raise CommandError(263, "OperationNotSupportedInTransaction", "$out cannot be used in a transaction")
    read_concern = ctx.body.get("readConcern")
    if isinstance(read_concern, Mapping) and read_concern.get("level") == "linearizable":
        # code and message from memory: mongod refuses a writing stage under linearizable reads
        raise CommandError(72, "InvalidOptions", "$out cannot be used with a 'linearizable' read concern level")
    spec = last["$out"]
    if isinstance(spec, str) and spec:
        return ctx.db, spec
    if isinstance(spec, Mapping) and isinstance(spec.get("coll"), str) and spec["coll"]:
        database = spec.get("db", ctx.db)
        return (database if isinstance(database, str) and database else ctx.db), spec["coll"]
    raise CommandError(16990, "Location16990", "$out only supports a string or object argument")


def _write_out(ctx: Context, target: tuple[str, str], results: list[dict[str, Any]]) -> None:
    """$out replaces the target's documents with the results (its indexes stay), as mongod's
    does; a duplicate _id among the results fails the aggregate and leaves the target."""
    seen: set[Any] = set()
    for document in results:
        key = repr(document.get("_id"))
        if key in seen:
            raise CommandError(11000, "DuplicateKey", f"E11000 duplicate key error collection: {target[0]}.{target[1]} "
                               f"index: _id_ dup key: {{ _id: {document.get('_id')!r} }}")
        seen.add(key)
    ctx.cluster.begin_write(ctx.now)
    collection = ctx.cluster.collection(*target, create=True)
    assert collection is not None
    collection.delete({})
    bypass = bypass_validation(ctx)
    for document in results:
        collection.insert_one(document, bypass_validation=bypass)


def _merge_spec(ctx: Context, pipeline: list[Any]) -> dict[str, Any] | None:
    """A final ``$merge`` stage as ``{db, coll, on, whenMatched, whenNotMatched}``, or None.
    (Error codes from memory, unverified against a live mongod, but 11000 and 13113.)"""
    last = pipeline[-1] if pipeline else None
    if not isinstance(last, Mapping) or "$merge" not in last:
        return None
    if ctx.txn is not None:
        raise CommandError(263, "OperationNotSupportedInTransaction", "$merge cannot be used in a transaction")
    spec = last["$merge"]
    if isinstance(spec, str):
        spec = {"into": spec}
    if not isinstance(spec, Mapping):
        raise CommandError(51182, "Location51182", "$merge only supports a string or object argument")
    into = spec.get("into")
    if isinstance(into, str):
        database, coll = ctx.db, into
    elif isinstance(into, Mapping) and isinstance(into.get("coll"), str):
        database, coll = into.get("db", ctx.db), into["coll"]
    else:
        raise CommandError(51178, "Location51178", "$merge 'into' must be a string or an object")
    on = spec.get("on", "_id")
    fields = [on] if isinstance(on, str) else list(on) if isinstance(on, list) else None
    when_matched = spec.get("whenMatched", "merge")
    when_not_matched = spec.get("whenNotMatched", "insert")
    if fields is None or not all(isinstance(f, str) for f in fields):
        raise CommandError(51186, "Location51186", "$merge 'on' must be a string or an array of strings")
    if when_matched not in ("merge", "replace", "keepExisting", "fail"):
        # a pipeline for whenMatched is not simulated
        raise CommandError(51191, "Location51191", f"Enumeration value '{when_matched}' for field 'whenMatched' is not a valid value")
    if when_not_matched not in ("insert", "discard", "fail"):
        raise CommandError(51191, "Location51191", f"Enumeration value '{when_not_matched}' for field 'whenNotMatched' is not a valid value")
    return {"db": database, "coll": coll, "on": fields, "whenMatched": when_matched, "whenNotMatched": when_not_matched}


def _write_merge(ctx: Context, merge: dict[str, Any], results: list[dict[str, Any]]) -> None:
    """$merge writes each result into the target by its ``on`` fields, as mongod's does:
    a match is merged into, replaced, kept, or fails (DuplicateKey, as the insert would);
    a document without a match is inserted, discarded, or fails (MergeStageNoMatchingDocument)."""
    ctx.cluster.begin_write(ctx.now)
    collection = ctx.cluster.collection(merge["db"], merge["coll"], create=True)
    assert collection is not None
    bypass = bypass_validation(ctx)
    for document in results:
        match = {field: document.get(field) for field in merge["on"]}
        existing = collection.find_one(match) if all(f in document for f in merge["on"]) else None
        if existing is None:
            if merge["whenNotMatched"] == "fail":
                raise CommandError(13113, "MergeStageNoMatchingDocument", "$merge could not find a matching document in the target collection for at least one document in the source collection")
            if merge["whenNotMatched"] == "insert":
                collection.insert_one(document, bypass_validation=bypass)
            continue
        action = merge["whenMatched"]
        if action == "fail":
            collection.insert_one(document)  # raises the DuplicateKey error mongod reports
        elif action == "replace":
            collection.update({"_id": existing["_id"]}, {k: v for k, v in document.items() if k != "_id"},
                              bypass_validation=bypass)
        elif action == "merge":
            fields = {k: v for k, v in document.items() if k != "_id"}
            if fields:
                collection.update({"_id": existing["_id"]}, {"$set": fields}, bypass_validation=bypass)


def count(ctx: Context) -> Outcome:
    collection = readable_collection(ctx, collection_name(ctx))
    skip = _int(ctx, "skip", 0) or 0
    limit = _int(ctx, "limit", 0) or 0
    if skip < 0:
        raise CommandError(51024, "Location51024", "skip value is negative in count query")
    n = collection.count(_doc(ctx, "query"), skip=skip, limit=limit, collation=_collation(ctx.body, "count.collation"))
    return {"n": n, "ok": 1.0}


def distinct(ctx: Context) -> Outcome:
    collection = readable_collection(ctx, collection_name(ctx))
    key = ctx.body.get("key")
    if not isinstance(key, str):
        raise _type_error("BSON field 'distinct.key' is the wrong type, expected type 'string'")
    values = collection.distinct(key, _doc(ctx, "query"), collation=_collation(ctx.body, "distinct.collation"))
    return {"values": values, "ok": 1.0}


CRUD_COMMANDS = [
    CommandSpec("insert", insert, access="write", retryable_write=True),
    CommandSpec("update", update, access="write", retryable_write=True),
    CommandSpec("delete", delete, access="write", retryable_write=True),
    CommandSpec("findAndModify", find_and_modify, access="write", retryable_write=True),
    CommandSpec("findandmodify", find_and_modify, access="write", retryable_write=True),
    CommandSpec("find", find, access="read"),
    CommandSpec("getMore", get_more),
    CommandSpec("killCursors", kill_cursors),
    CommandSpec("aggregate", aggregate, access="read"),
    CommandSpec("count", count, access="read"),
    CommandSpec("distinct", distinct, access="read"),
]
