"""``mongo-sansio pipeline`` killed with SIGKILL mid-stream (Spark's JVM and Python workers
with it) and restarted on the same checkpoint: the output holds every event written exactly
once, compared event by event (also with --key-partitions)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from typing import Any

import pytest

from mongo_sansio.adapters.blocking import MongoClient
from mongo_sansio.adapters.sim import SimulatedReplicaSet

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")


def _command(uri: str, out: str, checkpoint: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "mongo_sansio.adapters.cli", "pipeline", uri, "--ns", "db.events",
            "--out", out, "--checkpoint", checkpoint, "--trigger-seconds", "0.2", *extra]


def _wait_for(process: subprocess.Popen[str], predicate: Any, timeout: float) -> list[str]:
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if predicate(lines):
            return lines
    raise AssertionError(f"the pipeline did not get there; it printed {lines}")


@pytest.mark.parametrize("key_partitions", ["1", "2"])
def test_sigkill_mid_stream_then_restart_gives_every_event_once(
    rs: SimulatedReplicaSet, tmp_path: Any, key_partitions: str
) -> None:
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    first = subprocess.Popen(
        _command(rs.uri, out, checkpoint, "--key-partitions", key_partitions,
                 "--max-events-per-batch", "25"),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True,
    )
    written: list[tuple[str, int]] = []
    stop = threading.Event()

    def write() -> None:
        with MongoClient(rs.uri) as client:
            n = 0
            while not stop.is_set() and n < 400:
                client.db.events.insert_one({"_id": n})
                written.append(("insert", n))
                if n % 7 == 3:
                    client.db.events.update_one({"_id": n}, {"$set": {"seen": True}})
                    written.append(("update", n))
                n += 1
                time.sleep(0.002)

    try:
        _wait_for(first, lambda lines: any(line.startswith("started: ") for line in lines), 90)
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        # Let a few micro-batches commit, then kill everything mid-stream.
        _wait_for(first, lambda lines: sum(" 25 events" in line for line in lines) >= 2, 90)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(30)
        time.sleep(0.5)
        stop.set()
        writer.join(30)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
        stop.set()
    second = subprocess.run(
        _command(rs.uri, out, checkpoint, "--key-partitions", key_partitions, "--available-now",
                 "--max-events-per-batch", "400"),
        capture_output=True, text=True, timeout=180,
    )
    assert second.returncode == 0, second.stderr[-2000:]
    assert second.stdout.splitlines()[0] == first_started(checkpoint)
    import pyarrow.parquet as pq

    # Spark's file sink lists its committed files in _spark_metadata; files of the killed
    # batch that never committed are not part of the output.
    committed = _committed_files(out)
    rows = [row for path in committed for row in pq.read_table(path).to_pylist()]
    tokens = Counter(row["resumeToken"] for row in rows)
    assert max(tokens.values()) == 1
    got = Counter((row["operationType"], json.loads(row["documentKey"])["_id"]) for row in rows)
    assert got == Counter(written)
    assert len(written) > 75


def first_started(checkpoint: str) -> str:
    with open(os.path.join(checkpoint, "mongo_sansio_initial_offset.json"), encoding="utf-8") as handle:
        return f"started: {json.load(handle)['token']}"


def _committed_files(out: str) -> list[str]:
    """The files the sink committed (a compacted log file repeats the earlier ones)."""
    log = os.path.join(out, "_spark_metadata")
    files: dict[str, None] = {}
    for name in sorted(os.listdir(log), key=lambda n: int(n.split(".")[0]) if n.split(".")[0].isdigit() else -1):
        if not name.split(".")[0].isdigit():
            continue
        with open(os.path.join(log, name), encoding="utf-8") as handle:
            for line in handle.read().splitlines()[1:]:
                entry = json.loads(line)
                if entry.get("action", "add") == "add":
                    files[entry["path"].removeprefix("file:")] = None
    return list(files)


def test_a_whole_database_goes_to_folders_by_collection(rs: SimulatedReplicaSet, tmp_path: Any) -> None:
    """``--ns 'db.*'``: every collection of the database in one stream, the output partitioned
    by database and collection (Spark's ``database=db/collection=a`` folders)."""
    with MongoClient(rs.uri) as client:
        client.db.a.insert_one({"_id": "before"})
        start = client.admin.command("ping")["operationTime"]
        for n in range(30):
            client.db[["a", "b", "c"][n % 3]].insert_one({"_id": n})
        client.other.d.insert_one({"_id": "not in db"})
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    finished = subprocess.run(
        [sys.executable, "-m", "mongo_sansio.adapters.cli", "pipeline", rs.uri, "--ns", "db.*",
         "--out", out, "--checkpoint", checkpoint, "--available-now",
         "--start-at", f"{start.time}:{start.inc + 1}"],
        capture_output=True, text=True, timeout=180,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
    import pyarrow.parquet as pq

    by_folder: Counter[str] = Counter()
    for path in _committed_files(out):
        folder = os.path.relpath(os.path.dirname(path), out)
        by_folder[folder] += pq.read_table(path).num_rows
    assert by_folder == {
        os.path.join("database=db", f"collection={name}"): 10 for name in ("a", "b", "c")
    }
