"""Spark tests: a local session shared by each module (it takes seconds to start), the
simulated replica set per test.  Each module starts with
``pytest.importorskip("pyspark", reason=SKIP_REASON)``: one skip line when pyspark is absent."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from mongo_sansio.adapters.sim import SimulatedReplicaSet

SKIP_REASON = "pyspark is not installed (pip install -e '.[spark]')"


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from mongo_sansio.adapters.spark import MongoDataSource

    session = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    session.dataSource.register(MongoDataSource)
    yield session
    session.stop()


@pytest.fixture
def rs() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=3) as replica_set:
        yield replica_set
