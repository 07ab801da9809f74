"""benchmarks/client_bench.py runs end to end (tiny counts, one trial, the canned-reply server):
both clients complete every workload and the table is printed.  Not a timed test: the ratios
are not checked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pymongo", reason="the client benchmark compares against PyMongo")

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("MONGO_SANSIO_BENCH_DATA", REPO.parent / "shared" / "bench-data"))


@pytest.mark.skipif(not (DATA / "small_doc.json").exists(), reason=f"no bench data in {DATA}")
def test_client_bench_runs_every_workload() -> None:
    command = [sys.executable, str(REPO / "benchmarks" / "client_bench.py"), "--server", "canned",
               "--trials", "1", "--single", "3", "--many", "20", "--large", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.endswith(("ok", "MISS"))]
    assert len(rows) == 8, done.stdout
