"""What a data engineer or an app developer does against a sharded cluster, run with PyMongo
(the reference driver) against ``mongo-sansio sim --sharded --shards 2 --mongos 2`` started as a
user starts it, and each answer compared with the shape mongod 7.0's mongos gives: the fields
drivers read (n, nModified, upserted, writeErrors' codes and indexes, cursor ns/firstBatch/id,
codes and codeNames).  Scenarios test_sim_sharded.py already covers are not repeated here.

One CLI cluster serves the module (plus one ``--sharded --load-balanced`` front for the
last test); each test uses collections of its own.
"""

from __future__ import annotations

import itertools
import signal
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

pymongo = pytest.importorskip("pymongo")
from integration_helpers import cli_process, first_line_uri  # noqa: E402
from pymongo import MongoClient  # noqa: E402

OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 5000, "connectTimeoutMS": 3000, "socketTimeoutMS": 10000}
_names = itertools.count()


def _stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=15) == 0


@pytest.fixture(scope="module")
def uri() -> Iterator[str]:
    with cli_process("sim", "--sharded", "--shards", "2", "--mongos", "2", "--port", "0") as process:
        yield first_line_uri(process)
        _stop(process)


@pytest.fixture(scope="module")
def client(uri: str) -> Iterator[MongoClient[Any]]:
    opened: MongoClient[Any] = MongoClient(uri, **OPTIONS)
    yield opened
    opened.close()


def _sharded(client: MongoClient[Any], key: dict[str, Any], db: str = "fid") -> Any:
    name = f"c{next(_names)}"
    reply = client.admin.command("shardCollection", f"{db}.{name}", key=key)
    assert reply["collectionsharded"] == f"{db}.{name}" and reply["ok"] == 1.0
    return client[db][name]


def test_find_one_and_modify_without_the_shard_key_takes_the_first_match_by_sort_across_shards(
    client: MongoClient[Any],
) -> None:
    """mongod's two-phase write without a shard key compares each shard's first match by the
    sort: the document changed is the cluster's first, not one shard's."""
    coll = _sharded(client, {"_id": "hashed"})
    coll.insert_many([{"_id": i, "x": i % 3} for i in range(30)])
    assert coll.find_one_and_delete({"x": 2}, sort=[("_id", -1)]) == {"_id": 29, "x": 2}
    assert coll.find_one_and_update({"x": 2}, {"$set": {"s": 1}}, sort=[("_id", 1)],
                                    return_document=True) == {"_id": 2, "x": 2, "s": 1}
    assert coll.find_one_and_replace({"x": 0}, {"x": 0, "r": 1}, sort=[("_id", -1)])["_id"] == 27
    assert coll.find_one({"r": 1})["_id"] == 27
