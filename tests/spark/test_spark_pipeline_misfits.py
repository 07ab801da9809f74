"""``mongo-sansio pipeline`` with typed documents (``--option publishFullDocumentOnly=true``
and a ``--schema``) under PERMISSIVE and DROPMALFORMED: the rows written are what the mode
gives, and the progress lines count the documents marked or dropped, batch by batch."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest

from mongo_sansio.adapters.blocking import MongoClient
from mongo_sansio.adapters.sim import SimulatedReplicaSet

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")


@pytest.fixture(scope="module")
def rs() -> Any:
    with SimulatedReplicaSet(members=1) as deployment:
        yield deployment


@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
def test_the_progress_lines_count_the_misfits(rs: SimulatedReplicaSet, tmp_path: Any, mode: str) -> None:
    collection = f"items_{mode.lower()}"
    with MongoClient(rs.uri) as client:
        start = client.admin.command("ping")["operationTime"]
        # every seventh quantity is text: it does not fit the INT column
        client.db[collection].insert_many(
            [{"_id": n, "qty": "many" if n % 7 == 0 else n} for n in range(1, 36)]
        )
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    finished = subprocess.run(
        [sys.executable, "-m", "mongo_sansio.adapters.cli", "pipeline", rs.uri,
         "--ns", f"db.{collection}", "--out", out, "--checkpoint", checkpoint,
         "--available-now", "--max-events-per-batch", "10",
         "--start-at", f"{start.time}:{start.inc + 1}",
         "--option", "publishFullDocumentOnly=true", "--option", f"mode={mode}",
         "--schema", "_id INT, qty INT"],
        capture_output=True, text=True, timeout=240,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
    word = "marked" if mode == "PERMISSIVE" else "dropped"
    counted = [int(n) for n in re.findall(rf", (\d+) {word}$", finished.stdout, re.M)]
    assert len(counted) >= 4, finished.stdout  # one per micro-batch of at most 10 events
    assert sum(counted) == 5, finished.stdout
    import pyarrow.parquet as pq

    rows = [
        row for name in sorted(os.listdir(out)) if name.endswith(".parquet")
        for row in pq.read_table(os.path.join(out, name)).to_pylist()
    ]
    assert all(set(row) == {"_id", "qty"} for row in rows)  # the given schema, nothing added
    if mode == "PERMISSIVE":
        assert sorted(row["_id"] for row in rows) == list(range(1, 36))
        assert sorted(row["_id"] for row in rows if row["qty"] is None) == [7, 14, 21, 28, 35]
    else:
        assert sorted(row["_id"] for row in rows) == [n for n in range(1, 36) if n % 7]
        assert all(row["qty"] == row["_id"] for row in rows)
