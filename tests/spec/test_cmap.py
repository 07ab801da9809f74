"""The CMAP spec tests (cmap-format), run against the pure pool on a virtual clock.

Nothing here sleeps or starts a thread.  Each of a test's "threads" is a queue of operations;
a thread blocked in checkOut is parked until the pool gives its waiter a connection or an error,
and ``wait`` / ``waitForEvent`` / ``waitForThread`` advance a virtual clock from one due thing to
the next (a connection finishing its handshake, the pool's next deadline, a sleeping thread).

The "integration" files need a server only to make handshakes slow or fail through a
``failCommand`` fail point on ``hello``; the simulated driver here plays that server: a
``blockConnection`` delays the handshake by ``blockTimeMS`` of virtual time, ``errorCode`` or
``closeConnection`` fails it.  Like a driver, it reports a failed handshake to (simulated) SDAM
first, which clears the pool for network and state-change errors, then to the pool.  The
simulated server is taken to satisfy every ``runOn`` requirement.

The ``logging`` folder is in the unified test format and needs a real deployment: skipped.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from _specs import suite_cases

from mongo_sansio.cmap import (
    CloseConnection,
    ConnectionCheckedIn,
    ConnectionCheckedOut,
    ConnectionCheckOutFailed,
    ConnectionCheckOutStarted,
    ConnectionClosed,
    ConnectionCreated,
    ConnectionReady,
    FailWaiter,
    GiveConnection,
    InterruptConnection,
    OpenConnection,
    Pool,
    PoolCleared,
    PoolClosed,
    PoolCreated,
    PooledConnection,
    PoolError,
    PoolEvent,
    PoolOptions,
    PoolReady,
)

SUITE = "connection-monitoring-and-pooling"
ADDRESS = "localhost:27017"
SIMULATED_SERVER_VERSION = (8, 0, 0)
# ms of virtual time after which a blocked main thread is a runner bug, not a pool timeout
VIRTUAL_TIME_LIMIT = 3600.0

SPEC_EVENT_NAMES: dict[type[PoolEvent], str] = {
    PoolCreated: "ConnectionPoolCreated",
    PoolReady: "ConnectionPoolReady",
    PoolCleared: "ConnectionPoolCleared",
    PoolClosed: "ConnectionPoolClosed",
    ConnectionCreated: "ConnectionCreated",
    ConnectionReady: "ConnectionReady",
    ConnectionClosed: "ConnectionClosed",
    ConnectionCheckOutStarted: "ConnectionCheckOutStarted",
    ConnectionCheckOutFailed: "ConnectionCheckOutFailed",
    ConnectionCheckedOut: "ConnectionCheckedOut",
    ConnectionCheckedIn: "ConnectionCheckedIn",
}
# test-only pool options that a pool without a background thread ignores (cmap-format README)
RUNNER_OPTIONS = {"backgroundThreadIntervalMS", "appName"}
# SDAM clears the pool for these handshake failures (network errors, state-change codes)
STATE_CHANGE_CODES = {91, 189, 10107, 11600, 11602, 13435, 13436}


def _expand(path: Path, data: Any) -> Iterable[tuple[str, Any]]:
    if path.parent.name != "cmap-format":
        reason = (
            f"{path.parent.name}/ is in the unified test format: tests/spec/test_cmap_logging.py "
            "runs it against the simulated deployment"
        )
        yield data.get("description", path.stem), {"skip": reason}
        return
    yield data["description"], data


CASES = suite_cases(SUITE, _expand)


# -- the simulated server and SDAM ------------------------------------------------------------


class SimulatedNetworkError(Exception):
    """The simulated server closed the connection during the handshake."""


class SimulatedCommandError(Exception):
    """The simulated server answered hello with ok: 0."""

    def __init__(self, code: int) -> None:
        super().__init__(f"hello failed with code {code}")
        self.code = code


class FailPoint:
    """A ``failCommand`` fail point as it affects connection handshakes."""

    def __init__(self, document: dict[str, Any] | None) -> None:
        document = document or {}
        mode = document.get("mode", "off")
        self.remaining: float = 0 if mode == "off" else float("inf")
        if isinstance(mode, dict):
            self.remaining = mode.get("times", 0)
        self.data: dict[str, Any] = document.get("data", {})

    def handshake(self) -> tuple[float, Exception | None]:
        """(seconds the handshake takes, the error it fails with or None)."""
        commands = self.data.get("failCommands", [])
        if self.remaining <= 0 or not {"hello", "isMaster"} & set(commands):
            return 0.0, None
        self.remaining -= 1
        delay = self.data.get("blockTimeMS", 0) / 1000 if self.data.get("blockConnection") else 0
        if self.data.get("closeConnection"):
            return delay, SimulatedNetworkError("connection closed by the fail point")
        if "errorCode" in self.data:
            return delay, SimulatedCommandError(self.data["errorCode"])
        return delay, None


def sdam_clears_pool(error: Exception) -> bool:
    if isinstance(error, SimulatedNetworkError):
        return True
    return isinstance(error, SimulatedCommandError) and error.code in STATE_CHANGE_CODES


# -- simulated threads --------------------------------------------------------------------------


class RunnerError(AssertionError):
    """The runner could not make progress (a deadlock the spec test does not expect)."""


class WaitForEventTimeout(Exception):
    """``waitForEvent`` with a ``timeout`` saw too few events in time."""


class SimThread:
    def __init__(self, name: str) -> None:
        self.name = name
        self.ops: deque[dict[str, Any]] = deque()
        self.blocked: Callable[[], bool] | None = None  # returns True once unblocked
        self.error: BaseException | None = None
        self.waiter: int | None = None
        self.label: str | None = None
        self.timeout_at: float | None = None

    @property
    def idle(self) -> bool:
        return self.blocked is None and not self.ops


class Runner:
    def __init__(self, case: dict[str, Any]) -> None:
        options = {k: v for k, v in case.get("poolOptions", {}).items() if k not in RUNNER_OPTIONS}
        self.now = 0.0
        self.pool = Pool(ADDRESS, PoolOptions.from_mapping(options))
        self.failpoint = FailPoint(case.get("failPoint"))
        self.events: list[PoolEvent] = []
        self.labels: dict[str, PooledConnection] = {}
        self.threads: dict[str, SimThread] = {}
        self.by_waiter: dict[int, SimThread] = {}
        self.results: dict[int, tuple[str, Any]] = {}  # waiter -> ("give"/"fail", value)
        self.handshakes: list[tuple[float, int, int, Exception | None]] = []  # heap
        self.abandoned: set[int] = set()
        self.seq = itertools.count()
        self.pump()

    # outputs of the pool: record events, carry out actions
    def pump(self) -> None:
        for output in self.pool.drain_outputs():
            if isinstance(output, PoolEvent):
                self.events.append(output)
            elif isinstance(output, OpenConnection):
                delay, error = self.failpoint.handshake()
                due = self.now + delay
                heapq.heappush(self.handshakes, (due, next(self.seq), output.connection_id, error))
            elif isinstance(output, CloseConnection):
                self.abandoned.add(output.connection_id)
            elif isinstance(output, GiveConnection):
                self.results[output.waiter] = ("give", output.connection)
            elif isinstance(output, FailWaiter):
                self.results[output.waiter] = ("fail", output.error)
            else:
                assert isinstance(output, InterruptConnection)

    def count(self, name: str) -> int:
        return sum(1 for e in self.events if SPEC_EVENT_NAMES[type(e)] == name)

    # one step of a thread: run until it blocks or its queue is empty
    def run_thread(self, thread: SimThread) -> bool:
        progressed = False
        while True:
            if thread.blocked is not None:
                if not thread.blocked():
                    return progressed
                thread.blocked = None
                progressed = True
            if not thread.ops or thread.error is not None:
                if thread.error is not None:
                    thread.ops.clear()
                return progressed
            op = thread.ops.popleft()
            progressed = True
            try:
                self.execute(thread, op)
            except Exception as error:  # noqa: BLE001 - the thread's error, as in a real runner
                thread.error = error

    def execute(self, thread: SimThread, op: dict[str, Any]) -> None:
        name = op["name"]
        thread.timeout_at = None
        if name == "start":
            self.threads[op["target"]] = SimThread(op["target"])
        elif name == "wait":
            until = self.now + op["ms"] / 1000
            thread.timeout_at = until
            thread.blocked = lambda: self.now >= until
        elif name == "waitForThread":
            target = self.threads[op["target"]]

            def finished() -> bool:
                if not target.idle:
                    return False
                if target.error is not None:
                    error, target.error = target.error, None
                    thread.error = error
                return True

            thread.blocked = finished
        elif name == "waitForEvent":
            event, count = op["event"], op["count"]
            deadline = self.now + op["timeout"] / 1000 if "timeout" in op else None
            thread.timeout_at = deadline

            def seen() -> bool:
                if self.count(event) >= count:
                    return True
                if deadline is not None and self.now >= deadline:
                    thread.error = WaitForEventTimeout(f"{count} x {event}")
                    return True
                return False

            thread.blocked = seen
        elif name == "checkOut":
            waiter = self.pool.check_out(self.now)
            self.pump()
            label = op.get("label")

            def served() -> bool:
                result = self.results.pop(waiter, None)
                if result is None:
                    return False
                kind, value = result
                if kind == "fail":
                    thread.error = value
                elif label is not None:
                    self.labels[label] = value
                return True

            thread.blocked = served
        elif name == "checkIn":
            self.pool.check_in(self.labels[op["connection"]], self.now)
            self.pump()
        elif name == "clear":
            interrupt = op.get("interruptInUseConnections", False)
            self.pool.clear(self.now, interrupt_in_use_connections=interrupt)
            self.pump()
        elif name == "close":
            self.pool.close(self.now)
            self.pump()
        elif name == "ready":
            self.pool.ready(self.now)
            self.pump()
        else:
            raise RunnerError(f"unknown operation {name!r}")

    def finish_handshake(self, connection_id: int, error: Exception | None) -> None:
        if connection_id in self.abandoned:  # the pool gave up on it; a real socket is closed
            return
        if error is None:
            self.pool.connection_established(connection_id, self.now)
        else:
            if sdam_clears_pool(error):
                self.pool.clear(self.now, cause=error)
            self.pool.connection_failed(connection_id, self.now, error)
        self.pump()

    def settle(self, main: SimThread) -> None:
        """Run everything that can happen at the current instant."""
        while True:
            progressed = False
            while self.handshakes and self.handshakes[0][0] <= self.now:
                _, _, connection_id, error = heapq.heappop(self.handshakes)
                self.finish_handshake(connection_id, error)
                progressed = True
            deadline = self.pool.next_deadline()
            if deadline is not None and deadline <= self.now:
                self.pool.handle_timeout(self.now)
                self.pump()
                progressed = True
            for thread in [main, *self.threads.values()]:
                progressed = self.run_thread(thread) or progressed
            if not progressed:
                return

    def next_instant(self) -> float | None:
        times = [t for t, *_ in self.handshakes[:1]]
        deadline = self.pool.next_deadline()
        if deadline is not None:
            times.append(deadline)
        for thread in [*self.threads.values()]:
            if thread.blocked is not None and thread.timeout_at is not None:
                times.append(thread.timeout_at)
        return min(times) if times else None

    def run(self, operations: list[dict[str, Any]]) -> BaseException | None:
        main = SimThread("main")
        for op in operations:
            target = op.get("thread")
            if target is not None:
                self.threads[target].ops.append(op)
            else:
                main.ops.append(op)
            while True:
                self.settle(main)
                if main.error is not None:
                    return main.error
                if main.idle:
                    break
                moment = self.next_instant()
                if main.timeout_at is not None and main.blocked is not None:
                    moment = main.timeout_at if moment is None else min(moment, main.timeout_at)
                if moment is None or moment > VIRTUAL_TIME_LIMIT:
                    raise RunnerError(f"main thread blocked forever on {op}")
                self.now = max(self.now, moment)
        return None


# -- matching -----------------------------------------------------------------------------------


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def event_document(event: PoolEvent) -> dict[str, Any]:
    doc: dict[str, Any] = {"type": SPEC_EVENT_NAMES[type(event)]}
    for field in event.__attrs_attrs__:  # type: ignore[attr-defined]
        value = getattr(event, field.name)
        doc[_camel(field.name)] = str(value) if hasattr(value, "value") else value
    return doc


def matches(actual: Any, expected: Any, path: str = "") -> None:
    """``actual`` has at least what ``expected`` says; 42 means "any value".  Documents are
    compared as mappings and arrays as sequences: events hold read-only containers (a
    PoolCreated's ``options`` is a mappingproxy)."""
    if expected == 42 or expected == "42":
        assert actual is not None, f"{path}: expected a value"
        return
    if isinstance(expected, dict):
        assert isinstance(actual, Mapping), f"{path}: expected a document, got {actual!r}"
        for key, value in expected.items():
            assert key in actual, f"{path}.{key}: missing in {actual!r}"
            matches(actual[key], value, f"{path}.{key}")
    elif isinstance(expected, list):
        assert (
            isinstance(actual, Sequence)
            and not isinstance(actual, (str, bytes))
            and len(actual) >= len(expected)
        ), f"{path}: {actual!r}"
        for index, value in enumerate(expected):
            matches(actual[index], value, f"{path}[{index}]")
    else:
        assert type(actual) is type(expected) and actual == expected, (
            f"{path}: expected {expected!r}, got {actual!r}"
        )


def error_document(error: BaseException) -> dict[str, Any]:
    doc: dict[str, Any] = {"type": type(error).__name__, "message": str(error)}
    if isinstance(error, PoolError):
        doc["message"] = error.message
        doc["address"] = error.address
    return doc


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def runs_on_simulated_server(requirements: list[dict[str, Any]]) -> bool:
    for requirement in requirements:
        low = _version(requirement.get("minServerVersion", "0"))
        high = _version(requirement.get("maxServerVersion", "99999"))
        if low <= SIMULATED_SERVER_VERSION <= high:
            return True
    return not requirements


@pytest.mark.spec
@pytest.mark.parametrize("case", CASES)
def test_cmap(case: dict[str, Any]) -> None:
    if "skip" in case:
        pytest.skip(case["skip"])
    assert runs_on_simulated_server(case.get("runOn", [])), "the simulated server is 8.0"
    runner = Runner(case)
    error = runner.run(case["operations"])
    expected_error = case.get("error")
    if expected_error is None:
        assert error is None, f"main thread raised {error!r}"
    else:
        assert error is not None, f"expected {expected_error}, main thread raised nothing"
        matches(error_document(error), expected_error, "error")
    ignore = set(case.get("ignore", []))
    actual = [event_document(e) for e in runner.events]
    actual = [doc for doc in actual if doc["type"] not in ignore]
    expected = case.get("events", [])
    assert len(actual) >= len(expected), f"too few events: {actual}"
    for index, event in enumerate(expected):
        matches(actual[index], event, f"events[{index}]")


def test_matches_compares_read_only_containers() -> None:
    """The runner itself: a PoolCreated's options are a mappingproxy, tuples are arrays, and a
    value that differs, a missing key or a str in place of an array still fail."""
    options = MappingProxyType({"maxPoolSize": 50, "minPoolSize": 5})
    matches({"options": options}, {"options": {"maxPoolSize": 50}})
    matches((1, 2, 3), [1, 2])
    for actual, expected in (
        (options, {"maxPoolSize": 51}),
        (options, {"maxIdleTimeMS": 100}),
        ("ab", ["a"]),
        ([1], {"a": 1}),
        (50.0, 50),
    ):
        with pytest.raises(AssertionError):
            matches(actual, expected)
