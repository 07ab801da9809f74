"""The unified suites on our client's other runtimes: asyncio and trio (``AsyncMongoClient``)
and gevent (its ``MongoClient``), one case per runtime and test, id ``runtime/suite/file:
description``.

Every suite runs on the blocking client in its own module; here a representative set runs on
each other runtime, to keep CI bounded (all suites on four runtimes would multiply its time):
CRUD, retryable writes, transactions, change streams, sessions, MONGODB-OIDC (auth), load
balancers (against the simulator's load balancer front), and command logging and monitoring.  Each client runs on a loop thread of its own behind the synchronous facade of
:mod:`unified.runtimes`; known gaps and skips are the blocking client's (same API code), so a
case whose outcome differs from the blocking module's is a runtime's bug.  A runtime whose
package is not installed is skipped, naming it.  Run one runtime's whole suites with
``MONGO_SANSIO_UNIFIED_DRIVER=sansio-trio`` (``-asyncio``, ``-gevent``) on any suite module.
"""

from __future__ import annotations

import contextvars
import threading
import time
from typing import Any

import pytest
from unified import DeploymentPool, Driver, run_case, sansio_driver, unified_cases
from unified.driver import RUNTIMES, runtime_driver, runtime_portal
from unified.suite import time_limit

#: a retry after a state-change error waits for the monitor's next check: 0.5 s, not 10 s
HEARTBEAT = {"heartbeatFrequencyMS": 500}
#: short name: (spec folders, client defaults), as the blocking suite modules run them
SUITES: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "crud": (("crud/tests/unified",), HEARTBEAT),
    "retryable-writes": (("retryable-writes/tests/unified",), HEARTBEAT),
    "transactions": (("transactions/tests/unified",), HEARTBEAT),
    "change-streams": (("change-streams/tests/unified",), HEARTBEAT),
    "sessions": (("sessions/tests",), HEARTBEAT),
    "auth": (("auth/tests/unified",), {}),
    "load-balancers": (("load-balancers/tests",), {}),
    "command-logging-and-monitoring": (
        (
            "command-logging-and-monitoring/tests/logging",
            "command-logging-and-monitoring/tests/monitoring",
        ),
        {},
    ),
}
DRIVER = sansio_driver()  # the deployments' own clients (the simulators are shared)
pytestmark = pytest.mark.usefixtures("watchdog")


def _drivers() -> dict[str, Driver | str]:
    """Each runtime's driver, or why it cannot run (its package is missing)."""
    drivers: dict[str, Driver | str] = {}
    for runtime in RUNTIMES:
        try:
            drivers[runtime] = runtime_driver(runtime)
        except ImportError as missing:
            drivers[runtime] = f"the {runtime} runtime cannot be imported: {missing}"
    return drivers


def _cases() -> list[Any]:
    params = []
    for runtime, driver in _drivers().items():
        if isinstance(driver, str):
            params.append(pytest.param(None, None, None, id=runtime, marks=pytest.mark.skip(reason=driver)))
            continue
        for suite, (folders, defaults) in SUITES.items():
            for folder in folders:
                sub = f"{folder.rsplit('/', 1)[-1]}/" if len(folders) > 1 else ""
                for case in unified_cases(folder, driver, prefix=f"{runtime}/{suite}/{sub}"):
                    params.append(
                        pytest.param(driver, defaults, *case.values, id=case.id, marks=case.marks)
                    )
    return params


@pytest.mark.spec
@pytest.mark.parametrize(("driver", "defaults", "case"), _cases())
def test_unified_runtimes(
    driver: Driver, defaults: dict[str, Any], case: Any, deployments: DeploymentPool
) -> None:
    run_case(case, deployments, driver, client_defaults=defaults)


# -- the facade's own promises (unified/runtimes.py), without a server --------------------------

CALLER_VALUE: contextvars.ContextVar[str] = contextvars.ContextVar("caller_value", default="unset")


def _sleeper(runtime: str, finished: threading.Event) -> Any:
    """A call that sleeps 30 s on ``runtime`` and sets ``finished`` however it ends."""
    if runtime == "gevent":
        gevent = pytest.importorskip("gevent")

        def sleep_blocking() -> None:
            try:
                gevent.sleep(30)
            finally:
                finished.set()

        return sleep_blocking
    library = pytest.importorskip(runtime)

    async def sleep() -> None:
        try:
            await library.sleep(30)
        finally:
            finished.set()

    return sleep


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_interrupted_call_is_cancelled_on_the_loop(runtime: str) -> None:
    """The runner's time limit interrupts the caller; the call on the loop ends with it
    (else a timed-out test would leave its operation running into the next one)."""
    finished = threading.Event()
    call = _sleeper(runtime, finished)
    portal = runtime_portal(runtime)
    started = time.monotonic()
    with pytest.raises(AssertionError, match="more than 0.2 s"), time_limit(0.2):
        portal.call(call)
    assert finished.wait(5), f"the {runtime} call still runs after its caller gave up"
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_call_sees_the_callers_context(runtime: str) -> None:
    """Context variables travel with a call (the runner's timeout() block is one)."""
    if runtime != "gevent":
        pytest.importorskip(runtime)
    token = CALLER_VALUE.set(f"from the caller, {runtime}")
    try:
        assert runtime_portal(runtime).call(CALLER_VALUE.get) == f"from the caller, {runtime}"
    finally:
        CALLER_VALUE.reset(token)
    assert runtime_portal(runtime).call(CALLER_VALUE.get) == "unset"
