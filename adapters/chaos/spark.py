"""The ``spark-offsets`` workload: the Spark source's offset and replay protocol, under faults.

The Spark data source (``adapters/spark/stream.py``) keeps no state in the database: its
offsets are resume tokens, decided by the pure rules of :mod:`mongo_sansio.pipeline.offsets`
(``StreamOffset``, ``next_end``, ``TokenRange``) and :mod:`mongo_sansio.pipeline.hashing`
(``keyPartitions``).  This workload plays the same protocol on the world's client, as Spark's
micro-batch engine drives it:

1. the initial offset: the stream's position before anything is written, fixed once;
2. ``latestOffset``: a read-ahead of tokens after the last offset, ended by ``next_end``
   (with ``maxEventsPerBatch`` drawn per world, or none: the stream's current position and a
   one-token probe), written to the *offset log* before the batch runs;
3. the batch's partitions (``keyPartitions`` drawn, filtered on the server or by the reader),
   each reading from its start to its end token, with a deadline (a task that misses it fails,
   and Spark runs the batch again: same start, same end);
4. the sink takes the batch's rows under its batch id (idempotent: a batch it already holds
   is not added twice, and must come back with the same rows), then the *commit log* records it.

The query "restarts" at drawn points (after planning, between partitions, after the sink,
before the commit log): what is not committed is dropped, and the restarted query replays the
batch the offset log holds past the last commit, with the same end.  The invariant
(:meth:`SparkLedger.check`): every committed write to ``chaos.events`` (as the oplog took it)
is in the sink exactly once and in the committed order per key -- or the source said it cannot
resume (ChangeStreamHistoryLost) and never skipped silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mongo_sansio.bson import Timestamp
from mongo_sansio.errors import MongoError, OperationFailure
from mongo_sansio.ops.write_concern import WriteConcern
from mongo_sansio.pipeline.hashing import key_partition, partition_match
from mongo_sansio.pipeline.offsets import StreamOffset, TokenRange, Verdict, next_end

if TYPE_CHECKING:
    from .world import World

__all__ = ["SparkLedger", "spark_driver", "spark_writer"]

KEYS = 4  # documents the writer updates (the change events' keys)
_HISTORY_LOST = (280, 286)
_END_TOKEN_SECONDS = 20.0  # a partition that cannot reach its end token by then fails
_QUIET_ADVANCE_SECONDS = 3.0
_QUIET_PLANS = 3  # plans without a new batch, once every acknowledged write was delivered
_NAMESPACE = "chaos.events"


class _Restart(Exception):
    """The query stops here (its driver process restarts)."""


class SparkLedger:
    """What the Spark workload saw and what the invariant compares with the oplog."""

    def __init__(self) -> None:
        self.committed: list[tuple[str, int]] = []  # (key, seq) as the oplog took them
        self.timestamps: list[Any] = []  # (their oplog timestamps: some may roll back)
        self.acked: list[tuple[str, int]] = []
        self.sink: dict[int, list[tuple[str, int]]] = {}  # batch id -> its rows
        self.cannot_resume: str | None = None
        self.ready = False
        self.writer_done = False

    def note(self, op: Any, ts: Any) -> None:
        """An oplog operation and its entry's timestamp (the world's watcher passes every one)."""
        if op.ns == _NAMESPACE and op.op in ("i", "u") and isinstance(op.after, Mapping):
            self.committed.append((str(op.after["_id"]), int(op.after["seq"])))
            self.timestamps.append(ts)

    def delivered(self) -> list[tuple[str, int]]:
        return [row for batch in sorted(self.sink) for row in self.sink[batch]]

    def check(self, world: World) -> None:
        rows = self.delivered()
        # a rolled-back write was never committed: it is not owed, and must not be in the sink
        rolled_back = world.rolled_back()
        committed_rows = [row for row, ts in zip(self.committed, self.timestamps, strict=True)
                          if ts not in rolled_back]
        if set(rows) - set(committed_rows):
            world.violate(f"the Spark sink holds rolled-back events {sorted(set(rows) - set(committed_rows))}")
            return
        if len(set(rows)) != len(rows):
            world.violate(f"the Spark sink holds an event twice: {rows}")
            return
        for key in sorted({key for key, _ in committed_rows} | {key for key, _ in rows}):
            seen = [seq for k, seq in rows if k == key]
            committed = [seq for k, seq in committed_rows if k == key]
            if seen != committed[: len(seen)]:
                world.violate(f"the Spark sink has {key}'s events {seen}, not in the committed order {committed}")
                return
            if self.cannot_resume is None and len(seen) < len(committed):
                missing = committed[len(seen) :]
                world.violate(f"the Spark sink missed {key}'s committed events {missing} without saying so")
                return


async def spark_writer(world: World, name: str) -> None:
    """Majority writes setting one of a few keys' ``seq`` (inserts, then updates)."""
    events = world.client.chaos.get_collection("events", write_concern=WriteConcern(w="majority"))
    ledger = world.spark
    while not ledger.ready:
        await world.loop.sleep(0.05)
    for seq in range(world.steps):
        key = f"k{world.rng.randrange(KEYS)}"
        write = events.update_one({"_id": key}, {"$set": {"seq": seq}}, upsert=True)
        ok, _ = await world.op(name, "event write", write)
        ledger.acked.extend([(key, seq)] if ok else [])
        await world.pause()
    ledger.writer_done = True


class _Query:
    """One run of the streaming query (a restart makes a new one from the logs)."""

    def __init__(self, world: World, name: str, max_events: int | None, partitions: int, server_filter: bool):
        self.world = world
        self.name = name
        self.max_events = max_events
        self.partitions = partitions
        self.server_filter = server_filter
        self.last_move = world.loop.now
        self.events = world.client.chaos.events

    def maybe_restart(self, where: str) -> None:
        if self.world.rng.random() < 0.08:
            self.world.history.append(f"{self.name} restarts {where}")
            raise _Restart(where)

    async def op(self, what: str, awaitable: Any) -> Any:
        ok, result = await self.world.op(self.name, what, awaitable)
        if not ok:
            if isinstance(result, OperationFailure) and result.code in _HISTORY_LOST:
                raise result
            raise _Restart(f"{what} failed")  # a failed task or driver call: Spark stops the query
        return result

    async def position(self) -> StreamOffset:
        """The stream's current position (a new stream's first resume token)."""
        stream = await self.op("position watch", self.events.watch(max_await_time_ms=1))
        try:
            if stream.resume_token is None:
                await self.op("position try_next", stream.try_next())
            token = stream.resume_token
        finally:
            await _close(stream)
        if token is None:
            raise _Restart("no resume token for the position")
        return StreamOffset(token=str(token["_data"]))

    async def latest_offset(self, start: StreamOffset) -> StreamOffset:
        """``latestOffset``: read tokens ahead of ``start`` and let ``next_end`` decide."""
        position = None if self.max_events is not None else await self.position()
        seen: list[tuple[str, Timestamp | None]] = []
        stream = await self.op(
            "read-ahead watch",
            self.events.watch(
                [{"$project": {"_id": 1, "clusterTime": 1}}],
                max_await_time_ms=200,
                batch_size=1 if position is not None else None,
                **start.watch_options(),
            ),
        )
        try:
            while self.max_events is None or len(seen) < self.max_events:
                event = await self.op("read-ahead try_next", stream.try_next())
                if event is None:
                    break
                ts = event.get("clusterTime")
                seen.append((str(event["_id"]["_data"]), ts if isinstance(ts, Timestamp) else None))
                if position is not None:
                    break
            post_batch = stream.resume_token
        finally:
            await _close(stream)
        now = self.world.loop.now
        end = next_end(
            start,
            seen,
            None if post_batch is None else str(post_batch["_data"]),
            max_events=self.max_events,
            quiet_seconds=now - self.last_move,
            quiet_advance_seconds=_QUIET_ADVANCE_SECONDS,
            position=position,
        )
        if end != start:
            self.last_move = now
        return end

    async def read_partition(self, start: StreamOffset, end: str, index: int) -> list[tuple[str, int]]:
        """One partition's rows of the batch (start, end], in token order."""
        window = TokenRange(start, end)
        pipeline = [partition_match(index, self.partitions)] if self.server_filter and self.partitions > 1 else []
        deadline = self.world.loop.now + _END_TOKEN_SECONDS
        stream = await self.op("batch watch", self.events.watch(pipeline, max_await_time_ms=10, **start.watch_options()))
        rows: list[tuple[str, int]] = []
        try:
            while True:
                event = await self.op("batch try_next", stream.try_next())
                if event is None:
                    if window.reached_by(_position(stream)):
                        return rows
                    if self.world.loop.now > deadline:
                        raise _Restart(f"the end token was not reached in {_END_TOKEN_SECONDS:g}s")
                    continue
                verdict = window.verdict(str(event["_id"]["_data"]))
                if verdict is Verdict.STOP:
                    return rows
                key = event.get("documentKey")
                if self.server_filter or self.partitions == 1 or key_partition(key, self.partitions) == index:
                    rows.append(_row(event))
                if verdict is Verdict.KEEP_AND_STOP or window.reached_by(_position(stream)):
                    return rows
        finally:
            await _close(stream)


def _row(event: Mapping[str, Any]) -> tuple[str, int]:
    key = str(event["documentKey"]["_id"])
    document = event.get("fullDocument")
    if isinstance(document, Mapping) and "seq" in document:
        return key, int(document["seq"])
    fields = (event.get("updateDescription") or {}).get("updatedFields") or {}
    return key, int(fields["seq"])


def _position(stream: Any) -> str | None:
    token = stream.resume_token
    return None if token is None else str(token["_data"])


async def _close(resource: Any) -> None:
    try:
        await resource.close()
    except MongoError:
        pass


async def spark_driver(world: World, name: str) -> None:
    """Spark's micro-batch loop over the source, restarted at drawn points (see the module
    docstring); it drains until every acknowledged write was delivered and the stream stayed
    quiet a while."""
    ledger, rng, loop = world.spark, world.rng, world.loop
    max_events = rng.choice((None, 1, 2, 5))
    partitions = rng.choice((1, 2, 3))
    server_filter = rng.random() < 0.5
    offset_log: dict[int, tuple[StreamOffset, StreamOffset]] = {}  # batch id -> (start, end)
    commit_log: list[int] = []
    initial: StreamOffset | None = None
    quiet = 0
    give_up = None
    while True:
        query = _Query(world, name, max_events, partitions, server_filter)
        try:
            if initial is None:
                initial = await query.position()  # fixed once, kept beside the checkpoint
                ledger.ready = True
            while True:
                if ledger.writer_done and set(ledger.acked) <= set(ledger.delivered()) and quiet >= _QUIET_PLANS:
                    return
                give_up = loop.now + 120.0 if ledger.writer_done and give_up is None else give_up
                if give_up is not None and loop.now > give_up:
                    missing = sorted(set(ledger.acked) - set(ledger.delivered()))
                    world.violate(f"the Spark query never delivered acknowledged writes {missing}")
                    return
                batch = commit_log[-1] + 1 if commit_log else 0
                planned = offset_log.get(batch)
                if planned is None:  # plan the next batch (a planned one is replayed as it was)
                    start = offset_log[commit_log[-1]][1] if commit_log else initial
                    end = await query.latest_offset(start)
                    if end == start:
                        quiet += 1
                        await loop.sleep(0.3)
                        continue
                    offset_log[batch] = planned = (start, end)
                    query.maybe_restart("after planning")
                quiet = 0
                await _run_batch(world, query, batch, *planned)
                query.maybe_restart("before the commit log")
                commit_log.append(batch)
        except _Restart:
            await loop.sleep(rng.uniform(0.0, 0.5))
        except OperationFailure as error:
            ledger.cannot_resume = f"{type(error).__name__} {error.code}"
            world.history.append(f"{name} cannot resume: {ledger.cannot_resume}")
            return


async def _run_batch(world: World, query: _Query, batch: int, start: StreamOffset, end: StreamOffset) -> None:
    """Read every partition of the batch, then hand its rows to the sink (idempotent by id)."""
    ledger = world.spark
    rows: list[tuple[str, int]] = []
    if end.token is not None and not TokenRange(start, end.token).empty:
        for index in range(query.partitions):
            rows += await query.read_partition(start, end.token, index)
            query.maybe_restart("between partitions")
    if batch in ledger.sink:
        if sorted(ledger.sink[batch]) != sorted(rows):
            world.violate(f"replayed batch {batch} gave {rows}, not its first rows {ledger.sink[batch]}")
        return
    ledger.sink[batch] = rows
    query.maybe_restart("after the sink")
