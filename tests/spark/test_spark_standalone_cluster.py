"""The data source on a standalone Spark cluster: a master and two one-core workers started from
pyspark's own ``bin/spark-class`` on loopback (each in its own JVM, the driver elsewhere), shared
by the module and torn down after it.  A partitioned batch read and an idempotent write run from
a driver in this process; then ``mongo-sansio pipeline --master spark://...`` streams change
events into Parquet exactly once from a driver process of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
from test_spark_pipeline_cli import _committed_files  # noqa: E402

from mongo_sansio.adapters.blocking import MongoClient  # noqa: E402
from mongo_sansio.adapters.sim import SimulatedReplicaSet  # noqa: E402


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from mongo_sansio.adapters.spark.standalone import StandaloneClusterError, standalone_cluster

    try:
        with standalone_cluster(workers=2, cores=1, folder=tmp_path_factory.mktemp("standalone")) as url:
            yield url
    except StandaloneClusterError as error:
        pytest.fail(f"the standalone cluster did not start: {error}")


@pytest.fixture
def rs() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=3) as replica_set:
        yield replica_set


def test_batch_read_and_idempotent_write_on_the_cluster(cluster: str, rs: SimulatedReplicaSet) -> None:
    from pyspark.sql import SparkSession

    from mongo_sansio.adapters.spark import MongoDataSource

    documents = [
        {"_id": n, "name": f"n{n}", "qty": n % 17, "price": n / 4, "tags": ["a", str(n % 3)]}
        for n in range(6000)
    ]
    with MongoClient(rs.uri) as client:
        client.db.items.insert_many(documents)
    session = (
        SparkSession.builder.master(cluster).appName("mongo-sansio standalone test")
        .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
        .config("spark.executor.memory", "512m").getOrCreate()
    )
    try:
        session.sparkContext.setLogLevel("ERROR")
        session.dataSource.register(MongoDataSource)
        frame = (
            session.read.format("mongo_sansio").option("uri", rs.uri).option("database", "db")
            .option("collection", "items").option("partitions", "6").load()
        )
        assert frame.rdd.getNumPartitions() == 6
        ids = [row["_id"] for row in frame.select("_id").collect()]
        assert sorted(ids) == list(range(6000))  # every document exactly once
        assert frame.groupBy().sum("qty").collect()[0][0] == sum(d["qty"] for d in documents)
        totals = frame.groupBy("qty").count().withColumnRenamed("count", "n")
        for _ in range(2):  # a rerun writes nothing twice
            (totals.write.format("mongo_sansio").mode("append").option("uri", rs.uri)
             .option("database", "db").option("collection", "totals").option("idFields", "qty")
             .save())
        with MongoClient(rs.uri) as client:
            stored = {doc["qty"]: doc["n"] for doc in client.db.totals.find()}
        assert stored == dict(Counter(d["qty"] for d in documents))
    finally:
        session.stop()


def test_pipeline_with_master_streams_every_event_once(
    cluster: str, rs: SimulatedReplicaSet, tmp_path: Path
) -> None:
    with MongoClient(rs.uri) as client:
        client.db.events.insert_one({"_id": "before"})
        start = client.admin.command("ping")["operationTime"]
        written = []
        for n in range(1500):
            client.db.events.insert_one({"_id": n, "k": n % 5})
            written.append(("insert", n))
            if n % 4 == 0:
                client.db.events.update_one({"_id": n}, {"$set": {"k": -1}})
                written.append(("update", n))
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    finished = subprocess.run(
        [sys.executable, "-m", "mongo_sansio.adapters.cli", "pipeline", rs.uri, "--ns", "db.events",
         "--out", str(out), "--checkpoint", str(checkpoint), "--available-now",
         "--start-at", f"{start.time}:{start.inc + 1}", "--key-partitions", "2",
         "--max-events-per-batch", "800", "--master", cluster,
         "--conf", "spark.executor.memory=512m", "--conf", "spark.cores.max=2"],
        capture_output=True, text=True, timeout=300,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    import pyarrow.parquet as pq

    rows = [row for path in _committed_files(str(out)) for row in pq.read_table(path).to_pylist()]
    assert max(Counter(row["resumeToken"] for row in rows).values()) == 1
    got = Counter((row["operationType"], json.loads(row["documentKey"])["_id"]) for row in rows)
    assert got == Counter(written)
