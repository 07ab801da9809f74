"""The Spark source on a sharded cluster (two mongos over two shards, one cluster for the
module): batch reads with ``partitioner=shardChunks`` give one partition per chunk, each
holding only its chunk's documents, every document exactly once (hashed and ranged keys, and an
unsharded collection falling back to ``_id`` sampling); a change stream through mongos with
``keyPartitions=2`` delivers every event exactly once across a mongos kill and a restart of the
query from its checkpoint.  (``sc``: tests/conftest.py's cluster for the module.)"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from mongo_sansio.adapters.blocking import MongoClient
from mongo_sansio.adapters.sim import SimulatedShardedCluster
from mongo_sansio.bson import Int64

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from mongo_sansio.adapters.spark.batch import plan_partitions  # noqa: E402
from mongo_sansio.adapters.spark.options import parse_options  # noqa: E402

_names = itertools.count()


@pytest.fixture(scope="module")
def client(sc: SimulatedShardedCluster) -> Iterator[Any]:
    with MongoClient(sc.uri) as opened:
        yield opened


def _read(spark: Any, sc: SimulatedShardedCluster, collection: str, **options: str) -> Any:
    return spark.read.format("mongo_sansio").options(uri=sc.uri, database="db", collection=collection, **options).load()


def _chunks(client: Any, name: str) -> list[dict[str, Any]]:
    uuid = client.config.collections.find_one({"_id": f"db.{name}"})["uuid"]
    return list(client.config.chunks.find({"uuid": uuid}, sort=[("min", 1)]))


def _by_partition(df: Any, column: str) -> dict[int, list[Any]]:
    from pyspark.sql.functions import spark_partition_id

    found: dict[int, list[Any]] = {}
    for row in df.select(spark_partition_id().alias("p"), column).collect():
        found.setdefault(row["p"], []).append(row[column])
    return found


def test_a_hashed_collection_is_read_one_partition_per_chunk(
    spark: Any, sc: SimulatedShardedCluster, client: Any
) -> None:
    name = f"hashed{next(_names)}"
    client.admin.command("shardCollection", f"db.{name}", key={"_id": "hashed"})
    client.admin.command("split", f"db.{name}", middle={"_id": Int64(2**62)})  # three chunks
    client.db[name].insert_many([{"_id": n, "v": n % 7} for n in range(600)])
    chunks = _chunks(client, name)
    assert len(chunks) == 3
    df = _read(spark, sc, name, partitioner="shardChunks")
    assert df.rdd.getNumPartitions() == len(chunks)
    by_partition = _by_partition(df, "_id")
    assert sorted(n for ids in by_partition.values() for n in ids) == list(range(600))  # exactly once
    hashed_ids = _hashed_ids(client, name)
    for index, ids in by_partition.items():
        low, high = chunks[index]["min"]["_id"], chunks[index]["max"]["_id"]
        assert all(_within(hashed_ids[n], low, high) for n in ids), index  # its chunk's only


def _hashed_ids(client: Any, name: str) -> dict[int, int]:
    pipeline = [{"$project": {"h": {"$toHashedIndexKey": "$_id"}}}]
    return {d["_id"]: d["h"] for d in client.db[name].aggregate(pipeline)}


def _within(value: Any, low: Any, high: Any) -> bool:
    from mongo_sansio.bson import MaxKey, MinKey

    return (isinstance(low, MinKey) or low <= value) and (isinstance(high, MaxKey) or value < high)


def test_a_ranged_collection_is_read_one_partition_per_chunk(
    spark: Any, sc: SimulatedShardedCluster, client: Any
) -> None:
    name = f"ranged{next(_names)}"
    client.admin.command("shardCollection", f"db.{name}", key={"k": 1})
    for middle in (100, 200):
        client.admin.command("split", f"db.{name}", middle={"k": middle})
    client.admin.command("moveChunk", f"db.{name}", find={"k": 150}, to="shard1")
    documents: list[dict[str, Any]] = [{"_id": n, "k": n} for n in range(300)]
    documents += [{"_id": 1000, "k": "text"}, {"_id": 1001}, {"_id": 1002, "k": None}]  # the ends
    client.db[name].insert_many(documents)
    chunks = _chunks(client, name)
    assert [c["shard"] for c in chunks] == ["shard0", "shard1", "shard0"]
    df = _read(spark, sc, name, partitioner="shardChunks")
    assert df.rdd.getNumPartitions() == 3
    by_partition = _by_partition(df, "_id")
    assert sorted(n for ids in by_partition.values() for n in ids) == sorted(d["_id"] for d in documents)
    assert sorted(by_partition[0]) == [*range(100), 1001, 1002]  # [MinKey, 100): null and missing too
    assert sorted(by_partition[1]) == list(range(100, 200))  # shard1's chunk only
    assert sorted(by_partition[2]) == [*range(200, 300), 1000]  # [200, MaxKey): strings too


def test_an_unsharded_collection_falls_back_to_id_sampling(
    spark: Any, sc: SimulatedShardedCluster, client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    name = f"plain{next(_names)}"
    client.db[name].insert_many([{"_id": n} for n in range(200)])
    options = {"uri": sc.uri, "database": "db", "collection": name, "partitioner": "shardChunks",
               "partitions": "2"}
    with caplog.at_level(logging.WARNING, logger="mongo_sansio.spark"):
        assert len(plan_partitions(parse_options(options))) == 2
    assert f"db.{name} is not a sharded collection" in caplog.text
    assert "default _id sampling" in caplog.text
    df = _read(spark, sc, name, partitioner="shardChunks", partitions="2")
    assert sorted(row["_id"] for row in df.collect()) == list(range(200))
