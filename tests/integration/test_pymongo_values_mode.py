"""The clients' ``pymongo_types`` keyword: values read back as PyMongo's ``bson`` classes
(adapters/_api/pymongo_values.py, docs/bson.md).

None (the default) decodes into PyMongo's classes when PyMongo's ``bson`` is imported as the
client is made, True always, False never; databases, collections and ``with_options`` inherit
the client's; codec options given explicitly keep their own; generated ``_id``s, upserted ids
and session ids follow.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

bson = pytest.importorskip("bson", reason="PyMongo is not installed")

from mongo_sansio import bson as ours  # noqa: E402
from mongo_sansio.adapters.blocking import MongoClient  # noqa: E402
from mongo_sansio.adapters.sim import SimulatedReplicaSet  # noqa: E402
from mongo_sansio.bson.codec_options import CodecOptions  # noqa: E402
from mongo_sansio.errors import ConfigurationError  # noqa: E402

OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 5000}
DOCUMENT = {
    "_id": 1,
    "oid": ours.ObjectId(b"a" * 12),
    "long": ours.Int64(7),
    "big": 2**40,
    "dec": ours.Decimal128("1.10"),
    "ts": ours.Timestamp(5, 6),
    "bin": ours.Binary(b"\x01", 5),
    "sub": {"x": ours.MinKey()},
}


@pytest.fixture(scope="module")
def rs() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=1) as replica_set:
        yield replica_set


@pytest.fixture
def make(rs: SimulatedReplicaSet) -> Iterator[Any]:
    made: list[Any] = []

    def make_client(**options: Any) -> Any:
        client = MongoClient(rs.uri, **OPTIONS, **options)
        made.append(client)
        client.drop_database("modes")
        return client

    yield make_client
    for client in made:
        client.close()


def read_back(client: Any) -> dict[str, Any]:
    things = client.modes.things
    things.insert_one(DOCUMENT)
    found: dict[str, Any] = things.find_one({"_id": 1})
    return found


def package(value: Any) -> str:
    return type(value).__module__.partition(".")[0]


def test_bson_imported_means_pymongos_values(make: Any) -> None:
    client = make()
    assert client.pymongo_types and client.codec_options.pymongo_types
    found = read_back(client)
    assert {key: package(value) for key, value in found.items() if key != "_id"} == {
        "oid": "bson", "long": "bson", "big": "bson", "dec": "bson", "ts": "bson", "bin": "bson",
        "sub": "builtins",
    }
    assert type(found["sub"]["x"]) is bson.MinKey
    assert found == {**DOCUMENT, "bin": bson.Binary(b"\x01", 5), "sub": {"x": bson.MinKey()}}
    result = client.modes.things.insert_one({"x": 1})
    assert type(result.inserted_id) is bson.ObjectId
    upserted = client.modes.things.update_one({"_id": 9}, {"$set": {"y": 1}}, upsert=True)
    assert upserted.upserted_id == 9
    upserted = client.modes.things.update_one({"y": 5}, {"$set": {"y": 6}}, upsert=True)
    assert type(upserted.upserted_id) is bson.ObjectId
    ping = client.admin.command("ping")
    assert type(ping["operationTime"]) is bson.Timestamp
    with client.start_session() as session:
        client.modes.things.find_one({}, session=session)
        assert type(session.session_id["id"]) is bson.Binary
        assert type(session.operation_time) is bson.Timestamp


def test_false_keeps_ours_whatever_is_imported(make: Any) -> None:
    client = make(pymongo_types=False)
    assert not client.pymongo_types and not client.codec_options.pymongo_types
    found = read_back(client)
    assert type(found["oid"]) is ours.ObjectId and type(found["big"]) is ours.Int64
    assert type(found["bin"]) is ours.Binary and type(found["sub"]["x"]) is ours.MinKey
    assert type(client.modes.things.insert_one({}).inserted_id) is ours.ObjectId
    assert type(client.admin.command("ping")["operationTime"]) is ours.Timestamp
    assert type(client.modes.list_collections().next()) is dict
    assert type(client.modes.things.list_indexes().next()) is dict


def test_without_bson_imported_the_default_is_ours(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "bson")  # as in a program that never imported PyMongo
    client = make()
    monkeypatch.undo()
    assert not client.pymongo_types
    assert type(read_back(client)["oid"]) is ours.ObjectId


def test_true_needs_pymongo(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bson", None)  # "import bson" now raises ImportError
    with pytest.raises(ConfigurationError, match="PyMongo"):
        make(pymongo_types=True)
    with pytest.raises(TypeError, match="pymongo_types"):
        make(pymongo_types="yes")


def test_databases_and_collections_inherit_and_explicit_options_win(make: Any) -> None:
    client = make(pymongo_types=True)
    read_back(client)
    db = client.get_database("modes")
    assert type(db.things.find_one()["oid"]) is bson.ObjectId
    assert type(db.with_options().things.find_one()["oid"]) is bson.ObjectId
    assert type(db.things.with_options().find_one()["oid"]) is bson.ObjectId
    plain = db.get_collection("things", codec_options=CodecOptions())
    assert type(plain.find_one()["oid"]) is ours.ObjectId
    assert type(plain.insert_one({}).inserted_id) is ours.ObjectId
    mine = client.get_database("modes", codec_options=CodecOptions())
    assert type(mine.things.find_one()["oid"]) is ours.ObjectId
    pymongos = client.get_database("modes", codec_options=bson.codec_options.CodecOptions())
    assert type(pymongos.things.find_one()["oid"]) is bson.ObjectId
    assert type(db.things.find_raw_batches().next()) is bytes  # raw batches: bytes either way


def test_index_information_is_pymongos_shape(make: Any) -> None:
    client = make(pymongo_types=True)
    things = client.modes.things
    things.create_index([("x", 1)], partialFilterExpression={"x": {"$gt": 1}})
    information = things.index_information()
    entry = information["x_1"]
    assert type(entry) is dict and entry["key"] == [("x", 1)]
    assert type(entry["partialFilterExpression"]) is bson.son.SON
    assert all(type(index) is bson.son.SON for index in things.list_indexes())


def test_a_sessions_pymongo_timestamp_starts_a_change_stream(make: Any) -> None:
    client = make(pymongo_types=True)
    things = client.modes.things
    with client.start_session() as session:
        things.insert_one({"_id": 1}, session=session)
        start = session.operation_time
    assert type(start) is bson.Timestamp
    with things.watch(start_at_operation_time=start, max_await_time_ms=50) as stream:
        change = stream.next()  # (the insert itself: the start is inclusive)
    assert change["documentKey"] == {"_id": 1} and type(change["clusterTime"]) is bson.Timestamp


def test_a_sessions_pymongo_snapshot_time_starts_a_snapshot_session(make: Any) -> None:
    client = make(pymongo_types=True)
    read_back(client)
    with client.start_session(snapshot=True) as first:
        client.modes.things.find_one({}, session=first)
        at = first.snapshot_time
    assert type(at) is bson.Timestamp
    with client.start_session(snapshot=True, snapshot_time=at) as second:
        assert second.snapshot_time == at and type(second.snapshot_time) is bson.Timestamp
        assert client.modes.things.find_one({}, session=second)["_id"] == 1
