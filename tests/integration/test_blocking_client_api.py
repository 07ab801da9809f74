"""PyMongo's everyday MongoClient / Database / Cursor API on our blocking client, checked against
PyMongo itself: both clients make the same calls against the same simulated replica set and must
give the same answers (documents, names, errors and their messages, cursor state).

Covers listing and dropping databases, listing/creating/dropping collections, ``command`` and
``cursor_command``, the settings chain client -> database -> collection (codec options from the
client's keywords reach decoded documents), the topology properties, the find cursor's verbs
(indexing, slices, clone, rewind, distinct, explain, min/max), raw batches, and that every
operation runs with the caller's session.
"""

from __future__ import annotations

import datetime
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import bson
import pymongo
import pymongo.errors
import pytest

from mongo_sansio.adapters.blocking import (
    CollectionInvalid,
    CommandCursor,
    Cursor,
    Database,
    MongoClient,
    ReadPreference,
    WriteConcern,
)
from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.bson.codec_options import CodecOptions, UuidRepresentation
from mongo_sansio.errors import InvalidOperation, ServerError

OPTIONS: dict[str, Any] = {
    "serverSelectionTimeoutMS": 5000,
    "connectTimeoutMS": 3000,
    "socketTimeoutMS": 10000,
}
#: fields of a reply that differ from one command to the next
_GOSSIP = ("$clusterTime", "operationTime")


def _reply(document: Any) -> dict[str, Any]:
    return {k: v for k, v in dict(document).items() if k not in _GOSSIP}


def _binaries_as_pairs(value: Any) -> Any:
    """``value`` with each BSON binary (ours or PyMongo's, which never compare equal to each
    other) as ``(subtype, bytes)``: e.g. a collection's UUID in listCollections' ``info``."""
    if isinstance(value, dict):
        return {key: _binaries_as_pairs(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_binaries_as_pairs(inner) for inner in value]
    if isinstance(value, bytes) and hasattr(value, "subtype"):
        return (value.subtype, bytes(value))
    return value


@pytest.fixture
def pair(rs: SimulatedReplicaSet, clients: list[Any]) -> Iterator[tuple[MongoClient, Any]]:
    """Our client and PyMongo's, on the same replica set."""
    ours = MongoClient(rs.uri, **OPTIONS)
    clients.append(ours)
    theirs: Any = pymongo.MongoClient(rs.uri, **OPTIONS)
    clients.append(theirs)
    yield ours, theirs


def _raises_alike(ours: Any, theirs: Any) -> tuple[BaseException, BaseException]:
    """Call both; both must raise the same kind of error: for a server error the same code,
    for any other the same message."""
    with pytest.raises(Exception) as mine:
        ours()
    with pytest.raises(Exception) as reference:
        theirs()
    if isinstance(reference.value, pymongo.errors.OperationFailure):
        assert isinstance(mine.value, ServerError)
        assert (mine.value.code, mine.value.errmsg) == (
            reference.value.code,
            (reference.value.details or {})["errmsg"],
        )
    else:
        assert str(mine.value) == str(reference.value)
        assert isinstance(mine.value, TypeError) == isinstance(reference.value, TypeError)
    return mine.value, reference.value


# --- databases and collections -----------------------------------------------------------------


def test_listing_databases_and_collections(pair: tuple[MongoClient, Any]) -> None:
    ours, theirs = pair
    ours.shop.apples.insert_many([{"_id": i} for i in range(3)])
    ours.shop.pears.insert_one({"_id": 1})
    ours.other.things.insert_one({"_id": 1})

    assert sorted(ours.list_database_names()) == sorted(theirs.list_database_names())
    databases = ours.list_databases()
    assert isinstance(databases, CommandCursor)
    assert (databases.cursor_id, databases.address) == (0, None)
    reference = theirs.list_databases()
    assert (reference.cursor_id, reference.address) == (0, None)
    assert sorted(databases, key=lambda d: d["name"]) == sorted(reference, key=lambda d: d["name"])
    assert list(ours.list_databases(nameOnly=True)) == list(theirs.list_databases(nameOnly=True))

    shop, their_shop = ours.shop, theirs.shop
    assert sorted(shop.list_collection_names()) == sorted(their_shop.list_collection_names())
    only = {"name": "pears"}
    assert shop.list_collection_names(filter=only) == their_shop.list_collection_names(filter=only)
    listed = shop.list_collections(filter={"name": "apples"})
    their_listed = their_shop.list_collections(filter={"name": "apples"})
    assert listed.address == their_listed.address == ours.primary
    assert listed.alive and their_listed.alive  # the batch is buffered
    assert _binaries_as_pairs(listed.to_list()) == _binaries_as_pairs(their_listed.to_list())
    assert not listed.alive and not their_listed.alive


def test_creating_and_dropping_collections(pair: tuple[MongoClient, Any]) -> None:
    ours, theirs = pair
    created = ours.shop.create_collection("fresh", write_concern=None)
    assert created.name == "fresh" and created.database == ours.shop
    mine, _ = _raises_alike(
        lambda: ours.shop.create_collection("fresh"),
        lambda: theirs.shop.create_collection("fresh"),
    )
    assert isinstance(mine, CollectionInvalid)
    # without the check the server decides: the same options again are a success (mongod
    # 7.0+), other options NamespaceExists (48), for both clients
    assert ours.shop.create_collection("fresh", check_exists=False).name == "fresh"
    assert theirs.shop.create_collection("fresh", check_exists=False).name == "fresh"
    with pytest.raises(ServerError) as server:
        ours.shop.create_collection("fresh", check_exists=False, capped=True, size=4096)
    with pytest.raises(pymongo.errors.OperationFailure) as reference:
        theirs.shop.create_collection("fresh", check_exists=False, capped=True, size=4096)
    assert server.value.code == reference.value.code == 48

    theirs.shop.create_collection("fresh_too")
    dropped = _reply(ours.shop.drop_collection(created))
    their_dropped = _reply(theirs.shop.drop_collection("fresh_too"))
    assert dropped == {**their_dropped, "ns": "shop.fresh"}
    assert _reply(ours.shop.drop_collection("missing")) == _reply(
        theirs.shop.drop_collection("missing")
    )
    _raises_alike(lambda: ours.shop.drop_collection(3), lambda: theirs.shop.drop_collection(3))
    assert "fresh" not in ours.shop.list_collection_names()

    ours.gone.c.insert_one({})
    ours.gone_too.c.insert_one({})
    ours.drop_database(ours.gone)
    ours.drop_database("gone_too")
    assert not {"gone", "gone_too"} & set(theirs.list_database_names())
    _raises_alike(lambda: ours.drop_database(1), lambda: theirs.drop_database(1))


def test_commands(pair: tuple[MongoClient, Any]) -> None:
    ours, theirs = pair
    ours.shop.apples.insert_many([{"_id": i, "ripe": i % 2 == 0} for i in range(5)])
    db, their_db = ours.shop, theirs.shop

    count = db.command("count", "apples", query={"ripe": True})
    assert _reply(count) == _reply(their_db.command("count", "apples", query={"ripe": True}))
    assert _reply(db.command({"ping": 1})) == _reply(their_db.command({"ping": 1}))
    unchecked = db.command("frobnicate", check=False)
    assert _reply(unchecked) == _reply(their_db.command("frobnicate", check=False))
    assert unchecked["code"] == 59
    allowed = db.command("frobnicate", allowable_errors=[59])
    assert _reply(allowed) == _reply(their_db.command("frobnicate", allowable_errors=[59]))
    mine, _ = _raises_alike(
        lambda: db.command("frobnicate"), lambda: their_db.command("frobnicate")
    )
    assert isinstance(mine, ServerError) and mine.code == 59

    cursor = db.cursor_command("find", "apples", batchSize=2, filter={"ripe": True})
    reference = their_db.cursor_command("find", "apples", batchSize=2, filter={"ripe": True})
    assert (
        cursor.to_list()
        == reference.to_list()
        == [
            {"_id": 0, "ripe": True},
            {"_id": 2, "ripe": True},
            {"_id": 4, "ripe": True},
        ]
    )
    mine, _ = _raises_alike(
        lambda: db.cursor_command("ping"), lambda: their_db.cursor_command("ping")
    )
    assert isinstance(mine, InvalidOperation)

    info = ours.server_info()
    assert info["version"] == theirs.server_info()["version"]


def test_command_decodes_with_its_codec_options_only(pair: tuple[MongoClient, Any]) -> None:
    ours, theirs = pair
    ours.shop.days.insert_one({"_id": 1, "at": datetime.datetime(2024, 5, 6, 7, 8, 9)})
    aware = ours.shop.with_options(codec_options=CodecOptions(tz_aware=True))
    their_aware = theirs.shop.with_options(codec_options=bson.CodecOptions(tz_aware=True))
    # the database's codec options do not apply to command(): PyMongo decodes with the defaults
    naive = aware.command("find", "days")["cursor"]["firstBatch"][0]["at"]
    assert naive == their_aware.command("find", "days")["cursor"]["firstBatch"][0]["at"]
    assert naive.tzinfo is None
    utc = aware.command("find", "days", codec_options=CodecOptions(tz_aware=True))
    their_utc = their_aware.command("find", "days", codec_options=bson.CodecOptions(tz_aware=True))
    assert utc["cursor"]["firstBatch"] == their_utc["cursor"]["firstBatch"]
    assert utc["cursor"]["firstBatch"][0]["at"].tzinfo is not None


# --- the settings chain ------------------------------------------------------------------------


def test_client_codec_keywords_reach_decoded_documents(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    keywords: dict[str, Any] = {
        "tz_aware": True,
        "uuidRepresentation": "standard",
        "document_class": OrderedDict,
    }
    ours = MongoClient(rs.uri, **OPTIONS, **keywords)
    theirs: Any = pymongo.MongoClient(rs.uri, **OPTIONS, **keywords)
    clients += [ours, theirs]
    tag = uuid.UUID(int=7)
    document = {"_id": 1, "at": datetime.datetime(2024, 1, 2, 3, 4, 5), "tag": tag, "sub": {"a": 1}}
    ours.shop.things.insert_one(dict(document))

    assert ours.codec_options.tz_aware and ours.shop.codec_options == ours.codec_options
    assert ours.shop.things.codec_options.uuid_representation is UuidRepresentation.STANDARD
    for mine, reference in [
        (ours.shop.things.find_one(), theirs.shop.things.find_one()),
        (next(ours.shop.things.find()), next(theirs.shop.things.find())),
        (ours.shop.things.find()[0], theirs.shop.things.find()[0]),
    ]:
        assert mine == reference
        assert type(mine) is type(reference) is OrderedDict
        assert type(mine["sub"]) is OrderedDict
        assert mine["tag"] == tag and mine["at"].tzinfo is not None

    # a collection's own codec options win over the client's
    plain = ours.shop.get_collection("things", codec_options=CodecOptions())
    their_plain = theirs.shop.get_collection("things", codec_options=bson.CodecOptions())
    found, their_found = plain.find_one(), their_plain.find_one()
    assert type(found) is type(their_found) is dict
    assert found["at"] == their_found["at"] and found["at"].tzinfo is None
    # without a UUID representation a UUID stays binary (subtype 4) for both
    assert (bytes(found["tag"]), found["tag"].subtype) == (tag.bytes, 4)
    assert (bytes(their_found["tag"]), their_found["tag"].subtype) == (tag.bytes, 4)


@pytest.mark.parametrize(
    "keywords",
    [
        {"tzinfo": datetime.UTC},  # without tz_aware
        {"uuidRepresentation": "sideways"},
        {"document_class": int},
        {"unicode_decode_error_handler": "shrug"},
    ],
)
def test_bad_codec_keywords_raise_as_pymongo(keywords: dict[str, Any]) -> None:
    with pytest.raises((TypeError, ValueError)) as mine:
        MongoClient("mongodb://127.0.0.1:9", **keywords)
    with pytest.raises((TypeError, ValueError)) as reference:
        pymongo.MongoClient("mongodb://127.0.0.1:9", connect=False, **keywords)
    assert isinstance(mine.value, TypeError) == isinstance(reference.value, TypeError)


def test_databases_inherit_and_override_settings(pair: tuple[MongoClient, Any]) -> None:
    ours, _ = pair
    db = ours.get_database("shop", write_concern=WriteConcern(w=1))
    assert db.write_concern == WriteConcern(w=1) and db.read_preference == ours.read_preference
    assert db.things.write_concern == WriteConcern(w=1)
    other = db.with_options(read_preference=ReadPreference.SECONDARY)
    assert other.read_preference == ReadPreference.SECONDARY != db.read_preference
    assert other.write_concern == WriteConcern(w=1) and other == db and hash(other) == hash(db)
    assert db.get_collection("c", read_preference=ReadPreference.SECONDARY).read_preference == (
        ReadPreference.SECONDARY
    )


def test_database_and_client_behave_as_pymongo(pair: tuple[MongoClient, Any]) -> None:
    ours, theirs = pair
    db, their_db = ours.shop, theirs.shop
    assert isinstance(db, Database) and db.name == "shop" and db.client is ours
    assert db.apples.name == "apples" and db["apples"].full_name == "shop.apples"
    _raises_alike(lambda: bool(db), lambda: bool(their_db))
    _raises_alike(lambda: iter(db), lambda: iter(their_db))
    _raises_alike(lambda: next(db), lambda: next(their_db))
    _raises_alike(lambda: db._private, lambda: their_db._private)
    _raises_alike(lambda: db(), lambda: their_db())
    _raises_alike(lambda: ours._private, lambda: theirs._private)
    _raises_alike(lambda: iter(ours), lambda: iter(theirs))
    _raises_alike(lambda: ours.get_database(), lambda: theirs.get_database())
    assert ours.get_default_database("fallback").name == "fallback"


def test_topology_properties(pair: tuple[MongoClient, Any]) -> None:
    ours, theirs = pair
    assert ours.address == theirs.address  # waits for discovery, as PyMongo's does
    # the secondaries are found by the monitors, a moment after the primary
    deadline = time.monotonic() + 5
    while len(ours.nodes) < 3 or len(theirs.nodes) < 3:
        assert time.monotonic() < deadline, (ours.nodes, theirs.nodes)
        time.sleep(0.02)
    assert ours.primary == theirs.primary is not None
    assert ours.secondaries == theirs.secondaries and len(ours.secondaries) == 2
    assert ours.arbiters == theirs.arbiters == set()
    assert ours.nodes == theirs.nodes and len(ours.nodes) == 3
    assert ours.is_primary is theirs.is_primary is True
    assert ours.is_mongos is theirs.is_mongos is False


# --- cursors -----------------------------------------------------------------------------------


def _fill(client: MongoClient, count: int = 10) -> None:
    client.shop.fruit.insert_many([{"_id": i, "size": i % 4} for i in range(count)])


def test_cursor_indexing_and_slices(pair: tuple[MongoClient, Any]) -> None:
    ours, theirs = pair
    _fill(ours)
    mine, reference = ours.shop.fruit, theirs.shop.fruit
    assert mine.find().sort("_id", -1)[2] == reference.find().sort("_id", -1)[2]
    assert mine.find().skip(3)[1] == reference.find().skip(3)[1] == {"_id": 4, "size": 0}
    assert list(mine.find()[2:5]) == list(reference.find()[2:5])
    assert list(mine.find()[7:]) == list(reference.find()[7:])
    assert list(mine.find()[4:4]) == list(reference.find()[4:4]) == []
    for index in (100, -1, slice(1, 5, 2), slice(5, 2), "a"):
        _raises_alike(lambda i=index: mine.find()[i], lambda i=index: reference.find()[i])
    used, their_used = mine.find(), reference.find()
    next(used), next(their_used)
    _raises_alike(lambda: used[1], lambda: their_used[1])
    _raises_alike(lambda: used.limit(1), lambda: their_used.limit(1))


def test_cursor_state_clone_rewind_and_distinct(pair: tuple[MongoClient, Any]) -> None:
    ours, theirs = pair
    _fill(ours)
    cursor = ours.shop.fruit.find({"size": {"$gt": 0}}, batch_size=3).sort("_id")
    reference = theirs.shop.fruit.find({"size": {"$gt": 0}}, batch_size=3).sort("_id")
    assert isinstance(cursor, Cursor) and cursor.collection.name == "fruit"
    assert (cursor.cursor_id, cursor.address, cursor.retrieved, cursor.alive) == (
        reference.cursor_id,
        reference.address,
        reference.retrieved,
        reference.alive,
    )
    assert next(cursor) == next(reference)
    assert cursor.retrieved == reference.retrieved == 3
    assert cursor.address == reference.address == ours.primary
    assert bool(cursor.cursor_id) is bool(reference.cursor_id) is True
    assert cursor.session is None and reference.session is None

    twin, their_twin = cursor.clone(), reference.clone()
    assert twin.retrieved == 0 and twin.to_list() == their_twin.to_list()
    rest = cursor.to_list()
    assert rest == reference.to_list() and len(rest) == 6
    assert not cursor.alive and cursor.cursor_id == 0 and cursor.retrieved == 7
    assert cursor.rewind() is cursor
    assert cursor.to_list(2) == reference.rewind().to_list(2)
    cursor.close()
    assert not cursor.alive and list(cursor) == []

    assert sorted(ours.shop.fruit.find({"_id": {"$lt": 6}}).distinct("size")) == sorted(
        theirs.shop.fruit.find({"_id": {"$lt": 6}}).distinct("size")
    )


def test_cursor_min_max_with_a_hint(pair: tuple[MongoClient, Any]) -> None:
    ours, theirs = pair
    _fill(ours)
    ours.shop.fruit.create_index("size")

    def ranged(collection: Any) -> list[Any]:
        cursor = collection.find().min([("size", 1)]).max([("size", 3)]).hint([("size", 1)])
        return sorted(doc["_id"] for doc in cursor)

    found = ranged(ours.shop.fruit)
    assert found == ranged(theirs.shop.fruit)
    if found == list(range(10)):
        pytest.skip("the simulator ignores find's min/max (PyMongo gets every document too)")
    assert found == [1, 2, 5, 6, 9]
    _raises_alike(lambda: ours.shop.fruit.find().min(3), lambda: theirs.shop.fruit.find().min(3))


def test_cursor_explain(pair: tuple[MongoClient, Any]) -> None:
    ours, theirs = pair
    _fill(ours)
    try:
        reference = theirs.shop.fruit.find({"size": 1}).limit(2).explain()
    except pymongo.errors.OperationFailure as error:
        if error.code == 59:
            pytest.skip("the simulator has no explain command (PyMongo's call fails there too)")
        raise
    plan = ours.shop.fruit.find({"size": 1}).limit(2).explain()
    assert set(plan) - set(_GOSSIP) == set(reference) - set(_GOSSIP)


def test_raw_batches_are_pymongos_bytes(pair: tuple[MongoClient, Any]) -> None:
    ours, theirs = pair
    _fill(ours)
    mine = list(ours.shop.fruit.find_raw_batches(batch_size=4, sort=[("_id", 1)]))
    reference = list(theirs.shop.fruit.find_raw_batches(batch_size=4, sort=[("_id", 1)]))
    assert mine == reference and len(mine) == 3
    assert bson.decode_all(b"".join(mine)) == list(theirs.shop.fruit.find().sort("_id"))
    pipeline = [{"$match": {"size": 2}}, {"$sort": {"_id": 1}}]
    # (PyMongo asks for an empty first batch here: compare the documents, not the batching)
    assert b"".join(ours.shop.fruit.aggregate_raw_batches(pipeline, batchSize=1)) == b"".join(
        theirs.shop.fruit.aggregate_raw_batches(pipeline, batchSize=1)
    )
    assert list(ours.shop.empty.find_raw_batches()) == list(theirs.shop.empty.find_raw_batches())
    _raises_alike(
        lambda: ours.shop.fruit.find_raw_batches()[0],
        lambda: theirs.shop.fruit.find_raw_batches()[0],
    )


def test_every_operation_runs_with_the_callers_session(pair: tuple[MongoClient, Any]) -> None:
    ours, _ = pair
    _fill(ours)
    seen: list[Any] = []
    run = ours.engine.run
    session = object()

    def recording(flow: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.pop("session", "missing"))
        return run(flow, **kwargs)

    ours.engine.run = recording
    try:
        cursor = ours.shop.fruit.find(batch_size=2, session=session)
        next(cursor), next(cursor), next(cursor)  # find, then a getMore
        cursor.close()
        ours.shop.list_collection_names(session=session)
        ours.shop.list_collections(session=session).to_list()
        ours.shop.command("ping", session=session)
        ours.shop.cursor_command("find", "fruit", batchSize=1, session=session).to_list()
        ours.shop.aggregate([{"$match": {}}], session=session, batchSize=1).to_list()
        ours.list_database_names(session=session)
        ours.list_databases(session=session)
        ours.server_info(session=session)
        ours.shop.create_collection("made", session=session)
        ours.shop.drop_collection("made", session=session)
        ours.drop_database("nothing", session=session)
    finally:
        del ours.engine.run
    assert len(seen) >= 16 and set(map(id, seen)) == {id(session)}


def test_the_uuid_representation_may_come_from_the_connection_string(
    rs: SimulatedReplicaSet, clients: list[Any]
) -> None:
    separator = "&" if "?" in rs.uri else "?"
    uri = f"{rs.uri}{separator}uuidRepresentation=standard"
    ours = MongoClient(uri, **OPTIONS)
    theirs: Any = pymongo.MongoClient(uri, **OPTIONS)
    overridden = MongoClient(uri, uuidRepresentation="unspecified", **OPTIONS)
    clients += [ours, theirs, overridden]
    tag = uuid.UUID(int=9)
    ours.shop.tags.insert_one({"_id": 1, "tag": tag})
    assert ours.shop.tags.find_one() == theirs.shop.tags.find_one() == {"_id": 1, "tag": tag}
    assert overridden.codec_options.uuid_representation is UuidRepresentation.UNSPECIFIED
