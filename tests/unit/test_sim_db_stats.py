"""dbStats and listDatabases on the simulated server, as mongod 7.0 answers them."""

from __future__ import annotations

from sim_wire_client import Client, make_cluster

from mongo_sansio.bson import Int64, encode


def test_db_stats_counts_collections_views_documents_and_indexes() -> None:
    client = Client(make_cluster())
    documents = [{"_id": i, "name": "x" * i} for i in range(4)]
    client.command({"insert": "a", "documents": documents})
    client.command({"insert": "b", "documents": [{"_id": 1}]})
    client.command({"createIndexes": "a", "indexes": [{"key": {"name": 1}, "name": "name_1"}]})
    client.command({"create": "v", "viewOn": "a", "pipeline": []})
    stats = client.command({"dbStats": 1})
    assert list(stats) == [
        "db", "collections", "views", "objects", "avgObjSize", "dataSize", "storageSize", "indexes",
        "indexSize", "totalSize", "scaleFactor", "fsUsedSize", "fsTotalSize", "ok",
    ] + [key for key in stats if key.startswith("$") or key == "operationTime"]
    data = sum(len(encode(d)) for d in documents) + len(encode({"_id": 1}))
    assert stats["db"] == "test"
    assert stats["collections"] == 3  # a, b and system.views
    assert isinstance(stats["collections"], Int64) and stats["views"] == 1
    assert stats["objects"] == 4 + 1 + 1  # and the view's definition in system.views
    assert stats["indexes"] == 2 + 1 + 1
    assert stats["dataSize"] >= data and stats["avgObjSize"] == stats["dataSize"] / stats["objects"]
    assert stats["totalSize"] == stats["storageSize"] + stats["indexSize"]
    assert stats["scaleFactor"] == 1 and 0 < stats["fsUsedSize"] < stats["fsTotalSize"] and stats["ok"] == 1.0


def test_db_stats_scale_divides_sizes_but_not_the_average() -> None:
    client = Client(make_cluster())
    client.command({"insert": "a", "documents": [{"_id": i, "pad": "p" * 3000} for i in range(3)]})
    plain = client.command({"dbStats": 1})
    scaled = client.command({"dbstats": 1, "scale": 1024.7})  # (the integer part; the alias)
    assert scaled["scaleFactor"] == 1024
    for field in ("dataSize", "storageSize", "indexSize", "totalSize", "fsTotalSize"):
        assert scaled[field] == plain[field] // 1024, field
    assert scaled["avgObjSize"] == plain["avgObjSize"]
    refused = client.command({"dbStats": 1, "scale": 0})
    assert (refused["code"], refused["codeName"]) == (51024, "Location51024")
    assert client.command({"dbStats": 1, "scale": "big"})["code"] == 14


def test_db_stats_of_a_database_that_does_not_exist_is_all_zero() -> None:
    stats = Client(make_cluster()).command({"dbStats": 1}, db="nothing")
    assert stats["collections"] == stats["objects"] == stats["dataSize"] == stats["fsTotalSize"] == 0
    assert stats["avgObjSize"] == 0 and stats["ok"] == 1.0


def test_list_databases_lists_the_system_databases_with_their_sizes() -> None:
    client = Client(make_cluster())
    client.command({"insert": "a", "documents": [{"_id": 1}]})
    reply = client.command({"listDatabases": 1}, db="admin")
    rows = reply["databases"]
    assert [row["name"] for row in rows] == ["admin", "config", "local", "test"]
    assert all(row["sizeOnDisk"] > 0 and row["empty"] is False for row in rows)
    assert reply["totalSize"] == sum(row["sizeOnDisk"] for row in rows)
    filtered = client.command({"listDatabases": 1, "filter": {"name": {"$regex": "^t"}}, "authorizedDatabases": True},
                              db="admin")
    assert [row["name"] for row in filtered["databases"]] == ["test"]
    assert client.command({"listDatabases": 1}, db="test")["code"] == 13
