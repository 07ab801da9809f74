"""Reads as RawDocuments (``document_class=RawDocument``) on our blocking client, checked
against PyMongo's RawBSONDocument reads on the same simulated replica set: find and aggregate
cursors (first batches and getMores), find_one, change streams (events, and resuming from a
raw event's token), the other codec options under RawDocument, and a cursor of a raw
collection that hands out dicts (list_indexes)."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import bson
import pymongo
import pytest
from bson.codec_options import CodecOptions as PyMongoCodecOptions
from bson.raw_bson import RawBSONDocument

from mongo_sansio.adapters.blocking import MongoClient
from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.bson import RawDocument
from mongo_sansio.bson.codec_options import CodecOptions

OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 5000, "socketTimeoutMS": 10000}
WHEN = datetime.datetime(2024, 5, 6, 7, 8, 9)


@pytest.fixture
def pair(rs: SimulatedReplicaSet, clients: list[Any]) -> Iterator[tuple[Any, Any]]:
    """A collection of 7 documents, RawDocument-valued, through our client and PyMongo's."""
    ours = MongoClient(rs.uri, **OPTIONS)
    clients.append(ours)
    theirs: Any = pymongo.MongoClient(rs.uri, **OPTIONS)
    clients.append(theirs)
    theirs.shop.items.insert_many(
        [{"_id": i, "n": i * i, "tags": ["a", {"b": i}], "when": WHEN} for i in range(7)]
    )
    yield (
        ours.shop.get_collection("items", codec_options=CodecOptions(document_class=RawDocument)),
        theirs.shop.get_collection(
            "items", codec_options=PyMongoCodecOptions(document_class=RawBSONDocument)
        ),
    )


def _raws(documents: Any) -> list[bytes]:
    return [bytes(document.raw) for document in documents]


def test_find_and_aggregate_give_raw_documents_across_batches(pair: tuple[Any, Any]) -> None:
    mine, theirs = pair
    found = list(mine.find({}, sort=[("_id", 1)], batch_size=3))
    assert all(type(document) is RawDocument for document in found)
    assert _raws(found) == _raws(theirs.find({}, sort=[("_id", 1)], batch_size=3))
    assert [document["n"] for document in found] == [i * i for i in range(7)]
    assert found[2]["tags"][1]["b"] == 2
    pipeline = [{"$match": {"n": {"$gt": 3}}}, {"$sort": {"_id": -1}}]
    aggregated = list(mine.aggregate(pipeline, batchSize=2))
    assert all(type(document) is RawDocument for document in aggregated)
    assert _raws(aggregated) == _raws(theirs.aggregate(pipeline, batchSize=2))
    one = mine.find_one({"_id": 4})
    assert type(one) is RawDocument and bytes(one.raw) == bytes(theirs.find_one({"_id": 4}).raw)


def test_other_codec_options_apply_to_raw_documents(pair: tuple[Any, Any]) -> None:
    mine, theirs = pair
    aware = mine.with_options(codec_options=CodecOptions(document_class=RawDocument, tz_aware=True))
    reference = theirs.with_options(
        codec_options=PyMongoCodecOptions(document_class=RawBSONDocument, tz_aware=True)
    )
    document = next(aware.find({"_id": 1}))
    assert document["when"] == reference.find_one({"_id": 1})["when"]
    assert document["when"].tzinfo is not None


def test_a_raw_collections_dict_cursor_gives_dicts(pair: tuple[Any, Any]) -> None:
    mine, theirs = pair
    indexes = list(mine.list_indexes())
    # plain documents, not raw ones: PyMongo's SON (list_indexes decodes with CodecOptions(SON))
    # when the client's values are PyMongo's (as here: bson is imported), dicts otherwise
    plain = bson.son.SON if mine.database.client.pymongo_types else dict
    assert all(type(index) is plain for index in indexes)
    assert indexes == [dict(index) for index in theirs.list_indexes()]


def test_change_streams_give_raw_events_and_resume_from_them(pair: tuple[Any, Any]) -> None:
    mine, theirs = pair
    with mine.watch(batch_size=2) as stream:
        theirs.insert_many([{"_id": 100 + i} for i in range(3)])
        events = [stream.next() for _ in range(3)]
    assert all(type(event) is RawDocument for event in events)
    assert [event["documentKey"]["_id"] for event in events] == [100, 101, 102]
    assert [event["operationType"] for event in events] == ["insert"] * 3
    with mine.watch(resume_after=events[0]["_id"]) as resumed:
        assert resumed.next()["documentKey"]["_id"] == 101
    with theirs.watch(resume_after=bson.decode(bytes(events[0]["_id"].raw))) as reference:
        assert reference.next()["documentKey"]["_id"] == 101
