"""Clustered collections on the simulated server: create, listCollections, listIndexes."""

from __future__ import annotations

from typing import Any

from sim_wire_client import Client, make_cluster

CLUSTERED = {"key": {"_id": 1}, "unique": True, "name": "by id"}


def _listed(client: Client, name: str) -> dict[str, Any]:
    reply = client.command({"listCollections": 1, "filter": {"name": name}})
    (row,) = reply["cursor"]["firstBatch"]
    return dict(row)


def test_clustered_collection_is_listed_with_its_index() -> None:
    client = Client(make_cluster())
    assert client.command({"create": "c", "clusteredIndex": CLUSTERED})["ok"] == 1.0
    row = _listed(client, "c")
    assert row["options"] == {"clusteredIndex": {"v": 2, "key": {"_id": 1}, "name": "by id", "unique": True}}
    assert "idIndex" not in row  # no separate _id index
    indexes = client.command({"listIndexes": "c"})["cursor"]["firstBatch"]
    assert indexes == [{"v": 2, "key": {"_id": 1}, "name": "by id", "unique": True, "clustered": True}]
    client.command({"insert": "c", "documents": [{"_id": 1}]})
    assert client.command({"insert": "c", "documents": [{"_id": 1}]})["writeErrors"][0]["code"] == 11000
    # the default name, and the option following a rename; a plain collection keeps its idIndex
    client.command({"create": "d", "clusteredIndex": {"key": {"_id": 1}, "unique": True}})
    client.command({"renameCollection": "test.d", "to": "test.e"}, db="admin")
    assert _listed(client, "e")["options"]["clusteredIndex"]["name"] == "_id_"
    client.command({"create": "plain"})
    assert _listed(client, "plain")["idIndex"] == {"v": 2, "key": {"_id": 1}, "name": "_id_"}
    client.command({"drop": "c"})
    client.command({"create": "c"})
    assert _listed(client, "c")["options"] == {}


def test_clustered_index_refusals() -> None:
    client = Client(make_cluster())
    not_unique = client.command({"create": "c", "clusteredIndex": {"key": {"_id": 1}, "unique": False}})
    assert (not_unique["code"], not_unique["errmsg"]) == (
        5979700, "The clusteredIndex option requires unique: true to be specified",
    )
    other_key = client.command({"create": "c", "clusteredIndex": {"key": {"a": 1}, "unique": True}})
    assert (other_key["code"], other_key["codeName"]) == (197, "InvalidIndexSpecificationOption")
    assert client.command({"create": "c", "clusteredIndex": {**CLUSTERED, "v": 1}})["code"] == 5979704
    assert client.command({"listCollections": 1})["cursor"]["firstBatch"] == []


def test_time_series_collection() -> None:
    client = Client(make_cluster())
    spec = {"timeField": "time", "metaField": "meta", "granularity": "minutes"}
    assert client.command({"create": "ts", "timeseries": spec, "expireAfterSeconds": 60})["ok"] == 1.0
    row = _listed(client, "ts")
    assert (row["type"], "idIndex" in row) == ("timeseries", False)
    assert row["options"] == {"expireAfterSeconds": 60, "timeseries": {**spec, "bucketMaxSpanSeconds": 86400}}
    indexes = client.command({"listIndexes": "ts"})["cursor"]["firstBatch"]
    assert [i["name"] for i in indexes] == ["meta_1_time_1"]  # mongod 7.0's default index, no _id_
    inserted = client.command({"insert": "ts", "documents": [{"_id": 1, "time": 2}, {"_id": 1, "time": 1}]})
    assert inserted["n"] == 2 and "writeErrors" not in inserted  # _id need not be unique
    found = client.command({"find": "ts", "filter": {"_id": 1}, "sort": {"time": 1}})["cursor"]["firstBatch"]
    assert found == [{"_id": 1, "time": 1}, {"_id": 1, "time": 2}]
    client.command({"create": "plain_ts", "timeseries": {"timeField": "t"}})
    assert _listed(client, "plain_ts")["options"]["timeseries"] == {
        "timeField": "t", "granularity": "seconds", "bucketMaxSpanSeconds": 3600,
    }
    assert client.command({"listIndexes": "plain_ts"})["cursor"]["firstBatch"] == []
    assert client.command({"create": "bad", "timeseries": {"metaField": "m"}})["code"] == 40414
    assert client.command({"create": "bad", "timeseries": {"timeField": "t", "granularity": "days"}})["code"] == 2
