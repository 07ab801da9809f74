"""The monitor of one server (server-monitoring.md), as a pure state machine.

Theory of operation
-------------------
A :class:`Monitor` decides when its server is checked, with which hello command, on which
connection, and what each outcome means; its adapter opens and closes sockets, runs the
connection handshake (no authentication), sends commands, reads replies and keeps one timer.
The monitor must not know about other servers or the topology's rules: it *reports* each
check to the topology machine (:class:`~mongo_sansio.sdam.machine.Topology`), which turns the
report into a ServerDescription, events and pool actions (:func:`report_to_topology`).

Two channels, each with its own connection and transition table (data, looked up before
anything changes):

* the check channel (:data:`MONITOR_TRANSITIONS`): idle -> connecting (the handshake reply is
  the first check) -> then either *polling* (waiting heartbeatFrequencyMS, then a regular hello
  on the same connection: checking) or *streaming* (an awaitable hello with the server's
  topologyVersion, ``maxAwaitTimeMS`` = heartbeatFrequencyMS and exhaustAllowed, whose replies
  may carry moreToCome; the monitor never sleeps between streamed checks);
* the RTT channel (:data:`RTT_TRANSITIONS`), which runs only while streaming: its own
  connection, a regular hello every heartbeatFrequencyMS, each round trip a sample for the
  moving average and the recent minimum (:class:`~mongo_sansio.sdam.monitor.RoundTripTimes`:
  the minimum of the last 10 samples, 0 until there are two).  Its errors never reach the
  topology; its samples do (:class:`ReportRoundTripTime`), and it publishes no events.

Rules followed here: checks never overlap; an immediate-check request wakes a waiting monitor
no sooner than minHeartbeatFrequencyMS (500 ms) after the previous check ended, several
requests coalesce into one check, and a request during a check is ignored.  A check that fails
closes the connection; after a *network* error on a server whose previous check succeeded the
next check starts at once, on a new connection (the spec's "retry once": the server is marked
Unknown and its pool cleared first, as the spec's monitor loop does), otherwise the monitor
waits.  serverMonitoringMode ``stream`` streams when the server supports it (its reply has a
topologyVersion), ``poll`` never streams, ``auto`` streams unless the adapter says the client
runs on a FaaS platform.  :meth:`Monitor.cancel_check` (the topology's CancelCheck, or a pool
clear that interrupts in-use connections) closes the check connection and waits;
:meth:`Monitor.close` (the topology's StopMonitor, or closing the client) closes both.

Inputs (methods; ``now`` is monotonic seconds, connection ids are the ones the monitor issued):
``start``; ``connected`` / ``reply`` / ``failed`` for the check connection; ``rtt_connected`` /
``rtt_reply`` / ``rtt_failed`` for the RTT connection; ``request_check``; ``cancel_check``;
``handle_timeout`` at (or after) ``next_deadline()``; ``close``.  A result for a connection the
monitor already closed is ignored (the adapter cannot always stop it in time); an input the
current state does not allow raises :class:`~mongo_sansio.errors.LocalProtocolError` before
anything changes.

Outputs, returned in order by every input: actions (:class:`OpenMonitorConnection`,
:class:`SendHello`, :class:`ReadNextReply`, :class:`CloseMonitorConnection`) and reports for
the topology (:class:`ReportHeartbeatStarted`, :class:`ReportHeartbeatSucceeded`,
:class:`ReportHeartbeatFailed`, :class:`ReportRoundTripTime`).  A heartbeat report carries the
heartbeat event (with ``duration`` and ``awaited``); the topology returns that same event when
the report is forwarded, so each event is published once.  Sleeping is not an action: the
adapter arms its one timer for ``next_deadline()``.

Where things live: :mod:`.heartbeat_states` (settings, states, the two tables),
:mod:`.heartbeat_actions` (the output records, :func:`report_to_topology`), this module (the
policy).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from mongo_sansio.bson import Int64
from mongo_sansio.errors import LocalProtocolError, RemoteProtocolError
from mongo_sansio.sdam.description import (
    Address,
    InvalidHelloReply,
    ServerDescription,
    TopologyVersion,
    is_address,
)
from mongo_sansio.sdam.events import (
    ServerHeartbeatFailedEvent,
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
)
from mongo_sansio.sdam.heartbeat_actions import (
    CloseMonitorConnection,
    MonitorAction,
    MonitorOutput,
    MonitorReport,
    OpenMonitorConnection,
    ReadNextReply,
    ReportHeartbeatFailed,
    ReportHeartbeatStarted,
    ReportHeartbeatSucceeded,
    ReportRoundTripTime,
    SendHello,
    report_to_topology,
)
from mongo_sansio.sdam.heartbeat_states import (
    BUSY_STATES,
    MONITOR_TRANSITIONS,
    RTT_TRANSITIONS,
    Channel,
    MonitorInput,
    MonitorSettings,
    MonitorState,
    RttInput,
    RttState,
    ServerMonitoringMode,
)
from mongo_sansio.sdam.monitor import RoundTripTimes
from mongo_sansio.sdam.topology import MIN_HEARTBEAT_FREQUENCY

__all__ = [
    "Monitor",
    "report_to_topology",
    # re-exported from heartbeat_states and heartbeat_actions
    "ServerMonitoringMode",
    "MonitorSettings",
    "Channel",
    "MonitorState",
    "MonitorInput",
    "MONITOR_TRANSITIONS",
    "RttState",
    "RttInput",
    "RTT_TRANSITIONS",
    "OpenMonitorConnection",
    "SendHello",
    "ReadNextReply",
    "CloseMonitorConnection",
    "ReportHeartbeatStarted",
    "ReportHeartbeatSucceeded",
    "ReportHeartbeatFailed",
    "ReportRoundTripTime",
    "MonitorAction",
    "MonitorReport",
    "MonitorOutput",
]

_BUSY = BUSY_STATES


class Monitor:
    """The monitor of the server at ``address``; see the module docstring."""

    def __init__(self, address: Address, settings: MonitorSettings | None = None) -> None:
        if not is_address(address):
            raise LocalProtocolError(f"address must be a (host, port) tuple, got {address!r}")
        if settings is not None and not isinstance(settings, MonitorSettings):
            raise LocalProtocolError("settings must be a MonitorSettings")
        self._address = address
        self._settings = settings or MonitorSettings()
        self._state = MonitorState.IDLE
        self._rtt_state = RttState.STOPPED
        self._next_connection_id = 1
        # the check channel
        self._connection: int | None = None
        # the server's connectionId for the check connection, from its hello replies (the
        # heartbeat events' server_connection_id, "if known")
        self._server_connection: int | None = None
        self._exhaust_requested = False  # the in-flight request allowed moreToCome replies
        self._check_started = 0.0
        self._last_check_end = -math.inf
        self._deadline = math.inf  # when WAITING: when the next check starts
        self._known = False  # the previous check succeeded (the spec's "previously known")
        self._hello_ok = self._settings.server_api
        # the RTT channel
        self._rtt_connection: int | None = None
        self._rtt_started = 0.0
        self._rtt_deadline = math.inf
        self._rtt_hello_ok = self._settings.server_api
        self._round_trip_times = RoundTripTimes()

    # -- read-only state ----------------------------------------------------------------------

    @property
    def address(self) -> Address:
        return self._address

    @property
    def settings(self) -> MonitorSettings:
        return self._settings

    @property
    def state(self) -> MonitorState:
        return self._state

    @property
    def rtt_state(self) -> RttState:
        return self._rtt_state

    @property
    def round_trip_times(self) -> RoundTripTimes:
        """This server's RTT statistics as the monitor measured them (reset by a failed check):
        ``average`` for selection, ``minimum`` (last 10 samples) for operation timeouts."""
        return self._round_trip_times

    @property
    def connection_id(self) -> int | None:
        """The check connection (open or being opened), or None."""
        return self._connection

    @property
    def rtt_connection_id(self) -> int | None:
        return self._rtt_connection

    def next_deadline(self) -> float | None:
        """When :meth:`handle_timeout` has work to do next, or None."""
        candidates = []
        if self._state is MonitorState.WAITING:
            candidates.append(self._deadline)
        if self._rtt_state is RttState.WAITING:
            candidates.append(self._rtt_deadline)
        return min(candidates) if candidates else None

    # -- inputs: the check channel ------------------------------------------------------------

    def start(self, now: float) -> list[MonitorOutput]:
        """Begin monitoring: the first check opens the check connection."""
        _check_now(now)
        allowed = self._allowed(MonitorInput.START)
        return self._done(allowed, self._begin_check(now))

    def connected(
        self,
        connection_id: int,
        reply: Mapping[str, Any],
        *,
        now: float,
        round_trip_time: float | None = None,
    ) -> list[MonitorOutput]:
        """The check connection's handshake finished with ``reply``, which is this check's
        result.  ``round_trip_time`` is the hello's own round trip (default: the time since
        the check started, connection set-up included)."""
        _check_now(now)
        _check_reply(reply)
        if round_trip_time is not None:
            _check_now(round_trip_time, "round_trip_time")
        if not self._current(connection_id):
            return []
        allowed = self._allowed(MonitorInput.CONNECTED)
        duration = max(
            0.0, now - self._check_started if round_trip_time is None else round_trip_time
        )
        return self._done(allowed, self._check_replied(reply, now, duration, more_to_come=False))

    def reply(
        self,
        connection_id: int,
        reply: Mapping[str, Any],
        *,
        now: float,
        more_to_come: bool = False,
    ) -> list[MonitorOutput]:
        """A hello reply arrived on the check connection (``more_to_come``: its OP_MSG
        moreToCome flag).  A reply without ``ok: 1`` is a failed check."""
        _check_now(now)
        _check_reply(reply)
        if not isinstance(more_to_come, bool):
            raise LocalProtocolError("more_to_come must be a boolean")
        if not self._current(connection_id):
            return []
        allowed = self._allowed(MonitorInput.REPLY)
        duration = max(0.0, now - self._check_started)
        return self._done(allowed, self._check_replied(reply, now, duration, more_to_come))

    def failed(
        self, connection_id: int, error: object, *, now: float, timeout: bool = False
    ) -> list[MonitorOutput]:
        """A network error (``timeout``: a network timeout) on the check connection, while
        connecting, handshaking, sending or reading."""
        _check_now(now)
        if not isinstance(timeout, bool):
            raise LocalProtocolError("timeout must be a boolean")
        if not self._current(connection_id):
            return []
        allowed = self._allowed(MonitorInput.FAILED)
        return self._done(allowed, self._check_failed(now, error, network=True, timeout=timeout))

    def request_check(self, now: float) -> list[MonitorOutput]:
        """Check soon (the topology's RequestImmediateCheck, or server selection waiting)."""
        _check_now(now)
        allowed = self._allowed(MonitorInput.REQUEST_CHECK)
        if self._state is MonitorState.WAITING:
            earliest = max(now, self._last_check_end + MIN_HEARTBEAT_FREQUENCY)
            self._deadline = min(self._deadline, earliest)
        return self._done(allowed, [])

    def cancel_check(self, now: float) -> list[MonitorOutput]:
        """Stop the check in progress and close the check connection, then wait (the
        topology's CancelCheck).  No heartbeat is reported for the cancelled check."""
        _check_now(now)
        allowed = self._allowed(MonitorInput.CANCEL_CHECK)
        out: list[MonitorOutput] = []
        if self._state in _BUSY or self._state is MonitorState.WAITING:
            out.extend(self._close_check_connection())
        if self._state in _BUSY:
            self._last_check_end = now
            self._wait(now)
        return self._done(allowed, out)

    def handle_timeout(self, now: float) -> list[MonitorOutput]:
        """Start whatever is due at ``now``: the next check, the next RTT ping."""
        _check_now(now)
        allowed = self._allowed(MonitorInput.TIMEOUT)
        rtt_allowed = self._rtt_allowed(RttInput.TIMEOUT)
        out: list[MonitorOutput] = []
        if self._state is MonitorState.WAITING and now >= self._deadline:
            out.extend(self._begin_check(now))
        if self._rtt_state is RttState.WAITING and now >= self._rtt_deadline:
            out.extend(self._ping(now))
        self._rtt_done(rtt_allowed)
        return self._done(allowed, out)

    def close(self, now: float) -> list[MonitorOutput]:
        """Stop monitoring; both connections close.  Idempotent."""
        _check_now(now)
        allowed = self._allowed(MonitorInput.CLOSE)
        out = self._close_check_connection()
        out.extend(self._stop_rtt())
        self._state = MonitorState.CLOSED
        return self._done(allowed, out)

    # -- inputs: the RTT channel --------------------------------------------------------------

    def rtt_connected(
        self, connection_id: int, *, now: float, round_trip_time: float | None = None
    ) -> list[MonitorOutput]:
        """The RTT connection's handshake finished; its round trip is the first sample."""
        _check_now(now)
        if round_trip_time is not None:
            _check_now(round_trip_time, "round_trip_time")
        if not self._rtt_current(connection_id):
            return []
        allowed = self._rtt_allowed(RttInput.CONNECTED)
        sample = now - self._rtt_started if round_trip_time is None else round_trip_time
        out = self._rtt_sampled(max(0.0, sample), now)
        self._rtt_done(allowed)
        return out

    def rtt_reply(
        self, connection_id: int, reply: Mapping[str, Any], *, now: float
    ) -> list[MonitorOutput]:
        """The RTT hello's reply arrived (its content is ignored, as the spec requires, except
        helloOk, which picks the next command)."""
        _check_now(now)
        _check_reply(reply)
        if not self._rtt_current(connection_id):
            return []
        allowed = self._rtt_allowed(RttInput.REPLY)
        self._rtt_hello_ok = reply.get("helloOk") is True or self._settings.server_api
        out = self._rtt_sampled(max(0.0, now - self._rtt_started), now)
        self._rtt_done(allowed)
        return out

    def rtt_failed(self, connection_id: int, error: object, *, now: float) -> list[MonitorOutput]:
        """The RTT connection failed: close it and try again heartbeatFrequencyMS later.  RTT
        errors never change the topology (the spec)."""
        _check_now(now)
        if not self._rtt_current(connection_id):
            return []
        allowed = self._rtt_allowed(RttInput.FAILED)
        out = self._close_rtt_connection()
        self._rtt_state = RttState.WAITING
        self._rtt_deadline = now + self._settings.heartbeat_frequency
        self._rtt_done(allowed)
        return out

    # -- the check channel's moves ------------------------------------------------------------

    def _begin_check(self, now: float) -> list[MonitorOutput]:
        """A regular check: on a new connection (its handshake), or a hello on the idle one."""
        self._check_started = now
        self._exhaust_requested = False
        opening = self._connection is None
        connection = self._issue_id() if self._connection is None else self._connection
        self._connection = connection  # before the started event, which names it
        out: list[MonitorOutput] = [self._started(awaited=False)]
        if opening:
            self._hello_ok = self._settings.server_api
            self._state = MonitorState.CONNECTING
            out.append(
                OpenMonitorConnection(
                    address=self._address,
                    channel=Channel.CHECK,
                    connection_id=connection,
                    timeout=self._connect_timeout,
                )
            )
        else:
            self._state = MonitorState.CHECKING
            out.append(
                SendHello(
                    address=self._address,
                    channel=Channel.CHECK,
                    connection_id=connection,
                    command=self._hello(self._hello_ok),
                    exhaust_allowed=False,
                    timeout=self._connect_timeout,
                )
            )
        return out

    def _check_replied(
        self, reply: Mapping[str, Any], now: float, duration: float, more_to_come: bool
    ) -> list[MonitorOutput]:
        try:
            server = ServerDescription.from_hello(
                self._address, reply, round_trip_time=None, now=now
            )
        except InvalidHelloReply as exc:
            return self._check_failed(now, exc, network=False, timeout=False)
        if not server.is_known:  # ok: 0 -- a command error
            return self._check_failed(now, dict(reply), network=False, timeout=False)
        if more_to_come and not self._exhaust_requested:
            error = RemoteProtocolError("moreToCome on a reply to a request without exhaustAllowed")
            return self._check_failed(now, error, network=False, timeout=False)
        awaited = self._state is MonitorState.STREAMING
        if not awaited:
            self._round_trip_times = self._round_trip_times.add(duration)
        server_connection = reply.get("connectionId")
        if isinstance(server_connection, int) and not isinstance(server_connection, bool):
            self._server_connection = int(server_connection)
        self._known = True
        self._hello_ok = server.hello_ok or self._settings.server_api
        self._last_check_end = now
        out: list[MonitorOutput] = [
            ReportHeartbeatSucceeded(
                event=ServerHeartbeatSucceededEvent(
                    connection_id=self._address,
                    duration=duration,
                    reply=reply,
                    awaited=awaited,
                    driver_connection_id=self._connection,
                    server_connection_id=self._server_connection,
                ),
                now=now,
            )
        ]
        version = server.topology_version
        if more_to_come:
            out.extend(self._read_next(now))
        elif self._settings.streaming_enabled and version is not None:
            out.extend(self._await_next(now, version))
            out.extend(self._start_rtt(now))
        else:
            out.extend(self._stop_rtt())
            self._wait(now)
        return out

    def _check_failed(
        self, now: float, failure: object, *, network: bool, timeout: bool
    ) -> list[MonitorOutput]:
        awaited = self._state is MonitorState.STREAMING
        out: list[MonitorOutput] = [
            ReportHeartbeatFailed(
                event=ServerHeartbeatFailedEvent(
                    connection_id=self._address,
                    duration=max(0.0, now - self._check_started),
                    failure=failure,
                    awaited=awaited,
                    driver_connection_id=self._connection,
                    server_connection_id=self._server_connection,
                ),
                now=now,
                timeout=timeout,
            )
        ]
        out.extend(self._close_check_connection())
        retry = network and self._known  # "transitioned with a network error": check again now
        self._known = False
        self._round_trip_times = RoundTripTimes()
        self._last_check_end = now
        if retry:
            out.extend(self._begin_check(now))
        else:
            self._wait(now)
        return out

    def _await_next(self, now: float, version: TopologyVersion) -> list[MonitorOutput]:
        """Streaming: the next check is an awaitable hello, sent at once."""
        assert self._connection is not None
        self._check_started = now
        self._exhaust_requested = True
        self._state = MonitorState.STREAMING
        return [
            self._started(awaited=True),
            SendHello(
                address=self._address,
                channel=Channel.CHECK,
                connection_id=self._connection,
                command=self._hello(self._hello_ok, version),
                exhaust_allowed=True,
                timeout=self._await_timeout,
            ),
        ]

    def _read_next(self, now: float) -> list[MonitorOutput]:
        """Streaming with moreToCome: the server sends the next reply unasked."""
        assert self._connection is not None
        self._check_started = now
        self._state = MonitorState.STREAMING
        return [
            self._started(awaited=True),
            ReadNextReply(
                address=self._address,
                channel=Channel.CHECK,
                connection_id=self._connection,
                timeout=self._await_timeout,
            ),
        ]

    def _wait(self, now: float) -> None:
        self._state = MonitorState.WAITING
        self._deadline = now + self._settings.heartbeat_frequency

    def _close_check_connection(self) -> list[MonitorOutput]:
        if self._connection is None:
            return []
        connection, self._connection = self._connection, None
        self._server_connection = None
        self._exhaust_requested = False
        return [
            CloseMonitorConnection(
                address=self._address, channel=Channel.CHECK, connection_id=connection
            )
        ]

    # -- the RTT channel's moves --------------------------------------------------------------

    def _start_rtt(self, now: float) -> list[MonitorOutput]:
        allowed = self._rtt_allowed(RttInput.START)
        out: list[MonitorOutput] = []
        if self._rtt_state is RttState.STOPPED:
            out.extend(self._ping(now))
        self._rtt_done(allowed)
        return out

    def _stop_rtt(self) -> list[MonitorOutput]:
        allowed = self._rtt_allowed(RttInput.STOP)
        out = self._close_rtt_connection()
        self._rtt_state = RttState.STOPPED
        self._rtt_done(allowed)
        return out

    def _ping(self, now: float) -> list[MonitorOutput]:
        self._rtt_started = now
        if self._rtt_connection is None:
            self._rtt_connection = self._issue_id()
            self._rtt_hello_ok = self._settings.server_api
            self._rtt_state = RttState.CONNECTING
            return [
                OpenMonitorConnection(
                    address=self._address,
                    channel=Channel.RTT,
                    connection_id=self._rtt_connection,
                    timeout=self._connect_timeout,
                )
            ]
        self._rtt_state = RttState.PINGING
        return [
            SendHello(
                address=self._address,
                channel=Channel.RTT,
                connection_id=self._rtt_connection,
                command=self._hello(self._rtt_hello_ok),
                exhaust_allowed=False,
                timeout=self._connect_timeout,
            )
        ]

    def _rtt_sampled(self, sample: float, now: float) -> list[MonitorOutput]:
        self._round_trip_times = self._round_trip_times.add(sample)
        self._rtt_state = RttState.WAITING
        self._rtt_deadline = now + self._settings.heartbeat_frequency
        return [ReportRoundTripTime(address=self._address, rtt=sample)]

    def _close_rtt_connection(self) -> list[MonitorOutput]:
        if self._rtt_connection is None:
            return []
        connection, self._rtt_connection = self._rtt_connection, None
        return [
            CloseMonitorConnection(
                address=self._address, channel=Channel.RTT, connection_id=connection
            )
        ]

    # -- helpers ------------------------------------------------------------------------------

    def _allowed(self, event: MonitorInput) -> frozenset[MonitorState]:
        allowed = MONITOR_TRANSITIONS.get((self._state, event))
        if allowed is None:
            raise LocalProtocolError(
                f"{event.value} is not allowed while the monitor is {self._state.value}"
            )
        return allowed

    def _done(
        self, allowed: frozenset[MonitorState], out: list[MonitorOutput]
    ) -> list[MonitorOutput]:
        assert self._state in allowed, (self._state, allowed)  # the table and the code agree
        return out

    def _rtt_allowed(self, event: RttInput) -> frozenset[RttState]:
        allowed = RTT_TRANSITIONS.get((self._rtt_state, event))
        if allowed is None:
            raise LocalProtocolError(
                f"{event.value} is not allowed while the RTT channel is {self._rtt_state.value}"
            )
        return allowed

    def _rtt_done(self, allowed: frozenset[RttState]) -> None:
        assert self._rtt_state in allowed, (self._rtt_state, allowed)

    def _issue_id(self) -> int:
        issued = self._next_connection_id
        self._next_connection_id += 1
        return issued

    def _check_issued(self, connection_id: object) -> int:
        if (
            not isinstance(connection_id, int)
            or isinstance(connection_id, bool)
            or not 1 <= connection_id < self._next_connection_id
        ):
            raise LocalProtocolError(
                f"connection {connection_id!r} was never opened by this monitor"
            )
        return connection_id

    def _current(self, connection_id: object) -> bool:
        """Whether a result is for the open check connection (False: a closed one, ignored)."""
        issued = self._check_issued(connection_id)
        if issued == self._rtt_connection:
            raise LocalProtocolError(f"connection {issued} is the RTT connection")
        return issued == self._connection

    def _rtt_current(self, connection_id: object) -> bool:
        issued = self._check_issued(connection_id)
        if issued == self._connection:
            raise LocalProtocolError(f"connection {issued} is the check connection")
        return issued == self._rtt_connection

    def _started(self, *, awaited: bool) -> ReportHeartbeatStarted:
        return ReportHeartbeatStarted(
            event=ServerHeartbeatStartedEvent(
                connection_id=self._address,
                awaited=awaited,
                driver_connection_id=self._connection,
                server_connection_id=self._server_connection,
            )
        )

    def _hello(self, hello_ok: bool, version: TopologyVersion | None = None) -> dict[str, Any]:
        """``{hello: 1}`` once the server said helloOk (or a Stable API is in use), else the
        legacy command; awaitable with the server's topologyVersion and maxAwaitTimeMS."""
        command: dict[str, Any] = {"hello": 1} if hello_ok else {"isMaster": 1}
        command["helloOk"] = True
        if version is not None:
            command["topologyVersion"] = version.to_document()
            command["maxAwaitTimeMS"] = Int64(round(self._settings.heartbeat_frequency * 1000))
        return command

    @property
    def _connect_timeout(self) -> float | None:
        return self._settings.connect_timeout or None

    @property
    def _await_timeout(self) -> float | None:
        """connectTimeoutMS + heartbeatFrequencyMS for awaited replies; unlimited stays so."""
        timeout = self._settings.connect_timeout
        return timeout + self._settings.heartbeat_frequency if timeout else None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_now(value: object, name: str = "now") -> None:
    if not _is_number(value) or not math.isfinite(value):  # type: ignore[arg-type]
        raise LocalProtocolError(f"{name} must be a finite number of seconds, got {value!r}")


def _check_reply(reply: object) -> None:
    if not isinstance(reply, Mapping):
        raise LocalProtocolError("reply must be a decoded document (a mapping)")
