"""The client core's flows, one by one, against scripted servers in fake time.

Each flow (open_link, exchange, read_more, a ServerMonitor's tasks, ClientCore.select_server,
ClientCore.check_out, drive) is run by :class:`client_harness.Loop`, which answers the runtime
seam's primitives from :class:`client_harness.FakeServer` objects and jumps its clock to the
next thing that can happen: no sockets, no threads, no sleeps.  Times asserted are exact fake
times, so "fails after its deadline" means at the deadline, not before and not later.
"""

from __future__ import annotations

import datetime
from collections.abc import Generator, Iterator, Mapping
from typing import Any

import pytest
from client_harness import (
    METADATA,
    Cut,
    Drop,
    FakeServer,
    Hang,
    Later,
    Loop,
    Trickle,
    make_core,
    member_hello,
    standalone_hello,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import Int64
from mongo_sansio.client.core import KillCursor
from mongo_sansio.client.events import CommandStartedEvent, CommandSucceededEvent
from mongo_sansio.client.execute import KILL_CURSORS_TIMEOUT, drive
from mongo_sansio.client.link import Link, LinkOptions, exchange, open_link, read_more
from mongo_sansio.client.monitors import ServerMonitor
from mongo_sansio.client.runtime import Wait
from mongo_sansio.cmap.errors import WaitQueueTimeoutError
from mongo_sansio.cmap.events import (
    ConnectionCheckedIn,
    ConnectionCheckedOut,
    ConnectionClosed,
    PoolCleared,
)
from mongo_sansio.command import run_command
from mongo_sansio.connection import HandshakeOptions
from mongo_sansio.errors import (
    InvalidOperation,
    MongoError,
    NetworkError,
    NetworkTimeout,
    ServerError,
)
from mongo_sansio.flow import Now, SelectServer, ServerInfo
from mongo_sansio.sdam.description import ServerType, TopologyType
from mongo_sansio.sdam.heartbeat import MonitorSettings
from mongo_sansio.sdam.heartbeat_actions import (
    ReportHeartbeatFailed,
    ReportHeartbeatStarted,
    ReportHeartbeatSucceeded,
    ReportRoundTripTime,
)
from mongo_sansio.sdam.heartbeat_states import ServerMonitoringMode
from mongo_sansio.selection import ServerSelectionTimeoutError
from mongo_sansio.wire import RequestIds

A = ("a", 27017)
B = ("b", 27017)
C = ("c", 27017)


def link_options(loop: Loop) -> LinkOptions:
    return LinkOptions(
        handshake=HandshakeOptions(),
        metadata=METADATA,
        request_ids=RequestIds().next,
        close_stream=loop.close_stream,
    )


def opened(loop: Loop, address: tuple[str, int] = A) -> Link:
    link = loop.run(open_link(1, address, link_options(loop), deadline=None))
    assert isinstance(link, Link)
    return link


def ping(server: ServerInfo | None = None, **body: Any) -> Generator[Any, Any, Any]:
    """An operation flow: select a server (unless given), run ping on it."""
    if server is None:
        server = yield SelectServer()
    return (yield from run_command(server, "admin", {"ping": 1, **body}))


# -- open_link ------------------------------------------------------------------------------------


class TestOpenLink:
    def test_handshake_without_auth(self) -> None:
        server = FakeServer(A)
        server.hello_behaviour = Later(0.25, {**standalone_hello(), "connectionId": 7})
        loop = Loop(server)
        link = opened(loop)
        assert link.description is not None
        assert link.description.server_connection_id == 7
        assert link.round_trip_time == pytest.approx(0.25)
        assert not link.broken
        [hello] = server.requests
        assert hello.name == "isMaster"  # legacy OP_QUERY hello without a Stable API
        assert hello.body["client"] == METADATA
        assert "saslSupportedMechs" not in hello.body
        assert "speculativeAuthenticate" not in hello.body

    def test_refused_connection_raises_network_error(self) -> None:
        server = FakeServer(A)
        server.down = True
        loop = Loop(server)
        with pytest.raises(NetworkError):
            opened(loop)
        assert loop.streams == []

    def test_hello_error_closes_the_stream(self) -> None:
        server = FakeServer(A)
        server.hello_behaviour = Later(0, {"ok": 0.0, "code": 13, "errmsg": "no"})
        loop = Loop(server)
        with pytest.raises(ServerError):
            opened(loop)
        assert [s.closed for s in loop.streams] == [True]

    def test_handshake_bounded_by_its_deadline(self) -> None:
        server = FakeServer(A)
        server.hello_behaviour = Trickle(0.3, standalone_hello())
        loop = Loop(server)
        start = loop.now
        with pytest.raises(NetworkTimeout):
            loop.run(open_link(1, A, link_options(loop), deadline=start + 2.0))
        assert loop.now == start + 2.0
        assert [s.closed for s in loop.streams] == [True]

    def test_connect_that_never_completes_times_out(self) -> None:
        server = FakeServer(A)
        server.hangs = True
        loop = Loop(server)
        with pytest.raises(NetworkTimeout):
            loop.run(open_link(1, A, link_options(loop), deadline=loop.now + 1.5))
        assert loop.now == 1001.5


# -- exchange -------------------------------------------------------------------------------------


class TestExchange:
    def test_reply_in_one_byte_chunks(self) -> None:
        server = FakeServer(A)
        server.handlers["echo"] = lambda body: {"ok": 1.0, "got": body["echo"], "pad": "x" * 50}
        loop = Loop(server)
        link = opened(loop)
        server.chunk = 1
        flow = exchange(link, "db", {"echo": "hi"}, deadline=None)
        reply = loop.run(flow)
        assert reply.document["got"] == "hi"
        assert not link.broken
        # every byte was a Receive of its own, and the link is ready for the next command
        server.chunk = None
        assert loop.run(exchange(link, "db", {"echo": 2}, deadline=None)).document["got"] == 2

    def test_eof_mid_reply_is_a_network_error_and_closes_the_link(self) -> None:
        server = FakeServer(A)
        server.queue("find", Cut(10, {"ok": 1.0, "cursor": {"id": 0, "firstBatch": []}}))
        loop = Loop(server)
        link = opened(loop)
        with pytest.raises(NetworkError) as info:
            loop.run(exchange(link, "db", {"find": "c"}, deadline=None))
        assert not isinstance(info.value, NetworkTimeout)
        assert link.broken and link.stream is None
        assert loop.streams[0].closed
        with pytest.raises(NetworkError):  # never reused
            loop.run(exchange(link, "db", {"ping": 1}, deadline=None))
        assert len(server.commands()) == 1

    def test_eof_before_any_byte(self) -> None:
        server = FakeServer(A)
        server.queue("ping", Drop())
        loop = Loop(server)
        link = opened(loop)
        with pytest.raises(NetworkError):
            loop.run(exchange(link, "db", {"ping": 1}, deadline=None))
        assert link.broken

    def test_deadline_passed_is_a_network_timeout_and_closes_the_link(self) -> None:
        server = FakeServer(A)
        server.queue("ping", Hang())
        loop = Loop(server)
        link = opened(loop)
        start = loop.now
        with pytest.raises(NetworkTimeout) as info:
            loop.run(exchange(link, "db", {"ping": 1}, deadline=start + 1.0))
        assert info.value.timeout is True
        assert loop.now == start + 1.0
        assert link.broken and loop.streams[0].closed

    def test_one_deadline_bounds_a_trickled_reply(self) -> None:
        server = FakeServer(A)
        server.queue("ping", Trickle(0.3))  # each byte well within any per-read timeout
        loop = Loop(server)
        link = opened(loop)
        start = loop.now
        with pytest.raises(NetworkTimeout):
            loop.run(exchange(link, "db", {"ping": 1}, deadline=start + 2.0))
        assert loop.now == start + 2.0
        assert link.broken

    def test_deadline_already_passed_sends_nothing(self) -> None:
        server = FakeServer(A)
        loop = Loop(server)
        link = opened(loop)
        with pytest.raises(NetworkTimeout):
            loop.run(exchange(link, "db", {"ping": 1}, deadline=loop.now))
        assert server.commands() == []
        assert link.broken  # the send was cut: the stream's state is unknown

    def test_encoding_error_leaves_the_link_usable(self) -> None:
        server = FakeServer(A)
        loop = Loop(server)
        link = opened(loop)
        with pytest.raises(MongoError):
            loop.run(exchange(link, "db", {"ping": 1, "bad": object()}, deadline=None))
        assert not link.broken
        assert loop.run(exchange(link, "db", {"ping": 1}, deadline=None)).document["ok"] == 1

    def test_closing_the_flow_mid_read_closes_the_link(self) -> None:
        server = FakeServer(A)
        server.queue("ping", Hang())
        loop = Loop(server)
        link = opened(loop)
        flow = exchange(link, "db", {"ping": 1}, deadline=None)
        loop.run(flow, cut_after=2)  # SendAll, then the Receive it waits in
        assert link.broken and loop.streams[0].closed

    def test_read_more_follows_a_stream_of_replies(self) -> None:
        server = FakeServer(A)
        loop = Loop(server)
        link = opened(loop)
        version = server.hello_document()["topologyVersion"]
        body = {"hello": 1, "topologyVersion": version, "maxAwaitTimeMS": 5000}
        start = loop.now
        loop.at(start + 1, lambda: server.bump())
        first = loop.run(exchange(link, "admin", body, exhaust_allowed=True, deadline=None))
        assert first.more_to_come and loop.now == start + 1
        loop.at(start + 2, lambda: server.bump())
        second = loop.run(read_more(link, deadline=None))
        assert second.more_to_come and second.document["topologyVersion"]["counter"] == 2
        with pytest.raises(NetworkTimeout):
            loop.run(read_more(link, deadline=loop.now + 0.5))
        assert link.broken


# -- ServerMonitor ----------------------------------------------------------------------------------


def monitor_on(
    loop: Loop,
    mode: ServerMonitoringMode = ServerMonitoringMode.AUTO,
    heartbeat: float = 10.0,
) -> tuple[ServerMonitor, list[Any]]:
    reports: list[Any] = []
    ids = iter(range(1, 1000))
    monitor = ServerMonitor(
        A,
        A,
        MonitorSettings(
            heartbeat_frequency=heartbeat, connect_timeout=5.0, server_monitoring_mode=mode
        ),
        link_options=link_options(loop),
        next_link_id=lambda: next(ids),
        report=reports.append,
    )
    for spawn in monitor.start(loop.now):
        loop.spawn(spawn.flow, spawn.name)
    return monitor, reports


def kinds(reports: list[Any]) -> list[str]:
    """The heartbeat reports' kinds in order (RTT samples left out)."""
    heartbeats = (ReportHeartbeatStarted, ReportHeartbeatSucceeded, ReportHeartbeatFailed)
    return [
        type(r).__name__.removeprefix("ReportHeartbeat")
        for r in reports
        if isinstance(r, heartbeats)
    ]


def heartbeats(reports: list[Any]) -> list[Any]:
    return [r for r in reports if not isinstance(r, ReportRoundTripTime)]


class TestServerMonitor:
    def test_first_check_is_the_handshake(self) -> None:
        server = FakeServer(A)
        server.hello_delay = 0.05
        loop = Loop(server)
        _, reports = monitor_on(loop)
        loop.run_until(lambda: any(isinstance(r, ReportHeartbeatSucceeded) for r in reports))
        started, succeeded = reports[:2]
        assert isinstance(started, ReportHeartbeatStarted) and not started.event.awaited
        assert isinstance(succeeded, ReportHeartbeatSucceeded)
        assert not succeeded.event.awaited
        assert succeeded.event.duration == pytest.approx(0.05)
        assert succeeded.event.reply["isWritablePrimary"] is True
        assert server.requests[0].name == "isMaster" and "client" in server.requests[0].body

    def test_streaming_reports_a_change_at_once(self) -> None:
        server = FakeServer(A)
        loop = Loop(server)
        _, reports = monitor_on(loop, heartbeat=10.0)
        loop.run_for(1.0)
        assert kinds(reports) == ["Started", "Succeeded", "Started"]  # an awaited check waits
        awaited = [r for r in server.requests if "topologyVersion" in r.body]
        assert awaited and awaited[0].flags & (1 << 16)  # exhaustAllowed
        start = loop.now
        loop.at(start + 2.5, lambda: server.bump(isWritablePrimary=False, secondary=True))
        loop.run_until(lambda: len(heartbeats(reports)) >= 4)
        assert loop.now == start + 2.5  # not at the next heartbeat, 10 s away
        fourth = heartbeats(reports)[3]
        assert isinstance(fourth, ReportHeartbeatSucceeded) and fourth.event.awaited
        assert fourth.event.reply["secondary"] is True
        # streaming continues on the same connection without a new request (moreToCome)
        hellos_before = len(server.requests)
        loop.at(loop.now + 1, lambda: server.bump())
        loop.run_until(
            lambda: len([r for r in reports if isinstance(r, ReportHeartbeatSucceeded)]) >= 3
        )
        assert len([r for r in server.requests if r.stream == 1]) == len(
            [r for r in server.requests[:hellos_before] if r.stream == 1]
        )

    def test_polling_checks_every_heartbeat(self) -> None:
        server = FakeServer(A)
        loop = Loop(server)
        start = loop.now
        _, reports = monitor_on(loop, mode=ServerMonitoringMode.POLL, heartbeat=2.0)
        loop.run_for(7.0)
        successes = [r for r in reports if isinstance(r, ReportHeartbeatSucceeded)]
        assert [round(r.now - start, 6) for r in successes] == [0.0, 2.0, 4.0, 6.0]
        assert all(not r.event.awaited for r in successes)
        assert all("topologyVersion" not in r.body for r in server.requests)
        assert {r.stream for r in server.requests} == {1}  # no RTT connection when polling

    def test_a_cancelled_check_reports_nothing(self) -> None:
        server = FakeServer(A)
        loop = Loop(server)
        monitor, reports = monitor_on(loop)
        loop.run_for(1.0)
        assert kinds(reports) == ["Started", "Succeeded", "Started"]
        monitor.cancel_check(loop.now)
        loop.settle()
        assert loop.streams[0].closed
        assert kinds(reports) == ["Started", "Succeeded", "Started"]  # no Failed for it
        assert not any(isinstance(r, ReportHeartbeatFailed) for r in reports)

    def test_a_dropped_connection_is_a_failed_check(self) -> None:
        server = FakeServer(A)
        loop = Loop(server)
        _, reports = monitor_on(loop, mode=ServerMonitoringMode.POLL, heartbeat=2.0)
        loop.run_for(1.0)
        server.down = True
        for stream in server.streams:
            stream.write_eof()
        loop.run_for(1.5)
        # the failed check, then the spec's one immediate retry on a new connection (refused)
        assert kinds(reports) == ["Started", "Succeeded", "Started", "Failed", "Started", "Failed"]
        failures = [r for r in reports if isinstance(r, ReportHeartbeatFailed)]
        assert all(isinstance(r.event.failure, NetworkError) for r in failures)
        assert [r.now for r in failures] == [1002.0, 1002.0]
        loop.run_for(1.0)  # then it waits for the next heartbeat
        assert len(kinds(reports)) == 6

    def test_close_during_the_handshake_cuts_it(self) -> None:
        server = FakeServer(A)
        server.hello_behaviour = Hang()
        loop = Loop(server)
        monitor, reports = monitor_on(loop)
        loop.run_for(1.0)
        assert kinds(reports) == ["Started"]
        monitor.close(loop.now)
        loop.settle()  # no time passes: the handshake is cut, not timed out
        assert loop.open_streams() == []
        assert loop.task_names() == []
        assert kinds(reports) == ["Started"]
        assert loop.background_failures == []

    def test_cancel_during_the_handshake_closes_its_connection(self) -> None:
        server = FakeServer(A)
        server.hello_script.extend([Hang(), None])
        loop = Loop(server)
        monitor, reports = monitor_on(loop, heartbeat=2.0)
        loop.run_for(1.0)
        monitor.cancel_check(loop.now)
        loop.settle()
        assert loop.streams[0].closed
        assert kinds(reports) == ["Started"]  # the cancelled check reports nothing
        loop.run_for(3.0)  # the next check, on a new connection, succeeds
        assert kinds(reports)[:3] == ["Started", "Started", "Succeeded"]
        assert reports[2].now == 1003.0  # a heartbeat after the cancelled check
        assert loop.background_failures == []

    def test_close_ends_the_tasks_and_closes_the_streams(self) -> None:
        server = FakeServer(A)
        loop = Loop(server)
        monitor, reports = monitor_on(loop)
        loop.run_for(1.0)
        count = len(reports)
        monitor.close(loop.now)
        loop.run_for(30.0)
        assert loop.task_names() == []
        assert loop.open_streams() == []
        assert len(reports) == count
        assert loop.background_failures == []


# -- select_server --------------------------------------------------------------------------------


def replica_set(primary: tuple[str, int] | None) -> tuple[FakeServer, ...]:
    hosts = (A, B, C)
    return tuple(FakeServer(a, member_hello(a, hosts, primary)) for a in hosts)


class TestSelectServer:
    def test_waits_on_the_topology_until_a_primary_appears(self) -> None:
        servers = replica_set(primary=None)
        loop = Loop(*servers)
        core = make_core(loop, "mongodb://a,b,c/?replicaSet=rs0&heartbeatFrequencyMS=10000")
        start = loop.now

        def elect_b() -> None:
            for server in servers:
                server.bump(**member_hello(server.address, (A, B, C), B))

        loop.at(start + 3.0, elect_b)
        info = loop.run(core.select_server(SelectServer(for_writes=True)))
        assert info.address == B and info.is_writable
        assert loop.now == start + 3.0  # woken by the change, not at the next heartbeat

    def test_wakes_on_signal_not_by_polling(self) -> None:
        servers = replica_set(primary=None)
        loop = Loop(*servers)
        core = make_core(loop, "mongodb://a,b,c/?replicaSet=rs0&serverSelectionTimeoutMS=30000")
        task = loop.start(core.select_server(SelectServer(for_writes=True)), "select")
        loop.run_for(20.0)
        assert not task.done
        # a handful of wake-ups (one per topology change), not one per millisecond
        assert task.primitives < 40, task.primitive_log

    def test_fails_after_its_deadline_with_the_time_waited(self) -> None:
        servers = replica_set(primary=None)
        loop = Loop(*servers)
        core = make_core(loop, "mongodb://a,b,c/?replicaSet=rs0&serverSelectionTimeoutMS=1500")
        start = loop.now
        with pytest.raises(ServerSelectionTimeoutError) as info:
            loop.run(core.select_server(SelectServer(for_writes=True)))
        assert loop.now == start + 1.5
        assert "1.5 s" in str(info.value)
        assert info.value.timeout is True

    def test_the_operation_deadline_wins_when_earlier(self) -> None:
        servers = replica_set(primary=None)
        loop = Loop(*servers)
        core = make_core(loop, "mongodb://a,b,c/?replicaSet=rs0&serverSelectionTimeoutMS=30000")
        start = loop.now
        with pytest.raises(ServerSelectionTimeoutError) as info:
            loop.run(core.select_server(SelectServer(for_writes=True), start + 0.75))
        assert loop.now == start + 0.75
        assert "0.75 s" in str(info.value)

    def test_unreachable_server_fails_after_the_timeout_not_at_once(self) -> None:
        server = FakeServer(A)
        server.down = True
        loop = Loop(server)
        core = make_core(loop, "mongodb://a/?serverSelectionTimeoutMS=500")
        start = loop.now
        with pytest.raises(ServerSelectionTimeoutError) as info:
            loop.run(core.select_server(SelectServer()))
        assert loop.now == start + 0.5
        assert "0.5 s" in str(info.value)

    def test_a_change_while_the_flow_reads_the_clock_is_not_lost(self) -> None:
        # The flow looks at the topology, finds nothing, then yields Now: the runtime lets go
        # of the core there, and a monitor may change the topology before the flow asks to
        # be woken.  That change must still wake it (not the end of serverSelectionTimeoutMS).
        server = FakeServer(A)
        server.hello_behaviour = Later(5.0, {**standalone_hello(), "connectionId": 1})
        loop = Loop(server)
        core = make_core(loop, "mongodb://a/?directConnection=true&serverSelectionTimeoutMS=30000")
        flow = core.select_server(SelectServer())
        assert isinstance(next(flow), Now)
        request = flow.send(loop.now)  # nothing suitable yet: the flow reads the clock
        assert isinstance(request, Now)
        loop.run_for(6.0)  # meanwhile the monitor's handshake completes: a standalone
        assert core.description.servers[A].type is ServerType.STANDALONE
        answer: Any = loop.now
        for _ in range(10):  # Now answered with the clock, a fired signal at once
            try:
                request = flow.send(answer)
            except StopIteration as done:
                assert done.value.address == A
                break
            assert not isinstance(request, Wait) or request.signal.fired, (
                f"the flow waits on {request!r} although the topology changed"
            )
            answer = loop.now if isinstance(request, Now) else True
        else:
            raise AssertionError("the selection did not end")

    def test_close_wakes_a_waiting_selection(self) -> None:
        servers = replica_set(primary=None)
        loop = Loop(*servers)
        core = make_core(loop, "mongodb://a,b,c/?replicaSet=rs0&serverSelectionTimeoutMS=30000")
        task = loop.start(core.select_server(SelectServer(for_writes=True)), "select")
        loop.run_for(1.0)
        core.close(loop.now)
        loop.settle()
        assert task.done and isinstance(task.failure, InvalidOperation)


# -- check_out ------------------------------------------------------------------------------------


def standalone_core(loop: Loop, options: str = "") -> Any:
    events: list[Any] = []
    core = make_core(loop, f"mongodb://a/?directConnection=true{options}", publish=events.append)
    loop.run(core.select_server(SelectServer()))
    return core, events


class TestCheckOut:
    def test_second_waiter_gets_the_connection_when_the_first_checks_in(self) -> None:
        loop = Loop(FakeServer(A))
        core, events = standalone_core(loop, "&maxPoolSize=1")
        pool = core.pool(A)
        first = loop.run(core.check_out(A))
        second = loop.start(core.check_out(A), "second")
        loop.run_for(5.0)
        assert not second.done
        assert pool.wait_queue_length == 1 and pool.total_connection_count == 1
        core.check_in(first)
        loop.settle()
        assert second.done and second.result is first
        assert pool.in_use_connection_count == 1
        core.check_in(second.result)
        assert pool.in_use_connection_count == 0 and pool.wait_queue_length == 0
        assert [type(e) for e in events if isinstance(e, ConnectionCheckedOut)] == [
            ConnectionCheckedOut
        ] * 2

    def test_wait_queue_timeout(self) -> None:
        loop = Loop(FakeServer(A))
        core, _ = standalone_core(loop, "&maxPoolSize=1&waitQueueTimeoutMS=200")
        pool = core.pool(A)
        first = loop.run(core.check_out(A))
        start = loop.now
        with pytest.raises(WaitQueueTimeoutError) as info:
            loop.run(core.check_out(A))
        assert loop.now == pytest.approx(start + 0.2)
        assert info.value.timeout is True
        assert pool.wait_queue_length == 0
        core.check_in(first)
        assert pool.in_use_connection_count == 0

    def test_operation_deadline_bounds_the_wait(self) -> None:
        loop = Loop(FakeServer(A))
        core, _ = standalone_core(loop, "&maxPoolSize=1")
        pool = core.pool(A)
        first = loop.run(core.check_out(A))
        start = loop.now
        with pytest.raises(MongoError) as info:
            loop.run(core.check_out(A, start + 0.3))
        assert info.value.timeout is True
        assert loop.now == pytest.approx(start + 0.3)
        assert pool.wait_queue_length == 0
        core.check_in(first)

    def test_close_cuts_a_pooled_connections_handshake(self) -> None:
        server = FakeServer(A)
        server.hello_script.extend([None, Hang()])  # the monitor's, then the pool's
        loop = Loop(server)
        core = make_core(loop, "mongodb://a/?directConnection=true&serverMonitoringMode=poll")
        loop.run(core.select_server(SelectServer()))
        waiter = loop.start(core.check_out(A), "check-out")
        loop.run_for(1.0)
        assert core.pool(A).pending_connection_count == 1
        assert len(loop.open_streams()) == 2
        core.close(loop.now)
        loop.settle()  # no time passes: closing cuts the handshake
        assert loop.open_streams() == []
        assert loop.task_names() == []
        assert waiter.done and isinstance(waiter.failure, MongoError)
        assert loop.background_failures == []

    def test_a_broken_link_is_closed_at_check_in(self) -> None:
        loop = Loop(FakeServer(A))
        core, events = standalone_core(loop)
        pool = core.pool(A)
        link = loop.run(core.check_out(A))
        link.close()
        core.check_in(link)
        assert pool.total_connection_count == 0
        assert any(isinstance(e, ConnectionClosed) for e in events)
        again = loop.run(core.check_out(A))
        assert again is not link and not again.broken


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
