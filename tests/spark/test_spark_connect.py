"""The data source from a Spark Connect client: pyspark's own connect server started with
``sbin/start-connect-server.sh`` on loopback (a local[2] Spark of its own, in its own JVM),
shared by the module and stopped after it; the client session
(``SparkSession.builder.remote("sc://...")``) registers the source and runs a batch read, a
write and a change stream exactly once into Parquet."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
pytest.importorskip("grpc", reason="the Spark Connect client is not installed (pyspark[connect])")

from mongo_sansio.adapters.blocking import MongoClient  # noqa: E402
from mongo_sansio.adapters.sim import SimulatedReplicaSet  # noqa: E402
from mongo_sansio.adapters.spark.standalone import free_port  # noqa: E402

START_SECONDS = 120


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from pyspark.find_spark_home import _find_spark_home

    home = _find_spark_home()
    folder = tmp_path_factory.mktemp("connect")
    port = free_port()
    env = {**os.environ, "SPARK_HOME": home, "SPARK_LOG_DIR": str(folder), "SPARK_PID_DIR": str(folder),
           "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "SPARK_IDENT_STRING": f"mongo-sansio-{port}"}
    subprocess.run(
        ["bash", os.path.join(home, "sbin", "start-connect-server.sh"), "--master", "local[2]",
         "--conf", f"spark.connect.grpc.binding.port={port}",
         "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
         "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2"],
        env=env, check=True, capture_output=True, timeout=60,
    )
    try:
        deadline = time.monotonic() + START_SECONDS
        while not _listening(port):
            if time.monotonic() > deadline:
                logs = {p.name: p.read_text()[-2000:] for p in folder.glob("*.out")}
                pytest.fail(f"the Spark Connect server did not start: {logs}")
            time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        subprocess.run(["bash", os.path.join(home, "sbin", "stop-connect-server.sh")],
                       env=env, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def remote(connect_url: str) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    from mongo_sansio.adapters.spark import MongoDataSource

    # pyspark marks the process as a Connect client (SPARK_CONNECT_MODE_ENABLED) when it makes a
    # remote session; the other modules' classic sessions need that mark gone afterwards
    before = os.environ.get("SPARK_CONNECT_MODE_ENABLED")
    session = SparkSession.builder.remote(connect_url).getOrCreate()
    try:
        session.dataSource.register(MongoDataSource)
        yield session
    finally:
        session.stop()
        if before is None:
            os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
        else:
            os.environ["SPARK_CONNECT_MODE_ENABLED"] = before


@pytest.fixture
def rs() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=3) as replica_set:
        yield replica_set


def test_batch_read_and_write_from_a_connect_client(remote: Any, rs: SimulatedReplicaSet) -> None:
    with MongoClient(rs.uri) as client:
        client.db.items.insert_many([{"_id": n, "q": n % 3, "name": f"n{n}"} for n in range(900)])
    frame = (
        remote.read.format("mongo_sansio").option("uri", rs.uri).option("database", "db")
        .option("collection", "items").option("partitions", "3").load()
    )
    assert frame.count() == 900
    counts = {row["q"]: row["count"] for row in frame.groupBy("q").count().collect()}
    assert counts == {0: 300, 1: 300, 2: 300}
    (frame.groupBy("q").count().write.format("mongo_sansio").mode("append").option("uri", rs.uri)
     .option("database", "db").option("collection", "totals").option("idFields", "q").save())
    with MongoClient(rs.uri) as client:
        assert {d["q"]: d["count"] for d in client.db.totals.find()} == counts


def test_a_change_stream_exactly_once_from_a_connect_client(
    remote: Any, rs: SimulatedReplicaSet, tmp_path: Path
) -> None:
    with MongoClient(rs.uri) as client:
        client.db.events.insert_one({"_id": "before"})
        start = client.admin.command("ping")["operationTime"]
        written = Counter()
        for n in range(300):
            client.db.events.insert_one({"_id": n})
            written[("insert", n)] += 1
            if n % 3 == 0:
                client.db.events.delete_one({"_id": n})
                written[("delete", n)] += 1
    frame = (
        remote.readStream.format("mongo_sansio").option("uri", rs.uri).option("database", "db")
        .option("collection", "events").option("startAt", f"{start.time}:{start.inc + 1}")
        .option("keyPartitions", "2").option("maxEventsPerBatch", "150").load()
    )
    out = tmp_path / "out"
    query = (
        frame.writeStream.format("parquet").option("path", str(out))
        .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start()
    )
    query.awaitTermination(180)
    assert query.exception() is None
    rows = remote.read.parquet(str(out)).select("resumeToken", "operationType", "documentKey").collect()
    assert max(Counter(row["resumeToken"] for row in rows).values()) == 1
    got = Counter((row["operationType"], json.loads(row["documentKey"])["_id"]) for row in rows)
    assert got == written
