"""PyMongo's change streams against the simulated replica set (PyMongo is the judge).

Every stream uses a small maxAwaitTimeMS so an empty getMore answers fast; the conftest's
watchdog ends a hung run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pymongo = pytest.importorskip("pymongo")
from command_log import Commands  # noqa: E402
from integration_helpers import next_changes  # noqa: E402
from pymongo import MongoClient  # noqa: E402
from pymongo.errors import OperationFailure  # noqa: E402

from mongo_sansio.adapters.sim import SimulatedReplicaSet  # noqa: E402

AWAIT_MS = 50
# A short heartbeat: a NotWritablePrimary error marks the primary Unknown, and PyMongo's
# streaming monitor only answers again after heartbeatFrequencyMS.
OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 5000, "connectTimeoutMS": 3000, "socketTimeoutMS": 10000,
                           "heartbeatFrequencyMS": 500}


@pytest.fixture
def listener() -> Commands:
    return Commands()


@pytest.fixture
def client(rs: SimulatedReplicaSet, listener: Commands) -> Iterator[MongoClient[Any]]:
    opened: MongoClient[Any] = MongoClient(rs.uri, event_listeners=[listener], **OPTIONS)
    yield opened
    opened.close()


def test_watch_a_collection_sees_every_write(client: MongoClient[Any]) -> None:
    things = client.test.things
    things.insert_one({"_id": 0})
    with things.watch(max_await_time_ms=AWAIT_MS) as stream:
        assert stream.try_next() is None  # nothing yet, and the wait was short
        things.insert_one({"_id": 1, "x": 1, "tags": ["a", "b"]})
        things.update_one({"_id": 1}, {"$set": {"x": 2}, "$unset": {"tags": ""}})
        things.replace_one({"_id": 1}, {"y": 1})
        things.delete_one({"_id": 1})
        changes = next_changes(stream, 4)
    assert [c["operationType"] for c in changes] == ["insert", "update", "replace", "delete"]
    assert changes[0]["fullDocument"] == {"_id": 1, "x": 1, "tags": ["a", "b"]}
    assert changes[1]["updateDescription"] == {"updatedFields": {"x": 2}, "removedFields": ["tags"], "truncatedArrays": []}
    assert changes[2]["fullDocument"] == {"_id": 1, "y": 1}
    assert changes[3]["documentKey"] == {"_id": 1}
    assert all(c["ns"] == {"db": "test", "coll": "things"} for c in changes)


def test_writes_from_another_client_wake_the_waiting_get_more(rs: SimulatedReplicaSet, client: MongoClient[Any]) -> None:
    with client.test.live.watch(max_await_time_ms=3000) as stream:
        writer: MongoClient[Any] = MongoClient(rs.uri, **OPTIONS)
        try:
            timer = threading.Timer(0.2, lambda: writer.test.live.insert_one({"_id": "late"}))
            timer.start()
            started = time.monotonic()
            change = stream.try_next()
            timer.join()
        finally:
            writer.close()
    assert change is not None and change["documentKey"] == {"_id": "late"}
    assert time.monotonic() - started < 2.5  # answered by the write, not by maxTimeMS


def test_resume_after_a_token(client: MongoClient[Any]) -> None:
    things = client.test.things
    with things.watch(max_await_time_ms=AWAIT_MS) as stream:
        things.insert_many([{"_id": i} for i in range(4)])
        changes = next_changes(stream, 2)
    with things.watch(resume_after=changes[1]["_id"], max_await_time_ms=AWAIT_MS) as resumed:
        rest = next_changes(resumed, 2)
    assert [c["documentKey"]["_id"] for c in rest] == [2, 3]


def test_start_after_an_invalidate(client: MongoClient[Any]) -> None:
    things = client.test.things
    with things.watch(max_await_time_ms=AWAIT_MS) as stream:
        things.insert_one({"_id": 1})
        things.drop()
        things.insert_one({"_id": 2})
        changes = next_changes(stream, 3)
        assert [c["operationType"] for c in changes] == ["insert", "drop", "invalidate"]
        assert not stream.alive
    invalidate = changes[-1]["_id"]
    with pytest.raises(OperationFailure) as refused:
        with things.watch(resume_after=invalidate) as bad:
            bad.try_next()
    assert refused.value.code == 260
    with things.watch(start_after=invalidate, max_await_time_ms=AWAIT_MS) as after:
        (change,) = next_changes(after, 1)
    assert change["operationType"] == "insert" and change["documentKey"] == {"_id": 2}


def test_start_at_operation_time(client: MongoClient[Any]) -> None:
    things = client.test.things
    with client.start_session() as session:
        things.insert_one({"_id": 1}, session=session)
        at = session.operation_time
        things.insert_one({"_id": 2}, session=session)
    with things.watch(start_at_operation_time=at, max_await_time_ms=AWAIT_MS) as stream:
        changes = next_changes(stream, 2)
    assert [c["documentKey"]["_id"] for c in changes] == [1, 2]


def test_full_document_update_lookup_and_pre_images(client: MongoClient[Any]) -> None:
    db = client.test
    db.create_collection("images", changeStreamPreAndPostImages={"enabled": True})
    db.images.insert_one({"_id": 1, "n": 0})
    db.plain.insert_one({"_id": 1, "n": 0})
    with db.plain.watch(full_document="updateLookup", max_await_time_ms=AWAIT_MS) as lookup, \
            db.images.watch(full_document="required", full_document_before_change="required",
                            max_await_time_ms=AWAIT_MS) as images:
        db.plain.update_one({"_id": 1}, {"$inc": {"n": 1}})
        db.images.update_one({"_id": 1}, {"$inc": {"n": 1}})
        db.images.delete_one({"_id": 1})
        (looked_up,) = next_changes(lookup, 1)
        updated, deleted = next_changes(images, 2)
    assert looked_up["fullDocument"] == {"_id": 1, "n": 1}
    assert updated["fullDocument"] == {"_id": 1, "n": 1}
    assert updated["fullDocumentBeforeChange"] == {"_id": 1, "n": 0}
    assert deleted["fullDocumentBeforeChange"] == {"_id": 1, "n": 1}


def test_database_and_cluster_streams_with_expanded_events(client: MongoClient[Any]) -> None:
    with client.test.watch(show_expanded_events=True, max_await_time_ms=AWAIT_MS) as database, \
            client.watch(max_await_time_ms=AWAIT_MS) as cluster:
        client.test.create_collection("made")
        client.test.made.create_index("x")
        client.other.c.insert_one({"_id": 1})
        client.admin.command("renameCollection", "test.made", to="test.renamed")
        client.drop_database("test")
        expanded = next_changes(database, 6)
        everything = next_changes(cluster, 4)
    assert [c["operationType"] for c in expanded] == [
        "create", "createIndexes", "rename", "drop", "dropDatabase", "invalidate"]
    assert expanded[2]["to"] == {"db": "test", "coll": "renamed"}
    assert [c["operationType"] for c in everything] == ["insert", "rename", "drop", "dropDatabase"]


def test_change_stream_survives_a_get_more_failure_and_a_step_down(
    rs: SimulatedReplicaSet, client: MongoClient[Any], listener: Commands
) -> None:
    things = client.test.things
    seen: list[int] = []
    with things.watch(max_await_time_ms=1500) as stream:
        things.insert_many([{"_id": i} for i in range(3)])
        seen += [c["documentKey"]["_id"] for c in next_changes(stream, 3)]
        # A getMore fails after its cursor was checked out, as mongod's would on a node that is
        # no longer primary (10107; the server adds the ResumableChangeStreamError label):
        # PyMongo resumes.
        first_primary = rs.primary
        assert first_primary is not None
        rs.configure_failpoint(first_primary, {"configureFailPoint": "failGetMoreAfterCursorCheckout",
                                               "mode": {"times": 1}, "data": {"errorCode": 10107}})
        things.insert_many([{"_id": i} for i in range(3, 6)])
        seen += [c["documentKey"]["_id"] for c in next_changes(stream, 3)]
        assert len(listener.named("aggregate")) == 2
        # A stepdown while the getMore waits: it fails with 11602 (labelled resumable) and
        # PyMongo resumes on the new primary.
        timer = threading.Timer(0.2, rs.step_down)
        timer.start()
        assert stream.try_next() is None
        timer.join()
        assert rs.primary not in (None, first_primary)
        things.insert_many([{"_id": i} for i in range(6, 9)])
        seen += [c["documentKey"]["_id"] for c in next_changes(stream, 3)]
    assert seen == list(range(9))  # nothing lost, nothing repeated
    aggregates = listener.named("aggregate")
    assert len(aggregates) == 3
    assert all("resumeAfter" in e.command["pipeline"][0]["$changeStream"] for e in aggregates[1:])
    assert aggregates[2].connection_id[1] != aggregates[0].connection_id[1]  # another member


def test_a_get_more_interrupted_by_a_step_down_resumes(rs: SimulatedReplicaSet, client: MongoClient[Any],
                                                       listener: Commands) -> None:
    things = client.test.things
    with things.watch(max_await_time_ms=3000) as stream:
        things.insert_one({"_id": 0})
        assert stream.try_next() is not None
        timer = threading.Timer(0.2, rs.step_down)
        timer.start()
        stream.try_next()  # interrupted (11602, resumable), resumed on the new primary
        timer.join()
        things.insert_one({"_id": 1})
        (change,) = next_changes(stream, 1)
    assert change["documentKey"] == {"_id": 1}
    aggregates = listener.named("aggregate")
    assert len(aggregates) == 2
    assert aggregates[1].connection_id != aggregates[0].connection_id


def test_history_lost_with_a_tiny_oplog(rs: SimulatedReplicaSet, client: MongoClient[Any]) -> None:
    things = client.test.things
    with things.watch(max_await_time_ms=AWAIT_MS) as stream:
        things.insert_one({"_id": 0})
        token = next_changes(stream, 1)[0]["_id"]
    rs.call(lambda cluster, now: setattr(cluster.oplog, "max_entries", 3))
    things.insert_many([{"_id": i} for i in range(1, 10)], ordered=True)
    for i in range(10, 14):
        things.insert_one({"_id": i})
    with pytest.raises(OperationFailure) as lost:
        with things.watch(resume_after=token) as resumed:
            resumed.try_next()
    assert lost.value.code == 286
