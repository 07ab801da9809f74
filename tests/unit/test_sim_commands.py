"""Commands on the simulated server: CRUD, cursors, indexes, sessions, roles, failpoints."""

from __future__ import annotations

import struct
import uuid
from typing import Any

from sim_wire_client import PRIMARY, SECONDARY, THIRD, Client, make_cluster

from mongo_sansio.bson import Binary, Int64, ObjectId
from mongo_sansio.wire import MORE_TO_COME, encode_op_msg


def _lsid() -> dict[str, Any]:
    return {"id": Binary(uuid.UUID(int=7).bytes, 4)}


def test_unknown_command() -> None:
    reply = Client(make_cluster()).command({"frobnicate": 1})
    assert {k: reply[k] for k in ("ok", "errmsg", "code", "codeName")} == {
        "ok": 0.0, "errmsg": "no such command: 'frobnicate'", "code": 59, "codeName": "CommandNotFound",
    }


def test_crud_with_get_more_batches() -> None:
    client = Client(make_cluster())
    assert client.command({"insert": "c", "documents": [{"_id": i, "x": i % 3} for i in range(10)]})["n"] == 10
    first = client.command({"find": "c", "filter": {"x": {"$gte": 1}}, "sort": {"_id": -1}, "batchSize": 3})
    cursor = first["cursor"]
    assert cursor["ns"] == "test.c" and [d["_id"] for d in cursor["firstBatch"]] == [8, 7, 5]
    assert cursor["id"] != 0
    more = client.command({"getMore": Int64(cursor["id"]), "collection": "c", "batchSize": 2})
    assert [d["_id"] for d in more["cursor"]["nextBatch"]] == [4, 2]
    rest = client.command({"getMore": Int64(cursor["id"]), "collection": "c"})
    assert [d["_id"] for d in rest["cursor"]["nextBatch"]] == [1] and rest["cursor"]["id"] == 0
    gone = client.command({"getMore": Int64(cursor["id"]), "collection": "c"})
    assert gone["code"] == 43 and gone["codeName"] == "CursorNotFound"
    assert client.command({"update": "c", "updates": [{"q": {"x": 0}, "u": {"$set": {"y": 1}}, "multi": True}]})[
        "nModified"
    ] == 4
    upsert = client.command({"update": "c", "updates": [{"q": {"_id": 99}, "u": {"$set": {"z": 1}}, "upsert": True}]})
    assert upsert["n"] == 1 and upsert["upserted"] == [{"index": 0, "_id": 99}]
    assert client.command({"count": "c", "query": {"y": 1}})["n"] == 4
    assert sorted(client.command({"distinct": "c", "key": "x"})["values"]) == [0, 1, 2]
    fam = client.command({"findAndModify": "c", "query": {"_id": 99}, "update": {"$inc": {"z": 1}}, "new": True})
    assert fam["value"] == {"_id": 99, "z": 2} and fam["lastErrorObject"]["updatedExisting"] is True
    assert client.command({"delete": "c", "deletes": [{"q": {"x": 1}, "limit": 0}]})["n"] == 3
    agg = client.command({"aggregate": "c", "pipeline": [{"$group": {"_id": None, "n": {"$sum": 1}}}], "cursor": {}})
    assert agg["cursor"]["firstBatch"] == [{"_id": None, "n": 8}]


def test_limit_single_batch_and_kill_cursors() -> None:
    client = Client(make_cluster())
    client.command({"insert": "c", "documents": [{"_id": i} for i in range(5)]})
    limited = client.command({"find": "c", "limit": 3, "batchSize": 2})["cursor"]
    more = client.command({"getMore": Int64(limited["id"]), "collection": "c"})["cursor"]
    assert len(more["nextBatch"]) == 1 and more["id"] == 0
    assert client.command({"find": "c", "batchSize": 2, "singleBatch": True})["cursor"]["id"] == 0
    open_id = client.command({"find": "c", "batchSize": 1})["cursor"]["id"]
    killed = client.command({"killCursors": "c", "cursors": [Int64(open_id), Int64(12345)]})
    assert killed["cursorsKilled"] == [open_id] and killed["cursorsNotFound"] == [12345]


def test_cursors_belong_to_the_member_that_opened_them() -> None:
    cluster = make_cluster()
    primary = Client(cluster)
    primary.command({"insert": "c", "documents": [{} for _ in range(3)]})
    cursor_id = primary.command({"find": "c", "batchSize": 1})["cursor"]["id"]
    other = Client(cluster, SECONDARY)
    assert other.command({"getMore": Int64(cursor_id), "collection": "c"})["code"] == 43


def test_document_sequences_for_insert() -> None:
    client = Client(make_cluster())
    client.send({"insert": "c"}, sequences={"documents": [{"a": 1}, {"a": 2}]})
    (reply,) = client.messages()
    assert reply.body["n"] == 2
    assert len(client.command({"find": "c"})["cursor"]["firstBatch"]) == 2


def test_unique_index_duplicate_key_error_shape() -> None:
    client = Client(make_cluster())
    created = client.command({"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1", "unique": True}]})
    assert created["ok"] == 1.0 and created["numIndexesAfter"] == 2
    reply = client.command({"insert": "c", "documents": [{"_id": 1, "a": 1}, {"_id": 2, "a": 1}, {"_id": 3, "a": 3}]})
    assert reply["n"] == 1
    (error,) = reply["writeErrors"]
    assert error["index"] == 1 and error["code"] == 11000
    assert error["errmsg"].startswith("E11000 duplicate key error collection: test.c index: a_1 dup key:")
    assert error["keyPattern"] == {"a": 1} and error["keyValue"] == {"a": 1}
    unordered = client.command({"insert": "c", "documents": [{"a": 1}, {"a": 4}], "ordered": False})
    assert unordered["n"] == 1 and [e["index"] for e in unordered["writeErrors"]] == [0]
    names = [i["name"] for i in client.command({"listIndexes": "c", "cursor": {}})["cursor"]["firstBatch"]]
    assert names == ["_id_", "a_1"]


def test_catalogue_commands() -> None:
    client = Client(make_cluster())
    assert client.command({"create": "a"})["ok"] == 1.0
    # mongod 7.0+: the same options again succeed (nothing done), other options do not
    assert client.command({"create": "a"})["ok"] == 1.0
    assert client.command({"create": "a", "capped": True, "size": 4096})["code"] == 48
    assert client.command({"create": "e", "capped": True, "size": 4096})["ok"] == 1.0
    assert client.command({"create": "e", "capped": True, "size": 4096})["ok"] == 1.0
    assert client.command({"create": "e"})["code"] == 48
    assert client.command({"create": "f", "collation": {"locale": "fr", "strength": 2}})["ok"] == 1.0
    assert client.command({"create": "f", "collation": {"locale": "fr", "strength": 2}})["ok"] == 1.0
    assert client.command({"create": "f", "collation": {"locale": "fr"}})["code"] == 48
    for extra in ("e", "f"):
        client.command({"drop": extra})
    client.command({"insert": "b", "documents": [{}]})
    names = [c["name"] for c in client.command({"listCollections": 1, "cursor": {}})["cursor"]["firstBatch"]]
    assert names == ["a", "b"]
    assert client.command({"renameCollection": "test.b", "to": "test.d"}, db="admin")["ok"] == 1.0
    assert client.command({"count": "d"})["n"] == 1
    assert client.command({"drop": "a"})["ok"] == 1.0
    databases = client.command({"listDatabases": 1}, db="admin")["databases"]
    assert [d["name"] for d in databases] == ["admin", "config", "local", "test"]  # as mongod's
    assert client.command({"dropDatabase": 1})["ok"] == 1.0
    assert client.command({"listDatabases": 1, "nameOnly": True, "filter": {"name": {"$nin": ["admin", "local"]}}},
                          db="admin")["databases"] == [{"name": "config"}]


def test_writes_append_oplog_entries() -> None:
    cluster = make_cluster()
    client = Client(cluster)
    start = len(cluster.oplog.entries)
    client.command({"insert": "c", "documents": [{"_id": 1}]})
    client.command({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 1}}}]})
    client.command({"delete": "c", "deletes": [{"q": {}, "limit": 1}]})
    entries = cluster.oplog.entries[start:]
    assert [(e.op, e.kind) for e in entries] == [("c", "create"), ("i", "insert"), ("u", "update"), ("d", "delete")]
    assert entries[2].before == {"_id": 1} and entries[2].after == {"_id": 1, "a": 1}
    stamps = [(e.ts.time, e.ts.inc) for e in cluster.oplog.entries]
    assert stamps == sorted(set(stamps))


def test_retryable_write_is_applied_once() -> None:
    client = Client(make_cluster())
    insert = {"insert": "c", "documents": [{"_id": 1, "n": 1}], "lsid": _lsid(), "txnNumber": Int64(1)}
    first = client.command(insert)
    assert first["n"] == 1
    again = client.command(insert)
    assert again["n"] == 1 and "writeErrors" not in again
    bump = {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}], "lsid": _lsid(), "txnNumber": Int64(2)}
    client.command(bump)
    # the retry goes to the new primary after a failover and is still not applied again
    client.cluster.step_down(client.now)
    new_primary = Client(client.cluster, SECONDARY)
    assert new_primary.command(bump)["nModified"] == 1
    assert new_primary.command({"find": "c"})["cursor"]["firstBatch"] == [{"_id": 1, "n": 2}]
    old = new_primary.command({**insert, "txnNumber": Int64(0)})
    assert old["code"] == 225


def test_secondary_refuses_writes_and_reads_without_secondary_ok() -> None:
    client = Client(make_cluster(), SECONDARY)
    write = client.command({"insert": "c", "documents": [{}], "lsid": _lsid(), "txnNumber": Int64(1)})
    assert (write["code"], write["codeName"], write["errorLabels"]) == (10107, "NotWritablePrimary", ["RetryableWriteError"])
    read = client.command({"find": "c"})
    assert (read["code"], read["codeName"]) == (13435, "NotPrimaryNoSecondaryOk")
    assert client.command({"find": "c", "$readPreference": {"mode": "secondaryPreferred"}})["ok"] == 1.0


def test_step_down_bumps_term_and_election_id() -> None:
    cluster = make_cluster()
    client = Client(cluster)
    before = client.command({"hello": 1})["electionId"]
    assert client.command({"replSetStepDown": 60}, db="admin")["ok"] == 1.0
    hello = client.command({"hello": 1})
    assert hello["isWritablePrimary"] is False and hello["primary"] == SECONDARY
    after = Client(cluster, SECONDARY).command({"hello": 1})["electionId"]
    assert after > before and cluster.term == 2
    cluster.elect(THIRD, client.now)
    assert Client(cluster, THIRD).command({"hello": 1})["electionId"] > after
    status = client.command({"replSetGetStatus": 1}, db="admin")
    assert [m["stateStr"] for m in status["members"]] == ["SECONDARY", "SECONDARY", "PRIMARY"]


def _fail(client: Client, mode: Any, **data: Any) -> None:
    reply = client.command({"configureFailPoint": "failCommand", "mode": mode, "data": data}, db="admin")
    assert reply["ok"] == 1.0, reply


def test_fail_command_times_and_error_labels() -> None:
    client = Client(make_cluster())
    _fail(client, {"times": 2}, failCommands=["find"], errorCode=91, errorLabels=["X"])
    for _ in range(2):
        reply = client.command({"find": "c"})
        assert (reply["code"], reply["codeName"], reply["errorLabels"]) == (91, "ShutdownInProgress", ["X"])
    assert client.command({"find": "c"})["ok"] == 1.0


def test_fail_command_skip_always_on_off_and_app_name() -> None:
    client = Client(make_cluster())
    client.command({"hello": 1, "client": {"application": {"name": "me"}}})
    _fail(client, {"skip": 1}, failCommands=["ping"], errorCode=2)
    assert client.command({"ping": 1})["ok"] == 1.0
    assert client.command({"ping": 1})["code"] == 2
    assert client.command({"ping": 1})["code"] == 2
    _fail(client, "alwaysOn", failCommands=["ping"], errorCode=2, appName="other")
    assert client.command({"ping": 1})["ok"] == 1.0
    _fail(client, "off")
    assert client.command({"ping": 1})["ok"] == 1.0


def test_fail_command_retryable_write_gets_the_label() -> None:
    client = Client(make_cluster())
    _fail(client, {"times": 1}, failCommands=["insert"], errorCode=189)
    reply = client.command({"insert": "c", "documents": [{}], "lsid": _lsid(), "txnNumber": Int64(1)})
    assert reply["errorLabels"] == ["RetryableWriteError"]


def test_fail_command_close_connection() -> None:
    client = Client(make_cluster())
    _fail(client, {"times": 1}, failCommands=["find"], closeConnection=True)
    client.send({"find": "c"})
    assert client.messages() == [] and client.conn.should_close
    assert "failCommand" in (client.conn.close_reason or "")


def test_fail_command_block_connection() -> None:
    client = Client(make_cluster())
    _fail(client, {"times": 1}, failCommands=["ping"], blockConnection=True, blockTimeMS=200)
    client.send({"ping": 1})
    assert client.messages() == [] and client.conn.next_deadline() == client.now + 0.2
    client.send({"ping": 1})  # queued behind the blocked one
    client.advance(0.2)
    replies = client.messages()
    assert [r.body["ok"] for r in replies] == [1.0, 1.0]


def test_blocked_command_fails_on_step_down() -> None:
    client = Client(make_cluster())
    _fail(client, {"times": 1}, failCommands=["insert"], blockConnection=True, blockTimeMS=5000)
    client.send({"insert": "c", "documents": [{}]})
    client.cluster.step_down(client.now)
    (reply,) = client.messages()
    assert (reply.body["code"], reply.body["codeName"]) == (11602, "InterruptedDueToReplStateChange")


def test_fail_command_write_concern_error() -> None:
    client = Client(make_cluster())
    wce = {"code": 91, "codeName": "ShutdownInProgress", "errmsg": "Replication is being shut down"}
    _fail(client, {"times": 1}, failCommands=["insert"], writeConcernError=wce)
    reply = client.command({"insert": "c", "documents": [{}], "lsid": _lsid(), "txnNumber": Int64(1)})
    assert reply["ok"] == 1.0 and reply["n"] == 1 and reply["writeConcernError"] == wce
    assert reply["errorLabels"] == ["RetryableWriteError"]


def test_on_primary_transactional_write_closes_after_applying() -> None:
    client = Client(make_cluster())
    client.command({"configureFailPoint": "onPrimaryTransactionalWrite", "mode": {"times": 1}, "data": {"closeConnection": True}}, db="admin")
    insert = {"insert": "c", "documents": [{"_id": 1}], "lsid": _lsid(), "txnNumber": Int64(1)}
    client.send(insert)
    assert client.messages() == [] and client.conn.should_close
    retry = Client(client.cluster)
    assert retry.command(insert)["n"] == 1
    assert retry.command({"count": "c"})["n"] == 1


def test_unacknowledged_write_gets_no_reply() -> None:
    client = Client(make_cluster())
    client.send({"insert": "c", "documents": [{}], "writeConcern": {"w": 0}}, flags=MORE_TO_COME)
    assert client.messages() == []
    assert client.command({"count": "c"})["n"] == 1


def test_malformed_input_closes_the_connection_without_raising() -> None:
    client = Client(make_cluster())
    client.send_raw(struct.pack("<iiii", 16, 1, 0, 9999))  # unknown op code
    assert client.conn.should_close and "op code" in (client.conn.close_reason or "")
    other = Client(client.cluster)
    other.send_raw(b"\x20\x00\x00\x00" + b"\xff" * 28)
    assert other.conn.should_close
    huge = Client(client.cluster)
    huge.send_raw(struct.pack("<iiii", 60_000_000, 1, 0, 2013))
    assert huge.conn.should_close
    # everyone else is still served
    assert Client(client.cluster).command({"ping": 1})["ok"] == 1.0


def test_missing_db_and_op_query_for_other_commands() -> None:
    client = Client(make_cluster())
    client.send_raw(encode_op_msg({"ping": 1}, request_id=5))
    (reply,) = client.messages()
    assert reply.body["code"] == 40571


def test_oversized_document_is_a_write_error() -> None:
    # mongod's insert path answers BadValue (its insert.cpp; a jstest asserts the code).
    client = Client(make_cluster())
    reply = client.command({"insert": "c", "documents": [{"a": "x" * (16 * 1024 * 1024)}]})
    error = reply["writeErrors"][0]
    assert (error["code"], error["errmsg"].split(".")[0]) == (2, "object to insert too large")


def test_object_ids_are_deterministic_per_seed() -> None:
    def ids(seed: int) -> list[ObjectId]:
        client = Client(make_cluster(seed=seed))
        client.command({"insert": "c", "documents": [{}, {}]})
        return [d["_id"] for d in client.command({"find": "c"})["cursor"]["firstBatch"]]

    assert ids(1) == ids(1) and ids(1) != ids(2)
    assert PRIMARY


def test_tailable_await_data_get_more_waits_for_writes_or_max_time() -> None:
    cluster = make_cluster()
    client = Client(cluster)
    client.command({"create": "c"})
    seen = [len(cluster.oplog.entries)]

    def new_inserts(wall: float) -> list[dict[str, Any]]:
        entries = cluster.oplog.entries[seen[0]:]
        seen[0] = len(cluster.oplog.entries)
        return [dict(e.after) for e in entries if e.op == "i" and e.after is not None]

    first = cluster.members[PRIMARY].cursors.open(
        "test.c", [], batch_size=None, tailable=True, await_data=True, source=new_inserts
    )
    cursor_id = first["cursor"]["id"]
    client.send({"getMore": Int64(cursor_id), "collection": "c", "maxTimeMS": 500})
    assert client.messages() == [] and client.conn.next_deadline() == client.now + 0.5
    client.advance(0.5)
    (empty,) = client.messages()
    assert empty.body["cursor"]["nextBatch"] == [] and empty.body["cursor"]["id"] == cursor_id
    client.send({"getMore": Int64(cursor_id), "collection": "c", "maxTimeMS": 500})
    Client(cluster).command({"insert": "c", "documents": [{"_id": 1}]})
    (woken,) = client.messages()
    assert woken.body["cursor"]["nextBatch"] == [{"_id": 1}]


def test_bad_query_is_refused_on_a_missing_collection_too() -> None:
    # mongod parses the query before it looks for the collection
    client = Client(make_cluster())
    bad = {"$unsupportedQueryOperator": 1}
    for command in (
        {"find": "absent", "filter": bad},
        {"count": "absent", "query": bad},
        {"distinct": "absent", "key": "x", "query": bad},
    ):
        reply = client.command(command)
        assert (reply["ok"], reply["code"], reply["codeName"]) == (0.0, 2, "BadValue"), command
        assert reply["errmsg"] == "unknown top level operator: $unsupportedQueryOperator"
    deleted = client.command({"delete": "absent", "deletes": [{"q": bad, "limit": 0}]})
    assert deleted["n"] == 0 and deleted["writeErrors"][0]["code"] == 2
    assert client.command({"find": "absent", "filter": {"x": 1}})["cursor"]["firstBatch"] == []
    assert client.command({"listCollections": 1})["cursor"]["firstBatch"] == []


def test_update_sort_is_an_unknown_field_before_8_0() -> None:
    statement = {"q": {"_id": {"$gt": 1}}, "u": {"$inc": {"x": 1}}, "sort": {"_id": -1}}
    old = Client(make_cluster())
    old.command({"insert": "c", "documents": [{"_id": i, "x": 0} for i in range(1, 4)]})
    refused = old.command({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"x": 9}}}, statement]})
    # the whole command is refused when parsed, before any statement runs
    assert (refused["ok"], refused["code"], refused["codeName"]) == (0.0, 40415, "Location40415")
    assert refused["errmsg"] == "BSON field 'update.updates.sort' is an unknown field."
    assert old.command({"find": "c", "filter": {"x": {"$ne": 0}}})["cursor"]["firstBatch"] == []
    new = Client(make_cluster(max_wire_version=25))
    new.command({"insert": "c", "documents": [{"_id": i, "x": 0} for i in range(1, 4)]})
    assert new.command({"update": "c", "updates": [statement]})["nModified"] == 1
    assert new.command({"find": "c", "filter": {"x": 1}})["cursor"]["firstBatch"] == [{"_id": 3, "x": 1}]
    unknown = new.command({"update": "c", "updates": [{**statement, "frobnicate": 1}]})
    assert unknown["errmsg"] == "BSON field 'update.updates.frobnicate' is an unknown field."


def test_update_pipeline_with_an_unknown_stage_fails_the_command() -> None:
    client = Client(make_cluster())
    client.command({"insert": "c", "documents": [{"_id": 1}, {"_id": 2}]})
    disallowed = client.command({"update": "c", "updates": [{"q": {"_id": 1}, "u": [{"$match": {}}]}]})
    assert disallowed["ok"] == 1.0 and disallowed["writeErrors"][0]["code"] == 72
    unknown = client.command({
        "update": "c", "ordered": False,
        "updates": [
            {"q": {"_id": 1}, "u": [{"$set": {"x": 1}}]},
            {"q": {"_id": 2}, "u": [{"$invalidOperator": True}]},
            {"q": {"_id": 2}, "u": [{"$set": {"x": 2}}]},
        ],
    })
    # mongod lite-parses the pipelines again after running the statements: the command fails,
    # and the writes it made stay made
    assert (unknown["ok"], unknown["code"], unknown["codeName"]) == (0.0, 40324, "Location40324")
    assert unknown["errmsg"] == "Unrecognized pipeline stage name: '$invalidOperator'"
    found = client.command({"find": "c", "sort": {"_id": 1}})["cursor"]["firstBatch"]
    assert found == [{"_id": 1, "x": 1}, {"_id": 2, "x": 2}]


def test_find_return_key_and_show_record_id() -> None:
    client = Client(make_cluster())
    client.command({"insert": "c", "documents": [{"_id": i, "x": i * 11} for i in range(1, 4)]})
    both = client.command({"find": "c", "filter": {}, "sort": {"_id": 1}, "showRecordId": True, "returnKey": True})
    assert both["cursor"]["firstBatch"] == [{"_id": 1}, {"_id": 2}, {"_id": 3}]
    shown = client.command({"find": "c", "filter": {"x": 22}, "showRecordId": True})["cursor"]["firstBatch"]
    assert shown == [{"_id": 2, "x": 22, "$recordId": Int64(2)}] and type(shown[0]["$recordId"]) is Int64
    assert client.command({"find": "c", "returnKey": True})["cursor"]["firstBatch"] == [{}, {}, {}]
