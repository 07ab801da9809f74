"""PyMongo's transactions against the simulated replica set: snapshot isolation, write
conflicts, abort and commit, one change event per operation with the session, the errors and
labels mongod gives, failCommand on commitTransaction, and the lifetime limit.

PyMongo is the reference peer: it drives the simulator through ``start_transaction`` and
``with_transaction`` exactly as it drives mongod.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pymongo = pytest.importorskip("pymongo")
from bson import Int64  # noqa: E402
from pymongo import MongoClient  # noqa: E402
from pymongo.errors import OperationFailure  # noqa: E402
from pymongo.read_concern import ReadConcern  # noqa: E402

from mongo_sansio.adapters.sim import SimulatedReplicaSet  # noqa: E402

OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 5000, "connectTimeoutMS": 3000, "socketTimeoutMS": 10000}


@pytest.fixture
def one() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=1) as replica_set:
        yield replica_set


@pytest.fixture
def client(one: SimulatedReplicaSet) -> Iterator[MongoClient[Any]]:
    opened: MongoClient[Any] = MongoClient(one.uri, **OPTIONS)
    yield opened
    opened.close()


def server_error(client: MongoClient[Any], command: dict[str, Any], session: Any) -> OperationFailure:
    with pytest.raises(OperationFailure) as raised:
        client.admin.command(command, session=session)
    return raised.value


def test_own_writes_seen_others_not_until_commit(client: MongoClient[Any]) -> None:
    things = client.db.things
    things.insert_one({"_id": 0, "x": 0})
    with client.start_session() as session, session.start_transaction():
        things.insert_one({"_id": 1}, session=session)
        things.update_one({"_id": 0}, {"$set": {"x": 1}}, session=session)
        assert list(things.find({}, session=session)) == [{"_id": 0, "x": 1}, {"_id": 1}]
        assert things.count_documents({}, session=session) == 2
        assert list(things.find({})) == [{"_id": 0, "x": 0}]
    assert list(things.find({})) == [{"_id": 0, "x": 1}, {"_id": 1}]


def test_snapshot_does_not_see_later_commits(client: MongoClient[Any]) -> None:
    things = client.db.things
    things.insert_many([{"_id": 0, "x": 0}, {"_id": 9}])
    with client.start_session() as session, session.start_transaction():
        assert things.find_one({"_id": 0}, session=session) == {"_id": 0, "x": 0}
        things.update_one({"_id": 0}, {"$set": {"x": 5}})  # outside, committed at once
        things.insert_one({"_id": 1})
        things.delete_one({"_id": 9})
        assert list(things.find({}, session=session)) == [{"_id": 0, "x": 0}, {"_id": 9}]
    assert list(things.find({})) == [{"_id": 0, "x": 5}, {"_id": 1}]


def test_abort_leaves_nothing(client: MongoClient[Any]) -> None:
    things = client.db.things
    things.insert_one({"_id": 0})
    with client.start_session() as session:
        session.start_transaction()
        things.insert_one({"_id": 1}, session=session)
        things.delete_one({"_id": 0}, session=session)
        session.abort_transaction()
    assert list(things.find({})) == [{"_id": 0}]


def test_two_transactions_writing_one_document_conflict(client: MongoClient[Any]) -> None:
    things = client.db.things
    things.insert_one({"_id": 0, "n": 0})
    first, second = client.start_session(), client.start_session()
    first.start_transaction()
    second.start_transaction()
    things.update_one({"_id": 0}, {"$inc": {"n": 1}}, session=first)
    with pytest.raises(OperationFailure) as raised:
        things.update_one({"_id": 0}, {"$inc": {"n": 10}}, session=second)
    assert raised.value.code == 112
    assert raised.value.has_error_label("TransientTransactionError")
    first.commit_transaction()
    # mongod aborted the loser: its commit finds no transaction
    with pytest.raises(OperationFailure) as gone:
        second.commit_transaction()
    assert gone.value.code == 251
    assert gone.value.has_error_label("TransientTransactionError")
    assert things.find_one({"_id": 0}) == {"_id": 0, "n": 1}
    first.end_session()
    second.end_session()


def test_document_changed_after_snapshot_is_a_write_conflict(client: MongoClient[Any]) -> None:
    things = client.db.things
    things.insert_many([{"_id": 0, "n": 0}, {"_id": 1}])
    with client.start_session() as session:
        session.start_transaction()
        things.find_one({"_id": 1}, session=session)  # the snapshot is taken here
        things.update_one({"_id": 0}, {"$inc": {"n": 1}})
        with pytest.raises(OperationFailure) as raised:
            things.update_one({"_id": 0}, {"$inc": {"n": 1}}, session=session)
        assert raised.value.code == 112
        assert raised.value.has_error_label("TransientTransactionError")
    assert things.find_one({"_id": 0}) == {"_id": 0, "n": 1}


def test_write_outside_waits_for_the_transaction_holding_the_document(client: MongoClient[Any]) -> None:
    things = client.db.things
    things.insert_one({"_id": 0, "n": 0})
    session = client.start_session()
    session.start_transaction()
    things.update_one({"_id": 0}, {"$inc": {"n": 1}}, session=session)
    done = threading.Event()

    def outside() -> None:
        things.update_one({"_id": 0}, {"$inc": {"n": 100}})
        done.set()

    writer = threading.Thread(target=outside)
    writer.start()
    assert not done.wait(0.3), "the outside write must wait for the transaction's lock"
    session.commit_transaction()
    assert done.wait(5)
    writer.join()
    assert things.find_one({"_id": 0}) == {"_id": 0, "n": 101}
    session.end_session()


def test_with_transaction_commits_the_callback(client: MongoClient[Any]) -> None:
    things = client.db.things

    def callback(session: Any) -> str:
        things.insert_one({"_id": 1}, session=session)
        things.insert_one({"_id": 2}, session=session)
        return "done"

    with client.start_session() as session:
        assert session.with_transaction(callback) == "done"
    assert [d["_id"] for d in things.find({})] == [1, 2]


def test_change_stream_sees_one_event_per_operation_with_the_session(client: MongoClient[Any]) -> None:
    things = client.db.things
    things.insert_one({"_id": 0, "x": 0})
    with things.watch(max_await_time_ms=50) as stream:
        with client.start_session() as session:
            with session.start_transaction():
                things.insert_one({"_id": 1}, session=session)
                things.update_one({"_id": 0}, {"$set": {"x": 1}}, session=session)
                things.delete_one({"_id": 1}, session=session)
            with session.start_transaction():  # aborted: no events
                things.insert_one({"_id": 7}, session=session)
                session.abort_transaction()
            lsid = session.session_id
        things.insert_one({"_id": 3})
        events = [stream.next() for _ in range(4)]
    kinds = [e["operationType"] for e in events]
    assert kinds == ["insert", "update", "delete", "insert"]
    transaction = events[:3]
    assert {e["clusterTime"] for e in transaction} == {transaction[0]["clusterTime"]}
    for event in transaction:
        assert event["lsid"]["id"] == lsid["id"]
        assert event["txnNumber"] == Int64(1)
    assert "lsid" not in events[3] and "txnNumber" not in events[3]
    assert events[3]["documentKey"] == {"_id": 3}


def test_commit_is_one_oplog_entry(one: SimulatedReplicaSet, client: MongoClient[Any]) -> None:
    things = client.db.things
    things.insert_one({"_id": 0})
    before = one.call(lambda cluster, now: len(cluster.oplog.entries))
    with client.start_session() as session, session.start_transaction():
        things.insert_many([{"_id": 1}, {"_id": 2}], session=session)
        things.delete_one({"_id": 0}, session=session)
    entries = one.call(lambda cluster, now: cluster.oplog.entries[before:])
    assert [e.kind for e in entries] == ["applyOps"]
    assert [op.kind for op in entries[0].ops] == ["insert", "insert", "delete"]


def test_no_such_transaction_and_committed_errors(client: MongoClient[Any]) -> None:
    with client.start_session() as session:
        lsid = session.session_id
        error = server_error(client, {"find": "things", "lsid": lsid, "txnNumber": Int64(5), "autocommit": False},
                             None)
        assert error.code == 251 and "TransientTransactionError" in (error.details or {})["errorLabels"]
        start = {"insert": "things", "documents": [{"_id": 1}], "lsid": lsid, "txnNumber": Int64(6),
                 "autocommit": False, "startTransaction": True}
        client.db.command(start)
        commit = {"commitTransaction": 1, "lsid": lsid, "txnNumber": Int64(6), "autocommit": False}
        assert client.admin.command(commit)["ok"] == 1.0
        assert client.admin.command(commit)["ok"] == 1.0  # a retried commit answers ok
        abort = {"abortTransaction": 1, "lsid": lsid, "txnNumber": Int64(6), "autocommit": False}
        error = server_error(client, abort, None)
        assert error.code == 256
        assert (error.details or {})["errmsg"] == "Cannot call abortTransaction after calling commitTransaction."
        older = dict(start, txnNumber=Int64(4))
        with pytest.raises(OperationFailure) as too_old:
            client.db.command(older)
        assert too_old.value.code == 225


def test_statement_rules(client: MongoClient[Any]) -> None:
    with client.start_session() as session:
        lsid = session.session_id
        base = {"lsid": lsid, "txnNumber": Int64(1), "autocommit": False}
        client.db.command({"find": "things", **base, "startTransaction": True, "readConcern": {"level": "snapshot"}})
        with pytest.raises(OperationFailure) as read_concern:
            client.db.command({"find": "things", **base, "readConcern": {"level": "local"}})
        assert read_concern.value.code == 72
        base["txnNumber"] = Int64(2)
        client.db.command({"find": "things", **base, "startTransaction": True})
        with pytest.raises(OperationFailure) as write_concern:
            client.db.command({"insert": "things", "documents": [{}], **base, "writeConcern": {"w": 1}})
        assert write_concern.value.code == 72
        base["txnNumber"] = Int64(3)
        with pytest.raises(OperationFailure) as count:
            client.db.command({"count": "things", **base, "startTransaction": True})
        assert count.value.code == 263
        assert (count.value.details or {})["codeName"] == "OperationNotSupportedInTransaction"


def test_a_failed_statement_aborts_the_transaction(client: MongoClient[Any]) -> None:
    things = client.db.things
    things.insert_one({"_id": 1})
    with client.start_session() as session:
        session.start_transaction()
        with pytest.raises(pymongo.errors.DuplicateKeyError) as duplicate:
            things.insert_one({"_id": 1}, session=session)
        assert not duplicate.value.has_error_label("TransientTransactionError")
        with pytest.raises(OperationFailure) as gone:
            things.insert_one({"_id": 2}, session=session)
        assert gone.value.code == 251
        session.abort_transaction()
    assert list(things.find({})) == [{"_id": 1}]


def test_fail_command_on_commit(one: SimulatedReplicaSet) -> None:
    # The injected shutdown error (91) carries no topologyVersion, as mongod's: the client marks
    # the primary Unknown and the retried commit waits for the next heartbeat
    client: MongoClient[Any] = MongoClient(one.uri, **OPTIONS, heartbeatFrequencyMS=500)
    try:
        _fail_command_on_commit(client)
    finally:
        client.close()


def _fail_command_on_commit(client: MongoClient[Any]) -> None:
    things = client.db.things
    client.admin.command("configureFailPoint", "failCommand", mode={"times": 1},
                         data={"failCommands": ["commitTransaction"], "closeConnection": True})
    with client.start_session() as session:
        with session.start_transaction():
            things.insert_one({"_id": 1}, session=session)
        # PyMongo retried the commit after the dropped connection; it was applied once
    assert list(things.find({})) == [{"_id": 1}]
    client.admin.command("configureFailPoint", "failCommand", mode={"times": 1},
                         data={"failCommands": ["commitTransaction"], "errorCode": 91,
                               "writeConcernError": {"code": 91, "errmsg": "shutdown"}})
    with client.start_session() as session:
        session.start_transaction()
        things.insert_one({"_id": 2}, session=session)
        session.commit_transaction()  # the retryable error was retried
    assert [d["_id"] for d in things.find({})] == [1, 2]
    client.admin.command("configureFailPoint", "failCommand", mode={"times": 1},
                         data={"failCommands": ["commitTransaction"], "errorCode": 251,
                               "errorLabels": ["TransientTransactionError"]})
    with client.start_session() as session:
        session.start_transaction()
        things.insert_one({"_id": 3}, session=session)
        with pytest.raises(OperationFailure) as raised:
            session.commit_transaction()
        assert raised.value.has_error_label("TransientTransactionError")


def test_write_concern_error_on_commit_is_labelled(client: MongoClient[Any]) -> None:
    client.admin.command("configureFailPoint", "failCommand", mode={"times": 2},
                         data={"failCommands": ["commitTransaction"],
                               "writeConcernError": {"code": 91, "errmsg": "shutting down"}})
    with client.start_session() as session:
        lsid = session.session_id
        client.db.command({"insert": "things", "documents": [{"_id": 1}], "lsid": lsid, "txnNumber": Int64(1),
                           "autocommit": False, "startTransaction": True})
        reply = client.admin.command({"commitTransaction": 1, "lsid": lsid, "txnNumber": Int64(1),
                                      "autocommit": False, "writeConcern": {"w": "majority"}})
    assert reply["writeConcernError"]["code"] == 91
    assert reply["errorLabels"] == ["RetryableWriteError"]


def test_lifetime_limit_aborts(client: MongoClient[Any]) -> None:
    assert client.admin.command("getParameter", 1, transactionLifetimeLimitSeconds=1)[
        "transactionLifetimeLimitSeconds"] == 60
    client.admin.command("setParameter", 1, transactionLifetimeLimitSeconds=1)
    things = client.db.things
    with client.start_session() as session:
        session.start_transaction()
        things.insert_one({"_id": 1}, session=session)
        time.sleep(1.1)
        with pytest.raises(OperationFailure) as raised:
            things.insert_one({"_id": 2}, session=session)
        assert raised.value.code == 251
        session.abort_transaction()
    assert things.count_documents({}) == 0


def test_end_sessions_aborts_the_open_transaction(client: MongoClient[Any]) -> None:
    things = client.db.things
    session = client.start_session()
    session.start_transaction()
    things.insert_one({"_id": 1}, session=session)
    lsid = session.session_id
    client.admin.command("endSessions", [lsid])
    with pytest.raises(OperationFailure) as raised:
        client.admin.command({"commitTransaction": 1, "lsid": lsid, "txnNumber": Int64(1), "autocommit": False})
    assert raised.value.code == 251
    assert things.count_documents({}) == 0


def test_stepdown_aborts_open_transactions(rs: SimulatedReplicaSet) -> None:
    client: MongoClient[Any] = MongoClient(rs.uri, **OPTIONS)
    try:
        things = client.db.things
        session = client.start_session()
        session.start_transaction()
        things.insert_one({"_id": 1}, session=session)
        rs.step_down()
        with pytest.raises(OperationFailure) as raised:
            session.commit_transaction()
        assert raised.value.has_error_label("TransientTransactionError") or raised.value.code == 251
        assert things.count_documents({}) == 0
    finally:
        client.close()


def test_collections_and_indexes_created_in_a_transaction(client: MongoClient[Any]) -> None:
    database = client.db
    with client.start_session() as session:
        with session.start_transaction():
            database.create_collection("made", session=session)
            database.made.create_index("x", name="x_1", session=session)
            database.made.insert_one({"_id": 1, "x": 1}, session=session)
            assert "made" not in database.list_collection_names()
        assert "made" in database.list_collection_names()
    assert [i["name"] for i in database.made.list_indexes()] == ["_id_", "x_1"]
    database.create_collection("existing")
    with client.start_session() as session, session.start_transaction():
        with pytest.raises(OperationFailure) as raised:
            database.existing.create_index("y", session=session)
        assert raised.value.code == 263
        session.abort_transaction()


def test_snapshot_read_concern_in_a_transaction(client: MongoClient[Any]) -> None:
    things = client.db.things
    things.insert_one({"_id": 1})
    with client.start_session() as session:
        with session.start_transaction(read_concern=ReadConcern("snapshot")):
            assert things.find_one({}, session=session) == {"_id": 1}
