"""Text indexes and $text search with text scores, as mongod's version 3 text index answers."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from sim_wire_client import Client, make_cluster

from mongo_sansio.testing.engine import Collection
from mongo_sansio.testing.engine.aggregate import run_pipeline
from mongo_sansio.testing.engine.errors import CommandError

ARTICLES = [
    {"_id": 1, "subject": "coffee", "author": "xyz", "views": 50},
    {"_id": 2, "subject": "Coffee Shopping", "author": "efg", "views": 5},
    {"_id": 3, "subject": "Baking a cake", "author": "abc", "views": 90},
    {"_id": 4, "subject": "baking", "author": "xyz", "views": 100},
    {"_id": 5, "subject": "Café Con Leche", "author": "abc", "views": 200},
    {"_id": 6, "subject": "Сырники", "author": "jkl", "views": 80},
    {"_id": 7, "subject": "coffee and cream", "author": "efg", "views": 10},
    {"_id": 8, "subject": "Cafe con Leche", "author": "xyz", "views": 10},
]


def articles(index: dict[str, Any] | None = None) -> Collection:
    ids = itertools.count(100)
    collection = Collection("db", "articles", id_factory=lambda: next(ids))
    collection.create_indexes([index or {"key": {"subject": "text"}, "name": "subject_text"}])
    collection.insert_many(ARTICLES)
    return collection


def ids(collection: Collection, search: Any, **options: Any) -> list[Any]:
    return [d["_id"] for d in collection.find({"$text": {"$search": search, **options}})]


def test_the_index_is_listed_as_mongod_lists_it() -> None:
    collection = articles({"key": {"a": 1, "subject": "text", "body": "text"}, "name": "a_1_subject_text_body_text",
                           "weights": {"subject": 10}, "default_language": "spanish"})
    assert collection.list_indexes()[1] == {
        "v": 2, "key": {"a": 1, "_fts": "text", "_ftsx": 1}, "name": "a_1_subject_text_body_text",
        "weights": {"body": 1, "subject": 10}, "default_language": "spanish", "language_override": "language",
        "textIndexVersion": 3,
    }


@pytest.mark.parametrize(("search", "expected"), [
    ("coffee", [1, 2, 7]),                      # case-insensitive words
    ("bake coffee cake", [1, 2, 3, 4, 7]),      # an OR of the terms, stemmed (baking ~ bake)
    ('"coffee shop"', [2]),                     # a phrase must be there
    ("coffee -shop", [1, 7]),                   # a negated term (Shopping stems to shop)
    ("leche", [5, 8]),
    ("cafe", [5, 8]),                           # diacritic-insensitive
    ("-coffee", []),                            # only negations match nothing
    ("the and a", []),                          # stop words only
    ('"coffee" -"and cream"', [1, 2]),          # a negated phrase
    ("сырники", [6]),
])
def test_search_semantics(search: str, expected: list[int]) -> None:
    assert sorted(ids(articles(), search)) == expected


def test_case_and_diacritic_sensitive_searches() -> None:
    collection = articles()
    assert ids(collection, "Coffee", **{"$caseSensitive": True}) == [2]
    assert ids(collection, "CAFÉ", **{"$diacriticSensitive": True}) == [5]


def test_the_score_orders_like_mongods_and_meta_projects_it() -> None:
    collection = articles()
    found = collection.find({"$text": {"$search": "coffee"}}, {"score": {"$meta": "textScore"}},
                            sort={"score": {"$meta": "textScore"}})
    assert [d["_id"] for d in found] == [1, 2, 7]  # the one-word subject first
    assert found[0] == {**ARTICLES[0], "score": pytest.approx(1.0)}  # meta alone keeps every field
    assert found[1]["score"] == pytest.approx(0.75)
    more_terms = collection.find({"$text": {"$search": "coffee cream"}}, {"_id": 1, "s": {"$meta": "textScore"}},
                                 sort={"s": {"$meta": "textScore"}})
    assert more_terms[0]["_id"] == 7  # two matched terms beat one
    assert all("\x00textScore" not in d for d in collection.find({"$text": {"$search": "coffee"}}))


def test_weights_rank_fields() -> None:
    ids_ = itertools.count()
    collection = Collection("db", "c", id_factory=lambda: next(ids_))
    collection.create_indexes([{"key": {"title": "text", "body": "text"}, "name": "t", "weights": {"title": 10}}])
    collection.insert_many([{"_id": "body", "title": "x", "body": "tea"}, {"_id": "title", "title": "tea", "body": "x"}])
    found = collection.find({"$text": {"$search": "tea"}}, sort={"s": {"$meta": "textScore"}})
    assert [d["_id"] for d in found] == ["title", "body"]


def test_errors() -> None:
    plain = Collection("db", "plain", id_factory=lambda: 1)
    with pytest.raises(CommandError) as missing:
        plain.find({"$text": {"$search": "x"}})
    assert (missing.value.code, str(missing.value)) == (27, "text index required for $text query")
    collection = articles()
    for bad in ({"$text": {"$search": 1}}, {"$text": {}}, {"$text": {"$search": "x", "$language": "klingon"}},
                {"$nor": [{"$text": {"$search": "x"}}]}):
        with pytest.raises(CommandError) as refused:
            collection.find(bad)
        assert refused.value.code == 2, bad
    with pytest.raises(CommandError) as second:
        collection.create_indexes([{"key": {"author": "text"}, "name": "author_text"}])
    assert second.value.code == 85
    with pytest.raises(CommandError) as no_score:
        collection.find({}, {"s": {"$meta": "textScore"}})
    assert no_score.value.code == 40218


def test_text_in_aggregate_match_first_stage_only() -> None:
    collection = articles()
    text_index = collection.text_index()
    out = run_pipeline(list(collection), [
        {"$match": {"$text": {"$search": "coffee cream"}}},
        {"$project": {"subject": 1, "score": {"$meta": "textScore"}}},
        {"$sort": {"score": {"$meta": "textScore"}}},
        {"$addFields": {"again": {"$meta": "textScore"}}},
    ], text_index=text_index)
    assert [d["_id"] for d in out] == [7, 1, 2]
    assert all(d["score"] == d["again"] and set(d) == {"_id", "subject", "score", "again"} for d in out)
    with pytest.raises(CommandError) as late:
        run_pipeline([], [{"$limit": 1}, {"$match": {"$text": {"$search": "x"}}}], text_index=text_index)
    assert late.value.code == 17313
    with pytest.raises(CommandError) as grouped:
        run_pipeline(list(collection), [{"$match": {"$text": {"$search": "coffee"}}}, {"$group": {"_id": None}},
                                        {"$project": {"s": {"$meta": "textScore"}}}], text_index=text_index)
    assert grouped.value.code == 40218


def test_the_server_answers_text_queries() -> None:
    client = Client(make_cluster())
    client.command({"insert": "articles", "documents": ARTICLES})
    assert client.command({"find": "articles", "filter": {"$text": {"$search": "coffee"}}})["code"] == 27
    client.command({"createIndexes": "articles", "indexes": [{"key": {"subject": "text"}, "name": "subject_text"}]})
    found = client.command({"find": "articles", "filter": {"$text": {"$search": "leche"}},
                            "projection": {"score": {"$meta": "textScore"}, "_id": 1}, "sort": {"_id": 1}})
    assert [d["_id"] for d in found["cursor"]["firstBatch"]] == [5, 8]
    agg = client.command({"aggregate": "articles", "cursor": {}, "pipeline": [
        {"$match": {"$text": {"$search": "baking"}}}, {"$count": "n"}]})
    assert agg["cursor"]["firstBatch"] == [{"n": 2}]
    assert client.command({"count": "articles", "query": {"$text": {"$search": "coffee"}}})["n"] == 3
