"""Collection UUIDs in the simulated server: listCollections' ``info.uuid``, their life cycle
(create, drop and re-create, rename), and ``collectionUUID`` on expanded change events."""

from __future__ import annotations

import uuid
from typing import Any

from sim_wire_client import Client, make_cluster
from test_sim_change_streams import more, ok, types, watch

from mongo_sansio.bson import Binary, Int64


def listed_uuids(client: Client, db: str = "test") -> dict[str, Any]:
    reply = ok(client, {"listCollections": 1}, db)
    return {row["name"]: row["info"].get("uuid") for row in reply["cursor"]["firstBatch"]}


def as_uuid(value: Any) -> uuid.UUID:
    """A UUID the client decoded (uuid.UUID for subtype 4) or a Binary of subtype 4."""
    if isinstance(value, uuid.UUID):
        return value
    assert isinstance(value, Binary) and value.subtype == 4, value
    return uuid.UUID(bytes=bytes(value))


def test_every_collection_is_listed_with_a_version_4_uuid() -> None:
    client = Client(make_cluster())
    ok(client, {"create": "explicit"})
    ok(client, {"insert": "implicit", "documents": [{"_id": 1}]})
    ok(client, {"createIndexes": "indexed", "indexes": [{"key": {"x": 1}, "name": "x_1"}]})
    found = {name: as_uuid(value) for name, value in listed_uuids(client).items()}
    assert set(found) == {"explicit", "implicit", "indexed"}
    assert all(u.version == 4 and u.variant == uuid.RFC_4122 for u in found.values())
    assert len(set(found.values())) == 3
    names_only = ok(client, {"listCollections": 1, "nameOnly": True})["cursor"]["firstBatch"]
    assert all("info" not in row for row in names_only)


def test_uuids_are_seeded_and_leave_the_other_seeded_ids_alone() -> None:
    def run(seed: int, collections: int) -> tuple[list[Any], int]:
        cluster = make_cluster(seed=seed)
        client = Client(cluster)
        for n in range(collections):
            ok(client, {"create": f"c{n}"})
        cursor_id = ok(client, {"find": "c0", "batchSize": 0})["cursor"]["id"] if collections else 0
        return [c.uuid for c in cluster.databases.get("test", {}).values()], cursor_id

    assert run(7, 2) == run(7, 2)
    assert run(7, 2)[0] != run(8, 2)[0]
    # (cursor ids come from the main seeded draws; creating more collections does not move them)
    assert run(7, 1)[1] == run(7, 3)[1]


def test_drop_and_recreate_gives_a_new_uuid_and_a_rename_keeps_it() -> None:
    client = Client(make_cluster())
    ok(client, {"create": "c"})
    first = listed_uuids(client)["c"]
    ok(client, {"drop": "c"})
    ok(client, {"create": "c"})
    second = listed_uuids(client)["c"]
    assert first != second
    ok(client, {"renameCollection": "test.c", "to": "test.renamed"}, "admin")
    assert listed_uuids(client) == {"renamed": second}
    # across databases mongod copies the documents into a new collection
    ok(client, {"renameCollection": "test.renamed", "to": "other.moved"}, "admin")
    moved = listed_uuids(client, "other")["moved"]
    assert moved is not None and moved != second


def test_expanded_events_carry_the_collection_uuid() -> None:
    client = Client(make_cluster())
    expanded = watch(client, 1, showExpandedEvents=True)
    plain = watch(client, 1)
    ok(client, {"create": "c"})
    ok(client, {"insert": "c", "documents": [{"_id": 1}]})
    ok(client, {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"x": 1}}}]})
    ok(client, {"createIndexes": "c", "indexes": [{"key": {"x": 1}, "name": "x_1"}]})
    ok(client, {"dropIndexes": "c", "index": "x_1"})
    ok(client, {"collMod": "c"})
    ok(client, {"delete": "c", "deletes": [{"q": {"_id": 1}, "limit": 1}]})
    ok(client, {"renameCollection": "test.c", "to": "test.d"}, "admin")
    ok(client, {"drop": "d"})
    ok(client, {"insert": "e", "documents": [{"_id": 1}]})
    ok(client, {"dropDatabase": 1})
    events = more(client, expanded)["nextBatch"]
    assert types(events) == ["create", "insert", "update", "createIndexes", "dropIndexes", "modify", "delete",
                             "rename", "drop", "create", "insert", "drop", "dropDatabase", "invalidate"]
    first = events[0]["collectionUUID"]
    assert all(e["collectionUUID"] == first for e in events[:9])  # a rename keeps it
    assert events[9]["collectionUUID"] == events[10]["collectionUUID"] == events[11]["collectionUUID"] != first
    assert "collectionUUID" not in events[12] and "collectionUUID" not in events[13]
    # mongod's place for it: after clusterTime, before wallTime
    assert list(events[1])[:5] == ["_id", "operationType", "clusterTime", "collectionUUID", "wallTime"]
    plain_events = more(client, plain)["nextBatch"]
    assert all("collectionUUID" not in e for e in plain_events)
    assert list(plain_events[0])[:4] == ["_id", "operationType", "clusterTime", "wallTime"]


def test_a_rename_over_a_target_names_the_dropped_target_by_uuid() -> None:
    client = Client(make_cluster())
    ok(client, {"create": "c"})
    ok(client, {"create": "target"})
    target = listed_uuids(client)["target"]
    expanded = watch(client, "c", showExpandedEvents=True)
    plain = watch(client, "c")
    ok(client, {"renameCollection": "test.c", "to": "test.target", "dropTarget": True}, "admin")
    rename, invalidate = more(client, expanded)["nextBatch"]
    assert rename["operationDescription"] == {"to": {"db": "test", "coll": "target"}, "dropTarget": target}
    assert invalidate["operationType"] == "invalidate" and "collectionUUID" not in invalidate
    assert "operationDescription" not in more(client, plain)["nextBatch"][0]


def test_a_transaction_events_carry_the_uuid_of_the_collection_it_created() -> None:
    client = Client(make_cluster())
    expanded = watch(client, 1, showExpandedEvents=True)
    txn = {"lsid": {"id": Binary(uuid.UUID(int=3).bytes, 4)}, "txnNumber": Int64(1), "autocommit": False}
    ok(client, {"insert": "new", "documents": [{"_id": 1}], "startTransaction": True, **txn})
    ok(client, {"commitTransaction": 1, **txn}, "admin")
    events = more(client, expanded)["nextBatch"]
    assert types(events) == ["create", "insert"]
    created = listed_uuids(client)["new"]
    assert events[0]["collectionUUID"] == events[1]["collectionUUID"] == created
