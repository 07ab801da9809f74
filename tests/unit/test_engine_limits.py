"""mongod's storage limits in the engine and through the simulated server: 16 MiB and 180
levels of nesting, with each write path's code, and nothing changed by a refused write."""

from __future__ import annotations

from typing import Any

import pytest
from sim_wire_client import Client, make_cluster

from mongo_sansio.testing.engine import Collection, CommandError
from mongo_sansio.testing.engine.limits import (
    MAX_USER_DEPTH,
    MAX_USER_SIZE,
    check_storable,
    nesting_depth,
)

MIB = 1024 * 1024


def nested(levels: int) -> dict[str, Any]:
    """A document whose deepest field sits at ``levels`` (a top-level field is level 1)."""
    document: dict[str, Any] = {"leaf": 1}
    for _ in range(levels - 1):
        document = {"a": document}
    return document


def _collection() -> Collection:
    ids = iter(range(1_000_000))
    return Collection("db", "c", id_factory=lambda: next(ids))


def test_depth_counts_levels_of_fields_and_empty_containers_add_none() -> None:
    assert nesting_depth({}) == 0
    assert nesting_depth({"a": 1}) == 1
    assert nesting_depth({"a": {}}) == 1
    assert nesting_depth({"a": {"b": 1}}) == 2
    assert nesting_depth({"a": [[], [{"b": []}]]}) == 4  # a, a.1, a.1.0, a.1.0.b
    assert nesting_depth(nested(50)) == 50


def test_depth_counting_stops_early_on_a_hostile_document() -> None:
    assert nesting_depth(nested(5000), stop_above=10) == 11


@pytest.mark.parametrize(("path", "code", "start"), [
    ("insert", 15, "cannot insert document because it exceeds 180 levels of nesting"),
    ("update", 15, "Document exceeds maximum nesting depth of 180"),
    ("upsert", 15, "Document exceeds maximum nesting depth of 180"),
])
def test_too_deep_on_each_path(path: str, code: int, start: str) -> None:
    check_storable(nested(MAX_USER_DEPTH), path)
    with pytest.raises(CommandError) as caught:
        check_storable(nested(MAX_USER_DEPTH + 1), path)
    assert (caught.value.code, caught.value.code_name, caught.value.errmsg) == (code, "Overflow", start)


@pytest.mark.parametrize(("path", "code", "start"), [
    ("insert", 2, "object to insert too large. size in bytes: "),
    ("update", 10334, "Resulting document after update is larger than 16777216"),
    ("upsert", 17420, "Document to upsert is larger than 16777216"),
])
def test_too_large_on_each_path(path: str, code: int, start: str) -> None:
    check_storable({"s": "x" * (MAX_USER_SIZE - 100)}, path)
    with pytest.raises(CommandError) as caught:
        check_storable({"s": "x" * MAX_USER_SIZE}, path)
    assert caught.value.code == code and caught.value.errmsg.startswith(start)


def test_an_update_that_grows_a_document_past_16_mib_leaves_it_unchanged() -> None:
    collection = _collection()
    collection.insert_one({"_id": 1, "a": "x" * (9 * MIB)})
    with pytest.raises(CommandError) as caught:
        collection.update({"_id": 1}, {"$set": {"b": "y" * (9 * MIB)}})
    assert caught.value.code == 10334
    (document,) = collection.find({"_id": 1})
    assert set(document) == {"_id", "a"}
    with pytest.raises(CommandError):
        collection.update({"_id": 1}, {"_id": 1, "a": "z" * (17 * MIB)})  # a replacement
    with pytest.raises(CommandError):
        collection.find_and_modify({"_id": 1}, update={"$set": {"c": nested(MAX_USER_DEPTH)}})
    assert collection.find({"_id": 1}) == [document]


def test_upserts_are_held_to_the_limits() -> None:
    collection = _collection()
    with pytest.raises(CommandError) as caught:
        collection.update({"_id": 2}, {"$set": {"big": "x" * (17 * MIB)}}, upsert=True)
    assert caught.value.code == 17420
    with pytest.raises(CommandError) as caught:
        collection.find_and_modify({"_id": 2}, update={"$set": {"deep": nested(MAX_USER_DEPTH)}}, upsert=True)
    assert caught.value.code == 15
    assert len(collection) == 0


def test_through_the_server_every_write_command_refuses_and_changes_nothing() -> None:
    client = Client(make_cluster())
    too_deep = nested(MAX_USER_DEPTH + 1)
    reply = client.command({"insert": "c", "documents": [{"_id": 1}, too_deep, {"_id": 3}], "ordered": False})
    assert reply["n"] == 2 and [(e["index"], e["code"]) for e in reply["writeErrors"]] == [(1, 15)]
    assert client.command({"insert": "c", "documents": [nested(MAX_USER_DEPTH)]})["n"] == 1
    # a 16 MiB string in a message of ~17 MiB: the wire accepts it, the storage refuses it
    reply = client.command({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"s": "x" * (17 * MIB)}}}]})
    assert reply["ok"] == 1.0 and reply["nModified"] == 0 and reply["writeErrors"][0]["code"] == 10334
    reply = client.command({"update": "c", "updates": [{"q": {"_id": 9}, "u": {"$set": {"d": too_deep}}, "upsert": True}]})
    assert reply["writeErrors"][0]["code"] == 15 and "upserted" not in reply
    reply = client.command({"findAndModify": "c", "query": {"_id": 3}, "update": {"_id": 3, "d": too_deep}})
    assert (reply["ok"], reply["code"]) == (0.0, 15)
    assert client.command({"find": "c", "filter": {"_id": {"$in": [1, 3]}}})["cursor"]["firstBatch"] == [{"_id": 1}, {"_id": 3}]
    assert client.command({"count": "c"})["n"] == 3
