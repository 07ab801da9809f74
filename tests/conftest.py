"""Test-wide settings.

CI sets ``MONGO_SANSIO_CI=1`` (``.ci/run``): hypothesis then derandomizes, so that a landing is
judged on the same examples every run. Exploration happens everywhere else -- local runs draw
fresh examples each time, and the fuzz targets (``fuzz/``, ``docs/fuzzing.md``) run for hours --
and what they find becomes an explicit regression test.

The CI profile also lifts the "input generation is slow" health check: on a loaded two-core
runner the first draw of a text strategy (hypothesis building its character tables) can take
over a second, which says nothing about the code under test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
if os.environ.get("MONGO_SANSIO_CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="module")
def sc() -> Iterator[Any]:
    """A simulated sharded cluster (two mongos over two three-member shards) for the module:
    starting one per test would cost seconds each; tests use collections of their own.
    (Imported here, not at the top: the gevent tests patch before anything opens sockets.)"""
    from mongo_sansio.adapters.sim import SimulatedShardedCluster

    with SimulatedShardedCluster(shards=2, mongos=2, members=3) as cluster:
        yield cluster
