"""The Spark pipeline, measured: change events per second from the simulator into Parquet
with the ``mongo_sansio`` data source, side by side with a straightforward PyMongo-based
Python data source doing the same job (written here); and a batch read of a collection into
Arrow, side by side with PyMongo (documents then ``pa.Table.from_pylist``) and pymongoarrow.

    python benchmarks/pipeline_bench.py          # backlogs of 20,000 and 100,000 events, 100,000 documents
    python benchmarks/pipeline_bench.py --events 5000,20000 --documents 20000 --repeats 3

Each CDC query kind is timed on every backlog (its whole query: Spark starting the streaming
runner, the read, the Parquet write, the commit), and with two backlogs or more the sustained
rate is printed too: the extra events of the largest backlog over the extra seconds they took,
which cancels the query's fixed cost (about 1.1 s here, Spark's own, paid by both sources) and
leaves the rate a long-running stream keeps.

The same work on both sides of the CDC comparison: the same events (inserted once, then read
by every query from the same start token, available-now into Parquet), the same twelve
output columns with the same values (documents as relaxed Extended JSON), the same Spark
session (``local[2]``), the same simulator, both libraries imported from bytecode
(mongo_sansio's modules are compiled first, as an installed package's are).  Every query of
each kind runs once untimed first (Spark's JIT, its Python worker daemon and the Parquet
writer's classes would otherwise be paid by whichever runs first), then the kinds alternate
``--repeats`` times and the median is reported.  The PyMongo-based source is the
straightforward design: its ``latestOffset`` reads the full events to find the batch's end,
its ``read`` yields one tuple per event, one partition per micro-batch.  Ours reads ahead
tokens only, builds Arrow batches, and with ``keyPartitions=K`` splits a batch's events over
K partitions (both figures are printed).

``--latency 2000,10000`` measures lag instead (``pipeline_latency.py``): a writer in a process
of its own inserts at a steady rate for ``--seconds`` into the simulator (also a process of its
own) while both sources run side by side in one session, from the same start token, each into
its own Parquet folder through Spark's file sink (``processingTime`` trigger of
``--trigger-seconds``); each event's lag is the commit of its micro-batch (the modification time
of the batch's entry in the sink's ``_spark_metadata`` log) minus its ``wallTime``.  p50, p99 and max for the warm-up (events of the first ``--warmup-seconds``) and
the steady state, the rate each source kept, the backlog when the writer stopped, and the
resident memory of the driver, the JVM, Spark's Python processes and the simulator, sampled
over the run.  In this mode only, the PyMongo-based source's ``latestOffset`` stops at the
first event written after it was called and after ``--reference-cap`` events (without a cap it
reads until an empty getMore, which never comes while the writer writes).  ``--sources`` runs
one of them alone (a long run of ours for memory).  ``--master URL`` runs the queries on that
Spark master instead of ``local[2]`` (a standalone cluster, say).

Everything runs against the same simulated replica set (a pure-Python server in this
process, so absolute figures are the simulator's; the ratios are what to compare).  Needs the
spark extra, PyMongo, and pymongoarrow for its column (left out when absent).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import pyarrow as pa  # type: ignore[import-untyped]  # noqa: E402
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition  # noqa: E402

# The stream's columns, as mongo_sansio's event_schema spells them.
EVENT_COLUMNS = (
    "resumeToken string not null, operationType string not null, "
    "clusterTime struct<t: bigint, i: bigint>, wallTime timestamp, database string, "
    "collection string, documentKey string, fullDocument string, "
    "fullDocumentBeforeChange string, updateDescription string, to string"
)


class PyMongoEvents(DataSource):
    """The straightforward source: PyMongo change streams, full events decoded to dicts and
    turned into rows one by one, one partition per micro-batch."""

    @classmethod
    def name(cls) -> str:
        return "pymongo_events"

    def schema(self) -> str:
        return EVENT_COLUMNS

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return PyMongoEventsReader(dict(self.options))


class PyMongoEventsReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.options = options

    def _collection(self) -> Any:
        import pymongo

        client: Any = pymongo.MongoClient(self.options["uri"], tz_aware=True)
        return client, client[self.options["database"]][self.options["collection"]]

    def initialOffset(self) -> dict[str, Any]:
        return {"token": self.options["start"]}

    def latestOffset(self, start: dict[str, Any], limit: Any) -> dict[str, Any]:
        """Read the events after ``start`` until a getMore comes back empty.  Two caps for the
        latency mode only (off by default): ``readUntilNow`` stops at the first event written
        after this call, ``maxEvents`` after that many events."""
        called = time.time()
        until_now = self.options.get("readuntilnow") == "true"  # (Spark lowercases option names)
        cap = int(self.options.get("maxevents", "0"))
        client, collection = self._collection()
        last, read = start["token"], 0
        with client, collection.watch(start_after={"_data": last}, max_await_time_ms=300) as stream:
            while True:
                event = stream.try_next()
                if event is None or (until_now and event["wallTime"].timestamp() >= called):
                    break
                last, read = event["_id"]["_data"], read + 1
                if read == cap:
                    break
        return {"token": last}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        return [] if start == end else [InputPartition((start["token"], end["token"]))]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        from bson import json_util

        def text(value: Any) -> str | None:
            return None if value is None else json_util.dumps(value)

        start, end = partition.value
        client, collection = self._collection()
        with client, collection.watch(start_after={"_data": start}, max_await_time_ms=300) as stream:
            for event in stream:
                token = event["_id"]["_data"]
                if token > end:
                    return
                ts, ns, to = event.get("clusterTime"), event.get("ns") or {}, event.get("to")
                yield (
                    token, event["operationType"],
                    {"t": ts.time, "i": ts.inc} if ts is not None else None, event.get("wallTime"),
                    ns.get("db"), ns.get("coll"),
                    text(event.get("documentKey")), text(event.get("fullDocument")),
                    text(event.get("fullDocumentBeforeChange")), text(event.get("updateDescription")),
                    f"{to['db']}.{to['coll']}" if to else None,
                )
                if token == end:
                    return


def compile_mongo_sansio() -> None:
    """Byte-compile mongo_sansio's modules, as pip does when it installs a package.

    Spark starts a new Python process for each streaming query's source (its streaming
    runner), which imports the source's client afresh.  PyMongo comes installed with its
    bytecode; a mongo_sansio checkout installed in editable mode gets its bytecode on first
    import, unless PYTHONDONTWRITEBYTECODE is set (as on the machines this was measured on),
    and then every such process compiles every module it imports again (about 0.2 s of CPU
    per query here): a cost of the checkout, not of the library, which this removes."""
    import compileall
    import importlib.util

    # (adapters/ and transports/ are top-level folders of the checkout, mapped into the package)
    for name in ("mongo_sansio", "mongo_sansio.adapters", "mongo_sansio.transports"):
        spec = importlib.util.find_spec(name)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            compileall.compile_dir(folder, quiet=1)


def _spark(master: str = "local[2]") -> Any:
    from pyspark.sql import SparkSession

    from mongo_sansio.adapters.spark import MongoDataSource

    spark = (
        SparkSession.builder.master(master).config("spark.ui.enabled", "false")
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
    rows = spark.read.parquet(f"{folder}/out")
    count, distinct = rows.count(), rows.select("resumeToken").distinct().count()
    if count != expected or distinct != expected:
        raise SystemExit(f"{source}: expected {expected} events, wrote {count} ({distinct} distinct)")
    return seconds


def _alternate(runs: dict[str, Callable[[], float]], repeats: int) -> dict[str, float]:
    """Each run once untimed, then all of them in turn ``repeats`` times: the median."""
    for run in runs.values():
        run()
    figures: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            figures[name].append(run())
    return {name: statistics.median(values) for name, values in figures.items()}


def cdc(
    spark: Any, uri: str, backlogs: list[int], key_partitions: list[int], repeats: int
) -> dict[int, dict[str, float]]:
    """The median seconds of each query kind, for each backlog: every query streams from the
    same start token, so a larger backlog's queries read the smaller one's events and more
    (its events are inserted once the smaller backlog's queries are done)."""
    from mongo_sansio.adapters.blocking import MongoClient
    from mongo_sansio.adapters.spark.options import parse_options
    from mongo_sansio.adapters.spark.stream import fix_initial_offset

    base = {"uri": uri, "database": "bench", "collection": "events"}
    start = fix_initial_offset(parse_options({**base, "startAt": "latest"}))
    token = start.token or ""
    inserted = 0
    seconds: dict[int, dict[str, float]] = {}
    for events in sorted(backlogs):
        with MongoClient(uri) as client:
            docs = [{"_id": n, "name": f"user {n}", "tags": ["a", "b"], "score": n * 1.5,
                     "address": {"city": "Lyon", "zip": str(69000 + n % 100)}}
                    for n in range(inserted, events)]
            for offset in range(0, len(docs), 1000):
                client.bench.events.insert_many(docs[offset:offset + 1000])
        inserted = events

        def query(source: str, options: dict[str, str], events: int = events) -> Callable[[], float]:
            return lambda: _stream_seconds(spark, source, options, events)

        runs = {
            f"mongo_sansio keyPartitions={k}": query(
                "mongo_sansio", {**base, "startAt": token, "keyPartitions": str(k)}
            )
            for k in key_partitions
        }
        runs["PyMongo source"] = query("pymongo_events", {**base, "start": token})
        seconds[events] = _alternate(runs, repeats)
    return seconds


def sustained(seconds: dict[int, dict[str, float]]) -> dict[str, float]:
    """Each query kind's sustained rate: the extra events of the largest backlog over the
    smallest, divided by the extra seconds they took.  A query's fixed cost (Spark starting
    its streaming runner, launching the read task, committing the batch: about 1.1 s here,
    which both sources pay) cancels out, leaving the rate a long-running stream keeps."""
    small, large = min(seconds), max(seconds)
    rates = {}
    for name in seconds[large]:
        extra = seconds[large][name] - seconds[small][name]
        if extra <= 0:
            raise SystemExit(f"{name}: {large} events took no longer than {small}; the backlogs "
                             "are too close for a sustained rate (widen them, or add --repeats)")
        rates[name] = (large - small) / extra
    return rates


def batch(spark: Any, uri: str, documents: int, repeats: int) -> dict[str, float]:
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

    def timed(read: Callable[[], Any]) -> Callable[[], float]:
        def run() -> float:
            started = time.perf_counter()
            table = read()
            seconds = time.perf_counter() - started
            if table.num_rows != documents:
                raise SystemExit(f"batch read: expected {documents} rows, got {table.num_rows}")
            return documents / seconds
        return run

    def ours() -> Any:
        with MongoClient(uri) as client:
            return pa.Table.from_batches(list(batches(client.bench.docs.find(), schema)))

    def theirs() -> Any:
        client: Any
        with pymongo.MongoClient(uri) as client:
            return pa.Table.from_pylist(list(client.bench.docs.find()))

    runs = {"ours (Arrow)": timed(ours), "pymongo (from_pylist)": timed(theirs)}
    try:
        from pymongoarrow.api import find_arrow_all  # type: ignore[import-untyped]
    except ImportError:
        print("pymongoarrow is not installed: its column is left out", file=sys.stderr)
    else:
        def arrow() -> Any:
            client: Any
            with pymongo.MongoClient(uri) as client:
                return find_arrow_all(client.bench.docs, {})
        runs["pymongoarrow"] = timed(arrow)

    def through_spark() -> Any:
        return pa.table({"n": [0] * (spark.read.format("mongo_sansio").option("uri", uri)
                                     .option("database", "bench").option("collection", "docs")
                                     .option("partitions", "2").load().count())})
    runs["ours through Spark (count)"] = timed(through_spark)
    return _alternate(runs, repeats)


def _print_rates(rates: dict[str, float], unit: str, base: str = "PyMongo source") -> None:
    for name, rate in rates.items():
        print(f"  {name:<28} {rate:>9.0f} {unit}  {rate / rates[base]:5.2f}x {base}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--events", default="20000,100000",
        help="comma-separated backlogs of insert events; with two or more, the sustained rate "
        "between the smallest and the largest is printed too",
    )
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--key-partitions", default="1,2", help="comma-separated K values for ours")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each (median reported)")
    parser.add_argument("--skip", choices=("cdc", "batch"), help="leave one comparison out")
    parser.add_argument("--latency", default=None, metavar="RATES",
                        help="comma-separated writer rates (events/s): measure lag instead")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the writer writes")
    parser.add_argument("--trigger-seconds", type=float, default=1.0)
    parser.add_argument("--warmup-seconds", type=float, default=15.0,
                        help="events written in these first seconds are the warm-up")
    parser.add_argument("--sources", choices=("both", "ours", "reference"), default="both")
    parser.add_argument("--reference-cap", type=int, default=None,
                        help="the reference's read-ahead cap in events (default 10 triggers' worth)")
    parser.add_argument("--sample-seconds", type=float, default=2.0, help="memory sampling period")
    parser.add_argument("--json", default=None, help="also write the latency figures to this file")
    parser.add_argument("--master", default="local[2]", help="the Spark master of the queries")
    parser.add_argument("--standalone", type=int, default=0, metavar="WORKERS",
                        help="start a standalone cluster of this many one-core workers on loopback "
                        "(pyspark's bin/spark-class) and run the queries on it (overrides --master)")
    args = parser.parse_args()
    if args.standalone:
        from mongo_sansio.adapters.spark.standalone import standalone_cluster

        with standalone_cluster(workers=args.standalone, cores=1) as url:
            print(f"standalone cluster: {url}, {args.standalone} one-core workers", flush=True)
            args.master = url
            run(args)
    else:
        run(args)


def run(args: argparse.Namespace) -> None:
    from mongo_sansio.adapters.sim import SimulatedReplicaSet

    compile_mongo_sansio()
    spark = _spark(args.master)
    results: dict[str, Any] = {}
    if args.latency:
        import pipeline_latency

        sources = {"both": ("mongo_sansio", "PyMongo source"), "ours": ("mongo_sansio",),
                   "reference": ("PyMongo source",)}[args.sources]
        for rate in (int(r) for r in args.latency.split(",")):
            figures = results[f"latency {rate}"] = pipeline_latency.run(
                spark, rate, args.seconds, args.trigger_seconds, warmup=args.warmup_seconds,
                sources=sources, sample_every=args.sample_seconds, reference_cap=args.reference_cap,
            )
            pipeline_latency.print_figures(figures)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as file:
                json.dump(results, file)
        spark.stop()
        return
    # room for a run's events and then some: a stream must not outlive its start point
    backlogs = sorted({int(n) for n in args.events.split(",")})
    oplog = max(100_000, 2 * backlogs[-1] + 10_000)
    with SimulatedReplicaSet(members=3, oplog_entries=oplog) as rs:
        if args.skip != "cdc":
            ks = [int(k) for k in args.key_partitions.split(",")]
            seconds = cdc(spark, rs.uri, backlogs, ks, args.repeats)
            results["cdc"] = {str(n): {name: n / s for name, s in kinds.items()}
                              for n, kinds in seconds.items()}
            for events, kinds in seconds.items():
                print(f"CDC into Parquet, {events} insert events, whole query, median of {args.repeats}:")
                _print_rates({name: events / s for name, s in kinds.items()}, "events/s")
            if len(backlogs) > 1:
                rates = results["cdc sustained"] = sustained(seconds)
                print(f"CDC into Parquet, sustained ({backlogs[-1]} - {backlogs[0]} events over the "
                      "difference of their medians; the fixed cost of a query cancels):")
                _print_rates(rates, "events/s")
        if args.skip != "batch":
            figures = results["batch"] = batch(spark, rs.uri, args.documents, args.repeats)
            print(f"Batch read of {args.documents} documents into Arrow, median of {args.repeats}:")
            _print_rates(figures, "docs/s", base="pymongo (from_pylist)")
    print(json.dumps(results))
    spark.stop()


if __name__ == "__main__":
    main()
