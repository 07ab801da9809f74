"""benchmarks/pipeline_bench.py --latency runs end to end (a tiny rate, a few seconds): both
sources stream side by side, each commits every event the writer wrote exactly once, and the
figures are coherent.  Not a timed test: the lags themselves are not checked.  Also the lag
histogram's percentiles against sorted values."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
pytest.importorskip("pymongo", reason="the benchmark's reference source is PyMongo-based")

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_lag_percentiles_match_sorted_values() -> None:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from pipeline_latency import Lags
    finally:
        sys.path.remove(str(BENCHMARKS))
    rng = random.Random(7)
    values = [rng.uniform(0, 3) for _ in range(5000)] + [rng.uniform(130, 200) for _ in range(60)]
    lags = Lags()
    for value in values:
        lags.add(value)
    ordered = sorted(values)
    for fraction in (0.5, 0.9, 0.99, 0.999):
        expected = ordered[int(fraction * len(ordered))]
        assert abs(lags.percentile(fraction) - expected) <= 0.001, fraction
    assert lags.summary()["max"] == max(values) and lags.count == len(values)


def test_latency_mode_commits_every_event_of_both_sources(tmp_path: Path) -> None:
    out = tmp_path / "latency.json"
    command = [sys.executable, str(BENCHMARKS / "pipeline_bench.py"), "--latency", "200",
               "--seconds", "4", "--warmup-seconds", "1", "--trigger-seconds", "0.5",
               "--sample-seconds", "0.5", "--json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(out.read_text())["latency 200"]
    assert figures["written"] > 0
    assert set(figures["sources"]) == {"mongo_sansio", "PyMongo source"}
    for name, row in figures["sources"].items():
        assert row["committed"] == figures["written"], name
        phases = row["warm-up"], row["steady"]
        assert sum(phase["events"] for phase in phases) == figures["written"], name
        for phase in phases:
            if phase["events"]:
                assert 0 < phase["p50"] <= phase["p99"] <= phase["max"] + 0.001, (name, phase)
    assert figures["memory"] and all(sample["driver python"] > 0 for sample in figures["memory"])
    assert "steady (" in done.stdout
