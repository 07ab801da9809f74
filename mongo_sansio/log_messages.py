"""Standardized log messages (logging.md and the logging sections of the command, CMAP, SDAM
and server selection specifications), built from core events.

:func:`log_message` turns one core event into a :class:`LogMessage`: its component
("command", "topology", "serverSelection", "connection"), its spec level ("debug", or "info"
for "Waiting for suitable server to become available") and its structured ``data``, keyed by
the exact names the specs give (``message``, ``commandName``, ``serverHost``, ``durationMS``,
...).  Fields that are unknown are left out, never present as null.  Documents are relaxed
Extended JSON, cut naively after ``max_document_length`` characters (Unicode code points) with
``...`` appended (which does not count); errors are text, cut the same way.  A
security-sensitive command's command and reply are ``{}``, and its server-side failure keeps
only ``code``, ``codeName`` and ``errorLabels``.

Inputs: a core event (``mongo_sansio.client.events``, ``.cmap.events``, ``.sdam.events``,
``.selection.events``), the maximum document length, and optionally the topology id for
heartbeat events that lack one.  Outputs: a LogMessage, or None for events the specs do not
log (ServerDescriptionChanged).  Settings are passed in: nothing here reads the environment.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import attrs

from mongo_sansio.bson.extjson import dumps
from mongo_sansio.client import events as ce
from mongo_sansio.cmap import events as pe
from mongo_sansio.errors import MongoError, ServerError
from mongo_sansio.monitoring import failure_document, pool_address
from mongo_sansio.sdam import events as se
from mongo_sansio.sdam.description import Address
from mongo_sansio.sdam.topology import TopologyDescription
from mongo_sansio.selection import events as sel
from mongo_sansio.selection.loop import describe_topology

__all__ = [
    "COMMAND",
    "TOPOLOGY",
    "SERVER_SELECTION",
    "CONNECTION",
    "COMPONENTS",
    "DEFAULT_MAX_DOCUMENT_LENGTH",
    "LogMessage",
    "log_message",
    "component_of",
    "truncate",
    "document_text",
    "error_text",
]

COMMAND: Final = "command"
TOPOLOGY: Final = "topology"
SERVER_SELECTION: Final = "serverSelection"
CONNECTION: Final = "connection"
COMPONENTS: Final = (COMMAND, TOPOLOGY, SERVER_SELECTION, CONNECTION)
DEFAULT_MAX_DOCUMENT_LENGTH: Final = 1000

_POOL_OPTION_KEYS: Final = (
    "maxIdleTimeMS",
    "minPoolSize",
    "maxPoolSize",
    "maxConnecting",
    "waitQueueTimeoutMS",
    "waitQueueSize",
    "waitQueueMultiple",
)
_CLOSED_REASONS: Final = {
    pe.ConnectionClosedReason.STALE: "Connection became stale because the pool was cleared",
    pe.ConnectionClosedReason.IDLE: (
        "Connection has been available but unused for longer than the configured max idle time"
    ),
    pe.ConnectionClosedReason.ERROR: "An error occurred while using the connection",
    pe.ConnectionClosedReason.POOL_CLOSED: "Connection pool was closed",
}
_CHECKOUT_REASONS: Final = {
    pe.CheckOutFailedReason.TIMEOUT: (
        "Wait queue timeout elapsed without a connection becoming available"
    ),
    pe.CheckOutFailedReason.CONNECTION_ERROR: (
        "An error occurred while trying to establish a new connection"
    ),
    pe.CheckOutFailedReason.POOL_CLOSED: "Connection pool was closed",
}


@attrs.frozen
class LogMessage:
    """One structured log message.  ``data`` holds every key the spec defines for it,
    ``message`` included; ``str()`` is ``data`` as JSON (what a plain log handler prints)."""

    component: str
    level: str
    data: Mapping[str, Any]

    @property
    def message(self) -> str:
        return str(self.data["message"])

    def __str__(self) -> str:
        return json.dumps(dict(self.data), ensure_ascii=False, default=str)


def truncate(text: str, max_length: int) -> str:
    """``text`` cut after ``max_length`` code points, with ``...`` appended when cut."""
    if max_length < 0 or len(text) <= max_length:
        return text
    return text[:max_length] + "..."


def document_text(document: Mapping[str, Any], max_length: int) -> str:
    """A document as relaxed Extended JSON, truncated."""
    try:
        text = dumps(document)
    except (MongoError, TypeError, ValueError) as exc:  # not representable: say so
        text = f"<document not representable as Extended JSON: {exc}>"
    return truncate(text, max_length)


def error_text(failure: object, max_length: int, *, redact: bool = False) -> str:
    """An error for a log message: a server error as its reply document (redacted to code,
    codeName and errorLabels when ``redact``), a reply document as JSON, any other error as
    ``"ClassName: message"``; truncated."""
    if isinstance(failure, ServerError):
        return document_text(failure_document(failure, redact=redact), max_length)
    if isinstance(failure, Mapping):
        return document_text(failure, max_length)
    if isinstance(failure, BaseException):
        return truncate(f"{type(failure).__name__}: {failure}", max_length)
    return truncate(str(failure), max_length)


def _put(data: dict[str, Any], key: str, value: object) -> None:
    if value is not None:
        data[key] = value


def _server(data: dict[str, Any], address: tuple[str, int | None]) -> None:
    host, port = address
    data["serverHost"] = host
    _put(data, "serverPort", port)


def _id_value(value: object) -> object:
    if value is None or isinstance(value, bool) or isinstance(value, int | str):
        return value
    return str(value)


def _ms(seconds: float) -> float:
    return seconds * 1000.0


def _describe(topology: TopologyDescription | str) -> str:
    return topology if isinstance(topology, str) else describe_topology(topology)


def component_of(event: object) -> str | None:
    """The log component of a core event's messages, or None when it has none."""
    if isinstance(event, ce.CommandStartedEvent | ce.CommandSucceededEvent | ce.CommandFailedEvent):
        return COMMAND
    if isinstance(event, pe.PoolEvent):
        return CONNECTION
    if isinstance(
        event,
        sel.ServerSelectionStarted
        | sel.ServerSelectionSucceeded
        | sel.ServerSelectionFailed
        | sel.ServerSelectionWaiting,
    ):
        return SERVER_SELECTION
    if isinstance(event, se.ServerDescriptionChangedEvent):
        return None
    if isinstance(
        event,
        se.TopologyOpeningEvent
        | se.TopologyClosedEvent
        | se.TopologyDescriptionChangedEvent
        | se.ServerOpeningEvent
        | se.ServerClosedEvent
        | se.ServerHeartbeatStartedEvent
        | se.ServerHeartbeatSucceededEvent
        | se.ServerHeartbeatFailedEvent,
    ):
        return TOPOLOGY
    return None


def log_message(
    event: object,
    *,
    max_document_length: int = DEFAULT_MAX_DOCUMENT_LENGTH,
    topology_id: object = None,
) -> LogMessage | None:
    """The log message for a core event (None for events the specs do not log).  A negative
    ``max_document_length`` means no truncation.  ``topology_id`` stands in for a heartbeat
    event's missing one."""
    limit = max_document_length
    if isinstance(event, ce.CommandStartedEvent | ce.CommandSucceededEvent | ce.CommandFailedEvent):
        return LogMessage(COMMAND, "debug", _command(event, limit))
    if isinstance(event, pe.PoolEvent):
        return LogMessage(CONNECTION, "debug", _connection(event, limit))
    if isinstance(event, sel.ServerSelectionWaiting):
        return LogMessage(SERVER_SELECTION, "info", _selection(event, limit))
    if isinstance(
        event,
        sel.ServerSelectionStarted | sel.ServerSelectionSucceeded | sel.ServerSelectionFailed,
    ):
        return LogMessage(SERVER_SELECTION, "debug", _selection(event, limit))
    data = _topology(event, limit, topology_id)
    return None if data is None else LogMessage(TOPOLOGY, "debug", data)


def _command(
    event: ce.CommandStartedEvent | ce.CommandSucceededEvent | ce.CommandFailedEvent,
    limit: int,
) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if isinstance(event, ce.CommandStartedEvent):
        data["message"] = "Command started"
    elif isinstance(event, ce.CommandSucceededEvent):
        data["message"] = "Command succeeded"
    else:
        data["message"] = "Command failed"
    data["commandName"] = event.command_name
    data["databaseName"] = event.database_name
    _put(data, "requestId", event.request_id)
    operation_id = event.operation_id if event.operation_id is not None else event.request_id
    _put(data, "operationId", operation_id)
    _put(data, "driverConnectionId", event.driver_connection_id)
    _server(data, event.connection_id)
    _put(data, "serverConnectionId", event.server_connection_id)
    if event.service_id is not None:
        data["serviceId"] = str(event.service_id)
    if isinstance(event, ce.CommandStartedEvent):
        data["command"] = document_text({} if event.redacted else event.command, limit)
    elif isinstance(event, ce.CommandSucceededEvent):
        data["durationMS"] = _ms(event.duration)
        data["reply"] = document_text({} if event.redacted else event.reply, limit)
    else:
        data["durationMS"] = _ms(event.duration)
        data["failure"] = error_text(event.failure, limit, redact=event.redacted)
    return data


def _connection(event: pe.PoolEvent, limit: int) -> dict[str, Any]:
    data: dict[str, Any] = {"message": ""}
    _server(data, pool_address(event.address))
    if isinstance(event, pe.PoolCreated):
        data["message"] = "Connection pool created"
        for key in _POOL_OPTION_KEYS:
            _put(data, key, event.options.get(key))
    elif isinstance(event, pe.PoolReady):
        data["message"] = "Connection pool ready"
    elif isinstance(event, pe.PoolCleared):
        data["message"] = "Connection pool cleared"
        if event.service_id is not None:
            data["serviceId"] = str(event.service_id)
    elif isinstance(event, pe.PoolClosed):
        data["message"] = "Connection pool closed"
    elif isinstance(event, pe.ConnectionCreated):
        data["message"] = "Connection created"
        data["driverConnectionId"] = event.connection_id
    elif isinstance(event, pe.ConnectionReady):
        data["message"] = "Connection ready"
        data["driverConnectionId"] = event.connection_id
        data["durationMS"] = _ms(event.duration)
    elif isinstance(event, pe.ConnectionClosed):
        data["message"] = "Connection closed"
        data["driverConnectionId"] = event.connection_id
        data["reason"] = _CLOSED_REASONS[event.reason]
        if event.reason is pe.ConnectionClosedReason.ERROR and event.error is not None:
            data["error"] = error_text(event.error, limit)
    elif isinstance(event, pe.ConnectionCheckOutStarted):
        data["message"] = "Connection checkout started"
    elif isinstance(event, pe.ConnectionCheckOutFailed):
        data["message"] = "Connection checkout failed"
        data["reason"] = _CHECKOUT_REASONS[event.reason]
        if event.reason is pe.CheckOutFailedReason.CONNECTION_ERROR and event.error is not None:
            data["error"] = error_text(event.error, limit)
        data["durationMS"] = _ms(event.duration)
    elif isinstance(event, pe.ConnectionCheckedOut):
        data["message"] = "Connection checked out"
        data["driverConnectionId"] = event.connection_id
        data["durationMS"] = _ms(event.duration)
    elif isinstance(event, pe.ConnectionCheckedIn):
        data["message"] = "Connection checked in"
        data["driverConnectionId"] = event.connection_id
    else:
        raise TypeError(f"not a CMAP event: {type(event).__name__}")
    return data


def _selection(
    event: sel.ServerSelectionStarted
    | sel.ServerSelectionSucceeded
    | sel.ServerSelectionFailed
    | sel.ServerSelectionWaiting,
    limit: int,
) -> dict[str, Any]:
    data: dict[str, Any] = {"message": ""}
    data["selector"] = event.selector
    _put(data, "operationId", event.operation_id)
    data["operation"] = event.operation
    data["topologyDescription"] = _describe(event.topology_description)
    if isinstance(event, sel.ServerSelectionStarted):
        data["message"] = "Server selection started"
    elif isinstance(event, sel.ServerSelectionSucceeded):
        data["message"] = "Server selection succeeded"
        _server(data, event.address)
    elif isinstance(event, sel.ServerSelectionFailed):
        data["message"] = "Server selection failed"
        data["failure"] = error_text(event.failure, limit)
    else:
        data["message"] = "Waiting for suitable server to become available"
        if event.remaining_time is not None:
            data["remainingTimeMS"] = max(0, round(event.remaining_time * 1000))
    return data


def _heartbeat(
    data: dict[str, Any],
    event: se.ServerHeartbeatStartedEvent
    | se.ServerHeartbeatSucceededEvent
    | se.ServerHeartbeatFailedEvent,
    topology_id: object,
) -> None:
    own = event.topology_id
    _put(data, "topologyId", _id_value(topology_id if own is None else own))
    address: Address = event.connection_id
    _server(data, address)
    _put(data, "driverConnectionId", event.driver_connection_id)
    _put(data, "serverConnectionId", event.server_connection_id)
    data["awaited"] = event.awaited


def _topology(event: object, limit: int, topology_id: object) -> dict[str, Any] | None:
    data: dict[str, Any]
    if isinstance(event, se.TopologyOpeningEvent | se.TopologyClosedEvent):
        opening = isinstance(event, se.TopologyOpeningEvent)
        text = "Starting topology monitoring" if opening else "Stopped topology monitoring"
        data = {"message": text}
        _put(data, "topologyId", _id_value(event.topology_id))
        return data
    if isinstance(event, se.ServerOpeningEvent | se.ServerClosedEvent):
        opening = isinstance(event, se.ServerOpeningEvent)
        text = "Starting server monitoring" if opening else "Stopped server monitoring"
        data = {"message": text}
        _put(data, "topologyId", _id_value(event.topology_id))
        _server(data, event.address)
        return data
    if isinstance(event, se.TopologyDescriptionChangedEvent):
        data = {"message": "Topology description changed"}
        _put(data, "topologyId", _id_value(event.topology_id))
        data["previousDescription"] = describe_topology(event.previous_description)
        data["newDescription"] = describe_topology(event.new_description)
        return data
    if isinstance(event, se.ServerHeartbeatStartedEvent):
        data = {"message": "Server heartbeat started"}
        _heartbeat(data, event, topology_id)
        return data
    if isinstance(event, se.ServerHeartbeatSucceededEvent):
        data = {"message": "Server heartbeat succeeded"}
        _heartbeat(data, event, topology_id)
        data["durationMS"] = _ms(event.duration)
        data["reply"] = document_text(event.reply, limit)
        return data
    if isinstance(event, se.ServerHeartbeatFailedEvent):
        data = {"message": "Server heartbeat failed"}
        _heartbeat(data, event, topology_id)
        data["durationMS"] = _ms(event.duration)
        data["failure"] = error_text(event.failure, limit)
        return data
    if isinstance(event, se.ServerDescriptionChangedEvent):
        return None  # the spec logs topology changes only
    raise TypeError(f"not a core monitoring event: {type(event).__name__}")
