"""mongod's hashed-index key of a BSON value, and the ``keyPartitions`` assignment.

Inputs: a decoded BSON value (for change events, the ``documentKey``).  Outputs: the signed
64-bit key :func:`hashed_index_key` (what ``{$toHashedIndexKey: value}`` and a hashed index
give), the partition :func:`key_partition` sends it to, and the ``$match`` stage
:func:`partition_match` that lets the server do the same filtering.

The key follows mongod's BSONElementHasher (written from its documented behaviour, not
verified against a live mongod): an MD5 over the seed (0, four little-endian bytes), then for
the value its canonical type number (:func:`~mongo_sansio.bson.canonical.canonical_type`, four
little-endian bytes) and either its value bytes (numbers squashed to a 64-bit integer first, so
1, 1.0 and Int64(1) hash alike) or, for a document or array, each element in turn as canonical
type, field name with its NUL, value.  The key is the first eight digest bytes read as a
little-endian signed integer.

A key goes to partition ``|key| mod K``, which the server computes as
``{$abs: {$mod: [key, K]}}`` (``$mod`` keeps the dividend's sign).  Events without a
``documentKey`` (drop, rename, dropDatabase, invalidate) all go to partition 0, so each is read
exactly once.
"""

from __future__ import annotations

import decimal
import hashlib
import math
import struct
from collections.abc import Mapping
from typing import Any

from mongo_sansio.bson import Decimal128, encode
from mongo_sansio.bson.canonical import (
    RANK_ARRAY,
    RANK_NULL,
    RANK_NUMBER,
    RANK_OBJECT,
    canonical_type,
)
from mongo_sansio.bson.types import DBRef

__all__ = ["hashed_index_key", "key_partition", "partition_match"]

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1

def _safe_long(value: int | float | Decimal128) -> int:
    """The number as a 64-bit integer the way mongod squashes it: truncated toward zero,
    clamped to the int64 range, NaN as 0."""
    if isinstance(value, int):
        return max(_INT64_MIN, min(_INT64_MAX, value))
    number = value.to_decimal() if isinstance(value, Decimal128) else value
    if isinstance(number, decimal.Decimal):
        if number.is_nan():
            return 0
        if number.is_infinite():
            return _INT64_MAX if number > 0 else _INT64_MIN
        return max(_INT64_MIN, min(_INT64_MAX, int(number)))
    if math.isnan(number):
        return 0
    if number >= 2.0**63:
        return _INT64_MAX
    if number <= -(2.0**63):
        return _INT64_MIN
    return int(number)


def _value_bytes(value: Any) -> bytes:
    """The element's value bytes as BSON writes them (the document {"": value} minus its
    length, type byte, empty name and terminator)."""
    element = encode({"": value})
    return element[4 + 1 + 1 : -1]


def _items(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, DBRef):
        value = value.as_doc()
    if isinstance(value, Mapping):
        return [(str(key), item) for key, item in value.items()]
    return [(str(index), item) for index, item in enumerate(value)]


def _feed(digest: Any, value: Any, name: str | None) -> None:
    kind = canonical_type(value)
    digest.update(struct.pack("<i", kind))
    if name is not None:
        digest.update(name.encode("utf-8") + b"\x00")
    if kind in (RANK_OBJECT, RANK_ARRAY):
        for key, item in _items(value):
            _feed(digest, item, key)
    elif kind == RANK_NUMBER:
        digest.update(struct.pack("<q", _safe_long(value)))
    elif kind != RANK_NULL:
        digest.update(_value_bytes(value))


def hashed_index_key(value: Any, seed: int = 0) -> int:
    """The signed 64-bit hashed-index key of ``value``."""
    digest = hashlib.md5(struct.pack("<i", seed), usedforsecurity=False)
    _feed(digest, value, None)
    result: int = struct.unpack("<q", digest.digest()[:8])[0]
    return result


def key_partition(document_key: Any, partitions: int) -> int:
    """The partition (0 to ``partitions - 1``) an event with this ``documentKey`` belongs to;
    ``None`` (no document key) is partition 0."""
    if partitions < 1:
        raise ValueError("keyPartitions must be at least 1")
    if document_key is None:
        return 0
    return abs(hashed_index_key(document_key)) % partitions


def partition_match(index: int, partitions: int) -> dict[str, Any]:
    """The ``$match`` stage keeping partition ``index``'s events on the server."""
    if not 0 <= index < partitions:
        raise ValueError(f"partition {index} is outside 0..{partitions - 1}")
    by_key = {
        "$expr": {
            "$eq": [
                {"$abs": {"$mod": [{"$toHashedIndexKey": "$documentKey"}, partitions]}},
                index,
            ]
        }
    }
    keyed = {"$and": [{"documentKey": {"$exists": True}}, by_key]}
    if index == 0:
        return {"$match": {"$or": [{"documentKey": {"$exists": False}}, keyed]}}
    return {"$match": keyed}
