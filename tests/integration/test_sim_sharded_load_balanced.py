"""The sharded cluster behind a load balancer (``SimulatedShardedCluster(load_balanced=True)``,
``mongo-sansio sim --sharded --load-balanced``): the front hands each connection to the next
running mongos, as mongos's load balancer support does.  PyMongo (the reference peer) and our
blocking and asyncio clients run the same scenario through it -- topology LoadBalanced, CRUD on
a sharded collection, a cursor whose getMores keep its connection (and so its mongos), a
transaction over two shards committed and one aborted invisibly -- and a router stopped is
passed over by the front.  One cluster serves the whole module; each test has its collection.
(``mongo-sansio sim --sharded --load-balanced`` itself: test_sim_sharded.py's CLI test.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pymongo
import pytest
from pool_recorder import PoolRecorder

from mongo_sansio.adapters.sim import SimulatedShardedCluster

OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 10000}


@pytest.fixture(scope="module")
def sc() -> Iterator[SimulatedShardedCluster]:
    with SimulatedShardedCluster(shards=2, mongos=2, members=1, load_balanced=True) as cluster:
        yield cluster


def _router_ids(sc: SimulatedShardedCluster) -> set[Any]:
    """The routers' processIds: the serviceIds mongos gives behind a balancer."""
    ids: set[Any] = sc.call(
        lambda cluster, _now: {front.member(a).process_id for a, front in cluster.fronts.items()}
    )
    return ids


def _per_shard(sc: SimulatedShardedCluster, name: str) -> dict[str, list[Any]]:
    def read(cluster: Any, _now: float) -> dict[str, list[Any]]:
        return {shard: sorted(str(d["_id"]) for d in rs.collection("lb", name) or [])
                for shard, rs in cluster.shards.items()}

    found: dict[str, list[Any]] = sc.call(read)
    return found


def _sync_client(kind: str, uri: str, recorder: PoolRecorder) -> Any:
    if kind == "pymongo":
        return pymongo.MongoClient(uri, event_listeners=[recorder], **OPTIONS)
    from mongo_sansio.adapters.blocking import MongoClient

    return MongoClient(uri, event_listeners=[recorder], **OPTIONS)


def test_the_uri_names_the_front_and_hello_answers_as_mongos_behind_it(sc: SimulatedShardedCluster) -> None:
    assert sc.load_balancer is not None and sc.load_balancer not in sc.mongos
    assert sc.uri == f"mongodb://{sc.load_balancer}/?loadBalanced=true"
    with pymongo.MongoClient(sc.uri, **OPTIONS) as client:
        hello = client.admin.command("hello")
        assert hello["msg"] == "isdbgrid" and hello["isWritablePrimary"] is True
        assert "setName" not in hello and "serviceId" not in hello  # only the handshake's has it
        assert client.topology_description.topology_type_name == "LoadBalanced"


def test_the_front_hands_new_connections_to_the_routers_in_turn(sc: SimulatedShardedCluster) -> None:
    recorders = [PoolRecorder(), PoolRecorder()]
    clients = [pymongo.MongoClient(sc.uri, event_listeners=[r], **OPTIONS) for r in recorders]
    try:
        for client in clients:
            client.admin.command("ping")  # one connection each
        services = [r.service_ids[0] for r in recorders]
        assert set(services) == _router_ids(sc)  # two services: each router's processId
    finally:
        for client in clients:
            client.close()


@pytest.mark.parametrize("kind", ["pymongo", "blocking"])
def test_crud_a_pinned_cursor_and_a_two_shard_transaction(sc: SimulatedShardedCluster, kind: str) -> None:
    recorder = PoolRecorder()
    client = _sync_client(kind, sc.uri, recorder)
    name = f"scenario_{kind}"
    try:
        client.admin.command("shardCollection", f"lb.{name}", key={"_id": "hashed"})
        coll = client.lb[name]
        coll.insert_many([{"_id": i} for i in range(10)])
        assert all(_per_shard(sc, name).values())  # the documents reached both shards
        coll.update_one({"_id": 3}, {"$set": {"x": 1}})
        coll.delete_one({"_id": 4})
        assert coll.count_documents({}) == 9 and coll.find_one({"_id": 3}) == {"_id": 3, "x": 1}
        assert set(recorder.service_ids) <= _router_ids(sc)  # each serviceId a router's processId
        assert recorder.checked_out == 0
        first = len(recorder.commands)
        cursor = coll.find(sort=[("_id", 1)], batch_size=2)
        assert next(cursor)["_id"] == 0
        assert recorder.checked_out == 1  # the cursor keeps its connection (its mongos)
        assert [d["_id"] for d in cursor] == [1, 2, 3, 5, 6, 7, 8, 9]
        assert recorder.checked_out == 0
        reads = recorder.commands[first:]
        assert [n for n, _ in reads] == ["find", "getMore", "getMore", "getMore", "getMore"]
        assert len({service for _, service in reads}) == 1  # every getMore on the find's mongos
        with client.start_session() as session:
            with session.start_transaction():
                coll.insert_many([{"_id": f"t{i}"} for i in range(6)], session=session)
                assert recorder.checked_out == 1  # pinned to the transaction
            session.start_transaction()
            coll.insert_many([{"_id": f"aborted{i}"} for i in range(6)], session=session)
            session.abort_transaction()
            assert recorder.checked_out == 0
        # the mongos's recoveryToken goes back with the commit and the abort
        assert "recoveryToken" in recorder.bodies["commitTransaction"][-1]
        assert "recoveryToken" in recorder.bodies["abortTransaction"][-1]
        committed = {shard: [i for i in ids if i.startswith("t")] for shard, ids in _per_shard(sc, name).items()}
        assert all(committed.values()) and sum(map(len, committed.values())) == 6  # both shards
        assert coll.count_documents({"_id": {"$regex": "^aborted"}}) == 0
    finally:
        client.close()


def test_the_asyncio_client_through_the_front(sc: SimulatedShardedCluster) -> None:
    from mongo_sansio.adapters.asyncio import AsyncMongoClient

    name = "scenario_asyncio"

    async def main() -> None:
        recorder = PoolRecorder()
        client = AsyncMongoClient(sc.uri, event_listeners=[recorder], **OPTIONS)
        try:
            await client.admin.command("shardCollection", f"lb.{name}", key={"_id": "hashed"})
            coll = client.lb[name]
            await coll.insert_many([{"_id": i} for i in range(10)])
            assert await coll.count_documents({}) == 10
            first = len(recorder.commands)
            cursor = coll.find(sort=[("_id", 1)], batch_size=3)
            assert (await cursor.next())["_id"] == 0
            assert recorder.checked_out == 1
            assert [d["_id"] async for d in cursor] == list(range(1, 10))
            assert recorder.checked_out == 0
            assert len({service for _, service in recorder.commands[first:]}) == 1
            async with client.start_session() as session:
                await session.start_transaction()
                await coll.insert_many([{"_id": f"t{i}"} for i in range(6)], session=session)
                assert recorder.checked_out == 1
                await session.commit_transaction()
                await session.start_transaction()
                await coll.insert_many([{"_id": f"aborted{i}"} for i in range(6)], session=session)
                await session.abort_transaction()
            assert recorder.checked_out == 0
            assert await coll.count_documents({"_id": {"$regex": "^t"}}) == 6
            assert await coll.count_documents({"_id": {"$regex": "^aborted"}}) == 0
            assert set(recorder.service_ids) <= _router_ids(sc)
        finally:
            await client.close()

    asyncio.run(main())
    committed = {shard: [i for i in ids if i.startswith("t")] for shard, ids in _per_shard(sc, name).items()}
    assert all(committed.values())  # the transaction wrote on both shards


@pytest.mark.parametrize("kind", ["pymongo", "blocking"])
def test_a_stopped_router_is_passed_over_and_a_retried_write_applied_once(sc: SimulatedShardedCluster,
                                                                         kind: str) -> None:
    """A router stopped drops its connections; the client clears that service's connections
    (a PoolClearedEvent with its serviceId) and retries through the front, which hands the new
    connection to the router still running."""
    recorder = PoolRecorder()
    client = _sync_client(kind, sc.uri, recorder)
    try:
        coll = client.lb[f"stop_{kind}"]
        coll.insert_one({"_id": 0, "n": 0})
        coll.insert_one({"_id": 1, "n": 0})  # the pool holds one connection; both went there
        used = recorder.service_ids[-1]
        stopped = next(a for a in sc.mongos if sc.call(lambda c, _n, a=a: c.fronts[a].member(a).process_id) == used)
        sc.stop_mongos(stopped)
        coll.update_one({"_id": 0}, {"$inc": {"n": 1}})
        assert coll.find_one({"_id": 0}) == {"_id": 0, "n": 1}
        assert recorder.cleared == [used]
        assert recorder.service_ids[-1] != used
    finally:
        client.close()
        for mongos in sc.mongos:
            sc.restart_mongos(mongos)

