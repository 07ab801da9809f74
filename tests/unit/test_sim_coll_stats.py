"""The simulated server's $collStats stage: count and storageStats, and mongod's refusals."""

from __future__ import annotations

from typing import Any

from sim_wire_client import Client, make_cluster

from mongo_sansio.bson import encode


def _stats(client: Client, spec: Any, *rest: Any, collection: str = "c") -> dict[str, Any]:
    return client.command({"aggregate": collection, "pipeline": [{"$collStats": spec}, *rest], "cursor": {}})


def test_storage_stats_and_count() -> None:
    client = Client(make_cluster())
    documents = [{"_id": i, "x": "y" * i} for i in range(3)]
    client.command({"insert": "c", "documents": documents})
    client.command({"createIndexes": "c", "indexes": [{"key": {"x": 1}, "name": "x_1"}]})
    (stats,) = _stats(client, {"storageStats": {}, "count": {}})["cursor"]["firstBatch"]
    assert (stats["ns"], stats["count"]) == ("test.c", 3)
    assert "host" in stats and "localTime" in stats
    storage = stats["storageStats"]
    size = sum(len(encode(d)) for d in documents)
    assert (storage["size"], storage["count"], storage["avgObjSize"]) == (size, 3, size // 3)
    assert (storage["capped"], storage["nindexes"], storage["scaleFactor"]) == (False, 2, 1)
    assert storage["storageSize"] == 4096 and storage["indexSizes"] == {"_id_": 4096, "x_1": 4096}
    assert storage["totalIndexSize"] == 8192 and storage["totalSize"] == 12288
    scaled = _stats(client, {"storageStats": {"scale": 1024}})["cursor"]["firstBatch"][0]["storageStats"]
    assert (scaled["storageSize"], scaled["totalIndexSize"], scaled["scaleFactor"]) == (4, 8, 1024)
    assert "count" not in _stats(client, {"storageStats": {}})["cursor"]["firstBatch"][0]


def test_capped_collection_and_later_stages() -> None:
    client = Client(make_cluster())
    client.command({"create": "capped", "capped": True, "size": 4096, "max": 10})
    shaped = _stats(client, {"storageStats": {}}, {"$project": {"_id": 0, "capped": "$storageStats.capped",
                                                               "maxSize": "$storageStats.maxSize",
                                                               "max": "$storageStats.max"}},
                    collection="capped")
    assert shaped["cursor"]["firstBatch"] == [{"capped": True, "maxSize": 4096, "max": 10}]
    empty = _stats(client, {"storageStats": {}}, collection="capped")["cursor"]["firstBatch"][0]["storageStats"]
    assert empty["count"] == 0 and "avgObjSize" not in empty


def test_refusals() -> None:
    client = Client(make_cluster())
    client.command({"insert": "c", "documents": [{}]})
    missing = _stats(client, {"count": {}}, collection="nope")
    assert (missing["code"], missing["codeName"]) == (26, "NamespaceNotFound")
    assert missing["errmsg"] == (
        "Unable to retrieve count in $collStats stage :: caused by :: Collection [test.nope] not found."
    )
    assert _stats(client, 1)["code"] == 5447000
    assert _stats(client, {"bogus": {}})["code"] == 40415
    assert _stats(client, {"storageStats": 1})["code"] == 14
    assert _stats(client, {"storageStats": {"scale": 0}})["code"] == 51024
    later = client.command({"aggregate": "c", "pipeline": [{"$match": {}}, {"$collStats": {}}], "cursor": {}})
    assert later["code"] == 40602
    assert _stats(client, {"latencyStats": {}})["ok"] == 0.0  # not tracked: refused, not invented
