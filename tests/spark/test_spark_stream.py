"""Change data capture through Spark's file sink: exactly once with a writer running (also with
keyPartitions), across failCommand faults and a stepdown; a resume point off the oplog stops
the query loudly; the initial offset is fixed once; a reader that cannot reach its end token
fails instead of waiting."""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import Any

import pytest

from mongo_sansio.adapters.blocking import MongoClient
from mongo_sansio.adapters.sim import SimulatedReplicaSet

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from mongo_sansio.adapters.spark import EndTokenNotReached  # noqa: E402
from mongo_sansio.adapters.spark.options import parse_options  # noqa: E402
from mongo_sansio.adapters.spark.stream import (  # noqa: E402
    StreamPartition,
    fix_initial_offset,
    read_range,
)


def _options(rs: SimulatedReplicaSet, checkpoint: str, **extra: str) -> dict[str, str]:
    return {"uri": rs.uri, "database": "db", "collection": "events", "startAt": "latest",
            "checkpointLocation": checkpoint, "maxAwaitTimeMS": "200", **extra}


def _start(spark: Any, options: dict[str, str], out: str, checkpoint: str, **trigger: Any) -> Any:
    reader = spark.readStream.format("mongo_sansio")
    for key, value in options.items():
        reader = reader.option(key, value)
    return (
        reader.load().writeStream.format("parquet").option("path", out)
        .option("checkpointLocation", checkpoint).trigger(**trigger).start()
    )


def _workload(uri: str, count: int, fault: Any = None) -> list[tuple[str, Any]]:
    """Writes from another client; what each change event should be (type, _id)."""
    expected: list[tuple[str, Any]] = []
    with MongoClient(uri) as client:
        events = client.db.events
        for n in range(count):
            events.insert_one({"_id": n, "v": n})
            expected.append(("insert", n))
            if n % 10 == 5:
                events.update_one({"_id": n - 5}, {"$set": {"v": -n}})
                expected.append(("update", n - 5))
            if n % 25 == 24:
                events.delete_one({"_id": n - 1})
                expected.append(("delete", n - 1))
            if fault is not None and n == count // 2:
                fault()
    return expected


def _output(spark: Any, out: str) -> list[tuple[str, Any]]:
    import json

    rows = spark.read.parquet(out).collect()
    tokens = Counter(row["resumeToken"] for row in rows)
    assert max(tokens.values()) == 1, "an event was written twice"
    return [(row["operationType"], json.loads(row["documentKey"])["_id"]) for row in rows]


@pytest.mark.parametrize(("key_partitions", "limit"), [("1", "40"), ("3", "40"), ("2", None)])
def test_exactly_once_with_a_writer_running(
    spark: Any, rs: SimulatedReplicaSet, tmp_path: Any, key_partitions: str, limit: str | None
) -> None:
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    # (with no limit each batch ends at the stream's position once one event shows it is
    # not empty: the probe, not the count)
    extra = {"maxEventsPerBatch": limit} if limit else {}
    options = _options(rs, checkpoint, keyPartitions=key_partitions, **extra)
    fix_initial_offset(parse_options(options))
    query = _start(spark, options, out, checkpoint, processingTime="300 milliseconds")
    try:
        expected = _workload(rs.uri, 150)
        query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None
    assert Counter(_output(spark, out)) == Counter(expected)
    if limit:
        assert max(p["numInputRows"] for p in query.recentProgress) <= int(limit)


def test_faults_and_a_stepdown_during_the_stream(spark: Any, rs: SimulatedReplicaSet, tmp_path: Any) -> None:
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    options = _options(rs, checkpoint, maxEventsPerBatch="50")
    fix_initial_offset(parse_options(options))
    primary = rs.primary
    assert primary is not None
    rs.configure_failpoint(primary, {
        "configureFailPoint": "failCommand", "mode": {"times": 3},
        "data": {"failCommands": ["getMore"], "errorCode": 10107},
    })
    query = _start(spark, options, out, checkpoint, processingTime="300 milliseconds")
    try:
        expected = _workload(rs.uri, 120, fault=rs.step_down)
        query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None
    assert Counter(_output(spark, out)) == Counter(expected)


def test_a_resume_point_off_the_oplog_stops_the_query_loudly(spark: Any, rs: SimulatedReplicaSet, tmp_path: Any) -> None:
    with MongoClient(rs.uri) as client:
        client.db.events.insert_one({"_id": "first"})
        with client.db.events.watch() as stream:
            old = stream.resume_token
        rs.call(lambda cluster, _now: setattr(cluster.oplog, "max_entries", 20))
        client.db.events.insert_many([{"_id": n} for n in range(5)])
        for n in range(40):
            client.db.events.insert_one({"_id": 100 + n})
    assert old is not None
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    options = _options(rs, checkpoint, startAt=old["_data"])
    query = _start(spark, options, out, checkpoint, availableNow=True)
    with pytest.raises(Exception, match="ChangeStreamHistoryLost"):
        query.awaitTermination(60)
    assert "new (or emptied) checkpoint" in str(query.exception())


def test_the_initial_offset_is_fixed_once(rs: SimulatedReplicaSet, tmp_path: Any) -> None:
    options = parse_options(_options(rs, str(tmp_path)))
    first = fix_initial_offset(options)
    with MongoClient(rs.uri) as client:
        client.db.events.insert_many([{"_id": n} for n in range(3)])
    assert fix_initial_offset(options) == first  # read back, not "now" again
    assert os.path.exists(tmp_path / "mongo_sansio_initial_offset.json")


def test_a_reader_that_cannot_reach_its_end_token_fails(rs: SimulatedReplicaSet, tmp_path: Any) -> None:
    options = parse_options(_options(rs, str(tmp_path), endTokenTimeoutMS="1500"))
    start = fix_initial_offset(options)
    never = "F" * 26  # after anything the oplog will hold during the test
    started = time.monotonic()
    with pytest.raises(EndTokenNotReached, match="Refusing to wait for ever"):
        list(read_range(options, StreamPartition(start.to_json(), never, 0, 1)))
    assert time.monotonic() - started < 15


@pytest.mark.parametrize("key_partitions", [1, 2])
def test_a_batch_across_a_drop_reads_the_recreated_collection_too(
    rs: SimulatedReplicaSet, tmp_path: Any, key_partitions: int
) -> None:
    import json

    from mongo_sansio.adapters.spark.stream import _current_position

    options = parse_options(_options(rs, str(tmp_path), keyPartitions=str(key_partitions)))
    start = fix_initial_offset(options)
    with MongoClient(rs.uri) as client:
        client.db.events.insert_many([{"_id": 1}, {"_id": 2}])
        client.db.events.drop()
        client.db.events.insert_one({"_id": 3})
    end = _current_position(options)  # a position after everything (no maxEventsPerBatch)
    assert end.token is not None
    rows = [
        row
        for index in range(key_partitions)
        for row in read_range(options, StreamPartition(start.to_json(), end.token, index, key_partitions))
    ]
    got = sorted((row[0], row[1], json.loads(row[6])["_id"] if row[6] else None) for row in rows)
    assert [(kind, key) for _token, kind, key in got] == [
        ("insert", 1), ("insert", 2), ("drop", None), ("invalidate", None), ("insert", 3)
    ]


def test_a_readers_handover_keeps_order_raises_errors_and_stops_early() -> None:
    import threading

    from mongo_sansio.adapters.spark.stream import _handed_over

    assert [n for chunk in _handed_over(iter(range(1000)), 0.1) for n in chunk] == list(range(1000))

    def failing() -> Any:
        yield from range(300)
        raise EndTokenNotReached("{}", "FF", 1.0)

    seen: list[int] = []
    with pytest.raises(EndTokenNotReached):
        for chunk in _handed_over(failing(), 0.1):
            seen.extend(chunk)
    assert seen == list(range(len(seen)))  # in order, up to the error

    closed = threading.Event()

    def endless() -> Any:
        try:
            n = 0
            while True:
                yield n
                n += 1
        finally:
            closed.set()

    handover = _handed_over(endless(), 0.1)
    assert next(handover)[:3] == [0, 1, 2]
    handover.close()  # the task stopped reading: the producer closes its generator
    assert closed.wait(5)


def test_documents_as_variant_columns(spark: Any, rs: SimulatedReplicaSet, tmp_path: Any) -> None:
    """documentFormat=variant: the document columns are Spark 4 VARIANTs that Spark's own
    functions read (variant_get), deletes keep a null fullDocument."""
    checkpoint = str(tmp_path / "checkpoint")
    options = _options(rs, checkpoint, documentFormat="variant", collection="variants")
    fix_initial_offset(parse_options(options))
    with MongoClient(rs.uri) as client:
        variants = client.db.variants
        variants.insert_one({"_id": 1, "v": 10, "tags": ["a", "b"], "nested": {"x": 1.5}})
        variants.update_one({"_id": 1}, {"$set": {"v": 11}})
        variants.delete_one({"_id": 1})
    reader = spark.readStream.format("mongo_sansio")
    for key, value in options.items():
        reader = reader.option(key, value)
    frame = reader.load()
    types = {field.name: field.dataType.typeName() for field in frame.schema.fields}
    assert types["fullDocument"] == types["documentKey"] == "variant"
    query = (
        frame.writeStream.format("memory").queryName("variant_events")
        .option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    )
    try:
        query.awaitTermination(120)
    finally:
        query.stop()
    assert query.exception() is None
    rows = spark.sql(
        "SELECT operationType, variant_get(documentKey, '$._id', 'int') AS id,"
        " variant_get(fullDocument, '$.v', 'int') AS v,"
        " variant_get(fullDocument, '$.tags[1]', 'string') AS tag,"
        " variant_get(fullDocument, '$.nested.x', 'double') AS x FROM variant_events"
    ).collect()
    got = [(r["operationType"], r["id"], r["v"], r["tag"], r["x"]) for r in rows]
    assert got == [("insert", 1, 10, "b", 1.5), ("update", 1, None, None, None),
                   ("delete", 1, None, None, None)]
