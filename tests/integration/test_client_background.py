"""The blocking client's background work against the simulated replica set, with threads.

Monitors (streaming), pools (maxPoolSize under contention, clears), the upkeep task (dropped
cursors), timeouts of a blocked command, and closing: what the client does on its own, seen
through the events its core publishes (:class:`client_tap.Tap`).
"""

from __future__ import annotations

import gc
import threading
import time
from typing import Any

import pytest
from client_tap import Tap, mongo_sansio_threads, wait_for
from integration_helpers import fail_once

from mongo_sansio.adapters.blocking import MongoClient
from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.cmap.events import ConnectionCheckedOut, PoolCleared
from mongo_sansio.errors import MongoError, NetworkError


def primary_of(client: MongoClient) -> tuple[str, int] | None:
    return client.primary


def test_idle_client_sees_a_new_primary_within_a_heartbeat(rs: SimulatedReplicaSet) -> None:
    # heartbeatFrequencyMS=10 s: only the streaming monitors (an awaitable hello answered when
    # the member's topologyVersion moves) can explain a discovery within 3 s
    client = MongoClient(rs.uri, heartbeatFrequencyMS=10_000)
    try:
        client.admin.command("ping")
        old = client.primary
        assert old is not None
        wait_for(lambda: all(s.is_known for s in client.topology_description.servers.values()), 5)
        rs.step_down()
        new = rs.primary
        assert new is not None and new != f"{old[0]}:{old[1]}"
        took = wait_for(lambda: (p := client.primary) is not None and p != old, timeout=3.0)
        assert took < 3.0
        host, port = new.rsplit(":", 1)
        assert client.primary == (host, int(port))
        client.test.after.insert_one({"x": 1})  # writes go to the new primary
    finally:
        client.close()


def test_eight_threads_never_hold_more_than_max_pool_size(rs: SimulatedReplicaSet) -> None:
    client = MongoClient(rs.uri, maxPoolSize=2)
    try:
        tap = Tap(client)
        collection = client.test.pool
        collection.insert_one({"_id": 0})
        errors: list[BaseException] = []
        barrier = threading.Barrier(8)

        def work() -> None:
            try:
                barrier.wait(5)
                for _ in range(15):
                    collection.find_one({"_id": 0})
                    collection.update_one({"_id": 0}, {"$inc": {"n": 1}})
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(20)
        assert errors == []
        assert collection.find_one({"_id": 0})["n"] == 8 * 15
        assert len(tap.of(ConnectionCheckedOut)) >= 8 * 30
        assert tap.max_checked_out and max(tap.max_checked_out.values()) <= 2
        assert max(tap.max_connections.values()) <= 2
        assert all(count == 0 for count in tap.checked_out.values())
        for server in client._engine.core._servers.values():
            assert server.pool.in_use_connection_count == 0
    finally:
        client.close()


def test_a_blocked_command_under_timeout_ms_fails_fast(rs: SimulatedReplicaSet) -> None:
    client = MongoClient(rs.uri, timeoutMS=500)
    try:
        collection = client.test.blocked
        collection.insert_one({"_id": 1})
        fail_once(rs, "find", blockConnection=True, blockTimeMS=4000)
        start = time.monotonic()
        with pytest.raises(MongoError) as info:
            collection.find_one({"_id": 1})
        elapsed = time.monotonic() - start
        assert elapsed < 0.5 + 1.5, elapsed
        assert info.value.timeout is True, repr(info.value)
        assert collection.find_one({"_id": 1}) == {"_id": 1}  # the client carries on
        assert client._engine.core.pool(client.primary).in_use_connection_count == 0
    finally:
        client.close()


def test_a_dropped_connection_clears_the_pool(rs: SimulatedReplicaSet) -> None:
    client = MongoClient(rs.uri, retryReads=False)
    try:
        tap = Tap(client)
        collection = client.test.dropped
        collection.insert_one({"_id": 1})
        primary = rs.primary
        fail_once(rs, "find", closeConnection=True)
        with pytest.raises(NetworkError):
            collection.find_one({"_id": 1})
        cleared = tap.of(PoolCleared)
        assert [e.address for e in cleared] == [primary]
        assert collection.find_one({"_id": 1}) == {"_id": 1}
    finally:
        client.close()


def test_early_closed_cursors_send_kill_cursors(rs: SimulatedReplicaSet) -> None:
    client = MongoClient(rs.uri)
    try:
        tap = Tap(client)
        collection = client.test.cursors
        collection.insert_many([{"_id": i} for i in range(10)])
        cursor = collection.find({}).batch_size(2)
        assert next(cursor) == {"_id": 0}
        cursor.close()
        kills = tap.commands("killCursors")
        assert len(kills) == 1
        assert kills[0].command["killCursors"] == "cursors"

        # a cursor dropped while open: killed by the upkeep task (no I/O in the finalizer)
        dropped: Any = collection.find({}).batch_size(3)
        assert next(dropped) == {"_id": 0}
        del dropped
        gc.collect()
        wait_for(lambda: len(tap.commands("killCursors")) == 2, timeout=3.0)
        assert client._engine.core.take_cursors_to_kill() == []
    finally:
        client.close()


def test_close_leaves_no_thread(rs: SimulatedReplicaSet) -> None:
    client = MongoClient(rs.uri, heartbeatFrequencyMS=500, minPoolSize=2)
    client.test.threads.insert_one({"x": 1})
    assert mongo_sansio_threads()
    wait_for(lambda: len(mongo_sansio_threads()) >= 7, timeout=3.0)  # 2 per member + upkeep
    client.close()
    assert mongo_sansio_threads() == []
    with pytest.raises(MongoError):
        client.test.threads.find_one()


def test_clients_opened_and_closed_in_parallel(rs: SimulatedReplicaSet) -> None:
    """Six threads each open a client, run one operation and close it, six times over.

    Closing a stream another thread is reading used to release its file descriptor under
    that thread: the number went to a new socket of another client, the thread then waited
    on (and read from) the wrong connection, and close() waited 5 s for a thread that never
    ended.  A selection that missed the topology change it waited for also slept to the end
    of serverSelectionTimeoutMS here (tests/unit/test_client_flows.py::TestWakeUps)."""
    slow: list[str] = []
    errors: list[BaseException] = []

    def fresh_clients() -> None:
        for _ in range(6):
            client = MongoClient(rs.uri, serverSelectionTimeoutMS=8000)
            try:
                start = time.monotonic()
                client.test.first.find_one({})
                if time.monotonic() - start > 3.0:
                    slow.append(f"operation {time.monotonic() - start:.2f} s")
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
            finally:
                start = time.monotonic()
                client.close()
                if time.monotonic() - start > 2.0:
                    slow.append(f"close {time.monotonic() - start:.2f} s")

    threads = [threading.Thread(target=fresh_clients) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(40)
    assert errors == []
    assert slow == []
    assert mongo_sansio_threads() == []


@pytest.mark.parametrize("level", ["database", "collection", "with_options"])
def test_timeout_ms_on_a_database_or_collection_bounds_its_operations(
    rs: SimulatedReplicaSet, level: str
) -> None:
    client = MongoClient(rs.uri)  # no client-level timeoutMS: only the level under test
    try:
        plain = client.test.levels
        plain.insert_one({"_id": 1})
        if level == "database":
            collection = client.get_database("test", timeoutMS=400).levels
        elif level == "collection":
            collection = client.test.get_collection("levels", timeoutMS=400)
        else:
            collection = plain.with_options(timeoutMS=400)
        fail_once(rs, "find", blockConnection=True, blockTimeMS=3000)
        start = time.monotonic()
        with pytest.raises(MongoError) as info:
            collection.find_one({"_id": 1})
        assert time.monotonic() - start < 1.5
        assert info.value.timeout is True
        assert plain.find_one({"_id": 1}) == {"_id": 1}, "other collections keep no limit"
        assert collection.with_options(timeoutMS=0).find_one({"_id": 1}) == {"_id": 1}
    finally:
        client.close()
