"""``mongo-sansio pipeline [URI]``: a Spark structured-streaming query from a change stream
into Parquet (or JSON) files, exactly once.

The query reads ``--ns`` through the ``mongo_sansio`` data source
(:mod:`mongo_sansio.adapters.spark`) and writes with Spark's file sink, whose checkpoint
(``--checkpoint``) records each micro-batch's resume-token offsets and which files it
committed.  The command fixes the stream's initial offset beside the checkpoint before the
query starts and prints ``started: <resume token>``; then one progress line per micro-batch
(events, rate, last cluster time, lag).  It runs until SIGINT or SIGTERM (it stops the query
and exits 0), or with ``--available-now`` until what is in the stream now has been written.
Restarted with the same checkpoint after any crash, SIGKILL mid-batch included, the output
holds every event exactly once.

Without a URI it starts the simulated replica set, runs a demo workload, streams the demo's
events into ``--out`` (a temporary folder by default), prints a summary and exits.
"""

from __future__ import annotations

import argparse
import datetime
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

DEMO_NAMESPACE = "demo.orders"
_LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def add_pipeline_parser(commands: Any) -> None:
    """Register ``pipeline`` on the CLI's subcommand parser."""
    pipeline = commands.add_parser(
        "pipeline", help="stream a change stream into Parquet/JSON files with Spark, exactly once"
    )
    pipeline.add_argument(
        "uri", nargs="?", default=None,
        help="the deployment; without one, a simulated replica set and a demo workload",
    )
    pipeline.add_argument(
        "--ns", default=None,
        help=f"DB.COLL to stream (demo: {DEMO_NAMESPACE}); DB.A,B for several collections, "
        "'DB.*' for a whole database, '*' for the whole deployment (the output is then "
        "partitioned by database and collection)",
    )
    pipeline.add_argument("--out", default=None, help="the output folder (demo: a temporary one)")
    pipeline.add_argument(
        "--checkpoint", default=None, help="the checkpoint folder (demo: inside --out's parent)"
    )
    pipeline.add_argument("--format", choices=["parquet", "json"], default="parquet")
    pipeline.add_argument("--key-partitions", type=int, default=1, metavar="K")
    pipeline.add_argument("--max-events-per-batch", type=int, default=None, metavar="N")
    pipeline.add_argument(
        "--start-at", default="latest",
        help="latest, an operation time (seconds[:increment]) or a resume token",
    )
    pipeline.add_argument(
        "--available-now", action="store_true", help="process what is there now, then exit"
    )
    pipeline.add_argument(
        "--trigger-seconds", type=float, default=1.0, help="how often a micro-batch starts"
    )
    pipeline.add_argument(
        "--full-document", default=None, choices=["updateLookup", "whenAvailable", "required"],
    )
    pipeline.add_argument(
        "--master", default="local[*]",
        help="the Spark master URL (spark://host:7077, yarn, k8s://..., local[N]); the "
        "executors' Python must have mongo-sansio installed",
    )
    pipeline.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", type=_spark_conf,
        help="a Spark setting passed to the session (repeatable), as spark-submit's --conf",
    )
    pipeline.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE", type=_key_value,
        help="a data source option (repeatable), e.g. publishFullDocumentOnly=true, "
        "mode=PERMISSIVE, comment=cdc (docs/spark.md lists them)",
    )
    pipeline.add_argument(
        "--schema", default=None, metavar="DDL",
        help="the rows' schema for typed documents (publishFullDocumentOnly), e.g. "
        "'_id INT, qty INT'; inferred from the collection when absent",
    )
    pipeline.set_defaults(run=run_pipeline)


#: source options the pipeline sets itself from its arguments
_OWN_OPTIONS = frozenset({"uri", "database", "collection", "checkpointlocation"})


def _key_value(text: str) -> tuple[str, str]:
    """One ``--option KEY=VALUE``; argparse turns the ValueError into a usage error."""
    key, equals, value = text.partition("=")
    if not equals or not key.strip():
        raise ValueError(f"--option takes KEY=VALUE, not {text!r}")
    if key.strip().lower() in _OWN_OPTIONS:
        raise ValueError(f"--option {key.strip()}: give it as the pipeline's own argument")
    return key.strip(), value


def _spark_conf(text: str) -> tuple[str, str]:
    """One ``--conf KEY=VALUE``; argparse turns the ValueError into a usage error."""
    key, equals, value = text.partition("=")
    if not equals or not key.strip():
        raise ValueError(f"--conf takes KEY=VALUE, not {text!r}")
    return key.strip(), value


def session_settings(args: argparse.Namespace, log4j: str) -> tuple[str, dict[str, str]]:
    """The master and the settings of the pipeline's Spark session: ours first, then the
    user's ``--conf`` pairs, which win."""
    settings = {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log4j}",
        "spark.ui.showConsoleProgress": "false",
    }
    settings.update(dict(args.conf))
    return args.master, settings


def run_pipeline(args: argparse.Namespace) -> int:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        print("mongo-sansio pipeline needs Spark: pip install 'mongo-sansio[spark]'", file=sys.stderr)
        return 2
    if args.uri is not None and (args.ns is None or args.out is None or args.checkpoint is None):
        print("mongo-sansio pipeline: with a URI, give --ns DB.COLL, --out DIR and --checkpoint DIR",
              file=sys.stderr)
        return 2
    if args.ns is not None and args.ns != "*" and "." not in args.ns:
        print("mongo-sansio pipeline: --ns is DB.COLL, DB.A,B, 'DB.*' or '*'", file=sys.stderr)
        return 2
    from .spark.errors import MongoDataSourceError

    try:
        return _demo(args) if args.uri is None else _run(args, args.uri)
    except MongoDataSourceError as error:
        print(f"mongo-sansio pipeline: {error}", file=sys.stderr)
        return 1


def _session(stack: ExitStack, folder: str, args: argparse.Namespace) -> Any:
    """The pipeline's Spark session (``--master``, local by default) with quiet logs, its
    Python workers on this interpreter unless PYSPARK_PYTHON says otherwise."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    log4j = os.path.join(folder, "log4j2.properties")
    with open(log4j, "w", encoding="utf-8") as handle:
        handle.write(_LOG4J)
    from pyspark.sql import SparkSession

    from .spark import MongoDataSource

    master, settings = session_settings(args, log4j)
    builder = SparkSession.builder.master(master).appName("mongo-sansio pipeline")
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    stack.callback(spark.stop)
    spark.dataSource.register(MongoDataSource)
    return spark


def several_namespaces(namespace: str) -> bool:
    """Whether ``--ns`` names more than one collection (its output is partitioned by them)."""
    return namespace == "*" or namespace.endswith(".*") or "," in namespace


def _source_options(args: argparse.Namespace, uri: str, namespace: str, checkpoint: str) -> dict[str, str]:
    database, _, collection = ("*", ".", "*") if namespace == "*" else namespace.partition(".")
    options = {
        "uri": uri, "database": database, "collection": collection,
        "checkpointLocation": checkpoint, "startAt": args.start_at,
        "keyPartitions": str(args.key_partitions),
    }
    if args.max_events_per_batch is not None:
        options["maxEventsPerBatch"] = str(args.max_events_per_batch)
    if args.full_document:
        options["fullDocument"] = args.full_document
    options.update(dict(getattr(args, "option", [])))
    return options


def _start(spark: Any, args: argparse.Namespace, options: dict[str, str], out: str, checkpoint: str, available_now: bool) -> Any:
    from .spark.options import parse_options
    from .spark.stream import fix_initial_offset

    parsed = parse_options(options)
    initial = fix_initial_offset(parsed)  # read back when already fixed
    print(f"started: {initial.token or initial.operation_time}", flush=True)
    misfits = _MisfitCount.needed(parsed)
    if misfits is not None:
        options = {**options, "mode": "PERMISSIVE"}  # every misfit marked, so it can be counted
    reader = spark.readStream.format("mongo_sansio")
    for key, value in options.items():
        reader = reader.option(key, value)
    schema = getattr(args, "schema", None)
    if schema is not None:
        reader = reader.schema(schema if misfits is None else misfits.schema_with_column(spark, schema))
    frame = reader.load()
    if misfits is not None:
        frame = misfits.counted(frame)
    writer = (
        frame.writeStream.format(args.format)
        .option("path", out).option("checkpointLocation", checkpoint)
    )
    if several_namespaces(f"{options['database']}.{options['collection']}"):
        writer = writer.partitionBy("database", "collection")
    if available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{int(args.trigger_seconds * 1000)} milliseconds")
    return writer.start()


class _MisfitCount:
    """Typed documents under PERMISSIVE or DROPMALFORMED, counted per micro-batch.

    A Python data source has no metrics channel from its executors, so the pipeline reads
    such a stream in PERMISSIVE mode (each misfit marked in the corrupt-record column), counts
    the marked rows with Spark's ``observe`` (the count arrives in the micro-batch's progress,
    under ``observedMetrics``), and for DROPMALFORMED leaves them out itself.  The corrupt
    column is added for the counting when the schema lacks it and removed again after, so
    the rows written are what the mode gives without the pipeline."""

    #: the observation's name by mode: also the progress line's word
    NAMES = ("marked", "dropped")

    def __init__(self, column: str, dropping: bool) -> None:
        self.column = column
        self.dropping = dropping
        self.name = self.NAMES[dropping]
        self.added = dropping  # an inferred schema has the column only under PERMISSIVE

    @classmethod
    def needed(cls, parsed: Any) -> _MisfitCount | None:
        from mongo_sansio.pipeline.parse_modes import ParseMode

        if not parsed.publish_full_document_only or parsed.mode is ParseMode.FAILFAST:
            return None
        return cls(parsed.corrupt_column, dropping=parsed.mode is ParseMode.DROPMALFORMED)

    def schema_with_column(self, spark: Any, ddl: str) -> Any:
        """The given schema, with the corrupt-record column when it lacks it."""
        from pyspark.sql.types import StringType

        given = spark.createDataFrame([], ddl).schema
        self.added = self.column not in given.fieldNames()
        return given.add(self.column, StringType()) if self.added else given

    def counted(self, frame: Any) -> Any:
        from pyspark.sql import functions

        marked = functions.col(self.column)
        frame = frame.observe(self.name, functions.count(marked).alias("n"))  # non-null ones
        if self.dropping:
            frame = frame.where(marked.isNull())
        return frame.drop(self.column) if self.added else frame


def _misfits(progress: Any) -> str | None:
    """What :class:`_MisfitCount` observed in one progress report, as ``"N dropped"`` or
    ``"N marked"`` (None: not counted)."""
    metrics = progress.get("observedMetrics") or {}
    for name in _MisfitCount.NAMES:
        row = metrics.get(name) if hasattr(metrics, "get") else None
        if row is not None:
            return f"{int(row['n'] or 0)} {name}"
    return None


def _progress_line(progress: dict[str, Any]) -> str:
    events = int(progress.get("numInputRows", 0))
    rate = float(progress.get("processedRowsPerSecond", 0.0) or 0.0)
    sources = progress.get("sources") or [{}]
    end = sources[0].get("endOffset")
    if isinstance(end, str):
        import json

        end = json.loads(end)
    cluster = (end or {}).get("clusterTime") if isinstance(end, dict) else None
    lag = "-"
    if cluster:
        seconds = int(str(cluster).split(".")[0])
        lag = f"{max(0.0, time.time() - seconds):.1f}s"
    when = "-"
    if cluster:
        when = datetime.datetime.fromtimestamp(int(str(cluster).split(".")[0]), datetime.UTC).strftime("%H:%M:%S")
    line = (f"batch {progress.get('batchId')}: {events} events, {rate:.0f} events/s, "
            f"last cluster time {cluster or '-'} ({when}), lag {lag}")
    misfits = _misfits(progress)
    if misfits is not None:
        line += f", {misfits}"
    return line


def _follow(query: Any, stop: threading.Event) -> int:
    """Print a line per micro-batch until the query ends or ``stop`` is set."""
    printed: set[int] = set()

    def report() -> None:
        for progress in query.recentProgress:
            batch = progress.get("batchId")
            if batch not in printed:
                printed.add(batch)
                print(_progress_line(progress), flush=True)

    while query.isActive and not stop.wait(0.25):
        report()
    if query.isActive:
        query.stop()
    report()
    failure = query.exception()
    if failure is not None:
        print(f"mongo-sansio pipeline: the query failed: {_essence(str(failure))}", file=sys.stderr)
        return 1
    return 0


def _essence(text: str) -> str:
    """The data source's own message out of Spark's wrapping, when there is one."""
    for marker in ("ChangeStreamHistoryLost:", "EndTokenNotReached", "MongoDataSourceError:"):
        if marker in text:
            start = text.index(marker)
            return text[start:].splitlines()[0]
    return text.strip().splitlines()[0] if text.strip() else text


@contextmanager
def _signals() -> Iterator[threading.Event]:
    stop = threading.Event()

    def request_stop(signum: int, _frame: object) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run(args: argparse.Namespace, uri: str) -> int:
    os.makedirs(args.checkpoint, exist_ok=True)
    with ExitStack() as stack, _signals() as stop:
        spark = _session(stack, args.checkpoint, args)
        options = _source_options(args, uri, args.ns, args.checkpoint)
        query = _start(spark, args, options, args.out, args.checkpoint, args.available_now)
        return _follow(query, stop)


# --- the demo --------------------------------------------------------------------------------


def _demo_workload(uri: str) -> dict[str, int]:
    """Inserts, updates, a replace, deletes and a transaction on demo.orders; what it did."""
    from .blocking import MongoClient

    items = ["tea", "cake", "jam", "scone", "honey"]
    with MongoClient(uri, pymongo_types=False) as client:  # (our values: see pymongo_values.py)
        orders = client["demo"]["orders"]
        orders.insert_many([{"_id": n, "item": items[n % 5], "qty": n % 7 + 1} for n in range(1, 401)])
        for n in range(1, 101):
            orders.update_one({"_id": n}, {"$inc": {"qty": 1}})
        orders.replace_one({"_id": 200}, {"item": "gift box", "qty": 1, "note": "wrapped"})
        orders.delete_many({"_id": {"$gt": 350}})
        with client.start_session() as session, session.start_transaction():
            orders.insert_one({"_id": 1000, "item": "tea", "qty": 12}, session=session)
            orders.update_one({"_id": 1}, {"$set": {"note": "rush"}}, session=session)
    return {"insert": 401, "update": 101, "replace": 1, "delete": 50}


def _demo(args: argparse.Namespace) -> int:
    from .sim import SimulatedReplicaSet

    namespace = args.ns or DEMO_NAMESPACE
    with ExitStack() as stack, _signals() as stop:
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="mongo-sansio-pipeline-"))
        out = args.out or os.path.join(tempfile.mkdtemp(prefix="mongo-sansio-demo-"), "events")
        checkpoint = args.checkpoint or os.path.join(folder, "checkpoint")
        os.makedirs(checkpoint, exist_ok=True)
        rs = stack.enter_context(SimulatedReplicaSet(members=3, replset="rs0"))
        print(f"# simulated replica set: {rs.uri}", flush=True)
        spark = _session(stack, folder, args)
        options = _source_options(args, rs.uri, namespace, checkpoint)
        if args.max_events_per_batch is None:
            options["maxEventsPerBatch"] = "200"
        from .spark.options import parse_options
        from .spark.stream import fix_initial_offset

        # Fixed before the workload starts, so the stream sees every one of its events.
        fix_initial_offset(parse_options(options))
        expected = _demo_workload(rs.uri)
        print(f"# demo workload done: {sum(expected.values())} changes on {namespace}", flush=True)
        query = _start(spark, args, options, out, checkpoint, available_now=True)
        status = _follow(query, stop)
        if status:
            return status
        table = spark.read.format(args.format).load(out)
        counts = {row["operationType"]: row["count"] for row in table.groupBy("operationType").count().collect()}
        total = sum(counts.values())
        print("summary:")
        for kind in sorted(counts):
            print(f"  {kind:<8} {counts[kind]:>6}")
        print(f"  rows written: {total} ({args.format}) in {out}")
        if counts != expected:
            print(f"mongo-sansio pipeline: expected {expected}, found {counts}", file=sys.stderr)
            return 1
        return 0
