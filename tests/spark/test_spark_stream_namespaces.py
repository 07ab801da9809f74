"""Several collections in one stream: ``collection`` a comma-separated list, ``*`` for the whole
database, ``database`` ``*`` for the whole deployment.  The stream reader's micro-batch cycle
(initialOffset, latestOffset, partitions, read) is driven here in-process, as Spark's driver and
executors call it, so every row can be checked; drops, renames and a dropped database included."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
from pyspark.sql.streaming.datasource import ReadAllAvailable  # noqa: E402

from mongo_sansio.adapters.blocking import MongoClient  # noqa: E402
from mongo_sansio.adapters.sim import SimulatedReplicaSet  # noqa: E402
from mongo_sansio.adapters.spark import batch  # noqa: E402
from mongo_sansio.adapters.spark.errors import MongoDataSourceError  # noqa: E402
from mongo_sansio.adapters.spark.options import parse_options  # noqa: E402
from mongo_sansio.adapters.spark.stream import MongoStreamReader, event_schema, read_range  # noqa: E402


@pytest.fixture
def rs() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=3) as replica_set:
        yield replica_set


def _reader(rs: SimulatedReplicaSet, tmp: Any, **extra: str) -> MongoStreamReader:
    options = parse_options({"uri": rs.uri, "checkpointLocation": str(tmp), "startAt": "latest",
                             "keyPartitions": "2", **extra})
    return MongoStreamReader(options, event_schema(options))


def _rows_until(reader: MongoStreamReader, start: dict[str, Any], count: int) -> list[dict[str, Any]]:
    """Micro-batches from ``start`` until ``count`` rows came (at most 20 batches)."""
    names = [field.name for field in reader.schema.fields]
    rows: list[dict[str, Any]] = []
    for _ in range(20):
        end = reader.latestOffset(start, ReadAllAvailable())
        for partition in reader.partitions(start, end):
            rows.extend(dict(zip(names, row, strict=True))
                        for row in read_range(reader.options, partition))
        start = end
        if len(rows) >= count:
            break
    reader.stop()
    return rows


def _seen(rows: list[dict[str, Any]]) -> list[tuple[str, str | None, str | None, str | None]]:
    return sorted(
        (row["operationType"], row["database"], row["collection"], row["to"]) for row in rows
    )


def test_a_list_of_collections(rs: SimulatedReplicaSet, tmp_path: Any) -> None:
    with MongoClient(rs.uri) as client:
        client.shop.orders.insert_one({"_id": 0})  # the collections exist before the start
        reader = _reader(rs, tmp_path, database="shop", collection="orders, items")
        start = reader.initialOffset()
        client.shop.orders.insert_many([{"_id": 1}, {"_id": 2}])
        client.shop.items.insert_one({"_id": "i"})
        client.shop.other.insert_one({"_id": "not listed"})
        client.shop.items.update_one({"_id": "i"}, {"$set": {"n": 1}})
        client.shop.orders.rename("orders_old")
        client.shop.items.drop()
    rows = _rows_until(reader, start, 6)
    assert _seen(rows) == sorted([
        ("insert", "shop", "orders", None), ("insert", "shop", "orders", None),
        ("insert", "shop", "items", None), ("update", "shop", "items", None),
        ("rename", "shop", "orders", "shop.orders_old"), ("drop", "shop", "items", None),
    ])
    assert len({row["resumeToken"] for row in rows}) == len(rows)


def test_the_whole_database_across_a_dropped_database(rs: SimulatedReplicaSet, tmp_path: Any) -> None:
    with MongoClient(rs.uri) as client:
        client.shop.a.insert_one({"_id": 0})
        reader = _reader(rs, tmp_path, database="shop", collection="*")
        start = reader.initialOffset()
        client.shop.a.insert_one({"_id": 1})
        client.shop.b.insert_one({"_id": 2})
        client.other.c.insert_one({"_id": "elsewhere"})
        client.drop_database("shop")
        client.shop.c.insert_one({"_id": 3})  # after the database was dropped and made again
    rows = _rows_until(reader, start, 6)
    kinds = _seen(rows)
    assert ("insert", "shop", "a", None) in kinds and ("insert", "shop", "b", None) in kinds
    assert ("insert", "shop", "c", None) in kinds
    assert ("dropDatabase", "shop", None, None) in kinds
    assert ("invalidate", None, None, None) in kinds  # the database stream ended, and went on
    assert {("drop", "shop", "a", None), ("drop", "shop", "b", None)} <= set(kinds)
    assert all(row["database"] in ("shop", None) for row in rows)


def test_the_whole_deployment(rs: SimulatedReplicaSet, tmp_path: Any) -> None:
    with MongoClient(rs.uri) as client:
        client.one.x.insert_one({"_id": 0})
        reader = _reader(rs, tmp_path, database="*")
        start = reader.initialOffset()
        client.one.x.insert_one({"_id": 1})
        client.two.y.insert_one({"_id": 2})
        client.two.y.delete_one({"_id": 2})
    rows = _rows_until(reader, start, 3)
    assert _seen(rows) == sorted([
        ("insert", "one", "x", None), ("insert", "two", "y", None), ("delete", "two", "y", None),
    ])


@pytest.mark.parametrize(
    ("database", "collection"), [("shop", "a,*"), ("shop", "a,,b"), ("*", "orders")]
)
def test_bad_patterns_are_named(rs: SimulatedReplicaSet, database: str, collection: str) -> None:
    with pytest.raises(MongoDataSourceError, match="collection"):
        parse_options({"uri": rs.uri, "database": database, "collection": collection})


@pytest.mark.parametrize(("database", "collection"), [("shop", "a,b"), ("shop", "*"), ("*", "*")])
def test_batch_reads_and_writes_take_one_collection(
    rs: SimulatedReplicaSet, database: str, collection: str
) -> None:
    options = parse_options({"uri": rs.uri, "database": database, "collection": collection})
    with pytest.raises(MongoDataSourceError, match="one collection"):
        batch.infer(options)
