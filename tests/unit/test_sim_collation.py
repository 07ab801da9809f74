"""Collation on the simulated server: parsing as mongod 7.0, the comparison, and where it
applies (queries, sorts, distinct, groups, writes, defaults of collections and indexes)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sim_wire_client import Client, make_cluster

from mongo_sansio.bson import Binary, Int64
from mongo_sansio.testing.engine.collation import Collation, parse_collation
from mongo_sansio.testing.engine.errors import CommandError

CI = {"locale": "en_US", "strength": 2}  # case-insensitive, accent-sensitive
FULL_EN_US = {
    "locale": "en_US", "caseLevel": False, "caseFirst": "off", "strength": 2, "numericOrdering": False,
    "alternate": "non-ignorable", "maxVariable": "punct", "normalization": False, "backwards": False,
    "version": "57.1",
}


def _collation(**spec: Any) -> Collation:
    parsed = parse_collation({"locale": "en", **spec})
    assert parsed is not None
    return parsed


def _sorted(collation: Collation, words: list[str]) -> list[str]:
    return sorted(words, key=collation.key)


# --- parsing --------------------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "code", "message"), [
    ("en", 14, "BSON field 'find.collation' is the wrong type 'string', expected type 'object'"),
    ({}, 40414, "BSON field 'collation.locale' is missing but a required field"),
    ({"locale": "en", "blah": 1}, 40415, "BSON field 'collation.blah' is an unknown field."),
    ({"blah": 1}, 40415, "BSON field 'collation.blah' is an unknown field."),  # in document order
    ({"locale": 1}, 14, "BSON field 'collation.locale' is the wrong type 'int', expected type 'string'"),
    ({"locale": "en", "caseLevel": 1}, 14, "BSON field 'collation.caseLevel' is the wrong type 'int', expected type 'bool'"),
    ({"locale": "en", "caseFirst": "x"}, 2, "Enumeration value 'x' for field 'collation.caseFirst' is not a valid value."),
    ({"locale": "en", "strength": 99}, 51024, "BSON field 'collation.strength' value must be <= 5, actual value '99'"),
    ({"locale": "en", "strength": 9.9}, 51024, "BSON field 'collation.strength' value must be <= 5, actual value '9'"),
    ({"locale": "en", "strength": 0}, 2, "Enumeration value '0' for field 'collation.strength' is not a valid value."),
    ({"locale": ""}, 2, "Field 'locale' cannot be the empty string in: { locale: \"\" }"),
    ({"locale": "xx"}, 2, "Field 'locale' is invalid in: { locale: \"xx\" }"),
    ({"locale": "en_us"}, 2, "Field 'locale' is invalid in: { locale: \"en_us\" }. Did you mean 'en_US'?"),
    ({"locale": "en_GB"}, 2, "Field 'locale' is invalid in: { locale: \"en_GB\" }. Did you mean 'en'?"),
    ({"locale": "en", "version": "1"}, 161, "Requested collation version 1 but the only available collator "
     "version was 57.1. Requested collation spec: { locale: \"en\", version: \"1\" }"),
    ({"locale": "en", "strength": 1, "backwards": True}, 2,
     "'backwards' is invalid with 'strength' of 1 in: { locale: \"en\", strength: 1, backwards: true }"),
    ({"locale": "en", "strength": 2, "caseFirst": "upper"}, 2, "'caseFirst' is invalid unless 'caseLevel' is "
     "on or 'strength' is greater than 2 in: { locale: \"en\", strength: 2, caseFirst: \"upper\" }"),
])
def test_bad_collations_are_refused_as_mongod_refuses_them(spec: Any, code: int, message: str) -> None:
    with pytest.raises(CommandError) as caught:
        parse_collation(spec, "find.collation")
    assert (caught.value.code, caught.value.errmsg) == (code, message)


def test_parsed_collations() -> None:
    assert parse_collation({"locale": "simple"}) is None
    assert parse_collation({"locale": "de@collation=phonebook"}) is not None
    with pytest.raises(CommandError):
        parse_collation({"locale": "de@collation=nonesuch"})
    fr_ca = parse_collation({"locale": "fr_CA"})
    assert fr_ca is not None and fr_ca.document()["backwards"] is True  # the locale's default
    assert parse_collation({"locale": "en_US", "strength": 2.0, "version": "57.1"}) == parse_collation(CI)
    case_level = _collation(strength=1, caseLevel=True, caseFirst="upper")  # allowed with caseLevel
    assert case_level.case_first == "upper"


# --- the comparison -------------------------------------------------------------------------


def test_strengths() -> None:
    primary, secondary, tertiary = _collation(strength=1), _collation(strength=2), _collation()
    assert primary.compare("café", "CAFE") == 0
    assert secondary.compare("ping", "PING") == 0 and secondary.compare("café", "cafe") == 1
    assert tertiary.compare("a", "A") == -1 and tertiary.compare("A", "b") == -1
    assert _sorted(tertiary, ["b", "B", "A", "a", "ä"]) == ["a", "A", "ä", "b", "B"]
    assert tertiary.compare("ß", "ss") != 0 and primary.compare("ß", "SS") == 0
    identical = _collation(strength=5)
    assert identical.compare("e\u0301", "\u00e9") == 0  # canonically equivalent, even at 5


def test_options() -> None:
    assert _sorted(_collation(caseFirst="upper"), ["a", "b", "A", "B"]) == ["A", "a", "B", "b"]
    assert _collation(strength=1, caseLevel=True).compare("a", "A") == -1
    assert _collation(strength=1, caseLevel=True).compare("a", "á") == 0
    numeric = _collation(numericOrdering=True)
    assert _sorted(numeric, ["a10", "a9", "a1"]) == ["a1", "a9", "a10"]
    assert _sorted(_collation(), ["a10", "a9", "a1"]) == ["a1", "a10", "a9"]
    assert numeric.compare("007", "7") == 0
    shifted = _collation(alternate="shifted")
    assert shifted.compare("di Silva", "diSilva") == 0 and shifted.compare("U.S.A.", "USA") == 0
    assert _collation(alternate="shifted", strength=4).compare("di Silva", "diSilva") != 0
    assert _collation(alternate="shifted", maxVariable="space").compare("U.S.A.", "USA") != 0
    words = ["cote", "côte", "coté", "côté"]
    assert _sorted(_collation(), words) == ["cote", "coté", "côte", "côté"]
    assert _sorted(_collation(backwards=True), words) == ["cote", "côte", "coté", "côté"]
    # spaces, punctuation, symbols, currency, digits, then letters
    assert _sorted(_collation(), ["a", "1", "$", "+", "-", " "]) == [" ", "-", "+", "$", "1", "a"]


# --- on the server --------------------------------------------------------------------------


def _client(documents: list[dict[str, Any]], **create: Any) -> Client:
    client = Client(make_cluster())
    assert client.command({"create": "c", **create})["ok"] == 1.0
    if documents:
        assert client.command({"insert": "c", "documents": documents})["n"] == len(documents)
    return client


def _find(client: Client, **command: Any) -> list[dict[str, Any]]:
    reply = client.command({"find": "c", **command})
    assert reply["ok"] == 1.0, reply
    batch: list[dict[str, Any]] = reply["cursor"]["firstBatch"]
    return batch


def _ids(documents: list[dict[str, Any]]) -> list[Any]:
    return [d["_id"] for d in documents]


WORDS = [{"_id": 1, "x": "ping"}, {"_id": 2, "x": "PING"}, {"_id": 3, "x": "pong"}, {"_id": 4, "x": ["Pïng", "PONG"]}]


def test_queries_under_a_collation() -> None:
    client = _client(WORDS)
    assert _ids(_find(client, filter={"x": "PING"})) == [2]
    assert _ids(_find(client, filter={"x": "PING"}, collation=CI)) == [1, 2]
    assert _ids(_find(client, filter={"x": {"$ne": "ping"}}, collation=CI)) == [3, 4]
    assert _ids(_find(client, filter={"x": {"$in": ["PONG", "nope"]}}, collation=CI)) == [3, 4]
    assert _ids(_find(client, filter={"x": {"$nin": ["PONG"]}}, collation=CI)) == [1, 2]
    assert _ids(_find(client, filter={"x": {"$gte": "PO"}}, collation=CI)) == [3, 4]
    assert _ids(_find(client, filter={"x": "ping"}, collation={"locale": "en", "strength": 1})) == [1, 2, 4]
    assert _ids(_find(client, filter={"$expr": {"$eq": ["$x", "PONG"]}}, collation=CI)) == [3]
    assert _ids(_find(client, filter={"x": {"$regex": "^P"}}, collation=CI)) == [2, 4]  # not collated
    assert _ids(_find(client, filter={"x": "PING"}, collation={"locale": "simple"})) == [2]
    sorted_ = _find(client, filter={"_id": {"$lt": 4}}, sort={"x": 1, "_id": 1}, collation={"locale": "en"})
    assert _ids(sorted_) == [1, 2, 3]
    assert _ids(_find(client, filter={"_id": {"$lt": 4}}, sort={"x": 1})) == [2, 1, 3]  # binary: "P" < "p"
    bad = client.command({"find": "c", "collation": {"locale": "en", "strength": 7}})
    assert bad["code"] == 51024


def test_count_distinct_and_aggregate() -> None:
    client = _client(WORDS)
    assert client.command({"count": "c", "query": {"x": "PING"}, "collation": CI})["n"] == 2
    assert client.command({"distinct": "c", "key": "x", "collation": CI})["values"] == ["ping", "pong", "Pïng"]
    assert len(client.command({"distinct": "c", "key": "x"})["values"]) == 5
    pipeline = [
        {"$unwind": "$x"}, {"$group": {"_id": "$x", "n": {"$sum": 1}, "set": {"$addToSet": "$x"}}},
        {"$sort": {"_id": 1}},
    ]
    reply = client.command({"aggregate": "c", "pipeline": pipeline, "cursor": {}, "collation": CI})
    groups = reply["cursor"]["firstBatch"]
    assert [(g["_id"], g["n"], g["set"]) for g in groups] == [("ping", 2, ["ping"]), ("Pïng", 1, ["Pïng"]), ("pong", 2, ["pong"])]
    matched = client.command({"aggregate": "c", "pipeline": [{"$match": {"x": "PONG"}}], "cursor": {}, "collation": CI})
    assert _ids(matched["cursor"]["firstBatch"]) == [3, 4]


def test_writes_under_a_collation() -> None:
    client = _client(WORDS)
    updated = client.command({"update": "c", "updates": [
        {"q": {"x": "PING"}, "u": {"$set": {"hit": True}}, "multi": True, "collation": CI},
        {"q": {"x": "PING"}, "u": {"$set": {"hit": 1}}, "multi": True},
    ]})
    assert (updated["n"], updated["nModified"]) == (3, 3)
    pulled = client.command({"update": "c", "updates": [
        {"q": {"_id": 4}, "u": {"$pull": {"x": "pong"}}, "collation": CI},
        {"q": {"_id": 4}, "u": {"$addToSet": {"x": "PÏNG"}}, "collation": CI},
        {"q": {"_id": 4}, "u": {"$addToSet": {"x": "PING"}}, "collation": CI},
    ]})
    assert pulled["nModified"] == 2
    assert _find(client, filter={"_id": 4})[0]["x"] == ["Pïng", "PING"]  # the accent counts at strength 2
    found = client.command({"findAndModify": "c", "query": {"x": "PONG"}, "remove": True, "collation": CI})
    assert found["value"]["_id"] == 3
    deleted = client.command({"delete": "c", "deletes": [{"q": {"x": "PING"}, "limit": 0, "collation": CI}]})
    assert deleted["n"] == 3  # 1, 2, and 4 (which now holds "PING")
    # a statement's bad collation is its write error
    bad = client.command({"delete": "c", "deletes": [{"q": {}, "limit": 0, "collation": {"locale": "xx"}}]})
    assert bad["n"] == 0 and bad["writeErrors"][0]["code"] == 2


def test_a_collection_default_and_overrides() -> None:
    client = _client([{"_id": "foo", "x": "foo"}], collation=CI)
    (row,) = client.command({"listCollections": 1, "filter": {"name": "c"}})["cursor"]["firstBatch"]
    assert row["options"] == {"collation": FULL_EN_US}
    assert row["idIndex"] == {"v": 2, "key": {"_id": 1}, "name": "_id_", "collation": FULL_EN_US}
    assert _ids(_find(client, filter={"_id": "FOO"})) == ["foo"]  # the default applies to _id too
    assert _find(client, filter={"_id": "FOO"}, collation={"locale": "simple"}) == []
    duplicate = client.command({"insert": "c", "documents": [{"_id": "FOO"}]})
    assert duplicate["writeErrors"][0]["code"] == 11000  # the _id index has the collation
    assert client.command({"count": "c", "query": {"x": "FOO"}})["n"] == 1
    assert client.command({"update": "c", "updates": [{"q": {"x": "FOO"}, "u": {"$set": {"y": 1}}}]})["nModified"] == 1
    aggregated = client.command({"aggregate": "c", "pipeline": [{"$match": {"x": "FOO"}}], "cursor": {}})
    assert len(aggregated["cursor"]["firstBatch"]) == 1
    simple = Client(make_cluster())
    assert simple.command({"create": "s", "collation": {"locale": "simple"}})["ok"] == 1.0
    (row,) = simple.command({"listCollections": 1})["cursor"]["firstBatch"]
    assert row["options"] == {}
    refused = simple.command({"create": "t", "collation": {"locale": "en", "x": 1}})
    assert (refused["code"], refused["errmsg"]) == (40415, "BSON field 'create.collation.x' is an unknown field.")
    assert simple.command({"listCollections": 1, "filter": {"name": "t"}})["cursor"]["firstBatch"] == []


def test_index_collations() -> None:
    client = _client([], collation={"locale": "fr_CA"})
    indexes = [
        {"key": {"a": 1}, "name": "inherits"}, {"key": {"b": 1}, "name": "own", "collation": CI},
        {"key": {"c": 1}, "name": "simple", "collation": {"locale": "simple"}},
        {"key": {"d": 1}, "name": "v1", "v": 1},
    ]
    assert client.command({"createIndexes": "c", "indexes": indexes})["ok"] == 1.0
    listed = {i["name"]: i.get("collation") for i in client.command({"listIndexes": "c"})["cursor"]["firstBatch"]}
    assert listed["inherits"] is not None and listed["inherits"]["locale"] == "fr_CA"
    assert listed["inherits"]["backwards"] is True
    assert listed["own"] == FULL_EN_US
    assert listed["simple"] is None and listed["v1"] is None
    text = client.command({"createIndexes": "c", "indexes": [{"key": {"t": "text"}, "name": "t"}]})
    assert text["code"] == 67  # a text index refuses the inherited collation
    unique = Client(make_cluster())
    unique.command({"createIndexes": "u", "indexes": [{"key": {"k": 1}, "name": "k", "unique": True, "collation": CI}]})
    assert "writeErrors" not in unique.command({"insert": "u", "documents": [{"k": "a"}]})
    assert unique.command({"insert": "u", "documents": [{"k": "A"}]})["writeErrors"][0]["code"] == 11000
    assert "writeErrors" not in unique.command({"insert": "u", "documents": [{"k": "á"}]})


def test_a_default_made_in_a_transaction_and_explain() -> None:
    client = Client(make_cluster())
    session = {"lsid": {"id": Binary(uuid.UUID(int=7).bytes, 4)}, "txnNumber": Int64(1), "autocommit": False}
    made = client.command({"create": "t", "collation": {"locale": "en", "strength": 1}, **session, "startTransaction": True})
    assert made["ok"] == 1.0
    client.command({"insert": "t", "documents": [{"_id": "A"}], **session})
    assert client.command({"commitTransaction": 1, **session}, db="admin")["ok"] == 1.0
    (row,) = client.command({"listCollections": 1})["cursor"]["firstBatch"]
    assert row["options"]["collation"]["strength"] == 1  # the collection the commit made has it
    assert client.command({"find": "t", "filter": {"_id": "á"}})["cursor"]["firstBatch"] == [{"_id": "A"}]

    def returned(command: dict[str, Any]) -> int:
        reply = client.command({"explain": command, "verbosity": "executionStats"})
        count: int = reply["executionStats"]["nReturned"]
        return count

    assert returned({"find": "t", "filter": {"_id": "a"}}) == 1
    assert returned({"find": "t", "filter": {"_id": "a"}, "collation": {"locale": "simple"}}) == 0
