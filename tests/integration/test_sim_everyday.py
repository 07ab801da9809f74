"""PyMongo, unchanged, against the simulated replica set for everyday application code: $text
search with text scores, $lookup with let/pipeline, $bucket, $sortByCount, $dateToString,
dbStats and listDatabases, and the update refusals mongod makes.  Every expectation is
mongod 7.0's answer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pymongo = pytest.importorskip("pymongo")
from pymongo import MongoClient  # noqa: E402
from pymongo.errors import OperationFailure, WriteError  # noqa: E402

from mongo_sansio.adapters.sim import SimulatedReplicaSet  # noqa: E402

OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 5000, "connectTimeoutMS": 3000, "socketTimeoutMS": 10000}


@pytest.fixture(scope="module")
def replica_set() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=1) as started:
        yield started


@pytest.fixture
def client(replica_set: SimulatedReplicaSet) -> Iterator[MongoClient[Any]]:
    opened: MongoClient[Any] = MongoClient(replica_set.uri, **OPTIONS)
    yield opened
    for name in opened.list_database_names():
        if name not in ("admin", "config", "local"):
            opened.drop_database(name)
    opened.close()


def test_an_update_operator_writing_a_dollar_prefixed_field_is_refused(client: MongoClient[Any]) -> None:
    things = client.db.things
    things.insert_one({"_id": 1})
    with pytest.raises(WriteError) as refused:
        things.update_one({"_id": 1}, {"$set": {"$x": 1}})
    assert refused.value.code == 52
    assert "The dollar ($) prefixed field '$x' in '$x' is not allowed" in str(refused.value)
    things.update_one({"_id": 2}, {"$set": {"$x": 1}}, upsert=True)  # an upsert's insert may
    assert things.find_one({"_id": 2}) == {"_id": 2, "$x": 1}


def test_db_stats_and_list_databases(client: MongoClient[Any]) -> None:
    client.shop.fruit.insert_many([{"_id": i, "name": f"fruit {i}"} for i in range(3)])
    stats = client.shop.command("dbstats")
    assert (stats["db"], stats["collections"], stats["views"], stats["objects"], stats["indexes"]) == ("shop", 1, 0, 3, 1)
    assert stats["dataSize"] > 0 and stats["totalSize"] == stats["storageSize"] + stats["indexSize"]
    kilobytes = client.shop.command("dbStats", scale=1024)
    assert kilobytes["scaleFactor"] == 1024 and kilobytes["storageSize"] == stats["storageSize"] // 1024
    assert client.list_database_names() == ["admin", "config", "local", "shop"]
    assert [d["name"] for d in client.list_databases(filter={"name": "shop"})] == ["shop"]
    with pytest.raises(OperationFailure) as refused:
        client.shop.command("dbStats", scale=0)
    assert refused.value.code == 51024


def test_lookup_with_let_and_a_pipeline(client: MongoClient[Any]) -> None:
    db = client.shop
    db.orders.insert_many([{"_id": 1, "item": "almonds", "qty": 2}, {"_id": 2, "item": "pecans", "qty": 90}])
    db.stock.insert_many([{"_id": 10, "item": "almonds", "instock": 120}, {"_id": 11, "item": "pecans", "instock": 80}])
    joined = list(db.orders.aggregate([
        {"$lookup": {"from": "stock", "let": {"item": "$item", "qty": "$qty"},
                     "pipeline": [{"$match": {"$expr": {"$and": [{"$eq": ["$item", "$$item"]},
                                                                 {"$gte": ["$instock", "$$qty"]}]}}},
                                  {"$project": {"_id": 1}}],
                     "as": "enough"}},
        {"$sort": {"_id": 1}},
    ]))
    assert [o["enough"] for o in joined] == [[{"_id": 10}], []]
    concise = list(db.orders.aggregate([
        {"$lookup": {"from": "stock", "localField": "item", "foreignField": "item",
                     "pipeline": [{"$project": {"_id": 0, "instock": 1}}], "as": "stock"}},
        {"$sort": {"_id": 1}},
    ]))
    assert [o["stock"] for o in concise] == [[{"instock": 120}], [{"instock": 80}]]
    with pytest.raises(OperationFailure) as refused:
        list(db.orders.aggregate([{"$lookup": {"from": "stock", "localField": "item", "as": "x"}}]))
    assert refused.value.code == 9


def test_bucket_sort_by_count_and_date_to_string(client: MongoClient[Any]) -> None:
    import datetime

    sales = client.shop.sales
    sales.insert_many([
        {"_id": 1, "price": 5, "kind": "tea", "at": datetime.datetime(2024, 3, 1, 23, 30)},
        {"_id": 2, "price": 25, "kind": "coffee", "at": datetime.datetime(2024, 3, 2, 1, 0)},
        {"_id": 3, "price": 40, "kind": "coffee", "at": datetime.datetime(2024, 3, 2, 9, 15)},
        {"_id": 4, "price": 500, "kind": "beans", "at": datetime.datetime(2024, 3, 3, 12, 0)},
    ])
    buckets = list(sales.aggregate([{"$bucket": {
        "groupBy": "$price", "boundaries": [0, 10, 100], "default": "big",
        "output": {"n": {"$sum": 1}, "kinds": {"$addToSet": "$kind"}}}}]))
    assert buckets == [{"_id": 0, "n": 1, "kinds": ["tea"]}, {"_id": 10, "n": 2, "kinds": ["coffee"]},
                       {"_id": "big", "n": 1, "kinds": ["beans"]}]
    with pytest.raises(OperationFailure) as refused:
        list(sales.aggregate([{"$bucket": {"groupBy": "$price", "boundaries": [0, 100]}}]))
    assert refused.value.code == 40066
    assert list(sales.aggregate([{"$sortByCount": "$kind"}, {"$limit": 1}])) == [{"_id": "coffee", "count": 2}]
    per_day = list(sales.aggregate([
        {"$group": {"_id": {"$dateToString": {"date": "$at", "format": "%Y-%m-%d", "timezone": "America/New_York"}},
                    "total": {"$sum": "$price"}}},
        {"$sort": {"_id": 1}},
    ]))
    assert per_day == [{"_id": "2024-03-01", "total": 30}, {"_id": "2024-03-02", "total": 40},
                       {"_id": "2024-03-03", "total": 500}]
    shown = sales.find_one({"_id": 3}, {"_id": 0, "when": {"$dateToString": {"date": "$at", "format": "%d/%m/%Y %H:%M"}}})
    assert shown == {"when": "02/03/2024 09:15"}


def test_text_search_with_scores(client: MongoClient[Any]) -> None:
    from pymongo import TEXT

    articles = client.shop.articles
    articles.insert_many([
        {"_id": 1, "title": "coffee", "body": "a cup"},
        {"_id": 2, "title": "Coffee Shopping", "body": "beans to buy"},
        {"_id": 3, "title": "Baking a cake", "body": "with coffee and cream"},
        {"_id": 4, "title": "tea time", "body": "no coffee here"},
    ])
    with pytest.raises(OperationFailure) as missing:
        articles.find_one({"$text": {"$search": "coffee"}})
    assert (missing.value.code, missing.value.details["errmsg"]) == (27, "text index required for $text query")
    name = articles.create_index([("title", TEXT), ("body", TEXT)], weights={"title": 5}, default_language="english")
    assert name == "title_text_body_text"
    listed = articles.index_information()[name]
    assert listed["key"] == [("_fts", "text"), ("_ftsx", 1)] and listed["weights"] == {"body": 1, "title": 5}
    found = list(articles.find({"$text": {"$search": "coffee -tea"}}, {"score": {"$meta": "textScore"}})
                 .sort([("score", {"$meta": "textScore"})]))
    assert [d["_id"] for d in found] == [1, 2, 3]  # title matches weigh 5, a one-word title most
    assert found[0]["score"] > found[1]["score"] > found[2]["score"] > 0 and "body" in found[0]
    assert [d["_id"] for d in articles.find({"$text": {"$search": '"coffee and cream"'}})] == [3]
    pipeline: list[dict[str, Any]] = [
        {"$match": {"$text": {"$search": "cake bake"}}},
        {"$project": {"title": 1, "score": {"$meta": "textScore"}}},
    ]
    assert [d["title"] for d in articles.aggregate(pipeline)] == ["Baking a cake"]
    with pytest.raises(OperationFailure) as late:
        list(articles.aggregate([{"$sort": {"_id": 1}}, {"$match": {"$text": {"$search": "cake"}}}]))
    assert late.value.code == 17313
    assert articles.count_documents({"$text": {"$search": "buy"}}) == 1
