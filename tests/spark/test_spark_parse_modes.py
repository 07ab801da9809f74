"""Typed rows through Spark: parse modes for batch reads (FAILFAST, PERMISSIVE with the
corrupt-record column, DROPMALFORMED) and ``publishFullDocumentOnly`` streams whose rows are
the changed documents themselves (schema inferred from the collection or given)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mongo_sansio.adapters.blocking import MongoClient
from mongo_sansio.adapters.sim import SimulatedReplicaSet

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

DOCUMENTS = [{"_id": n, "qty": n, "name": f"n{n}"} for n in range(20)] + [
    {"_id": 100, "qty": "lots", "name": "misfit"},
    {"_id": 101, "qty": {"nested": True}, "name": "misfit too"},
]


def _read(spark: Any, rs: SimulatedReplicaSet, given: str | None = None, **options: str) -> Any:
    reader = (
        spark.read.format("mongo_sansio").option("uri", rs.uri).option("database", "db")
        .option("collection", "items").option("partitions", "1")
    )
    if given is not None:
        reader = reader.schema(given)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def _seed(rs: SimulatedReplicaSet) -> None:
    with MongoClient(rs.uri) as client:
        client.db.items.insert_many(DOCUMENTS)


def test_batch_modes(spark: Any, rs: SimulatedReplicaSet) -> None:
    _seed(rs)
    given = "_id int, qty int, name string, _corrupt_record string"
    with pytest.raises(Exception, match="qty"):  # FAILFAST, the default, names the field
        _read(spark, rs, given).collect()
    rows = {row["_id"]: row for row in _read(spark, rs, given, mode="PERMISSIVE").collect()}
    assert len(rows) == 22
    assert rows[5]["qty"] == 5 and rows[5]["_corrupt_record"] is None
    assert rows[100]["qty"] is None and rows[100]["name"] == "misfit"
    assert json.loads(rows[100]["_corrupt_record"]) == DOCUMENTS[20]
    assert json.loads(rows[101]["_corrupt_record"])["qty"] == {"nested": True}
    dropped = _read(spark, rs, given, mode="DROPMALFORMED").collect()
    assert sorted(row["_id"] for row in dropped) == list(range(20))
    # inferred (a hint makes qty an int), the corrupt column added and renamed
    renamed = _read(spark, rs, None, mode="permissive", schema="qty int",
                    columnNameOfCorruptRecord="broken", sampleSize="1000")
    assert renamed.columns == ["_id", "name", "qty", "broken"]
    marked = [row["_id"] for row in renamed.collect() if row["broken"] is not None]
    assert sorted(marked) == [100, 101]


def _typed_stream(spark: Any, rs: SimulatedReplicaSet, tmp: Any, start: Any, given: str | None,
                  **options: str) -> list[Any]:
    reader = (
        spark.readStream.format("mongo_sansio").option("uri", rs.uri).option("database", "db")
        .option("collection", "items").option("publishFullDocumentOnly", "true")
        .option("startAt", f"{start.time}:{start.inc + 1}")
    )
    if given is not None:
        reader = reader.schema(given)
    for key, value in options.items():
        reader = reader.option(key, value)
    frame = reader.load()
    name = f"typed_{abs(hash((str(tmp), given, tuple(options.items()))))}"
    query = (
        frame.writeStream.format("memory").queryName(name)
        .option("checkpointLocation", str(tmp / name)).trigger(availableNow=True).start()
    )
    query.awaitTermination(120)
    assert query.exception() is None, query.exception()
    return spark.sql(f"select * from {name}").collect()


def test_typed_stream_rows_are_the_documents(spark: Any, rs: SimulatedReplicaSet, tmp_path: Any) -> None:
    with MongoClient(rs.uri) as client:
        client.db.items.insert_many([{"_id": n, "qty": n, "name": f"n{n}"} for n in range(3)])
        start = client.admin.command("ping")["operationTime"]
        client.db.items.insert_one({"_id": 10, "qty": 10, "name": "ten"})
        client.db.items.update_one({"_id": 1}, {"$set": {"qty": 111}})
        client.db.items.delete_one({"_id": 2})
        client.db.items.insert_one({"_id": 11, "qty": "eleven", "name": "misfit"})
    inferred = _typed_stream(spark, rs, tmp_path, start, None, mode="PERMISSIVE", schema="qty bigint")
    assert {row["operationType"] for row in inferred} == {"insert", "update", "delete"}
    by_id = {row["_id"]: row for row in inferred}
    assert set(by_id) == {10, 1, 2, 11}
    assert by_id[10]["name"] == "ten" and by_id[10]["operationType"] == "insert"
    assert by_id[1]["qty"] == 111 and by_id[1]["name"] == "n1"  # the document after the update
    assert by_id[2]["operationType"] == "delete" and by_id[2]["name"] is None  # its key only
    assert by_id[11]["qty"] is None and json.loads(by_id[11]["_corrupt_record"])["qty"] == "eleven"
    with MongoClient(rs.uri) as client:
        client.db.items.drop()  # changes no document: not a row (nor is the invalidate after it)
    given = _typed_stream(spark, rs, tmp_path, start, "_id long, qty long, operationType string",
                          mode="DROPMALFORMED")
    assert sorted((row["_id"], row["operationType"]) for row in given) == [
        (1, "update"), (2, "delete"), (10, "insert")]
