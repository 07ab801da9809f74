"""The simulator's load balancer front (``SimulatedReplicaSet(load_balanced=True)``, ``mongo-sansio
sim --load-balanced``) with PyMongo as an independent peer, and our clients on every runtime:
the same scenario -- topology LoadBalanced, serviceId on command events, a cursor and a
transaction each keeping one connection until they end, a retried write across a stepdown
applied once -- passes with PyMongo and with ours.  A client not in load-balanced mode is
refused as mongos refuses it (354).  One simulated deployment serves the whole module.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import pymongo
import pytest
from integration_helpers import cli_process, first_line_uri
from pool_recorder import PoolRecorder as Recorder
from runtime_round_trip import RUNTIMES

from mongo_sansio.adapters.sim import SimulatedReplicaSet

SYNC_CLIENTS = ["pymongo", "blocking", "gevent"]
ASYNC_CLIENTS = ["asyncio", "trio"]


@pytest.fixture(scope="module")
def lb() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=3, load_balanced=True) as simulator:
        yield simulator


def _sync_client_class(kind: str) -> Any:
    if kind == "pymongo":
        return pymongo.MongoClient
    if kind == "gevent":
        pytest.importorskip("gevent", reason="the gevent extra is not installed")
        from mongo_sansio.adapters.gevent import MongoClient
    else:
        from mongo_sansio.adapters.blocking import MongoClient
    return MongoClient


def _scenario(client: Any, recorder: Recorder, name: str) -> None:
    """The load-balanced scenario on a synchronous client (PyMongo's API)."""
    assert client.topology_description.topology_type_name == "LoadBalanced"
    coll = client.lb_test[name]
    coll.drop()
    coll.insert_many([{"_id": i} for i in range(5)])
    assert recorder.service_ids and all(s is not None for s in recorder.service_ids)
    assert recorder.checked_out == 0
    cursor = coll.find(batch_size=2)
    assert next(cursor)["_id"] == 0
    assert recorder.checked_out == 1  # the cursor keeps its connection for its getMores
    assert [d["_id"] for d in cursor] == [1, 2, 3, 4]
    assert recorder.checked_out == 0  # drained: given back
    cursor = coll.find(batch_size=2)
    next(cursor)
    cursor.close()
    assert recorder.checked_out == 0  # closed: killCursors, then given back
    with client.start_session() as session:
        with session.start_transaction():
            coll.insert_one({"_id": "committed"}, session=session)
            assert recorder.checked_out == 1  # pinned to the transaction
            coll.insert_one({"_id": "committed-too"}, session=session)
        session.start_transaction()
        coll.insert_one({"_id": "aborted"}, session=session)
        session.abort_transaction()
        assert recorder.checked_out == 0
    assert sorted(str(d["_id"]) for d in coll.find({"_id": {"$type": "string"}})) == [
        "committed", "committed-too"
    ]


@pytest.mark.parametrize("kind", SYNC_CLIENTS)
def test_load_balanced_scenario_with_synchronous_clients(lb: SimulatedReplicaSet, kind: str) -> None:
    recorder = Recorder()
    client = _sync_client_class(kind)(lb.uri, event_listeners=[recorder], serverSelectionTimeoutMS=10000)
    try:
        _scenario(client, recorder, f"scenario_{kind}")
    finally:
        client.close()


@pytest.mark.parametrize("runtime", ASYNC_CLIENTS)
def test_load_balanced_scenario_with_async_clients(lb: SimulatedReplicaSet, runtime: str) -> None:
    async def main() -> None:
        if runtime == "asyncio":
            from mongo_sansio.adapters.asyncio import AsyncMongoClient
        else:
            from mongo_sansio.adapters.trio import AsyncMongoClient
        recorder = Recorder()
        client = AsyncMongoClient(lb.uri, event_listeners=[recorder], serverSelectionTimeoutMS=10000)
        try:
            coll = client.lb_test[f"scenario_{runtime}"]
            await coll.drop()
            await coll.insert_many([{"_id": i} for i in range(5)])
            assert all(s is not None for s in recorder.service_ids)
            cursor = coll.find(batch_size=2)
            assert (await cursor.next())["_id"] == 0
            assert recorder.checked_out == 1
            assert [d["_id"] async for d in cursor] == [1, 2, 3, 4]
            assert recorder.checked_out == 0
            async with client.start_session() as session:
                await session.start_transaction()
                await coll.insert_one({"_id": "committed"}, session=session)
                assert recorder.checked_out == 1
                await session.commit_transaction()
            assert recorder.checked_out == 0  # the session ended: its connection went back
            assert await coll.count_documents({"_id": "committed"}) == 1
        finally:
            await client.close()

    if runtime == "asyncio":
        import asyncio

        asyncio.run(main())
    else:
        trio = pytest.importorskip("trio")
        trio.run(main)


@pytest.mark.parametrize("kind", ["pymongo", "blocking"])
def test_writes_across_a_stepdown_and_a_primary_stop_are_applied_once(
    lb: SimulatedReplicaSet, kind: str
) -> None:
    """After a stepdown the routers send the pooled connections' commands to the new primary;
    when the primary stops, its connections drop: the client clears that service's
    connections only (a PoolClearedEvent with its serviceId) and the retried write reaches
    the next primary through the front, once."""
    recorder = Recorder()
    client = _sync_client_class(kind)(lb.uri, event_listeners=[recorder], serverSelectionTimeoutMS=10000)
    stopped = None
    try:
        coll = client.lb_test[f"stepdown_{kind}"]
        coll.drop()
        coll.insert_one({"_id": 0})
        lb.step_down()
        coll.update_one({"_id": 0}, {"$inc": {"n": 1}})
        assert not recorder.cleared
        stopped = lb.primary
        assert stopped is not None
        lb.stop(stopped)
        coll.update_one({"_id": 0}, {"$inc": {"n": 1}})
        assert coll.find_one({"_id": 0}) == {"_id": 0, "n": 2}
        assert recorder.cleared and all(s is not None for s in recorder.cleared)
    finally:
        client.close()
        if stopped is not None:
            lb.restart(stopped)


@pytest.mark.parametrize("kind", ["pymongo", "blocking"])
def test_a_client_not_in_load_balanced_mode_is_refused(lb: SimulatedReplicaSet, kind: str) -> None:
    assert lb.load_balancer is not None
    client = _sync_client_class(kind)(
        f"mongodb://{lb.load_balancer}/?directConnection=true", serverSelectionTimeoutMS=1000
    )
    try:
        with pytest.raises(Exception, match="load balanc"):
            client.admin.command("ping")
    finally:
        client.close()


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_every_runtime_round_trips_through_the_front(lb: SimulatedReplicaSet, runtime: str) -> None:
    from runtime_round_trip import round_trip

    assert round_trip(runtime, lb.uri) == {"_id": runtime}


def test_a_load_balancer_fronts_a_replica_set_only(capsys: pytest.CaptureFixture[str]) -> None:
    from mongo_sansio.adapters.cli import main

    with pytest.raises(ValueError, match="not a standalone"):
        SimulatedReplicaSet(standalone=True, load_balanced=True)
    with pytest.raises(SystemExit) as caught:
        main(["sim", "--standalone", "--load-balanced"])
    assert caught.value.code == 2 and "--load-balanced" in capsys.readouterr().err


def test_the_sim_command_serves_a_load_balancer() -> None:
    with cli_process("sim", "--load-balanced", "--members", "1", "--port", "0") as process:
        uri = first_line_uri(process)
        assert uri.endswith("/?loadBalanced=true") and "," not in uri
        client: pymongo.MongoClient[Any] = pymongo.MongoClient(uri, serverSelectionTimeoutMS=10000)
        try:
            client.test.things.insert_one({"from": "cli"})
            assert client.test.things.count_documents({}) == 1
            assert client.topology_description.topology_type_name == "LoadBalanced"
        finally:
            client.close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
