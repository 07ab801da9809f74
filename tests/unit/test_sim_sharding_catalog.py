"""The simulated sharding catalog (pure): hashed placement, targeting by shard-key equality,
split and moveChunk, the config documents."""

from __future__ import annotations

import itertools

import pytest

from mongo_sansio.bson import Binary, Int64, MaxKey, MinKey, ObjectId, Timestamp
from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.server.oplog import wall_datetime
from mongo_sansio.testing.sharded.catalog import Catalog, equality_point, hash_value

_ids = (ObjectId(i.to_bytes(12, "big")) for i in itertools.count(1))


def _catalog(shards: int = 2) -> Catalog:
    return Catalog([(f"shard{i}", f"shard{i}/h{i}:27017") for i in range(shards)])


def _shard(catalog: Catalog, ns: str, key: dict[str, object]) -> None:
    catalog.shard_collection(ns, key, unique=False, uuid=Binary(bytes(16), 4), epoch=next(_ids), wall=0.0,
                             at=Timestamp(1, 1), new_id=lambda: next(_ids))


def test_numbers_hash_alike_whatever_their_type_and_values_spread() -> None:
    assert hash_value(1) == hash_value(Int64(1)) == hash_value(1.0)
    assert hash_value(1) != hash_value(2) != hash_value("1")
    assert hash_value("a") == hash_value("a")
    catalog = _catalog()
    _shard(catalog, "db.c", {"_id": "hashed"})
    owners = {catalog.shard_for_document("db.c", {"_id": i}) for i in range(50)}
    assert owners == {"shard0", "shard1"}


def test_a_filter_pinning_the_shard_key_targets_one_shard() -> None:
    catalog = _catalog(3)
    _shard(catalog, "db.c", {"a": 1, "b": 1})
    assert equality_point({"a": 1, "b": 1}, {"a": 5, "b": {"$eq": "x"}, "c": {"$gt": 1}}) == {"a": 5, "b": "x"}
    assert equality_point({"a": 1}, {"$and": [{"a": 2}, {"z": 1}]}) == {"a": 2}
    assert equality_point({"a": 1}, {"a": {"$in": [1, 2]}}) is None
    assert catalog.shards_for_filter("db.c", {"a": 1}) == ["shard0"]  # one chunk, the primary shard's
    assert catalog.shards_for_filter("db.unsharded", {}) == ["shard0"]


def test_split_and_move_chunk_change_the_owner_and_the_config_chunks() -> None:
    catalog = _catalog()
    _shard(catalog, "db.r", {"k": 1})
    catalog.split("db.r", {"k": 10}, lambda: next(_ids))
    catalog.move_chunk("db.r", {"k": 10}, "shard1")
    assert catalog.shard_for_document("db.r", {"k": 9}) == "shard0"
    assert catalog.shard_for_document("db.r", {"k": 10}) == "shard1"
    assert catalog.shard_for_document("db.r", {}) == "shard0"  # a missing key field is null
    chunks = catalog.config_documents(wall_datetime)["chunks"]
    assert [(c["min"], c["max"], c["shard"]) for c in chunks] == [
        ({"k": MinKey()}, {"k": 10}, "shard0"), ({"k": 10}, {"k": MaxKey()}, "shard1")]
    with pytest.raises(CommandError):
        catalog.split("db.r", {"k": 10}, lambda: next(_ids))  # already a bound
    with pytest.raises(CommandError):
        catalog.move_chunk("db.r", {"k": 1}, "shard9")


def test_shard_key_patterns_mongod_refuses() -> None:
    catalog = _catalog()
    with pytest.raises(CommandError):
        _shard(catalog, "db.x", {"a": "hashed", "b": "hashed"})
    with pytest.raises(CommandError):
        _shard(catalog, "db.y", {"a": -1})
