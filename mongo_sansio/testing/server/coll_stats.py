"""The ``$collStats`` aggregation stage: one document about a collection, for the rest of the
pipeline to shape.

Inputs: the stage's spec (``count``, ``storageStats`` with an optional ``scale``), the
collection as the command sees it, its capped options, the member's address and wall clock.
Output: the document mongod's stage answers -- ``ns``, ``host``, ``localTime``, then ``count``
and/or ``storageStats`` as asked -- or mongod's errors: not the first stage (40602), a spec
that is not an object (5447000), an unknown option (40415), an option of the wrong type (14), a
scale below 1 (51024), a collection that does not exist (26).

Sizes: ``size`` is the sum of the documents' BSON sizes and ``avgObjSize`` their mean, as
mongod counts them.  The on-disk figures (``storageSize``, index sizes) are WiredTiger's file
sizes on mongod, which depend on its block allocation and checkpoints; the simulator models
them as whole 4 KiB blocks holding the data (at least one block per file).  ``latencyStats``
and ``queryExecStats`` need counters the simulator does not keep: they are refused by name
rather than answered with made-up numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.bson import encode
from mongo_sansio.testing.engine import Collection, CommandError
from mongo_sansio.testing.server.context import Context
from mongo_sansio.testing.server.oplog import wall_datetime

__all__ = ["coll_stats_document", "is_coll_stats", "storage_figures"]

_BLOCK = 4096
# What one index entry takes in the model: its RecordId and key, with WiredTiger's prefix
# compression making most keys small.
_INDEX_ENTRY_BYTES = 16
_OPTIONS = ("latencyStats", "storageStats", "count", "queryExecStats")
_UNTRACKED = ("latencyStats", "queryExecStats")


def is_coll_stats(stage: Any) -> bool:
    return isinstance(stage, Mapping) and "$collStats" in stage


def _blocks(size: int) -> int:
    return max(1, -(-size // _BLOCK)) * _BLOCK


def _parse(spec: Any) -> tuple[bool, int | None]:
    """(count wanted, the storageStats scale or None when not wanted)."""
    if not isinstance(spec, Mapping):
        raise CommandError(5447000, "Location5447000", f"$collStats must take a nested object but found: {spec!r}")
    scale: int | None = None
    for key, value in spec.items():
        if key not in _OPTIONS:
            raise CommandError(40415, "Location40415", f"BSON field '$collStats.{key}' is an unknown field.")
        if not isinstance(value, Mapping):
            raise CommandError(14, "TypeMismatch", f"BSON field '$collStats.{key}' is the wrong type, expected type 'object'")
        if key in _UNTRACKED:
            raise CommandError(
                2, "BadValue", f"$collStats {key}: the simulator keeps no operation counters to answer it from",
            )
        if key == "storageStats":
            scale = _scale(value)
    return "count" in spec, scale


def _scale(storage: Mapping[str, Any]) -> int:
    for key in storage:
        if key not in ("scale", "verbose", "waitForLock", "numericOnly"):
            raise CommandError(40415, "Location40415", f"BSON field '$collStats.storageStats.{key}' is an unknown field.")
    scale = storage.get("scale", 1)
    if isinstance(scale, bool) or not isinstance(scale, int | float):
        raise CommandError(14, "TypeMismatch", "BSON field '$collStats.storageStats.scale' is the wrong type, expected a number")
    if scale < 1:
        raise CommandError(51024, "Location51024", f"BSON field 'scale' value must be >= 1, actual value '{int(scale)}'")
    return int(scale)


def coll_stats_document(ctx: Context, database: str, name: str, pipeline: list[Any]) -> dict[str, Any]:
    """The stage's one document: ``pipeline`` holds a $collStats stage, which must be its first."""
    if any(is_coll_stats(later) for later in pipeline[1:]) or not is_coll_stats(pipeline[0]):
        raise CommandError(40602, "Location40602", "$collStats is only valid as the first stage in a pipeline")
    count_wanted, scale = _parse(pipeline[0]["$collStats"])
    ns = f"{database}.{name}"
    out: dict[str, Any] = {
        "ns": ns, "host": ctx.member.address, "localTime": wall_datetime(ctx.cluster.wall(ctx.now)),
    }
    if not count_wanted and scale is None:
        return out
    collection = ctx.collection(database, name)
    if collection is None:
        what = "storageStats" if scale is not None else "count"
        raise CommandError(26, "NamespaceNotFound",
                           f"Unable to retrieve {what} in $collStats stage :: caused by :: Collection [{ns}] not found.")
    if scale is not None:
        out["storageStats"] = _storage_stats(ctx, ns, collection, scale)
    if count_wanted:
        out["count"] = len(collection)
    return out


def storage_figures(collection: Collection) -> tuple[int, int, int, dict[str, int]]:
    """(document count, data size, modelled storage size, modelled size of each index) of a
    collection, in bytes: what $collStats, dbStats and listDatabases report from."""
    documents = list(collection)
    count = len(documents)
    size = sum(len(encode(document)) for document in documents)
    index_sizes = {spec["name"]: _blocks(count * _INDEX_ENTRY_BYTES) for spec in collection.list_indexes()}
    return count, size, _blocks(size), index_sizes


def _storage_stats(ctx: Context, ns: str, collection: Collection, scale: int) -> dict[str, Any]:
    count, size, storage_size, index_sizes = storage_figures(collection)
    total_index_size = sum(index_sizes.values())
    stats: dict[str, Any] = {"size": size // scale, "count": count}
    if count:  # mongod leaves the average out of an empty collection's stats
        stats["avgObjSize"] = size // count
    stats.update({"numOrphanDocs": 0, "storageSize": storage_size // scale, "freeStorageSize": 0})
    capped = ctx.cluster.capped.get(ns)
    stats["capped"] = capped is not None
    if capped is not None:
        stats["max"] = capped.get("max", 0)
        stats["maxSize"] = capped["size"] // scale
    stats.update({
        "nindexes": len(index_sizes),
        "indexBuilds": [],
        "totalIndexSize": total_index_size // scale,
        "totalSize": (storage_size + total_index_size) // scale,
        "indexSizes": {index: value // scale for index, value in index_sizes.items()},
        "scaleFactor": scale,
    })
    return stats
