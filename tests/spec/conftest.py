"""Fixtures of the unified-format suites (every ``tests/spec`` module that runs
:func:`unified.run_case`): one pool of simulated deployments per module, for the module's
``DRIVER`` (its sharded cluster the session's, shared by every module), and a watchdog so that a test that hangs (a change stream waiting for ever, a
wait for an event that never comes) cannot stall the run.  A module opts in with
``pytestmark = pytest.mark.usefixtures("watchdog")`` and asks for ``deployments``."""

from __future__ import annotations

import faulthandler
from collections.abc import Iterator

import pytest
from unified import DeploymentPool, SharedSimulators

HARD_TIMEOUT_SECONDS = 60.0


@pytest.fixture(scope="session")
def shared_simulators() -> Iterator[SharedSimulators]:
    """The sharded clusters, started once per session (each takes a few seconds and every
    suite has a few cases that need one)."""
    shared = SharedSimulators()
    yield shared
    shared.close()


@pytest.fixture(scope="module")
def deployments(request: pytest.FixtureRequest, shared_simulators: SharedSimulators) -> Iterator[DeploymentPool]:
    with DeploymentPool(request.module.DRIVER, shared_simulators) as pool:
        yield pool


@pytest.fixture
def watchdog() -> Iterator[None]:
    faulthandler.dump_traceback_later(HARD_TIMEOUT_SECONDS, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()
