"""A client used on both sides of ``os.fork()`` (PySpark forks its Python workers).

The parent uses a client (its pools and monitors have connections), forks, and both processes
use it: the child's operations succeed on connections of its own -- it never reads, writes,
shuts down or closes (other than forgetting the descriptor) a stream the parent opened -- and
the parent's connections stay in use without a single error, pool clear or failed heartbeat.
A cursor the child drops is not killed for the parent, and a session made before the fork is
refused in the child.  Run for the blocking client (threads) and the gevent client (the
parent's greenlets are still scheduled in the child).
"""

from __future__ import annotations

import gc
import os
import signal
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from event_counts import EventCounts

from mongo_sansio.adapters import blocking
from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.errors import InvalidOperation
from mongo_sansio.transports.blocking import BlockingStream

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")

OPTIONS: dict[str, Any] = {
    "serverSelectionTimeoutMS": 5000,
    "connectTimeoutMS": 3000,
    "socketTimeoutMS": 10000,
    "heartbeatFrequencyMS": 500,
}
CHILD_SECONDS = 20.0


def open_streams() -> list[BlockingStream]:
    found = []
    for o in gc.get_objects():
        try:
            if isinstance(o, BlockingStream) and not o.closed:
                found.append(o)
        except ReferenceError:  # a weak proxy (gevent keeps some) whose object is gone
            continue
    return found


class StreamUse:
    """In the child: which streams were read, written or closed (``forget`` is allowed)."""

    def __init__(self) -> None:
        self.touched: set[int] = set()
        for name in ("send_all", "recv", "recv_into", "close"):
            original = getattr(BlockingStream, name)
            setattr(BlockingStream, name, self._recording(original))

    def _recording(self, original: Callable[..., Any]) -> Callable[..., Any]:
        touched = self.touched

        def method(stream: BlockingStream, *args: Any) -> Any:
            touched.add(id(stream))
            return original(stream, *args)

        return method


def fork(child: Callable[[], None]) -> tuple[int, int]:
    """Fork; the child runs ``child`` and exits 0, or prints why and exits 1 (or is ended by
    its own watchdog).  Returns the child's pid and the read end of its report pipe."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid != 0:
        os.close(write_end)
        return pid, read_end
    code = 1
    try:
        os.close(read_end)
        # (not faulthandler: its watchdog is the parent's thread, which the child lacks)
        signal.alarm(int(CHILD_SECONDS))
        child()
        code = 0
    except BaseException:  # noqa: BLE001 - reported to the parent through the pipe
        os.write(write_end, traceback.format_exc().encode())
    finally:
        os._exit(code)


def wait_for(pid: int, read_end: int, sleep: Callable[[float], None] = time.sleep) -> str:
    """The child's exit code, as ``exit N`` followed by what it reported."""
    deadline = time.monotonic() + CHILD_SECONDS + 5
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise AssertionError("the child hung")
        sleep(0.02)
    with os.fdopen(read_end, "rb") as report:
        text = report.read().decode(errors="replace")
    return f"exit {os.waitstatus_to_exitcode(status)}\n{text}".strip()


@pytest.fixture(params=["blocking", "gevent"])
def client_class(request: pytest.FixtureRequest) -> type[blocking.MongoClient]:
    if request.param == "blocking":
        return blocking.MongoClient
    pytest.importorskip("gevent", reason="the gevent extra is not installed")
    from mongo_sansio.adapters import gevent as gevent_client

    return gevent_client.MongoClient


@pytest.fixture
def sleep(client_class: type[blocking.MongoClient]) -> Callable[[float], None]:
    """How the parent waits: gevent's sleep keeps the gevent client's greenlets running."""
    if client_class is blocking.MongoClient:
        return time.sleep
    import gevent

    return gevent.sleep


@pytest.fixture
def events() -> EventCounts:
    return EventCounts()


@pytest.fixture
def client(
    rs: SimulatedReplicaSet, client_class: type[blocking.MongoClient], events: EventCounts
) -> Iterator[blocking.MongoClient]:
    opened = client_class(rs.uri, event_listeners=[events], **OPTIONS)
    yield opened
    opened.close()


def test_both_processes_use_the_client_and_the_child_never_touches_the_parents_sockets(
    client: blocking.MongoClient, events: EventCounts, sleep: Callable[[float], None]
) -> None:
    things = client.test.things
    things.insert_many([{"_id": i} for i in range(10)])
    assert len(list(things.find({}, batch_size=3))) == 10
    sleep(0.6)  # a heartbeat or two: the monitors' connections are open and waiting too
    inherited = open_streams()
    assert len(inherited) >= 4  # 3 monitors (at least) and a pooled connection
    inherited_ids = {id(stream) for stream in inherited}
    core_before = client.engine.core
    events.counts.clear()

    def child() -> None:
        use = StreamUse()
        sleep(0.6)  # what the parent left running here (greenlets) has its chance first
        things.insert_one({"_id": "child"})
        assert things.find_one({"_id": "child"}) == {"_id": "child"}
        assert things.count_documents({"_id": {"$lt": 10}}) == 10
        assert client.engine.core is not core_before
        assert use.touched and not use.touched & inherited_ids
        assert not [s for s in inherited if not s.closed]  # forgotten, not shut down
        client.close()
        assert not use.touched & inherited_ids

    pid, report = fork(child)
    for i in range(30):  # meanwhile the parent keeps working on its own connections
        things.insert_one({"_id": f"parent-{i}"})
        assert things.find_one({"_id": f"parent-{i}"}) == {"_id": f"parent-{i}"}
        sleep(0.01)
    assert wait_for(pid, report, sleep) == "exit 0"
    sleep(0.6)
    assert things.find_one({"_id": "child"}) == {"_id": "child"}
    assert client.engine.core is core_before
    assert all(not stream.closed for stream in inherited)
    for name in ("PoolClearedEvent", "ConnectionClosedEvent", "ServerHeartbeatFailedEvent"):
        assert events.counts[name] == 0, (name, events.counts)
    assert events.counts["ServerHeartbeatSucceededEvent"] > 0


def test_a_cursor_dropped_in_the_child_stays_open_for_the_parent(
    client: blocking.MongoClient, sleep: Callable[[float], None]
) -> None:
    things = client.test.things
    things.insert_many([{"_id": i} for i in range(10)])
    cursor = things.find({}, batch_size=2).sort("_id", 1)
    assert next(cursor) == {"_id": 0}
    with client.start_session() as session:

        def child() -> None:
            nonlocal cursor
            del cursor  # its killCursors would end the parent's cursor on the server
            gc.collect()
            with pytest.raises(InvalidOperation):
                things.find_one({}, session=session)
            things.insert_one({"_id": "child"})
            sleep(0.3)  # the child's upkeep task has had its chance to send killCursors
            session.end_session()
            client.close()

        pid, report = fork(child)
        assert wait_for(pid, report, sleep) == "exit 0"
        assert [d["_id"] for d in cursor] == list(range(1, 10))
        assert things.find_one({"_id": "child"}, session=session) == {"_id": "child"}


def test_closing_in_the_child_first_leaves_the_parent_untouched(
    client: blocking.MongoClient, events: EventCounts, sleep: Callable[[float], None]
) -> None:
    things = client.test.things
    things.insert_one({"_id": 1})
    inherited = open_streams()
    events.counts.clear()

    def child() -> None:
        client.close()
        with pytest.raises(InvalidOperation):
            things.find_one({})

    pid, report = fork(child)
    assert wait_for(pid, report, sleep) == "exit 0"
    assert things.find_one({"_id": 1}) == {"_id": 1}
    assert all(not stream.closed for stream in inherited)
    assert events.counts["ConnectionClosedEvent"] == events.counts["PoolClearedEvent"] == 0
