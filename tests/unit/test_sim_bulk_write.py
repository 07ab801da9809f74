"""The simulator's bulkWrite command (mongod 8.0): results, counts, errors, cursor, retries."""

from __future__ import annotations

import uuid
from typing import Any

from sim_wire_client import Client, make_cluster

from mongo_sansio.bson import Binary, Int64

NS = [{"ns": "test.a"}, {"ns": "other.b"}]


def _client() -> Client:
    return Client(make_cluster(max_wire_version=25))


def _bulk(client: Client, ops: list[dict[str, Any]], ns_info: list[dict[str, Any]] | None = None,
          **fields: Any) -> dict[str, Any]:
    """bulkWrite with ops and nsInfo as document sequences, as drivers send them."""
    client.send({"bulkWrite": 1, **fields}, db="admin", sequences={"ops": ops, "nsInfo": ns_info or NS})
    (reply,) = client.messages()
    body: dict[str, Any] = reply.body
    return body


def _counts(reply: dict[str, Any]) -> tuple[int, ...]:
    return tuple(reply[k] for k in ("nErrors", "nInserted", "nMatched", "nModified", "nUpserted", "nDeleted"))


def _find(client: Client, db: str, coll: str) -> list[dict[str, Any]]:
    batch: list[dict[str, Any]] = client.command({"find": coll, "sort": {"_id": 1}}, db=db)["cursor"]["firstBatch"]
    return batch


def test_results_and_counts_across_namespaces() -> None:
    client = _client()
    reply = _bulk(client, [
        {"insert": 0, "document": {"_id": 1, "x": 1}},
        {"insert": 1, "document": {"_id": 1, "x": 1}},
        {"insert": 0, "document": {"_id": 2, "x": 2}},
        {"update": 0, "filter": {"_id": 1}, "updateMods": {"$set": {"x": 10}}},
        {"update": 0, "filter": {"_id": 2}, "updateMods": {"$set": {"x": 2}}},  # matched, not modified
        {"delete": 1, "filter": {"_id": 1}},
    ])
    assert reply["ok"] == 1.0
    assert reply["cursor"]["id"] == 0 and reply["cursor"]["ns"] == "admin.$cmd.bulkWrite"
    assert reply["cursor"]["firstBatch"] == [
        {"ok": 1.0, "idx": 0, "n": 1}, {"ok": 1.0, "idx": 1, "n": 1}, {"ok": 1.0, "idx": 2, "n": 1},
        {"ok": 1.0, "idx": 3, "n": 1, "nModified": 1}, {"ok": 1.0, "idx": 4, "n": 1, "nModified": 0},
        {"ok": 1.0, "idx": 5, "n": 1},
    ]
    assert _counts(reply) == (0, 3, 2, 1, 0, 1)
    assert _find(client, "test", "a") == [{"_id": 1, "x": 10}, {"_id": 2, "x": 2}]
    assert _find(client, "other", "b") == []


def test_arrays_in_the_body_work_like_sequences() -> None:
    client = _client()
    reply = client.command({"bulkWrite": 1, "ops": [{"insert": 0, "document": {"_id": 1}}], "nsInfo": NS}, db="admin")
    assert reply["nInserted"] == 1 and reply["cursor"]["firstBatch"] == [{"ok": 1.0, "idx": 0, "n": 1}]


def test_upsert_multi_update_and_multi_delete() -> None:
    client = _client()
    client.command({"insert": "a", "documents": [{"_id": i, "k": i % 2} for i in range(5)]})
    reply = _bulk(client, [
        {"update": 0, "filter": {"_id": 9}, "updateMods": {"$set": {"k": 9}}, "upsert": True},
        {"update": 0, "filter": {"k": 0}, "updateMods": {"$set": {"m": True}}, "multi": True},
        {"delete": 0, "filter": {"k": 1}, "multi": True},
        {"delete": 0, "filter": {"k": 0}},  # multi false: one document
    ])
    entries = reply["cursor"]["firstBatch"]
    assert entries[0] == {"ok": 1.0, "idx": 0, "n": 1, "nModified": 0, "upserted": {"_id": 9}}
    assert entries[1] == {"ok": 1.0, "idx": 1, "n": 3, "nModified": 3}
    assert entries[2] == {"ok": 1.0, "idx": 2, "n": 2} and entries[3] == {"ok": 1.0, "idx": 3, "n": 1}
    # an upsert counts in nUpserted, not nMatched (as mongod's summary)
    assert _counts(reply) == (0, 0, 3, 3, 1, 3)


def test_errors_only_ordered_and_unordered() -> None:
    client = _client()
    ops = [
        {"insert": 0, "document": {"_id": 1}},
        {"insert": 0, "document": {"_id": 1}},  # DuplicateKey
        {"update": 0, "filter": {"_id": 1}, "updateMods": {"$set": {"_id": 2}}},  # immutable _id
        {"insert": 0, "document": {"_id": 3}},
    ]
    ordered = _bulk(client, ops, errorsOnly=True)
    (error,) = ordered["cursor"]["firstBatch"]
    assert (error["ok"], error["idx"], error["code"], error["codeName"], error["n"]) == (0.0, 1, 11000, "DuplicateKey", 0)
    assert error["keyValue"] == {"_id": 1} and "E11000" in error["errmsg"]
    assert _counts(ordered) == (1, 1, 0, 0, 0, 0)
    assert [d["_id"] for d in _find(client, "test", "a")] == [1]

    client.command({"drop": "a"})
    unordered = _bulk(client, ops, ordered=False)
    entries = unordered["cursor"]["firstBatch"]
    assert [(e["idx"], e["ok"]) for e in entries] == [(0, 1.0), (1, 0.0), (2, 0.0), (3, 1.0)]
    assert entries[2]["code"] == 66 and entries[2]["nModified"] == 0  # a failed update says nModified 0
    assert _counts(unordered) == (2, 2, 0, 0, 0, 0)
    assert [d["_id"] for d in _find(client, "test", "a")] == [1, 3]


def test_let_bypass_and_per_op_options() -> None:
    client = _client()
    client.command({"insert": "a", "documents": [{"_id": 1, "s": "x", "arr": [1, 5]}, {"_id": 2, "s": "X"}]})
    reply = _bulk(client, [
        {"update": 0, "filter": {"$expr": {"$eq": ["$_id", "$$one"]}}, "updateMods": {"$set": {"arr.$[e]": 0}},
         "arrayFilters": [{"e": {"$gt": 2}}]},
        {"delete": 0, "filter": {"s": "x"}, "collation": {"locale": "en", "strength": 2}, "multi": True},
    ], let={"one": 1})
    assert _counts(reply) == (0, 0, 1, 1, 0, 2)


def test_malformed_commands_fail_whole() -> None:
    client = _client()
    bad_index = _bulk(client, [{"insert": 0, "document": {"_id": 1}}, {"insert": 5, "document": {"_id": 2}}])
    assert (bad_index["ok"], bad_index["code"], bad_index["codeName"]) == (0.0, 2, "BadValue")
    assert bad_index["errmsg"] == "BulkWrite ops entry { insert: 5, document: { _id: 2 } } has an invalid nsInfo index."
    assert _find(client, "test", "a") == []  # nothing ran
    unknown = _bulk(client, [{"delete": 0, "filter": {}, "bogus": 1}])
    assert unknown["code"] == 40415 and unknown["errmsg"] == "BSON field 'bulkWrite.ops.bogus' is an unknown field."
    empty = _bulk(client, [])
    assert empty["code"] == 10 and empty["codeName"] == "InvalidLength"
    not_admin = client.command({"bulkWrite": 1, "ops": [{"insert": 0, "document": {}}], "nsInfo": NS})
    assert not_admin["code"] == 13


def test_mongod_7_has_no_bulk_write() -> None:
    client = Client(make_cluster())  # maxWireVersion 21: mongod 7.0
    reply = client.command({"bulkWrite": 1, "ops": [{"insert": 0, "document": {}}], "nsInfo": NS}, db="admin")
    assert (reply["ok"], reply["code"], reply["codeName"]) == (0.0, 59, "CommandNotFound")


def test_results_cursor_with_get_more() -> None:
    client = _client()
    ops = [{"insert": 0, "document": {"_id": i}} for i in range(5)]
    reply = _bulk(client, ops, cursor={"batchSize": 2})
    cursor = reply["cursor"]
    assert [e["idx"] for e in cursor["firstBatch"]] == [0, 1] and cursor["id"] != 0
    assert reply["nInserted"] == 5
    more = client.command({"getMore": Int64(cursor["id"]), "collection": "$cmd.bulkWrite", "batchSize": 2}, db="admin")
    assert [e["idx"] for e in more["cursor"]["nextBatch"]] == [2, 3] and more["cursor"]["ns"] == "admin.$cmd.bulkWrite"
    rest = client.command({"getMore": Int64(cursor["id"]), "collection": "$cmd.bulkWrite"}, db="admin")
    assert [e["idx"] for e in rest["cursor"]["nextBatch"]] == [4] and rest["cursor"]["id"] == 0
    # without a batchSize every entry is in the first batch, as mongod's
    assert _bulk(client, [{"delete": 0, "filter": {"_id": i}} for i in range(5)])["cursor"]["id"] == 0


def test_retried_bulk_write_is_applied_once() -> None:
    client = _client()
    session = {"lsid": {"id": Binary(uuid.UUID(int=3).bytes, 4)}, "txnNumber": Int64(1)}
    ops = [{"insert": 0, "document": {"_id": 1, "n": 0}},
           {"update": 0, "filter": {"_id": 1}, "updateMods": {"$inc": {"n": 1}}},
           {"insert": 0, "document": {"_id": 2}}]
    first = _bulk(client, ops, cursor={"batchSize": 1}, **session)
    again = _bulk(client, ops, cursor={"batchSize": 1}, **session)
    assert _counts(again) == _counts(first) == (0, 2, 1, 1, 0, 0)
    assert _find(client, "test", "a") == [{"_id": 1, "n": 1}, {"_id": 2}]
    # the retry answers its results from a cursor of its own
    assert again["cursor"]["id"] not in (0, first["cursor"]["id"])
    more = client.command({"getMore": again["cursor"]["id"], "collection": "$cmd.bulkWrite"}, db="admin")
    assert [e["idx"] for e in more["cursor"]["nextBatch"]] == [1, 2]


def test_fail_command_and_transactions() -> None:
    client = _client()
    client.command({"configureFailPoint": "failCommand", "mode": {"times": 1},
                    "data": {"failCommands": ["bulkWrite"], "errorCode": 91}}, db="admin")
    failed = _bulk(client, [{"insert": 0, "document": {"_id": 1}}])
    assert failed["code"] == 91 and _find(client, "test", "a") == []

    lsid = {"id": Binary(uuid.UUID(int=4).bytes, 4)}
    txn = {"lsid": lsid, "txnNumber": Int64(1), "autocommit": False}
    client.command({"create": "a"})
    started = _bulk(client, [{"insert": 0, "document": {"_id": 1}}], startTransaction=True, **txn)
    assert started["nInserted"] == 1
    assert _find(client, "test", "a") == []  # not visible outside until the commit
    client.command({"commitTransaction": 1, **txn}, db="admin")
    assert _find(client, "test", "a") == [{"_id": 1}]
    # a write error in a transaction aborts it
    txn2 = {**txn, "txnNumber": Int64(2)}
    broken = _bulk(client, [{"insert": 0, "document": {"_id": 2}}, {"insert": 0, "document": {"_id": 1}}],
                   startTransaction=True, **txn2)
    assert broken["nErrors"] == 1
    commit = client.command({"commitTransaction": 1, **txn2}, db="admin")
    assert commit["code"] == 251
    assert _find(client, "test", "a") == [{"_id": 1}]


def test_an_op_on_a_view_fails_as_a_statement_on_a_view_does() -> None:
    client = _client()
    client.command({"create": "v", "viewOn": "a", "pipeline": []})
    reply = _bulk(client, [{"insert": 0, "document": {"_id": 1}}, {"insert": 1, "document": {"_id": 1}}],
                  [{"ns": "test.v"}, {"ns": "test.a"}], ordered=False)
    error, done = reply["cursor"]["firstBatch"]
    assert (error["idx"], error["code"], error["errmsg"]) == (0, 166, "Namespace test.v is a view, not a collection")
    assert done == {"ok": 1.0, "idx": 1, "n": 1}
    assert client.command({"listCollections": 1, "filter": {"name": "v"}})["cursor"]["firstBatch"][0]["type"] == "view"
