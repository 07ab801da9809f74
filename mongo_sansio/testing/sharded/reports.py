"""What mongos reports about the shards: dbStats and collStats summed over them, and explain
(each targeted shard's plan under mongos's own stage; an aggregate's split pipeline).

Inputs: the command and the shards it targets.  Outputs: the reply in mongos's shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.server.context import Context
from mongo_sansio.testing.sharded import pipelines

if TYPE_CHECKING:
    from mongo_sansio.testing.sharded.router import Router

__all__ = ["coll_stats", "db_stats", "explain", "explain_aggregate"]

_REPLY_FIELDS = ("ok", "$clusterTime", "operationTime")
# collStats figures mongos sums over the shards (nindexes, scaleFactor: every shard's alike).
_SUMMED = ("size", "count", "numOrphanDocs", "storageSize", "freeStorageSize", "totalIndexSize", "totalSize")


def db_stats(router: Router, ctx: Context, body: dict[str, Any]) -> dict[str, Any]:
    """mongos's dbStats: every shard's (``raw``), the numbers summed."""
    raw: dict[str, Any] = {}
    merged: dict[str, Any] = {"raw": raw, "db": ctx.db}
    for shard in router.cluster.shards:
        reply = router.send(ctx, shard, body)
        if reply.get("ok") != 1.0:
            return reply
        reply = {k: v for k, v in reply.items() if k not in ("$clusterTime", "operationTime")}
        raw[router.cluster.catalog.shards.get(shard, shard)] = reply
        for field, value in reply.items():
            if field not in ("ok", "scaleFactor", "avgObjSize") and isinstance(value, int | float) and not isinstance(value, bool):
                merged[field] = merged.get(field, 0) + value
    objects, size = merged.get("objects", 0), merged.get("dataSize", 0)
    merged["avgObjSize"] = (size / objects) if objects else 0
    merged["ok"] = 1.0
    return merged


def explain(router: Router, ctx: Context, body: dict[str, Any], ns: str) -> dict[str, Any]:
    """mongos's explain of a command on a sharded collection: each targeted shard's plan
    under a SINGLE_SHARD stage, or SHARD_MERGE (a read) / SHARD_WRITE (a write) over several;
    a write is targeted by its statement's filter."""
    inner = body["explain"]
    if next(iter(inner), "") == "aggregate":
        return explain_aggregate(router, ctx, inner, ns)
    name = next(iter(inner), "")
    statements = inner.get({"update": "updates", "delete": "deletes"}.get(name, ""))
    if isinstance(statements, list) and len(statements) == 1 and isinstance(statements[0], Mapping):
        query = statements[0].get("q")  # (a write's explain names one statement)
    else:
        query = inner.get("filter", inner.get("query"))
    shards = router.cluster.catalog.shards_for_filter(ns, query)
    plans: list[dict[str, Any]] = []
    stats: list[dict[str, Any]] = []
    for shard in shards:
        reply = router.send(ctx, shard, body)
        if reply.get("ok") != 1.0:
            return reply
        planner = dict(reply.get("queryPlanner") or {})
        plans.append({"shardName": shard, "connectionString": router.cluster.catalog.shards[shard], **planner})
        if "executionStats" in reply:
            stats.append({"shardName": shard, **reply["executionStats"]})
    writes = name in ("update", "delete", "findAndModify", "findandmodify")
    stage = "SINGLE_SHARD" if len(shards) == 1 else "SHARD_WRITE" if writes else "SHARD_MERGE"
    out: dict[str, Any] = {"queryPlanner": {"mongosPlannerVersion": 1, "winningPlan": {"stage": stage, "shards": plans}}}
    if stats:
        out["executionStats"] = {
            "nReturned": sum(int(s.get("nReturned", 0)) for s in stats),
            "executionTimeMillis": max(int(s.get("executionTimeMillis", 0)) for s in stats),
            "totalKeysExamined": sum(int(s.get("totalKeysExamined", 0)) for s in stats),
            "totalDocsExamined": sum(int(s.get("totalDocsExamined", 0)) for s in stats),
            "executionStages": {"stage": stage, "shards": stats},
        }
    out["ok"] = 1.0
    return out


def explain_aggregate(router: Router, ctx: Context, inner: Mapping[str, Any], ns: str) -> dict[str, Any]:
    """mongos's explain of an aggregate on a sharded collection: the pipeline as it is split
    (``splitPipeline``: the shards' part and the merger's, null when one shard runs it all),
    where the merge runs, and each targeted shard's own explain under ``shards``."""
    pipeline = list(inner.get("pipeline") or [])
    split, _ = pipelines.split_pipeline(pipeline)
    query = pipeline[0].get("$match") if split and "$match" in pipeline[0] else None
    shards = router.cluster.catalog.shards_for_filter(ns, query)
    part = pipeline if len(shards) == 1 else pipeline[:split]
    explained: dict[str, Any] = {}
    for shard in shards:
        reply = router.send(ctx, shard, {"aggregate": ns.partition(".")[2], "pipeline": part, "explain": True})
        if reply.get("ok") != 1.0:
            return reply
        host = router.cluster.catalog.shards[shard].partition("/")[2].split(",")[0]
        explained[shard] = {"host": host, **{k: v for k, v in reply.items() if k not in _REPLY_FIELDS}}
    return {
        "mergeType": "mongos",
        "splitPipeline": None if len(shards) == 1 else {"shardsPart": part, "mergerPart": pipeline[split:]},
        "shards": explained,
        "ok": 1.0,
    }


def coll_stats(router: Router, ctx: Context) -> dict[str, Any]:
    """mongos's collStats (deprecated since 6.2, still answered by 7.0): each shard's storage
    figures under ``shards``, summed (indexSizes per index), with ``sharded`` and ``nchunks``;
    each shard's come from its ``$collStats`` storage stats, as mongod's command does."""
    name = ctx.body.get(ctx.request.name)
    if not isinstance(name, str) or not name:
        raise CommandError(73, "InvalidNamespace", f"collection name has invalid type {type(name).__name__}")
    ns = f"{ctx.db}.{name}"
    scale = ctx.body.get("scale", 1)
    stage = {"$collStats": {"storageStats": {"scale": scale}}}
    catalog = router.cluster.catalog
    per_shard: dict[str, Any] = {}
    for shard in catalog.shards_for_filter(ns, None):
        found = router.drain(ctx, shard, {"aggregate": name, "pipeline": [stage], "cursor": {}})
        per_shard[shard] = {"ns": ns, **(found[0].get("storageStats", {}) if found else {}), "ok": 1.0}
    merged: dict[str, Any] = {"sharded": catalog.sharded(ns) is not None, "shards": per_shard, "ns": ns}
    index_sizes: dict[str, int] = {}
    for stats in per_shard.values():
        for field in _SUMMED:
            merged[field] = merged.get(field, 0) + int(stats.get(field, 0))
        for index, size in stats.get("indexSizes", {}).items():
            index_sizes[index] = index_sizes.get(index, 0) + int(size)
        merged.setdefault("nindexes", stats.get("nindexes", 0))
        merged.setdefault("scaleFactor", stats.get("scaleFactor", 1))
        merged.setdefault("capped", stats.get("capped", False))
    if merged.get("count"):
        merged["avgObjSize"] = merged["size"] // merged["count"]
    sharded = catalog.sharded(ns)
    merged.update({"indexSizes": index_sizes, "nchunks": len(sharded.chunks) if sharded is not None else 1, "ok": 1.0})
    return merged

