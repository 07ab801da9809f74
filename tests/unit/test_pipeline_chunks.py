"""Chunk-range partitions of a sharded collection (mongo_sansio.pipeline.chunks): every document
in exactly one partition, the one of the chunk the simulated config server places it in (so a
partition never crosses a chunk or shard boundary), for ranged, hashed and compound keys over
values of mixed types; plain index-friendly queries where the bounds allow; a broken chunk map
refused."""

from __future__ import annotations

import functools
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import Binary, Int64, MaxKey, MinKey, ObjectId, Timestamp
from mongo_sansio.pipeline.chunks import ChunkMapError, chunk_partitions, is_sharded
from mongo_sansio.testing.engine import compare
from mongo_sansio.testing.engine.query import compile_filter
from mongo_sansio.testing.sharded.catalog import Chunk, ShardedCollection

_MISSING = object()  # a document without the field

_values = st.one_of(
    st.integers(-50, 50),
    st.floats(-50, 50, allow_nan=False),
    st.integers(-(2**40), 2**40).map(Int64),
    st.text("abcxyz", max_size=3),
    st.none(),
    st.booleans(),
    st.binary(min_size=12, max_size=12).map(ObjectId),
)
_hashes = st.integers(-(2**63), 2**63 - 1).map(Int64)
_KEYS = [{"k": 1}, {"k": "hashed"}, {"a": 1, "b": 1}, {"a": 1, "b": "hashed"}, {"a.x": 1}]


def _point_order(left: tuple[Any, ...], right: tuple[Any, ...]) -> int:
    for x, y in zip(left, right, strict=True):
        result = compare(x, y)
        if result:
            return result
    return 0


def _collection(key: dict[str, Any], points: list[tuple[Any, ...]], shards: list[str]) -> ShardedCollection:
    """The simulator's catalog entry with chunks cut at ``points`` (sorted, distinct)."""
    fields = list(key)
    lows = [{f: MinKey() for f in fields}, *({f: v for f, v in zip(fields, p, strict=True)} for p in points)]
    highs = [*lows[1:], {f: MaxKey() for f in fields}]
    collection = ShardedCollection("db.c", key, False, Binary(b"0" * 16, 4), ObjectId(), 0.0, Timestamp(1, 0))
    for index, (low, high) in enumerate(zip(lows, highs, strict=True)):
        collection.chunks.append(Chunk(low, high, shards[index % len(shards)], ObjectId(), Timestamp(1, index)))
    return collection


def _config(collection: ShardedCollection) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``config.collections`` and ``config.chunks`` as a client reads them."""
    return {"_id": collection.ns, "key": dict(collection.key), "uuid": collection.uuid}, [
        {"_id": c.id, "uuid": collection.uuid, "min": dict(c.min), "max": dict(c.max), "shard": c.shard}
        for c in collection.chunks
    ]


def _document(key: dict[str, Any], values: list[Any], n: int) -> dict[str, Any]:
    document: dict[str, Any] = {"_id": n}
    for field, value in zip(key, values, strict=True):
        if value is _MISSING:
            continue
        if "." in field:
            outer, inner = field.split(".")
            document[outer] = {inner: value}
        else:
            document[field] = value
    return document


@st.composite
def _sharded(draw: Any) -> tuple[ShardedCollection, list[dict[str, Any]]]:
    key = draw(st.sampled_from(_KEYS))
    strategies = [_hashes if kind == "hashed" else _values for kind in key.values()]
    raw = draw(st.lists(st.tuples(*strategies), max_size=6))
    points: list[tuple[Any, ...]] = []
    for point in sorted(raw, key=functools.cmp_to_key(_point_order)):
        if not points or _point_order(points[-1], point) != 0:
            points.append(point)
    shards = draw(st.sampled_from([["shard0"], ["shard0", "shard1"], ["shard1", "shard0", "shard2"]]))
    plain = st.one_of(_values, st.just(_MISSING))
    rows = draw(st.lists(st.tuples(*[plain for _ in key]), min_size=1, max_size=25))
    return _collection(key, points, shards), [_document(key, list(row), n) for n, row in enumerate(rows)]


@settings(max_examples=150, deadline=None)
@given(_sharded(), st.randoms(use_true_random=False))
def test_every_document_is_in_exactly_one_partition_its_chunks(
    case: tuple[ShardedCollection, list[dict[str, Any]]], shuffle: random.Random
) -> None:
    collection, documents = case
    config_collection, config_chunks = _config(collection)
    shuffle.shuffle(config_chunks)  # the order the chunks are read in does not matter
    partitions = chunk_partitions(config_collection, config_chunks)
    assert len(partitions) == len(collection.chunks)
    assert [(p.min, p.max, p.shard) for p in partitions] == [(c.min, c.max, c.shard) for c in collection.chunks]
    matchers = [compile_filter(p.query) for p in partitions]
    for document in documents:
        hits = [index for index, match in enumerate(matchers) if match(document)]
        owner = collection.chunk_for(collection.chunk_point(document))
        assert hits == [collection.chunks.index(owner)], (document, [p.query for p in partitions])


def test_interior_chunks_of_one_type_are_plain_range_queries() -> None:
    collection = _collection({"k": 1}, [(10,), (20,), ("m",)], ["shard0", "shard1"])
    queries = [p.query for p in chunk_partitions(*_config(collection))]
    assert queries[1] == {"k": {"$gte": 10, "$lt": 20}}  # the shard-key index serves it
    assert all("$expr" in q for q in (queries[0], queries[2], queries[3]))  # MinKey, 20.."m", MaxKey


def test_one_chunk_reads_everything_and_hashed_keys_compare_hashes() -> None:
    whole = _collection({"_id": "hashed"}, [], ["shard0"])
    assert [p.query for p in chunk_partitions(*_config(whole))] == [{}]
    halves = _collection({"_id": "hashed"}, [(Int64(0),)], ["shard0", "shard1"])
    first, second = chunk_partitions(*_config(halves))
    hashed = {"$toHashedIndexKey": {"$ifNull": ["$_id", None]}}
    assert first.query == {"$expr": {"$lt": [hashed, {"$literal": Int64(0)}]}}
    assert second.query == {"$expr": {"$gte": [hashed, {"$literal": Int64(0)}]}}
    assert (first.shard, second.shard) == ("shard0", "shard1")


def test_a_broken_chunk_map_is_refused() -> None:
    collection = _collection({"k": 1}, [(10,), (20,)], ["shard0"])
    key, chunks = _config(collection)
    with pytest.raises(ChunkMapError, match="gap"):
        chunk_partitions(key, [chunks[0], chunks[2]])
    with pytest.raises(ChunkMapError, match="overlap"):
        chunk_partitions(key, [*chunks, {**chunks[1], "min": {"k": 15}, "_id": "extra"}])
    with pytest.raises(ChunkMapError, match="not a point of the key"):
        chunk_partitions(key, [{**chunks[0], "min": {"other": MinKey()}}])
    with pytest.raises(ChunkMapError, match="non-empty document"):
        chunk_partitions({"_id": "db.c"}, chunks)
    with pytest.raises(ChunkMapError, match="gap"):
        chunk_partitions(key, [])


@pytest.mark.parametrize("key", [{"k": 1}, {"k": 1, "j": 1}])
def test_a_missing_shard_key_field_is_read_as_null(key: dict[str, Any]) -> None:
    # (an expression sees a missing field below null; the shard key places it at null)
    collection = _collection(key, [tuple(None for _ in key), tuple(5 for _ in key)], ["shard0", "shard1"])
    partitions = chunk_partitions(*_config(collection))
    hits = [p.min for p in partitions if compile_filter(p.query)({"_id": 1})]
    assert hits == [{field: None for field in key}]


def test_which_catalog_entries_are_sharded_collections() -> None:
    entry = {"_id": "db.c", "key": {"_id": 1}, "uuid": Binary(b"0" * 16, 4)}
    assert is_sharded(entry)
    assert not is_sharded(None)  # no entry: never sharded
    assert not is_sharded({**entry, "dropped": True})  # before MongoDB 5.0
    assert not is_sharded({**entry, "unsplittable": True})  # tracked, not sharded (8.0)
