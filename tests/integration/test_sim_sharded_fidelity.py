"""What a data engineer or an app developer does against a sharded cluster, run with PyMongo
(the reference driver) against ``mongo-sansio sim --sharded --shards 2 --mongos 2`` started as a
user starts it, and each answer compared with the shape mongod 7.0's mongos gives: the fields
drivers read (n, nModified, upserted, writeErrors' codes and indexes, cursor ns/firstBatch/id,
codes and codeNames).  Scenarios test_sim_sharded.py already covers are not repeated here.

One CLI cluster serves the module; the everyday scenario also runs through
``--sharded --load-balanced`` and ``--load-balanced`` (started once each, with PyMongo and our
blocking client), and one test stops a router in process (``SimulatedShardedCluster``: the CLI
cannot).  Each test uses collections of its own.
"""

from __future__ import annotations

import itertools
import signal
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

pymongo = pytest.importorskip("pymongo")
from integration_helpers import cli_process, first_line_uri  # noqa: E402
from pymongo import DeleteMany, DeleteOne, InsertOne, MongoClient, ReplaceOne, UpdateMany, UpdateOne  # noqa: E402
from pymongo.errors import BulkWriteError, OperationFailure, WriteError  # noqa: E402

OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 5000, "connectTimeoutMS": 3000, "socketTimeoutMS": 10000}
_names = itertools.count()


def _stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=15) == 0


@pytest.fixture(scope="module")
def uri() -> Iterator[str]:
    with cli_process("sim", "--sharded", "--shards", "2", "--mongos", "2", "--port", "0") as process:
        yield first_line_uri(process)
        _stop(process)


@pytest.fixture(scope="module")
def client(uri: str) -> Iterator[MongoClient[Any]]:
    opened: MongoClient[Any] = MongoClient(uri, **OPTIONS)
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def one_mongos(uri: str) -> Iterator[MongoClient[Any]]:
    """A client of the first mongos alone (a cursor lives on the mongos that opened it)."""
    opened: MongoClient[Any] = MongoClient(uri.split(",")[0] + "/", **OPTIONS)
    yield opened
    opened.close()


def _sharded(client: MongoClient[Any], key: dict[str, Any], db: str = "fid") -> Any:
    name = f"c{next(_names)}"
    reply = client.admin.command("shardCollection", f"{db}.{name}", key=key)
    assert reply["collectionsharded"] == f"{db}.{name}" and reply["ok"] == 1.0
    return client[db][name]


def test_find_one_and_modify_without_the_shard_key_takes_the_first_match_by_sort_across_shards(
    client: MongoClient[Any],
) -> None:
    """mongod's two-phase write without a shard key compares each shard's first match by the
    sort: the document changed is the cluster's first, not one shard's."""
    coll = _sharded(client, {"_id": "hashed"})
    coll.insert_many([{"_id": i, "x": i % 3} for i in range(30)])
    assert coll.find_one_and_delete({"x": 2}, sort=[("_id", -1)]) == {"_id": 29, "x": 2}
    assert coll.find_one_and_update({"x": 2}, {"$set": {"s": 1}}, sort=[("_id", 1)],
                                    return_document=True) == {"_id": 2, "x": 2, "s": 1}
    assert coll.find_one_and_replace({"x": 0}, {"x": 0, "r": 1}, sort=[("_id", -1)])["_id"] == 27
    assert coll.find_one({"r": 1})["_id"] == 27


def test_a_sharded_collection_renamed_keeps_its_documents_key_and_chunks(client: MongoClient[Any]) -> None:
    """mongod 5.0 and later rename a sharded collection on every shard (same database only)."""
    coll = _sharded(client, {"_id": "hashed"})
    coll.insert_many([{"_id": i} for i in range(20)])
    uuid = client.config.collections.find_one({"_id": coll.full_name})["uuid"]
    renamed = coll.rename(f"{coll.name}_renamed")
    assert renamed["ok"] == 1.0
    new = client.fid[f"{coll.name}_renamed"]
    assert sorted(d["_id"] for d in new.find()) == list(range(20))
    assert coll.count_documents({}) == 0
    entry = client.config.collections.find_one({"_id": new.full_name})
    assert entry["key"] == {"_id": "hashed"} and entry["uuid"] == uuid
    assert client.config.collections.find_one({"_id": coll.full_name}) is None
    new.insert_one({"_id": 100})
    assert new.find_one({"_id": 100}) == {"_id": 100}
    assert f"{coll.name}_renamed" in client.fid.list_collection_names()
    with pytest.raises(OperationFailure) as raised:
        client.admin.command("renameCollection", new.full_name, to=f"other.{new.name}")
    assert raised.value.code == 125 and raised.value.details["codeName"] == "CommandFailed"
    client.fid.taken.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as raised:
        new.rename("taken")
    assert raised.value.code == 48
    assert new.count_documents({}) == 21
    new.rename("taken", dropTarget=True)
    assert client.fid.taken.count_documents({}) == 21


def test_an_unsharded_collection_renames_on_its_databases_primary_shard(client: MongoClient[Any]) -> None:
    client.admin.command("enableSharding", "fidun", primaryShard="shard1")
    client.fidun.a.insert_many([{"_id": i} for i in range(3)])
    client.fidun.a.rename("b")
    assert client.fidun.list_collection_names() == ["b"]
    assert client.fidun.b.count_documents({}) == 3


def test_out_and_merge_from_a_sharded_collection(client: MongoClient[Any]) -> None:
    """mongos runs $out and $merge from a sharded collection: $out into an unsharded target
    (a sharded one is refused: 28769), $merge into either, by its ``on`` fields."""
    coll = _sharded(client, {"_id": "hashed"})
    coll.insert_many([{"_id": i, "x": i % 3} for i in range(30)])
    out = f"{coll.name}_out"
    assert list(coll.aggregate([{"$match": {"x": 0}}, {"$group": {"_id": "$x", "n": {"$sum": 1}}},
                                {"$out": out}])) == []
    assert list(client.fid[out].find()) == [{"_id": 0, "n": 10}]
    coll.aggregate([{"$match": {"x": 1}}, {"$out": out}])
    assert sorted(d["_id"] for d in client.fid[out].find()) == list(range(1, 30, 3))  # replaced
    target = _sharded(client, {"_id": "hashed"})
    target.insert_many([{"_id": 0, "old": True}, {"_id": 100, "old": True}])
    coll.aggregate([{"$match": {"x": 0}}, {"$project": {"x": 1}}, {"$merge": {"into": target.name}}])
    assert target.count_documents({}) == 11
    assert target.find_one({"_id": 0}) == {"_id": 0, "old": True, "x": 0}
    with pytest.raises(OperationFailure) as raised:
        coll.aggregate([{"$out": target.name}])
    assert raised.value.code == 28769
    with pytest.raises(OperationFailure) as raised:
        coll.aggregate([{"$match": {"_id": 4}}, {"$merge": {"into": target.name, "whenNotMatched": "fail"}}])
    assert raised.value.code == 13113


def test_a_multi_upsert_without_the_full_shard_key_is_a_write_error_61(client: MongoClient[Any]) -> None:
    """mongod 7.0 places a single upsert without the shard key (its two-phase write) but not
    a multi one: ShardKeyNotFound as that statement's write error; an ordered batch stops there."""
    coll = _sharded(client, {"a": 1, "b": 1})
    assert coll.update_one({"a": 1}, {"$set": {"w": 1}}, upsert=True).upserted_id is not None
    with pytest.raises(WriteError) as raised:
        coll.update_many({"a": 2}, {"$set": {"w": 1}}, upsert=True)
    assert raised.value.code == 61 and "could not extract exact shard key" in raised.value.details["errmsg"]
    assert coll.update_many({"a": 3, "b": 3}, {"$set": {"w": 1}}, upsert=True).upserted_id is not None
    with pytest.raises(BulkWriteError) as bulk:
        coll.bulk_write([InsertOne({"a": 5, "b": 5}), UpdateMany({"a": 6}, {"$set": {"w": 1}}, upsert=True),
                         InsertOne({"a": 7, "b": 7})])
    result = bulk.value.details
    assert [(e["index"], e["code"]) for e in result["writeErrors"]] == [(1, 61)] and result["nInserted"] == 1
    with pytest.raises(BulkWriteError) as bulk:
        coll.bulk_write([UpdateMany({"a": 8}, {"$set": {"w": 1}}, upsert=True), InsertOne({"a": 9, "b": 9}),
                         UpdateMany({}, {"$set": {"v": 1}}, upsert=True)], ordered=False)
    result = bulk.value.details
    assert [(e["index"], e["code"]) for e in result["writeErrors"]] == [(0, 61), (2, 61)] and result["nInserted"] == 1
    assert coll.count_documents({}) == 4


def test_explain_of_an_aggregate_shows_the_split_pipeline_and_every_shard(client: MongoClient[Any]) -> None:
    coll = _sharded(client, {"_id": "hashed"})
    coll.insert_many([{"_id": i, "x": i % 3} for i in range(12)])
    pipeline: list[dict[str, Any]] = [{"$match": {"x": {"$gte": 1}}}, {"$group": {"_id": "$x", "n": {"$sum": 1}}}]
    for explained in (client.fid.command("aggregate", coll.name, pipeline=pipeline, explain=True),
                      client.fid.command("explain", {"aggregate": coll.name, "pipeline": pipeline, "cursor": {}})):
        assert explained["mergeType"] == "mongos"
        assert explained["splitPipeline"] == {"shardsPart": pipeline[:1], "mergerPart": pipeline[1:]}
        assert sorted(explained["shards"]) == ["shard0", "shard1"]
        assert all(":" in shard["host"] for shard in explained["shards"].values())
    single = client.fid.command("aggregate", coll.name, pipeline=[{"$match": {"_id": 3}}], explain=True)
    assert single["splitPipeline"] is None and len(single["shards"]) == 1
    plan = coll.find({"x": 1}).explain()["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "SHARD_MERGE" and sorted(s["shardName"] for s in plan["shards"]) == ["shard0", "shard1"]
    assert coll.find({"_id": 3}).explain()["queryPlanner"]["winningPlan"]["stage"] == "SINGLE_SHARD"
    for statement, stage in (({"q": {"_id": 3}, "u": {"$set": {"y": 1}}}, "SINGLE_SHARD"),
                             ({"q": {"x": 1}, "u": {"$set": {"y": 1}}, "multi": True}, "SHARD_WRITE")):
        explained = client.fid.command("explain", {"update": coll.name, "updates": [statement]})
        assert explained["queryPlanner"]["winningPlan"]["stage"] == stage
    assert coll.count_documents({"y": 1}) == 0  # (explained, not run)


def test_indexes_through_mongos_reach_every_shard_and_unique_ones_must_start_with_the_key(
    client: MongoClient[Any],
) -> None:
    coll = _sharded(client, {"k": 1, "j": 1})
    client.admin.command("split", coll.full_name, middle={"k": 10, "j": 0})
    client.admin.command("moveChunk", coll.full_name, find={"k": 10, "j": 0}, to="shard1")
    coll.insert_many([{"k": i, "j": i} for i in range(20)])
    assert coll.create_index([("x", 1)]) == "x_1"
    reply = client.fid.command("createIndexes", coll.name, indexes=[{"key": {"y": 1}, "name": "y_1"}])
    assert sorted(host.partition("/")[0] for host in reply["raw"]) == ["shard0", "shard1"]
    assert all(r["numIndexesAfter"] == r["numIndexesBefore"] + 1 == 4 and r["ok"] == 1.0 for r in reply["raw"].values())
    client.fid.drop_collection("plainidx")
    plain = client.fid.command("createIndexes", "plainidx", indexes=[{"key": {"y": 1}, "name": "y_1"}])
    assert len(plain["raw"]) == 1 and next(iter(plain["raw"].values()))["createdCollectionAutomatically"] is True
    coll.drop_index("y_1")
    assert coll.create_index([("k", 1), ("j", 1), ("z", 1)], unique=True) == "k_1_j_1_z_1"
    assert coll.create_index([("_id", 1), ("z", 1)], unique=True) == "_id_1_z_1"
    for key in ([("z", 1)], [("k", 1)], [("j", 1), ("k", 1)]):
        with pytest.raises(OperationFailure) as raised:
            coll.create_index(key, unique=True)
        assert raised.value.code == 67 and raised.value.details["codeName"] == "CannotCreateIndex"
    names = ["_id_", "k_1_j_1", "x_1", "k_1_j_1_z_1", "_id_1_z_1"]
    assert [index["name"] for index in coll.list_indexes()] == names
    # ($collStats answers once per shard, naming it: both shards hold every index)
    assert sorted(d["shard"] for d in coll.aggregate([{"$collStats": {"storageStats": {}}}])) == ["shard0", "shard1"]
    for stats in coll.aggregate([{"$collStats": {"storageStats": {}}}]):
        assert sorted(stats["storageStats"]["indexSizes"]) == sorted(names)
    coll.drop_index("x_1")
    for stats in coll.aggregate([{"$collStats": {"storageStats": {}}}]):
        assert "x_1" not in stats["storageStats"]["indexSizes"]
    assert "x_1" not in coll.index_information()


def test_sharding_a_collection_that_holds_documents_needs_an_index_on_the_key(client: MongoClient[Any]) -> None:
    """mongod builds the shard key's index only on an empty collection; otherwise the index
    must exist first (an index that starts with the key serves)."""
    coll = client.fid[f"c{next(_names)}"]
    coll.insert_many([{"_id": i, "k": i, "j": -i} for i in range(10)])
    with pytest.raises(OperationFailure) as raised:
        client.admin.command("shardCollection", coll.full_name, key={"k": 1})
    assert raised.value.code == 72 and raised.value.details["codeName"] == "InvalidOptions"
    assert client.config.collections.find_one({"_id": coll.full_name}) is None
    coll.create_index([("k", 1), ("j", 1)])
    assert client.admin.command("shardCollection", coll.full_name, key={"k": 1})["ok"] == 1.0
    assert [index["name"] for index in coll.list_indexes()] == ["_id_", "k_1_j_1"]
    assert sorted(d["_id"] for d in coll.find({"k": {"$gte": 5}})) == [5, 6, 7, 8, 9]
    hashed = client.fid[f"c{next(_names)}"]
    hashed.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as raised:
        client.admin.command("shardCollection", hashed.full_name, key={"_id": "hashed"})
    assert raised.value.code == 72
    assert client.admin.command("shardCollection", hashed.full_name, key={"_id": 1})["ok"] == 1.0  # (the _id index)


def test_bulk_writes_count_and_index_their_errors_as_mongos_merges_them(client: MongoClient[Any]) -> None:
    coll = _sharded(client, {"_id": "hashed"})
    coll.insert_many([{"_id": i, "x": i % 3} for i in range(12)])
    result = coll.bulk_write([
        InsertOne({"_id": 100, "x": 1}), UpdateOne({"_id": 100}, {"$set": {"y": 1}}),
        UpdateMany({"x": 1}, {"$inc": {"z": 1}}), UpdateOne({"_id": 200}, {"$set": {"x": 5}}, upsert=True),
        ReplaceOne({"_id": 3}, {"x": 9}), DeleteOne({"_id": 0}), DeleteMany({"x": 2}),
    ])
    assert (result.inserted_count, result.matched_count, result.modified_count, result.deleted_count,
            result.upserted_count) == (1, 7, 7, 5, 1)
    assert result.upserted_ids == {3: 200}
    # ordered: the batch stops at the first duplicate, wherever its shard
    with pytest.raises(BulkWriteError) as raised:
        coll.insert_many([{"_id": 300 + i} for i in range(5)] + [{"_id": 1}] + [{"_id": 400 + i} for i in range(5)])
    details = raised.value.details
    assert [(e["index"], e["code"]) for e in details["writeErrors"]] == [(5, 11000)] and details["nInserted"] == 5
    assert coll.count_documents({"_id": {"$gte": 400, "$lt": 500}}) == 0
    # unordered: every statement tried, each error at its index in the client's batch
    with pytest.raises(BulkWriteError) as raised:
        coll.insert_many([{"_id": 1}, {"_id": 500}, {"_id": 4}, {"_id": 501}, {"_id": 7}], ordered=False)
    details = raised.value.details
    assert [(e["index"], e["code"]) for e in details["writeErrors"]] == [(0, 11000), (2, 11000), (4, 11000)]
    assert details["nInserted"] == 2


def test_counts_distinct_and_aggregation_stages_across_shards(client: MongoClient[Any]) -> None:
    coll = _sharded(client, {"_id": "hashed"})
    coll.insert_many([{"_id": i, "x": i % 4, "tags": [f"t{i % 2}", "all"]} for i in range(40)])
    other = _sharded(client, {"k": 1})
    other.insert_many([{"k": x, "label": f"L{x}"} for x in range(4)])
    assert coll.count_documents({"x": {"$in": [1, 2]}}) == 20
    assert coll.count_documents({}, skip=5, limit=10) == 10
    assert coll.estimated_document_count() == 40
    assert coll.distinct("x", {"_id": {"$lt": 6}}) == [0, 1, 2, 3]
    assert coll.distinct("tags") == ["all", "t0", "t1"]
    pipeline: list[dict[str, Any]] = [
        {"$match": {"x": {"$gte": 1}}}, {"$unwind": "$tags"}, {"$match": {"tags": {"$ne": "all"}}},
        {"$group": {"_id": {"x": "$x", "tag": "$tags"}, "n": {"$sum": 1}}}, {"$sort": {"_id.x": -1, "_id.tag": 1}},
        {"$skip": 1}, {"$limit": 3}, {"$project": {"_id": 0, "x": "$_id.x", "tag": "$_id.tag", "n": 1}},
    ]
    assert list(coll.aggregate(pipeline)) == [{"n": 10, "x": 2, "tag": "t0"}, {"n": 10, "x": 1, "tag": "t1"}]
    joined = list(coll.aggregate([{"$match": {"_id": {"$lt": 3}}}, {"$sort": {"_id": 1}},
                                  {"$lookup": {"from": other.name, "localField": "x", "foreignField": "k", "as": "o"}},
                                  {"$project": {"label": {"$first": "$o.label"}}}]))
    assert joined == [{"_id": 0, "label": "L0"}, {"_id": 1, "label": "L1"}, {"_id": 2, "label": "L2"}]
    assert [g["_id"] for g in coll.aggregate([{"$group": {"_id": "$x"}}, {"$sort": {"_id": 1}}], batchSize=2)] \
        == [0, 1, 2, 3]


def test_cursors_through_mongos_batch_get_more_and_kill(one_mongos: MongoClient[Any]) -> None:
    client = one_mongos
    coll = _sharded(client, {"_id": "hashed"})
    coll.insert_many([{"_id": i} for i in range(25)])
    first = client.fid.command("find", coll.name, batchSize=10, sort={"_id": 1})["cursor"]
    assert first["ns"] == coll.full_name and [d["_id"] for d in first["firstBatch"]] == list(range(10))
    assert isinstance(first["id"], int) and first["id"] != 0
    more = client.fid.command("getMore", first["id"], collection=coll.name, batchSize=10)["cursor"]
    assert more["ns"] == coll.full_name and more["id"] == first["id"]
    assert [d["_id"] for d in more["nextBatch"]] == list(range(10, 20))
    killed = client.fid.command("killCursors", coll.name, cursors=[first["id"], 424242])
    assert killed["cursorsKilled"] == [first["id"]] and killed["cursorsNotFound"] == [424242]
    with pytest.raises(OperationFailure) as raised:
        client.fid.command("getMore", first["id"], collection=coll.name)
    assert raised.value.code == 43 and raised.value.details["codeName"] == "CursorNotFound"
    last = client.fid.command("find", coll.name, filter={"_id": {"$gte": 20}})["cursor"]
    assert last["id"] == 0 and len(last["firstBatch"]) == 5
    assert [d["_id"] for d in coll.find(sort=[("_id", 1)], batch_size=3)] == list(range(25))


def test_catalogue_commands_through_mongos(client: MongoClient[Any]) -> None:
    coll = _sharded(client, {"_id": "hashed"}, db="fidcat")
    coll.insert_many([{"_id": i} for i in range(10)])
    client.fidcat.plain.insert_one({"_id": 1})
    assert sorted(client.fidcat.list_collection_names()) == sorted([coll.name, "plain"])
    listed = {d["name"]: d for d in client.list_databases()}
    assert set(listed["fidcat"]["shards"]) <= {"shard0", "shard1"} and listed["fidcat"]["sizeOnDisk"] > 0
    stats = client.fidcat.command("dbStats")
    assert stats["db"] == "fidcat" and stats["objects"] == 11 and len(stats["raw"]) == 2
    coll.drop()
    assert client.config.collections.find_one({"_id": coll.full_name}) is None
    assert client.fidcat.list_collection_names() == ["plain"]
    assert coll.count_documents({}) == 0
    client.drop_database("fidcat")
    assert "fidcat" not in client.list_database_names()
    assert client.config.databases.find_one({"_id": "fidcat"}) is None


def test_what_mongos_answers_about_itself(client: MongoClient[Any]) -> None:
    admin = client.admin
    hello = admin.command("hello")
    assert hello["msg"] == "isdbgrid" and hello["maxWireVersion"] >= 21 and "setName" not in hello
    assert admin.command("isdbgrid")["isdbgrid"] == 1
    assert admin.command("serverStatus")["process"] == "mongos"
    assert admin.command("buildInfo")["versionArray"][:2] == [7, 0]
    assert admin.command("connectionStatus")["authInfo"] == {"authenticatedUsers": [], "authenticatedUserRoles": []}
    assert admin.command("getParameter", featureCompatibilityVersion=1)["featureCompatibilityVersion"]["version"] == "7.0"
    shards = admin.command("listShards")["shards"]
    assert [s["_id"] for s in shards] == ["shard0", "shard1"]
    assert all(s["host"].startswith(f"{s['_id']}/") and s["state"] == 1 for s in shards)
    status = admin.command("balancerStatus")
    assert status["mode"] in ("full", "off") and status["inBalancerRound"] is False
    with pytest.raises(OperationFailure) as raised:
        client.fid.command("shardCollection", "fid.x", key={"_id": 1})
    assert raised.value.code == 13
    with pytest.raises(OperationFailure) as raised:
        admin.command("shardCollection", "fid.y", key={"a": -1})
    assert raised.value.code == 2 and raised.value.details["codeName"] == "BadValue"


def test_what_mongos_refuses_to_shard(client: MongoClient[Any]) -> None:
    client.fid.command("create", "fidview", viewOn="fidbase", pipeline=[])
    client.fid.create_collection("fidcapped", capped=True, size=4096)
    for ns, code in (("fid.fidview", 166), ("fid.fidcapped", 72), ("fid.system.x", 20), ("config.x", 20),
                     ("admin.x", 20)):
        with pytest.raises(OperationFailure) as raised:
            client.admin.command("shardCollection", ns, key={"_id": 1})
        assert raised.value.code == code, ns
        assert client.config.collections.find_one({"_id": ns}) is None


def test_sessions_causal_reads_and_a_write_conflict_across_shards(client: MongoClient[Any], uri: str) -> None:
    coll = _sharded(client, {"_id": "hashed"})
    seen: list[dict[str, Any]] = []

    class Listener(pymongo.monitoring.CommandListener):
        def started(self, event: Any) -> None:
            if event.command_name == "find":
                seen.append(dict(event.command))

        def succeeded(self, event: Any) -> None: ...
        def failed(self, event: Any) -> None: ...

    with MongoClient(uri, event_listeners=[Listener()], **OPTIONS) as single:
        with single.start_session(causal_consistency=True) as session:
            written = single.fid[coll.name].insert_one({"_id": 1}, session=session)
            assert written.acknowledged
            assert single.fid[coll.name].find_one({"_id": 1}, session=session) == {"_id": 1}
            assert session.operation_time is not None
    assert seen[-1]["readConcern"]["afterClusterTime"] is not None
    coll.insert_many([{"_id": i, "n": 0} for i in range(2, 10)])
    one, two = client.start_session(), client.start_session()
    try:
        one.start_transaction()
        coll.update_many({}, {"$inc": {"n": 1}}, session=one)  # both shards
        two.start_transaction()
        with pytest.raises(OperationFailure) as raised:
            coll.update_one({"_id": 5}, {"$inc": {"n": 10}}, session=two)
        assert raised.value.code == 112 and raised.value.details["codeName"] == "WriteConflict"
        assert raised.value.has_error_label("TransientTransactionError")
        two.abort_transaction()
        one.commit_transaction()
    finally:
        one.end_session()
        two.end_session()
    assert sorted(d["n"] for d in coll.find({"_id": {"$gte": 2}})) == [1] * 8


def test_change_streams_on_a_database_and_the_cluster_resume_and_start_after(client: MongoClient[Any]) -> None:
    coll = _sharded(client, {"k": 1}, db="fidcs")
    client.admin.command("split", coll.full_name, middle={"k": 10})
    client.admin.command("moveChunk", coll.full_name, find={"k": 10}, to="shard1")
    with client.fidcs.watch(max_await_time_ms=100) as on_db, client.watch(max_await_time_ms=100) as on_cluster:
        coll.insert_many([{"_id": i, "k": i * 5} for i in range(4)])  # two on each shard
        coll.update_one({"k": 15}, {"$set": {"u": 1}})
        coll.delete_one({"k": 0})
        events = [on_db.next() for _ in range(6)]
        everywhere = [on_cluster.next() for _ in range(6)]
    assert [e["operationType"] for e in events] == ["insert"] * 4 + ["update", "delete"]
    assert [e["documentKey"] for e in events[:4]] == [{"k": i * 5, "_id": i} for i in range(4)]
    assert events[4]["updateDescription"]["updatedFields"] == {"u": 1}
    assert [e["_id"] for e in everywhere] == [e["_id"] for e in events]
    assert all(e["ns"] == {"db": "fidcs", "coll": coll.name} for e in events)
    with coll.watch(resume_after=events[1]["_id"], max_await_time_ms=100) as resumed:
        assert [resumed.next()["documentKey"]["_id"] for _ in range(2)] == [2, 3]
    with coll.watch(start_after=events[3]["_id"], max_await_time_ms=100) as started:
        assert started.next()["operationType"] == "update"
    coll.drop()
    with coll.watch(start_after=events[5]["_id"], max_await_time_ms=100) as after:
        assert [after.next()["operationType"] for _ in range(2)] == ["drop", "invalidate"]


def test_gridfs_through_mongos_with_its_chunks_sharded(client: MongoClient[Any]) -> None:
    import gridfs

    client.admin.command("shardCollection", "fidfs.fs.chunks", key={"files_id": 1, "n": 1})
    bucket = gridfs.GridFSBucket(client.fidfs)
    data = bytes(range(256)) * 2100  # two chunks of 255 KiB and a bit
    file_id = bucket.upload_from_stream("blob", data)
    assert bucket.open_download_stream(file_id).read() == data
    assert bucket.open_download_stream_by_name("blob").read() == data
    assert client.fidfs.fs.chunks.count_documents({"files_id": file_id}) == 3
    assert "files_id_1_n_1" in client.fidfs.fs.chunks.index_information()
    bucket.delete(file_id)
    assert client.fidfs.fs.chunks.count_documents({}) == 0 and client.fidfs.fs.files.count_documents({}) == 0


def test_coll_stats_through_mongos_sums_the_shards(client: MongoClient[Any]) -> None:
    coll = _sharded(client, {"_id": "hashed"})
    coll.insert_many([{"_id": i, "pad": "x" * 50} for i in range(20)])
    stats = client.fid.command("collStats", coll.name)
    assert stats["sharded"] is True and stats["ns"] == coll.full_name and stats["nchunks"] == 2
    assert sorted(stats["shards"]) == ["shard0", "shard1"]
    assert stats["count"] == 20 == sum(s["count"] for s in stats["shards"].values())
    assert stats["size"] == sum(s["size"] for s in stats["shards"].values()) and stats["avgObjSize"] > 50
    assert sorted(stats["indexSizes"]) == ["_id_", "_id_hashed"] and stats["nindexes"] == 2
    client.fid.plainstats.insert_many([{"_id": i} for i in range(3)])
    plain = client.fid.command("collStats", "plainstats")
    assert plain["sharded"] is False and plain["count"] == 3 and len(plain["shards"]) == 1


# --- the same scenario through every front, with PyMongo and our blocking client --------------


@pytest.fixture(scope="module")
def fronts(uri: str) -> Iterator[dict[str, str]]:
    """The module's cluster, plus ``--sharded --load-balanced`` and ``--load-balanced`` (a
    replica set behind the front) started as a user starts them."""
    with cli_process("sim", "--sharded", "--shards", "2", "--mongos", "2", "--load-balanced", "--port", "0") as sharded_lb, \
            cli_process("sim", "--load-balanced", "--port", "0") as replica_lb:
        yield {"sharded": uri, "sharded-lb": first_line_uri(sharded_lb), "lb": first_line_uri(replica_lb)}
        _stop(sharded_lb)
        _stop(replica_lb)


def _driver(kind: str, uri: str) -> Any:
    if kind == "pymongo":
        return MongoClient(uri, **OPTIONS)
    from mongo_sansio.adapters.blocking import MongoClient as OurClient

    return OurClient(uri, **OPTIONS)


@pytest.mark.parametrize(("front", "kind"), [("sharded", "ours"), ("sharded-lb", "pymongo"), ("sharded-lb", "ours"),
                                             ("lb", "pymongo"), ("lb", "ours")])
def test_the_everyday_scenario_through_every_front(fronts: dict[str, str], front: str, kind: str) -> None:
    client = _driver(kind, fronts[front])
    try:
        sharded = front != "lb"
        expected = {"sharded": "Sharded", "sharded-lb": "LoadBalanced", "lb": "LoadBalanced"}[front]
        client.admin.command("ping")
        assert client.topology_description.topology_type_name == expected
        assert client.admin.command("isdbgrid")["isdbgrid"] == 1  # every front serves routers
        assert client.admin.command("serverStatus")["process"] == "mongos"
        name = f"e{next(_names)}{kind}"
        coll = client.every[name]
        if sharded:
            client.admin.command("shardCollection", f"every.{name}", key={"_id": "hashed"})
        coll.insert_many([{"_id": i, "x": i % 3} for i in range(30)])
        assert coll.find_one_and_delete({"x": 2}, sort=[("_id", -1)]) == {"_id": 29, "x": 2}
        assert [d["_id"] for d in coll.find({"x": 0}, sort=[("_id", -1)], batch_size=2, limit=5)] == [27, 24, 21, 18, 15]
        assert coll.count_documents({}) == 29 and coll.estimated_document_count() == 29
        coll.aggregate([{"$match": {"x": 1}}, {"$out": f"{name}_out"}])
        assert client.every[f"{name}_out"].count_documents({}) == 10
        with client.start_session() as session:
            with session.start_transaction():
                coll.insert_many([{"_id": 100 + i} for i in range(4)], session=session)
                coll.update_many({"x": 0}, {"$set": {"t": 1}}, session=session)
            session.start_transaction()
            coll.insert_one({"_id": 200}, session=session)
            session.abort_transaction()
        assert coll.count_documents({"t": 1}) == 10 and coll.count_documents({"_id": {"$gte": 100}}) == 4
        with pytest.raises(Exception) as raised:  # (each driver's own BulkWriteError)
            coll.insert_many([{"_id": 300}, {"_id": 1}, {"_id": 301}], ordered=False)
        details = raised.value.details  # type: ignore[attr-defined]
        assert [(e["index"], e["code"]) for e in details["writeErrors"]] == [(1, 11000)] and details["nInserted"] == 2
        if sharded:
            with pytest.raises(Exception) as raised:
                coll.update_many({"x": 7}, {"$set": {"y": 1}}, upsert=True)
            assert getattr(raised.value, "code", None) == 61
        with coll.watch(max_await_time_ms=100) as stream:
            coll.insert_many([{"_id": 400 + i} for i in range(4)])
            keys = [stream.next()["documentKey"]["_id"] for _ in range(4)]
        assert keys == [400, 401, 402, 403]
        coll.rename(f"{name}_renamed")
        assert client.every[f"{name}_renamed"].count_documents({}) == 39
    finally:
        client.close()


def test_a_view_over_a_sharded_collection_reads_every_shard(client: MongoClient[Any]) -> None:
    """mongos reads a view over a sharded collection as an aggregate over that collection (a
    shard alone answers 169 with the resolved view), so every shard's documents are seen."""
    coll = _sharded(client, {"_id": "hashed"})
    coll.insert_many([{"_id": i, "x": i % 3, "tags": [f"t{i % 4}"]} for i in range(30)])
    client.fid.command("create", f"{coll.name}_v", viewOn=coll.name, pipeline=[{"$match": {"x": 0}}])
    client.fid.command("create", f"{coll.name}_vv", viewOn=f"{coll.name}_v", pipeline=[{"$project": {"tags": 0}}])
    view, nested = client.fid[f"{coll.name}_v"], client.fid[f"{coll.name}_vv"]
    assert view.count_documents({}) == 10 and view.estimated_document_count() == 10
    assert [d["_id"] for d in view.find({"_id": {"$gte": 10}}, sort=[("_id", -1)], skip=1, limit=3)] == [24, 21, 18]
    assert nested.find_one({"_id": 3}) == {"_id": 3, "x": 0}
    assert view.distinct("tags") == ["t0", "t1", "t2", "t3"]
    assert list(view.aggregate([{"$group": {"_id": None, "n": {"$sum": 1}}}])) == [{"_id": None, "n": 10}]
    reply = client.fid.command("find", view.name, filter={}, batchSize=2, singleBatch=True)
    assert reply["cursor"]["ns"] == view.full_name and len(reply["cursor"]["firstBatch"]) == 2
    with pytest.raises(OperationFailure) as raised:
        view.insert_one({"_id": 100})
    assert raised.value.code == 166


def test_a_write_outside_a_transaction_waits_for_the_transaction_holding_its_document(
    client: MongoClient[Any],
) -> None:
    """mongod holds a write back while another session's transaction holds the document (until
    the transaction ends, or the write's maxTimeMS); mongos waits for the shard."""
    import threading
    import time

    coll = _sharded(client, {"_id": "hashed"})
    coll.insert_many([{"_id": i, "n": 0} for i in range(4)])
    with client.start_session() as session:
        session.start_transaction()
        coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=session)
        started = time.monotonic()
        with pytest.raises(OperationFailure) as raised:
            client.fid.command("update", coll.name, updates=[{"q": {"_id": 1}, "u": {"$inc": {"n": 10}}}], maxTimeMS=300)
        assert raised.value.code == 50 and time.monotonic() - started >= 0.25
        done: list[Any] = []
        outside = threading.Thread(target=lambda: done.append(coll.update_one({"_id": 1}, {"$inc": {"n": 100}})))
        outside.start()
        outside.join(0.5)
        assert outside.is_alive() and not done  # held back, the transaction untouched
        coll.update_one({"_id": 2}, {"$inc": {"n": 1}})  # another document: not held back
        session.commit_transaction()
        outside.join(5)
    assert done and done[0].modified_count == 1
    assert coll.find_one({"_id": 1}) == {"_id": 1, "n": 101}


def test_a_retried_bulk_of_increments_over_both_shards_is_applied_once(sc: Any) -> None:
    """In process (the CLI cannot stop a router): shard0 applies its part of a retryable batch
    and the answer is lost; PyMongo retries the whole batch through the other mongos, and each
    shard answers the statements it already applied from its record.  Then, with that mongos
    stopped, batches still go through (retried on the running one).  Every $inc once."""
    sent: list[str] = []

    class Listener(pymongo.monitoring.CommandListener):
        def started(self, event: Any) -> None:
            if event.command_name == "update":
                sent.append(f"{event.connection_id[0]}:{event.connection_id[1]}")

        def succeeded(self, event: Any) -> None: ...
        def failed(self, event: Any) -> None: ...

    with MongoClient(sc.uri, event_listeners=[Listener()], **OPTIONS) as client:
        client.admin.command("shardCollection", "fidretry.n", key={"_id": "hashed"})
        coll = client.fidretry.n
        coll.insert_many([{"_id": i, "n": 0} for i in range(8)])
        primary = sc.primary("shard0")
        sc.configure_failpoint(primary, {"configureFailPoint": "onPrimaryTransactionalWrite",
                                         "mode": {"times": 1}, "data": {"closeConnection": True}})
        try:
            result = coll.bulk_write([UpdateOne({"_id": i}, {"$inc": {"n": 1}}) for i in range(8)])
        finally:
            sc.failpoint_off(primary, "onPrimaryTransactionalWrite")
        assert result.modified_count == 8
        assert len(sent) == 2 and sent[0] != sent[1]  # (the first answer was lost: retried elsewhere)
        sc.stop_mongos(sent[1])
        try:
            for _ in range(3):
                assert coll.bulk_write([UpdateOne({"_id": i}, {"$inc": {"n": 1}}) for i in range(8)]).modified_count == 8
        finally:
            sc.restart_mongos(sent[1])
        assert sorted(d["n"] for d in coll.find()) == [4] * 8


def test_indexes_and_drops_reach_the_shards_that_own_no_chunk_yet(client: MongoClient[Any]) -> None:
    """A ranged collection starts on its primary shard alone; an index made then is on the
    other shard's copy too once a chunk moves there, and a drop leaves no copy behind (a new
    collection of that name gets its own UUID everywhere)."""
    hosts = {s["_id"]: s["host"] for s in client.admin.command("listShards")["shards"]}
    name = f"c{next(_names)}"
    client.admin.command("shardCollection", f"fid.{name}", key={"k": 1})
    client.fid[name].create_index("z", name="z_index")
    client.admin.command("split", f"fid.{name}", middle={"k": 5})
    client.admin.command("moveChunk", f"fid.{name}", find={"k": 7}, to="shard1")
    with MongoClient(f"mongodb://{hosts['shard1'].partition('/')[2]}/?replicaSet=shard1", **OPTIONS) as shard1:
        assert "z_index" in shard1.fid[name].index_information()
        client.fid[name].drop()
        assert name not in shard1.fid.list_collection_names()
        client.admin.command("shardCollection", f"fid.{name}", key={"k": 1})
        client.admin.command("split", f"fid.{name}", middle={"k": 5})
        client.admin.command("moveChunk", f"fid.{name}", find={"k": 7}, to="shard1")
        client.fid[name].insert_many([{"k": i} for i in range(10)])
        uuid = client.config.collections.find_one({"_id": f"fid.{name}"})["uuid"]
        listed = shard1.fid.command("listCollections", filter={"name": name})["cursor"]["firstBatch"]
        assert listed[0]["info"]["uuid"] == uuid and shard1.fid[name].count_documents({}) == 5
