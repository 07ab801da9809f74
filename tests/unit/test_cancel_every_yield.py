"""Cancellation safety as a property of the core: every operation flow, closed at any yield.

A runtime cancels a task where it waits, at a primitive: a trio cancel scope, a cancelled
asyncio task, a killed greenlet, ``gevent.Timeout``, KeyboardInterrupt in a thread.  All of
them come down to the core's generator being closed (or having a BaseException thrown in) at
its k-th yield.  These tests take whole operations as the adapters run them (``drive`` of the
operation flows of :mod:`mongo_sansio.ops` and :mod:`mongo_sansio.cursors`) on the scripted
runtime of :mod:`client_harness`, against a scripted single-member replica set, and cut them
at every k (and at a hypothesis-drawn k, with random interleavings of the background tasks):

* ``insert``      -- insert_one, a retryable write in an implicit session;
* ``find``        -- find opening a cursor, then every getMore to its end;
* ``commit``      -- commitTransaction of an explicit session's transaction;
* ``change``      -- a change stream's next event (a getMore the server answers late);
* ``selecting``   -- an insert whose server selection waits for the first hello;
* ``queued``      -- an insert waiting in the wait queue of a maxPoolSize=1 pool that another
  task holds.

After the cut, the invariants:

* no connection stays checked out, nobody waits in the pool's queue or for the topology;
* the pool's ledger adds up, and a connection whose exchange was cut mid-message is closed,
  never reused (no link left in the pool is awaiting a reply);
* the implicit session went back to the session pool, or was discarded (dirty), once nothing
  holds it; an explicit session is not left ``in_use``; no server session is pooled twice or
  pooled while a live session holds it;
* no cursor hold leaks: a cursor or change stream the cut left open holds its session until it
  is closed, and then holds nothing;
* the topology did not change (a cancellation is not the server's failure);
* the client then serves a new operation (and the explicit session its next one).
"""

from __future__ import annotations

import itertools
from collections.abc import Generator, Mapping
from typing import Any

import attrs
import pytest
from client_harness import NOT_FINISHED, FakeServer, Later, Loop, make_core, member_hello
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import Int64, Timestamp
from mongo_sansio.client.execute import drive
from mongo_sansio.client.runtime import SendAll
from mongo_sansio.cmap.events import PoolCleared
from mongo_sansio.cursors import (
    ChangeStream,
    ChangeStreamOptions,
    ChangeStreamTarget,
    change_stream_close,
    change_stream_next,
    change_stream_open,
    cursor_close,
    cursor_next,
)
from mongo_sansio.cursors.cursor import CursorInterrupted
from mongo_sansio.flow import GetContext, Sleep
from mongo_sansio.ops.collection import CollectionOps
from mongo_sansio.ops.transactions import commit_transaction
from mongo_sansio.sdam.description import ServerType
from mongo_sansio.selection import ReadPreference
from mongo_sansio.sessions import Session
from mongo_sansio.sessions.transaction import TransactionOptions

A = ("a", 27017)
FIND_CURSOR = 42
STREAM_CURSOR = 77
BATCHES = 3  # getMores of the find before its cursor is exhausted
KINDS = ["insert", "find", "commit", "change", "selecting", "queued"]
Flow = Generator[Any, Any, Any]


class Interrupt(BaseException):
    """Stands for KeyboardInterrupt or a runtime's cancellation (not a library error)."""


@attrs.frozen
class Case:
    kind: str
    chunk: int | None = None  # bytes per Receive: a reply is read in pieces
    delay: float = 0.0  # every command's reply comes this late
    monitored: bool = True  # command monitoring on
    seed: int | None = None  # shuffles the tasks' steps (client_harness.Loop's order_seed)


class ScriptedMember:
    """The replies of a one-member replica set's primary: writes, a find cursor of
    ``BATCHES`` getMores, a change stream whose getMore brings one event."""

    def __init__(self, server: FakeServer, case: Case) -> None:
        self.case = case
        self.get_mores = 0
        self.events = itertools.count(1)
        for name in ("insert", "find", "getMore", "aggregate", "commitTransaction"):
            server.handlers[name] = self._answer(getattr(self, f"_{name}"))

    def _answer(self, make: Any) -> Any:
        def answer(body: Mapping[str, Any]) -> Any:
            reply = {**make(body), "ok": 1.0, "operationTime": Timestamp(100, 1)}
            return Later(self.case.delay, reply) if self.case.delay else reply

        return answer

    def _insert(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return {"n": 1}

    def _commitTransaction(self, body: Mapping[str, Any]) -> dict[str, Any]:  # noqa: N802
        return {}

    def _find(self, body: Mapping[str, Any]) -> dict[str, Any]:
        batch = [{"_id": 0}, {"_id": 1}]
        return {"cursor": {"id": Int64(FIND_CURSOR), "ns": "db.things", "firstBatch": batch}}

    def _aggregate(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "cursor": {
                "id": Int64(STREAM_CURSOR),
                "ns": "db.things",
                "firstBatch": [],
                "postBatchResumeToken": {"_data": "00"},
            }
        }

    def _getMore(self, body: Mapping[str, Any]) -> dict[str, Any]:  # noqa: N802
        if body["getMore"] == STREAM_CURSOR:
            n = next(self.events)
            token = {"_data": f"{n:02d}"}
            event = {"_id": token, "operationType": "insert", "fullDocument": {"_id": n}}
            section = {"nextBatch": [event], "postBatchResumeToken": token}
            return {"cursor": {"id": Int64(STREAM_CURSOR), "ns": "db.things", **section}}
        self.get_mores += 1
        last = self.get_mores >= BATCHES
        batch = [{"_id": 1 + self.get_mores}]
        cursor_id = Int64(0 if last else FIND_CURSOR)
        return {"cursor": {"id": cursor_id, "ns": "db.things", "nextBatch": batch}}


class World:
    """One client core on one scripted primary, set up for ``case``; :meth:`flow` is the
    operation to cut."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.server = FakeServer(A, member_hello(A, (A,), A))
        self.member = ScriptedMember(self.server, case)
        self.loop = Loop(self.server, order_seed=case.seed)
        self.events: list[Any] = []
        pool_size = "&maxPoolSize=1" if case.kind == "queued" else ""
        if case.kind == "selecting":
            self.server.hello_delay = 0.4  # the first selection waits for the monitor
        self.core = make_core(
            self.loop,
            f"mongodb://a/?replicaSet=rs0{pool_size}",
            publish=self.events.append if case.monitored else None,
        )
        ids = itertools.count()
        self.things = CollectionOps("db", "things", id_factory=lambda: next(ids))
        self.implicit: list[Session] = []  # the implicit sessions the operations used
        self.explicit: Session | None = None
        self.cursor: Any = None
        self.stream: ChangeStream | None = None
        self.holding = 0
        if case.kind != "selecting":
            self.loop.run(self.operation(self.things.insert_one({"warm": 1})))
        if case.kind == "commit":
            self.explicit = Session(self.core, implicit=False)
            self.explicit.start_transaction(TransactionOptions())
            self.loop.run(self.operation(self.things.insert_one({"x": 1}), self.explicit))
        if case.kind == "change":
            self.stream = ChangeStream(
                ChangeStreamTarget.collection("db", "things"),
                [],
                ChangeStreamOptions(max_await_time_ms=500),
                ReadPreference(),
            )
            self.loop.run(self.operation(change_stream_open(self.stream)))
            assert self.stream.session is not None and self.stream.session.cursor_holds == 1
        self.server.chunk = case.chunk
        if case.kind == "queued":
            self.loop.spawn(self.holder(), "holder")
            self.loop.settle()
            assert self.pool.in_use_connection_count == 1

    @property
    def pool(self) -> Any:
        return self.core.pool(A)

    def operation(self, flow: Flow, session: Session | None = None) -> Flow:
        """``flow`` as an adapter runs it, noting the implicit session it gets."""

        def noting() -> Flow:
            context = yield GetContext()
            if context.session.implicit:
                self.implicit.append(context.session)
            return (yield from flow)

        return drive(self.core, noting(), session=session)

    def holder(self) -> Flow:
        link = yield from self.core.check_out(A)
        self.holding = 1
        yield Sleep(0.5)
        self.core.check_in(link)
        self.holding = 0

    def flow(self) -> Flow:
        kind = self.case.kind
        if kind in ("insert", "selecting", "queued"):
            return self.operation(self.things.insert_one({"y": 1}))
        if kind == "commit":
            assert self.explicit is not None
            return self.operation(commit_transaction(self.explicit), self.explicit)
        if kind == "change":
            assert self.stream is not None
            return self.operation(change_stream_next(self.stream))
        return self.find_all()

    def find_all(self) -> Flow:
        """find, then each getMore: one operation each, as a cursor's user runs them."""
        self.cursor = yield from self.operation(self.things.find({}, batch_size=2))
        documents = []
        while (document := (yield from self.operation(cursor_next(self.cursor)))) is not None:
            documents.append(document)
        return documents

    # -- the invariants ---------------------------------------------------------------------------

    def assert_released_at_once(self) -> None:
        """Right after the cut, before any other task runs: the cut flow holds nothing and
        waits for nothing."""
        assert self.pool.in_use_connection_count == self.holding
        assert self.pool.wait_queue_length == 0
        assert self.core._servers[A].waiters == {}
        assert self.core._topology_waiters == []
        if self.explicit is not None:
            assert not self.explicit.in_use and not self.explicit.ended

    def assert_consistent(self) -> None:
        loop, pool, core = self.loop, self.pool, self.core
        loop.run_for(3.0)  # open tasks finish, the holder checks in
        assert loop.background_failures == []
        assert pool.in_use_connection_count == 0
        assert pool.wait_queue_length == 0
        server = core._servers[A]
        assert server.waiters == {}
        assert (
            pool.available_connection_count
            + pool.in_use_connection_count
            + pool.pending_connection_count
            == pool.total_connection_count
        )
        assert pool.total_connection_count <= (1 if self.case.kind == "queued" else 100)
        for link in server.links.values():
            if not link.broken:
                assert link.machine.awaiting_response_to is None, f"{link} is mid-exchange"
        assert not any(isinstance(e, PoolCleared) for e in self.events)
        assert core.description.servers[A].type is ServerType.RS_PRIMARY
        self.close_what_the_user_holds()
        self.assert_sessions()
        # the client serves a new operation, on the same pool
        inserts = len(self.server.commands("insert"))
        assert loop.run(self.operation(self.things.insert_one({"z": 1}))).inserted_id is not None
        assert len(self.server.commands("insert")) == inserts + 1
        if self.explicit is not None:  # and the session its next call: commit (again)
            loop.run(self.operation(commit_transaction(self.explicit), self.explicit))
            assert not self.explicit.in_use
        assert pool.in_use_connection_count == 0
        self.assert_sessions()

    def close_what_the_user_holds(self) -> None:
        """A cursor or stream the cut left open is closed by its user (``with`` / ``close``):
        it must then hold its session no more."""
        cursor, stream = self.cursor, self.stream
        if cursor is not None and not cursor.closed:
            self.loop.run(self.operation(cursor_close(cursor)))
        if stream is not None and not stream.closed:
            self.loop.run(self.operation(change_stream_close(stream)))
        for holder in (cursor, stream):
            if holder is not None and holder.session is not None:
                assert holder.session.cursor_holds == 0

    def assert_sessions(self) -> None:
        """Every server session an operation used is pooled, discarded (dirty), or bound to a
        session still alive; none is pooled twice, none pooled while a live session has it."""
        pooled = list(self.core.sessions.pool)
        assert len({id(s) for s in pooled}) == len(pooled), "a server session pooled twice"
        sessions = [*self.implicit, *([self.explicit] if self.explicit is not None else [])]
        live = [s.server_session for s in sessions if not s.ended and s.server_session]
        for bound in live:
            assert all(s is not bound for s in pooled), f"{bound} is pooled while in use"
        for session in self.implicit:
            assert session.cursor_holds == 0
            assert session.ended, f"{session} was never given back"
            server_session = session.server_session
            if server_session is not None:
                assert (
                    server_session.dirty
                    or any(s is server_session for s in pooled)
                    or any(s is server_session for s in live)
                ), f"{server_session} is neither pooled nor discarded"
        if self.explicit is not None:
            assert not self.explicit.in_use


def _counted(flow: Flow, count: list[int]) -> Flow:
    """``flow``, counting in ``count[0]`` the primitives it yields (how far a cut can go)."""
    answer: Any = None
    error: Exception | None = None
    while True:
        try:
            request = flow.send(answer) if error is None else flow.throw(error)
        except StopIteration as stop:
            return stop.value
        # (a command sent with the first read of its reply is two places to cut at)
        count[0] += 2 if type(request) is SendAll and request.receive else 1
        try:
            answer, error = (yield request), None
        except Exception as exc:  # a failure the runtime threw in: the flow's to handle
            answer, error = None, exc


def primitives_of(case: Case) -> int:
    world = World(case)
    count = [0]
    world.loop.run(_counted(world.flow(), count))
    return count[0]


def cut(case: Case, k: int, throw: bool) -> World:
    world = World(case)
    result = world.loop.run(world.flow(), cut_after=k, throw=Interrupt() if throw else None)
    assert result is NOT_FINISHED
    world.assert_released_at_once()
    return world


def check_every_cut(case: Case) -> int:
    total = primitives_of(case)
    assert total >= 2
    for k in range(1, total + 1):
        for throw in (False, True):
            world = cut(case, k, throw)
            try:
                world.assert_consistent()
            except AssertionError as exc:
                raise AssertionError(
                    f"{case}: cut at {k} of {total} (throw={throw}): {exc}"
                ) from exc
    return total


@pytest.mark.parametrize("kind", KINDS)
def test_every_yield_of_every_flow(kind: str) -> None:
    check_every_cut(Case(kind))


@pytest.mark.parametrize("kind", KINDS)
def test_every_yield_with_replies_in_pieces_and_late(kind: str) -> None:
    check_every_cut(Case(kind, chunk=7, delay=0.05, monitored=False))


cases = st.builds(
    Case,
    kind=st.sampled_from(KINDS),
    chunk=st.sampled_from([None, 1, 5, 64]),
    delay=st.sampled_from([0.0, 0.02, 0.3]),
    monitored=st.booleans(),
    seed=st.one_of(st.none(), st.integers(0, 2**32 - 1)),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases, data=st.data())
def test_cut_anywhere_property(case: Case, data: st.DataObject) -> None:
    total = primitives_of(case)
    k = data.draw(st.integers(1, total), label="k")
    throw = data.draw(st.booleans(), label="throw")
    cut(case, k, throw).assert_consistent()


def test_the_flows_are_what_they_claim() -> None:
    """Uncut, each flow does its whole job: the cuts above land inside real work."""
    world = World(Case("find"))
    documents = world.loop.run(world.flow())
    assert [d["_id"] for d in documents] == [0, 1, 2, 3, 4]
    assert len(world.server.commands("getMore")) == BATCHES
    world = World(Case("change"))
    event = world.loop.run(world.flow())
    assert event["operationType"] == "insert"
    world = World(Case("commit"))
    world.loop.run(world.flow())
    assert len(world.server.commands("commitTransaction")) == 1
    world = World(Case("queued"))
    task = world.loop.start(world.flow(), "queued insert")
    world.loop.run_for(0.1)
    assert not task.done and world.pool.wait_queue_length == 1
    world = World(Case("selecting"))
    task = world.loop.start(world.flow(), "selecting insert")
    world.loop.run_for(0.1)
    assert not task.done and len(world.core._topology_waiters) == 1


# -- what a cut in the middle of an exchange must not cost ---------------------------------------


def _cut_mid_exchange(world: World, flow: Flow) -> None:
    """Run ``flow`` until its command was sent and its reply awaited, then cut it there."""
    streams = len(world.loop.open_streams())
    sent = len(world.server.commands())
    total = primitives_of(world.case)
    for k in range(1, total + 1):
        probe = World(world.case)
        probe.loop.run(probe.flow(), cut_after=k)
        if len(probe.server.commands()) > sent and len(probe.loop.open_streams()) < streams:
            break
    else:
        raise AssertionError("no yield of the flow is mid-exchange")
    assert world.loop.run(flow, cut_after=k) is NOT_FINISHED


def test_a_command_cut_in_flight_dirties_its_server_session() -> None:
    world = World(Case("insert"))
    _cut_mid_exchange(world, world.flow())
    session = world.implicit[-1]
    assert session.server_session is not None and session.server_session.dirty


def test_a_cursor_whose_get_more_was_cut_does_not_skip_documents() -> None:
    world = World(Case("find"))
    cursor = world.loop.run(world.operation(world.things.find({}, batch_size=2)))
    documents = [world.loop.run(world.operation(cursor_next(cursor))) for _ in range(2)]
    getmore = world.operation(cursor_next(cursor))
    # cut while the getMore's reply is awaited (its 4th primitive: the clock twice, the
    # command's SendAll, then the read that goes with it)
    assert world.loop.run(getmore, cut_after=4) is NOT_FINISHED
    assert len(world.server.commands("getMore")) == 1
    # the lost batch is not skipped silently: the cursor refuses to go on (and is closed)
    with pytest.raises(CursorInterrupted):
        world.loop.run(world.operation(cursor_next(cursor)))
    assert [d["_id"] for d in documents] == [0, 1]
    assert not cursor.alive


def test_a_change_stream_survives_a_cancelled_next() -> None:
    world = World(Case("change"))
    stream = world.stream
    assert stream is not None
    first = world.loop.run(world.operation(change_stream_next(stream)))
    assert world.loop.run(world.operation(change_stream_next(stream)), cut_after=4) is NOT_FINISHED
    after = world.loop.run(world.operation(change_stream_next(stream)))
    assert after["_id"] != first["_id"]
