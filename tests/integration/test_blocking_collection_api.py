"""The blocking Collection's PyMongo API against the simulated replica set, judged by PyMongo.

Each scenario runs the same calls with our client and with PyMongo, on the same namespace of
the same simulator (dropped and re-seeded in between), and compares what they return and what
the collection holds afterwards: bulk_write (results, errors with the caller's indexes),
find_one_and_*, index management, rename/options/distinct/estimated_document_count, and codec
options applied to what the collection decodes.  The Python-level protocol of a Collection
(equality, hashing, bool(), calling it, iterating it, sub-collections, with_options) is
compared with PyMongo's too.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pymongo = pytest.importorskip("pymongo")
import bson  # noqa: E402
from pymongo import MongoClient as PyMongoClient  # noqa: E402
from pymongo import operations as pm_ops  # noqa: E402
from pymongo.errors import BulkWriteError as PyMongoBulkWriteError  # noqa: E402

from mongo_sansio.adapters.blocking import (  # noqa: E402
    DeleteMany,
    DeleteOne,
    IndexModel,
    InsertOne,
    MongoClient,
    ReadConcern,
    ReadPreference,
    ReplaceOne,
    ReturnDocument,
    UpdateMany,
    UpdateOne,
    WriteConcern,
)
from mongo_sansio.adapters.sim import SimulatedReplicaSet  # noqa: E402
from mongo_sansio.bson.codec_options import CodecOptions, UuidRepresentation  # noqa: E402
from mongo_sansio.errors import BulkWriteError  # noqa: E402

OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 5000}
SEED = [{"_id": i, "x": i, "tag": "even" if i % 2 == 0 else "odd"} for i in range(6)]

#: our model class -> PyMongo's, by name
PYMONGO_MODELS = {
    cls.__name__: getattr(pm_ops, cls.__name__)
    for cls in (InsertOne, UpdateOne, UpdateMany, ReplaceOne, DeleteOne, DeleteMany)
}


class Pair:
    """Our collection and PyMongo's on the same namespace, each run from the same seed."""

    def __init__(self, ours: MongoClient, theirs: PyMongoClient[Any]) -> None:
        # typed loosely: the tests call both with the same (sometimes wrong) arguments
        self.ours: Any = ours.h3.things
        self.theirs: Any = theirs.h3.things

    def run(self, scenario: Callable[[Any, str], Any]) -> tuple[Any, Any]:
        """``scenario(collection, "ours" | "theirs")`` for each; returns both outcomes, each
        with the collection's final content."""
        outcomes = []
        for collection, who in ((self.ours, "ours"), (self.theirs, "theirs")):
            self.theirs.drop()
            self.theirs.insert_many([dict(d) for d in SEED])
            result = scenario(collection, who)
            outcomes.append((result, list(self.theirs.find({}, sort=[("_id", 1)]))))
        return outcomes[0], outcomes[1]


@pytest.fixture(scope="module")
def served() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=3) as replica_set:
        yield replica_set


@pytest.fixture(scope="module")
def pair(served: SimulatedReplicaSet) -> Iterator[Pair]:
    ours = MongoClient(served.uri, **OPTIONS)
    theirs: PyMongoClient[Any] = PyMongoClient(served.uri, **OPTIONS)
    try:
        yield Pair(ours, theirs)
    finally:
        ours.close()
        theirs.close()


def models(who: str, requests: list[Any]) -> list[Any]:
    """Our models as given, or PyMongo's built with the same arguments."""
    if who == "ours":
        return requests
    converted = []
    for request in requests:
        cls = PYMONGO_MODELS[type(request).__name__]
        fields = {k: v for k, v in _fields(request).items() if v is not None}
        converted.append(cls(**fields))
    return converted


def _fields(request: Any) -> dict[str, Any]:
    import attrs

    return {
        a.name: getattr(request, a.name)
        for a in attrs.fields(type(request))
        if a.name != "namespace"
    }


# --- bulk_write ----------------------------------------------------------------------------------

MIXED = [
    InsertOne({"_id": 10, "x": 10}),
    InsertOne({"_id": 11}),
    UpdateOne({"_id": 1}, {"$set": {"y": 1}}),
    UpdateMany({"tag": "even"}, {"$inc": {"x": 100}}),
    UpdateOne({"_id": 99}, {"$set": {"y": 2}}, upsert=True),
    ReplaceOne({"_id": 3}, {"replaced": True}),
    ReplaceOne({"_id": 98}, {"new": True}, upsert=True),
    DeleteOne({"_id": 5}),
    InsertOne({"_id": 12}),
    DeleteMany({"tag": "odd"}),
]


@pytest.mark.parametrize("ordered", [True, False])
def test_bulk_write_results_match_pymongo(pair: Pair, ordered: bool) -> None:
    def scenario(collection: Any, who: str) -> Any:
        result = collection.bulk_write(models(who, MIXED), ordered=ordered, session=None)
        return (
            result.acknowledged,
            result.inserted_count,
            result.matched_count,
            result.modified_count,
            result.deleted_count,
            result.upserted_count,
            result.upserted_ids,
            result.bulk_api_result,
        )

    ours, theirs = pair.run(scenario)
    assert ours == theirs


@pytest.mark.parametrize("ordered", [True, False])
def test_bulk_write_errors_match_pymongo(pair: Pair, ordered: bool) -> None:
    requests = [
        UpdateOne({"_id": 0}, {"$set": {"z": 1}}),
        InsertOne({"_id": 1}),  # duplicate
        DeleteOne({"_id": 2}),
        InsertOne({"_id": 50}),
        InsertOne({"_id": 4}),  # duplicate
        UpdateOne({"_id": 50}, {"$set": {"z": 2}}),
    ]

    def scenario(collection: Any, who: str) -> Any:
        kind: Any = BulkWriteError if who == "ours" else PyMongoBulkWriteError
        with pytest.raises(kind) as caught:
            collection.bulk_write(models(who, requests), ordered=ordered)
        return caught.value.details

    (ours, ours_content), (theirs, theirs_content) = pair.run(scenario)
    assert ours_content == theirs_content
    assert ours == theirs


def test_bulk_write_argument_errors_match_pymongo(pair: Pair) -> None:
    for bad in (5, (), {"a": 1}, [5]):
        with pytest.raises(TypeError):
            pair.theirs.bulk_write(bad)
        with pytest.raises(TypeError):
            pair.ours.bulk_write(bad)
    with pytest.raises(pymongo.errors.InvalidOperation):
        pair.theirs.bulk_write([])
    with pytest.raises(Exception, match="No operations to execute"):
        pair.ours.bulk_write([])


def test_unacknowledged_bulk_write(pair: Pair) -> None:
    def scenario(collection: Any, who: str) -> Any:
        concern = WriteConcern(w=0) if who == "ours" else pymongo.WriteConcern(w=0)
        unacknowledged = collection.with_options(write_concern=concern)
        result = unacknowledged.bulk_write(models(who, [InsertOne({"_id": 20})]), ordered=False)
        collection.find_one({"_id": 20})  # the w:0 write is applied before the next command
        return result.acknowledged

    ours, theirs = pair.run(scenario)
    assert ours == theirs


# --- find_one_and_* ------------------------------------------------------------------------------

FIND_AND_MODIFY: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("find_one_and_update", ({"tag": "odd"}, {"$inc": {"x": 1}}), {"sort": [("x", -1)]}),
    (
        "find_one_and_update",
        ({"_id": 2}, {"$set": {"y": 1}}),
        {"return_document": ReturnDocument.AFTER, "projection": {"_id": 0, "y": 1}},
    ),
    (
        "find_one_and_update",
        ({"_id": 77}, [{"$set": {"y": "$$v"}}]),
        {"upsert": True, "return_document": ReturnDocument.AFTER, "let": {"v": 5}},
    ),
    ("find_one_and_update", ({"_id": 78}, {"$set": {"y": 1}}), {"upsert": True}),
    ("find_one_and_update", ({"nothing": 1}, {"$set": {"y": 1}}), {}),
    ("find_one_and_replace", ({"_id": 1}, {"r": 1}), {"projection": ["r"]}),
    (
        "find_one_and_replace",
        ({"tag": "even"}, {"r": 2}),
        {"sort": {"_id": -1}, "return_document": ReturnDocument.AFTER, "comment": "why"},
    ),
    ("find_one_and_delete", ({"tag": "even"},), {"sort": [("_id", -1)]}),
    ("find_one_and_delete", ({"_id": 3},), {"projection": {"x": 1}, "hint": "_id_"}),
    ("find_one_and_delete", ({"_id": 1000},), {}),
]


@pytest.mark.parametrize(("method", "args", "kwargs"), FIND_AND_MODIFY)
def test_find_one_and_modify_matches_pymongo(
    pair: Pair, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    def scenario(collection: Any, _who: str) -> Any:
        try:
            return getattr(collection, method)(*args, **kwargs)
        except Exception as error:  # noqa: BLE001 - the server's refusal is compared too
            return ("raised", getattr(error, "code", None))

    ours, theirs = pair.run(scenario)
    assert ours == theirs


# --- indexes -------------------------------------------------------------------------------------


def test_index_management_matches_pymongo(pair: Pair) -> None:
    def scenario(collection: Any, who: str) -> Any:
        model = IndexModel if who == "ours" else pymongo.IndexModel
        outcomes: list[Any] = [
            collection.create_index("x"),
            collection.create_index([("tag", 1), ("x", -1)], unique=True, session=None),
            collection.create_index({"y": 1}, name="why", sparse=True, expireAfterSeconds=60),
            collection.create_indexes([model([("z", 1)]), model("w", hidden=True)]),
            collection.index_information(),
            [dict(index) for index in collection.list_indexes()],
        ]
        collection.drop_index([("tag", 1), ("x", -1)])
        collection.drop_index("why")
        outcomes.append(sorted(collection.index_information()))
        collection.drop_indexes()
        outcomes.append(collection.index_information())
        collection.database.get_collection("absent").drop_index("x_1")  # not an error
        outcomes.append(list(collection.database.get_collection("absent").list_indexes()))
        return outcomes

    ours, theirs = pair.run(scenario)
    assert ours == theirs


def test_index_argument_errors_match_pymongo(pair: Pair) -> None:
    for collection in (pair.ours, pair.theirs):
        with pytest.raises(TypeError):
            collection.drop_index({"x": 1})
        with pytest.raises(TypeError):
            collection.create_indexes([{"key": {"x": 1}}])
        with pytest.raises(TypeError):
            collection.create_index([("x", 1.5)])
        with pytest.raises(ValueError):
            collection.create_index([])


# --- other collection operations -----------------------------------------------------------------


def test_counts_distinct_options_rename_match_pymongo(pair: Pair) -> None:
    def scenario(collection: Any, who: str) -> Any:
        database = collection.database
        capped = database.get_collection("capped")
        capped.drop()
        database.create_collection("capped", capped=True, size=4096)
        outcomes = [
            collection.estimated_document_count(),
            collection.estimated_document_count(maxTimeMS=1000),
            collection.count_documents({"tag": "odd"}, session=None, maxTimeMS=1000, skip=1),
            sorted(collection.distinct("tag", session=None)),
            collection.distinct("x", {"tag": "even"}, maxTimeMS=1000),
            capped.options(),
            database.get_collection("never").options(),
            collection.find_one({"_id": 2}, {"_id": 0, "tag": 1}, session=None),
            collection.find_one(4),
            [d["_id"] for d in collection.aggregate([{"$match": {"tag": "odd"}}], batchSize=1)],
        ]
        reply = capped.rename("capped2", dropTarget=True, session=None)
        outcomes.append(reply["ok"])
        outcomes.append("capped2" in database.list_collection_names())
        database.drop_collection("capped2")
        return outcomes

    ours, theirs = pair.run(scenario)
    assert ours == theirs


def test_rename_checks_the_new_name_as_pymongo(pair: Pair) -> None:
    for collection in (pair.ours, pair.theirs):
        with pytest.raises(TypeError):
            collection.rename(5)
        for bad in ("", "a..b", ".a", "a.", "a$b"):
            with pytest.raises(Exception) as caught:
                collection.rename(bad)
            assert type(caught.value).__name__ == "InvalidName"


def test_codec_options_apply_to_what_the_collection_decodes(pair: Pair) -> None:
    value = uuid.UUID("12345678-1234-5678-1234-567812345678")
    when = datetime.datetime(2024, 2, 29, 12, 30, 15, 123000)
    document = {"_id": "codec", "u": bson.Binary(value.bytes, 4), "when": when, "n": {"w": when}}

    def scenario(collection: Any, who: str) -> Any:
        if who == "ours":
            options: Any = CodecOptions(
                uuid_representation=UuidRepresentation.STANDARD, tz_aware=True
            )
        else:
            options = bson.CodecOptions(uuid_representation=4, tz_aware=True)
        collection.insert_one(dict(document))
        coll = collection.with_options(codec_options=options)
        return [
            coll.find_one({"_id": "codec"}),
            list(coll.find({"_id": "codec"})),
            list(coll.aggregate([{"$match": {"_id": "codec"}}])),
            coll.distinct("u"),
            coll.find_one_and_update({"_id": "codec"}, {"$set": {"k": 1}}, {"_id": 0, "u": 1}),
            coll.codec_options.tz_aware,
        ]

    (ours, _), (theirs, _) = pair.run(scenario)
    assert ours == theirs
    assert ours[0]["u"] == value and ours[0]["when"].tzinfo is not None


# --- the Python protocol of a Collection ---------------------------------------------------------


def test_collection_protocol_matches_pymongo(pair: Pair) -> None:
    for collection in (pair.ours, pair.theirs):
        database = collection.database
        assert collection == database.get_collection("things")
        assert not collection != database.things
        assert hash(collection) == hash(database["things"])
        assert collection != database.other
        assert collection.name == "things" and collection.full_name == "h3.things"
        assert collection.sub.full_name == "h3.things.sub"
        assert collection["sub"]["leaf"].name == "things.sub.leaf"
        with pytest.raises(NotImplementedError, match="collection is not None"):
            bool(collection)
        with pytest.raises(TypeError, match="'things' method on a 'Database' object"):
            collection()
        with pytest.raises(TypeError, match="'insert_on' method on a 'Collection' object"):
            collection.insert_on({})
        with pytest.raises(TypeError, match="not iterable"):
            iter(collection)
        with pytest.raises(TypeError, match="not iterable"):
            next(collection)
        with pytest.raises(AttributeError, match="database\\['things._private'\\]"):
            collection._private  # noqa: B018


def test_with_options_keeps_what_it_is_not_given(pair: Pair) -> None:
    collection = pair.ours
    concern = WriteConcern(w="majority", wtimeout_ms=100)
    changed = collection.with_options(
        read_preference=ReadPreference.SECONDARY, write_concern=concern
    )
    assert changed.read_preference == ReadPreference.SECONDARY
    assert changed.write_concern == concern and changed.write_concern.document == {
        "w": "majority",
        "wtimeout": 100,
    }
    assert changed.write_concern.acknowledged
    assert changed.codec_options == collection.codec_options
    assert changed.read_concern == collection.read_concern
    again = changed.with_options(read_concern=ReadConcern(level="majority"))
    assert again.read_preference == ReadPreference.SECONDARY and again.write_concern == concern
    assert again.read_concern.document == {"level": "majority"}
    assert changed.sub.read_preference == ReadPreference.SECONDARY  # sub-collections inherit
    assert changed == collection  # settings are not part of a collection's identity
