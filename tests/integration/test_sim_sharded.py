"""The simulated sharded cluster (two mongos over two three-member shards) driven by PyMongo,
the reference peer, and by our blocking client: mongos's hello, sharding a collection (hashed
and ranged keys), writes routed by shard key, scatter-gather reads merged, getMore through
mongos, the config database, transactions over two shards, change streams merged from both
shards in cluster-time order (one shard idle, a shard added mid-stream), retryable writes
across a mongos kill, failCommand on mongos.

One cluster serves the whole module (``sc``, from tests/conftest.py); each test uses its own
collection.
"""

from __future__ import annotations

import itertools
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

pymongo = pytest.importorskip("pymongo")
from bson import MaxKey, MinKey  # noqa: E402
from pymongo import MongoClient  # noqa: E402
from pymongo.errors import OperationFailure  # noqa: E402

import mongo_sansio.errors  # noqa: E402
from mongo_sansio.adapters.blocking import MongoClient as OurClient  # noqa: E402
from mongo_sansio.adapters.sim import SimulatedShardedCluster  # noqa: E402

OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 5000, "connectTimeoutMS": 3000, "socketTimeoutMS": 10000}
_names = itertools.count()


@pytest.fixture(scope="module")
def client(sc: SimulatedShardedCluster) -> Iterator[MongoClient[Any]]:
    opened: MongoClient[Any] = MongoClient(sc.uri, **OPTIONS)
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def ours(sc: SimulatedShardedCluster) -> Iterator[Any]:
    opened = OurClient(sc.uri, **OPTIONS)
    yield opened
    opened.close()


def _hashed(client: MongoClient[Any], key: str = "_id") -> str:
    name = f"c{next(_names)}"
    client.admin.command("shardCollection", f"db.{name}", key={key: "hashed"})
    return name


def _per_shard(sc: SimulatedShardedCluster, name: str) -> dict[str, int]:
    def count(cluster: Any, _now: float) -> dict[str, int]:
        return {shard: len(rs.collection("db", name) or []) for shard, rs in cluster.shards.items()}

    result: dict[str, int] = sc.call(count)
    return result


def test_hello_is_mongos_and_the_uri_lists_every_mongos(sc: SimulatedShardedCluster, client: MongoClient[Any]) -> None:
    hello = client.admin.command("hello")
    assert hello["msg"] == "isdbgrid"
    assert hello["isWritablePrimary"] is True
    assert "setName" not in hello and "hosts" not in hello
    assert "$clusterTime" in hello
    assert sc.uri == f"mongodb://{','.join(sc.mongos)}/"
    assert len(sc.mongos) == 2
    client.admin.command("ping")
    assert client.topology_description.topology_type_name == "Sharded"


def test_hashed_collection_spreads_writes_and_merges_sorted_reads(sc: SimulatedShardedCluster, client: MongoClient[Any]) -> None:
    name = _hashed(client)
    coll = client.db[name]
    coll.insert_many([{"_id": i, "x": i % 4} for i in range(40)])
    counts = _per_shard(sc, name)
    assert sum(counts.values()) == 40 and all(n > 0 for n in counts.values())
    assert [d["_id"] for d in coll.find({}, sort=[("_id", -1)], skip=2, limit=5)] == [37, 36, 35, 34, 33]
    assert [d["_id"] for d in coll.find({"x": 1}, {"x": 0}, sort=[("_id", 1)], limit=3)] == [1, 5, 9]
    assert coll.count_documents({"x": 2}) == 10
    assert sorted(coll.distinct("x")) == [0, 1, 2, 3]
    assert len(list(coll.find(batch_size=7))) == 40  # getMore through the mongos
    groups = list(coll.aggregate([{"$match": {"x": {"$gte": 2}}}, {"$group": {"_id": "$x", "n": {"$sum": 1}}},
                                  {"$sort": {"_id": 1}}]))
    assert groups == [{"_id": 2, "n": 10}, {"_id": 3, "n": 10}]


def test_updates_deletes_and_find_and_modify_reach_the_owning_shard(client: MongoClient[Any]) -> None:
    coll = client.db[_hashed(client)]
    coll.insert_many([{"_id": i, "x": i % 2} for i in range(10)])
    assert coll.update_one({"_id": 3}, {"$set": {"y": 1}}).modified_count == 1
    assert coll.update_one({"x": 1}, {"$set": {"z": 1}}).modified_count == 1  # no shard key: one document
    assert coll.count_documents({"z": 1}) == 1
    assert coll.update_many({"x": 0}, {"$inc": {"n": 1}}).modified_count == 5
    assert coll.find_one_and_update({"_id": 4}, {"$inc": {"n": 1}}, return_document=True)["n"] == 2
    result = coll.update_one({"_id": 100}, {"$set": {"x": 9}}, upsert=True)
    assert result.upserted_id == 100
    assert coll.delete_one({"x": 1}).deleted_count == 1
    assert coll.delete_many({"x": 0}).deleted_count == 5
    assert coll.count_documents({}) == 5


def test_ranged_key_split_and_move_chunk(sc: SimulatedShardedCluster, client: MongoClient[Any]) -> None:
    name = f"r{next(_names)}"
    client.admin.command("shardCollection", f"db.{name}", key={"k": 1})
    coll = client.db[name]
    coll.insert_many([{"k": i} for i in range(10)])
    client.admin.command("split", f"db.{name}", middle={"k": 5})
    client.admin.command("moveChunk", f"db.{name}", find={"k": 7}, to="shard1")
    assert _per_shard(sc, name) == {"shard0": 5, "shard1": 5}
    uuid = client.config.collections.find_one({"_id": f"db.{name}"})["uuid"]
    chunks = list(client.config.chunks.find({"uuid": uuid}, sort=[("min", 1)]))
    assert [(c["min"], c["max"], c["shard"]) for c in chunks] == [
        ({"k": MinKey()}, {"k": 5}, "shard0"), ({"k": 5}, {"k": MaxKey()}, "shard1")]
    assert [d["k"] for d in coll.find({}, sort=[("k", 1)])] == list(range(10))
    coll.insert_one({"k": 42})
    assert _per_shard(sc, name)["shard1"] == 6


def test_transaction_over_two_shards_commits_atomically_and_aborts_invisibly(client: MongoClient[Any]) -> None:
    coll = client.db[_hashed(client)]
    coll.insert_many([{"_id": i} for i in range(4)])
    with client.start_session() as session:
        with session.start_transaction():
            coll.insert_many([{"_id": 10 + i} for i in range(6)], session=session)
            coll.update_many({}, {"$set": {"t": 1}}, session=session)
            assert coll.count_documents({}) == 4  # outside the transaction: nothing yet
        assert coll.count_documents({"t": 1}) == 10
        session.start_transaction()
        coll.insert_many([{"_id": 20 + i} for i in range(6)], session=session)
        session.abort_transaction()
    assert coll.count_documents({"_id": {"$gte": 20}}) == 0


def test_replies_in_a_transaction_carry_a_recovery_token(client: MongoClient[Any]) -> None:
    coll = client.db[_hashed(client)]
    replies: list[dict[str, Any]] = []

    class Listener(pymongo.monitoring.CommandListener):
        def started(self, event: Any) -> None: ...
        def succeeded(self, event: Any) -> None:
            replies.append({"name": event.command_name, **event.reply})
        def failed(self, event: Any) -> None: ...

    with MongoClient(client.nodes and next(iter(client.nodes))[0] + f":{next(iter(client.nodes))[1]}", **OPTIONS,
                     event_listeners=[Listener()]) as single:
        with single.start_session() as session, session.start_transaction():
            single.db[coll.name].insert_one({"_id": 1}, session=session)
    inserts = [r for r in replies if r["name"] == "insert"]
    assert inserts and inserts[0]["recoveryToken"]["recoveryShardId"] in ("shard0", "shard1")


def test_change_stream_merges_both_shards_in_cluster_time_order(sc: SimulatedShardedCluster, client: MongoClient[Any]) -> None:
    name = _hashed(client, "k")
    coll = client.db[name]
    with coll.watch(max_await_time_ms=200) as stream:
        for i in range(30):
            coll.insert_one({"_id": i, "k": i})
        events = [stream.next() for _ in range(30)]
    assert [e["fullDocument"]["_id"] for e in events] == list(range(30))
    times = [(e["clusterTime"].time, e["clusterTime"].inc) for e in events]
    assert times == sorted(times) and len(set(times)) == 30
    assert all(list(e["documentKey"]) == ["k", "_id"] for e in events)
    counts = _per_shard(sc, name)
    assert all(n > 0 for n in counts.values())


def test_an_idle_shard_does_not_hold_the_stream_back(client: MongoClient[Any]) -> None:
    name = f"r{next(_names)}"
    client.admin.command("shardCollection", f"db.{name}", key={"k": 1})  # one chunk: shard1 stays idle
    coll = client.db[name]
    with coll.watch(max_await_time_ms=100) as stream:
        coll.insert_one({"k": 1})
        started = time.monotonic()
        event = stream.next()
        assert time.monotonic() - started < 2.0
        assert event["documentKey"]["k"] == 1
        token = stream.resume_token
    with coll.watch(resume_after=token, max_await_time_ms=100) as resumed:
        coll.insert_one({"k": 2})
        assert resumed.next()["fullDocument"]["k"] == 2


def test_a_shard_added_mid_stream_is_seen_by_the_running_stream(sc: SimulatedShardedCluster, client: MongoClient[Any]) -> None:
    name = f"r{next(_names)}"
    client.admin.command("shardCollection", f"db.{name}", key={"k": 1})
    coll = client.db[name]
    with client.db.watch(max_await_time_ms=100) as stream:
        coll.insert_one({"k": 1})
        assert stream.next()["documentKey"]["k"] == 1
        added = sc.add_shard(members=1)
        client.admin.command("split", f"db.{name}", middle={"k": 100})
        client.admin.command("moveChunk", f"db.{name}", find={"k": 100}, to=added)
        coll.insert_one({"k": 150})
        assert _per_shard(sc, name)[added] == 1
        event = stream.next()
        assert event["operationType"] == "insert" and event["documentKey"]["k"] == 150


def test_a_retried_write_across_a_mongos_kill_is_applied_once(sc: SimulatedShardedCluster) -> None:
    name = f"w{next(_names)}"
    with MongoClient(sc.uri, **OPTIONS) as client:
        coll = client.db[name]
        coll.insert_one({"_id": 0})
        # the shard applies the write and the answer is lost on the way back: the client
        # retries (on the other mongos) and the shard answers from its record
        primary = sc.primary("shard0")
        assert primary is not None
        sc.configure_failpoint(primary, {"configureFailPoint": "onPrimaryTransactionalWrite",
                                         "mode": {"times": 1}, "data": {"closeConnection": True}})
        coll.insert_one({"_id": 1, "n": 1})
        sc.failpoint_off(primary, "onPrimaryTransactionalWrite")
        assert coll.count_documents({}) == 2
        sc.stop_mongos(sc.mongos[0])
        try:
            for i in range(2, 6):
                coll.insert_one({"_id": i})
            assert coll.count_documents({}) == 6
        finally:
            sc.restart_mongos(sc.mongos[0])


def test_fail_command_on_mongos_fails_and_a_retryable_error_is_retried(sc: SimulatedShardedCluster) -> None:
    with MongoClient(sc.mongos[0], directConnection=False, retryWrites=False, **OPTIONS) as client:
        sc.configure_failpoint(sc.mongos[0], {"configureFailPoint": "failCommand", "mode": {"times": 1},
                                              "data": {"failCommands": ["insert"], "errorCode": 2}})
        with pytest.raises(OperationFailure) as raised:
            client.db.fc.insert_one({"_id": 1})
        assert raised.value.code == 2
        assert client.db.fc.count_documents({}) == 0
    with MongoClient(sc.mongos[0], **OPTIONS) as client:
        sc.configure_failpoint(sc.mongos[0], {"configureFailPoint": "failCommand", "mode": {"times": 1},
                                              "data": {"failCommands": ["insert"], "errorCode": 262}})
        client.db.fc.insert_one({"_id": 1})  # ExceededTimeLimit is retryable: retried once, applied once
        assert client.db.fc.count_documents({}) == 1


def test_our_client_crud_transaction_and_change_stream(sc: SimulatedShardedCluster, client: MongoClient[Any], ours: Any) -> None:
    name = _hashed(client)
    coll = ours.db[name]
    coll.insert_many([{"_id": i, "x": i % 3} for i in range(12)])
    assert [d["_id"] for d in coll.find({"x": 0}, sort=[("_id", 1)])] == [0, 3, 6, 9]
    assert all(n > 0 for n in _per_shard(sc, name).values())
    with ours.start_session() as session:
        with session.start_transaction():
            coll.insert_many([{"_id": 100 + i} for i in range(4)], session=session)
        assert coll.count_documents({"_id": {"$gte": 100}}) == 4
    with coll.watch(max_await_time_ms=100) as stream:
        coll.insert_many([{"_id": 200 + i} for i in range(4)])
        events = [stream.next() for _ in range(4)]
    assert sorted(e["documentKey"]["_id"] for e in events) == [200, 201, 202, 203]
    times = [(e["clusterTime"].time, e["clusterTime"].inc) for e in events]
    assert times == sorted(times)


@pytest.mark.parametrize("load_balanced", [False, True])
def test_the_sim_command_serves_a_sharded_cluster_and_prints_its_uri(load_balanced: bool) -> None:
    """The first line lists every mongos; with --load-balanced, it names the front alone."""
    from integration_helpers import cli_process, first_line_uri

    front = ["--load-balanced"] if load_balanced else []
    with cli_process("sim", "--sharded", "--shards", "2", "--mongos", "2", "--auth", "admin:pw", "--port", "0",
                     *front) as process:
        uri = first_line_uri(process, "mongodb://admin:pw@")
        if load_balanced:
            assert uri.endswith("/?loadBalanced=true") and "," not in uri
        else:
            assert uri.count(",") == 1 and "replicaSet" not in uri
        with MongoClient(uri, **OPTIONS) as client:
            assert client.admin.command("hello")["msg"] == "isdbgrid"
            client.admin.command("shardCollection", "cli.things", key={"_id": "hashed"})
            client.cli.things.insert_many([{"_id": i} for i in range(10)])
            assert client.cli.things.count_documents({}) == 10
            expected = "LoadBalanced" if load_balanced else "Sharded"
            assert client.topology_description.topology_type_name == expected
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0


@pytest.mark.parametrize("driver", ["pymongo", "ours"])
def test_a_change_stream_resumes_across_mongos_kills(sc: SimulatedShardedCluster, client: MongoClient[Any],
                                                     driver: str) -> None:
    name = _hashed(client)
    # a restarted mongos is found again soon; PyMongo's getMore waits for its cursor's mongos
    # (dead) a whole server selection timeout before the stream resumes elsewhere
    fast = {**OPTIONS, "heartbeatFrequencyMS": 500, "serverSelectionTimeoutMS": 1500}
    opened = MongoClient(sc.uri, **fast) if driver == "pymongo" else OurClient(sc.uri, **fast)
    try:
        coll = opened.db[name]
        seen: list[int] = []
        with coll.watch(max_await_time_ms=100) as stream:
            for round_, mongos in enumerate([None, sc.mongos[0], sc.mongos[1]]):
                if mongos is not None:
                    sc.stop_mongos(mongos)  # the stream's cursor may live there: it resumes elsewhere
                coll.insert_many([{"_id": round_ * 10 + i} for i in range(4)])
                seen += [stream.next()["documentKey"]["_id"] for _ in range(4)]
                if mongos is not None:
                    sc.restart_mongos(mongos)
        assert sorted(seen) == [0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23]
    finally:
        opened.close()


@pytest.mark.parametrize("driver", ["pymongo", "ours"])
def test_a_retried_write_goes_to_another_mongos(sc: SimulatedShardedCluster, driver: str) -> None:
    """Both mongos fail the next insert once: a retry sent to the same mongos would succeed,
    one sent to the other (deprioritised: the spec's rule for sharded retries) fails too."""
    name = f"d{next(_names)}"
    opened = MongoClient(sc.uri, **OPTIONS) if driver == "pymongo" else OurClient(sc.uri, **OPTIONS)
    try:
        opened.admin.command("ping")
        for mongos in sc.mongos:
            sc.configure_failpoint(mongos, {"configureFailPoint": "failCommand", "mode": {"times": 1},
                                            "data": {"failCommands": ["insert"], "errorCode": 262}})
        with pytest.raises(Exception) as raised:  # (each driver's own OperationFailure)
            opened.db[name].insert_one({"_id": 1})
        assert getattr(raised.value, "code", None) == 262
        assert opened.db[name].count_documents({}) == 0
    finally:
        for mongos in sc.mongos:
            sc.failpoint_off(mongos)
        opened.close()


class _FailedCommands(pymongo.monitoring.CommandListener):
    """Where each command failed (host, port)."""

    def __init__(self) -> None:
        self.addresses: list[Any] = []

    def started(self, event: Any) -> None:
        pass

    def succeeded(self, event: Any) -> None:
        pass

    def failed(self, event: Any) -> None:
        self.addresses.append(tuple(event.connection_id))


@pytest.mark.parametrize("operation", ["read", "write"])
@pytest.mark.parametrize("driver", ["pymongo", "ours"])
def test_a_retry_avoids_the_mongos_that_failed_unless_it_is_the_only_one(sc: SimulatedShardedCluster, driver: str,
                                                                         operation: str) -> None:
    """The retryable reads and writes specs' sharded prose tests: each mongos fails the
    operation once with a retryable error; with both in the seed list the retry goes to the
    other one (deprioritised: two failures on two mongos, the error raised), with one alone
    it goes back to it and succeeds."""
    name = f"p{next(_names)}"
    command = "find" if operation == "read" else "insert"
    data: dict[str, Any] = {"failCommands": [command], "errorCode": 6}
    if operation == "write":
        data["errorLabels"] = ["RetryableWriteError"]

    def run(uri: str) -> tuple[Any, list[Any]]:
        listener = _FailedCommands()
        options = {**OPTIONS, "retryReads": True, "retryWrites": True, "event_listeners": [listener]}
        opened = MongoClient(uri, **options) if driver == "pymongo" else OurClient(uri, **options)
        try:
            opened.admin.command("ping")
            for mongos in sc.mongos:
                sc.configure_failpoint(mongos, {"configureFailPoint": "failCommand", "mode": {"times": 1},
                                                "data": data})
            try:
                if operation == "read":
                    outcome: Any = opened.db[name].find_one({})
                else:
                    outcome = opened.db[name].insert_one({"x": 1}).acknowledged
            except Exception as error:  # (each driver's own OperationFailure)
                outcome = error
            return outcome, listener.addresses
        finally:
            for mongos in sc.mongos:
                sc.failpoint_off(mongos)
            opened.close()

    outcome, failed = run(sc.uri)
    assert getattr(outcome, "code", None) == 6
    assert len(failed) == 2 and failed[0] != failed[1]
    assert {f"{host}:{port}" for host, port in failed} == set(sc.mongos)
    outcome, failed = run(f"mongodb://{sc.mongos[0]}/")
    assert not isinstance(outcome, Exception)
    assert [f"{host}:{port}" for host, port in failed] == [sc.mongos[0]]


@pytest.mark.parametrize("family", ["asyncio", "trio"])
def test_async_clients_crud_transaction_and_change_stream(sc: SimulatedShardedCluster, client: MongoClient[Any],
                                                         family: str) -> None:
    if family == "trio":
        trio = pytest.importorskip("trio")
        import mongo_sansio.adapters.trio as module
    else:
        import asyncio

        import mongo_sansio.adapters.asyncio as module  # type: ignore[no-redef]
    name = _hashed(client)

    async def main() -> None:
        async with module.AsyncMongoClient(sc.uri, **OPTIONS) as ours:
            coll = ours.db[name]
            await coll.insert_many([{"_id": i} for i in range(8)])
            assert [d["_id"] async for d in coll.find({}, sort=[("_id", -1)], limit=3)] == [7, 6, 5]
            async with ours.start_session() as session:
                async with await session.start_transaction():
                    await coll.insert_many([{"_id": 100 + i} for i in range(4)], session=session)
            assert await coll.count_documents({"_id": {"$gte": 100}}) == 4
            async with await coll.watch(max_await_time_ms=100) as stream:
                await coll.insert_many([{"_id": 200 + i} for i in range(4)])
                keys = [(await stream.next())["documentKey"]["_id"] for _ in range(4)]
            assert sorted(keys) == [200, 201, 202, 203]

    if family == "trio":
        trio.run(main)
    else:
        asyncio.run(main())
    assert all(n > 0 for n in _per_shard(sc, name).values())


def test_an_update_of_the_shard_key_moves_the_document_to_its_new_shard(sc: SimulatedShardedCluster,
                                                                        client: MongoClient[Any]) -> None:
    name = f"r{next(_names)}"
    client.admin.command("shardCollection", f"db.{name}", key={"k": 1})
    client.admin.command("split", f"db.{name}", middle={"k": 100})
    client.admin.command("moveChunk", f"db.{name}", find={"k": 100}, to="shard1")
    coll = client.db[name]
    coll.insert_one({"_id": 1, "k": 5})
    assert _two(sc, name) == {"shard0": 1, "shard1": 0}
    coll.update_one({"_id": 1}, {"$set": {"k": 150}})
    assert _two(sc, name) == {"shard0": 0, "shard1": 1}
    assert coll.find_one({"k": 150}) == {"_id": 1, "k": 150}
    coll.find_one_and_replace({"k": 150}, {"k": 7})
    assert _two(sc, name) == {"shard0": 1, "shard1": 0}
    assert coll.find_one({"k": 7})["_id"] == 1


def _two(sc: SimulatedShardedCluster, name: str) -> dict[str, int]:
    return {shard: n for shard, n in _per_shard(sc, name).items() if shard in ("shard0", "shard1")}


def test_writes_through_mongos_survive_a_stepdown_and_a_member_kill_inside_a_shard(
    sc: SimulatedShardedCluster, client: MongoClient[Any]
) -> None:
    coll = client.db[_hashed(client)]
    coll.insert_many([{"_id": i} for i in range(10)])
    old = sc.primary("shard0")
    sc.step_down("shard0")
    assert sc.primary("shard0") not in (None, old)
    coll.insert_many([{"_id": 10 + i} for i in range(10)])
    victim = sc.primary("shard1")
    assert victim is not None
    sc.kill(victim)
    try:
        assert sc.primary("shard1") not in (None, victim)
        coll.insert_many([{"_id": 20 + i} for i in range(10)])
        assert coll.count_documents({}) == 30
    finally:
        sc.restart(victim)


def test_explain_db_stats_coll_stats_and_server_status_as_mongos_gives_them(client: MongoClient[Any]) -> None:
    coll = client.db[_hashed(client)]
    coll.insert_many([{"_id": i} for i in range(20)])
    merged = coll.find({"_id": {"$gt": 3}}).explain()
    assert merged["queryPlanner"]["winningPlan"]["stage"] == "SHARD_MERGE"
    assert {s["shardName"] for s in merged["queryPlanner"]["winningPlan"]["shards"]} >= {"shard0", "shard1"}
    assert coll.find({"_id": 3}).explain()["queryPlanner"]["winningPlan"]["stage"] == "SINGLE_SHARD"
    stats = client.db.command("dbStats")
    assert stats["objects"] >= 20 and len(stats["raw"]) >= 2
    per_shard = list(coll.aggregate([{"$collStats": {"count": {}}}]))
    assert sum(d["count"] for d in per_shard) == 20 and {d["shard"] for d in per_shard} >= {"shard0", "shard1"}
    assert client.admin.command("serverStatus")["process"] == "mongos"


@pytest.mark.parametrize("driver", ["pymongo", "ours"])
def test_a_change_stream_resumes_after_a_labelled_get_more_error_on_mongos(
    sc: SimulatedShardedCluster, client: MongoClient[Any], driver: str
) -> None:
    name = _hashed(client)
    mongos = sc.mongos[0]
    opened = MongoClient(mongos, **OPTIONS) if driver == "pymongo" else OurClient(f"mongodb://{mongos}/", **OPTIONS)
    try:
        coll = opened.db[name]
        with coll.watch(max_await_time_ms=100) as stream:
            coll.insert_one({"_id": 1})
            assert stream.next()["documentKey"]["_id"] == 1
            sc.configure_failpoint(mongos, {"configureFailPoint": "failGetMoreAfterCursorCheckout",
                                            "mode": {"times": 1}, "data": {"errorCode": 262}})
            coll.insert_one({"_id": 2})
            assert stream.next()["documentKey"]["_id"] == 2  # resumed once, nothing lost or repeated
            coll.insert_one({"_id": 3})
            assert stream.next()["documentKey"]["_id"] == 3
    finally:
        sc.failpoint_off(mongos, "failGetMoreAfterCursorCheckout")
        opened.close()


@pytest.mark.parametrize("driver", ["pymongo", "ours"])
def test_a_snapshot_session_reads_every_shard_at_one_cluster_time(sc: SimulatedShardedCluster, client: MongoClient[Any],
                                                                  driver: str) -> None:
    name = _hashed(client)
    opened = MongoClient(sc.uri, **OPTIONS) if driver == "pymongo" else OurClient(sc.uri, **OPTIONS)
    try:
        coll = opened.db[name]
        coll.insert_many([{"_id": i} for i in range(10)])
        with opened.start_session(snapshot=True) as session:
            assert len(list(coll.find({}, session=session))) == 10
            coll.insert_many([{"_id": 10 + i} for i in range(10)])  # on both shards, after the snapshot
            assert len(list(coll.find({}, session=session))) == 10
            assert sorted(coll.distinct("_id", session=session)) == list(range(10))
        assert coll.count_documents({}) == 20
    finally:
        opened.close()


def test_a_lookup_from_an_unsharded_collection_reads_the_whole_sharded_one(client: MongoClient[Any]) -> None:
    orders = client.db[_hashed(client, "customer")]
    orders.insert_many([{"_id": i, "customer": i % 5} for i in range(20)])
    customers = client.db[f"u{next(_names)}"]
    customers.insert_many([{"_id": c} for c in range(5)])
    joined = list(customers.aggregate([
        {"$lookup": {"from": orders.name, "localField": "_id", "foreignField": "customer", "as": "orders"}},
        {"$project": {"n": {"$size": "$orders"}}}, {"$sort": {"_id": 1}},
    ]))
    assert joined == [{"_id": c, "n": 4} for c in range(5)]


def test_a_sorted_read_merged_from_the_shards_honours_its_collation(client: MongoClient[Any]) -> None:
    coll = client.db[_hashed(client)]
    coll.insert_many([{"_id": i, "name": name} for i, name in enumerate(["b", "A", "a", "B", "c", "C"])])
    plain = [d["name"] for d in coll.find({}, sort=[("name", 1), ("_id", 1)])]
    assert plain == ["A", "B", "C", "a", "b", "c"]
    folded = [d["name"] for d in coll.find({}, sort=[("name", 1), ("_id", 1)], collation={"locale": "en", "strength": 1})]
    assert folded == ["A", "a", "b", "B", "c", "C"]  # case ignored: ties broken by _id


@pytest.mark.parametrize("driver", ["pymongo", "ours"])
def test_with_transaction_survives_the_kill_of_its_pinned_mongos(sc: SimulatedShardedCluster, client: MongoClient[Any],
                                                                 driver: str) -> None:
    name = _hashed(client)
    # (PyMongo waits for the dead pinned mongos a server selection timeout before it fails over)
    fast = {**OPTIONS, "heartbeatFrequencyMS": 500, "serverSelectionTimeoutMS": 1500}
    opened = MongoClient(sc.uri, **fast) if driver == "pymongo" else OurClient(sc.uri, **fast)
    attempts: list[Any] = []
    try:
        coll = opened.db[name]
        coll.insert_one({"_id": "seed"})

        def callback(session: Any) -> None:
            coll.insert_one({"_id": len(attempts)}, session=session)
            attempts.append(session._pinned_address if driver == "ours" else session._transaction.pinned_address)
            if len(attempts) == 1:
                host, port = attempts[0]
                sc.stop_mongos(f"{host}:{port}")  # the pinned mongos dies mid-transaction
            coll.insert_one({"_id": 100 + len(attempts)}, session=session)

        with opened.start_session() as session:
            session.with_transaction(callback)
        assert len(attempts) == 2 and attempts[0] != attempts[1]
        assert sorted(str(d["_id"]) for d in coll.find()) == ["1", "102", "seed"]  # the first attempt left nothing
    finally:
        for mongos in sc.mongos:
            sc.restart_mongos(mongos)
        opened.close()


def _ranged_over_two_shards(client: MongoClient[Any]) -> str:
    """A collection sharded on ``k``: below 100 on shard0, from 100 on shard1."""
    name = f"r{next(_names)}"
    client.admin.command("shardCollection", f"db.{name}", key={"k": 1})
    client.admin.command("split", f"db.{name}", middle={"k": 100})
    client.admin.command("moveChunk", f"db.{name}", find={"k": 100}, to="shard1")
    return name


@pytest.mark.parametrize("retry_writes", [True, False], ids=["retryable", "not-retryable"])
@pytest.mark.parametrize("driver", ["pymongo", "ours"])
def test_an_ordered_write_stops_at_its_first_error_across_shards(sc: SimulatedShardedCluster, client: MongoClient[Any],
                                                                  driver: str, retry_writes: bool) -> None:
    """mongos runs an ordered batch shard by shard in statement order and stops at the first
    write error (the statements after it, on either shard, are not run); unordered goes on."""
    name = _ranged_over_two_shards(client)
    client.db[name].insert_one({"_id": 2, "k": 2})
    options = {**OPTIONS, "retryWrites": retry_writes}
    opened = MongoClient(sc.uri, **options) if driver == "pymongo" else OurClient(sc.uri, **options)
    errors = (pymongo.errors.BulkWriteError, mongo_sansio.errors.BulkWriteError)
    try:
        coll = opened.db[name]
        documents = [{"_id": 1, "k": 1}, {"_id": 101, "k": 101}, {"_id": 2, "k": 2}, {"_id": 102, "k": 102},
                     {"_id": 3, "k": 3}]
        with pytest.raises(errors) as raised:
            coll.insert_many(documents)  # ordered: the duplicate _id 2 stops it
        assert raised.value.details["nInserted"] == 2
        assert [e["index"] for e in raised.value.details["writeErrors"]] == [2]
        assert sorted(d["_id"] for d in coll.find()) == [1, 2, 101]
        with pytest.raises(errors) as raised:  # bulk_write: the same rule
            coll.bulk_write([pymongo.UpdateOne({"k": 1}, {"$set": {"a": 1}}), pymongo.InsertOne({"_id": 103, "k": 103}),
                             pymongo.InsertOne({"_id": 101, "k": 101}), pymongo.InsertOne({"_id": 4, "k": 4})]
                            if driver == "pymongo" else _our_requests())
        assert raised.value.details["nInserted"] == 1 and raised.value.details["nModified"] == 1
        assert sorted(d["_id"] for d in coll.find()) == [1, 2, 101, 103]
        with pytest.raises(errors) as raised:
            coll.insert_many(documents + [{"_id": 104, "k": 104}], ordered=False)  # unordered: goes on
        assert raised.value.details["nInserted"] == 3
        assert sorted(d["_id"] for d in coll.find()) == [1, 2, 3, 101, 102, 103, 104]
    finally:
        opened.close()


def _our_requests() -> list[Any]:
    from mongo_sansio.adapters.blocking import InsertOne, UpdateOne

    return [UpdateOne({"k": 1}, {"$set": {"a": 1}}), InsertOne({"_id": 103, "k": 103}),
            InsertOne({"_id": 101, "k": 101}), InsertOne({"_id": 4, "k": 4})]


@pytest.mark.parametrize("driver", ["pymongo", "ours"])
def test_an_ordered_retryable_write_retried_mid_batch_applies_each_statement_once(
        sc: SimulatedShardedCluster, client: MongoClient[Any], driver: str) -> None:
    """shard1 applies its run and the answer is lost: the retry is answered from each shard's
    record of the runs already done (shard0's first, shard1's) and runs the rest (shard0's
    second run), so every document is inserted once and no duplicate key error appears."""
    name = _ranged_over_two_shards(client)
    primary = sc.primary("shard1")
    assert primary is not None
    opened = MongoClient(sc.uri, **OPTIONS) if driver == "pymongo" else OurClient(sc.uri, **OPTIONS)
    try:
        opened.admin.command("ping")
        sc.configure_failpoint(primary, {"configureFailPoint": "onPrimaryTransactionalWrite",
                                         "mode": {"times": 1}, "data": {"closeConnection": True}})
        result = opened.db[name].insert_many([{"_id": 1, "k": 1}, {"_id": 101, "k": 101}, {"_id": 2, "k": 2}])
        assert sorted(result.inserted_ids) == [1, 2, 101]
        assert sorted(d["_id"] for d in opened.db[name].find()) == [1, 2, 101]
        assert _per_shard(sc, name) == {"shard0": 2, "shard1": 1, **_others(sc, name)}
    finally:
        sc.failpoint_off(primary, "onPrimaryTransactionalWrite")
        opened.close()


def _others(sc: SimulatedShardedCluster, name: str) -> dict[str, int]:
    """Shards other than shard0 and shard1 (added by other tests): empty."""
    return {shard: 0 for shard in _per_shard(sc, name) if shard not in ("shard0", "shard1")}


def test_add_shard_through_mongos_and_list_shards(client: MongoClient[Any]) -> None:
    added = client.admin.command("addShard", "extra/extra-0.invalid:27017,extra-1.invalid:27017")
    assert added["shardAdded"] == "extra"
    shards = {s["_id"]: s["host"] for s in client.admin.command("listShards")["shards"]}
    assert shards["extra"] == "extra/extra-0.invalid:27017,extra-1.invalid:27017"
    assert {"shard0", "shard1"} <= set(shards)
    assert client.config.shards.count_documents({"_id": "extra"}) == 1


def test_a_tailable_cursor_through_mongos_gives_the_capped_collection_and_ends(client: MongoClient[Any]) -> None:
    """The simulated mongos reads a shard's cursor whole and does not tail (a known
    difference): what the capped collection holds, then the cursor ends -- it never hangs."""
    name = f"capped{next(_names)}"
    client.db.create_collection(name, capped=True, size=4096, max=3)
    client.db[name].insert_many([{"_id": 1}, {"_id": 2}])
    cursor = client.db[name].find(cursor_type=pymongo.CursorType.TAILABLE_AWAIT, batch_size=1)
    assert [d["_id"] for d in cursor] == [1, 2]
    assert not cursor.alive
