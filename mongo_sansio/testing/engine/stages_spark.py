"""Aggregation stages and the expression the Spark data source uses: ``$sample``,
``$bucketAuto``, ``$collStats`` and ``$toHashedIndexKey``.

Hooked into :mod:`.aggregate`'s stage table and :mod:`.expressions`' operator table.  Each
stage builder takes (argument, lookup, variables) and returns a function over the documents,
like the other stages.  ``$collStats`` must open the pipeline (mongod refuses it elsewhere), so
the documents it receives are the whole collection, which is what it describes.

``$sample`` draws without the server keeping any randomness of its own: the order comes from a
small xorshift generator seeded by the pipeline's ``$$NOW`` and the document count, so two
samples taken at different times differ (as mongod's do) and a test can never rely on which
documents come back, only on how many and that they are distinct documents of the collection.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from mongo_sansio.bson import Int64, encode
from mongo_sansio.pipeline.hashing import hashed_index_key
from mongo_sansio.testing.engine.errors import location

if TYPE_CHECKING:
    # expressions imports this module for $toHashedIndexKey; the stages import it lazily.
    from mongo_sansio.testing.engine.expressions import Compiled
from mongo_sansio.testing.engine.order import MISSING, compare, copy_value

__all__ = ["SPARK_STAGES", "to_hashed_index_key"]

Documents = list[dict[str, Any]]
Stage = Callable[[Documents], Documents]
Resolver = Callable[[str], Iterable[Mapping[str, Any]]]

_MASK64 = (1 << 64) - 1


def _xorshift(seed: int) -> Callable[[], int]:
    state = (seed or 0x9E3779B97F4A7C15) & _MASK64

    def draw() -> int:
        nonlocal state
        state ^= (state << 13) & _MASK64
        state ^= state >> 7
        state ^= (state << 17) & _MASK64
        return state

    return draw


def _seed(variables: Mapping[str, Any], count: int) -> int:
    now = variables.get("NOW")
    micros = int(now.timestamp() * 1_000_000) if isinstance(now, datetime.datetime) else 0
    return (micros * 0x100000001B3) ^ (count * 0x9E3779B97F4A7C15)


def _sample(argument: Any, lookup: Resolver | None, variables: dict[str, Any]) -> Stage:
    if not isinstance(argument, Mapping):
        raise location(28745, "the $sample stage specification must be an object")
    for key in argument:
        if key != "size":
            raise location(28748, f"unrecognized option to $sample: {key}")
    size = argument.get("size")
    if size is None:
        raise location(28749, "$sample stage must specify a size")
    if not isinstance(size, int | float) or isinstance(size, bool) or size != int(size):
        raise location(28746, "size argument to $sample must be a number")
    if size < 0:
        raise location(28747, "size argument to $sample must not be negative")
    wanted = int(size)

    def run(docs: Documents) -> Documents:
        draw = _xorshift(_seed(variables, len(docs)))
        chosen = list(docs)
        # A partial Fisher-Yates shuffle: the first `wanted` places get distinct documents.
        for index in range(min(wanted, len(chosen))):
            pick = index + draw() % (len(chosen) - index)
            chosen[index], chosen[pick] = chosen[pick], chosen[index]
        return chosen[:wanted]

    return run


def _bucket_auto(argument: Any, lookup: Resolver | None, variables: dict[str, Any]) -> Stage:
    if not isinstance(argument, Mapping):
        raise location(40240, "The argument to $bucketAuto must be an object")
    for key in argument:
        if key not in ("groupBy", "buckets", "output", "granularity"):
            raise location(40245, f"Unrecognized option to $bucketAuto: {key}.")
    if "groupBy" not in argument or "buckets" not in argument:
        raise location(40246, "$bucketAuto requires 'groupBy' and 'buckets' to be specified")
    group_by = argument["groupBy"]
    if not (isinstance(group_by, str) and group_by.startswith("$")) and not isinstance(group_by, Mapping):
        raise location(40239, "The $bucketAuto 'groupBy' field must be defined as a $-prefixed path or an expression object")
    buckets = argument["buckets"]
    if not isinstance(buckets, int) or isinstance(buckets, bool) or buckets <= 0:
        raise location(40243, f"The $bucketAuto 'buckets' field must be greater than 0, but found: {buckets}")
    if "granularity" in argument:
        raise location(40260, "The simulated server's $bucketAuto does not support 'granularity'")
    from mongo_sansio.testing.engine.expressions import compile_expression

    key_expression = compile_expression(group_by)
    output = argument.get("output", {"count": {"$sum": 1}})
    if not isinstance(output, Mapping):
        raise location(40244, "The $bucketAuto 'output' field must be an object")
    accumulators = _accumulators(output)

    def run(docs: Documents) -> Documents:
        from mongo_sansio.testing.engine.aggregate import _accumulate

        keyed = []
        for doc in docs:
            key = key_expression(doc, variables)
            keyed.append((None if key is MISSING else key, doc))
        keyed.sort(key=_sort_key)
        if not keyed:
            return []
        per_bucket = max(1, -(-len(keyed) // buckets))  # ceiling: mongod's approximate size
        groups: list[list[tuple[Any, dict[str, Any]]]] = []
        index = 0
        while index < len(keyed):
            end = min(len(keyed), index + per_bucket)
            # Equal keys stay in one bucket.
            while end < len(keyed) and compare(keyed[end][0], keyed[end - 1][0]) == 0:
                end += 1
            groups.append(keyed[index:end])
            index = end
        out: Documents = []
        for number, group in enumerate(groups):
            upper = groups[number + 1][0][0] if number + 1 < len(groups) else group[-1][0]
            row: dict[str, Any] = {"_id": {"min": copy_value(group[0][0]), "max": copy_value(upper)}}
            for field, name, operand in accumulators:
                row[field] = _accumulate(name, [operand(doc, variables) for _key, doc in group])
            out.append(row)
        return out

    return run


class _SortKey:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: _SortKey) -> bool:
        return compare(self.value, other.value) < 0


def _sort_key(pair: tuple[Any, dict[str, Any]]) -> _SortKey:
    return _SortKey(pair[0])


def _accumulators(output: Mapping[str, Any]) -> list[tuple[str, str, Compiled]]:
    from mongo_sansio.testing.engine.expressions import compile_expression

    allowed = ("$sum", "$avg", "$min", "$max", "$first", "$last", "$push", "$addToSet")
    out: list[tuple[str, str, Compiled]] = []
    for field, spec in output.items():
        if not isinstance(spec, Mapping) or len(spec) != 1:
            raise location(40234, f"The field '{field}' must be an accumulator object")
        name, operand = next(iter(spec.items()))
        if name not in allowed:
            raise location(15952, f"unknown group operator '{name}'")
        out.append((str(field), str(name), compile_expression(operand)))
    return out


def _coll_stats(argument: Any, lookup: Resolver | None, variables: dict[str, Any]) -> Stage:
    if not isinstance(argument, Mapping):
        raise location(5447000, "$collStats must take a nested object but found a different type")
    for key in argument:
        if key not in ("count", "storageStats", "latencyStats", "queryExecStats"):
            raise location(40415, f"BSON field '$collStats.{key}' is an unknown field.")

    def run(docs: Documents) -> Documents:
        sizes = [len(encode(doc)) for doc in docs]
        row: dict[str, Any] = {"localTime": variables.get("NOW")}
        if "count" in argument:
            row["count"] = len(docs)
        if "storageStats" in argument:
            size = sum(sizes)
            row["storageStats"] = {
                "size": size,
                "count": len(docs),
                "avgObjSize": size // len(docs) if docs else 0,
                "storageSize": size,
                "nindexes": 1,
                "totalIndexSize": 0,
                "totalSize": size,
            }
        return [row]

    return run


def to_hashed_index_key(args: list[Compiled], root: Any, variables: Mapping[str, Any]) -> Any:
    """``{$toHashedIndexKey: <expression>}``: the value's hashed-index key as a long (a
    missing value hashes as null, as mongod does)."""
    value = args[0](root, variables)
    return Int64(hashed_index_key(None if value is MISSING else value))


SPARK_STAGES: dict[str, Callable[[Any, Resolver | None, dict[str, Any]], Stage]] = {
    "$sample": _sample,
    "$bucketAuto": _bucket_auto,
    "$collStats": _coll_stats,
}
