"""``_id`` ranges for a partitioned batch read, with no gaps and no overlaps.

Inputs: the wanted partition count, the collection's document count, and ``_id`` values sampled
from it and sorted by the server (``$sample`` then ``$sort``).  Outputs: one ``$match`` filter
per partition (:func:`range_filters`); every document matches exactly one of them.

The catch is type bracketing: a query such as ``{_id: {$gte: 5, $lt: 10}}`` only matches
numbers, while ``_id`` may hold values of several types.  So:

* When every boundary is of one type class (numbers together, strings with symbols, as the
  server orders them), the partitions are ``[b_i, b_i+1)`` ranges on that class, plain index
  friendly queries; the first partition also takes every ``_id`` of another class
  (``$nor`` of "is of this class and at or above the first boundary"), so nothing falls
  between the ranges.
* Otherwise the ranges compare in the server's total BSON order through ``$expr``
  (``$gte``/``$lt`` on ``$_id``), which has no type bracketing (and is slower).

An empty or tiny collection (fewer documents than ``min_documents_per_partition`` per wanted
partition) is read as one partition.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from typing import Any

from mongo_sansio.bson import Code, Decimal128, MaxKey, MinKey, Timestamp
from mongo_sansio.bson.objectid import ObjectId
from mongo_sansio.bson.types import DatetimeMS, Regex

__all__ = ["choose_boundaries", "range_filters", "type_class"]


def type_class(value: Any) -> str:
    """The class of values a plain range query on ``value`` compares with (the server's type
    bracketing): numbers together, strings with symbols, and each other type on its own."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float | Decimal128):
        return "number"
    if isinstance(value, Code):
        return "code"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, bytes):
        return "binary"
    if isinstance(value, ObjectId):
        return "objectId"
    if isinstance(value, datetime.datetime | DatetimeMS):
        return "date"
    if isinstance(value, Timestamp):
        return "timestamp"
    if isinstance(value, Regex | re.Pattern):
        return "regex"
    if isinstance(value, MinKey | MaxKey) or value is None:
        return "other"  # never a plain range bound
    return type(value).__name__


def choose_boundaries(
    sorted_sample: Sequence[Any],
    partitions: int,
    document_count: int,
    *,
    min_documents_per_partition: int = 1,
) -> list[Any]:
    """``partitions - 1`` boundaries (or fewer) picked at even quantiles of the sample, which
    must be sorted in BSON order; consecutive repeats are dropped.  None for one partition."""
    if partitions < 1:
        raise ValueError("partitions must be at least 1")
    if (
        partitions == 1
        or not sorted_sample
        or document_count < partitions * max(1, min_documents_per_partition)
    ):
        return []
    boundaries: list[Any] = []
    for index in range(1, partitions):
        value = sorted_sample[index * len(sorted_sample) // partitions]
        if index * len(sorted_sample) // partitions == 0:
            continue  # would make an empty first range
        if boundaries and _same(boundaries[-1], value):
            continue
        boundaries.append(value)
    return boundaries


def _same(left: Any, right: Any) -> bool:
    return type(left) is type(right) and left == right


def range_filters(boundaries: Sequence[Any]) -> list[dict[str, Any]]:
    """One filter per partition (``len(boundaries) + 1`` of them), covering every ``_id``
    exactly once; ``[{}]`` without boundaries."""
    if not boundaries:
        return [{}]
    classes = {type_class(value) for value in boundaries}
    if len(classes) == 1 and "other" not in classes:
        return _plain_ranges(boundaries)
    return _expr_ranges(boundaries)


def _plain_ranges(boundaries: Sequence[Any]) -> list[dict[str, Any]]:
    first = boundaries[0]
    filters: list[dict[str, Any]] = [{"$nor": [{"_id": {"$gte": first}}]}]
    for low, high in zip(boundaries, boundaries[1:], strict=False):
        filters.append({"_id": {"$gte": low, "$lt": high}})
    filters.append({"_id": {"$gte": boundaries[-1]}})
    return filters


def _expr_ranges(boundaries: Sequence[Any]) -> list[dict[str, Any]]:
    def below(value: Any) -> dict[str, Any]:
        return {"$lt": ["$_id", {"$literal": value}]}

    def at_or_above(value: Any) -> dict[str, Any]:
        return {"$gte": ["$_id", {"$literal": value}]}

    filters: list[dict[str, Any]] = [{"$expr": below(boundaries[0])}]
    for low, high in zip(boundaries, boundaries[1:], strict=False):
        filters.append({"$expr": {"$and": [at_or_above(low), below(high)]}})
    filters.append({"$expr": at_or_above(boundaries[-1])})
    return filters
