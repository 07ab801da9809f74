"""PyMongo against the simulator's newer commands and options: snapshot reads at a cluster
time, $clusterTime/operationTime on every reply, command ``let`` variables, $facet, $out,
explain, getParameter/setParameter and the writeConcernError of an unsatisfiable write concern.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pymongo = pytest.importorskip("pymongo")
from bson import Timestamp  # noqa: E402
from pymongo import MongoClient  # noqa: E402
from pymongo.errors import OperationFailure, WriteConcernError  # noqa: E402
from pymongo.write_concern import WriteConcern  # noqa: E402

from mongo_sansio.adapters.sim import SimulatedReplicaSet  # noqa: E402

OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 5000, "connectTimeoutMS": 3000, "socketTimeoutMS": 10000}


@pytest.fixture
def client() -> Iterator[MongoClient[Any]]:
    with SimulatedReplicaSet(members=1) as replica_set:
        opened: MongoClient[Any] = MongoClient(replica_set.uri, **OPTIONS)
        yield opened
        opened.close()


def test_snapshot_read_at_a_cluster_time(client: MongoClient[Any]) -> None:
    things = client.db.things
    things.insert_one({"_id": 1, "v": "old"})
    first = client.db.command("find", "things", readConcern={"level": "snapshot"})
    at = first["cursor"]["atClusterTime"]
    assert isinstance(at, Timestamp)
    things.update_one({"_id": 1}, {"$set": {"v": "new"}})
    things.insert_one({"_id": 2})
    again = client.db.command("find", "things", readConcern={"level": "snapshot", "atClusterTime": at})
    assert again["cursor"]["firstBatch"] == [{"_id": 1, "v": "old"}]
    distinct = client.db.command("distinct", "things", key="v",
                                 readConcern={"level": "snapshot", "atClusterTime": at})
    assert distinct["values"] == ["old"] and distinct["atClusterTime"] == at
    with client.start_session(snapshot=True) as session:
        assert [d["_id"] for d in things.find({}, session=session)] == [1, 2]
    with pytest.raises(OperationFailure) as refused:
        client.db.command("count", "things", readConcern={"level": "snapshot"})
    assert refused.value.code == 72


def test_a_snapshot_session_refuses_what_cannot_read_at_a_snapshot(client: MongoClient[Any]) -> None:
    things = client.db.things
    things.insert_many([{"_id": i} for i in range(5)])
    with client.start_session(snapshot=True) as session:
        # a getMore carries the session's readConcern (PyMongo sends it) and reads on
        assert [d["_id"] for d in things.find({}, batch_size=2, session=session)] == [0, 1, 2, 3, 4]
        for refused_call, name in (
            (lambda: things.insert_one({"_id": 9}, session=session), "insert"),
            (lambda: things.update_one({"_id": 1}, {"$set": {"x": 1}}, session=session), "update"),
            (lambda: things.delete_one({}, session=session), "delete"),
            (lambda: things.find_one_and_update({"_id": 1}, {"$set": {"x": 1}}, session=session), "findAndModify"),
            (lambda: client.list_database_names(session=session), "listDatabases"),
            (lambda: client.db.list_collection_names(session=session), "listCollections"),
            (lambda: list(things.list_indexes(session=session)), "listIndexes"),
        ):
            with pytest.raises(OperationFailure) as refused:
                refused_call()
            assert refused.value.code == 72, name
            assert str(refused.value).startswith(
                f'Command {name} does not support {{ readConcern: {{ level: "snapshot", atClusterTime: Timestamp('
            ), refused.value
            assert "read concern not supported" in str(refused.value)
    assert things.count_documents({}) == 5  # nothing was written


def test_every_reply_carries_the_cluster_time(client: MongoClient[Any]) -> None:
    reply = client.admin.command("ping")
    assert isinstance(reply["operationTime"], Timestamp) and "clusterTime" in reply["$clusterTime"]
    with pytest.raises(OperationFailure) as raised:
        client.db.command("noSuchCommand")
    details = raised.value.details or {}
    assert isinstance(details["operationTime"], Timestamp) and "$clusterTime" in details
    with pytest.raises(OperationFailure) as failed:
        client.db.command("find", "things", readConcern={"level": "snapshot",
                                                         "atClusterTime": Timestamp(4_000_000_000, 1)})
    assert "$clusterTime" in (failed.value.details or {})


def test_let_variables(client: MongoClient[Any]) -> None:
    things = client.db.things
    things.insert_many([{"_id": 1, "x": "a"}, {"_id": 2, "x": "b"}])
    assert list(things.find({"$expr": {"$eq": ["$_id", "$$id"]}}, let={"id": 2})) == [{"_id": 2, "x": "b"}]
    assert list(things.aggregate([{"$match": {"$expr": {"$eq": ["$x", "$$wanted"]}}},
                                  {"$project": {"_id": 1, "tag": "$$tag"}}],
                                 let={"wanted": "a", "tag": {"$concat": ["t", "1"]}})) == [{"_id": 1, "tag": "t1"}]
    result = things.update_one({"$expr": {"$eq": ["$_id", "$$id"]}}, [{"$set": {"x": "$$x"}}],
                               let={"id": 1, "x": "set"})
    assert result.modified_count == 1
    things.update_one({"_id": 2}, {"$set": {"x": "$$x"}}, let={"x": "ignored"})  # operators: a plain string
    assert list(things.find({})) == [{"_id": 1, "x": "set"}, {"_id": 2, "x": "$$x"}]
    assert things.delete_one({"$expr": {"$eq": ["$_id", "$$id"]}}, let={"id": 2}).deleted_count == 1


def test_facet_and_out(client: MongoClient[Any]) -> None:
    things = client.db.things
    things.insert_many([{"_id": i, "even": i % 2 == 0} for i in range(5)])
    [facets] = things.aggregate([{"$facet": {"evens": [{"$match": {"even": True}}, {"$project": {"_id": 1}}],
                                             "total": [{"$count": "n"}]}}])
    assert facets == {"evens": [{"_id": 0}, {"_id": 2}, {"_id": 4}], "total": [{"n": 5}]}
    with pytest.raises(OperationFailure) as nested:
        list(things.aggregate([{"$facet": {"x": [{"$facet": {"y": [{"$limit": 1}]}}]}}]))
    assert nested.value.code == 40600
    client.db.copies.insert_one({"_id": "stale"})
    assert list(things.aggregate([{"$match": {"even": False}}, {"$out": "copies"}])) == []
    assert list(client.db.copies.find({})) == [{"_id": 1, "even": False}, {"_id": 3, "even": False}]


def test_explain(client: MongoClient[Any]) -> None:
    things = client.db.things
    things.insert_many([{"_id": i, "a": i} for i in range(4)])
    plan = things.find({"a": {"$gt": 1}}).explain()
    assert plan["queryPlanner"]["namespace"] == "db.things"
    assert plan["queryPlanner"]["winningPlan"]["stage"] == "COLLSCAN"
    assert plan["executionStats"]["nReturned"] == 2
    assert plan["executionStats"]["totalDocsExamined"] == 4
    by_id = client.db.command("explain", {"find": "things", "filter": {"_id": 1}}, verbosity="queryPlanner")
    assert by_id["queryPlanner"]["winningPlan"] == {"stage": "IDHACK"} and "executionStats" not in by_id
    update = client.db.command("explain", {"update": "things", "updates": [{"q": {"a": 0}, "u": {"$set": {"b": 1}}}]},
                               verbosity="executionStats")
    assert update["executionStats"]["nReturned"] == 1
    assert things.find_one({"_id": 0}) == {"_id": 0, "a": 0}  # explaining wrote nothing
    aggregate = client.db.command("aggregate", "things", pipeline=[{"$match": {"a": 3}}], explain=True)
    assert aggregate["queryPlanner"]["parsedQuery"] == {"a": 3}
    with pytest.raises(OperationFailure) as unknown:
        client.db.command("explain", {"nonsense": "things"})
    assert unknown.value.code == 59


def test_get_and_set_parameter(client: MongoClient[Any]) -> None:
    everything = client.admin.command("getParameter", "*")
    assert everything["transactionLifetimeLimitSeconds"] == 60
    assert everything["featureCompatibilityVersion"] == {"version": "7.0"}
    assert client.admin.command("setParameter", 1, transactionLifetimeLimitSeconds=30)["was"] == 60
    assert client.admin.command("getParameter", 1, transactionLifetimeLimitSeconds=1)[
        "transactionLifetimeLimitSeconds"] == 30
    with pytest.raises(OperationFailure) as unknown:
        client.admin.command("getParameter", 1, noSuchParameter=1)
    assert unknown.value.code == 72


def test_unsatisfiable_write_concern(client: MongoClient[Any]) -> None:
    wide = client.db.get_collection("things", write_concern=WriteConcern(w=5))
    with pytest.raises(WriteConcernError) as raised:
        wide.insert_one({"_id": 1})
    assert raised.value.code == 100
    assert client.db.things.find_one({"_id": 1}) == {"_id": 1}  # applied, as mongod does
    tagged = client.db.get_collection("things", write_concern=WriteConcern(w="noSuchTag"))
    with pytest.raises(WriteConcernError) as unknown:
        tagged.insert_one({"_id": 2})
    assert unknown.value.code == 79
