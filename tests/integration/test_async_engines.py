"""The async engine on asyncio and on trio against the simulated replica set.

Every scenario runs on both runtimes (:mod:`async_kit`): discovery and CRUD through the core's
flows, a change stream, a stepdown seen by the streaming monitors, timeouts (timeoutMS and the
``timeout()`` block, a context variable that follows each task), a monitor blocked on an
awaitable hello woken when an operation's network error clears the pool, the engine's life
cycle (tasks started outside a loop, ``async with``, close), no thread started, and a kill
storm: hundreds of operations cancelled at random moments against ``maxPoolSize=1``, after
which the client must still serve every operation promptly.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from async_kit import CANCELLED, KITS, Kit
from integration_helpers import fail_once, trusted_tls

from mongo_sansio.adapters._async_engine import AsyncEngine
from mongo_sansio.adapters._timeout import timeout
from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.cmap.events import ConnectionClosed, PoolCleared
from mongo_sansio.cursors import (
    ChangeStream,
    ChangeStreamOptions,
    ChangeStreamTarget,
    change_stream_close,
    change_stream_next,
    change_stream_open,
    cursor_next,
)
from mongo_sansio.errors import MongoError, NetworkError
from mongo_sansio.ops.database import DatabaseOps
from mongo_sansio.sdam.description import ServerType
from mongo_sansio.sdam.events import ServerHeartbeatStartedEvent
from mongo_sansio.selection.read_preference import PRIMARY

COLLECTION = DatabaseOps("test").get_collection("items")

#: The kill storm's figures, printed at the end of the test (``pytest -s`` shows them).
STORM_OPERATIONS = 200


@pytest.fixture(params=KITS, ids=lambda kit: kit.name)
def kit(request: pytest.FixtureRequest) -> Kit:
    kit: Kit = request.param
    if not kit.available:
        pytest.skip(f"{kit.name} is not installed (an optional event loop)")
    return kit


def primary_of(engine: AsyncEngine) -> tuple[str, int] | None:
    for server in engine.core.description.servers.values():
        if server.type is ServerType.RS_PRIMARY:
            return engine.core.transport_address(server.address)
    return None


def all_known(engine: AsyncEngine) -> bool:
    servers = engine.core.description.servers.values()
    return len(servers) == 3 and all(server.is_known for server in servers)


def in_use(engine: AsyncEngine) -> int:
    return sum(engine.core.in_use_counts().values())


def block_next_find(rs: SimulatedReplicaSet, milliseconds: int) -> None:
    fail_once(rs, "find", blockConnection=True, blockTimeMS=milliseconds)


@pytest.fixture
def started_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the threads started during the test, the simulator's own left out."""
    started: list[str] = []
    original = threading.Thread.start

    def start(thread: threading.Thread) -> None:
        if not thread.name.startswith("sim-"):
            started.append(thread.name)
        original(thread)

    monkeypatch.setattr(threading.Thread, "start", start)
    yield started


def test_discovery_insert_and_find_across_batches(kit: Kit, rs: SimulatedReplicaSet) -> None:
    async def main() -> None:
        async with kit.engine(rs.uri) as engine:
            await engine.run(COLLECTION.insert_many([{"_id": i} for i in range(7)]))
            cursor = await engine.run(COLLECTION.find({}, sort={"_id": 1}, batch_size=2))
            found = []
            while (document := await engine.run(cursor_next(cursor))) is not None:
                found.append(document["_id"])
            assert found == list(range(7))
            await kit.wait_for(lambda: all_known(engine), 5)
            assert primary_of(engine) == tuple(_split(rs.primary))
            assert in_use(engine) == 0

    kit.run(main)


def test_tls_to_the_simulated_set(kit: Kit, tmp_path: Path) -> None:
    """The runtime's context comes from the client's TLS settings (tlsCAFile verified)."""
    tls = trusted_tls(tmp_path)
    with SimulatedReplicaSet(members=2, tls=tls.server_context) as rs:

        async def main() -> Any:
            async with kit.engine(rs.uri, tls=True, tlsCAFile=tls.ca_file) as engine:
                await engine.run(COLLECTION.insert_one({"_id": "secret"}))
                return await engine.run(COLLECTION.find_one({"_id": "secret"}))

        assert kit.run(main) == {"_id": "secret"}

        async def untrusted() -> None:
            engine = kit.engine(rs.uri, serverSelectionTimeoutMS=500)  # plain TCP to TLS
            with pytest.raises(MongoError):
                await engine.run(COLLECTION.find_one({}))
            await engine.aclose()

        kit.run(untrusted)


def test_change_stream_returns_each_insert_once(kit: Kit, rs: SimulatedReplicaSet) -> None:
    async def main() -> None:
        async with kit.engine(rs.uri) as engine:
            await engine.run(COLLECTION.insert_one({"_id": "before"}))
            stream = ChangeStream(
                ChangeStreamTarget.collection("test", "items"),
                [],
                ChangeStreamOptions(max_await_time_ms=200),
                PRIMARY,
            )
            await engine.run(change_stream_open(stream))

            async def watch() -> list[Any]:
                return [
                    (await engine.run(change_stream_next(stream)))["documentKey"]["_id"]
                    for _ in range(3)
                ]

            async def write() -> None:
                for i in range(3):
                    await kit.sleep(0.05)
                    await engine.run(COLLECTION.insert_one({"_id": i}))

            seen, _ = await kit.gather(watch, write)
            assert seen == [0, 1, 2]
            await engine.run(change_stream_close(stream))
            assert not stream.alive
            assert in_use(engine) == 0

    kit.run(main)


def test_stepdown_is_seen_by_the_background_monitors(kit: Kit, rs: SimulatedReplicaSet) -> None:
    async def main() -> None:
        # heartbeatFrequencyMS=10 s: only the streaming monitors explain a discovery in 3 s
        async with kit.engine(rs.uri, heartbeatFrequencyMS=10_000) as engine:
            await engine.run(COLLECTION.insert_one({"x": 1}))
            await kit.wait_for(lambda: all_known(engine), 5)
            old = primary_of(engine)
            rs.step_down()
            new = rs.primary
            assert new is not None and tuple(_split(new)) != old
            took = await kit.wait_for(lambda: primary_of(engine) == tuple(_split(new)), 3.0)
            assert took < 3.0
            await engine.run(COLLECTION.insert_one({"x": 2}))  # to the new primary

    kit.run(main)


def test_timeout_ms_bounds_a_blocked_find(kit: Kit, rs: SimulatedReplicaSet) -> None:
    async def main() -> None:
        async with kit.engine(rs.uri, timeoutMS=400) as engine:
            await engine.run(COLLECTION.insert_one({"_id": 1}))
            block_next_find(rs, 3000)
            start = time.monotonic()
            with pytest.raises(MongoError) as info:
                await engine.run(COLLECTION.find_one({"_id": 1}))
            assert time.monotonic() - start < 1.5
            assert info.value.timeout is True, repr(info.value)
            assert await engine.run(COLLECTION.find_one({"_id": 1})) == {"_id": 1}
            assert in_use(engine) == 0

    kit.run(main)


def test_timeout_block_bounds_only_its_own_task(kit: Kit, rs: SimulatedReplicaSet) -> None:
    async def main() -> None:
        async with kit.engine(rs.uri) as engine:
            await engine.run(COLLECTION.insert_one({"_id": 1}))
            block_next_find(rs, 2000)

            async def bounded() -> object:
                with timeout(0.3):
                    try:
                        await engine.run(COLLECTION.find_one({"_id": 1}))
                    except MongoError as exc:
                        return exc.timeout
                return "no error"

            async def unbounded() -> object:
                await kit.sleep(0.1)  # after the blocked find took the failpoint
                return await engine.run(COLLECTION.find_one({"_id": 1}))

            start = time.monotonic()
            assert await kit.gather(bounded, unbounded) == [True, {"_id": 1}]
            assert time.monotonic() - start < 1.5

    kit.run(main)


def test_pool_clear_wakes_the_monitor_blocked_on_an_awaitable_hello(
    kit: Kit, rs: SimulatedReplicaSet
) -> None:
    """A network error of an operation clears the pool and cancels the primary's check: its
    monitor, blocked reading an awaitable hello, must wake at once (close_stream) so that it
    can check again when asked, not when the streamed reply comes 10 s later."""
    events: list[object] = []

    async def main() -> None:
        engine = kit.engine(rs.uri, events=events, heartbeatFrequencyMS=10_000, retryReads=False)
        async with engine:
            await engine.run(COLLECTION.insert_one({"_id": 1}))
            await kit.wait_for(lambda: all_known(engine), 5)
            found = primary_of(engine)
            assert found is not None
            primary = f"{found[0]}:{found[1]}"  # pool events name servers as "host:port"

            def awaiting() -> bool:
                starts = [e for e in events if isinstance(e, ServerHeartbeatStartedEvent)]
                return any(e.awaited and e.connection_id == found for e in starts)

            await kit.wait_for(awaiting, 5)  # the monitor now waits on a streamed hello
            await kit.sleep(0.1)
            fail_once(rs, "find", closeConnection=True)
            mark = len(events)
            with pytest.raises(NetworkError):
                await engine.run(COLLECTION.find_one({"_id": 1}))
            assert [e.address for e in events[mark:] if isinstance(e, PoolCleared)] == [primary]

            # the server is unknown now: selecting it asks its monitor for a check at once,
            # which the monitor can only start once its blocked read woke up (the streamed
            # reply itself would come 10 s later)
            start = time.monotonic()
            assert await engine.run(COLLECTION.find_one({"_id": 1})) == {"_id": 1}
            assert time.monotonic() - start < 2.0
            assert any(
                isinstance(e, ServerHeartbeatStartedEvent)
                and e.connection_id == found
                and not e.awaited
                for e in events[mark:]
            )

    kit.run(main)


def test_kill_storm_leaves_the_pool_whole(kit: Kit, rs: SimulatedReplicaSet) -> None:
    """200 operations (finds, inserts, updates) from four tasks, each cancelled at a random
    moment, against maxPoolSize=1; then every operation is served promptly."""
    draw = random.Random(f"kill storm {kit.name}")
    events: list[object] = []

    async def main() -> dict[str, float]:
        async with kit.engine(rs.uri, events=events, maxPoolSize=1) as engine:
            await engine.run(COLLECTION.insert_one({"_id": "counter", "n": 0}))
            outcomes: list[object] = []

            async def worker() -> None:
                for _ in range(STORM_OPERATIONS // 4):
                    operation = draw.choice(
                        [
                            COLLECTION.find_one({"_id": "counter"}),
                            COLLECTION.update_one({"_id": "counter"}, {"$inc": {"n": 1}}),
                            COLLECTION.insert_one({"storm": 1}),
                        ]
                    )
                    delay = draw.choice([0.0, draw.uniform(0, 0.002), draw.uniform(0, 0.01)])

                    async def run(operation: Any = operation) -> object:
                        return await engine.run(operation)

                    outcomes.append(await kit.cancel_after(delay, run))

            start = time.monotonic()
            await kit.gather(worker, worker, worker, worker)
            storm = time.monotonic() - start
            cancelled = sum(outcome is CANCELLED for outcome in outcomes)
            assert len(outcomes) == STORM_OPERATIONS
            assert 0 < cancelled < STORM_OPERATIONS, cancelled
            cut = sum(isinstance(e, ConnectionClosed) for e in events)
            assert cut > 0, "no cancellation met a command in flight"

            await kit.wait_for(lambda: in_use(engine) == 0, 1.0)
            pool = engine.core.pool(tuple(_split(rs.primary)))
            assert pool is not None and pool.in_use_connection_count == 0

            latencies = []
            for _ in range(STORM_OPERATIONS):
                began = time.monotonic()
                await engine.run(COLLECTION.update_one({"_id": "counter"}, {"$inc": {"n": 0}}))
                document = await engine.run(COLLECTION.find_one({"_id": "counter"}))
                assert document is not None and document["_id"] == "counter"
                latencies.append(time.monotonic() - began)
            assert max(latencies) < 1.0
            assert in_use(engine) == 0
            return {
                "storm_s": storm,
                "cancelled": cancelled,
                "connections_cut": cut,
                "after_mean_ms": 1000 * sum(latencies) / len(latencies),
                "after_max_ms": 1000 * max(latencies),
            }

    figures = kit.run(main)
    print(f"\nkill storm on {kit.name}: {figures}")


def test_asyncio_engine_built_outside_a_loop_starts_its_tasks_in_it(
    rs: SimulatedReplicaSet,
) -> None:
    import asyncio

    kit = KITS[0]
    engine = kit.engine(rs.uri)  # the core spawned its monitors: they wait for a loop

    async def main() -> list[str]:
        assert await engine.run(COLLECTION.find_one({"_id": "none"})) is None
        await kit.wait_for(lambda: all_known(engine), 5)
        names = [task.get_name() for task in asyncio.all_tasks()]
        await engine.aclose()
        left = [task.get_name() for task in asyncio.all_tasks() if task.get_name() in names]
        return [name for name in left if name.startswith("mongo-sansio")]

    assert kit.run(main) == []


def test_close_ends_every_background_task(kit: Kit, rs: SimulatedReplicaSet) -> None:
    async def main() -> None:
        engine = kit.engine(rs.uri, minPoolSize=2)
        await engine.run(COLLECTION.insert_one({"x": 1}))  # no async with: started lazily
        await kit.wait_for(lambda: all_known(engine), 5)
        start = time.monotonic()
        await engine.aclose()
        assert time.monotonic() - start < 2.0
        with pytest.raises(MongoError):
            await engine.run(COLLECTION.find_one({}))
        assert _running_tasks(kit) == []

    kit.run(main)


def test_trio_cancel_scope_around_the_client_cancels_its_tasks(rs: SimulatedReplicaSet) -> None:
    import trio

    kit = KITS[1]

    async def main() -> None:
        with trio.move_on_after(0.5) as scope:
            async with kit.engine(rs.uri) as engine:
                await engine.run(COLLECTION.insert_one({"x": 1}))
                await trio.sleep(30)  # cancelled with the monitors by the enclosing scope
        assert scope.cancelled_caught
        assert engine.core.closed
        assert _running_tasks(kit) == []

    start = time.monotonic()
    kit.run(main)
    assert time.monotonic() - start < 3.0


def test_an_error_in_the_block_leaves_it_unwrapped(kit: Kit, rs: SimulatedReplicaSet) -> None:
    async def main() -> None:
        with pytest.raises(KeyError):
            async with kit.engine(rs.uri) as engine:
                await engine.run(COLLECTION.insert_one({"x": 1}))
                raise KeyError("mine")
        assert engine.core.closed

    kit.run(main)


def test_no_thread_is_started(
    kit: Kit, started_threads: list[str], rs: SimulatedReplicaSet
) -> None:
    """Numeric hosts on both runtimes; trio also resolves nothing through a thread."""

    async def main() -> None:
        async with kit.engine(rs.uri, minPoolSize=2) as engine:
            await engine.run(COLLECTION.insert_one({"x": 1}))
            cursor = await engine.run(COLLECTION.find({}, batch_size=1))
            assert await engine.run(cursor_next(cursor)) is not None
            await kit.wait_for(lambda: all_known(engine), 5)

    kit.run(main)
    assert started_threads == []


def test_trio_resolves_localhost_without_a_thread(started_threads: list[str]) -> None:
    kit = KITS[1]
    with SimulatedReplicaSet(members=1, advertised_host="localhost") as rs:
        assert "localhost" in rs.uri

        async def main() -> None:
            async with kit.engine(rs.uri) as engine:
                await engine.run(COLLECTION.insert_one({"x": 1}))
                assert await engine.run(COLLECTION.find_one({"x": 1}, projection={"_id": 0}))

        kit.run(main)
    assert started_threads == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_builds_its_own_core_and_runtime(kit: Kit, rs: SimulatedReplicaSet) -> None:
    """The parent used the engine (its pools hold streams) and its event loop ended; a child
    forked then runs the same engine in its own loop: a new core on a new runtime, none of
    the parent's streams touched, the parent's data there."""
    engine = kit.engine(rs.uri)

    async def parent() -> None:
        await engine.run(COLLECTION.insert_one({"_id": "parent"}))

    kit.run(parent)
    inherited_core, inherited_runtime = engine.core, engine.runtime
    pid = os.fork()
    if pid == 0:  # the child: report through the exit status only
        status = 1
        try:

            async def child() -> bool:
                document = await engine.run(COLLECTION.find_one({"_id": "parent"}))
                await engine.run(COLLECTION.insert_one({"_id": "child"}))
                renewed = engine.core is not inherited_core
                renewed = renewed and engine.runtime is not inherited_runtime
                await engine.aclose()
                return renewed and document == {"_id": "parent"}

            status = 0 if kit.run(child) else 2
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    checker = kit.engine(rs.uri)

    async def check() -> Any:
        async with checker:
            return await checker.run(COLLECTION.find_one({"_id": "child"}))

    assert kit.run(check) == {"_id": "child"}


def _running_tasks(kit: Kit) -> list[str]:
    """The engine's tasks still running in this event loop."""
    if kit.family == "asyncio":
        import asyncio

        return [t.get_name() for t in asyncio.all_tasks() if "mongo-sansio" in t.get_name()]
    import trio

    found: list[str] = []

    def walk(task: Any) -> None:
        for nursery in task.child_nurseries:
            for child in nursery.child_tasks:
                if "mongo-sansio" in child.name:
                    found.append(child.name)
                walk(child)

    walk(trio.lowlevel.current_root_task())
    return found


def _split(address: str | None) -> tuple[str, int]:
    assert address is not None
    host, port = address.rsplit(":", 1)
    return host, int(port)
