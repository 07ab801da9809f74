"""Change streams through mongos: one stream per shard, merged in cluster-time order.

Inputs: the client's ``$changeStream`` aggregate (collection, database or cluster), the
shards (and shards added while the stream runs).  Outputs: a router cursor (tailable,
awaitData) whose batches are the shards' events merged by resume token, and whose
``postBatchResumeToken`` is the last event's token while events wait, else a high-water-mark
token at the cluster time the merge has read up to.

As the server's "Sharded Cluster Pipelines" describe, each shard runs the stream's own stages
(the options, the user's ``$match``/``$project``...) and the router merges: an event is
returned only once every shard is known to have nothing earlier.  Here the shards live in
the same process and share the cluster clock, so every getMore reads every shard up to the
current cluster time: an idle shard is always known to be caught up (mongod's shards report
a high-water mark for that, advanced by their periodic no-op writes at the latest), and never
holds the stream back.  Events about the catalogue (drop, rename, dropDatabase, invalidate,
create...) come from the database's primary shard only (the other shards' copies of a drop
of a sharded collection are internal, as mongod's ``fromMigrate`` entries).  A shard added
while the stream runs (``addShard``) joins it from the cluster time it was added, so its
events show up without a restart (mongod's config-server entry ``kNewShardDetected``).
``documentKey`` carries the shard key's fields before ``_id`` (:mod:`.shards`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mongo_sansio.bson import Timestamp
from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.server.changestreams import ChangeStream, _Poll
from mongo_sansio.testing.server.commands_crud import lsid_key
from mongo_sansio.testing.server.context import Context
from mongo_sansio.testing.server.cursors import Cursor
from mongo_sansio.testing.server.resume_tokens import (
    INVALIDATE,
    TokenKey,
    decode_token,
    encode_token,
)

if TYPE_CHECKING:
    from mongo_sansio.testing.sharded.router import Router

__all__ = ["MergedStream", "is_change_stream", "open_merged"]

_DOCUMENT_EVENTS = frozenset({"insert", "update", "replace", "delete"})


def is_change_stream(pipeline: Any) -> bool:
    return (isinstance(pipeline, list) and bool(pipeline) and isinstance(pipeline[0], Mapping)
            and "$changeStream" in pipeline[0])


class MergedStream:
    """The shards' streams of one router cursor."""

    def __init__(self, router: Router, ctx: Context, body: dict[str, Any]) -> None:
        self.router = router
        self.db = ctx.db
        self.body = body
        self.user = ctx.state.user
        self.streams: dict[str, tuple[ChangeStream | None, list[Any]]] = {}
        self.invalidated = False
        self.last_token: dict[str, Any] | None = None
        spec = body["pipeline"][0]["$changeStream"]
        self.spec = dict(spec) if isinstance(spec, Mapping) else {}
        self.started = router.cluster.clock.last
        self.now = ctx.now
        self.batch_size: int | None = None  # (read by the cursor's source: every event is taken)
        for shard in list(router.cluster.shards):
            self._open(shard, ctx.now, None)

    def _open(self, shard: str, now: float, since: Timestamp | None) -> None:
        body = dict(self.body)
        pipeline = [dict(stage) if isinstance(stage, Mapping) else stage for stage in body["pipeline"]]
        if since is not None:
            spec = {k: v for k, v in self.spec.items() if k not in ("resumeAfter", "startAfter", "startAtOperationTime")}
            spec["startAtOperationTime"] = since
            pipeline[0] = {"$changeStream": spec}
        body["pipeline"] = pipeline
        body["cursor"] = {"batchSize": 0}
        for field in ("lsid", "txnNumber", "autocommit", "startTransaction"):
            body.pop(field, None)
        cluster = self.router.cluster.shards[shard]
        reply = self.router.cluster.call(cluster, self.db, body, now, user=self.user)
        if reply.get("ok") != 1.0:
            code = reply.get("code")
            raise CommandError(int(code) if isinstance(code, int) else 8, str(reply.get("codeName", "")), str(reply.get("errmsg", "")))
        cursor_id = int(reply["cursor"]["id"])
        stream: ChangeStream | None = None
        pending: list[Any] = list(reply["cursor"].get("firstBatch", []))
        if cursor_id and cluster.primary is not None:
            cursor = cluster.members[cluster.primary].cursors.cursors.pop(cursor_id, None)
            if cursor is not None and cursor.source is not None:
                stream = getattr(cursor.source, "stream", None)
                pending.extend(cursor.pending)
        self.streams[shard] = (stream, pending)

    def scan(self, limit: int | None = None) -> list[Any]:
        """Every shard's events up to now, merged by resume token; empty after an invalidate.
        (``limit`` is ignored: the router takes every event its shards have.)"""
        now = self.now
        if self.invalidated:
            return []
        catalog = self.router.cluster.catalog
        for shard in list(self.router.cluster.shards):
            if shard not in self.streams:
                added = catalog.shard_added.get(shard, self.started)
                self._open(shard, now, added)
        found: list[tuple[TokenKey, Any]] = []
        for shard, (stream, pending) in self.streams.items():
            events = list(pending)
            pending.clear()
            if stream is not None and not stream.invalidated:
                events.extend(stream.scan(limit=None))
            for event in events:
                if self._keep(shard, event):
                    found.append((decode_token(event["_id"]), event))
        found.sort(key=lambda item: item[0])
        out = []
        for key, event in found:
            out.append(event)
            if key.type == INVALIDATE:
                self.invalidated = True
                break
        return out

    def _keep(self, shard: str, event: Mapping[str, Any]) -> bool:
        if event.get("operationType") in _DOCUMENT_EVENTS:
            return True
        ns = event.get("ns")
        database = ns.get("db") if isinstance(ns, Mapping) else None
        if not isinstance(database, str):
            database = self.db
        return self.router.cluster.catalog.primary_shard(database) == shard

    def batch_fields(self, cursor: Cursor, batch: list[Mapping[str, Any]]) -> dict[str, Any]:
        if self.invalidated:
            cursor.tailable = False
        clock = self.router.cluster.clock.last
        last = decode_token(batch[-1]["_id"]) if batch else None
        if last is not None and (cursor.pending or self.invalidated or (last.time, last.inc) == (clock.time, clock.inc)):
            self.last_token = dict(batch[-1]["_id"])
        else:
            self.last_token = encode_token(TokenKey.after(clock))
        return {"postBatchResumeToken": dict(self.last_token)}


def open_merged(router: Router, ctx: Context, body: dict[str, Any]) -> dict[str, Any]:
    merged = MergedStream(router, ctx, body)
    target = body.get("aggregate")
    ns = f"{ctx.db}.{target}" if isinstance(target, str) else f"{ctx.db}.$cmd.aggregate"
    cursor = body.get("cursor")
    size = cursor.get("batchSize") if isinstance(cursor, Mapping) else None
    batch_size = int(size) if isinstance(size, int) and not isinstance(size, bool) else None
    first = merged.scan()
    # (the replica set's change-stream source: the router's cursor is a change stream's to the
    # getMore path too, whose resumable errors are labelled ResumableChangeStreamError)
    return ctx.member.cursors.open(
        ns, first, batch_size=batch_size, tailable=not merged.invalidated, await_data=True,
        source=_Poll(merged), lsid=lsid_key(ctx), on_batch=merged.batch_fields,  # type: ignore[arg-type]
    )
