"""The Spark pipeline, measured: change events per second from the simulator into Parquet
with the ``mongo_sansio`` data source, side by side with a straightforward PyMongo-based
Python data source doing the same job (written here); and a batch read of a collection into
Arrow, side by side with PyMongo (documents then ``pa.Table.from_pylist``) and pymongoarrow.

    python benchmarks/pipeline_bench.py                    # 20,000 events, 100,000 documents
    python benchmarks/pipeline_bench.py --events 5000 --documents 20000

Everything runs against the same simulated replica set (a pure-Python server, so absolute
figures are the simulator's; the ratios are what to compare).  Needs the spark extra, PyMongo,
and pymongoarrow for its column (skipped when absent).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import pyarrow as pa  # noqa: E402
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition  # noqa: E402


class PyMongoEvents(DataSource):  # type: ignore[misc]
    """The straightforward source: PyMongo change streams, full events decoded to dicts and
    turned into rows one by one, one partition per micro-batch."""

    @classmethod
    def name(cls) -> str:
        return "pymongo_events"

    def schema(self) -> str:
        return ("resumeToken string, operationType string, database string, collection string, "
                "documentKey string, fullDocument string")

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return PyMongoEventsReader(dict(self.options))


class PyMongoEventsReader(DataSourceStreamReader):  # type: ignore[misc]
    def __init__(self, options: dict[str, str]) -> None:
        self.options = options

    def _collection(self) -> Any:
        import pymongo

        client: Any = pymongo.MongoClient(self.options["uri"])
        return client, client[self.options["database"]][self.options["collection"]]

    def initialOffset(self) -> dict[str, Any]:
        return {"token": self.options["start"]}

    def latestOffset(self, start: dict[str, Any], limit: Any) -> dict[str, Any]:
        client, collection = self._collection()
        last = start["token"]
        with client, collection.watch(start_after={"_data": last}, max_await_time_ms=300) as stream:
            while True:
                event = stream.try_next()
                if event is None:
                    break
                last = event["_id"]["_data"]
        return {"token": last}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        return [] if start == end else [InputPartition((start["token"], end["token"]))]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        from bson import json_util

        start, end = partition.value
        client, collection = self._collection()
        with client, collection.watch(start_after={"_data": start}, max_await_time_ms=300) as stream:
            for event in stream:
                token = event["_id"]["_data"]
                if token > end:
                    return
                yield (
                    token, event["operationType"], event["ns"]["db"], event["ns"].get("coll"),
                    json_util.dumps(event.get("documentKey")),
                    json_util.dumps(event["fullDocument"]) if event.get("fullDocument") else None,
                )
                if token == end:
                    return


def _spark() -> Any:
    from pyspark.sql import SparkSession

    from mongo_sansio.adapters.spark import MongoDataSource

    spark = (
        SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(MongoDataSource)
    spark.dataSource.register(PyMongoEvents)
    return spark


def _stream_seconds(spark: Any, source: str, options: dict[str, str], expected: int) -> float:
    folder = tempfile.mkdtemp(prefix="pipeline-bench-")
    reader = spark.readStream.format(source)
    for key, value in options.items():
        reader = reader.option(key, value)
    started = time.perf_counter()
    query = (
        reader.load().writeStream.format("parquet").option("path", f"{folder}/out")
        .option("checkpointLocation", f"{folder}/checkpoint").trigger(availableNow=True).start()
    )
    query.awaitTermination()
    seconds = time.perf_counter() - started
    count = spark.read.parquet(f"{folder}/out").count()
    if count != expected:
        raise SystemExit(f"{source}: expected {expected} events, wrote {count}")
    return seconds


def cdc(spark: Any, uri: str, events: int, key_partitions: int) -> dict[str, float]:
    from mongo_sansio.adapters.blocking import MongoClient
    from mongo_sansio.adapters.spark.options import parse_options
    from mongo_sansio.adapters.spark.stream import fix_initial_offset

    base = {"uri": uri, "database": "bench", "collection": "events"}
    start = fix_initial_offset(parse_options({**base, "startAt": "latest"}))
    with MongoClient(uri) as client:
        docs = [{"_id": n, "name": f"user {n}", "tags": ["a", "b"], "score": n * 1.5,
                 "address": {"city": "Lyon", "zip": str(69000 + n % 100)}} for n in range(events)]
        for offset in range(0, events, 1000):
            client.bench.events.insert_many(docs[offset:offset + 1000])
    ours = _stream_seconds(spark, "mongo_sansio", {**base, "startAt": start.token or "",
                                                  "keyPartitions": str(key_partitions)}, events)
    theirs = _stream_seconds(spark, "pymongo_events", {**base, "start": start.token or ""}, events)
    return {"ours": events / ours, "pymongo": events / theirs}


def batch(spark: Any, uri: str, documents: int) -> dict[str, float]:
    import pymongo

    from mongo_sansio.adapters.blocking import MongoClient
    from mongo_sansio.adapters.spark.arrow import batches
    from mongo_sansio.adapters.spark.batch import infer
    from mongo_sansio.adapters.spark.options import parse_options

    with MongoClient(uri) as client:
        docs = [{"_id": n, "name": f"user {n}", "score": n * 1.5, "active": n % 2 == 0,
                 "address": {"city": "Lyon", "zip": str(69000 + n % 100)}} for n in range(documents)]
        for offset in range(0, documents, 5000):
            client.bench.docs.insert_many(docs[offset:offset + 5000])
    options = parse_options({"uri": uri, "database": "bench", "collection": "docs"})
    schema, _tree = infer(options)
    figures: dict[str, float] = {}

    started = time.perf_counter()
    with MongoClient(uri) as client:
        table = pa.Table.from_batches(list(batches(client.bench.docs.find(), schema)))
    figures["ours (Arrow)"] = table.num_rows / (time.perf_counter() - started)

    started = time.perf_counter()
    with pymongo.MongoClient(uri) as client:
        table = pa.Table.from_pylist(list(client.bench.docs.find()))
    figures["pymongo (from_pylist)"] = table.num_rows / (time.perf_counter() - started)

    try:
        from pymongoarrow.api import find_arrow_all
    except ImportError:
        print("pymongoarrow is not installed: its column is left out", file=sys.stderr)
    else:
        started = time.perf_counter()
        with pymongo.MongoClient(uri) as client:
            table = find_arrow_all(client.bench.docs, {})
        figures["pymongoarrow"] = table.num_rows / (time.perf_counter() - started)

    started = time.perf_counter()
    count = (spark.read.format("mongo_sansio").option("uri", uri).option("database", "bench")
             .option("collection", "docs").option("partitions", "2").load().count())
    figures["ours through Spark (count)"] = count / (time.perf_counter() - started)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--key-partitions", type=int, default=2)
    args = parser.parse_args()
    from mongo_sansio.adapters.sim import SimulatedReplicaSet

    spark = _spark()
    with SimulatedReplicaSet(members=3) as rs:
        rates = cdc(spark, rs.uri, args.events, args.key_partitions)
        print(f"CDC into Parquet, {args.events} insert events (keyPartitions={args.key_partitions}):")
        print(f"  mongo_sansio   {rates['ours']:>9.0f} events/s")
        print(f"  PyMongo source {rates['pymongo']:>9.0f} events/s")
        print(f"  ratio          {rates['ours'] / rates['pymongo']:>9.2f}x")
        figures = batch(spark, rs.uri, args.documents)
        print(f"Batch read of {args.documents} documents into Arrow:")
        base = figures["pymongo (from_pylist)"]
        for name, rate in figures.items():
            print(f"  {name:<28} {rate:>9.0f} docs/s  {rate / base:5.2f}x PyMongo")
        print(json.dumps({"cdc": rates, "batch": figures}))
    spark.stop()


if __name__ == "__main__":
    main()
