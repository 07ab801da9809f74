"""Change data capture: a ``DataSourceStreamReader`` whose offsets are resume tokens.

Driver side (one long-lived Python process, state kept on the instance):

* :meth:`~MongoStreamReader.initialOffset` -- ``startAt`` when it names a point; for
  ``latest`` the stream's current position, fixed once: kept in
  ``<checkpointLocation>/mongo_sansio_initial_offset.json`` and read back on every later call
  and after a restart (Spark asks again until batch 0 commits; an offset taken from "now" each
  time would move and strand the replayed batch 0 after its own end).
* :meth:`~MongoStreamReader.latestOffset` -- reads ahead tokens only (the change stream
  projected to ``_id`` and ``clusterTime``) after the start: with ``maxEventsPerBatch`` it
  counts them and ends the batch at the last one within the limit; without, it takes the
  stream's current position (or the available-now target) and one token (a probe): an event
  at or before the position ends the batch at the position.  On a quiet stream it moves to
  the post-batch resume token every ``quietAdvanceSeconds``
  (:func:`mongo_sansio.pipeline.offsets.next_end`).
* :meth:`~MongoStreamReader.partitions` -- ``keyPartitions`` partitions over the same token
  range, each keeping the events whose ``documentKey`` hashes to it (on the server).

Executor side, :meth:`~MongoStreamReader.read` re-reads exactly the events between the start
and end tokens (``startAfter`` the start, stop at the end), so a retried or replayed batch
gives the same rows, as Arrow record batches while a thread of its own reads the stream; if the end cannot be reached within ``endTokenTimeoutMS`` it fails with
:class:`EndTokenNotReached` instead of waiting for ever.  A resume point that fell off the
oplog raises :class:`ChangeStreamHistoryLost` on either side; nothing is ever skipped quietly.
Nothing is written to the database (no side collection): Spark's checkpoint holds the offsets.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    DataType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from mongo_sansio.bson import Timestamp
from mongo_sansio.errors import OperationFailure
from mongo_sansio.pipeline.hashing import key_partition, partition_match
from mongo_sansio.pipeline.jsontext import relaxed_json
from mongo_sansio.pipeline.offsets import StreamOffset, TokenRange, Verdict, next_end

from .arrow import BATCH_ROWS, arrow_schema, batches, record_batch
from .batch import open_client
from .clients import reused_client
from .errors import ChangeStreamHistoryLost, EndTokenNotReached, MongoDataSourceError
from .gc_passes import fewer_gc_passes
from .options import SourceOptions

__all__ = [
    "MongoStreamReader",
    "event_row",
    "event_schema",
    "fix_initial_offset",
    "read_documents",
    "stream_target",
]

INITIAL_OFFSET_FILE = "mongo_sansio_initial_offset.json"
# A read-ahead with no limit stops after this long even if events keep coming.
READ_AHEAD_SECONDS = 10.0
# A reader's getMore batch: the server prepares the next one while the last is turned into rows.
READ_BATCH = 1000
# A reader's getMore waits at most this long (ms) for events that are not there yet.
READ_AWAIT_MS = 10
# Events handed from a reader's reading thread at a time, and how many such lists may wait.
HANDOVER_ITEMS = 256
HANDOVER_DEPTH = 16
_HISTORY_LOST = 286
_DOCUMENT_COLUMNS = ("documentKey", "fullDocument", "fullDocumentBeforeChange", "updateDescription")
_CLUSTER_TIME = StructType([StructField("t", LongType(), True), StructField("i", LongType(), True)])


def event_schema(options: SourceOptions) -> StructType:
    """The stream's columns: fixed, whatever the collection holds."""
    document: DataType = StringType()
    if options.document_format == "variant":
        from pyspark.sql.types import VariantType

        document = VariantType()
    return StructType([
        StructField("resumeToken", StringType(), False),
        StructField("operationType", StringType(), False),
        StructField("clusterTime", _CLUSTER_TIME, True),
        StructField("wallTime", TimestampType(), True),
        StructField("database", StringType(), True),
        StructField("collection", StringType(), True),
        *(StructField(name, document, True) for name in _DOCUMENT_COLUMNS),
        StructField("to", StringType(), True),
    ])


def _json(value: Any) -> str | None:
    return None if value is None else relaxed_json(value)


def event_row(event: Mapping[str, Any]) -> list[Any]:
    """One change event as the stream's column values (documents as relaxed Extended JSON)."""
    ts = event.get("clusterTime")
    ns = event.get("ns") or {}
    to = event.get("to")
    return [
        event["_id"]["_data"],
        event.get("operationType"),
        {"t": ts.time, "i": ts.inc} if isinstance(ts, Timestamp) else None,
        event.get("wallTime"),
        ns.get("db"),
        ns.get("coll"),
        *(_json(event.get(name)) for name in _DOCUMENT_COLUMNS),
        f"{to.get('db')}.{to.get('coll')}" if isinstance(to, Mapping) else None,
    ]


def _next_event(stream: Any) -> Mapping[str, Any] | None:
    """``stream.try_next()`` (which hands out an event already in the batch without a round
    of the blocking engine)."""
    event: Mapping[str, Any] | None = stream.try_next()
    return event


def _position(stream: Any) -> str | None:
    """The stream's resume token (``_data``): the last event's, or once a batch is used up,
    the server's post-batch resume token."""
    token = stream.resume_token
    return None if token is None else str(token["_data"])


def _caught_up(stream: Any, last_event: str, target: str | None) -> bool:
    """Whether a read-ahead can stop without another getMore (which would wait
    ``maxAwaitTimeMS`` for events that are not there): its position reached the available-now
    target, or it moved past the last event, i.e. the batch just used up ended where the
    server's scan of the oplog ended."""
    position = _position(stream)
    if position is None:
        return False
    return (target is not None and position >= target) or position > last_event


def _history_lost(error: OperationFailure) -> bool:
    return error.code == _HISTORY_LOST or "ChangeStreamHistoryLost" in str(error)


def _offset_file(options: SourceOptions) -> str | None:
    location = options.checkpoint_location
    if not location:
        return None
    if location.startswith("file:"):
        location = location[len("file:"):]
        while location.startswith("//"):
            location = location[1:]
    return os.path.join(location, INITIAL_OFFSET_FILE)


def stream_target(options: SourceOptions, client: Any) -> tuple[Any, list[dict[str, Any]]]:
    """What the stream watches through ``client``, and the stages that narrow it: the client
    for ``database`` ``*``, the database for ``collection`` ``*``, the collection for one name,
    and the database with a ``$match`` on ``ns.coll`` for a list of names (a drop or a rename
    of a listed collection is kept: its ``ns`` names it)."""
    if options.whole_deployment:
        return client, []
    database = client[options.database]
    if options.whole_database:
        return database, []
    names = options.collection_names
    if len(names) == 1:
        return database[names[0]], []
    return database, [{"$match": {"ns.coll": {"$in": list(names)}}}]


def _current_position(options: SourceOptions, client: Any = None) -> StreamOffset:
    """Where the stream is now (a new stream's first resume token, with the operation time it
    was read at), read through ``client`` or a client of its own."""
    if client is None:
        with open_client(options) as own:
            return _current_position(options, own)
    target, narrowing = stream_target(options, client)
    with client.start_session() as session, target.watch(
        narrowing, max_await_time_ms=1, session=session, **options.command_options()
    ) as stream:
        token = stream.resume_token
        if token is None:
            stream.try_next()
            token = stream.resume_token
        operation_time = session.operation_time
    if token is None:
        raise MongoDataSourceError("the server gave no resume token for the stream's start")
    return StreamOffset(
        token=str(token["_data"]),
        cluster_time=operation_time if isinstance(operation_time, Timestamp) else None,
    )


def fix_initial_offset(options: SourceOptions) -> StreamOffset:
    """The stream's initial offset, fixed durably beside the checkpoint when there is one:
    the first call decides it (``startAt``, or the current position for ``latest``), every
    later call, in this process or after a restart, reads it back."""
    path = _offset_file(options)
    if path is not None and os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            return StreamOffset.from_json(handle.read())
    offset = options.start_at.offset() or _current_position(options)
    if path is not None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(offset.to_json())
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)  # atomic: a crash leaves the old state or the new one
    return offset


class StreamPartition(InputPartition):
    def __init__(self, start: str, end: str, index: int, partitions: int) -> None:
        super().__init__(index)
        self.start = start
        self.end = end
        self.index = index
        self.partitions = partitions


class MongoStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        expected = schema if options.publish_full_document_only else event_schema(options)
        if schema != expected:
            raise MongoDataSourceError(
                "readStream of mongo_sansio gives change events with fixed columns; pass a stream "
                "option (e.g. .option('startAt', 'latest')) so that Spark plans a stream, and no "
                f"schema of your own (got {schema.simpleString()})"
            )
        self.options = options
        self.schema = schema
        self._initial: StreamOffset | None = None
        self._target: str | None = None
        self._target_offset: StreamOffset | None = None
        self._last_move = time.monotonic()
        self._collection_client: Any = None  # (client, what it watches, narrowing stages)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_collection_client"] = None  # clients are made where they are used
        return state

    # --- driver ------------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:
        if self._initial is None:
            self._initial = fix_initial_offset(self.options)
        return self._initial.to_dict()

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_events_per_batch is not None:
            return ReadMaxRows(self.options.max_events_per_batch)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target_offset = _current_position(self.options, self._client())
        self._target = self._target_offset.token

    def _client(self) -> Any:
        if self._collection_client is None:
            client = open_client(self.options)
            self._collection_client = (client, *stream_target(self.options, client))
        return self._collection_client[0]

    def _watch(self, stages: list[dict[str, Any]], **options: Any) -> Any:
        self._client()
        _, target, narrowing = self._collection_client
        return target.watch([*narrowing, *stages], **options)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        offset = StreamOffset.from_dict(start)
        if self._target is not None and not offset.is_before(self._target):
            return start  # the available-now run is done: no stream to open, no wait
        max_events = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        # With no limit the batch may end at the stream's current position as soon as one
        # event shows that it is not empty (a probe: one token read); tokens are read one by
        # one only to count them against maxEventsPerBatch.
        position = None
        if max_events is None:
            position = self._target_offset or _current_position(self.options, self._client())
        seen: list[tuple[str, Timestamp | None]] = []
        deadline = time.monotonic() + READ_AHEAD_SECONDS
        try:
            with self._watch(
                [{"$project": {"_id": 1, "clusterTime": 1}}],
                max_await_time_ms=self.options.max_await_time_ms,
                batch_size=1 if position is not None else None,
                **offset.watch_options(),
                **self.options.command_options(),
            ) as stream:
                while max_events is None or len(seen) < max_events:
                    event = _next_event(stream)
                    if event is None:
                        break
                    token = str(event["_id"]["_data"])
                    if self._target is not None and token > self._target:
                        break
                    ts = event.get("clusterTime")
                    seen.append((token, ts if isinstance(ts, Timestamp) else None))
                    if position is not None or _caught_up(stream, token, self._target):
                        break
                    if time.monotonic() > deadline:
                        break
                post_batch = stream.resume_token
        except OperationFailure as error:
            if _history_lost(error):
                raise ChangeStreamHistoryLost(offset.to_json(), error) from None
            raise
        now = time.monotonic()
        end = next_end(
            offset,
            seen,
            str(post_batch["_data"]) if post_batch is not None else None,
            max_events=max_events,
            quiet_seconds=now - self._last_move,
            quiet_advance_seconds=self.options.quiet_advance_seconds,
            target=self._target,
            position=position,
        )
        if end != offset:
            self._last_move = now
        return end.to_dict()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        first, last = StreamOffset.from_dict(start), StreamOffset.from_dict(end)
        if last.token is None or TokenRange(first, last.token).empty:
            return []
        count = self.options.key_partitions
        return [StreamPartition(first.to_json(), last.token, index, count) for index in range(count)]

    def commit(self, end: dict[str, Any]) -> None:
        pass  # the offsets live in Spark's checkpoint; nothing is written to the database

    def stop(self) -> None:
        if self._collection_client is not None:
            self._collection_client[0].close()
            self._collection_client = None

    # --- executors ---------------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, StreamPartition)
        with fewer_gc_passes():
            if self.options.publish_full_document_only:
                yield from batches(
                    read_documents(self.options, partition), self.schema,
                    mode=self.options.mode, corrupt_column=self.options.corrupt_column,
                )
                return
            rows = read_range(self.options, partition)
            if self.options.document_format == "variant":
                yield from _variant_rows(rows)
                return
            # Record batches of BATCH_ROWS events as they are read: a large micro-batch (a
            # backlog read without maxEventsPerBatch) never sits in memory whole.
            target = arrow_schema(self.schema)
            while chunk := list(itertools.islice(rows, BATCH_ROWS)):
                yield record_batch([list(column) for column in zip(*chunk, strict=True)], target)


def _variant_rows(rows: Iterable[list[Any]]) -> Iterator[Any]:
    from pyspark.sql.types import VariantVal

    positions = [2 + 4 + index for index in range(len(_DOCUMENT_COLUMNS))]
    for row in rows:
        for position in positions:
            if row[position] is not None:
                row[position] = VariantVal.parseJson(row[position])
        yield tuple(row)


def read_range(options: SourceOptions, partition: StreamPartition) -> Iterator[list[Any]]:
    """The rows of one partition of one micro-batch, in token order.

    The stream is read by a thread of its own, in getMores of ``READ_BATCH`` events, and
    hands the events over: while this thread turns a batch into rows, the reading thread has
    already asked for the next one, so the server prepares it meanwhile (instead of the server
    and this worker taking turns)."""
    for events in _handed_over(_range_events(options, partition), options.max_await_time_ms / 1000):
        for event in events:
            yield event_row(event)


#: the events that are a document's change (the rows of typed documents)
_DOCUMENT_CHANGES = frozenset({"insert", "update", "replace", "delete"})


def read_documents(options: SourceOptions, partition: StreamPartition) -> Iterator[Mapping[str, Any]]:
    """``publishFullDocumentOnly``: the changed documents themselves, each with its event's
    ``operationType``; a delete (or an update whose document is gone by the time it is looked
    up) is its ``documentKey`` fields.  Events that change no document (drop, rename,
    dropDatabase, invalidate) are not rows."""
    for events in _handed_over(_range_events(options, partition), options.max_await_time_ms / 1000):
        for event in events:
            operation = event.get("operationType")
            if operation not in _DOCUMENT_CHANGES:
                continue
            document = event.get("fullDocument")
            if not isinstance(document, Mapping):
                document = event.get("documentKey")
            yield {**(document if isinstance(document, Mapping) else {}), "operationType": operation}


def _range_events(options: SourceOptions, partition: StreamPartition) -> Iterator[Mapping[str, Any]]:
    """The events of one partition of one micro-batch, in token order.

    A stream that ends before the batch's end (a drop or rename invalidated it, and the end
    was taken later, as a position) goes on with a new stream after its last position, as the
    next batch would have: the events of a re-created collection up to the end are read too."""
    start = StreamOffset.from_json(partition.start)
    window = TokenRange(start, partition.end)
    server_filter = options.key_partitions > 1 and options.key_partition_filter == "server"
    pipeline = [partition_match(partition.index, partition.partitions)] if server_filter else []
    # Every event up to the end is written already (the end is a position the driver saw), so
    # a getMore need not wait for new ones: with the stream's own maxAwaitTimeMS, the getMore
    # after the last event waited that long for nothing whenever the server's post-batch token
    # was that event's (mongod's too, when the oplog ends there), not a position at the end.
    wait = min(options.max_await_time_ms, READ_AWAIT_MS)
    watch: dict[str, Any] = {
        "max_await_time_ms": wait, "batch_size": READ_BATCH, **options.command_options()
    }
    if options.full_document:
        watch["full_document"] = options.full_document
    elif options.publish_full_document_only:
        watch["full_document"] = "updateLookup"  # an update's row is the document after it
    if options.full_document_before_change:
        watch["full_document_before_change"] = options.full_document_before_change
    deadline = time.monotonic() + options.end_token_timeout_seconds
    resume = start.watch_options()
    try:
        with reused_client(options) as client:
            target, narrowing = stream_target(options, client)
            while True:
                with target.watch([*narrowing, *pipeline], **watch, **resume) as stream:
                    for event in _read_stream(stream, window, options, partition, server_filter, deadline):
                        if event is None:
                            return
                        yield event
                    position = _position(stream)
                if position is None or (resume.get("start_after") or {}).get("_data") == position:
                    raise EndTokenNotReached(partition.start, partition.end, options.end_token_timeout_seconds)
                resume = {"start_after": {"_data": position}}
    except OperationFailure as error:
        if _history_lost(error):
            raise ChangeStreamHistoryLost(partition.start, error) from None
        raise


def _read_stream(
    stream: Any,
    window: TokenRange,
    options: SourceOptions,
    partition: StreamPartition,
    server_filter: bool,
    deadline: float,
) -> Iterator[Mapping[str, Any] | None]:
    """The partition's events from one stream; None once the window is read; nothing more
    (the iteration ends) when the stream ended first."""
    while True:
        event = _next_event(stream)
        if event is None:
            if window.reached_by(_position(stream)):
                yield None
                return
            if not stream.alive:
                return
            if time.monotonic() > deadline:
                raise EndTokenNotReached(partition.start, partition.end, options.end_token_timeout_seconds)
            continue
        verdict = window.verdict(str(event["_id"]["_data"]))
        if verdict is Verdict.STOP:
            yield None
            return
        if server_filter or options.key_partitions == 1 or key_partition(
            event.get("documentKey"), partition.partitions
        ) == partition.index:
            yield event
        if verdict is Verdict.KEEP_AND_STOP or window.reached_by(_position(stream)):
            # (the end event, or the batch's post-batch token says the server has scanned
            # past the end: no getMore needed to learn that nothing is left)
            yield None
            return


_Item = TypeVar("_Item")


def _handed_over(items: Iterator[_Item], wait: float) -> Iterator[list[_Item]]:
    """``items``, produced by a thread of their own and handed over in lists (at most
    ``HANDOVER_DEPTH`` lists ahead).  An error in the producer is raised here; stopping early
    stops the producer (it closes ``items`` in its thread) within about ``wait`` seconds."""
    handoff: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=HANDOVER_DEPTH)
    stop = threading.Event()

    def put(message: tuple[str, Any]) -> bool:
        while not stop.is_set():
            try:
                handoff.put(message, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            chunk: list[_Item] = []
            for item in items:
                chunk.append(item)
                if len(chunk) >= HANDOVER_ITEMS:
                    if not put(("items", chunk)):
                        return
                    chunk = []
            if (not chunk or put(("items", chunk))) and put(("end", None)):
                return
        except BaseException as error:  # handed to the consumer, raised there
            put(("error", error))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    producer = threading.Thread(target=produce, name="mongo_sansio spark reader", daemon=True)
    producer.start()
    try:
        while True:
            kind, value = handoff.get()
            if kind == "items":
                yield value
            elif kind == "end":
                return
            else:
                raise value
    finally:
        stop.set()
        producer.join(wait + 5.0)


def describe_offset(offset: Mapping[str, Any] | str | None) -> str:
    """A short text for progress lines: the offset's cluster time, else its token."""
    if offset is None:
        return "-"
    data = json.loads(offset) if isinstance(offset, str) else offset
    return str(data.get("clusterTime") or data.get("token") or data.get("operationTime"))
