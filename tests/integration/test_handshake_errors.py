"""A pooled connection that fails while it authenticates, against a simulated replica set with
access control: SDAM hears of it once (one change to Unknown, one pool clear), the operation
that waited for the connection fails with the error, and the next operation succeeds on a new
connection.  PyMongo runs the same faults as the reference.

The once matters: the opening flow reports the error (with the generation of the connection
it opened) and the operation then reports the same error as its own; the second report must
be found stale, as the SDAM spec's ``auth-network-error`` and ``auth-error`` tests check."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from integration_helpers import fail_once

from mongo_sansio import monitoring
from mongo_sansio.adapters.blocking import MongoClient
from mongo_sansio.adapters.sim import SimulatedReplicaSet

APP = "handshakeErrorTest"
OPTIONS: dict[str, Any] = {
    "serverSelectionTimeoutMS": 5000,
    "connectTimeoutMS": 3000,
    "retryWrites": False,
    "appname": APP,
    # a server marked Unknown is found again at the next check: PyMongo waits for the
    # heartbeat after an authentication error (ours checks at once)
    "heartbeatFrequencyMS": 500,
}


class Tally:
    """Unknown server descriptions and pool clears, as both clients' listener methods name
    them (our monitoring module mirrors pymongo.monitoring)."""

    def __init__(self) -> None:
        self.unknown = 0
        self.cleared = 0
        self.lock = threading.Lock()

    def listeners(self, monitoring_module: Any) -> list[Any]:
        tally = self

        class Servers(monitoring_module.ServerListener):  # type: ignore[misc,name-defined]
            def opened(self, event: Any) -> None:
                pass

            def closed(self, event: Any) -> None:
                pass

            def description_changed(self, event: Any) -> None:
                if event.new_description.server_type_name == "Unknown":
                    with tally.lock:
                        tally.unknown += 1

        class Pools(monitoring_module.ConnectionPoolListener):  # type: ignore[misc,name-defined]
            def pool_cleared(self, event: Any) -> None:
                with tally.lock:
                    tally.cleared += 1

        for name in _OTHER_POOL_EVENTS:
            setattr(Pools, name, lambda self, event: None)
        return [Servers(), Pools()]


_OTHER_POOL_EVENTS = (
    "pool_created", "pool_ready", "pool_closed", "connection_created", "connection_ready",
    "connection_closed", "connection_check_out_started", "connection_check_out_failed",
    "connection_checked_out", "connection_checked_in",
)


@pytest.fixture(scope="module")
def rs() -> Any:
    simulator = SimulatedReplicaSet(members=1, auth={"runner": "secret"}).start()
    yield simulator
    simulator.close()


def _client(kind: str, rs: SimulatedReplicaSet, tally: Tally) -> Any:
    if kind == "ours":
        return MongoClient(
            rs.uri_with_credentials(), event_listeners=tally.listeners(monitoring), **OPTIONS
        )
    pymongo = pytest.importorskip("pymongo")
    pymongo_monitoring = pytest.importorskip("pymongo.monitoring")
    return pymongo.MongoClient(
        rs.uri_with_credentials(), event_listeners=tally.listeners(pymongo_monitoring), **OPTIONS
    )


def _settle(tally: Tally, expected: tuple[int, int] = (0, 0)) -> tuple[int, int]:
    """The counts once they reach ``expected`` (or after 5 s), and a moment later: PyMongo
    publishes its server events from a queue a background thread empties every half
    second, and a second report, were there one, would come in meanwhile."""
    limit = time.monotonic() + 5.0
    while time.monotonic() < limit:
        with tally.lock:
            if (tally.unknown, tally.cleared) >= expected and tally.cleared >= expected[1]:
                break
        time.sleep(0.05)
    time.sleep(0.7)
    with tally.lock:
        return tally.unknown, tally.cleared


@pytest.mark.parametrize("kind", ["ours", "pymongo"])
@pytest.mark.parametrize(
    "fault", [{"closeConnection": True}, {"errorCode": 18}], ids=["network error", "auth error"]
)
def test_an_authentication_failure_is_reported_once(
    rs: SimulatedReplicaSet, kind: str, fault: dict[str, Any]
) -> None:
    tally = Tally()
    client = _client(kind, rs, tally)
    try:
        collection = client.get_database("handshake").get_collection(f"c_{kind}")
        fail_once(rs, "saslContinue", appName=APP, **fault)  # before the pool's first connection
        unknown_before, cleared_before = _settle(tally)
        with pytest.raises(Exception) as failure:
            collection.insert_one({"fault": str(fault)})
        assert "duplicate" not in str(failure.value).lower()
        unknown, cleared = _settle(tally, (unknown_before + 1, cleared_before + 1))
        assert (unknown - unknown_before, cleared - cleared_before) == (1, 1)
        collection.insert_one({"after": str(fault)})  # a new connection authenticates
        assert _settle(tally) == (unknown, cleared)
        assert collection.count_documents({"after": str(fault)}) == 1
    finally:
        client.close()
