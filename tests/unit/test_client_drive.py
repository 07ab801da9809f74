"""The client core's operations and background work in fake time: :func:`drive` (a command
flow, its CSOT deadline and maxTimeMS), the upkeep task, and wake-ups that must not be lost in
any interleaving of the tasks' steps (:class:`client_harness.Loop` with an ``order_seed``
shuffles them).  The flows one by one are in test_client_flows.py."""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from client_harness import (
    Drop,
    FakeServer,
    Hang,
    Later,
    Loop,
    Trickle,
    make_core,
    standalone_hello,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from test_client_flows import A, ping, standalone_core

from mongo_sansio.bson import Int64
from mongo_sansio.client.core import KillCursor
from mongo_sansio.client.events import CommandStartedEvent, CommandSucceededEvent
from mongo_sansio.client.execute import KILL_CURSORS_TIMEOUT, drive
from mongo_sansio.cmap.events import ConnectionCheckedIn, ConnectionClosed, PoolCleared
from mongo_sansio.command import run_command
from mongo_sansio.errors import NetworkError, NetworkTimeout
from mongo_sansio.flow import SelectServer
from mongo_sansio.sdam.description import ServerType, TopologyType

# -- drive ----------------------------------------------------------------------------------------


class TestDrive:
    def test_runs_a_command_flow(self) -> None:
        server = FakeServer(A)
        loop = Loop(server)
        core, events = standalone_core(loop)
        reply = loop.run(drive(core, ping()))
        assert reply["ok"] == 1
        started = [e for e in events if isinstance(e, CommandStartedEvent)]
        assert [e.command_name for e in started] == ["ping"]
        assert any(isinstance(e, CommandSucceededEvent) for e in events)
        assert core.pool(A).in_use_connection_count == 0
        assert any(isinstance(e, ConnectionCheckedIn) for e in events)
        # a direct connection to a standalone: no $readPreference added
        assert "$readPreference" not in server.commands("ping")[0].body

    def test_max_time_ms_from_remaining_time_minus_min_rtt(self) -> None:
        server = FakeServer(A)
        server.hello_delay = 0.1
        loop = Loop(server)
        core, _ = standalone_core(loop)
        loop.run_for(25.0)  # RTT samples: the minimum becomes 0.1
        assert core.min_round_trip_time(A) == pytest.approx(0.1)
        loop.run(drive(core, ping()))  # a pooled connection for the next one
        start = loop.now
        loop.run(drive(core, ping(), deadline=start + 2.0))
        sent = server.commands("ping")[-1].body
        assert abs(sent["maxTimeMS"] - 1900) <= 1

    def test_an_operation_started_just_now_reads_no_clock_before_its_command(self) -> None:
        # (no listener: a known server is selected without a flow, so nothing can have
        # waited between the operation's start and its check-out)
        loop = Loop(FakeServer(A))
        core = make_core(loop, "mongodb://a/?directConnection=true")
        loop.run(core.select_server(SelectServer()))
        loop.run(drive(core, ping()))  # a pooled connection for the next one
        asked: list[str] = []
        loop.run(_recording(drive(core, ping(), now=loop.now), asked))
        assert asked == ["SendAll"]  # the command, and the read of its reply with it

    def test_a_selection_that_waits_makes_the_check_out_read_the_clock(self) -> None:
        server = FakeServer(A)
        server.hello_behaviour = Later(0.5, standalone_hello())
        loop = Loop(server)
        core = make_core(loop, "mongodb://a/?directConnection=true")
        asked: list[str] = []
        start = loop.now
        loop.run(_recording(drive(core, ping(), now=start), asked))
        assert "Wait" in asked
        assert "Now" in asked[asked.index("Wait") :]  # the start time is stale by then
        assert core.last_now >= start + 0.5

    def test_deadline_below_the_round_trip_sends_nothing(self) -> None:
        server = FakeServer(A)
        server.hello_delay = 0.1
        loop = Loop(server)
        core, _ = standalone_core(loop)
        loop.run_for(25.0)
        loop.run(drive(core, ping()))
        count = len(server.commands())
        with pytest.raises(NetworkTimeout) as info:
            loop.run(drive(core, ping(), deadline=loop.now + 0.05))
        assert info.value.timeout is True
        assert len(server.commands()) == count
        assert core.pool(A).in_use_connection_count == 0

    def test_getmore_keeps_its_own_server_wait(self) -> None:
        server = FakeServer(A)
        loop = Loop(server)
        core, _ = standalone_core(loop)
        info = core.server_info(A)
        flow = run_command(info, "db", {"getMore": 5, "collection": "c"})
        loop.run(drive(core, flow, deadline=loop.now + 5))
        assert "maxTimeMS" not in server.commands("getMore")[0].body

    def test_deadline_bounds_a_hanging_reply(self) -> None:
        server = FakeServer(A)
        server.queue("ping", Hang())
        loop = Loop(server)
        core, events = standalone_core(loop)
        start = loop.now
        with pytest.raises(NetworkTimeout) as info:
            loop.run(drive(core, ping(), deadline=start + 1.0))
        assert info.value.timeout is True
        assert loop.now == start + 1.0
        assert core.pool(A).in_use_connection_count == 0
        closed = [e for e in events if isinstance(e, ConnectionClosed)]
        assert len(closed) == 1  # the cut connection, never reused
        assert loop.run(drive(core, ping()))["ok"] == 1

    def test_socket_timeout_without_a_deadline(self) -> None:
        server = FakeServer(A)
        server.queue("ping", Trickle(0.3))
        loop = Loop(server)
        core, _ = standalone_core(loop, "&socketTimeoutMS=1000")
        start = loop.now
        with pytest.raises(NetworkTimeout):
            loop.run(drive(core, ping()))
        # one socketTimeoutMS bounds the whole reply, not each read
        assert loop.now == pytest.approx(start + 1.0)

    def test_network_error_marks_the_server_unknown_and_clears_the_pool(self) -> None:
        server = FakeServer(A)
        server.queue("ping", Drop())
        loop = Loop(server)
        core, events = standalone_core(loop)
        with pytest.raises(NetworkError):
            loop.run(drive(core, ping()))
        assert any(isinstance(e, PoolCleared) for e in events)
        assert core.description.servers[A].type is ServerType.UNKNOWN
        assert core.pool(A).in_use_connection_count == 0
        assert loop.run(drive(core, ping()))["ok"] == 1
        assert core.description.type is TopologyType.SINGLE

    def test_a_publish_hook_raising_at_command_started_does_not_poison_the_link(self) -> None:
        # The started event is published once the request is encoded: the connection machine
        # then awaits its reply.  A raising hook must not leave that link in the pool.
        server = FakeServer(A)
        loop = Loop(server)
        raising = [True]

        def publish(event: object) -> None:
            if raising[0] and isinstance(event, CommandStartedEvent):
                raise RuntimeError("listener")

        core = make_core(loop, "mongodb://a/?directConnection=true", publish=publish)
        with pytest.raises(RuntimeError):
            loop.run(drive(core, ping()))
        assert core.pool(A).in_use_connection_count == 0
        assert server.commands("ping") == []
        raising[0] = False
        assert loop.run(drive(core, ping()))["ok"] == 1
        assert loop.run(drive(core, ping()))["ok"] == 1

    def test_values_that_raise_while_encoded_leave_the_link_usable(self) -> None:
        class BadZone(datetime.tzinfo):
            def utcoffset(self, dt: datetime.datetime | None) -> datetime.timedelta:
                raise RuntimeError("utcoffset")

            def dst(self, dt: datetime.datetime | None) -> None:
                return None

        class BadMapping(Mapping[str, Any]):
            def __getitem__(self, key: str) -> Any:
                raise KeyError(key)

            def __len__(self) -> int:
                return 1

            def __iter__(self) -> Iterator[str]:
                raise RuntimeError("iter")

        server = FakeServer(A)
        loop = Loop(server)
        core, _ = standalone_core(loop)
        bad_values = [datetime.datetime(2020, 1, 1, tzinfo=BadZone()), BadMapping()]
        for _ in range(5):
            for value in bad_values:
                with pytest.raises(RuntimeError):
                    loop.run(drive(core, ping(filter=value)))
                assert core.pool(A).in_use_connection_count == 0
        assert server.commands("ping") == []
        assert core.pool(A).total_connection_count == 1  # one connection, never broken
        assert loop.run(drive(core, ping()))["ok"] == 1


# -- the upkeep task ------------------------------------------------------------------------------


class TestUpkeep:
    def test_dropped_cursors_are_killed(self) -> None:
        server = FakeServer(A)
        loop = Loop(server)
        core, _ = standalone_core(loop)
        core.kill_cursor_later(KillCursor(A, "db", {"killCursors": "c", "cursors": [Int64(7)]}))
        loop.run_for(1.5)
        [kill] = server.commands("killCursors")
        assert kill.body["cursors"] == [7] and "maxTimeMS" not in kill.body
        assert core.pool(A).in_use_connection_count == 0

    def test_a_hanging_kill_cursors_does_not_stall_the_pools_upkeep(self) -> None:
        # killCursors is best effort: a server that never answers it must not keep the
        # upkeep task from closing idle connections (maxIdleTimeMS) for ever
        server = FakeServer(A)
        server.queue("killCursors", Hang())
        loop = Loop(server)
        core, events = standalone_core(loop, "&maxIdleTimeMS=30000")
        loop.run(drive(core, ping()))
        core.kill_cursor_later(KillCursor(A, "db", {"killCursors": "c", "cursors": [Int64(7)]}))
        start = loop.now
        loop.run_for(10.0)
        # the kill gave up (its connection closed: its exchange was cut) ...
        assert len(server.commands("killCursors")) == 1
        cut = [e for e in events if isinstance(e, ConnectionClosed)]
        assert [e.reason for e in cut] == ["error"]
        assert loop.now - start >= KILL_CURSORS_TIMEOUT
        # ... and the upkeep task goes on: the next idle connection is closed in time
        loop.run(drive(core, ping()))
        loop.run_for(35.0)
        reasons = [e.reason for e in events if isinstance(e, ConnectionClosed)]
        assert reasons == ["error", "idle"], reasons
        assert core.pool(A).in_use_connection_count == 0
        core.close(loop.now)
        loop.settle()
        assert loop.task_names() == []


# -- no lost wake-ups, whatever the interleaving ----------------------------------------------------


class TestWakeUps:
    """A waiting flow resumes at the fake instant what it waits for happens, in every order the
    tasks may take their steps (the runtime lets go of the core at each primitive)."""

    @settings(max_examples=60, deadline=None)
    @given(seed=st.integers(0, 2**32 - 1), delay=st.sampled_from([0.0, 0.5, 2.0]))
    def test_selection_resumes_when_the_server_is_discovered(self, seed: int, delay: float) -> None:
        server = FakeServer(A)
        server.hello_delay = delay
        loop = Loop(server, order_seed=seed)
        core = make_core(loop, "mongodb://a/?directConnection=true&serverSelectionTimeoutMS=30000")
        start = loop.now
        assert loop.run(core.select_server(SelectServer())).address == A
        assert loop.now == start + delay

    @settings(max_examples=60, deadline=None)
    @given(seed=st.integers(0, 2**32 - 1), hold=st.sampled_from([0.0, 0.3, 1.0]))
    def test_a_waiter_gets_the_connection_when_it_is_checked_in(
        self, seed: int, hold: float
    ) -> None:
        loop = Loop(FakeServer(A), order_seed=seed)
        core = make_core(loop, "mongodb://a/?directConnection=true&maxPoolSize=1")
        loop.run(core.select_server(SelectServer()))
        first = loop.run(core.check_out(A))
        start = loop.now
        loop.at(start + hold, lambda: core.check_in(first))
        second = loop.run(core.check_out(A))
        assert second is first
        assert loop.now == start + hold
        core.check_in(second)
        assert core.pool(A).in_use_connection_count == 0

    @settings(max_examples=40, deadline=None)
    @given(seed=st.integers(0, 2**32 - 1))
    def test_operations_in_parallel_all_finish_at_once(self, seed: int) -> None:
        server = FakeServer(A)
        server.handlers["ping"] = lambda body: Later(0.1, {"ok": 1.0})
        loop = Loop(server, order_seed=seed)
        core = make_core(loop, "mongodb://a/?directConnection=true&maxPoolSize=2")
        start = loop.now
        tasks = [loop.start(drive(core, ping()), f"op {i}") for i in range(6)]
        loop.run_until(lambda: all(t.done for t in tasks), limit=10)
        assert all(t.failure is None and t.result["ok"] == 1 for t in tasks)
        # 6 pings of 0.1 s on 2 connections: 3 rounds, no time lost waiting for a wake-up
        assert loop.now == pytest.approx(start + 0.3)
        assert core.pool(A).total_connection_count <= 2
        assert core.pool(A).in_use_connection_count == 0


def _recording(flow: Any, asked: list[str]) -> Any:
    """``flow``, noting the name of every primitive it asks the runtime for."""
    answer: Any = None
    while True:
        try:
            request = flow.send(answer)
        except StopIteration as stop:
            return stop.value
        asked.append(type(request).__name__)
        answer = yield request
