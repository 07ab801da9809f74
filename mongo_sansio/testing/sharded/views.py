"""Reads of a view over a sharded collection, as mongos runs them.

Inputs: a find, aggregate, count or distinct naming a view (its definitions are the
``system.views`` documents of the database's primary shard), the router.  Outputs: the
reply, read from the sharded collection at the end of the view's chain.

mongod's shards cannot read such a view alone: a shard answers 169
CommandOnShardedViewNotSupportedOnMongod with the ``resolvedView`` (the collection and the
views' stages), and mongos runs the request again as an aggregate of those stages, then the
request's own, over the sharded collection.  Here the router resolves the chain itself from
the primary shard's definitions (at most 20 views, as mongod) and runs that aggregate; a view
over an unsharded collection is left to its primary shard, as mongos does.  The cursor names
the view's namespace.  (A view's own collation is not applied here.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mongo_sansio.testing.engine import CommandError, sort_documents
from mongo_sansio.testing.engine.order import hashable_key
from mongo_sansio.testing.server.context import Context

if TYPE_CHECKING:
    from mongo_sansio.testing.sharded.router import Router

__all__ = ["READS", "read_sharded_view", "sharded_source"]

READS = frozenset({"find", "aggregate", "count", "distinct"})
_MAX_DEPTH = 20


def sharded_source(router: Router, db: str, name: str) -> tuple[str, list[Any]] | None:
    """(the sharded collection at the end of view ``name``'s chain, the views' stages), or
    None when ``name`` is no view, or a view over an unsharded collection."""
    shard = router.cluster.shards[router.cluster.catalog.primary_shard(db)]
    definitions = shard.collection(db, "system.views")
    current, stages = name, list[Any]()
    for depth in range(_MAX_DEPTH + 1):
        found = definitions.find({"_id": f"{db}.{current}"}, None, limit=1) if definitions is not None else []
        if not found:
            sharded = depth > 0 and router.cluster.catalog.sharded(f"{db}.{current}") is not None
            return (current, stages) if sharded else None
        current, stages = str(found[0].get("viewOn")), [*found[0].get("pipeline", []), *stages]
    raise CommandError(165, "ViewDepthLimitExceeded",
                       f"View depth too deep or view cycle detected; maximum depth is {_MAX_DEPTH}")


def read_sharded_view(router: Router, ctx: Context, body: dict[str, Any], view: str, source: str,
                      stages: list[Any]) -> dict[str, Any]:
    from mongo_sansio.testing.sharded.router import merged_results  # (a cycle)

    name = ctx.request.name
    own = _own_stages(name, body)
    documents = merged_results(router, ctx, {"aggregate": source, "pipeline": []}, f"{ctx.db}.{source}",
                               [*stages, *own])
    if name == "count":
        return {"n": len(documents), "ok": 1.0}
    if name == "distinct":
        seen: dict[Any, Any] = {}
        for document in documents:
            for value in document.get("values", []):
                seen.setdefault(hashable_key(value), value)
        ordered = sort_documents([{"v": v} for v in seen.values()], {"v": 1})
        return {"values": [document["v"] for document in ordered], "ok": 1.0}
    return router.open_cursor(ctx, f"{ctx.db}.{view}", documents)


def _own_stages(name: str, body: Mapping[str, Any]) -> list[Any]:
    """The request as stages after the view's: a find's filter, sort, skip, limit and
    projection; a count's query, skip and limit; a distinct's query, then its key's values."""
    if name == "aggregate":
        return list(body.get("pipeline") or [])
    fields = {"find": (("$match", "filter"), ("$sort", "sort"), ("$skip", "skip"), ("$limit", "limit"),
                       ("$project", "projection")),
              "count": (("$match", "query"), ("$skip", "skip"), ("$limit", "limit")),
              "distinct": (("$match", "query"),)}[name]
    own: list[Any] = []
    for stage, field in fields:
        value = body.get(field)
        if value:
            own.append({stage: abs(value) if stage == "$limit" and isinstance(value, int) else value})
    if name == "distinct":
        key = str(body.get("key", ""))
        parts = key.split(".")
        own.extend({"$unwind": {"path": "$" + ".".join(parts[:end]), "preserveNullAndEmptyArrays": True}}
                   for end in range(1, len(parts) + 1))
        own.append({"$group": {"_id": None, "values": {"$addToSet": "$" + key}}})
    return own
