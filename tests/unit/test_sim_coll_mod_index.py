"""collMod's ``index`` option on the simulated server: hidden, expireAfterSeconds,
prepareUnique then unique (with dryRun), the replies' *_old/*_new fields, listIndexes, and
mongod's refusals."""

from __future__ import annotations

from typing import Any

from sim_wire_client import Client, make_cluster

from mongo_sansio.bson import Int64


def _client_with_duplicates() -> Client:
    client = Client(make_cluster())
    client.command({"insert": "c", "documents": [{"_id": 1, "x": 1}, {"_id": 2, "x": 1}, {"_id": 3, "x": 2}]})
    client.command({"createIndexes": "c", "indexes": [{"key": {"x": 1}, "name": "x_1"}]})
    return client


def _index(client: Client, name: str) -> dict[str, Any]:
    indexes = client.command({"listIndexes": "c"})["cursor"]["firstBatch"]
    (found,) = [spec for spec in indexes if spec["name"] == name]
    return dict(found)


def _mod(client: Client, index: dict[str, Any], **more: Any) -> dict[str, Any]:
    """The collMod's reply without the fields every reply has ($clusterTime, operationTime)."""
    reply = client.command({"collMod": "c", "index": index, **more})
    return {k: v for k, v in reply.items() if k not in ("$clusterTime", "operationTime")}


def test_prepare_unique_refuses_new_duplicates_and_keeps_old_ones() -> None:
    client = _client_with_duplicates()
    reply = _mod(client, {"keyPattern": {"x": 1}, "prepareUnique": True})
    assert reply == {"prepareUnique_old": False, "prepareUnique_new": True, "ok": 1.0}
    assert _index(client, "x_1") == {"v": 2, "key": {"x": 1}, "name": "x_1", "prepareUnique": True}
    inserted = client.command({"insert": "c", "documents": [{"_id": 4, "x": 1}]})
    error = inserted["writeErrors"][0]
    assert (error["code"], error["keyPattern"], error["keyValue"]) == (11000, {"x": 1}, {"x": 1})
    assert client.command({"update": "c", "updates": [{"q": {"_id": 3}, "u": {"$set": {"x": 1}}}]})["writeErrors"][0]["code"] == 11000
    # a document that already shares its key may still be updated without changing it
    updated = client.command({"update": "c", "updates": [{"q": {"_id": 2}, "u": {"$set": {"y": 1}}}]})
    assert updated["nModified"] == 1 and "writeErrors" not in updated
    assert "writeErrors" not in client.command({"insert": "c", "documents": [{"_id": 5, "x": 9}]})
    # the same value again is a no-op
    assert _mod(client, {"name": "x_1", "prepareUnique": True}) == {"ok": 1.0}


def test_unique_conversion_reports_violations_then_succeeds() -> None:
    client = _client_with_duplicates()
    refused = _mod(client, {"keyPattern": {"x": 1}, "unique": True})
    assert (refused["code"], refused["codeName"]) == (72, "InvalidOptions")
    assert refused["errmsg"] == "Cannot make index unique with 'prepareUnique=false'. Run collMod to set it first."
    _mod(client, {"keyPattern": {"x": 1}, "prepareUnique": True})
    dry = _mod(client, {"keyPattern": {"x": 1}, "unique": True}, dryRun=True)
    assert (dry["code"], dry["codeName"], dry["violations"]) == (359, "CannotConvertIndexToUnique", [{"ids": [1, 2]}])
    assert dry["errmsg"].startswith("Cannot convert the index to unique.")
    failed = _mod(client, {"keyPattern": {"x": 1}, "unique": True})
    assert (failed["code"], failed["violations"]) == (359, [{"ids": [1, 2]}])
    assert "unique" not in _index(client, "x_1")
    client.command({"delete": "c", "deletes": [{"q": {"_id": 2}, "limit": 1}]})
    assert _mod(client, {"keyPattern": {"x": 1}, "unique": True}, dryRun=True) == {"ok": 1.0}
    assert "unique" not in _index(client, "x_1")  # a dry run changes nothing
    assert _mod(client, {"keyPattern": {"x": 1}, "unique": True}) == {"unique_new": True, "ok": 1.0}
    assert _index(client, "x_1") == {"v": 2, "key": {"x": 1}, "name": "x_1", "unique": True}
    assert client.command({"insert": "c", "documents": [{"x": 2}]})["writeErrors"][0]["code"] == 11000
    # converting a unique index again is a no-op
    assert _mod(client, {"name": "x_1", "unique": True}) == {"ok": 1.0}


def test_hidden_and_expire_after_seconds() -> None:
    client = _client_with_duplicates()
    assert _mod(client, {"name": "x_1", "hidden": True}) == {"hidden_old": False, "hidden_new": True, "ok": 1.0}
    assert _index(client, "x_1")["hidden"] is True
    assert _mod(client, {"name": "x_1", "hidden": True}) == {"ok": 1.0}
    assert _mod(client, {"name": "x_1", "hidden": False}) == {"hidden_old": True, "hidden_new": False, "ok": 1.0}
    assert "hidden" not in _index(client, "x_1")
    made_ttl = _mod(client, {"name": "x_1", "expireAfterSeconds": 60})
    assert made_ttl == {"expireAfterSeconds_new": Int64(60), "ok": 1.0}
    changed = _mod(client, {"keyPattern": {"x": 1}, "expireAfterSeconds": 120})
    assert changed == {"expireAfterSeconds_old": Int64(60), "expireAfterSeconds_new": Int64(120), "ok": 1.0}
    assert _index(client, "x_1")["expireAfterSeconds"] == 120


def test_refusals() -> None:
    client = _client_with_duplicates()
    client.command({"createIndexes": "c", "indexes": [{"key": {"a": 1, "b": 1}, "name": "ab"}]})
    cases: list[tuple[dict[str, Any], dict[str, Any], int]] = [
        ({"keyPattern": {"x": 1}, "name": "x_1", "hidden": True}, {}, 72),
        ({"hidden": True}, {}, 72),
        ({"name": "x_1"}, {}, 72),
        ({"name": "nope", "hidden": True}, {}, 27),
        ({"keyPattern": {"nope": 1}, "hidden": True}, {}, 27),
        ({"name": "_id_", "hidden": True}, {}, 2),
        ({"name": "_id_", "expireAfterSeconds": 5}, {}, 72),
        ({"name": "ab", "expireAfterSeconds": 5}, {}, 72),
        ({"name": "x_1", "unique": False}, {}, 2),
        ({"name": "x_1", "hidden": 1}, {}, 14),
        ({"name": "x_1", "colour": True}, {}, 40415),
        ({"name": "x_1", "prepareUnique": True, "hidden": True}, {}, 72),
        ({"name": "x_1", "prepareUnique": True}, {"validator": {"x": 1}}, 72),
        ({"name": "x_1", "hidden": True}, {"dryRun": True}, 72),
    ]
    for index, more, code in cases:
        reply = _mod(client, index, **more)
        assert reply.get("code") == code, (index, more, reply)
    assert _index(client, "x_1") == {"v": 2, "key": {"x": 1}, "name": "x_1"}  # nothing changed
    assert client.command({"listCollections": 1, "filter": {"name": "c"}})["cursor"]["firstBatch"][0]["options"] == {}
    assert client.command({"collMod": "c", "dryRun": True})["code"] == 72
