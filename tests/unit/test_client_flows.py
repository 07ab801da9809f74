"""The client core's flows, one by one, against scripted servers in fake time.

Each flow (open_link, exchange, read_more, a ServerMonitor's tasks, ClientCore.select_server,
ClientCore.check_out) is run by :class:`client_harness.Loop`, which answers the runtime seam's
primitives from :class:`client_harness.FakeServer` objects and jumps its clock to the next
thing that can happen: no sockets, no threads, no sleeps.  Times asserted are exact fake times,
so "fails after its deadline" means at the deadline, not before and not later.  drive(), the
upkeep task and the wake-up properties are in test_client_drive.py.
"""

from __future__ import annotations

import signal
from collections.abc import Generator
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

from mongo_sansio.client.link import Link, LinkOptions, exchange, open_link, read_more
from mongo_sansio.client.monitors import ServerMonitor
from mongo_sansio.client.runtime import Wait
from mongo_sansio.cmap.errors import WaitQueueTimeoutError
from mongo_sansio.cmap.events import (
    ConnectionCheckedOut,
    ConnectionClosed,
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
from mongo_sansio.flow import MarkServerUnknown, Now, SelectServer, ServerInfo
from mongo_sansio.sdam.description import ServerType
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
        loop.run(flow, cut_after=1)  # the SendAll whose read of the reply it waits in
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

    def test_operation_deadline_bounds_the_opening_of_a_new_connection(self) -> None:
        # the pool's connection answers its hello 3 s late (connectTimeoutMS is 10 s): the
        # operation's deadline, 0.5 s away, ends the check-out, and the connection goes on
        # opening for the pool
        server = FakeServer(A)
        server.hello_script.extend([None, Later(3.0, server.hello_document())])
        loop = Loop(server)
        core = make_core(loop, "mongodb://a/?directConnection=true&serverMonitoringMode=poll")
        loop.run(core.select_server(SelectServer()))
        pool = core.pool(A)
        start = loop.now
        with pytest.raises(WaitQueueTimeoutError) as info:
            loop.run(core.check_out(A, start + 0.5))
        assert info.value.timeout is True and "established" in str(info.value)
        assert loop.now == pytest.approx(start + 0.5)
        assert pool.pending_connection_count == 1 and pool.wait_queue_length == 0
        loop.run_for(3.0)
        assert pool.available_connection_count == 1
        assert core.description.servers[A].type is not ServerType.UNKNOWN
        link = loop.run(core.check_out(A, loop.now + 0.5))
        core.check_in(link)

    def test_wait_queue_timeout_ms_does_not_bound_the_opening_of_a_new_connection(self) -> None:
        # CMAP: waitQueueTimeoutMS stops applying once a connection is being opened for the
        # request; the check-out then waits (asleep, not polling) for that connection
        server = FakeServer(A)
        server.hello_script.extend([None, Later(1.0, server.hello_document())])
        loop = Loop(server)
        core = make_core(
            loop,
            "mongodb://a/?directConnection=true&serverMonitoringMode=poll&waitQueueTimeoutMS=200",
        )
        loop.run(core.select_server(SelectServer()))
        start = loop.now
        waiter = loop.start(core.check_out(A), "check-out")

        def spinning(*_: object) -> None:
            raise AssertionError("the check-out polls without end past waitQueueTimeoutMS")

        # (a check-out that polls never lets simulated time move: a real-time alarm ends it)
        previous = signal.signal(signal.SIGALRM, spinning)
        signal.setitimer(signal.ITIMER_REAL, 10.0)
        try:
            steps = 0
            while not waiter.done and steps < 10_000:
                loop.run_for(0.05)
                steps += 1
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        assert waiter.done and waiter.failure is None
        assert loop.now == pytest.approx(start + 1.0, abs=0.06)
        assert waiter.primitives < 20, waiter.primitives  # no polling past the 0.2 s
        core.check_in(waiter.result)

    def test_a_handshake_the_pool_cleared_meanwhile_does_not_make_the_server_known(self) -> None:
        # The pool's connection answers its hello 0.3 s late; at 0.1 s an operation reports a
        # shutdown error (Unknown, pool cleared).  The late reply is older news than that
        # error: until the monitor's next check (not before 0.5 s), the server stays Unknown.
        server = FakeServer(A)
        server.hello_script.extend([None, Later(0.3, server.hello_document())])
        loop = Loop(server)
        core = make_core(loop, "mongodb://a/?directConnection=true&serverMonitoringMode=poll")
        loop.run(core.select_server(SelectServer()))
        pool = core.pool(A)
        assert pool is not None
        generation = pool.generation
        waiter = loop.start(core.check_out(A), "check-out")
        loop.run_for(0.1)
        assert pool.pending_connection_count == 1
        error = ServerError("shutting down", code=91)
        core.mark_server_unknown(MarkServerUnknown(A, error), loop.now)
        assert pool.generation == generation + 1
        assert core.description.servers[A].type is ServerType.UNKNOWN
        loop.run_for(0.3)  # the stale handshake has completed
        assert core.description.servers[A].type is ServerType.UNKNOWN
        core.close(loop.now)
        loop.settle()
        assert waiter.done

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
