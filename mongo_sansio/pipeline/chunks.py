"""Chunk-range partitions of a sharded collection: one ``$match`` filter per chunk.

Inputs: the collection's ``config.collections`` document (its shard ``key``) and its
``config.chunks`` documents (``min``, ``max``, ``shard``), as read through mongos, in any
order.  Outputs: :func:`chunk_partitions`, one :class:`ChunkPartition` per chunk in shard-key
order, whose ``query`` matches exactly the documents the chunk owns; so every document is in
exactly one partition, and no partition crosses a chunk (hence a shard) boundary.
:class:`ChunkMapError` when the chunks do not tile the key space (a gap, an overlap, bounds on
other fields): the catalog was read mid-change, or is not a chunk map at all.

A chunk is the half-open range ``[min, max)`` of shard-key points in the server's BSON order,
compared field by field for a compound key.  The point of a document is its shard-key values
with a missing field as null, and a hashed field replaced by its hashed-index key (a 64-bit
integer: a hashed key's chunks are ranges of hashes, not of values).  The query for a chunk:

* one ranged field with both bounds of one type class (numbers, strings, ObjectIds...: see
  :func:`~mongo_sansio.pipeline.partitions.type_class`): ``{field: {$gte: min, $lt: max}}``,
  a plain query the shard-key index serves (every value between two bounds of one class is of
  that class, so type bracketing loses nothing);
* anything else (a ``MinKey``/``MaxKey`` end, bounds of two classes, a hashed field, a compound
  key): ``$expr`` comparing the point, computed on the server, with the bounds in the total
  BSON order (no type bracketing).  A field is read as ``{$ifNull: ["$field", null]}``
  (missing is null, as the shard key places it), a hashed one through ``$toHashedIndexKey``;
  a compound point is the array of its fields, which compares element by element.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from mongo_sansio.bson import MaxKey, MinKey, extjson

from .partitions import type_class

__all__ = [
    "ChunkMapError",
    "ChunkPartition",
    "chunk_partitions",
    "chunk_query",
    "is_sharded",
    "shard_key_fields",
]


class ChunkMapError(ValueError):
    """The chunks read do not cover the shard-key space exactly once."""


@attrs.frozen
class ChunkPartition:
    """One chunk: the shard that owns it, its bounds, and the filter matching its documents."""

    shard: str
    min: dict[str, Any]
    max: dict[str, Any]
    query: dict[str, Any]


def is_sharded(collection: Any) -> bool:
    """Whether a ``config.collections`` document is a sharded collection: not one dropped
    (kept with ``dropped: true`` before MongoDB 5.0) and not an unsplittable one (MongoDB 8.0
    tracks some unsharded collections there, on one chunk)."""
    return isinstance(collection, Mapping) and not collection.get("dropped") and not collection.get("unsplittable")


def shard_key_fields(key: Any) -> list[tuple[str, bool]]:
    """The shard key's fields in order, each with whether it is hashed."""
    if not isinstance(key, Mapping) or not key:
        raise ChunkMapError(f"a shard key is a non-empty document, got {key!r}")
    fields: list[tuple[str, bool]] = []
    for field, kind in key.items():
        if kind == "hashed":
            fields.append((str(field), True))
        elif kind == 1 and not isinstance(kind, bool):
            fields.append((str(field), False))
        else:
            raise ChunkMapError(f"shard key field {field!r} is {kind!r}, not 1 or 'hashed'")
    return fields


def chunk_partitions(collection: Mapping[str, Any], chunks: Sequence[Mapping[str, Any]]) -> list[ChunkPartition]:
    """One partition per chunk of ``collection``, in shard-key order."""
    fields = shard_key_fields(collection.get("key"))
    names = [name for name, _ in fields]
    return [
        ChunkPartition(str(chunk["shard"]), low, high, chunk_query(fields, low, high))
        for chunk, low, high in _in_key_order(names, chunks)
    ]


def _bound(names: list[str], chunk: Mapping[str, Any], which: str) -> dict[str, Any]:
    bound = chunk.get(which)
    if not isinstance(bound, Mapping) or list(bound) != names:
        raise ChunkMapError(f"chunk {chunk.get('_id')!r}: {which} {bound!r} is not a point of the key {names}")
    return dict(bound)


def _in_key_order(
    names: list[str], chunks: Sequence[Mapping[str, Any]]
) -> list[tuple[Mapping[str, Any], dict[str, Any], dict[str, Any]]]:
    """The chunks chained from the all-MinKey point, each starting where the last ended, to the
    all-MaxKey point.  (Following the chain needs no BSON comparison, and proves the tiling.)"""
    by_min: dict[str, tuple[Mapping[str, Any], dict[str, Any], dict[str, Any]]] = {}
    for chunk in chunks:
        low, high = _bound(names, chunk, "min"), _bound(names, chunk, "max")
        if not isinstance(chunk.get("shard"), str):
            raise ChunkMapError(f"chunk {chunk.get('_id')!r} names no shard")
        text = _text(low)
        if text in by_min:
            raise ChunkMapError(f"two chunks start at {text}")
        by_min[text] = (chunk, low, high)
    ordered = []
    point = _text({name: MinKey() for name in names})
    end = _text({name: MaxKey() for name in names})
    while point != end:
        found = by_min.pop(point, None)
        if found is None:
            raise ChunkMapError(f"no chunk starts at {point}: the chunk map has a gap")
        ordered.append(found)
        point = _text(found[2])
    if by_min:
        raise ChunkMapError(f"{len(by_min)} chunk(s) overlap the others (one starts at {next(iter(by_min))})")
    return ordered


def _text(point: Mapping[str, Any]) -> str:
    return extjson.dumps(point, mode="canonical")


def chunk_query(fields: Sequence[tuple[str, bool]], low: Mapping[str, Any], high: Mapping[str, Any]) -> dict[str, Any]:
    """The filter matching the documents whose shard-key point is in ``[low, high)``."""
    lows = [low[name] for name, _ in fields]
    highs = [high[name] for name, _ in fields]
    if len(fields) == 1 and not fields[0][1]:
        low_class, high_class = type_class(lows[0]), type_class(highs[0])
        if low_class == high_class != "other":
            return {fields[0][0]: {"$gte": lows[0], "$lt": highs[0]}}
    terms = [_term(name, hashed) for name, hashed in fields]
    point: Any = terms[0] if len(terms) == 1 else terms
    lower: Any = lows[0] if len(lows) == 1 else lows
    upper: Any = highs[0] if len(highs) == 1 else highs
    conditions = []
    if not all(isinstance(value, MinKey) for value in lows):
        conditions.append({"$gte": [point, {"$literal": lower}]})
    if not all(isinstance(value, MaxKey) for value in highs):
        conditions.append({"$lt": [point, {"$literal": upper}]})
    if not conditions:
        return {}
    return {"$expr": conditions[0] if len(conditions) == 1 else {"$and": conditions}}


def _term(name: str, hashed: bool) -> dict[str, Any]:
    value = {"$ifNull": [f"${name}", None]}
    return {"$toHashedIndexKey": value} if hashed else value
