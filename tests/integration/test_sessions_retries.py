"""Sessions and retryable writes of our blocking client against the simulated replica set:
writes across a stepdown (nothing lost, nothing applied twice), failCommand and
onPrimaryTransactionalWrite faults retried exactly once, retryWrites=false letting the error
through, implicit sessions reused LIFO, a session shared by two threads or two clients refused,
endSessions on close, and the Causal Consistency spec's prose tests that apply to a replica
set.  PyMongo runs the same fault where its behaviour is the reference."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from integration_helpers import fail_once

from mongo_sansio import monitoring
from mongo_sansio.adapters.blocking import MongoClient
from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.bson import Timestamp
from mongo_sansio.errors import AutoReconnect, ConfigurationError, InvalidOperation, ServerError
from mongo_sansio.monitoring import CommandStartedEvent

OPTIONS: dict[str, Any] = {
    "serverSelectionTimeoutMS": 5000,
    "connectTimeoutMS": 3000,
    "socketTimeoutMS": 10000,
}


class Commands(monitoring.CommandListener):
    """The commands a client started."""

    def __init__(self) -> None:
        self.events: list[CommandStartedEvent] = []
        self.lock = threading.Lock()

    def started(self, event: CommandStartedEvent) -> None:
        with self.lock:
            self.events.append(event)

    def succeeded(self, event: Any) -> None:
        pass

    def failed(self, event: Any) -> None:
        pass

    def named(self, name: str) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(e.command) for e in self.events if e.command_name == name]

    def clear(self) -> None:
        with self.lock:
            self.events.clear()


def timestamp_class(client: MongoClient) -> type:
    """The Timestamp class a session of ``client`` hands out: PyMongo's when the client's
    values are PyMongo's (bson was imported before it was made: pymongo_types), else ours."""
    if client.pymongo_types:
        import bson

        return bson.Timestamp  # type: ignore[no-any-return]
    return Timestamp


def open_client(
    clients: list[Any], rs: SimulatedReplicaSet, **options: Any
) -> tuple[MongoClient, Commands]:
    commands = Commands()
    client = MongoClient(rs.uri, event_listeners=[commands], **{**OPTIONS, **options})
    clients.append(client)
    return client, commands


# -- retryable writes ---------------------------------------------------------------------------


def test_eight_writers_across_a_stepdown_lose_nothing_and_apply_nothing_twice(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, commands = open_client(clients, rs)
    things = client.db.things
    counters = client.db.counters
    counters.insert_one({"_id": "total", "n": 0})
    per_thread = 25
    errors: list[BaseException] = []
    halfway = threading.Barrier(9)

    def writer(number: int) -> None:
        try:
            for i in range(per_thread):
                if i == per_thread // 2:
                    halfway.wait(timeout=10)
                things.insert_one({"_id": f"{number}-{i}"})
                counters.update_one({"_id": "total"}, {"$inc": {"n": 1}})
        except BaseException as error:  # noqa: BLE001 - reported by the test
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    halfway.wait(timeout=10)
    old_primary = rs.primary
    rs.step_down()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == []
    assert rs.primary != old_primary
    ids = sorted(doc["_id"] for doc in things.find({}))
    assert ids == sorted(f"{n}-{i}" for n in range(8) for i in range(per_thread))
    assert counters.find_one({"_id": "total"}) == {"_id": "total", "n": 8 * per_thread}
    # the stepdown did hit writes: the old primary refused some, and they were sent again
    sent = len(commands.named("insert")) + len(commands.named("update"))
    assert sent > 2 * 8 * per_thread + 1


def test_insert_after_a_closed_connection_is_applied_once(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, commands = open_client(clients, rs)
    things = client.db.things
    things.insert_one({"_id": "warm-up"})
    commands.clear()
    fail_once(rs, "insert", closeConnection=True)
    things.insert_one({"_id": 1, "x": 1})
    first, retry = commands.named("insert")
    assert first["txnNumber"] == retry["txnNumber"]
    assert first["lsid"] == retry["lsid"]
    assert things.count_documents({"_id": 1}) == 1


@pytest.mark.parametrize("code", [91, 189, 10107, 11602])
def test_insert_after_a_retryable_code_is_applied_once(
    rs: SimulatedReplicaSet, clients: list[Any], code: int
) -> None:
    # A shutdown error (91) a failpoint injects carries no topologyVersion, as mongod's: the
    # client marks the primary Unknown and the retry waits for the next heartbeat
    client, commands = open_client(clients, rs, heartbeatFrequencyMS=500)
    counters = client.db.counters
    counters.insert_one({"_id": 1, "n": 0})
    commands.clear()
    fail_once(rs, "update", errorCode=code)
    counters.update_one({"_id": 1}, {"$inc": {"n": 1}})
    assert len(commands.named("update")) == 2
    assert counters.find_one({"_id": 1}) == {"_id": 1, "n": 1}


def test_write_applied_then_connection_closed_is_applied_once(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    """onPrimaryTransactionalWrite: the server applies the write and drops the connection
    before answering; the retry (same lsid and txnNumber) gets the recorded result."""
    client, commands = open_client(clients, rs)
    counters = client.db.counters
    counters.insert_one({"_id": 1, "n": 0})
    commands.clear()
    primary = rs.primary
    assert primary is not None
    rs.configure_failpoint(
        primary,
        {
            "configureFailPoint": "onPrimaryTransactionalWrite",
            "mode": {"times": 1},
            "data": {"closeConnection": True},
        },
    )
    result = counters.update_one({"_id": 1}, {"$inc": {"n": 1}})
    assert (result.matched_count, result.modified_count) == (1, 1)
    assert len(commands.named("update")) == 2
    assert counters.find_one({"_id": 1}) == {"_id": 1, "n": 1}


def test_with_retry_writes_false_the_error_surfaces(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, commands = open_client(clients, rs, retryWrites=False)
    things = client.db.things
    things.insert_one({"_id": 0})
    commands.clear()
    fail_once(rs, "insert", closeConnection=True)
    with pytest.raises(AutoReconnect):
        things.insert_one({"_id": 1})
    (sent,) = commands.named("insert")
    assert "txnNumber" not in sent
    assert things.count_documents({"_id": 1}) == 0
    fail_once(rs, "insert", errorCode=91)
    with pytest.raises(ServerError) as raised:
        things.insert_one({"_id": 2})
    assert raised.value.code == 91


def test_pymongo_and_ours_retry_the_same_fault_alike(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    pymongo = pytest.importorskip("pymongo")
    from command_log import Commands as PyMongoCommands

    theirs_log = PyMongoCommands()
    theirs = pymongo.MongoClient(rs.uri, event_listeners=[theirs_log], **OPTIONS)
    clients.append(theirs)
    ours, ours_log = open_client(clients, rs)
    fail_once(rs, "insert", closeConnection=True)
    theirs.db.things.insert_one({"_id": "pymongo"})
    fail_once(rs, "insert", closeConnection=True)
    ours.db.things.insert_one({"_id": "ours"})
    for inserts in (
        [dict(e.command) for e in theirs_log.named("insert")],
        ours_log.named("insert"),
    ):
        assert len(inserts) == 2
        assert inserts[0]["txnNumber"] == inserts[1]["txnNumber"]
        assert inserts[0]["lsid"] == inserts[1]["lsid"]
    assert sorted(doc["_id"] for doc in ours.db.things.find({})) == ["ours", "pymongo"]


# -- sessions -----------------------------------------------------------------------------------


def test_implicit_sessions_are_reused_lifo(rs: SimulatedReplicaSet, clients: list[Any]) -> None:
    client, commands = open_client(clients, rs)
    things = client.db.things
    things.insert_one({"_id": 1})
    things.find_one({"_id": 1})
    insert, find = commands.named("insert")[0], commands.named("find")[0]
    assert insert["lsid"] == find["lsid"]


def test_a_session_in_use_by_another_thread_is_refused(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, _ = open_client(clients, rs)
    things = client.db.things
    things.insert_one({"_id": 0})
    session = client.start_session()
    fail_once(rs, "insert", blockConnection=True, blockTimeMS=600)
    outcome: list[Any] = []

    def slow_insert() -> None:
        try:
            outcome.append(things.insert_one({"_id": 1}, session=session))
        except BaseException as error:  # noqa: BLE001 - reported by the test
            outcome.append(error)

    thread = threading.Thread(target=slow_insert)
    thread.start()
    time.sleep(0.2)  # the insert is blocked on the server
    with pytest.raises(InvalidOperation):
        things.find_one({"_id": 0}, session=session)
    thread.join(timeout=10)
    assert len(outcome) == 1 and not isinstance(outcome[0], BaseException)
    assert things.find_one({"_id": 0}, session=session) == {"_id": 0}  # free again
    session.end_session()


def test_a_session_of_another_client_is_refused(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    first, _ = open_client(clients, rs)
    second, _ = open_client(clients, rs)
    with first.start_session() as session:
        with pytest.raises(InvalidOperation, match="MongoClient that started it"):
            second.db.things.insert_one({"_id": 1}, session=session)
    assert first.db.things.count_documents({}) == 0


def test_an_ended_session_is_refused(rs: SimulatedReplicaSet, clients: list[Any]) -> None:
    client, _ = open_client(clients, rs)
    session = client.start_session()
    session.end_session()
    assert session.has_ended
    with pytest.raises(InvalidOperation, match="ended session"):
        client.db.things.find_one({}, session=session)


def test_explicit_session_with_an_unacknowledged_write_is_refused(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, commands = open_client(clients, rs)
    unacknowledged = client.get_database("db", write_concern=_w0()).things
    with client.start_session() as session:
        with pytest.raises(ConfigurationError, match="unacknowledged"):
            unacknowledged.insert_one({"_id": 1}, session=session)
    unacknowledged.insert_one({"_id": 2})
    (sent,) = commands.named("insert")
    assert "lsid" not in sent


def _w0() -> Any:
    from mongo_sansio.adapters.blocking import WriteConcern

    return WriteConcern(w=0)


def test_end_sessions_on_close(rs: SimulatedReplicaSet) -> None:
    commands = Commands()
    client = MongoClient(rs.uri, event_listeners=[commands], **OPTIONS)
    try:
        client.db.things.insert_one({"_id": 1})
        with client.start_session() as session:
            client.db.things.find_one({}, session=session)
            explicit = session.session_id
        used = {commands.named("insert")[0]["lsid"]["id"], explicit["id"]}
    finally:
        client.close()
    (end,) = commands.named("endSessions")
    assert {lsid["id"] for lsid in end["endSessions"]} == used


# -- causal consistency (the spec's prose tests that apply to a replica set) -------------------


def test_causal_new_session_has_no_operation_time(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, _ = open_client(clients, rs)
    with client.start_session() as session:
        assert session.operation_time is None


def test_causal_first_read_has_no_after_cluster_time_and_sets_operation_time(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, commands = open_client(clients, rs)
    with client.start_session(causal_consistency=True) as session:
        client.db.things.find_one({}, session=session)
        (find,) = commands.named("find")
        assert "readConcern" not in find or "afterClusterTime" not in find["readConcern"]
        assert isinstance(session.operation_time, timestamp_class(client))


def test_causal_error_replies_update_operation_time(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, _ = open_client(clients, rs)
    with client.start_session() as session:
        with pytest.raises(ServerError):
            client.db.command({"unknownCommandForTheTest": 1}, session=session)
        assert isinstance(session.operation_time, timestamp_class(client))


@pytest.mark.parametrize("read", ["find", "aggregate", "distinct", "count"])
def test_causal_reads_after_a_write_carry_its_operation_time(
    rs: SimulatedReplicaSet, clients: list[Any], read: str
) -> None:
    client, commands = open_client(clients, rs)
    things = client.db.things
    with client.start_session() as session:
        things.insert_one({"_id": 1, "x": 1}, session=session)
        written = session.operation_time
        assert isinstance(written, timestamp_class(client))
        if read == "find":
            things.find_one({}, session=session)
        elif read == "aggregate":
            list(things.aggregate([{"$match": {}}], session=session))
        elif read == "distinct":
            things.distinct("x", session=session)
        else:
            things.count_documents({}, session=session)
        sent = commands.named(read if read != "count" else "aggregate")[-1]
        assert sent["readConcern"] == {"afterClusterTime": written}


def test_causal_reads_keep_the_collections_read_concern_level(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    from mongo_sansio.adapters.blocking import ReadConcern

    client, commands = open_client(clients, rs)
    local = client.get_database("db", read_concern=ReadConcern(level="local")).things
    with client.start_session() as session:
        local.insert_one({"_id": 1}, session=session)
        local.find_one({}, session=session)
        (find,) = commands.named("find")
        assert find["readConcern"] == {"level": "local", "afterClusterTime": session.operation_time}


def test_not_causally_consistent_sessions_send_no_after_cluster_time(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, commands = open_client(clients, rs)
    with client.start_session(causal_consistency=False) as session:
        client.db.things.insert_one({"_id": 1}, session=session)
        client.db.things.find_one({}, session=session)
    (find,) = commands.named("find")
    assert "afterClusterTime" not in find.get("readConcern", {})


def test_cluster_time_is_gossiped(rs: SimulatedReplicaSet, clients: list[Any]) -> None:
    client, commands = open_client(clients, rs)
    client.db.things.insert_one({"_id": 1})
    client.db.things.find_one({})
    (find,) = commands.named("find")
    assert isinstance(find["$clusterTime"]["clusterTime"], Timestamp)


def test_advancing_a_sessions_times_by_hand(rs: SimulatedReplicaSet, clients: list[Any]) -> None:
    """A second session continues the first one's causal chain (the spec's example)."""
    client, commands = open_client(clients, rs)
    with client.start_session() as first, client.start_session() as second:
        client.db.things.insert_one({"_id": 1}, session=first)
        assert first.cluster_time is not None
        second.advance_cluster_time(first.cluster_time)
        second.advance_operation_time(first.operation_time)
        assert client.db.things.find_one({}, session=second) == {"_id": 1}
        (find,) = commands.named("find")
        assert find["readConcern"] == {"afterClusterTime": first.operation_time}
        assert find["lsid"] == second.session_id
