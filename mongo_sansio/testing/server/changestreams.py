"""Change streams: ``$changeStream`` as the first stage of an aggregate, read from the oplog.

Inputs: the aggregate's context (the target: a collection name, or 1 for a database, or 1 on
``admin`` with ``allChangesForCluster: true`` for the cluster), the ``$changeStream`` options
(fullDocument, fullDocumentBeforeChange, resumeAfter, startAfter, startAtOperationTime,
showExpandedEvents) and the rest of the pipeline.  Outputs: a tailable awaitData cursor reply
whose batches are change events and carry ``postBatchResumeToken``; the cursor's source scans
the shared oplog (:mod:`.oplog`) at every getMore, so writes made after the stream opened show
up.  Failures are CommandErrors: ChangeStreamHistoryLost (286) when the resume point is older
than the bounded oplog, InvalidResumeToken (260), ChangeStreamFatalError (280).

A committed transaction is one oplog entry; it gives one event per operation, in order, all
with the commit's clusterTime and each with the transaction's ``txnNumber`` and ``lsid``.

Events (mongod 7.0's shapes): insert, update (``updateDescription``: updatedFields,
removedFields, truncatedArrays), replace, delete, drop, rename (``to``), dropDatabase and
invalidate; with ``showExpandedEvents`` also create, createIndexes, dropIndexes and modify
(collMod), and on a database or the cluster the create, modify and drop of a view, which mongod
reads from the writes to ``system.views`` (:func:`.views.view_event`).  Writes to ``system.*``
collections are otherwise not reported.  Every event about a collection (all but dropDatabase,
invalidate and a view's events) carries its ``collectionUUID`` (the oplog entry's ``ui``).
A collection stream is invalidated by a drop or rename of its collection (or the
drops of a dropDatabase), a database stream by dropDatabase; the cursor closes (id 0) after
the invalidate.  Pre- and post-images come from the oplog entries written while the
collection had ``changeStreamPreAndPostImages`` enabled (``create`` option or ``collMod``:
:mod:`.coll_mod`).
Resume tokens: :mod:`.resume_tokens`; ``updateDescription``: :mod:`.update_descriptions`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import attrs

from mongo_sansio.bson import Int64, RawDocument, Timestamp, encode
from mongo_sansio.testing.engine import CommandError, run_pipeline
from mongo_sansio.testing.engine.aggregate import compile_pipeline
from mongo_sansio.testing.server.context import Context, Outcome
from mongo_sansio.testing.server.cursors import Cursor
from mongo_sansio.testing.server.handshake import MAX_BSON_OBJECT_SIZE
from mongo_sansio.testing.server.oplog import OplogEntry, wall_datetime
from mongo_sansio.testing.server.resume_tokens import (
    INVALIDATE,
    TokenKey,
    decode_token,
    encode_token,
)
from mongo_sansio.testing.server.update_descriptions import bson_equal, update_description
from mongo_sansio.testing.server.views import SYSTEM_VIEWS, view_event

__all__ = ["ChangeStream", "RESUMABLE_CODES", "is_change_stream_cursor",
           "is_change_stream", "open_change_stream", "update_description"]

SPLIT_STAGE = "$changeStreamSplitLargeEvent"
# Stages mongod allows after $changeStream (the rest are refused).
ALLOWED_STAGES = frozenset({"$match", "$project", "$addFields", "$set", "$unset", "$replaceRoot",
                            "$replaceWith", "$redact", SPLIT_STAGE})
# Stages that build new documents or pass the given ones through, never changing them.
_NON_MUTATING = frozenset({"$match", "$project"})
OPTIONS = frozenset({"fullDocument", "fullDocumentBeforeChange", "resumeAfter", "startAfter",
                     "startAtOperationTime", "allChangesForCluster", "showExpandedEvents"})
INTERNAL_DATABASES = frozenset({"admin", "config", "local"})
EXPANDED_KINDS = {"create": "create", "createIndexes": "createIndexes", "dropIndexes": "dropIndexes",
                  "collMod": "modify", "shardCollection": "shardCollection"}  # (the last: a shard's, mongos)
# Codes mongod labels ResumableChangeStreamError on a change stream's getMore (network,
# not-primary, shutdown and interruption errors); from the spec's list, not from mongod's source.
RESUMABLE_CODES = frozenset({6, 7, 63, 89, 91, 133, 150, 189, 234, 262, 9001, 10107, 11600, 11602,
                             13388, 13435, 13436})


def _fatal(message: str) -> CommandError:
    return CommandError(280, "ChangeStreamFatalError", message)


def is_change_stream(pipeline: Sequence[Any]) -> bool:
    return bool(pipeline) and isinstance(pipeline[0], Mapping) and "$changeStream" in pipeline[0]


def is_change_stream_cursor(cursor: Cursor | None) -> bool:
    return cursor is not None and isinstance(cursor.source, _Poll)


# --- the stream ------------------------------------------------------------------------------


# Oplog operations that give one document event each (insert, update or replace, delete).
_DOCUMENT_OPS = frozenset({"i", "u", "d"})
_SCOPES_KEPT = 1000  # namespaces a stream remembers the scope of
_VIEWS_SUFFIX = "." + SYSTEM_VIEWS  # the namespace of a database's view definitions


class _Scope(NamedTuple):
    db: str
    coll: str
    ns: dict[str, str]  # the events' ``ns`` field


class _Poll:
    """The cursor's source: a callable that remembers its stream (so getMore can tell a
    change-stream cursor from others)."""

    def __init__(self, stream: ChangeStream) -> None:
        self.stream = stream

    def __call__(self, wall: float) -> list[RawDocument]:
        # (a getMore scans about a batch, like the first batch: the stream's batchSize)
        return self.stream.scan(limit=self.stream.batch_size)


class ChangeStream:
    """One open change stream: its scope, options, start point and scan position.

    Inputs: the cluster (for the oplog and updateLookup), the scope (``db`` None: the cluster;
    ``coll`` None: a database), the parsed ``$changeStream`` options, the stages after it.
    Outputs: :meth:`scan` (the events since the last scan, after the pipeline) and
    :meth:`batch_fields` (``postBatchResumeToken`` for a batch).
    """

    def __init__(self, ctx: Context, db: str | None, coll: str | None, spec: Mapping[str, Any],
                 pipeline: list[Any]) -> None:
        self.cluster = ctx.cluster
        self.db = db
        self.coll = coll
        self.full_document = _choice(spec, "fullDocument", ("default", "updateLookup", "whenAvailable", "required"))
        self.before_change = _choice(spec, "fullDocumentBeforeChange", ("off", "whenAvailable", "required"))
        self.expanded = bool(spec.get("showExpandedEvents", False))
        self.split = bool(pipeline) and isinstance(pipeline[-1], Mapping) and SPLIT_STAGE in pipeline[-1]
        self.pipeline = pipeline[:-1] if self.split else pipeline
        for stage in self.pipeline:
            name = next(iter(stage), "") if isinstance(stage, Mapping) else ""
            if name == SPLIT_STAGE:
                raise CommandError(7182802, "Location7182802", f"{SPLIT_STAGE} must be the last stage in the pipeline")
            if name not in ALLOWED_STAGES:
                _check_stage_name(stage)
                raise CommandError(ALLOWED_STAGE_ERROR, "Location" + str(ALLOWED_STAGE_ERROR),
                                   f"Stage {name} is not permitted in a $changeStream pipeline")
        self.start, resume_ts = self._start_point(spec)
        first = self.cluster.oplog.first_timestamp
        if first is not None and _ts_key(first) > _ts_key(resume_ts):
            raise CommandError(286, "ChangeStreamHistoryLost",
                               "Resume of change stream was not possible, as the resume point may no longer be in the oplog.")
        self.scan_from = resume_ts  # entries at or after this Timestamp are still to be scanned
        self.high_water = self.start
        self.last_token: dict[str, Any] = _high_water_token(self.start)
        self.invalidated = False
        self.batch_size: int | None = None  # the aggregate's batchSize: how far a scan goes
        self._scopes: dict[str, _Scope | None] = {}  # namespace -> what _scope says of it
        self._wall = math.nan  # the wall seconds of the last event made (NaN: none), and its wallTime
        self._wall_time = wall_datetime(0.0)

    def _start_point(self, spec: Mapping[str, Any]) -> tuple[TokenKey, Timestamp]:
        given = [name for name in ("resumeAfter", "startAfter", "startAtOperationTime") if name in spec]
        if len(given) > 1:
            raise CommandError(40674, "Location40674", "Only one type of resume option is allowed, but multiple were found.")
        if given == ["startAtOperationTime"]:
            ts = spec["startAtOperationTime"]
            if not isinstance(ts, Timestamp):
                raise CommandError(14, "TypeMismatch", "startAtOperationTime must be a Timestamp")
            return TokenKey.before(ts), ts
        if given:
            key = decode_token(spec[given[0]])
            if given == ["resumeAfter"] and key.type == INVALIDATE:
                raise CommandError(260, "InvalidResumeToken",
                                   "Attempting to resume a change stream using 'resumeAfter' is not allowed from an invalidate notification.")
            return key, key.ts
        last = self.cluster.oplog.last_timestamp
        return TokenKey.after(last), last

    # --- scanning --------------------------------------------------------------------------

    def scan(self, limit: int | None = None) -> list[RawDocument]:
        """The events (after the pipeline) of oplog entries not scanned yet, in order, encoded;
        stops after an invalidate.  With ``limit`` (the stream's batchSize) the scan stops once
        it has that many, as mongod's does: the rest is scanned by the next getMores."""
        if self.invalidated:
            return []
        oplog = self.cluster.oplog
        first = oplog.first_timestamp
        if first is not None and _ts_key(first) > _ts_key(self.high_water.ts):
            # The bounded oplog dropped entries this open stream had not read yet.
            raise CommandError(286, "ChangeStreamHistoryLost", "the change stream fell off the oplog")
        # only majority-committed entries, as mongod's change streams (a rollback never takes
        # back an event a stream gave)
        committed = self.cluster.replication.commit_point
        entries = oplog.entries[oplog.index_from(self.scan_from):oplog.index_from(Timestamp(committed.time, committed.inc + 1))]
        step = len(entries) if limit is None else max(limit, 1)
        out: list[RawDocument] = []
        for offset in range(0, len(entries), step or 1):
            out.extend(self._scan_entries(entries[offset:offset + step]))
            if self.invalidated or (limit is not None and len(out) >= limit):
                break
        return out

    def _scan_entries(self, entries: list[OplogEntry]) -> list[RawDocument]:
        """The events of ``entries`` after the pipeline; moves the scan position past them."""
        found: list[tuple[TokenKey, dict[str, Any]]] = []
        start = self.start
        start_ts = (start.time, start.inc)
        last: OplogEntry | None = None
        try:
            for entry in entries:
                # Every event of a later entry is after the start; only the start's own entry
                # needs the full comparison (its events before the start are passed over).
                ts = entry.ts
                later = (ts.time, ts.inc) > start_ts
                if entry.op in _DOCUMENT_OPS:
                    # (the common entry, one document event, without _events' lists)
                    scope = self._scope(entry.ns)
                    if scope is not None:
                        key, event = self._document_event(entry, scope, 0)
                        if later or key > start or self._resumes_inside(key):
                            found.append((key, event))
                    elif self.expanded and entry.ns.endswith(_VIEWS_SUFFIX):
                        found.extend((k, e) for k, e in self._view_events(entry, 0) if later or k > start)
                else:
                    for key, event in self._events(entry):
                        if later or key > start or self._resumes_inside(key):
                            found.append((key, event))
                            # (startAfter an invalidate passes it by and goes on)
                            if key.type == INVALIDATE:
                                self.invalidated = True
                last = entry
                if self.invalidated:
                    break
        finally:
            # (the scan position moves once, past the last entry read, rather than at each)
            if last is not None:
                self.high_water = TokenKey.after(last.ts)
                self.scan_from = Timestamp(last.ts.time, last.ts.inc + 1)
        out: list[RawDocument] = []
        if not self.pipeline:
            for key, event in found:
                out.extend(self._sized(event, key))
            return out
        keys = {event["_id"]["_data"]: key for key, event in found}
        for document in self._run_pipeline([event for _, event in found]):
            token = document.get("_id")
            data = token.get("_data") if isinstance(token, Mapping) else None
            if not isinstance(data, str) or data not in keys or not _unchanged_token(token, data):
                raise _fatal("Encountered an event whose _id field, which contains the resume token, was modified by the pipeline. "
                             "Modifying the _id field of an event makes it impossible to resume the stream from that point.")
            out.extend(self._sized(document, keys[data]))
        return out

    def _run_pipeline(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The stages after ``$changeStream`` over the events.  ``$match`` and ``$project``
        never change the documents they are given, so a pipeline of only those runs on the
        events themselves; others get copies (the events share their documents with the
        oplog).  A token-only read-ahead (``$project: {_id: 1}``) then costs little more than
        the scan, as it does on mongod."""
        now = self.cluster.write_datetime()
        if not all(isinstance(stage, Mapping) and next(iter(stage), "") in _NON_MUTATING for stage in self.pipeline):
            return run_pipeline(events, self.pipeline, now=now)
        results = events
        for stage, compiled in zip(self.pipeline, compile_pipeline(self.pipeline, now=now), strict=True):
            fields = _top_level_inclusion(stage)
            if fields is None:
                results = compiled(results)
            else:  # the same documents the general projection gives, without its walk
                results = [{name: value for name, value in event.items() if name in fields} for event in results]
        return results

    def _resumes_inside(self, key: TokenKey) -> bool:
        """Whether the stream resumes from a fragment of the event at ``key`` (its later
        fragments are still to come)."""
        return self.start.fragment > 0 and attrs.evolve(self.start, fragment=0) == key

    def _sized(self, event: dict[str, Any], key: TokenKey) -> list[RawDocument]:
        """The event, or its fragments under $changeStreamSplitLargeEvent when over 16 MiB,
        encoded: the size check's encoding is the one the reply copies (encoding an event
        again for the batch's 16 MiB cut and again in the reply cost twice as much)."""
        data = encode(event)
        if len(data) <= MAX_BSON_OBJECT_SIZE:
            return [RawDocument(data)]
        if not self.split:
            raise CommandError(10334, "BSONObjectTooLarge",
                               f"Executor error during getMore :: caused by :: BSONObj size: {len(data)} is invalid. "
                               f"Size must be between 0 and {MAX_BSON_OBJECT_SIZE}(16MB)")
        fragments = split_event(event, key)
        return [RawDocument(encode(f)) for f in fragments if decode_token(f["_id"]) > self.start]

    def batch_fields(self, cursor: Cursor, batch: list[Mapping[str, Any]]) -> dict[str, Any]:
        """``postBatchResumeToken`` for a batch just taken: the last event's token while more
        events wait, else the latest scanned position (the event's own token when the scan
        ended on it).  Closes the cursor after an invalidate."""
        if self.invalidated:
            cursor.tailable = False
        if batch:
            token = batch[-1]["_id"]
            key = decode_token(token)
            if cursor.pending or (key.time, key.inc) == (self.high_water.time, self.high_water.inc):
                self.last_token = dict(token)
            else:
                self.last_token = _high_water_token(self.high_water)
        elif not cursor.pending:
            self.last_token = _high_water_token(self.high_water)
        return {"postBatchResumeToken": dict(self.last_token)}

    # --- events ----------------------------------------------------------------------------

    def _events(self, entry: OplogEntry) -> list[tuple[TokenKey, dict[str, Any]]]:
        if entry.kind == "applyOps":
            # A committed transaction: one event per operation, in order, each with the
            # session (mongod's txnNumber and lsid fields) and the commit's clusterTime.
            out = []
            for index, op in enumerate(entry.operations()):
                for key, event in self._operation_events(op, index):
                    event["txnNumber"] = Int64(op.txn_number or 0)
                    event["lsid"] = op.lsid
                    out.append((key, event))
            return out
        return self._operation_events(entry, 0)

    def _operation_events(self, entry: OplogEntry, index: int) -> list[tuple[TokenKey, dict[str, Any]]]:
        if entry.op in _DOCUMENT_OPS:
            scope = self._scope(entry.ns)
            if scope is None:
                return self._view_events(entry, index) if entry.ns.endswith(_VIEWS_SUFFIX) else []
            return [self._document_event(entry, scope, index)]
        if entry.op != "c":
            return []
        return self._command_events(entry, index)

    def _scope(self, ns: str) -> _Scope | None:
        """The database, collection and ``ns`` field of a document event on ``ns``, or None
        when this stream does not see ``ns``; kept per namespace, and the ``ns`` document is
        shared by its events (nothing changes an event's fields in place: a pipeline that
        could runs on copies)."""
        try:
            return self._scopes[ns]
        except KeyError:
            pass
        db, _, coll = ns.partition(".")
        scope = _Scope(db, coll, {"db": db, "coll": coll}) if self._in_scope(db, coll) else None
        if len(self._scopes) >= _SCOPES_KEPT:
            self._scopes.clear()
        self._scopes[ns] = scope
        return scope

    def _view_events(self, entry: OplogEntry, index: int) -> list[tuple[TokenKey, dict[str, Any]]]:
        """The create, modify or drop of a view a write to ``system.views`` stands for, which
        mongod reports with showExpandedEvents to database and cluster streams."""
        found = view_event(entry) if self.expanded and self.coll is None else None
        if found is None or not self._in_scope(found[1], found[2]):
            return []
        kind, db, name, description = found
        key = TokenKey(entry.ts.time, entry.ts.inc, index)
        event = self._base(entry, key, kind)
        event["ns"] = {"db": db, "coll": name}
        if description is not None:
            event["operationDescription"] = description
        return [(key, event)]

    def _in_scope(self, db: str, coll: str | None) -> bool:
        if coll is not None and coll.startswith("system."):
            return False  # mongod's streams pass over system collections
        if self.db is None:
            return db not in INTERNAL_DATABASES
        if db != self.db:
            return False
        return self.coll is None or coll == self.coll

    def _base(self, entry: OplogEntry, key: TokenKey, kind: str, document_key: Any = None,
              *, collection_event: bool = False) -> dict[str, Any]:
        """The fields every event starts with; with expanded events, an event about a
        collection (not dropDatabase, not invalidate) also names it by the entry's UUID,
        between clusterTime and wallTime as mongod places it."""
        wall = entry.wall
        if wall != self._wall:
            # The entries of one write share its wall time (an insert of 1000 documents logs
            # 1000 entries): its datetime is made once, not once an event.
            self._wall, self._wall_time = wall, wall_datetime(wall)
        event: dict[str, Any] = {"_id": encode_token(key, document_key), "operationType": kind,
                                 "clusterTime": entry.ts}
        if collection_event and self.expanded and entry.ui is not None:
            event["collectionUUID"] = entry.ui
        event["wallTime"] = self._wall_time
        return event

    def _document_event(self, entry: OplogEntry, scope: _Scope, index: int) -> tuple[TokenKey, dict[str, Any]]:
        ts = entry.ts
        key = TokenKey(ts.time, ts.inc, index)
        # (the entry's own document key: the oplog's documents are copies made at the write,
        # never changed, and an event's are only read -- as fullDocument already was)
        document_key = entry.document_key or {}
        event = self._base(entry, key, entry.kind, document_key, collection_event=True)
        if entry.kind in ("insert", "replace") and entry.after is not None:
            event["fullDocument"] = entry.after
        elif entry.kind == "update":
            post = self._post_image(entry, scope.db, scope.coll, document_key)
            if post is not _ABSENT:
                event["fullDocument"] = post
        event["ns"] = scope.ns
        event["documentKey"] = document_key
        if entry.kind == "update" and entry.before is not None and entry.after is not None:
            event["updateDescription"] = update_description(
                entry.before, entry.after, disambiguate=self.expanded
            )
        if entry.kind != "insert" and self.before_change != "off":
            event["fullDocumentBeforeChange"] = self._image(entry, entry.before, self.before_change, "pre")
        return key, event

    def _post_image(self, entry: OplogEntry, db: str, coll: str, document_key: dict[str, Any]) -> Any:
        if self.full_document == "default":
            return _ABSENT
        if self.full_document == "updateLookup":
            collection = self.cluster.collection(db, coll)
            found = collection.find(document_key, None, limit=1) if collection is not None else []
            return found[0] if found else None
        return self._image(entry, entry.after, self.full_document, "post")

    def _image(self, entry: OplogEntry, image: dict[str, Any] | None, mode: str, which: str) -> Any:
        if entry.images and image is not None:
            return image
        if mode == "required":
            # The code and message are from memory, unverified against a live mongod.
            raise CommandError(
                280, "ChangeStreamFatalError",
                f"Change stream was configured to require a {which}-image for all update, delete and replace events, "
                f"but the {which}-image was not found for event: {entry.ts}",
            )
        return None

    def _command_events(self, entry: OplogEntry, index: int) -> list[tuple[TokenKey, dict[str, Any]]]:
        db = entry.ns.partition(".")[0]
        command = dict(entry.command or {})
        kind = entry.kind
        key = TokenKey(entry.ts.time, entry.ts.inc, index)
        invalidate = TokenKey(entry.ts.time, entry.ts.inc, index, INVALIDATE)
        out: list[tuple[TokenKey, dict[str, Any]]] = []
        if kind == "dropDatabase":
            if self.db is None or (self.db == db and self.coll is None):
                event = self._base(entry, key, "dropDatabase")
                event["ns"] = {"db": db}
                out.append((key, event))
            if self.db == db and self.coll is None:
                out.append((invalidate, self._base(entry, invalidate, "invalidate")))
            return out
        if kind == "renameCollection":
            source_db, _, source = str(command.get("renameCollection", "")).partition(".")
            target_db, _, target = str(command.get("to", "")).partition(".")
            if not self._in_scope(source_db, source):
                return []
            event = self._base(entry, key, "rename", collection_event=True)
            event["ns"] = {"db": source_db, "coll": source}
            event["to"] = {"db": target_db, "coll": target}
            if self.expanded:
                description: dict[str, Any] = {"to": {"db": target_db, "coll": target}}
                if command.get("dropTarget") is not None:  # the UUID of the target it replaced
                    description["dropTarget"] = command["dropTarget"]
                event["operationDescription"] = description
            out.append((key, event))
            if self.coll is not None:
                out.append((invalidate, self._base(entry, invalidate, "invalidate")))
            return out
        coll_name = command.get(kind)
        if not isinstance(coll_name, str) or not self._in_scope(db, coll_name):
            return []
        if kind == "drop":
            event = self._base(entry, key, "drop", collection_event=True)
            event["ns"] = {"db": db, "coll": coll_name}
            out.append((key, event))
            if self.coll is not None:
                out.append((invalidate, self._base(entry, invalidate, "invalidate")))
            return out
        if kind in EXPANDED_KINDS and self.expanded:
            event = self._base(entry, key, EXPANDED_KINDS[kind], collection_event=True)
            event["ns"] = {"db": db, "coll": coll_name}
            event["operationDescription"] = _operation_description(kind, command)
            out.append((key, event))
        return out


UNRECOGNIZED_STAGE = 40324
ALLOWED_STAGE_ERROR = 31175  # mongod's code for a stage not allowed here, from memory


def _check_stage_name(stage: Any) -> None:
    """mongod parses the pipeline before it checks what a change stream allows: a stage name
    it does not know is Unrecognized pipeline stage name (40324), not "not permitted"."""
    try:
        compile_pipeline([stage])
    except CommandError as error:
        if error.code == UNRECOGNIZED_STAGE:
            raise
_ABSENT = object()


def _operation_description(kind: str, command: dict[str, Any]) -> dict[str, Any]:
    if kind == "create":
        return {"idIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_"}}
    if kind == "createIndexes":
        return {"indexes": list(command.get("indexes") or [])}
    if kind == "dropIndexes":
        index = command.get("index")
        names = index if isinstance(index, list) else [index]
        return {"indexes": [{"name": n} if isinstance(n, str) else {"key": n} for n in names]}
    return {key: value for key, value in command.items() if key != kind}


def split_event(event: dict[str, Any], key: TokenKey) -> list[dict[str, Any]]:
    """Cut an event over 16 MiB into fragments of its top-level fields, each under 16 MiB and
    carrying its own token and ``splitEvent: {fragment, of}`` (fragments count from 1)."""
    groups: list[list[str]] = [[]]
    overhead = 200  # _id, splitEvent and the document's own framing
    size = overhead
    for name, value in event.items():
        if name == "_id":
            continue
        field_size = len(encode({name: value})) - 5
        if field_size + overhead > MAX_BSON_OBJECT_SIZE:
            raise CommandError(7182803, "Location7182803",
                               f"Cannot split the change event: the field '{name}' alone exceeds 16MB")
        if groups[-1] and size + field_size > MAX_BSON_OBJECT_SIZE:
            groups.append([])
            size = overhead
        groups[-1].append(name)
        size += field_size
    document_key = event.get("documentKey")
    fragments = []
    for number, names in enumerate(groups, start=1):
        fragment_key = TokenKey(key.time, key.inc, key.index, key.type, number)
        fragment = {"_id": encode_token(fragment_key, document_key if isinstance(document_key, Mapping) else None),
                    "splitEvent": {"fragment": number, "of": len(groups)}}
        fragment.update({name: event[name] for name in names})
        fragments.append(fragment)
    return fragments


def _top_level_inclusion(stage: Mapping[str, Any]) -> frozenset[str] | None:
    """The fields a ``$project`` keeps when it only includes top-level fields (``_id`` kept
    unless excluded): e.g. ``{_id: 1, clusterTime: 1}``; None for any other stage."""
    spec = stage.get("$project")
    if not isinstance(spec, Mapping) or not spec:
        return None
    fields = {"_id"}
    included = False
    for name, value in spec.items():
        if not isinstance(name, str) or not name or "." in name or name.startswith("$"):
            return None
        if name == "_id" and value in (0, False) and not isinstance(value, float):
            fields.discard("_id")
        elif value not in (1, True) or isinstance(value, float):
            return None
        else:
            fields.add(name)
            included = True
    return frozenset(fields) if included else None  # ({_id: 0} alone excludes: not this case)


def _unchanged_token(token: Any, data: str) -> bool:
    """Whether an event's ``_id`` after the pipeline is still ``{_data: data}`` (BSON
    equality; a plain one-field dict with that string is, without encoding it)."""
    if type(token) is dict and len(token) == 1 and type(token.get("_data")) is str:
        return True  # (the caller checked that the string is data)
    return bson_equal(token, {"_data": data})


def _ts_key(ts: Timestamp) -> tuple[int, int]:
    return (ts.time, ts.inc)


def _high_water_token(key: TokenKey) -> dict[str, Any]:
    return encode_token(key)


def _choice(spec: Mapping[str, Any], field: str, allowed: tuple[str, ...]) -> str:
    value = spec.get(field, allowed[0])
    if value not in allowed:
        raise CommandError(2, "BadValue", f"'{value}' is not a valid value for $changeStream.{field}")
    return str(value)


# --- the aggregate entry point ----------------------------------------------------------------


def open_change_stream(ctx: Context, target: Any, pipeline: list[Any], batch_size: int | None) -> Outcome:
    """Answer ``aggregate`` whose first stage is ``$changeStream``: the first batch of a
    tailable awaitData cursor (events already in the oplog past the start point)."""
    spec = pipeline[0]["$changeStream"]
    if not isinstance(spec, Mapping):
        raise CommandError(50808, "Location50808", "$changeStream stage expects a document as argument")
    unknown = [name for name in spec if name not in OPTIONS]
    if unknown:
        raise CommandError(40415, "Location40415", f"BSON field '$changeStream.{unknown[0]}' is an unknown field.")
    cluster_wide = bool(spec.get("allChangesForCluster", False))
    if isinstance(target, str):
        if cluster_wide:
            raise CommandError(ALLOWED_STAGE_ERROR, "Location" + str(ALLOWED_STAGE_ERROR),
                               "A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database, "
                               "and with no collection name")
        if ctx.db in INTERNAL_DATABASES:
            raise CommandError(73, "InvalidNamespace", f"$changeStream may not be opened on the internal {ctx.db} database")
        db: str | None = ctx.db
        coll: str | None = target
        ns = f"{ctx.db}.{target}"
    else:
        ns = f"{ctx.db}.$cmd.aggregate"
        coll = None
        if cluster_wide:
            if ctx.db != "admin":
                raise CommandError(ALLOWED_STAGE_ERROR, "Location" + str(ALLOWED_STAGE_ERROR),
                                   "A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database")
            db = None
        elif ctx.db in INTERNAL_DATABASES:
            raise CommandError(73, "InvalidNamespace", f"$changeStream may not be opened on the internal {ctx.db} database")
        else:
            db = ctx.db
    stream = ChangeStream(ctx, db, coll, spec, list(pipeline[1:]))
    stream.batch_size = batch_size or None
    first = stream.scan(limit=stream.batch_size)
    from mongo_sansio.testing.server.commands_crud import lsid_key

    return ctx.member.cursors.open(
        ns, first, batch_size=batch_size, tailable=not stream.invalidated, await_data=True,
        source=_Poll(stream), lsid=lsid_key(ctx), on_batch=stream.batch_fields,
    )
