"""PyMongo's async API (``AsyncMongoClient``) on asyncio, trio (and uvloop when installed)
against the simulated replica set.

Every scenario runs on each runtime's client (``mongo_sansio.adapters.asyncio`` /
``.trio``), through the event loop of :mod:`async_kit`: CRUD across batches with cursors read
by ``async for`` and ``to_list``, a change stream that sees every change exactly once across a
resumable error, a dropped connection and a concurrent writer, transactions (``async with
await s.start_transaction()`` and ``with_transaction`` with a coroutine function retried after
a transient error), retryable writes from many tasks across a stepdown, timeouts (the client's
and a collection's timeoutMS, a ``timeout()`` block), a cancellation storm against
``maxPoolSize=1`` after which everything is served promptly, monitoring listeners and errors,
and no thread started by the client for a numeric host.
"""

from __future__ import annotations

import inspect
import random
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from async_kit import CANCELLED, KITS, Kit
from event_counts import EventCounts

import mongo_sansio.adapters.asyncio as asyncio_client
import mongo_sansio.adapters.blocking as blocking_client
import mongo_sansio.adapters.trio as trio_client
from mongo_sansio import monitoring
from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.errors import DuplicateKeyError, MongoError, OperationFailure

pytestmark = pytest.mark.parametrize(
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

OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 5000, "connectTimeoutMS": 3000}
CLIENT_MODULES = {"asyncio": asyncio_client, "trio": trio_client}
STORM_OPERATIONS = 200


def module_of(kit: Kit) -> ModuleType:
    return CLIENT_MODULES[kit.family]


def client_of(kit: Kit, uri: str, **options: Any) -> Any:
    client_class = module_of(kit).AsyncMongoClient
    return client_class(uri, **{**OPTIONS, **options})


def fail_next(rs: SimulatedReplicaSet, commands: list[str], **data: Any) -> None:
    """A failCommand failpoint on the primary for the next of ``commands``."""
    primary = rs.primary
    assert primary is not None
    failpoint = {"failCommands": commands, **data}
    rs.configure_failpoint(
        primary, {"configureFailPoint": "failCommand", "mode": {"times": 1}, "data": failpoint}
    )


def checked_out(client: Any) -> int:
    return sum(client.engine.core.in_use_counts().values())


# -- the API ----------------------------------------------------------------------------------


def test_each_client_module_exports_the_blocking_ones_values(kit: Kit) -> None:
    module = module_of(kit)
    values = set(blocking_client.__all__) - {
        "MongoClient",
        "Database",
        "Collection",
        "Cursor",
        "CommandCursor",
        "RawBatchCursor",
        "RawBatchCommandCursor",
        "ChangeStream",
        "Engine",
    }
    for name in values:
        assert getattr(module, name) is getattr(blocking_client, name), name
    for name in ("AsyncMongoClient", "AsyncDatabase", "AsyncCollection", "AsyncCursor"):
        assert name in module.__all__ and getattr(module, name) is not None
    assert module.AsyncMongoClient is not blocking_client.MongoClient


def test_crud_across_batches(kit: Kit, rs: SimulatedReplicaSet) -> None:
    async def main() -> None:
        async with client_of(kit, rs.uri) as client:
            items = client.test.items
            assert inspect.iscoroutinefunction(items.insert_one)
            inserted = await items.insert_many([{"_id": i, "n": i % 3} for i in range(25)])
            assert inserted.inserted_ids == list(range(25))
            cursor = items.find({}, batch_size=4).sort("_id")  # not awaited: opens lazily
            assert [document["_id"] async for document in cursor] == list(range(25))
            assert not cursor.alive and cursor.retrieved == 25
            assert len(await items.find({"n": 1}, batch_size=2).to_list(3)) == 3
            with pytest.raises(IndexError):
                items.find()[0]
            updated = await items.update_many({"n": 2}, {"$set": {"n": 9}})
            assert (updated.matched_count, updated.modified_count) == (8, 8)
            assert await items.count_documents({"n": 9}) == 8
            assert sorted(await items.distinct("n")) == [0, 1, 9]
            after = await items.find_one_and_update(
                {"_id": 0}, {"$inc": {"n": 5}}, return_document=module_of(kit).ReturnDocument.AFTER
            )
            assert after == {"_id": 0, "n": 5}
            await items.replace_one({"_id": 1}, {"replaced": True})
            assert await items.find_one({"_id": 1}) == {"_id": 1, "replaced": True}
            bulk = await items.bulk_write(
                [
                    module_of(kit).InsertOne({"_id": 100}),
                    module_of(kit).UpdateOne({"_id": 100}, {"$set": {"n": 1}}),
                    module_of(kit).DeleteOne({"_id": 2}),
                ]
            )
            assert (bulk.inserted_count, bulk.modified_count, bulk.deleted_count) == (1, 1, 1)
            assert (await items.delete_many({"n": 9})).deleted_count == 7  # _id 2 went in bulk
            aggregate = await items.aggregate([{"$sort": {"_id": 1}}], batchSize=5)
            async with aggregate:
                documents = [document async for document in aggregate]
            assert len(documents) == await items.estimated_document_count() == 18
            assert await items.create_index("n") == "n_1"
            indexes = await (await items.list_indexes()).to_list()
            assert {index["name"] for index in indexes} == {"_id_", "n_1"}
            assert "items" in await client.test.list_collection_names()
            assert "test" in await client.list_database_names()
            assert (await client.test.command("ping"))["ok"] == 1
            with pytest.raises(DuplicateKeyError):
                await items.insert_one({"_id": 100})
            await items.drop()
            assert await items.find_one() is None

    kit.run(main)


def test_monitoring_listeners_and_the_deployment_as_seen(kit: Kit, rs: SimulatedReplicaSet) -> None:
    started: list[str] = []

    class Commands(monitoring.CommandListener):
        def started(self, event: monitoring.CommandStartedEvent) -> None:
            started.append(event.command_name)

    async def main() -> None:
        client = client_of(kit, rs.uri, event_listeners=[Commands()])
        try:
            await client.aconnect()
            await client.test.things.insert_one({"x": 1})
            assert started.count("insert") == 1
            assert await client.address == await client.primary
            assert await client.is_primary and not await client.is_mongos
            assert len(await client.secondaries) == 2
            assert (await client.server_info())["ok"] == 1
        finally:
            await client.close()
        with pytest.raises(MongoError):
            await client.test.things.find_one()

    kit.run(main)


# -- change streams -----------------------------------------------------------------------------


def test_a_change_stream_sees_every_change_once(kit: Kit, rs: SimulatedReplicaSet) -> None:
    """Across a resumable getMore error, a dropped connection and a writer task running
    alongside the reader: every insert once, in order."""

    aggregates: list[str] = []

    class Aggregates(monitoring.CommandListener):
        def started(self, event: monitoring.CommandStartedEvent) -> None:
            if event.command_name == "aggregate":
                aggregates.append(event.command_name)

    async def main() -> None:
        async with client_of(kit, rs.uri, event_listeners=[Aggregates()]) as client:
            things = client.test.things
            seen: list[int] = []
            stream = await things.watch(max_await_time_ms=50)
            async with stream:
                await things.insert_many([{"_id": i} for i in range(3)])
                for _ in range(3):
                    seen.append((await stream.next())["documentKey"]["_id"])
                fail_next(rs, ["getMore"], errorCode=2, errorLabels=["ResumableChangeStreamError"])
                await things.insert_many([{"_id": i} for i in range(3, 6)])
                async for change in stream:
                    seen.append(change["documentKey"]["_id"])
                    if len(seen) == 6:
                        break
                fail_next(rs, ["getMore"], closeConnection=True)

                async def write() -> None:
                    for i in range(6, 30):
                        await things.insert_one({"_id": i})
                        await kit.sleep(0.002)

                async def read() -> None:
                    while len(seen) < 30:
                        change = await stream.try_next()
                        if change is not None:
                            seen.append(change["documentKey"]["_id"])

                await kit.gather(read, write)
            assert seen == list(range(30))
            assert len(aggregates) == 3  # opened, then resumed twice
            assert not stream.alive and await stream.try_next() is None

    kit.run(main)


# -- sessions and transactions ----------------------------------------------------------------


def test_transactions_commit_whole_abort_on_error_and_retry_their_callback(
    kit: Kit, rs: SimulatedReplicaSet
) -> None:
    async def main() -> None:
        async with client_of(kit, rs.uri) as client:
            accounts = client.bank.accounts
            await accounts.insert_many([{"_id": "a", "n": 10}, {"_id": "b", "n": 0}])
            async with client.start_session() as session:
                async with await session.start_transaction():
                    await accounts.update_one({"_id": "a"}, {"$inc": {"n": -4}}, session=session)
                    assert session.in_transaction
                    await accounts.update_one({"_id": "b"}, {"$inc": {"n": 4}}, session=session)
                assert not session.in_transaction
                with pytest.raises(KeyError):
                    async with await session.start_transaction():
                        await accounts.update_one({"_id": "a"}, {"$set": {"n": 0}}, session=session)
                        raise KeyError("abandon")
                calls: list[int] = []

                async def move(s: Any) -> str:
                    calls.append(1)
                    await accounts.update_one({"_id": "a"}, {"$inc": {"n": -1}}, session=s)
                    await accounts.update_one({"_id": "b"}, {"$inc": {"n": 1}}, session=s)
                    return "moved"

                fail_next(rs, ["update"], errorCode=112, errorLabels=["TransientTransactionError"])
                assert await session.with_transaction(move) == "moved"
                assert len(calls) == 2  # the first attempt hit the transient error
            assert session.has_ended
            balances = {d["_id"]: d["n"] async for d in accounts.find()}
            assert balances == {"a": 5, "b": 5}

    kit.run(main)


def test_retryable_writes_from_many_tasks_across_a_stepdown(
    kit: Kit, rs: SimulatedReplicaSet
) -> None:
    writers, per_writer = 20, 10
    arrived: list[int] = []
    released: list[bool] = []

    async def main() -> None:
        async with client_of(kit, rs.uri) as client:
            things, counters = client.db.things, client.db.counters
            await counters.insert_one({"_id": "total", "n": 0})

            def writer(number: int) -> Callable[[], Any]:
                async def write() -> None:
                    for i in range(per_writer):
                        if i == per_writer // 2:
                            arrived.append(number)
                            await kit.wait_for(lambda: released, 10)
                        await things.insert_one({"_id": f"{number}-{i}"})
                        await counters.update_one({"_id": "total"}, {"$inc": {"n": 1}})

                return write

            async def step_down() -> None:
                await kit.wait_for(lambda: len(arrived) == writers, 10)
                rs.step_down()
                released.append(True)

            old_primary = rs.primary
            await kit.gather(step_down, *(writer(n) for n in range(writers)))
            assert rs.primary not in (None, old_primary)
            ids = sorted([document["_id"] async for document in things.find({})])
            assert ids == sorted(f"{n}-{i}" for n in range(writers) for i in range(per_writer))
            total = await counters.find_one({"_id": "total"})
            assert total == {"_id": "total", "n": writers * per_writer}

    kit.run(main)


# -- timeouts and cancellation ------------------------------------------------------------------


def test_timeouts_bound_blocked_operations_and_leave_the_pool_whole(
    kit: Kit, rs: SimulatedReplicaSet
) -> None:
    async def bounded(operation: Callable[[], Any]) -> float:
        started = time.monotonic()
        with pytest.raises(MongoError) as caught:
            await operation()
        assert caught.value.timeout, caught.value
        return time.monotonic() - started

    async def main() -> None:
        async with client_of(kit, rs.uri, timeoutMS=300) as client:
            things = client.test.things
            await things.insert_one({"_id": 1})
            fail_next(rs, ["find"], blockConnection=True, blockTimeMS=2000)
            assert await bounded(lambda: things.find_one({"_id": 1})) < 1.5  # the client's
            quick = things.database.get_collection("things", timeoutMS=150)
            fail_next(rs, ["find"], blockConnection=True, blockTimeMS=2000)
            assert await bounded(lambda: quick.find_one({"_id": 1})) < 1.0  # the collection's

            async def in_a_block() -> Any:
                with module_of(kit).timeout(0.1):
                    return await things.find_one({"_id": 1})

            fail_next(rs, ["find"], blockConnection=True, blockTimeMS=2000)
            assert await bounded(in_a_block) < 1.0
            await kit.wait_for(lambda: checked_out(client) == 0, 2.0)
            started = time.monotonic()
            assert await things.find_one({"_id": 1}) == {"_id": 1}
            assert time.monotonic() - started < 0.5

    kit.run(main)


def test_cancellation_storm_against_one_connection(kit: Kit, rs: SimulatedReplicaSet) -> None:
    """200 operations of the client API from four tasks, each cancelled at a random moment
    against maxPoolSize=1; then nothing is checked out and every operation is served
    promptly."""
    draw = random.Random(f"async client storm {kit.name}")
    pool_events = EventCounts()

    async def main() -> dict[str, float]:
        async with client_of(kit, rs.uri, maxPoolSize=1, event_listeners=[pool_events]) as client:
            things = client.test.storm
            await things.insert_many([{"_id": i, "n": 0} for i in range(20)])
            operations: list[Callable[[], Any]] = [
                lambda: things.find_one({"_id": draw.randrange(20)}),
                lambda: things.update_one({"_id": draw.randrange(20)}, {"$inc": {"n": 1}}),
                lambda: things.insert_one({"storm": True}),
                lambda: things.find({}, batch_size=3).to_list(),
                lambda: things.count_documents({}),
            ]
            outcomes: list[object] = []

            async def worker() -> None:
                for _ in range(STORM_OPERATIONS // 4):
                    delay = draw.choice([0.0, draw.uniform(0, 0.002), draw.uniform(0, 0.01)])
                    outcomes.append(await kit.cancel_after(delay, draw.choice(operations)))

            began = time.monotonic()
            await kit.gather(worker, worker, worker, worker)
            storm = time.monotonic() - began
            cancelled = sum(outcome is CANCELLED for outcome in outcomes)
            assert len(outcomes) == STORM_OPERATIONS and 0 < cancelled < STORM_OPERATIONS
            cut = pool_events.counts["ConnectionClosedEvent"]
            assert cut > 0, "no cancellation met a command in flight"
            await kit.wait_for(lambda: checked_out(client) == 0, 1.0)
            latencies = []
            for i in range(50):
                began = time.monotonic()
                await things.update_one({"_id": i % 20}, {"$inc": {"n": 0}})
                assert len(await things.find({}, batch_size=7).to_list()) >= 20
                latencies.append(time.monotonic() - began)
            assert max(latencies) < 1.0 and checked_out(client) == 0
            return {
                "storm_s": round(storm, 3),
                "cancelled": cancelled,
                "connections_cut": cut,
                "after_mean_ms": round(1000 * sum(latencies) / len(latencies), 2),
                "after_max_ms": round(1000 * max(latencies), 2),
            }

    print(f"\nasync client cancellation storm on {kit.name}: {kit.run(main)}")


# -- threads ------------------------------------------------------------------------------------


@pytest.fixture
def thread_names(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of every thread started during the test."""
    names: list[str] = []
    start = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", lambda t: (names.append(t.name), start(t))[1])
    return names


def test_no_thread_is_started_for_a_numeric_host(
    kit: Kit, rs: SimulatedReplicaSet, thread_names: list[str]
) -> None:
    async def main() -> None:
        async with client_of(kit, rs.uri, minPoolSize=2) as client:
            things = client.test.things
            stream = await things.watch(max_await_time_ms=50)
            async with stream, client.start_session() as session:
                await things.insert_many([{"_id": i} for i in range(5)], session=session)
                assert len(await things.find({}, batch_size=2).to_list()) == 5
                assert (await stream.next())["documentKey"] == {"_id": 0}
            with pytest.raises(OperationFailure):
                await client.test.command("noSuchCommand")

    kit.run(main)
    assert [name for name in thread_names if not name.startswith("sim-")] == []
