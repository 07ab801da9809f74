"""Tailable cursors end an iteration on an empty getMore and stay alive, as PyMongo's do.

A tailable cursor on a capped collection with nothing new used to send getMores back to back
forever (100% CPU).  PyMongo's iteration ends at the first empty batch while ``alive`` stays
true, and a later loop over the same cursor reads what was inserted since; a tailable-await
cursor's getMore waits ``maxAwaitTimeMS`` on the server, and its iteration ends the same way.
Checked on the blocking, asyncio and trio clients by counting the getMores a loop sends.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from async_kit import KITS, Kit

import mongo_sansio.adapters.asyncio as asyncio_client
import mongo_sansio.adapters.blocking as blocking_client
import mongo_sansio.adapters.trio as trio_client
from mongo_sansio import monitoring
from mongo_sansio.adapters.sim import SimulatedReplicaSet

OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 5000}


class GetMores(monitoring.CommandListener):
    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name == "getMore":
            with self.lock:
                self.count += 1

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


def _tail(collection: Any, cursor_type: str, module: Any) -> Any:
    """A tailable cursor over ``collection`` (a tailable-await one waits 50 ms a getMore)."""
    kind = getattr(module.CursorType, cursor_type)
    cursor = collection.find({}, cursor_type=kind, batch_size=2)
    if cursor_type == "TAILABLE_AWAIT":
        cursor = cursor.max_await_time_ms(50)
    return cursor


def _pymongo_client(uri: str, getmores: GetMores) -> Any:
    pymongo = pytest.importorskip("pymongo", reason="the reference run needs pymongo")
    from pymongo import monitoring as pymongo_monitoring

    class Listener(pymongo_monitoring.CommandListener):
        def started(self, event: Any) -> None:
            getmores.started(event)

        def succeeded(self, event: Any) -> None:
            pass

        def failed(self, event: Any) -> None:
            pass

    return pymongo.MongoClient(uri, event_listeners=[Listener()], **OPTIONS), pymongo


@pytest.mark.parametrize("side", ["ours", "pymongo"])
@pytest.mark.parametrize("cursor_type", ["TAILABLE", "TAILABLE_AWAIT"])
def test_blocking_tailable_iteration_ends_and_resumes(
    rs: SimulatedReplicaSet, clients: list[Any], cursor_type: str, side: str
) -> None:
    """The same scenario on PyMongo's client (the reference) and on ours."""
    getmores = GetMores()
    if side == "pymongo":
        client, module = _pymongo_client(rs.uri, getmores)
    else:
        client = blocking_client.MongoClient(rs.uri, event_listeners=[getmores], **OPTIONS)
        module = blocking_client
    clients.append(client)
    db = client.tailing
    db.drop_collection("log")
    log = db.create_collection("log", capped=True, size=100_000)
    log.insert_many([{"_id": i} for i in range(3)])
    cursor = _tail(log, cursor_type, module)
    assert [doc["_id"] for doc in cursor] == [0, 1, 2]
    # the first batch (2), one getMore for the third, then one empty getMore: the loop ended
    assert getmores.count <= 2
    assert cursor.alive
    before = getmores.count
    assert list(cursor) == []  # nothing new: one getMore, no spin
    assert getmores.count - before == 1 and cursor.alive
    log.insert_one({"_id": 3})
    assert [doc["_id"] for doc in cursor] == [3]
    assert cursor.alive
    cursor.close()
    assert not cursor.alive


CLIENT_MODULES = {"asyncio": asyncio_client, "trio": trio_client}


@pytest.mark.parametrize(
    "kit",
    [
        pytest.param(
            kit,
            id=kit.name,
            marks=pytest.mark.skipif(not kit.available, reason=f"{kit.name} is not installed"),
        )
        for kit in KITS
    ],
)
@pytest.mark.parametrize("cursor_type", ["TAILABLE", "TAILABLE_AWAIT"])
def test_async_tailable_iteration_ends_and_resumes(
    rs: SimulatedReplicaSet, kit: Kit, cursor_type: str
) -> None:
    module = CLIENT_MODULES[kit.family]

    async def main() -> None:
        getmores = GetMores()
        client = module.AsyncMongoClient(rs.uri, event_listeners=[getmores], **OPTIONS)
        try:
            db = client.tailing
            await db.drop_collection("log")
            log = await db.create_collection("log", capped=True, size=100_000)
            await log.insert_many([{"_id": i} for i in range(3)])
            cursor = _tail(log, cursor_type, module)
            assert [doc["_id"] async for doc in cursor] == [0, 1, 2]
            assert getmores.count <= 2 and cursor.alive
            before = getmores.count
            assert await cursor.to_list() == []
            assert getmores.count - before == 1 and cursor.alive
            await log.insert_one({"_id": 3})
            assert [doc["_id"] async for doc in cursor] == [3]
            await cursor.close()
        finally:
            await client.close()

    kit.run(main)
