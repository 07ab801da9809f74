"""The gevent client (mongo_sansio.adapters.gevent) against the simulated replica set.

This process is not monkey-patched (asserted): the client must cooperate with the hub through
gevent's own sockets, events and sleep, while the simulator serves on real threads.  The
monkey-patched case runs in a subprocess (tests/integration/gevent_patched_script.py), so that
it patches nothing here.  Covered: CRUD across batches, one greenlet's blocked operation never
stopping the others, TLS through gevent's context, a change stream fed by other greenlets and
resuming across a dropped connection, transactions, retryable writes from many greenlets across a
stepdown, ``gevent.Timeout`` around an operation, and kill storms: hundreds of greenlets killed
(``greenlet.kill`` or ``gevent.Timeout``) at random moments against maxPoolSize 1 and 2, after
which no connection is left checked out and every operation is served promptly.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from event_counts import EventCounts
from integration_helpers import next_changes, trusted_tls

pytest.importorskip("gevent", reason="the gevent extra is not installed")
import gevent  # noqa: E402
import gevent.event  # noqa: E402
import gevent.monkey  # noqa: E402

from mongo_sansio import monitoring  # noqa: E402
from mongo_sansio.adapters import blocking  # noqa: E402
from mongo_sansio.adapters import gevent as gevent_client  # noqa: E402
from mongo_sansio.adapters.gevent import MongoClient, timeout  # noqa: E402
from mongo_sansio.adapters.sim import SimulatedReplicaSet  # noqa: E402
from mongo_sansio.errors import MongoError  # noqa: E402

OPTIONS: dict[str, Any] = {
    "serverSelectionTimeoutMS": 5000,
    "connectTimeoutMS": 3000,
    "socketTimeoutMS": 10000,
}
AWAIT_MS = 50


class InFlight(monitoring.CommandListener):
    """The greenlets with a command sent and not yet answered (listeners run in the greenlet of
    the operation)."""

    def __init__(self) -> None:
        self.greenlets: set[Any] = set()

    def started(self, event: object) -> None:
        self.greenlets.add(gevent.getcurrent())

    def succeeded(self, event: object) -> None:
        self.greenlets.discard(gevent.getcurrent())

    failed = succeeded


@pytest.fixture
def client(rs: SimulatedReplicaSet) -> Iterator[MongoClient]:
    opened = MongoClient(rs.uri, **OPTIONS)
    yield opened
    opened.close()


def block_next(rs: SimulatedReplicaSet, command: str, milliseconds: int) -> None:
    """The primary holds the next ``command`` for ``milliseconds`` before answering."""
    primary = rs.primary
    assert primary is not None
    rs.configure_failpoint(primary, {
        "configureFailPoint": "failCommand", "mode": {"times": 1},
        "data": {"failCommands": [command], "blockConnection": True, "blockTimeMS": milliseconds},
    })  # fmt: skip


def checked_out(client: MongoClient) -> dict[tuple[str, int], int]:
    """Connections checked out of each pool (0 everywhere when nothing leaked)."""
    core = client.engine.core
    counts = {}
    for address in client.nodes:
        pool = core.pool(address)
        assert pool is not None
        counts[address] = pool.in_use_connection_count
    return counts


# -- the module ------------------------------------------------------------------------------


def test_the_module_offers_the_blocking_api_on_greenlets_without_patching_anything() -> None:
    assert set(blocking.__all__) <= set(gevent_client.__all__)
    assert issubclass(MongoClient, blocking.MongoClient)
    assert gevent_client.InsertOne is blocking.InsertOne
    assert gevent_client.timeout is blocking.timeout
    assert not gevent.monkey.is_module_patched("socket")
    assert not gevent.monkey.is_module_patched("threading")


def test_background_work_runs_in_greenlets(client: MongoClient) -> None:
    client.admin.command("ping")
    runtime = client.engine.runtime
    assert isinstance(runtime, gevent_client.GeventRuntime)
    names = [g.name for g in runtime._greenlets]
    assert any("monitor" in name for name in names), names
    client.close()
    assert runtime.join(2.0) == []


# -- CRUD and cooperation ----------------------------------------------------------------------


def test_crud_across_batches(client: MongoClient) -> None:
    things = client.test.things
    things.insert_many([{"_id": i, "even": i % 2 == 0} for i in range(250)])
    assert [d["_id"] for d in things.find({}, batch_size=40).sort("_id", 1)] == list(range(250))
    assert things.count_documents({"even": True}) == 125
    assert things.update_many({"even": True}, {"$set": {"seen": 1}}).modified_count == 125
    result = things.bulk_write(
        [gevent_client.InsertOne({"_id": 1000}), gevent_client.DeleteMany({"even": False})]
    )
    assert (result.inserted_count, result.deleted_count) == (1, 125)
    found = things.find_one_and_update(
        {"_id": 0}, {"$inc": {"seen": 1}}, return_document=gevent_client.ReturnDocument.AFTER
    )
    assert found == {"_id": 0, "even": True, "seen": 2}
    assert things.estimated_document_count() == 126


def test_a_blocked_operation_never_stops_the_other_greenlets(
    rs: SimulatedReplicaSet, client: MongoClient
) -> None:
    things = client.test.things
    things.insert_one({"_id": "slow"})
    finished: list[str] = []
    ticks: list[float] = []

    def slow() -> None:
        assert things.find_one({"_id": "slow"}) == {"_id": "slow"}
        finished.append("slow")

    def quick() -> None:
        for i in range(20):
            things.insert_one({"_id": i})
        finished.append("quick")

    def ticker() -> None:
        while "slow" not in finished:
            ticks.append(time.monotonic())
            gevent.sleep(0.01)

    block_next(rs, "find", 800)
    started = time.monotonic()
    gevent.joinall([gevent.spawn(slow), gevent.spawn(quick), gevent.spawn(ticker)], timeout=10)
    assert finished == ["quick", "slow"]
    assert time.monotonic() - started >= 0.7
    assert len(ticks) >= 30  # the hub kept turning while the find waited


def test_tls_through_geventss_context(tmp_path: Path) -> None:
    tls = trusted_tls(tmp_path)
    with SimulatedReplicaSet(members=2, tls=tls.server_context) as replica_set:
        client = MongoClient(replica_set.uri, tlsCAFile=tls.ca_file, **OPTIONS)
        try:
            writers = [
                gevent.spawn(client.test.things.insert_many, [{"w": w, "i": i} for i in range(5)])
                for w in range(5)
            ]
            gevent.joinall(writers, raise_error=True, timeout=10)
            assert client.test.things.count_documents({}) == 25
        finally:
            client.close()


# -- change streams and transactions -------------------------------------------------------------


def test_a_change_stream_sees_other_greenlets_writes_across_a_dropped_connection(
    rs: SimulatedReplicaSet, client: MongoClient
) -> None:
    things = client.test.things
    with things.watch(max_await_time_ms=AWAIT_MS) as stream:
        writer = gevent.spawn(things.insert_many, [{"_id": i} for i in range(3)])
        first = next_changes(stream, 3)
        writer.get(timeout=5)
        primary = rs.primary
        assert primary is not None
        rs.configure_failpoint(primary, {
            "configureFailPoint": "failCommand", "mode": {"times": 1},
            "data": {"failCommands": ["getMore"], "closeConnection": True},
        })  # fmt: skip
        writer = gevent.spawn(things.insert_many, [{"_id": i} for i in range(3, 6)])
        second = next_changes(stream, 3)
        writer.get(timeout=5)
    assert [c["documentKey"]["_id"] for c in first + second] == list(range(6))


def test_transactions_commit_whole_and_abort_leave_nothing(client: MongoClient) -> None:
    orders, stock = client.shop.orders, client.shop.stock
    stock.insert_one({"_id": "apple", "n": 10})

    def buy(session: Any) -> None:
        orders.insert_one({"item": "apple"}, session=session)
        stock.update_one({"_id": "apple"}, {"$inc": {"n": -1}}, session=session)

    def buyer() -> None:
        with client.start_session() as session:
            session.with_transaction(buy)

    gevent.joinall([gevent.spawn(buyer) for _ in range(5)], raise_error=True, timeout=20)
    assert orders.count_documents({}) == 5
    assert stock.find_one({"_id": "apple"}) == {"_id": "apple", "n": 5}
    with client.start_session() as session:
        with pytest.raises(RuntimeError):
            with session.start_transaction():
                orders.insert_one({"item": "pear"}, session=session)
                raise RuntimeError("changed my mind")
    assert orders.count_documents({"item": "pear"}) == 0


# -- retries, timeouts, kills ----------------------------------------------------------------------


def test_retryable_writes_from_many_greenlets_across_a_stepdown(
    rs: SimulatedReplicaSet, client: MongoClient
) -> None:
    things, counters = client.db.things, client.db.counters
    counters.insert_one({"_id": "total", "n": 0})
    writers, per_writer = 40, 10
    halfway = gevent.event.Event()
    arrived: list[int] = []

    def writer(number: int) -> None:
        for i in range(per_writer):
            if i == per_writer // 2:
                arrived.append(number)
                halfway.wait(timeout=10)
            things.insert_one({"_id": f"{number}-{i}"})
            counters.update_one({"_id": "total"}, {"$inc": {"n": 1}})

    greenlets = [gevent.spawn(writer, n) for n in range(writers)]
    while len(arrived) < writers:
        gevent.sleep(0.01)
    old_primary = rs.primary
    rs.step_down()
    halfway.set()
    gevent.joinall(greenlets, raise_error=True, timeout=30)
    assert rs.primary not in (None, old_primary)
    ids = sorted(doc["_id"] for doc in things.find({}))
    assert ids == sorted(f"{n}-{i}" for n in range(writers) for i in range(per_writer))
    assert counters.find_one({"_id": "total"}) == {"_id": "total", "n": writers * per_writer}


def test_a_gevent_timeout_around_an_operation(rs: SimulatedReplicaSet, client: MongoClient) -> None:
    things = client.test.things
    things.insert_one({"_id": 1})
    block_next(rs, "find", 2000)
    started = time.monotonic()
    with pytest.raises(gevent.Timeout):
        with gevent.Timeout(0.2):
            things.find_one({"_id": 1})
    assert time.monotonic() - started < 1.0
    assert set(checked_out(client).values()) == {0}
    started = time.monotonic()
    assert things.find_one({"_id": 1}) == {"_id": 1}  # the cut connection was not reused
    assert time.monotonic() - started < 1.0
    # the driver's own timeout() works the same on greenlets
    block_next(rs, "find", 2000)
    started = time.monotonic()
    with pytest.raises(MongoError) as caught:
        with timeout(0.2):
            things.find_one({"_id": 1})
    assert caught.value.timeout
    assert time.monotonic() - started < 1.0
    assert set(checked_out(client).values()) == {0}


@pytest.mark.parametrize("pool_size", [1, 2])
def test_kill_storm(rs: SimulatedReplicaSet, pool_size: int) -> None:
    """300 greenlets run operations; a killer kills them at random moments (half of the time
    one whose command is in flight, so that exchanges are cut mid-way) and every third one
    runs each operation under a random gevent.Timeout.  Afterwards nothing is checked out, the
    cut connections were discarded, and 100 operations (50 at once) are served promptly."""
    pool_events, in_flight = EventCounts(), InFlight()
    client = MongoClient(
        rs.uri, maxPoolSize=pool_size, event_listeners=[pool_events, in_flight], **OPTIONS
    )
    try:
        things = client.test.storm
        things.insert_many([{"_id": i, "n": 0} for i in range(20)])
        primary = rs.primary
        assert primary is not None
        rs.configure_failpoint(primary, {  # longer exchanges: more of them are cut
            "configureFailPoint": "failCommand", "mode": {"times": 150},
            "data": {"failCommands": ["find", "update", "getMore"], "blockConnection": True,
                     "blockTimeMS": 4},
        })  # fmt: skip
        draw = random.Random(20260 + pool_size)
        figures: Counter[str] = Counter()

        def operation(i: int) -> None:
            kind = i % 4
            if kind == 0:
                things.insert_one({"k": i})
            elif kind == 1:
                things.find_one({"_id": i % 20})
            elif kind == 2:
                things.update_one({"_id": i % 20}, {"$inc": {"n": 1}})
            else:
                assert len(list(things.find({}, batch_size=3).limit(9))) == 9

        def worker(number: int, timed: bool) -> None:
            for i in range(number, number + 8):
                try:
                    if timed:
                        with gevent.Timeout(draw.uniform(0.0002, 0.01)):
                            operation(i)
                    else:
                        operation(i)
                    figures["completed"] += 1
                except gevent.Timeout:
                    figures["timed out"] += 1

        started = time.monotonic()
        workers = [gevent.spawn(worker, n, n % 3 == 0) for n in range(300)]
        while not all(w.dead for w in workers):
            gevent.sleep(draw.uniform(0, 0.003))
            busy = [g for g in in_flight.greenlets if not g.dead]
            if busy and draw.random() < 0.5:
                victim = draw.choice(busy)
                figures["killed in flight"] += 1
            else:
                victim = draw.choice(workers)
            if not victim.dead:
                victim.kill(block=False)
                figures["killed"] += 1
            if time.monotonic() - started > 30:
                break
        gevent.joinall(workers, timeout=10)
        assert all(w.dead for w in workers)
        storm_seconds = time.monotonic() - started
        gevent.sleep(0.05)
        assert set(checked_out(client).values()) == {0}
        for address in client.nodes:
            pool = client.engine.core.pool(address)
            assert pool is not None and pool.total_connection_count <= pool_size
        # served promptly afterwards: 50 one after another, then 50 at once
        started = time.monotonic()
        for i in range(50):
            operation(i)
        gevent.joinall([gevent.spawn(operation, i) for i in range(50)], raise_error=True)
        after_seconds = time.monotonic() - started
        assert after_seconds < 5.0
        assert set(checked_out(client).values()) == {0}
        assert figures["killed"] >= 100 and figures["timed out"] >= 20
        assert pool_events.counts["ConnectionClosedEvent"] >= 5  # cut exchanges: discarded
        print(
            f"\nkill storm maxPoolSize={pool_size}: 300 greenlets, {figures['killed']} killed "
            f"({figures['killed in flight']} with a command in flight), "
            f"{figures['timed out']} gevent.Timeouts, {figures['completed']} operations completed "
            f"in {storm_seconds:.2f} s; connections created {pool_events.counts['ConnectionCreatedEvent']}, "
            f"closed {pool_events.counts['ConnectionClosedEvent']}; afterwards 100 operations in "
            f"{after_seconds:.2f} s, none checked out"
        )
    finally:
        client.close()


# -- monkey-patched --------------------------------------------------------------------------------


def test_monkey_patched_in_a_subprocess() -> None:
    script = Path(__file__).with_name("gevent_patched_script.py")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == "patched: ok"
