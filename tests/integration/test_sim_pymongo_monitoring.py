"""PyMongo, unchanged, against the simulator for what the SDAM, CMAP, logging and CSOT suites
need: streaming monitors woken by a topology change at once, failCommand on the handshake of one
appName only, a blocked command that blocks no other connection, the standalone server, and
mongod's storage limits.  PyMongo is the independent judge; every client has short timeouts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

pymongo = pytest.importorskip("pymongo")
from integration_helpers import cli_process, first_line_uri  # noqa: E402
from pymongo import MongoClient  # noqa: E402
from pymongo.errors import OperationFailure, ServerSelectionTimeoutError, WriteError  # noqa: E402

from mongo_sansio.adapters.sim import SimulatedReplicaSet  # noqa: E402
from mongo_sansio.testing.server import ReplicaSet  # noqa: E402

OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 5000, "connectTimeoutMS": 3000, "socketTimeoutMS": 10000}
HEARTBEAT_MS = 60_000  # far longer than any test waits: only a streamed reply can bring news


def open_client(clients: list[MongoClient[Any]], uri: str, **options: Any) -> MongoClient[Any]:
    client: MongoClient[Any] = MongoClient(uri, **{**OPTIONS, **options})
    clients.append(client)
    return client


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = 5.0) -> float:
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)
    return time.monotonic() - start


def awaiting_hellos(rs: SimulatedReplicaSet) -> int:
    """Connections whose awaitable hello is waiting on the server (streaming monitors)."""
    def count(cluster: ReplicaSet, _now: float) -> int:
        return sum(
            1 for member in cluster.members.values() for connection in member.connections
            if connection.next_deadline() is not None
        )
    result: int = rs.call(count)
    return result


def primary_of(client: MongoClient[Any]) -> str | None:
    address = client.primary
    return None if address is None else f"{address[0]}:{address[1]}"


def streaming_client(rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]) -> MongoClient[Any]:
    client = open_client(clients, rs.uri, heartbeatFrequencyMS=HEARTBEAT_MS)
    client.admin.command("ping")
    wait_until(lambda: awaiting_hellos(rs) >= 3, "every member's monitor to stream")
    return client


# --- item 1: streaming monitors learn of a new primary at once ------------------------------


def test_an_idle_client_sees_the_new_primary_after_a_stepdown_long_before_a_heartbeat(
    rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]
) -> None:
    client = streaming_client(rs, clients)
    assert primary_of(client) == rs.members[0]
    rs.step_down()
    took = wait_until(lambda: primary_of(client) == rs.members[1], "the new primary", timeout=10)
    assert took < 5  # the heartbeat is 60 s away: the streamed hello brought it


def test_repl_set_step_down_from_a_client_wakes_the_streaming_monitors(
    rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]
) -> None:
    client = streaming_client(rs, clients)
    client.admin.command({"replSetFreeze": 0}, read_preference=pymongo.ReadPreference.SECONDARY)
    client.admin.command({"replSetStepDown": 30, "secondaryCatchUpPeriodSecs": 30, "force": False})
    took = wait_until(lambda: primary_of(client) == rs.members[1], "the new primary", timeout=10)
    assert took < 5
    client.test.after.insert_one({"x": 1})  # and writes go there


def test_a_stopped_primary_is_replaced_in_the_clients_view_at_once(
    rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]
) -> None:
    client = streaming_client(rs, clients)
    rs.stop(rs.members[0])
    took = wait_until(lambda: primary_of(client) == rs.members[1], "the new primary", timeout=10)
    assert took < 5


# --- item 4: failCommand as the suites use it -----------------------------------------------


def test_a_handshake_failpoint_with_an_app_name_fails_only_that_application(
    rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]
) -> None:
    setup = open_client(clients, rs.uri)
    setup.admin.command("ping")
    for member in rs.members:
        rs.configure_failpoint(member, {
            "configureFailPoint": "failCommand", "mode": "alwaysOn",
            "data": {"failCommands": ["hello", "isMaster"], "appName": "doomed", "closeConnection": True},
        })
    doomed = open_client(clients, rs.uri, appname="doomed", serverSelectionTimeoutMS=700)
    with pytest.raises(ServerSelectionTimeoutError):
        doomed.admin.command("ping")
    assert setup.admin.command("ping")["ok"] == 1.0  # the failpoint-setting client is untouched
    for member in rs.members:
        setup_result = rs.configure_failpoint(member, {"configureFailPoint": "failCommand", "mode": "off"})
        assert setup_result["count"] > 0
    healed = open_client(clients, rs.uri, appname="doomed")
    assert healed.admin.command("ping")["ok"] == 1.0


def test_a_blocked_command_does_not_block_other_connections(
    rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]
) -> None:
    slow = open_client(clients, rs.uri, appname="slow")
    fast = open_client(clients, rs.uri, appname="fast")
    slow.test.c.insert_one({"_id": 1})
    fast.admin.command("ping")
    slow.admin.command({
        "configureFailPoint": "failCommand", "mode": {"times": 1},
        "data": {"failCommands": ["find"], "appName": "slow", "blockConnection": True, "blockTimeMS": 3000},
    })
    finished: list[float] = []
    started = time.monotonic()

    def run_blocked() -> None:
        slow.test.c.find_one({})
        finished.append(time.monotonic())

    blocked = threading.Thread(target=run_blocked)
    blocked.start()
    time.sleep(0.2)
    for n in range(5):
        assert fast.test.c.find_one({}, {"_id": 1}) == {"_id": 1}
        fast.test.c.update_one({"_id": 1}, {"$set": {"n": n}})
    assert time.monotonic() - started < 2.0 and not finished  # all done while the find waits
    blocked.join(10)
    assert finished and finished[0] - started >= 2.9


def test_a_max_time_ms_shorter_than_the_block_fails_with_max_time_ms_expired(
    rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]
) -> None:
    client = open_client(clients, rs.uri)
    client.admin.command({
        "configureFailPoint": "failCommand", "mode": {"times": 1},
        "data": {"failCommands": ["find"], "blockConnection": True, "blockTimeMS": 2000},
    })
    with pytest.raises(pymongo.errors.ExecutionTimeout) as caught:
        client.test.c.find_one({}, max_time_ms=100)
    assert caught.value.code == 50


# --- item 2: the standalone server -----------------------------------------------------------


def test_pymongo_sees_a_standalone_server(clients: list[MongoClient[Any]]) -> None:
    with SimulatedReplicaSet(standalone=True) as server:
        assert "replicaSet" not in server.uri and server.uri == f"mongodb://{server.members[0]}/"
        client = open_client(clients, server.uri)
        client.test.c.insert_one({"_id": 1})
        assert client.topology_description.topology_type_name == "Single"
        (description,) = client.topology_description.server_descriptions().values()
        assert description.server_type_name == "Standalone"
        with client.start_session() as session:  # retryable writes are off on a standalone
            client.test.c.update_one({"_id": 1}, {"$set": {"a": 1}}, session=session)
        with pytest.raises(OperationFailure) as caught, client.test.c.watch() as stream:
            stream.try_next()
        assert caught.value.code == 40573
        assert client.test.c.find_one() == {"_id": 1, "a": 1}
        client.close()


def test_the_sim_command_serves_a_standalone_server(clients: list[MongoClient[Any]]) -> None:
    with cli_process("sim", "--standalone") as process:
        uri = first_line_uri(process)
        assert "replicaSet" not in uri and "," not in uri
        client = open_client(clients, uri)
        assert "setName" not in client.admin.command("hello")
        client.close()
        process.terminate()
        assert process.wait(timeout=15) == 0


def test_the_sim_command_refuses_standalone_with_several_members(capsys: pytest.CaptureFixture[str]) -> None:
    from mongo_sansio.adapters.cli import main

    with pytest.raises(SystemExit) as caught:
        main(["sim", "--standalone", "--members", "3"])
    assert caught.value.code == 2 and "--standalone" in capsys.readouterr().err


# --- item 3: storage limits ------------------------------------------------------------------


def test_an_update_growing_a_document_to_18_mib_fails_and_leaves_it_unchanged(
    rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]
) -> None:
    client = open_client(clients, rs.uri)
    collection = client.test.big
    collection.insert_one({"_id": 1, "a": "x" * (9 * 1024 * 1024)})
    with pytest.raises(WriteError) as caught:
        collection.update_one({"_id": 1}, {"$set": {"b": "y" * (9 * 1024 * 1024)}})
    assert caught.value.code == 10334
    stored = collection.find_one({"_id": 1})
    assert stored is not None and set(stored) == {"_id", "a"}


def test_a_document_nested_deeper_than_mongod_stores_is_refused(
    rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]
) -> None:
    client = open_client(clients, rs.uri)
    document: dict[str, Any] = {"leaf": 1}
    for _ in range(180):
        document = {"a": document}  # the leaf is at level 181
    with pytest.raises(WriteError) as caught:
        client.test.deep.insert_one(document)
    assert caught.value.code == 15
    assert client.test.deep.insert_one(document["a"]).acknowledged  # 180 levels are fine


# --- item 5: capped collections and tailable cursors (the CSOT tailable tests) ---------------


def test_tailable_await_cursor_on_a_capped_collection(rs: SimulatedReplicaSet, clients: list[MongoClient[Any]]) -> None:
    client = open_client(clients, rs.uri)
    log = client.test.create_collection("log", capped=True, size=500)
    assert log.options() == {"capped": True, "size": 500}
    log.insert_many([{"_id": 0}, {"_id": 1}])
    cursor = log.find({}, cursor_type=pymongo.CursorType.TAILABLE_AWAIT).max_await_time_ms(1500)
    assert [cursor.next()["_id"], cursor.next()["_id"]] == [0, 1]
    writer = threading.Timer(0.2, lambda: log.insert_one({"_id": 2}))
    writer.start()
    started = time.monotonic()
    assert cursor.next()["_id"] == 2
    assert time.monotonic() - started < 1.2  # woken by the insert, not by maxAwaitTimeMS
    writer.join()
    with pytest.raises(StopIteration):
        cursor.next()  # nothing new within 1.5 s: an empty batch ...
    assert cursor.alive  # ... and the cursor stays open
    cursor.close()
    with pytest.raises(OperationFailure) as caught:
        client.test.plain.insert_one({})
        client.test.plain.find(cursor_type=pymongo.CursorType.TAILABLE).next()
    assert caught.value.code == 2
