"""What the monitor machine outputs: actions for its adapter, reports for the topology.

Frozen, keyword-only records.  Actions name the connection (``channel`` and ``connection_id``)
they are about; the adapter reports each one's outcome back to the
:class:`~mongo_sansio.sdam.heartbeat.Monitor` with the same id.  Reports are handed to the
topology machine, most simply with :func:`report_to_topology`; a heartbeat report carries the
heartbeat event, which the topology returns for publishing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mongo_sansio.errors import LocalProtocolError
from mongo_sansio.sdam.description import Address
from mongo_sansio.sdam.events import (
    ServerHeartbeatFailedEvent,
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
)
from mongo_sansio.sdam.heartbeat_states import Channel
from mongo_sansio.sdam.machine import Output as TopologyOutput
from mongo_sansio.sdam.machine import Topology

__all__ = [
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
    "report_to_topology",
]


@attrs.frozen(kw_only=True)
class OpenMonitorConnection:
    """Open a dedicated connection to ``address`` and run the handshake without authentication
    (``timeout``: connectTimeoutMS, None for no limit); report ``connected`` or ``failed``
    (``rtt_connected`` / ``rtt_failed`` on the RTT channel) with ``connection_id``."""

    address: Address
    channel: Channel
    connection_id: int
    timeout: float | None


@attrs.frozen(kw_only=True)
class SendHello:
    """Send ``command`` (OP_MSG; set exhaustAllowed if ``exhaust_allowed``) and read the reply
    within ``timeout`` seconds (None: no limit); report ``reply`` (with the reply's moreToCome
    flag) or ``failed``."""

    address: Address
    channel: Channel
    connection_id: int
    command: Mapping[str, Any] = attrs.field(eq=False)
    exhaust_allowed: bool
    timeout: float | None


@attrs.frozen(kw_only=True)
class ReadNextReply:
    """The last reply had moreToCome: read the next one (no request is sent)."""

    address: Address
    channel: Channel
    connection_id: int
    timeout: float | None


@attrs.frozen(kw_only=True)
class CloseMonitorConnection:
    """Close the connection, interrupting any read in progress on it."""

    address: Address
    channel: Channel
    connection_id: int


@attrs.frozen(kw_only=True)
class ReportHeartbeatStarted:
    """Forward to ``Topology.heartbeat_started`` (see :func:`report_to_topology`)."""

    event: ServerHeartbeatStartedEvent


@attrs.frozen(kw_only=True, unsafe_hash=False)
class ReportHeartbeatSucceeded:
    """Forward to ``Topology.heartbeat_succeeded``: the reply (``event.reply``) updates the
    server's description; a non-awaited ``event.duration`` is also an RTT sample."""

    event: ServerHeartbeatSucceededEvent
    now: float


@attrs.frozen(kw_only=True, unsafe_hash=False)
class ReportHeartbeatFailed:
    """Forward to ``Topology.heartbeat_failed``: the server becomes Unknown and its pool is
    cleared, interrupting in-use connections if ``timeout`` (a network timeout)."""

    event: ServerHeartbeatFailedEvent
    now: float
    timeout: bool = False


@attrs.frozen(kw_only=True)
class ReportRoundTripTime:
    """Forward to ``Topology.rtt_sample``: one round trip on the RTT connection (seconds)."""

    address: Address
    rtt: float


MonitorAction = OpenMonitorConnection | SendHello | ReadNextReply | CloseMonitorConnection
MonitorReport = (
    ReportHeartbeatStarted | ReportHeartbeatSucceeded | ReportHeartbeatFailed | ReportRoundTripTime
)
MonitorOutput = MonitorAction | MonitorReport


_HEARTBEAT_EVENTS = (
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
    ServerHeartbeatFailedEvent,
)


def _naming_connection(
    outputs: list[TopologyOutput],
    report: ReportHeartbeatStarted | ReportHeartbeatSucceeded | ReportHeartbeatFailed,
) -> list[TopologyOutput]:
    """The topology's heartbeat events carry the monitor's connection (the logging spec's
    ``driverConnectionId``) and the server's id for it when known (``serverConnectionId``),
    both from the monitor's event in ``report``; the topology machine knows neither."""
    event = report.event
    driver_id, server_id = event.driver_connection_id, event.server_connection_id
    if driver_id is None and server_id is None:
        return outputs
    return [
        attrs.evolve(output, driver_connection_id=driver_id, server_connection_id=server_id)
        if isinstance(output, _HEARTBEAT_EVENTS)
        else output
        for output in outputs
    ]


def report_to_topology(topology: Topology, report: MonitorReport) -> list[TopologyOutput]:
    """Hand one of the monitor's reports to the topology machine; returns its outputs (among
    them the report's heartbeat event, to publish, naming the monitor's connection)."""
    if isinstance(report, ReportHeartbeatStarted):
        event = report.event
        started = topology.heartbeat_started(event.connection_id, awaited=event.awaited)
        return _naming_connection(started, report)
    if isinstance(report, ReportHeartbeatSucceeded):
        ok = report.event
        succeeded = topology.heartbeat_succeeded(
            ok.connection_id, ok.reply, duration=ok.duration, now=report.now, awaited=ok.awaited
        )
        return _naming_connection(succeeded, report)
    if isinstance(report, ReportHeartbeatFailed):
        bad = report.event
        failed = topology.heartbeat_failed(
            bad.connection_id,
            bad.failure,
            duration=bad.duration,
            now=report.now,
            awaited=bad.awaited,
            timeout=report.timeout,
        )
        return _naming_connection(failed, report)
    if isinstance(report, ReportRoundTripTime):
        return topology.rtt_sample(report.address, report.rtt)
    raise LocalProtocolError(f"not a monitor report: {report!r}")
