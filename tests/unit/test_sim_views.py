"""Read-only views in the simulated server: definitions, reads through them, refusals."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sim_wire_client import Client, make_cluster

from mongo_sansio.bson import Binary, Int64


def ok(client: Client, body: dict[str, Any], db: str = "test") -> dict[str, Any]:
    reply = client.command(body, db)
    assert reply["ok"] == 1.0, reply
    return reply


def error(client: Client, body: dict[str, Any], db: str = "test") -> tuple[int, str]:
    reply = client.command(body, db)
    assert reply["ok"] == 0.0, reply
    return reply["code"], reply["errmsg"]


def ids(reply: dict[str, Any]) -> list[Any]:
    return [d["_id"] for d in reply["cursor"]["firstBatch"]]


@pytest.fixture
def client() -> Client:
    """``coll`` with _id 1..6 (x = _id mod 3) and ``v``, the documents with _id above 1."""
    client = Client(make_cluster())
    ok(client, {"insert": "coll", "documents": [{"_id": i, "x": i % 3, "tags": ["t", str(i % 2)]} for i in range(1, 7)]})
    ok(client, {"create": "v", "viewOn": "coll", "pipeline": [{"$match": {"_id": {"$gt": 1}}}]})
    return client


def test_listed_as_a_read_only_view_beside_system_views(client: Client) -> None:
    rows = ok(client, {"listCollections": 1, "cursor": {}})["cursor"]["firstBatch"]
    assert [(r["name"], r["type"]) for r in rows] == [("coll", "collection"), ("system.views", "collection"), ("v", "view")]
    assert rows[2] == {"name": "v", "type": "view", "info": {"readOnly": True},
                       "options": {"viewOn": "coll", "pipeline": [{"$match": {"_id": {"$gt": 1}}}]}}
    named = ok(client, {"listCollections": 1, "filter": {"type": "view"}, "nameOnly": True, "cursor": {}})
    assert named["cursor"]["firstBatch"] == [{"name": "v", "type": "view"}]
    stored = ok(client, {"find": "system.views"})["cursor"]["firstBatch"]
    assert stored == [{"_id": "test.v", "viewOn": "coll", "pipeline": [{"$match": {"_id": {"$gt": 1}}}]}]


def test_find_runs_the_view_pipeline_first(client: Client) -> None:
    first = ok(client, {"find": "v", "filter": {"x": {"$ne": 0}}, "sort": {"_id": -1}, "skip": 1, "limit": 3,
                        "projection": {"x": 1}, "batchSize": 1})
    cursor = first["cursor"]  # (x != 0: _id 5, 4, 2 from the view, 5 skipped)
    assert cursor["ns"] == "test.v" and cursor["firstBatch"] == [{"_id": 4, "x": 1}]
    rest = ok(client, {"getMore": Int64(cursor["id"]), "collection": "v"})["cursor"]
    assert rest["nextBatch"] == [{"_id": 2, "x": 2}] and rest["id"] == 0
    assert ids(ok(client, {"find": "v", "limit": 1, "singleBatch": True})) == [2]  # findOne


def test_count_distinct_and_aggregate(client: Client) -> None:
    assert ok(client, {"count": "v"})["n"] == 5
    assert ok(client, {"count": "v", "query": {"x": {"$ne": 0}}, "skip": 1, "limit": 5})["n"] == 2
    assert ok(client, {"count": "v", "query": {"x": {"$ne": 0}}, "limit": -1})["n"] == 1
    assert sorted(ok(client, {"distinct": "v", "key": "x", "query": {"_id": {"$lt": 4}}})["values"]) == [0, 2]
    assert sorted(ok(client, {"distinct": "v", "key": "tags"})["values"]) == ["0", "1", "t"]
    grouped = ok(client, {"aggregate": "v", "pipeline": [{"$group": {"_id": "$x", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}],
                          "cursor": {}})
    assert grouped["cursor"]["ns"] == "test.v"
    assert grouped["cursor"]["firstBatch"] == [{"_id": 0, "n": 2}, {"_id": 1, "n": 1}, {"_id": 2, "n": 2}]


def test_views_on_views_on_missing_collections_and_lookups(client: Client) -> None:
    ok(client, {"create": "v2", "viewOn": "v", "pipeline": [{"$match": {"x": 2}}, {"$project": {"_id": 1}}]})
    assert ids(ok(client, {"find": "v2"})) == [2, 5]
    assert ok(client, {"count": "v2"})["n"] == 2
    ok(client, {"create": "ghost", "viewOn": "missing"})  # allowed: the collection may come later
    assert ids(ok(client, {"find": "ghost"})) == []
    ok(client, {"insert": "missing", "documents": [{"_id": "m"}]})
    assert ids(ok(client, {"find": "ghost"})) == ["m"]
    joined = ok(client, {"aggregate": "coll", "pipeline": [
        {"$match": {"_id": {"$lte": 2}}},
        {"$lookup": {"from": "v2", "localField": "_id", "foreignField": "_id", "as": "in_v2"}}], "cursor": {}})
    assert [d["in_v2"] for d in joined["cursor"]["firstBatch"]] == [[], [{"_id": 2}]]


def test_collmod_and_drop(client: Client) -> None:
    ok(client, {"create": "v2", "viewOn": "v", "pipeline": []})
    ok(client, {"collMod": "v", "pipeline": [{"$match": {"_id": {"$gt": 4}}}]})
    assert ids(ok(client, {"find": "v2"})) == [5, 6]
    ok(client, {"collMod": "v", "viewOn": "other"})
    assert ids(ok(client, {"find": "v2"})) == []
    assert error(client, {"collMod": "v", "validator": {}}) == (72, "option not supported on a view: validator")
    assert error(client, {"collMod": "v", "viewOn": "v2"})[0] == 5  # a cycle
    assert ok(client, {"drop": "v"}) == {"ns": "test.v", "ok": 1.0, **_cluster_fields(client)}
    names = [r["name"] for r in ok(client, {"listCollections": 1, "cursor": {}})["cursor"]["firstBatch"]]
    assert names == ["coll", "system.views", "v2"]  # (system.views stays, as on mongod)
    ok(client, {"create": "v"})  # the name is free for a collection again


def _cluster_fields(client: Client) -> dict[str, Any]:
    reply = client.command({"ping": 1})
    return {k: reply[k] for k in ("$clusterTime", "operationTime")}


def test_writes_indexes_and_renames_are_refused(client: Client) -> None:
    message = "Namespace test.v is a view, not a collection"
    unordered = ok(client, {"insert": "v", "documents": [{"a": 1}, {"a": 2}], "ordered": False})
    assert unordered["n"] == 0 and unordered["writeErrors"] == [
        {"index": 0, "code": 166, "errmsg": message}, {"index": 1, "code": 166, "errmsg": message}]
    ordered = ok(client, {"update": "v", "updates": [{"q": {}, "u": {"$set": {"a": 1}}}] * 2})
    assert ordered["n"] == 0 and ordered["nModified"] == 0 and len(ordered["writeErrors"]) == 1
    assert ok(client, {"delete": "v", "deletes": [{"q": {}, "limit": 0}]})["writeErrors"][0]["code"] == 166
    assert error(client, {"findAndModify": "v", "query": {}, "remove": True}) == (166, message)
    assert error(client, {"createIndexes": "v", "indexes": [{"key": {"a": 1}, "name": "a_1"}]})[0] == 166
    assert error(client, {"listIndexes": "v", "cursor": {}}) == (166, message)
    assert error(client, {"dropIndexes": "v", "index": "*"}) == (166, "Cannot drop indexes on view test.v")
    assert error(client, {"renameCollection": "test.v", "to": "test.w"}, "admin") == (166, "cannot rename view: test.v")
    assert error(client, {"renameCollection": "test.coll", "to": "test.v"}, "admin")[0] == 48
    assert ok(client, {"count": "coll"})["n"] == 6  # nothing was written


def test_find_options_aggregation_lacks_are_refused(client: Client) -> None:
    for option in ({"tailable": True}, {"showRecordId": True}, {"returnKey": True}, {"singleBatch": True},
                   {"sort": {"$natural": 1}}):
        assert error(client, {"find": "v", **option})[0] == 168, option


def test_create_checks(client: Client) -> None:
    same = {"create": "v", "viewOn": "coll", "pipeline": [{"$match": {"_id": {"$gt": 1}}}]}
    ok(client, same)  # the same definition again: ok, as mongod 7.0
    assert error(client, {**same, "pipeline": []})[0] == 48
    assert error(client, {**same, "viewOn": "other"})[1].startswith("namespace test.v already exists, but is a view on")
    assert error(client, {"create": "v"})[0] == 48
    assert error(client, {"create": "coll", "viewOn": "v"})[0] == 48
    assert error(client, {"create": "w", "pipeline": []}) == (72, "'pipeline' requires 'viewOn' to also be specified")
    assert error(client, {"create": "w", "viewOn": ""})[0] == 2
    assert error(client, {"create": "w", "viewOn": 1})[0] == 14
    assert error(client, {"create": "w", "viewOn": "coll", "pipeline": {}})[0] == 14
    assert error(client, {"create": "w", "viewOn": "coll", "pipeline": [{"$merge": "x"}]})[0] == 167
    assert error(client, {"create": "w", "viewOn": "coll", "pipeline": [{"$changeStream": {}}]}) == (
        167, "$changeStream cannot be used in a view definition")
    assert error(client, {"create": "w", "viewOn": "coll", "pipeline": [{"$documents": []}]})[0] == 73
    assert error(client, {"create": "w", "viewOn": "coll", "pipeline": [{"$nope": 1}]})[0] == 40324
    ok(client, {"create": "a", "viewOn": "b"})
    assert error(client, {"create": "b", "viewOn": "a"}) == (5, "View cycle detected: test.b => test.a => test.b")


def test_view_chains_stop_at_twenty(client: Client) -> None:
    for i in range(1, 21):
        ok(client, {"create": f"c{i}", "viewOn": f"c{i - 1}" if i > 1 else "coll"})
    assert error(client, {"create": "c21", "viewOn": "c20"})[0] == 165
    assert ok(client, {"count": "c19"})["n"] == 6
    assert error(client, {"find": "c20"})[0] == 165  # creatable, but past mongod's resolution depth


def test_change_streams(client: Client) -> None:
    assert error(client, {"aggregate": "v", "pipeline": [{"$changeStream": {}}], "cursor": {}}) == (
        166, "Namespace test.v is a view, not a collection")
    expanded = ok(client, {"aggregate": 1, "pipeline": [{"$changeStream": {"showExpandedEvents": True}}], "cursor": {}})
    plain = ok(client, {"aggregate": 1, "pipeline": [{"$changeStream": {}}], "cursor": {}})
    ok(client, {"create": "w", "viewOn": "coll", "pipeline": [{"$project": {"x": 1}}]})
    ok(client, {"collMod": "w", "pipeline": []})
    ok(client, {"drop": "w"})
    ok(client, {"drop": "system.views"})
    events = _next(client, expanded)
    assert [(e["operationType"], e["ns"]) for e in events] == [("create", {"db": "test", "coll": "w"}),
                                                                ("modify", {"db": "test", "coll": "w"}),
                                                                ("drop", {"db": "test", "coll": "w"})]
    assert events[0]["operationDescription"] == {"viewOn": "coll", "pipeline": [{"$project": {"x": 1}}]}
    assert events[1]["operationDescription"] == {"viewOn": "coll", "pipeline": []}
    assert "operationDescription" not in events[2]
    assert _next(client, plain) == []


def _next(client: Client, opened: dict[str, Any]) -> list[dict[str, Any]]:
    """A getMore's events; with none, its awaitData wait is run out."""
    client.send({"getMore": Int64(opened["cursor"]["id"]), "collection": "$cmd.aggregate", "maxTimeMS": 10})
    replies = client.messages()
    if not replies:
        client.advance(0.02)
        replies = client.messages()
    (reply,) = replies
    events: list[dict[str, Any]] = reply.body["cursor"]["nextBatch"]
    return events


def test_transactions_read_views_and_cannot_create_them(client: Client) -> None:
    txn = {"lsid": {"id": Binary(uuid.UUID(int=3).bytes, 4)}, "txnNumber": Int64(1), "autocommit": False}
    found = ok(client, {"find": "v", "filter": {"x": 0}, "startTransaction": True, **txn})
    assert ids(found) == [3, 6]
    assert error(client, {"create": "w", "viewOn": "coll", **txn})[0] == 263


def test_a_view_has_its_own_default_collation() -> None:
    client = Client(make_cluster())
    insensitive = {"locale": "en", "strength": 2}
    ok(client, {"create": "names", "collation": insensitive})
    ok(client, {"insert": "names", "documents": [{"_id": 1, "n": "a"}, {"_id": 2, "n": "A"}, {"_id": 3, "n": "b"}]})
    # without a collation of its own, a view does not take its collection's: binary
    ok(client, {"create": "binary", "viewOn": "names", "pipeline": [{"$match": {"n": "a"}}]})
    assert ids(ok(client, {"find": "binary"})) == [1]
    ok(client, {"create": "v", "viewOn": "names", "collation": insensitive})
    listed = ok(client, {"listCollections": 1, "filter": {"name": "v"}, "cursor": {}})["cursor"]["firstBatch"][0]
    assert listed["options"]["collation"]["locale"] == "en" and listed["options"]["collation"]["strength"] == 2
    assert listed["options"]["collation"]["version"] == "57.1"  # (mongod's full form)
    assert ids(ok(client, {"find": "v", "filter": {"n": "a"}})) == [1, 2]
    assert ids(ok(client, {"find": "v", "filter": {"n": "a"}, "collation": insensitive})) == [1, 2]
    assert ok(client, {"count": "v", "query": {"n": "A"}})["n"] == 2
    assert len(ok(client, {"distinct": "v", "key": "n"})["values"]) == 2
    grouped = ok(client, {"aggregate": "v", "pipeline": [{"$match": {"n": "A"}}, {"$count": "n"}], "cursor": {}})
    assert grouped["cursor"]["firstBatch"] == [{"n": 2}]
    overriding = {"find": "v", "collation": {"locale": "fr"}}
    assert error(client, overriding) == (167, "Cannot override a view's default collation")
    assert error(client, {"aggregate": "v", "pipeline": [], "cursor": {}, "collation": {"locale": "simple"}})[0] == 167
    ok(client, {"create": "v", "viewOn": "names", "collation": {**insensitive, "caseLevel": False}})  # the same
    assert error(client, {"create": "v", "viewOn": "names", "collation": {"locale": "fr"}})[0] == 48
    ok(client, {"create": "v2", "viewOn": "v", "collation": insensitive})
    assert error(client, {"create": "v3", "viewOn": "v"}) == (
        167, "View test.v3 has conflicting collation with view test.v")
    assert error(client, {"create": "v3", "viewOn": "v", "collation": {"locale": "xx"}})[0] == 2
