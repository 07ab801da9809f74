"""The monitor machine's settings, states and transition tables, as data (server-monitoring.md).

:data:`MONITOR_TRANSITIONS` (the check channel) and :data:`RTT_TRANSITIONS` (the RTT channel)
map (state, input) to the states the input may lead to; :class:`~mongo_sansio.sdam.heartbeat.
Monitor` looks an input up before it changes anything and checks afterwards that it landed in
one of them.  ``scripts/state_diagrams.py`` draws ``docs/state-diagrams.md`` from these tables.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

import attrs

from mongo_sansio.errors import ConfigurationError
from mongo_sansio.sdam.topology import MIN_HEARTBEAT_FREQUENCY

__all__ = [
    "ServerMonitoringMode",
    "MonitorSettings",
    "Channel",
    "MonitorState",
    "MonitorInput",
    "MONITOR_TRANSITIONS",
    "BUSY_STATES",
    "RttState",
    "RttInput",
    "RTT_TRANSITIONS",
]


# -- settings -------------------------------------------------------------------------------


class ServerMonitoringMode(enum.StrEnum):
    """The serverMonitoringMode URI option."""

    STREAM = "stream"
    POLL = "poll"
    AUTO = "auto"


def _mode(value: object) -> ServerMonitoringMode:
    if isinstance(value, str) and value in {mode.value for mode in ServerMonitoringMode}:
        return ServerMonitoringMode(value)
    raise ConfigurationError(
        f"serverMonitoringMode must be 'stream', 'poll' or 'auto', not {value!r}"
    )


@attrs.frozen(kw_only=True)
class MonitorSettings:
    """What shapes one monitor.  Times are seconds.

    ``connect_timeout`` 0 means no limit (connectTimeoutMS=0).  ``faas`` is the adapter's
    finding that the client runs on a FaaS platform (the handshake's ``client.env`` rules);
    ``server_api`` says a Stable API version was requested (monitors then always use hello).
    """

    heartbeat_frequency: float = 10.0
    connect_timeout: float = 20.0
    server_monitoring_mode: ServerMonitoringMode = attrs.field(
        default=ServerMonitoringMode.AUTO, converter=_mode
    )
    faas: bool = False
    server_api: bool = False

    def __attrs_post_init__(self) -> None:
        if not _is_number(self.heartbeat_frequency) or not (
            MIN_HEARTBEAT_FREQUENCY <= self.heartbeat_frequency < math.inf
        ):
            raise ConfigurationError("heartbeatFrequencyMS: must be a number of at least 500")
        if not _is_number(self.connect_timeout) or not 0 <= self.connect_timeout < math.inf:
            raise ConfigurationError("connectTimeoutMS: must be a finite number >= 0")
        if not isinstance(self.faas, bool) or not isinstance(self.server_api, bool):
            raise ConfigurationError("faas and server_api must be booleans")

    @property
    def streaming_enabled(self) -> bool:
        mode = self.server_monitoring_mode
        return mode is ServerMonitoringMode.STREAM or (
            mode is ServerMonitoringMode.AUTO and not self.faas
        )


# -- states and transition tables -------------------------------------------------------------


class Channel(enum.Enum):
    """Which of the monitor's two connections an action or result is about."""

    CHECK = "check"
    RTT = "rtt"


class MonitorState(enum.Enum):
    IDLE = "idle"  # created, not started
    CONNECTING = "connecting"  # opening the check connection; its handshake is the check
    CHECKING = "checking"  # a regular (polling) hello is in flight
    STREAMING = "streaming"  # an awaitable hello, or the next moreToCome reply, is awaited
    WAITING = "waiting"  # between checks, until next_deadline()
    CLOSED = "closed"


class MonitorInput(enum.Enum):
    START = "start"
    CONNECTED = "connected"
    REPLY = "reply"
    FAILED = "failed"
    REQUEST_CHECK = "request_check"
    CANCEL_CHECK = "cancel_check"
    TIMEOUT = "handle_timeout"
    CLOSE = "close"


_S, _I = MonitorState, MonitorInput
BUSY_STATES = _BUSY = (_S.CONNECTING, _S.CHECKING, _S.STREAMING)


def _monitor_table() -> dict[tuple[MonitorState, MonitorInput], frozenset[MonitorState]]:
    # Requests during a check are ignored (the spec), a timeout with nothing due does nothing,
    # and close is idempotent: those pairs map a state to itself.  Results for connections the
    # monitor closed never reach the table (they are ignored before it is consulted).
    table = {
        (state, event): frozenset({state})
        for state in MonitorState
        for event in (_I.REQUEST_CHECK, _I.CANCEL_CHECK, _I.TIMEOUT)
    }
    table.update({(state, _I.CLOSE): frozenset({_S.CLOSED}) for state in MonitorState})
    for busy in _BUSY:
        table[busy, _I.FAILED] = frozenset({_S.CONNECTING, _S.WAITING})  # retry once, or wait
        table[busy, _I.CANCEL_CHECK] = frozenset({_S.WAITING})
    table[_S.IDLE, _I.START] = frozenset({_S.CONNECTING})
    table[_S.CONNECTING, _I.CONNECTED] = frozenset({_S.STREAMING, _S.WAITING})
    table[_S.CHECKING, _I.REPLY] = frozenset({_S.STREAMING, _S.WAITING})
    table[_S.STREAMING, _I.REPLY] = frozenset({_S.STREAMING, _S.WAITING})
    table[_S.WAITING, _I.TIMEOUT] = frozenset({_S.WAITING, _S.CONNECTING, _S.CHECKING})
    return table


MONITOR_TRANSITIONS: Final[Mapping[tuple[MonitorState, MonitorInput], frozenset[MonitorState]]] = (
    MappingProxyType(_monitor_table())
)
"""(state, input) -> the states the input may lead to (which one depends on the reply, the
error and the settings).  A missing pair is misuse (LocalProtocolError)."""


class RttState(enum.Enum):
    STOPPED = "stopped"  # not streaming: no RTT connection (the spec forbids one)
    CONNECTING = "connecting"  # opening the RTT connection; its handshake is the first sample
    PINGING = "pinging"  # a hello is in flight on the RTT connection
    WAITING = "waiting"  # until the next ping, heartbeatFrequencyMS after the last one


class RttInput(enum.Enum):
    START = "start (streaming began)"
    CONNECTED = "rtt_connected"
    REPLY = "rtt_reply"
    FAILED = "rtt_failed"
    TIMEOUT = "handle_timeout"
    STOP = "stop (polling, or close)"


_R, _RI = RttState, RttInput
RTT_TRANSITIONS: Final[Mapping[tuple[RttState, RttInput], frozenset[RttState]]] = MappingProxyType(
    {
        (_R.STOPPED, _RI.START): frozenset({_R.CONNECTING}),
        (_R.CONNECTING, _RI.CONNECTED): frozenset({_R.WAITING}),
        (_R.PINGING, _RI.REPLY): frozenset({_R.WAITING}),
        (_R.CONNECTING, _RI.FAILED): frozenset({_R.WAITING}),
        (_R.PINGING, _RI.FAILED): frozenset({_R.WAITING}),
        (_R.WAITING, _RI.TIMEOUT): frozenset({_R.WAITING, _R.CONNECTING, _R.PINGING}),
        **{(s, _RI.START): frozenset({s}) for s in RttState if s is not _R.STOPPED},
        **{(s, _RI.TIMEOUT): frozenset({s}) for s in RttState if s is not _R.WAITING},
        **{(s, _RI.STOP): frozenset({_R.STOPPED}) for s in RttState},
    }
)
"""(state, input) -> the RTT channel's possible next states.  START and STOP are driven by
the check channel (streaming began; polling resumed or the monitor closed); the others are the
adapter's results and the timer."""


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
