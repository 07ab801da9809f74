"""Integration tests: PyMongo (the reference driver) against the simulated replica set served
on loopback. Every test runs under a hard watchdog, and every server is closed by a fixture."""

from __future__ import annotations

import faulthandler
from collections.abc import Iterator

import pytest

HARD_TIMEOUT_SECONDS = 45.0


@pytest.fixture(autouse=True)
def watchdog() -> Iterator[None]:
    """A hung test must not stall CI: dump every thread's stack and exit the run."""
    faulthandler.dump_traceback_later(HARD_TIMEOUT_SECONDS, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()
