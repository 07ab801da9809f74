"""The Spark source on a sharded cluster (two mongos over two shards, one cluster for the
module): batch reads with ``partitioner=shardChunks`` give one partition per chunk, each
holding only its chunk's documents, every document exactly once (hashed and ranged keys, and an
unsharded collection falling back to ``_id`` sampling); a change stream through mongos with
``keyPartitions=2`` delivers every event exactly once across a mongos kill and a restart of the
query from its checkpoint.  (``sc``: tests/conftest.py's cluster for the module.)"""

from __future__ import annotations

import itertools
import json
import logging
from collections import Counter
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


def _changes(uri: str, name: str, numbers: range) -> list[tuple[str, Any]]:
    """Writes through mongos from another client (each names the shard key); what each change
    event should be (type, _id)."""
    expected: list[tuple[str, Any]] = []
    with MongoClient(uri) as writer:
        collection = writer.db[name]
        for n in numbers:
            collection.insert_one({"_id": n, "sk": n % 100, "v": n})
            expected.append(("insert", n))
            if n % 10 == 5:
                collection.update_one({"sk": (n - 5) % 100, "_id": n - 5}, {"$set": {"v": -n}})
                expected.append(("update", n - 5))
            if n % 25 == 24:
                collection.delete_one({"sk": (n - 1) % 100, "_id": n - 1})
                expected.append(("delete", n - 1))
    return expected


def _run_stream(spark: Any, options: dict[str, str], out: str, *steps: Any) -> None:
    """One run of the query: each step, then every event it caused processed."""
    query = (
        spark.readStream.format("mongo_sansio").options(**options).load()
        .writeStream.format("parquet").option("path", out)
        .option("checkpointLocation", options["checkpointLocation"])
        .trigger(processingTime="300 milliseconds").start()
    )
    try:
        for step in steps:
            step()
            query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None


def test_a_stream_through_mongos_is_exactly_once_across_a_mongos_kill_and_a_restart(
    spark: Any, sc: SimulatedShardedCluster, client: Any, tmp_path: Any
) -> None:
    from mongo_sansio.adapters.spark.stream import fix_initial_offset

    name = f"events{next(_names)}"
    client.admin.command("shardCollection", f"db.{name}", key={"sk": 1})
    client.admin.command("split", f"db.{name}", middle={"sk": 50})
    client.admin.command("moveChunk", f"db.{name}", find={"sk": 50}, to="shard1")
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    options = {"uri": sc.uri, "database": "db", "collection": name, "startAt": "latest",
               "checkpointLocation": checkpoint, "maxAwaitTimeMS": "200", "keyPartitions": "2"}
    fix_initial_offset(parse_options(options))
    expected: list[tuple[str, Any]] = []
    killed = sc.mongos[0]

    def kill_then_write() -> None:
        # mid-stream: the query's clients (the driver's and each reader's) know both mongos,
        # and may have been on this one
        sc.stop_mongos(killed)
        expected.extend(_changes(sc.uri, name, range(40, 80)))

    try:
        _run_stream(spark, options, out, lambda: expected.extend(_changes(sc.uri, name, range(40))),
                    kill_then_write)
        # written while no query runs; the restarted query reads them from its checkpoint
        expected.extend(_changes(sc.uri, name, range(80, 120)))
        _run_stream(spark, options, out, lambda: None)
    finally:
        sc.restart_mongos(killed)
    rows = spark.read.parquet(out).collect()
    assert max(Counter(row["resumeToken"] for row in rows).values()) == 1, "an event was written twice"
    keys = [json.loads(row["documentKey"]) for row in rows]
    assert Counter((row["operationType"], key["_id"]) for row, key in zip(rows, keys, strict=True)) == Counter(expected)
    assert all(list(key) == ["sk", "_id"] for key in keys)  # the shard key first, then _id
    assert {key["sk"] >= 50 for key in keys} == {False, True}  # events from both shards
