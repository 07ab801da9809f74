"""Integration tests: our clients and PyMongo (the reference driver) against the simulated
replica set served on loopback. Every test runs under a hard watchdog, and every server is closed
by a fixture: ``rs`` is a three-member set, ``clients`` a list whose clients (ours or PyMongo's)
are closed before that server stops."""

from __future__ import annotations

import faulthandler
from collections.abc import Iterator
from typing import Any

import pytest

from mongo_sansio.adapters.sim import SimulatedReplicaSet

HARD_TIMEOUT_SECONDS = 45.0


@pytest.fixture(autouse=True)
def watchdog() -> Iterator[None]:
    """A hung test must not stall CI: dump every thread's stack and exit the run."""
    faulthandler.dump_traceback_later(HARD_TIMEOUT_SECONDS, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture
def rs() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=3) as replica_set:
        yield replica_set


@pytest.fixture
def clients() -> Iterator[list[Any]]:
    """Clients a test opens are appended here and closed before its server stops."""
    opened: list[Any] = []
    yield opened
    for client in opened:
        client.close()
