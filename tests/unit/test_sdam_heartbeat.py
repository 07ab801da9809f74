"""The monitor machine (mongo_sansio.sdam.heartbeat): schedule, streaming, RTT channel,
retry, cancellation and misuse, on a virtual clock; then a hypothesis state machine playing a
random adapter and server."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from mongo_sansio.bson import Int64, ObjectId
from mongo_sansio.errors import ConfigurationError, LocalProtocolError, RemoteProtocolError
from mongo_sansio.sdam import (
    MONITOR_TRANSITIONS,
    RTT_TRANSITIONS,
    Channel,
    ClearPool,
    CloseMonitorConnection,
    InvalidHelloReply,
    Monitor,
    MonitorOutput,
    MonitorSettings,
    MonitorState,
    OpenMonitorConnection,
    ReadNextReply,
    ReadyPool,
    ReportHeartbeatFailed,
    ReportHeartbeatStarted,
    ReportHeartbeatSucceeded,
    ReportRoundTripTime,
    RttState,
    SendHello,
    ServerHeartbeatFailedEvent,
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
    ServerMonitoringMode,
    ServerType,
    Topology,
    TopologySettings,
    report_to_topology,
)

A = ("a", 27017)
PROCESS = ObjectId("00000000000000000000000a")


def tv(counter: int = 0) -> dict[str, Any]:
    return {"processId": PROCESS, "counter": Int64(counter)}


def hello(*, streamable: bool = False, counter: int = 0, **fields: Any) -> dict[str, Any]:
    reply: dict[str, Any] = {"ok": 1, "isWritablePrimary": True, "maxWireVersion": 21}
    if streamable:
        reply["topologyVersion"] = tv(counter)
    reply.update(fields)
    return reply


def monitor(**options: Any) -> Monitor:
    return Monitor(A, MonitorSettings(**options))


def kinds(outputs: list[MonitorOutput]) -> list[str]:
    return [type(o).__name__ for o in outputs]


def one(outputs: list[MonitorOutput], kind: type[Any]) -> Any:
    found = [o for o in outputs if isinstance(o, kind)]
    assert len(found) == 1, f"expected one {kind.__name__} in {kinds(outputs)}"
    return found[0]


def polling(now: float = 0.0, **options: Any) -> Monitor:
    """A monitor whose first check (the handshake) succeeded without topologyVersion."""
    m = monitor(**options)
    m.start(now)
    m.connected(1, hello(), now=now + 0.01)
    assert m.state is MonitorState.WAITING
    return m


def streaming(now: float = 0.0, **options: Any) -> Monitor:
    m = monitor(**options)
    m.start(now)
    m.connected(1, hello(streamable=True), now=now + 0.01)
    assert m.state is MonitorState.STREAMING
    return m


# -- settings ---------------------------------------------------------------------------------


def test_settings_defaults_and_validation() -> None:
    s = MonitorSettings()
    assert (s.heartbeat_frequency, s.connect_timeout) == (10.0, 20.0)
    assert s.server_monitoring_mode is ServerMonitoringMode.AUTO and s.streaming_enabled
    assert MonitorSettings(server_monitoring_mode="poll").streaming_enabled is False
    assert MonitorSettings(faas=True).streaming_enabled is False  # auto on FaaS polls
    assert MonitorSettings(faas=True, server_monitoring_mode="stream").streaming_enabled
    with pytest.raises(ConfigurationError, match="heartbeatFrequencyMS"):
        MonitorSettings(heartbeat_frequency=0.4)
    with pytest.raises(ConfigurationError, match="connectTimeoutMS"):
        MonitorSettings(connect_timeout=-1)
    with pytest.raises(ConfigurationError, match="serverMonitoringMode"):
        MonitorSettings(server_monitoring_mode="sometimes")
    with pytest.raises(LocalProtocolError):
        Monitor(("a",), MonitorSettings())  # type: ignore[arg-type]


# -- the first check and polling --------------------------------------------------------------


def test_start_opens_the_check_connection_after_a_started_report() -> None:
    m = monitor()
    out = m.start(5.0)
    assert kinds(out) == ["ReportHeartbeatStarted", "OpenMonitorConnection"]
    assert out[0] == ReportHeartbeatStarted(
        event=ServerHeartbeatStartedEvent(connection_id=A, awaited=False, driver_connection_id=1)
    )
    assert out[1] == OpenMonitorConnection(
        address=A, channel=Channel.CHECK, connection_id=1, timeout=20.0
    )
    assert m.state is MonitorState.CONNECTING and m.next_deadline() is None


def test_handshake_reply_is_the_first_check_and_polling_waits_heartbeat_frequency() -> None:
    m = monitor()
    m.start(5.0)
    out = m.connected(1, hello(), now=5.25)
    report = one(out, ReportHeartbeatSucceeded)
    assert report.event == ServerHeartbeatSucceededEvent(
        connection_id=A, duration=0.25, reply=hello(), awaited=False, driver_connection_id=1
    )
    assert report.now == 5.25
    assert kinds(out) == ["ReportHeartbeatSucceeded"]  # no RTT channel without streaming
    assert m.state is MonitorState.WAITING and m.next_deadline() == 15.25
    assert m.round_trip_times.average == 0.25
    assert m.handle_timeout(15.0) == []  # nothing due yet


def test_heartbeat_events_carry_the_server_connection_id_once_a_reply_told_it() -> None:
    # the logging spec's serverConnectionId, "if known": the connectionId of the check
    # connection's hello replies, forgotten with the connection
    m = monitor()
    assert one(m.start(0.0), ReportHeartbeatStarted).event.server_connection_id is None
    out = m.connected(1, hello(connectionId=Int64(7)), now=0.1)
    assert one(out, ReportHeartbeatSucceeded).event.server_connection_id == 7
    assert one(m.handle_timeout(10.1), ReportHeartbeatStarted).event.server_connection_id == 7
    out = m.failed(1, OSError("reset"), now=10.2)  # a known server: checked again at once
    failed = one(out, ReportHeartbeatFailed)
    assert failed.event.server_connection_id == 7
    restarted = one(out, ReportHeartbeatStarted)
    assert restarted.event.server_connection_id is None  # a new connection: not known yet
    topology = Topology(TopologySettings(seeds=["a:27017"]), topology_id="t")
    topology.open()
    events = report_to_topology(topology, failed)
    assert [e.server_connection_id for e in events if isinstance(e, ServerHeartbeatFailedEvent)] == [7]


def test_handshake_round_trip_time_overrides_the_measured_duration() -> None:
    m = monitor()
    m.start(0.0)
    report = one(m.connected(1, hello(), now=3.0, round_trip_time=0.05), ReportHeartbeatSucceeded)
    assert report.event.duration == 0.05


def test_polling_check_uses_legacy_hello_until_the_server_says_hello_ok() -> None:
    m = polling()
    out = m.handle_timeout(10.01)
    assert kinds(out) == ["ReportHeartbeatStarted", "SendHello"]
    send = out[1]
    assert send.command == {"isMaster": 1, "helloOk": True}
    assert (send.channel, send.connection_id, send.exhaust_allowed) == (Channel.CHECK, 1, False)
    assert send.timeout == 20.0
    assert m.state is MonitorState.CHECKING
    m.reply(1, hello(helloOk=True), now=10.02)
    send = one(m.handle_timeout(20.02), SendHello)
    assert send.command == {"hello": 1, "helloOk": True}


def test_stable_api_always_uses_hello() -> None:
    m = polling(server_api=True)
    assert one(m.handle_timeout(10.01), SendHello).command == {"hello": 1, "helloOk": True}


def test_poll_mode_never_streams_even_with_topology_version() -> None:
    m = monitor(server_monitoring_mode="poll")
    m.start(0.0)
    out = m.connected(1, hello(streamable=True), now=0.1)
    assert kinds(out) == ["ReportHeartbeatSucceeded"]
    assert m.state is MonitorState.WAITING and m.rtt_state is RttState.STOPPED
    send = one(m.handle_timeout(10.1), SendHello)
    assert "topologyVersion" not in send.command and not send.exhaust_allowed


def test_auto_mode_on_faas_polls() -> None:
    m = monitor(faas=True)
    m.start(0.0)
    m.connected(1, hello(streamable=True), now=0.1)
    assert m.state is MonitorState.WAITING


def test_connect_timeout_zero_means_no_timeouts() -> None:
    m = monitor(connect_timeout=0)
    assert one(m.start(0.0), OpenMonitorConnection).timeout is None
    out = m.connected(1, hello(streamable=True), now=0.1)
    assert one(out, SendHello).timeout is None


# -- streaming --------------------------------------------------------------------------------


def test_streaming_starts_after_a_reply_with_topology_version() -> None:
    m = monitor(heartbeat_frequency=5.0)
    m.start(0.0)
    out = m.connected(1, hello(streamable=True), now=0.1)
    assert kinds(out) == [
        "ReportHeartbeatSucceeded",
        "ReportHeartbeatStarted",
        "SendHello",
        "OpenMonitorConnection",
    ]
    assert out[0].event.awaited is False
    assert out[1].event.awaited is True
    send = out[2]
    assert send.command == {
        "isMaster": 1,
        "helloOk": True,
        "topologyVersion": {"processId": PROCESS, "counter": 0},
        "maxAwaitTimeMS": 5000,
    }
    assert type(send.command["maxAwaitTimeMS"]) is Int64
    assert send.exhaust_allowed and send.timeout == 25.0  # connectTimeoutMS + heartbeat
    assert out[3] == OpenMonitorConnection(
        address=A, channel=Channel.RTT, connection_id=2, timeout=20.0
    )
    assert m.state is MonitorState.STREAMING and m.rtt_state is RttState.CONNECTING


def test_more_to_come_replies_are_read_without_a_new_request() -> None:
    m = streaming()
    out = m.reply(1, hello(streamable=True, counter=1), now=4.0, more_to_come=True)
    assert kinds(out) == ["ReportHeartbeatSucceeded", "ReportHeartbeatStarted", "ReadNextReply"]
    assert out[0].event.awaited and out[0].event.duration == pytest.approx(3.99)
    assert out[1].event.awaited
    assert out[2] == ReadNextReply(address=A, channel=Channel.CHECK, connection_id=1, timeout=30.0)
    rtt_before = m.round_trip_times
    out = m.reply(1, hello(streamable=True, counter=2), now=14.0)
    assert m.round_trip_times == rtt_before  # awaited replies are never RTT samples
    assert out[0].event.duration == 10.0
    send = one(out, SendHello)  # no moreToCome: a new awaitable hello, at once
    assert send.command["topologyVersion"] == {"processId": PROCESS, "counter": 2}
    assert m.state is MonitorState.STREAMING and m.next_deadline() is None


def test_more_to_come_without_exhaust_is_the_servers_protocol_error() -> None:
    m = polling()
    m.handle_timeout(10.01)
    out = m.reply(1, hello(), now=10.02, more_to_come=True)
    failed = one(out, ReportHeartbeatFailed)
    assert isinstance(failed.event.failure, RemoteProtocolError)
    assert one(out, CloseMonitorConnection).connection_id == 1
    assert m.state is MonitorState.WAITING


def test_server_that_stops_reporting_topology_version_falls_back_to_polling() -> None:
    m = streaming()
    m.rtt_connected(2, now=0.2)
    out = m.reply(1, hello(), now=3.0)
    assert kinds(out) == ["ReportHeartbeatSucceeded", "CloseMonitorConnection"]
    assert out[1].channel is Channel.RTT  # no RTT connection while polling (the spec)
    assert m.state is MonitorState.WAITING and m.rtt_state is RttState.STOPPED


# -- the RTT channel --------------------------------------------------------------------------


def test_rtt_channel_samples_every_heartbeat_and_tracks_the_recent_minimum() -> None:
    m = streaming(heartbeat_frequency=1.0)
    assert m.round_trip_times.samples == (0.01,)
    assert m.round_trip_times.minimum == 0.0  # reported as 0 until two samples exist
    out = m.rtt_connected(2, now=0.2, round_trip_time=0.03)
    assert out == [ReportRoundTripTime(address=A, rtt=0.03)]
    assert m.rtt_state is RttState.WAITING and m.next_deadline() == 1.2
    send = one(m.handle_timeout(1.2), SendHello)
    assert (send.channel, send.connection_id, send.exhaust_allowed) == (Channel.RTT, 2, False)
    assert m.rtt_state is RttState.PINGING
    assert m.rtt_reply(2, {"ok": 0, "errmsg": "ignored"}, now=1.25) == [
        ReportRoundTripTime(address=A, rtt=pytest.approx(0.05))
    ]
    assert m.round_trip_times.minimum == 0.01
    now = 1.25
    for _ in range(12):  # only the last ten samples count for the minimum
        now += 1.0
        m.handle_timeout(now)
        m.rtt_reply(2, {"ok": 1}, now=now + 0.2)
        now += 0.2
    assert m.round_trip_times.minimum == pytest.approx(0.2)
    assert m.state is MonitorState.STREAMING  # the check channel never noticed


def test_rtt_errors_never_reach_the_topology_and_reconnect_later() -> None:
    m = streaming(heartbeat_frequency=2.0)
    out = m.rtt_failed(2, OSError("reset"), now=0.5)
    assert out == [CloseMonitorConnection(address=A, channel=Channel.RTT, connection_id=2)]
    assert m.rtt_state is RttState.WAITING and m.next_deadline() == 2.5
    reopen = one(m.handle_timeout(2.5), OpenMonitorConnection)
    assert reopen.channel is Channel.RTT and reopen.connection_id == 3
    assert m.rtt_reply(2, {"ok": 1}, now=2.6) == []  # the closed connection's late reply


# -- immediate checks -------------------------------------------------------------------------


def test_request_check_waits_at_least_min_heartbeat_frequency_after_the_last_check() -> None:
    m = polling()  # the check ended at 0.01
    assert m.request_check(0.2) == []
    assert m.next_deadline() == pytest.approx(0.51)
    m.request_check(0.3)  # coalesced: still one check, at the same time
    assert m.next_deadline() == pytest.approx(0.51)
    assert m.handle_timeout(0.5) == []
    assert kinds(m.handle_timeout(0.51)) == ["ReportHeartbeatStarted", "SendHello"]
    assert m.request_check(0.52) == [] and m.state is MonitorState.CHECKING  # ignored
    m.reply(1, hello(), now=0.6)
    m.request_check(5.0)  # long after the last check: at once
    assert m.next_deadline() == 5.0


def test_request_check_is_ignored_while_streaming() -> None:
    m = streaming()
    assert m.request_check(1.0) == [] and m.state is MonitorState.STREAMING
    assert m.next_deadline() is None


# -- failures and the retry rule --------------------------------------------------------------


def test_network_error_on_a_known_server_retries_once_at_once_then_waits() -> None:
    m = streaming()
    err = ConnectionResetError("reset")
    out = m.failed(1, err, now=3.0)
    assert kinds(out) == [
        "ReportHeartbeatFailed",
        "CloseMonitorConnection",
        "ReportHeartbeatStarted",
        "OpenMonitorConnection",
    ]
    assert out[0].event == ServerHeartbeatFailedEvent(
        connection_id=A,
        duration=pytest.approx(2.99),
        failure=err,
        awaited=True,
        driver_connection_id=1,  # the streaming connection that failed
    )
    assert out[0].timeout is False
    assert out[3].connection_id == 3 and m.state is MonitorState.CONNECTING
    assert m.round_trip_times.average is None  # a failed check resets the RTT statistics
    out = m.failed(3, err, now=3.5)
    assert kinds(out) == ["ReportHeartbeatFailed", "CloseMonitorConnection"]
    assert out[0].event.awaited is False
    assert m.state is MonitorState.WAITING and m.next_deadline() == 13.5


def test_first_check_failing_waits() -> None:
    m = monitor()
    m.start(0.0)
    out = m.failed(1, OSError("refused"), now=0.1)
    assert kinds(out) == ["ReportHeartbeatFailed", "CloseMonitorConnection"]
    assert m.next_deadline() == pytest.approx(10.1)
    assert kinds(m.handle_timeout(10.1)) == ["ReportHeartbeatStarted", "OpenMonitorConnection"]


def test_command_error_closes_and_waits_without_retry() -> None:
    m = streaming()
    reply = {"ok": 0, "code": 91, "errmsg": "shutting down"}
    out = m.reply(1, reply, now=1.0)
    assert kinds(out) == ["ReportHeartbeatFailed", "CloseMonitorConnection"]
    assert out[0].event.failure == reply
    assert m.state is MonitorState.WAITING


def test_malformed_reply_is_a_failed_check() -> None:
    m = monitor()
    m.start(0.0)
    out = m.connected(1, hello(topologyVersion={"counter": 1}), now=0.1)
    assert isinstance(one(out, ReportHeartbeatFailed).event.failure, InvalidHelloReply)


def test_network_timeout_is_reported_as_a_timeout() -> None:
    m = streaming()
    assert one(m.failed(1, TimeoutError(), now=40.0, timeout=True), ReportHeartbeatFailed).timeout


# -- cancellation and close -------------------------------------------------------------------


def test_cancel_check_closes_the_connection_and_waits_without_a_report() -> None:
    m = streaming()
    out = m.cancel_check(2.0)
    assert out == [CloseMonitorConnection(address=A, channel=Channel.CHECK, connection_id=1)]
    assert m.state is MonitorState.WAITING and m.next_deadline() == 12.0
    assert m.reply(1, hello(streamable=True), now=2.1) == []  # late reply: ignored
    assert m.failed(1, OSError(), now=2.1) == []
    m.request_check(2.2)
    assert m.next_deadline() == 2.5  # min heartbeat frequency after the cancelled check
    assert m.rtt_state is RttState.CONNECTING  # the RTT channel is not the check


def test_cancel_check_while_waiting_closes_the_idle_polling_connection() -> None:
    m = polling()
    assert kinds(m.cancel_check(1.0)) == ["CloseMonitorConnection"]
    assert m.next_deadline() == pytest.approx(10.01)  # the schedule is unchanged
    assert kinds(m.handle_timeout(10.01)) == ["ReportHeartbeatStarted", "OpenMonitorConnection"]


def test_close_closes_both_connections_and_is_idempotent() -> None:
    m = streaming()
    out = m.close(1.0)
    assert [(o.channel, o.connection_id) for o in out] == [(Channel.CHECK, 1), (Channel.RTT, 2)]
    assert m.state is MonitorState.CLOSED and m.next_deadline() is None
    assert m.close(2.0) == [] and m.request_check(2.0) == [] and m.handle_timeout(99.0) == []
    assert m.reply(1, hello(), now=2.0) == [] and m.rtt_connected(2, now=2.0) == []
    with pytest.raises(LocalProtocolError, match="start"):
        m.start(3.0)


# -- misuse -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.start(1.0),  # twice
        lambda m: m.reply(1, hello(), now=1.0),  # nothing was sent on the idle connection
        lambda m: m.connected(1, hello(), now=1.0),
        lambda m: m.failed(1, OSError(), now=1.0),
        lambda m: m.reply(7, hello(), now=1.0),  # an id never issued
        lambda m: m.reply(True, hello(), now=1.0),
        lambda m: m.reply(1, [("ok", 1)], now=1.0),
        lambda m: m.request_check(float("nan")),
        lambda m: m.handle_timeout("1"),
        lambda m: m.rtt_reply(1, {"ok": 1}, now=1.0),
        lambda m: m.failed(1, OSError(), now=1.0, timeout=1),
    ],
)
def test_misuse_raises_local_protocol_error_and_changes_nothing(call: Any) -> None:
    m = polling()
    before = (m.state, m.rtt_state, m.next_deadline(), m.connection_id)
    with pytest.raises(LocalProtocolError):
        call(m)
    assert (m.state, m.rtt_state, m.next_deadline(), m.connection_id) == before


def test_tables_cover_every_state() -> None:
    assert {s for s, _ in MONITOR_TRANSITIONS} == set(MonitorState)
    assert {s for s, _ in RTT_TRANSITIONS} == set(RttState)


# -- with the topology machine ----------------------------------------------------------------


def test_reports_drive_the_topology_and_each_heartbeat_event_is_published_once() -> None:
    topology = Topology(TopologySettings(seeds=["a:27017"]), topology_id="t")
    topology.open()
    m = monitor()
    published: list[Any] = []

    def feed(outputs: list[MonitorOutput]) -> None:
        for output in outputs:
            if isinstance(output, ReportHeartbeatStarted | ReportHeartbeatSucceeded):
                published.extend(report_to_topology(topology, output))
            elif isinstance(output, ReportHeartbeatFailed | ReportRoundTripTime):
                published.extend(report_to_topology(topology, output))

    feed(m.start(0.0))
    feed(m.connected(1, hello(streamable=True), now=0.02))
    assert topology.description.servers[A].type is ServerType.STANDALONE
    assert any(isinstance(o, ReadyPool) for o in published)
    feed(m.rtt_connected(2, now=0.1, round_trip_time=0.04))
    assert topology.description.servers[A].round_trip_time == pytest.approx(0.024)
    feed(m.failed(1, TimeoutError(), now=5.0, timeout=True))
    assert topology.description.servers[A].type is ServerType.UNKNOWN
    clear = [o for o in published if isinstance(o, ClearPool)]
    assert clear == [ClearPool(address=A, interrupt_in_use_connections=True)]
    heartbeats = [
        type(o).__name__
        for o in published
        if isinstance(
            o,
            ServerHeartbeatStartedEvent
            | ServerHeartbeatSucceededEvent
            | ServerHeartbeatFailedEvent,
        )
    ]
    assert heartbeats == [
        "ServerHeartbeatStartedEvent",  # the handshake
        "ServerHeartbeatSucceededEvent",
        "ServerHeartbeatStartedEvent",  # the awaitable hello
        "ServerHeartbeatFailedEvent",
        "ServerHeartbeatStartedEvent",  # the immediate retry
    ]


def test_report_to_topology_rejects_other_values() -> None:
    topology = Topology(TopologySettings(seeds=["a:27017"]), topology_id="t")
    topology.open()
    with pytest.raises(LocalProtocolError):
        report_to_topology(topology, "report")  # type: ignore[arg-type]


# -- a random adapter and server --------------------------------------------------------------

REPLIES = st.sampled_from(["plain", "streamable", "command_error", "malformed"])


class MonitorMachine(RuleBasedStateMachine):
    """Plays the adapter: carries actions out, answers with random outcomes, moves the clock
    forward, and checks what the monitor may never do."""

    def __init__(self) -> None:
        super().__init__()
        self.settings = MonitorSettings(
            heartbeat_frequency=1.0,
            server_monitoring_mode=ServerMonitoringMode.STREAM,
        )
        self.monitor = Monitor(A, self.settings)
        self.now = 0.0
        self.opened: set[int] = set()  # every connection id ever opened
        self.open: dict[int, Channel] = {}  # connections not closed yet
        self.pending: dict[Channel, tuple[str, int, bool]] = {}  # what each channel waits for
        self.heartbeat_open = False  # a Started report awaits its outcome
        self.last_check_end: float | None = None
        self.counter = 0
        self.monitor_started = False
        # the topology the reports are forwarded to: it must accept every one of them
        self.topology = Topology(TopologySettings(seeds=["a:27017"]), topology_id="t")
        self.topology.open()

    def apply(self, outputs: list[MonitorOutput], *, from_timer: bool = False) -> None:
        for output in outputs:
            if isinstance(
                output,
                ReportHeartbeatStarted
                | ReportHeartbeatSucceeded
                | ReportHeartbeatFailed
                | ReportRoundTripTime,
            ):
                report_to_topology(self.topology, output)
            if isinstance(output, OpenMonitorConnection):
                assert output.connection_id not in self.opened  # ids are fresh
                assert output.channel not in self.pending  # never two operations at once
                self.opened.add(output.connection_id)
                self.open[output.connection_id] = output.channel
                self.pending[output.channel] = ("open", output.connection_id, False)
            elif isinstance(output, SendHello | ReadNextReply):
                assert self.open.get(output.connection_id) is output.channel
                assert output.channel not in self.pending
                exhaust = isinstance(output, SendHello) and output.exhaust_allowed
                if isinstance(output, ReadNextReply):
                    exhaust = True
                self.pending[output.channel] = ("send", output.connection_id, exhaust)
            elif isinstance(output, CloseMonitorConnection):
                assert self.open.pop(output.connection_id) is output.channel
                pending = self.pending.get(output.channel)
                if pending is not None and pending[1] == output.connection_id:
                    del self.pending[output.channel]
            elif isinstance(output, ReportHeartbeatStarted):
                assert not self.heartbeat_open  # every Started gets its outcome first
                if not output.event.awaited and from_timer and self.last_check_end is not None:
                    assert self.now >= self.last_check_end + 0.5 - 1e-9
                self.heartbeat_open = True
            elif isinstance(output, ReportHeartbeatSucceeded | ReportHeartbeatFailed):
                assert self.heartbeat_open
                assert output.event.duration >= 0
                self.heartbeat_open = False
                self.last_check_end = self.now
            elif isinstance(output, ReportRoundTripTime):
                assert output.rtt >= 0

    def reply_document(self, kind: str) -> dict[str, Any]:
        self.counter += 1
        if kind == "streamable":
            return hello(streamable=True, counter=self.counter)
        if kind == "command_error":
            return {"ok": 0, "errmsg": "no", "code": 11600}
        if kind == "malformed":
            return hello(setVersion="x")
        return hello()

    @rule()
    def start(self) -> None:
        if self.monitor_started or self.monitor.state is MonitorState.CLOSED:
            with pytest.raises(LocalProtocolError):
                self.monitor.start(self.now)
            return
        self.monitor_started = True
        self.apply(self.monitor.start(self.now))

    @rule(dt=st.floats(min_value=0, max_value=3))
    def tick(self, dt: float) -> None:
        self.now += dt
        self.apply(self.monitor.handle_timeout(self.now), from_timer=True)

    @precondition(lambda self: Channel.CHECK in self.pending)
    @rule(
        kind=REPLIES,
        more=st.booleans(),
        error=st.sampled_from([None, "network", "timeout"]),
        dt=st.floats(0, 2),
    )
    def complete_check(self, kind: str, more: bool, error: str | None, dt: float) -> None:
        self.now += dt
        what, connection, exhaust = self.pending.pop(Channel.CHECK)
        if error is not None:
            out = self.monitor.failed(
                connection, OSError(error), now=self.now, timeout=error == "timeout"
            )
        elif what == "open":
            out = self.monitor.connected(connection, self.reply_document(kind), now=self.now)
        else:
            reply = self.reply_document(kind)
            out = self.monitor.reply(
                connection, reply, now=self.now, more_to_come=more and exhaust and reply["ok"] == 1
            )
        self.apply(out)

    @precondition(lambda self: Channel.RTT in self.pending)
    @rule(fail=st.booleans(), dt=st.floats(0, 0.5))
    def complete_rtt(self, fail: bool, dt: float) -> None:
        self.now += dt
        what, connection, _ = self.pending.pop(Channel.RTT)
        if fail:
            self.apply(self.monitor.rtt_failed(connection, OSError(), now=self.now))
        elif what == "open":
            self.apply(self.monitor.rtt_connected(connection, now=self.now))
        else:
            self.apply(self.monitor.rtt_reply(connection, {"ok": 1}, now=self.now))

    @rule()
    def request_check(self) -> None:
        self.apply(self.monitor.request_check(self.now))

    @rule()
    def cancel_check(self) -> None:
        busy = self.monitor.state in (
            MonitorState.CONNECTING,
            MonitorState.CHECKING,
            MonitorState.STREAMING,
        )
        self.apply(self.monitor.cancel_check(self.now))
        if busy:
            self.heartbeat_open = False  # a cancelled check reports nothing (the spec)
            self.last_check_end = self.now

    @precondition(lambda self: len(self.opened) > len(self.open))
    @rule(data=st.data())
    def late_result_for_a_closed_connection(self, data: st.DataObject) -> None:
        closed = sorted(self.opened - set(self.open))
        connection = data.draw(st.sampled_from(closed))
        assert self.monitor.reply(connection, hello(), now=self.now) == []
        assert self.monitor.failed(connection, OSError(), now=self.now) == []
        assert self.monitor.rtt_failed(connection, OSError(), now=self.now) == []

    @rule()
    def close(self) -> None:
        self.apply(self.monitor.close(self.now))
        assert not self.open
        self.heartbeat_open = False

    @invariant()
    def books_agree(self) -> None:
        m = self.monitor
        check = [c for c, ch in self.open.items() if ch is Channel.CHECK]
        rtt = [c for c, ch in self.open.items() if ch is Channel.RTT]
        assert check == ([m.connection_id] if m.connection_id is not None else [])
        assert rtt == ([m.rtt_connection_id] if m.rtt_connection_id is not None else [])
        busy = m.state in (MonitorState.CONNECTING, MonitorState.CHECKING, MonitorState.STREAMING)
        assert busy == (Channel.CHECK in self.pending)
        assert (m.rtt_state in (RttState.CONNECTING, RttState.PINGING)) == (
            Channel.RTT in self.pending
        )
        deadline = m.next_deadline()
        assert (deadline is not None) == (
            m.state is MonitorState.WAITING or m.rtt_state is RttState.WAITING
        )
        if m.state is MonitorState.CLOSED:
            assert not self.open and m.rtt_state is RttState.STOPPED
        # the topology, fed only the reports, agrees with the monitor's RTT statistics (both
        # reset by a failed check; an Unknown server's description carries none)
        server = self.topology.description.servers[A]
        if server.is_known:
            assert server.round_trip_time == pytest.approx(m.round_trip_times.average)
            assert server.min_round_trip_time == pytest.approx(m.round_trip_times.minimum)
        else:
            assert server.round_trip_time is None


MonitorMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)  # fmt: skip
test_monitor_state_machine = MonitorMachine.TestCase
