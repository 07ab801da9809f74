"""How mongos cuts an aggregation pipeline between the shards and itself, and whether a
pipeline reads another sharded collection.

Inputs: a pipeline (and, for :func:`reads_sharded`, the router's catalog).  Outputs: where the
pipeline is cut (the leading stages each shard runs on its own documents; the rest runs at
the router over the merged results), and whether a $lookup, $graphLookup or $unionWith reads
a sharded collection (then the router runs the pipeline, reading that one through itself).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mongo_sansio.testing.sharded.router import Router

__all__ = ["reads_sharded", "split_pipeline"]

# First stages each shard answers about itself ($collStats, $indexStats: one document per shard).
_PER_SHARD_STAGES = frozenset({"$collStats", "$indexStats"})
# Stages a shard may run on its own documents before the merge (each document alone).
_DOCUMENT_STAGES = frozenset({"$match", "$project", "$addFields", "$set", "$unset", "$replaceRoot",
                              "$replaceWith", "$unwind", "$redact"})


def split_pipeline(pipeline: list[Any]) -> tuple[int, bool]:
    """Where a pipeline is cut between the shards' part and the router's, and whether its
    first stage is one each shard answers about itself."""
    split = 0
    per_shard = bool(pipeline) and isinstance(pipeline[0], Mapping) and next(iter(pipeline[0]), "") in _PER_SHARD_STAGES
    if per_shard:
        split = 1  # each shard answers for itself; the documents name their shard
    while split < len(pipeline) and isinstance(pipeline[split], Mapping) and next(iter(pipeline[split]), "") in _DOCUMENT_STAGES:
        split += 1
    return split, per_shard


def reads_sharded(router: Router, db: str, pipeline: Any) -> bool:
    """Whether a pipeline's $lookup, $graphLookup or $unionWith reads a sharded collection."""
    if not isinstance(pipeline, list):
        return False
    for stage in pipeline:
        if not isinstance(stage, Mapping) or not stage:
            continue
        name, argument = next(iter(stage.items()))
        if name not in ("$lookup", "$graphLookup", "$unionWith"):
            continue
        other = argument if isinstance(argument, str) else argument.get("from", argument.get("coll")) \
            if isinstance(argument, Mapping) else None
        if isinstance(other, str) and router.cluster.catalog.sharded(f"{db}.{other}") is not None:
            return True
        if isinstance(argument, Mapping) and reads_sharded(router, db, argument.get("pipeline")):
            return True
    return False
