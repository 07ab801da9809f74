"""Batch reads and writes through Spark: partitions without gaps or overlaps over mixed types
and nested documents, pushed-down filters, idempotent writes, errors naming the row."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from mongo_sansio.adapters.blocking import MongoClient
from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.bson import Decimal128, Int64, ObjectId, Timestamp

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")


def _read(spark: Any, rs: SimulatedReplicaSet, collection: str, **options: str) -> Any:
    reader = (
        spark.read.format("mongo_sansio").option("uri", rs.uri)
        .option("database", "db").option("collection", collection)
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def _mixed_documents() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for n in range(1500):
        _id: Any = n if n % 3 == 0 else (f"s{n:05d}" if n % 3 == 1 else ObjectId())
        docs.append({
            "_id": _id,
            "num": n if n % 4 else float(n) + 0.5,
            "big": Int64(n * 10**10),
            "label": f"item {n}",
            "when": datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(minutes=n),
            "nested": {"depth": {"n": n, "tags": [str(n), "x"]}, "flag": n % 2 == 0},
            "amount": Decimal128(f"{n}.25"),
            "ts": Timestamp(1_700_000_000, n),
            "maybe": None if n % 5 else n,
        })
    return docs


def test_partitioned_read_loses_and_doubles_nothing(spark: Any, rs: SimulatedReplicaSet) -> None:
    docs = _mixed_documents()
    with MongoClient(rs.uri) as client:
        client.db.mixed.insert_many(docs)
    df = _read(spark, rs, "mixed", partitions="4")
    assert df.rdd.getNumPartitions() == 4
    fields = {field.name: field.dataType.simpleString() for field in df.schema.fields}
    assert fields["_id"] == "string"  # ints, strings and ObjectIds widen to a string column
    assert fields["num"] == "double" and fields["big"] == "bigint"
    assert fields["when"] == "timestamp" and fields["amount"] == "string"
    assert fields["nested"] == "struct<depth:struct<n:int,tags:array<string>>,flag:boolean>"
    assert fields["ts"] == "struct<t:bigint,i:bigint>"
    rows = df.collect()
    ids = sorted(row["_id"] for row in rows)
    expected = sorted(str(d["_id"]) if not isinstance(d["_id"], str) else d["_id"] for d in docs)
    assert ids == expected  # every document exactly once
    by_label = {row["label"]: row for row in rows}
    row = by_label["item 7"]
    assert row["num"] == 7.0 and row["big"] == 7 * 10**10 and row["amount"] == "7.25"
    assert row["nested"]["depth"]["tags"] == ["7", "x"] and row["ts"]["i"] == 7
    assert row["maybe"] is None and by_label["item 10"]["maybe"] == 10


def test_a_tiny_collection_is_one_partition(spark: Any, rs: SimulatedReplicaSet) -> None:
    with MongoClient(rs.uri) as client:
        client.db.tiny.insert_many([{"_id": 1}, {"_id": 2}])
    df = _read(spark, rs, "tiny", partitions="8")
    assert df.rdd.getNumPartitions() == 1
    assert sorted(r["_id"] for r in df.collect()) == [1, 2]


def test_pipeline_and_pushed_down_filters(spark: Any, rs: SimulatedReplicaSet) -> None:
    with MongoClient(rs.uri) as client:
        client.db.nums.insert_many([{"_id": n, "n": n, "kind": "even" if n % 2 == 0 else "odd"} for n in range(200)])
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        df = _read(spark, rs, "nums", filterPushdown="true", partitions="2",
                   pipeline='[{"$match": {"kind": "even"}}]')
        assert df.filter("n >= 150 AND kind = 'even'").count() == 25
        assert df.filter("n IN (2, 3, 4)").count() == 2
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")


def _frame(spark: Any, rows: list[tuple[Any, ...]], schema: str) -> Any:
    return spark.createDataFrame(rows, schema)


def _write(df: Any, rs: SimulatedReplicaSet, collection: str, **options: str) -> None:
    writer = (
        df.write.format("mongo_sansio").mode("append").option("uri", rs.uri)
        .option("database", "db").option("collection", collection)
    )
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save()


def test_writes_twice_write_nothing_twice(spark: Any, rs: SimulatedReplicaSet) -> None:
    rows = [(f"sku{n}", "eu", n, float(n) / 2) for n in range(300)]
    df = _frame(spark, rows, "sku string, region string, qty int, price double").repartition(3)
    _write(df, rs, "stock", idFields="sku,region", maxBatchSize="37")
    _write(df, rs, "stock", idFields="sku,region", maxBatchSize="37", ordered="false")
    with MongoClient(rs.uri) as client:
        assert client.db.stock.count_documents({}) == 300
        assert client.db.stock.find_one({"sku": "sku5", "region": "eu"})["qty"] == 5
    changed = _frame(spark, [("sku5", "eu", 99)], "sku string, region string, qty int")
    _write(changed, rs, "stock", idFields="sku,region", operationType="update")
    with MongoClient(rs.uri) as client:
        doc = client.db.stock.find_one({"sku": "sku5"})
        assert doc["qty"] == 99 and doc["price"] == 2.5  # update keeps the other fields
    inserted = _frame(spark, [(n, "x") for n in range(50)], "_id int, v string")
    _write(inserted, rs, "ins", operationType="insert")
    _write(inserted, rs, "ins", operationType="insert")  # a rerun: duplicates passed over
    with MongoClient(rs.uri) as client:
        assert client.db.ins.count_documents({}) == 50


def test_a_refused_row_is_named(spark: Any, rs: SimulatedReplicaSet) -> None:
    with MongoClient(rs.uri) as client:
        client.db.people.create_index("email", unique=True)
    df = _frame(spark, [(1, "a@x"), (2, "b@x"), (3, "a@x")], "_id int, email string").coalesce(1)
    with pytest.raises(Exception, match=r"row 2 of this task was refused: .*duplicate key"):
        _write(df, rs, "people", operationType="insert")
