"""Transactions of our blocking client against the simulated replica set: an aborted
transaction leaves nothing, a committed one appears whole (its change events together, in
order, with lsid and txnNumber), with_transaction retries a TransientTransactionError and
commits again after UnknownTransactionCommitResult, commit retried with w:majority, the
transaction block's commit/abort, and the commands a transaction sends compared with PyMongo's
on the same simulator."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from integration_helpers import next_changes

from mongo_sansio import monitoring
from mongo_sansio.adapters.blocking import MongoClient, ReadConcern, WriteConcern
from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.errors import InvalidOperation, ServerError
from mongo_sansio.monitoring import CommandStartedEvent

OPTIONS: dict[str, Any] = {
    "serverSelectionTimeoutMS": 5000,
    "connectTimeoutMS": 3000,
    "socketTimeoutMS": 10000,
}
SESSION_FIELDS = (
    "lsid",
    "txnNumber",
    "startTransaction",
    "autocommit",
    "readConcern",
    "writeConcern",
)


class Commands(monitoring.CommandListener):
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


def open_client(
    clients: list[Any], rs: SimulatedReplicaSet, **options: Any
) -> tuple[MongoClient, Commands]:
    commands = Commands()
    client = MongoClient(rs.uri, event_listeners=[commands], **{**OPTIONS, **options})
    clients.append(client)
    return client, commands


def fail(rs: SimulatedReplicaSet, command: str, times: int = 1, **data: Any) -> None:
    primary = rs.primary
    assert primary is not None
    rs.configure_failpoint(
        primary,
        {
            "configureFailPoint": "failCommand",
            "mode": {"times": times},
            "data": {"failCommands": [command], **data},
        },
    )


def test_an_aborted_transaction_leaves_nothing(rs: SimulatedReplicaSet, clients: list[Any]) -> None:
    client, _ = open_client(clients, rs)
    things = client.db.things
    things.insert_one({"_id": 0})
    with client.start_session() as session:
        session.start_transaction()
        things.insert_one({"_id": 1}, session=session)
        things.delete_one({"_id": 0}, session=session)
        assert things.count_documents({}, session=session) == 1
        session.abort_transaction()
        assert not session.in_transaction
    assert list(things.find({})) == [{"_id": 0}]


def test_a_committed_transaction_appears_whole_and_only_at_commit(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, _ = open_client(clients, rs)
    things = client.db.things
    things.insert_one({"_id": 0, "x": 0})
    with client.start_session() as session:
        with session.start_transaction():
            things.insert_one({"_id": 1}, session=session)
            things.update_one({"_id": 0}, {"$set": {"x": 1}}, session=session)
            assert list(things.find({})) == [{"_id": 0, "x": 0}]  # outside: not yet
        assert not session.in_transaction
    assert list(things.find({})) == [{"_id": 0, "x": 1}, {"_id": 1}]


def test_an_exception_in_the_transaction_block_aborts(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, commands = open_client(clients, rs)
    things = client.db.things
    with client.start_session() as session:
        with pytest.raises(RuntimeError), session.start_transaction():
            things.insert_one({"_id": 1}, session=session)
            raise RuntimeError("the application changed its mind")
    assert things.count_documents({}) == 0
    assert len(commands.named("abortTransaction")) == 1
    assert commands.named("commitTransaction") == []


def test_ending_a_session_aborts_its_open_transaction(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, commands = open_client(clients, rs)
    session = client.start_session()
    session.start_transaction()
    client.db.things.insert_one({"_id": 1}, session=session)
    session.end_session()
    assert len(commands.named("abortTransaction")) == 1
    assert client.db.things.count_documents({}) == 0


def test_committed_change_events_arrive_together_in_order_with_the_session(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, _ = open_client(clients, rs)
    things = client.db.things
    things.insert_one({"_id": "before"})
    with things.watch(max_await_time_ms=50) as stream:
        with client.start_session() as session:
            with session.start_transaction():
                things.insert_one({"_id": 1}, session=session)
                things.insert_one({"_id": 2}, session=session)
                things.update_one({"_id": 1}, {"$set": {"y": 1}}, session=session)
                things.insert_one({"_id": "outside"})  # committed before the transaction
            lsid = session.session_id
        events = next_changes(stream, 4)
    assert [e["operationType"] for e in events] == ["insert", "insert", "insert", "update"]
    assert events[0]["documentKey"] == {"_id": "outside"} and "lsid" not in events[0]
    inside = events[1:]
    assert [e["documentKey"]["_id"] for e in inside] == [1, 2, 1]
    assert all(e["lsid"]["id"] == lsid["id"] for e in inside)  # mongod adds the user's uid
    assert len({e["txnNumber"] for e in inside}) == 1
    assert len({e["clusterTime"] for e in inside}) == 1  # one commit, one instant


def test_with_transaction_retries_a_transient_error(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, commands = open_client(clients, rs)
    things = client.db.things
    fail(rs, "insert", errorCode=112, errorLabels=["TransientTransactionError"])
    calls: list[int] = []

    def callback(session: Any) -> str:
        calls.append(1)
        things.insert_one({"_id": len(calls)}, session=session)
        return "done"

    with client.start_session() as session:
        assert session.with_transaction(callback) == "done"
    assert len(calls) == 2
    assert list(things.find({})) == [{"_id": 2}]
    assert len(commands.named("abortTransaction")) == 1
    first, second = commands.named("insert")
    assert second["txnNumber"] == first["txnNumber"] + 1
    assert first["startTransaction"] is True and second["startTransaction"] is True


def test_commit_is_retried_with_majority_after_a_network_error(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, commands = open_client(clients, rs)
    things = client.db.things
    with client.start_session() as session:
        session.start_transaction()
        things.insert_one({"_id": 1}, session=session)
        fail(rs, "commitTransaction", closeConnection=True)
        session.commit_transaction()
    first, retry = commands.named("commitTransaction")
    assert "writeConcern" not in first
    assert retry["writeConcern"] == {"w": "majority", "wtimeout": 10000}
    assert retry["txnNumber"] == first["txnNumber"] and retry["lsid"] == first["lsid"]
    assert things.count_documents({}) == 1


def test_with_transaction_commits_again_after_an_unknown_commit_result(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    """Both attempts of the commit fail (the commit's own retry included): the error is
    UnknownTransactionCommitResult and with_transaction commits again, with w:majority."""
    client, commands = open_client(clients, rs)
    things = client.db.things
    fail(rs, "commitTransaction", times=2, closeConnection=True)
    calls: list[int] = []

    def callback(session: Any) -> None:
        calls.append(1)
        things.insert_one({"_id": 1}, session=session)

    with client.start_session() as session:
        session.with_transaction(callback)
    commits = commands.named("commitTransaction")
    assert len(commits) == 3 and len(calls) == 1
    assert [c.get("writeConcern", {}).get("w") for c in commits] == [None, "majority", "majority"]
    assert len({c["txnNumber"] for c in commits}) == 1
    assert things.count_documents({}) == 1


def test_unknown_commit_result_label_when_the_commit_cannot_be_confirmed(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    # An injected shutdown error (91) carries no topologyVersion, as mongod's: the client marks
    # the primary Unknown and the commit's retry waits for the next heartbeat
    client, _ = open_client(clients, rs, heartbeatFrequencyMS=500)
    with client.start_session() as session:
        session.start_transaction()
        client.db.things.insert_one({"_id": 1}, session=session)
        fail(rs, "commitTransaction", times=2, errorCode=91)
        with pytest.raises(ServerError) as raised:
            session.commit_transaction()
        assert raised.value.has_error_label("UnknownTransactionCommitResult")
        assert not raised.value.has_error_label("TransientTransactionError")
        session.commit_transaction()  # the user's own retry: the transaction commits
    assert client.db.things.count_documents({}) == 1


def test_a_write_conflict_is_transient(rs: SimulatedReplicaSet, clients: list[Any]) -> None:
    client, _ = open_client(clients, rs)
    things = client.db.things
    things.insert_one({"_id": 1, "n": 0})
    with client.start_session() as first, client.start_session() as second:
        first.start_transaction()
        things.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=first)
        second.start_transaction()
        with pytest.raises(ServerError) as raised:
            things.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=second)
        assert raised.value.code == 112
        assert raised.value.has_error_label("TransientTransactionError")
        second.abort_transaction()
        first.commit_transaction()
    assert things.find_one({"_id": 1}) == {"_id": 1, "n": 1}


def test_transaction_state_errors_as_pymongo(rs: SimulatedReplicaSet, clients: list[Any]) -> None:
    client, _ = open_client(clients, rs)
    with client.start_session() as session:
        with pytest.raises(InvalidOperation, match="No transaction started"):
            session.commit_transaction()
        session.start_transaction()
        with pytest.raises(InvalidOperation, match="Transaction already in progress"):
            session.start_transaction()
        session.abort_transaction()
        with pytest.raises(InvalidOperation, match="Cannot call abortTransaction twice"):
            session.abort_transaction()


def transaction_script(client: Any, session: Any) -> None:
    things = client.db.things
    session.start_transaction(
        read_concern=ReadConcern(level="snapshot"), write_concern=WriteConcern(w="majority")
    )
    things.insert_one({"_id": 1}, session=session)
    things.find_one({"_id": 1}, session=session)
    things.update_one({"_id": 1}, {"$set": {"x": 1}}, session=session)
    session.commit_transaction()


def session_fields(commands: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Each command's name and session fields, the lsid replaced by a marker."""
    out = []
    for body in commands:
        fields = {key: body[key] for key in SESSION_FIELDS if key in body}
        if "lsid" in fields:
            fields["lsid"] = "lsid"
        out.append((next(iter(body)), fields))
    return out


def test_a_transactions_commands_match_pymongos(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    pymongo = pytest.importorskip("pymongo")
    from command_log import Commands as PyMongoCommands
    from pymongo.read_concern import ReadConcern as PyMongoReadConcern
    from pymongo.write_concern import WriteConcern as PyMongoWriteConcern

    theirs_log = PyMongoCommands()
    theirs = pymongo.MongoClient(rs.uri, event_listeners=[theirs_log], **OPTIONS)
    clients.append(theirs)
    ours, ours_log = open_client(clients, rs)
    ours.db.create_collection("things")
    with theirs.start_session() as session:
        things = theirs.db.things
        session.start_transaction(
            read_concern=PyMongoReadConcern("snapshot"),
            write_concern=PyMongoWriteConcern(w="majority"),
        )
        things.insert_one({"_id": 1}, session=session)
        things.find_one({"_id": 1}, session=session)
        things.update_one({"_id": 1}, {"$set": {"x": 1}}, session=session)
        session.commit_transaction()
    ours.db.things.delete_many({})
    with ours.start_session() as session:
        transaction_script(ours, session)
    names = ("insert", "find", "update", "commitTransaction")
    theirs_sent = [dict(e.command) for e in theirs_log.events if e.command_name in names]
    ours_sent = [
        body
        for event in ours_log.events
        if event.command_name in names
        for body in [dict(event.command)]
        if "lsid" in body and "txnNumber" in body
    ]
    assert session_fields(ours_sent) == session_fields(theirs_sent)


def test_the_collections_write_concern_is_ignored_in_a_transaction(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    """As PyMongo (and the spec's "collection writeConcern ignored" tests): the transaction's
    write concern applies at commit, the collection's (w:0 included) is not sent inside."""
    client, commands = open_client(clients, rs)
    for concern in (WriteConcern(w=1), WriteConcern(w=0)):
        things = client.get_database("db", write_concern=concern).things
        with client.start_session() as session, session.start_transaction():
            things.insert_one({"_id": concern.document.get("w")}, session=session)
    assert all("writeConcern" not in body for body in commands.named("insert"))
    assert sorted(doc["_id"] for doc in client.db.things.find({})) == [0, 1]


def test_snapshot_session_reads_at_the_first_reads_cluster_time(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, commands = open_client(clients, rs)
    client.db.things.insert_one({"_id": 1})
    with client.start_session(snapshot=True) as session:
        client.db.things.find_one({}, session=session)
        client.db.things.find_one({}, session=session)
    first, second = commands.named("find")
    assert first["readConcern"] == {"level": "snapshot"}
    assert "atClusterTime" in second["readConcern"]
