"""The public monitoring API, named as ``pymongo.monitoring`` names it.

Code written for PyMongo moves here by changing its import: the listener base classes
(:class:`CommandListener`, :class:`ServerListener`, :class:`ServerHeartbeatListener`,
:class:`TopologyListener`, :class:`ConnectionPoolListener`), whose methods raise
``NotImplementedError`` until a subclass overrides them, the event classes with PyMongo's
constructors and read-only attributes, the reason constants, and :func:`register` for listeners
that every client created afterwards includes.

The core builds its own frozen event records (``mongo_sansio.client.events``,
``mongo_sansio.cmap.events``, ``mongo_sansio.sdam.events``); :func:`to_public` turns one of them
into the public event listeners receive, and :func:`listener_method` names the listener base and
method that receive it.  Adapters deliver them (``mongo_sansio.adapters._publish``).

Differences from PyMongo, all additive: command events also carry ``driver_connection_id`` (the
CMAP connection id); pool and connection events carry ``address`` as a ``(host, port)`` tuple as
PyMongo does (the core keeps ``"host:port"``); heartbeat ``reply`` is the hello reply document
(PyMongo wraps it in ``Hello``); descriptions are :class:`~mongo_sansio.sdam.description.
ServerDescription` / :class:`~mongo_sansio.sdam.topology.TopologyDescription`, which offer
PyMongo's attribute names (``server_type``, ``server_type_name``, ``topology_type_name``,
``server_descriptions()``, ...).  Durations: command events give ``duration_micros`` (int); the
other events give seconds (float), as PyMongo does.

Inputs: core events.  Outputs: public events.  Nothing here does I/O.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any, Final

from mongo_sansio._public_events import (
    CommandFailedEvent,
    CommandStartedEvent,
    CommandSucceededEvent,
    ConnectionCheckedInEvent,
    ConnectionCheckedOutEvent,
    ConnectionCheckOutFailedEvent,
    ConnectionCheckOutFailedReason,
    ConnectionCheckOutStartedEvent,
    ConnectionClosedEvent,
    ConnectionClosedReason,
    ConnectionCreatedEvent,
    ConnectionReadyEvent,
    PoolClearedEvent,
    PoolClosedEvent,
    PoolCreatedEvent,
    PoolReadyEvent,
    ServerClosedEvent,
    ServerDescriptionChangedEvent,
    ServerHeartbeatFailedEvent,
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
    ServerOpeningEvent,
    TopologyClosedEvent,
    TopologyDescriptionChangedEvent,
    TopologyEvent,
    TopologyOpenedEvent,
)
from mongo_sansio.client import events as command_events
from mongo_sansio.cmap import events as cmap_events
from mongo_sansio.errors import (
    ConfigurationError,
    MongoError,
    ServerError,
    server_error_from_reply,
)
from mongo_sansio.sdam import events as sdam_events
from mongo_sansio.sdam.description import parse_address

__all__ = [
    "CommandListener",
    "ServerListener",
    "ServerHeartbeatListener",
    "TopologyListener",
    "ConnectionPoolListener",
    "register",
    "registered_listeners",
    "validate_listeners",
    "CommandStartedEvent",
    "CommandSucceededEvent",
    "CommandFailedEvent",
    "PoolCreatedEvent",
    "PoolReadyEvent",
    "PoolClearedEvent",
    "PoolClosedEvent",
    "ConnectionCreatedEvent",
    "ConnectionReadyEvent",
    "ConnectionClosedEvent",
    "ConnectionCheckOutStartedEvent",
    "ConnectionCheckOutFailedEvent",
    "ConnectionCheckedOutEvent",
    "ConnectionCheckedInEvent",
    "ConnectionClosedReason",
    "ConnectionCheckOutFailedReason",
    "ServerOpeningEvent",
    "ServerClosedEvent",
    "ServerDescriptionChangedEvent",
    "TopologyEvent",
    "TopologyOpenedEvent",
    "TopologyClosedEvent",
    "TopologyDescriptionChangedEvent",
    "ServerHeartbeatStartedEvent",
    "ServerHeartbeatSucceededEvent",
    "ServerHeartbeatFailedEvent",
    "to_public",
    "listener_method",
    "failure_document",
]

# -- listeners ------------------------------------------------------------------------------


class _EventListener:
    """Base of every listener class; ``event_listeners=`` accepts only its subclasses."""


class CommandListener(_EventListener):
    """Receives CommandStartedEvent, CommandSucceededEvent and CommandFailedEvent."""

    def started(self, event: CommandStartedEvent) -> None:
        raise NotImplementedError

    def succeeded(self, event: CommandSucceededEvent) -> None:
        raise NotImplementedError

    def failed(self, event: CommandFailedEvent) -> None:
        raise NotImplementedError


class ConnectionPoolListener(_EventListener):
    """Receives the connection pool (CMAP) events."""

    def pool_created(self, event: PoolCreatedEvent) -> None:
        raise NotImplementedError

    def pool_ready(self, event: PoolReadyEvent) -> None:
        raise NotImplementedError

    def pool_cleared(self, event: PoolClearedEvent) -> None:
        raise NotImplementedError

    def pool_closed(self, event: PoolClosedEvent) -> None:
        raise NotImplementedError

    def connection_created(self, event: ConnectionCreatedEvent) -> None:
        raise NotImplementedError

    def connection_ready(self, event: ConnectionReadyEvent) -> None:
        raise NotImplementedError

    def connection_closed(self, event: ConnectionClosedEvent) -> None:
        raise NotImplementedError

    def connection_check_out_started(self, event: ConnectionCheckOutStartedEvent) -> None:
        raise NotImplementedError

    def connection_check_out_failed(self, event: ConnectionCheckOutFailedEvent) -> None:
        raise NotImplementedError

    def connection_checked_out(self, event: ConnectionCheckedOutEvent) -> None:
        raise NotImplementedError

    def connection_checked_in(self, event: ConnectionCheckedInEvent) -> None:
        raise NotImplementedError


class ServerHeartbeatListener(_EventListener):
    """Receives ServerHeartbeatStartedEvent, ...SucceededEvent and ...FailedEvent."""

    def started(self, event: ServerHeartbeatStartedEvent) -> None:
        raise NotImplementedError

    def succeeded(self, event: ServerHeartbeatSucceededEvent) -> None:
        raise NotImplementedError

    def failed(self, event: ServerHeartbeatFailedEvent) -> None:
        raise NotImplementedError


class TopologyListener(_EventListener):
    """Receives TopologyOpenedEvent, TopologyDescriptionChangedEvent and TopologyClosedEvent."""

    def opened(self, event: TopologyOpenedEvent) -> None:
        raise NotImplementedError

    def description_changed(self, event: TopologyDescriptionChangedEvent) -> None:
        raise NotImplementedError

    def closed(self, event: TopologyClosedEvent) -> None:
        raise NotImplementedError


class ServerListener(_EventListener):
    """Receives ServerOpeningEvent, ServerDescriptionChangedEvent and ServerClosedEvent."""

    def opened(self, event: ServerOpeningEvent) -> None:
        raise NotImplementedError

    def description_changed(self, event: ServerDescriptionChangedEvent) -> None:
        raise NotImplementedError

    def closed(self, event: ServerClosedEvent) -> None:
        raise NotImplementedError


_LISTENER_KINDS: Final = (
    "CommandListener, ServerHeartbeatListener, ServerListener, TopologyListener, or "
    "ConnectionPoolListener"
)
_REGISTERED: list[_EventListener] = []


def register(listener: _EventListener) -> None:
    """Register a listener for every client created afterwards (PyMongo's global listeners)."""
    if not isinstance(listener, _EventListener):
        raise TypeError(
            f"Listeners for {listener!r} must be either a {_LISTENER_KINDS}, not {type(listener)}"
        )
    _REGISTERED.append(listener)


def registered_listeners() -> tuple[_EventListener, ...]:
    """The listeners :func:`register` collected, in order."""
    return tuple(_REGISTERED)


def validate_listeners(
    listeners: Sequence[object], option: str = "event_listeners"
) -> tuple[_EventListener, ...]:
    """``listeners`` as a tuple, or TypeError naming the option and the offending object."""
    if isinstance(listeners, str | bytes) or not isinstance(listeners, Sequence):
        raise TypeError(f"{option} must be a list or tuple, not {type(listeners)}")
    checked: list[_EventListener] = []
    for listener in listeners:
        if not isinstance(listener, _EventListener):
            raise TypeError(
                f"Listeners for {option} must be either a {_LISTENER_KINDS}, "
                f"not {type(listener)} ({listener!r})"
            )
        checked.append(listener)
    return tuple(checked)


_REDACTED_FAILURE_FIELDS: Final = ("code", "codeName", "errorLabels")


def failure_document(failure: BaseException, *, redact: bool = False) -> dict[str, Any]:
    """A failure as a document, as PyMongo publishes it: a server error's reply (only
    ``code``, ``codeName`` and ``errorLabels`` when ``redact``: the command was sensitive),
    otherwise ``{"errmsg": str(error), "errtype": class name}``."""
    if isinstance(failure, ServerError):
        document: dict[str, Any] = dict(failure.details) or {
            "ok": 0,
            "errmsg": failure.errmsg,
            **({} if failure.code is None else {"code": failure.code}),
            **({} if failure.code_name is None else {"codeName": failure.code_name}),
            **({"errorLabels": sorted(failure.error_labels)} if failure.error_labels else {}),
        }
        if redact:
            return {k: v for k, v in document.items() if k in _REDACTED_FAILURE_FIELDS}
        return document
    return {"errmsg": str(failure), "errtype": type(failure).__name__}


# -- core event -> public event ---------------------------------------------------------------


def pool_address(address: str) -> tuple[str, int | None]:
    """The core's ``"host:port"`` as PyMongo's ``(host, port)``; a Unix socket path (ending in
    ``.sock``) has port None."""
    if address.endswith(".sock"):
        return (address, None)
    try:
        return parse_address(address)
    except ConfigurationError:
        return (address, None)


def heartbeat_error(failure: object) -> Exception:
    """A heartbeat failure as the exception PyMongo's event carries."""
    if isinstance(failure, Exception):
        return failure
    if isinstance(failure, Mapping):
        return server_error_from_reply(failure)
    return MongoError(str(failure))


def _command(event: command_events.CommandStartedEvent | command_events.CommandSucceededEvent
             | command_events.CommandFailedEvent) -> dict[str, Any]:  # fmt: skip
    return {
        "command_name": event.command_name,
        "request_id": event.request_id if event.request_id is not None else 0,
        "connection_id": event.connection_id,
        "operation_id": event.operation_id if event.operation_id is not None else event.request_id,
        "service_id": event.service_id,
        "database_name": event.database_name,
        "server_connection_id": event.server_connection_id,
        "driver_connection_id": event.driver_connection_id,
    }


def _build(cls: type[Any], slots: Mapping[str, Any]) -> Any:
    """An instance without running ``__init__`` (whose checks the core already made)."""
    instance = object.__new__(cls)
    for name, value in slots.items():
        object.__setattr__(instance, f"_{name}", value)
    return instance


def _micros(seconds: float) -> int:
    return int(datetime.timedelta(seconds=seconds).total_seconds() * 1_000_000)


def to_public(event: object) -> object:
    """The public event for a core event (``mongo_sansio.client.events``,
    ``mongo_sansio.cmap.events``, ``mongo_sansio.sdam.events``); TypeError for anything else.

    Command events keep the core's redaction; ``operation_id`` falls back to the request id,
    as PyMongo's does; a failure becomes :func:`failure_document` of it (redacted to
    code/codeName/errorLabels when the command was sensitive).
    """
    ce, pe, se = command_events, cmap_events, sdam_events
    if isinstance(event, ce.CommandStartedEvent):
        return _build(CommandStartedEvent, {**_command(event), "command": event.command})
    if isinstance(event, ce.CommandSucceededEvent):
        micros = _micros(event.duration)
        return _build(
            CommandSucceededEvent,
            {**_command(event), "reply": event.reply, "duration_micros": micros},
        )
    if isinstance(event, ce.CommandFailedEvent):
        micros = _micros(event.duration)
        failure = failure_document(event.failure, redact=event.redacted)
        return _build(
            CommandFailedEvent, {**_command(event), "failure": failure, "duration_micros": micros}
        )
    if isinstance(event, pe.PoolEvent):
        return _pool_event(event)
    if isinstance(event, se.TopologyOpeningEvent):
        return TopologyOpenedEvent(event.topology_id)
    if isinstance(event, se.TopologyClosedEvent):
        return TopologyClosedEvent(event.topology_id)
    if isinstance(event, se.TopologyDescriptionChangedEvent):
        return TopologyDescriptionChangedEvent(
            event.previous_description, event.new_description, event.topology_id
        )
    if isinstance(event, se.ServerOpeningEvent):
        return ServerOpeningEvent(event.address, event.topology_id)
    if isinstance(event, se.ServerClosedEvent):
        return ServerClosedEvent(event.address, event.topology_id)
    if isinstance(event, se.ServerDescriptionChangedEvent):
        return ServerDescriptionChangedEvent(
            event.previous_description, event.new_description, event.address, event.topology_id
        )
    if isinstance(event, se.ServerHeartbeatStartedEvent):
        return ServerHeartbeatStartedEvent(event.connection_id, event.awaited)
    if isinstance(event, se.ServerHeartbeatSucceededEvent):
        return ServerHeartbeatSucceededEvent(
            event.duration, event.reply, event.connection_id, event.awaited
        )
    if isinstance(event, se.ServerHeartbeatFailedEvent):
        return ServerHeartbeatFailedEvent(
            event.duration, heartbeat_error(event.failure), event.connection_id, event.awaited
        )
    raise TypeError(f"not a core monitoring event: {type(event).__name__}")


def _pool_event(event: cmap_events.PoolEvent) -> object:
    pe = cmap_events
    address = pool_address(event.address)
    if isinstance(event, pe.PoolCreated):
        return PoolCreatedEvent(address, dict(event.options))
    if isinstance(event, pe.PoolReady):
        return PoolReadyEvent(address)
    if isinstance(event, pe.PoolCleared):
        return PoolClearedEvent(address, event.service_id, event.interrupt_in_use_connections)
    if isinstance(event, pe.PoolClosed):
        return PoolClosedEvent(address)
    if isinstance(event, pe.ConnectionCreated):
        return ConnectionCreatedEvent(address, event.connection_id)
    if isinstance(event, pe.ConnectionReady):
        return ConnectionReadyEvent(address, event.connection_id, event.duration)
    if isinstance(event, pe.ConnectionClosed):
        return ConnectionClosedEvent(address, event.connection_id, event.reason.value)
    if isinstance(event, pe.ConnectionCheckOutStarted):
        return ConnectionCheckOutStartedEvent(address)
    if isinstance(event, pe.ConnectionCheckOutFailed):
        return ConnectionCheckOutFailedEvent(address, event.reason.value, event.duration)
    if isinstance(event, pe.ConnectionCheckedOut):
        return ConnectionCheckedOutEvent(address, event.connection_id, event.duration)
    if isinstance(event, pe.ConnectionCheckedIn):
        return ConnectionCheckedInEvent(address, event.connection_id)
    raise TypeError(f"not a core monitoring event: {type(event).__name__}")


_METHODS: Final[Mapping[type, tuple[type[_EventListener], str]]] = {
    CommandStartedEvent: (CommandListener, "started"),
    CommandSucceededEvent: (CommandListener, "succeeded"),
    CommandFailedEvent: (CommandListener, "failed"),
    PoolCreatedEvent: (ConnectionPoolListener, "pool_created"),
    PoolReadyEvent: (ConnectionPoolListener, "pool_ready"),
    PoolClearedEvent: (ConnectionPoolListener, "pool_cleared"),
    PoolClosedEvent: (ConnectionPoolListener, "pool_closed"),
    ConnectionCreatedEvent: (ConnectionPoolListener, "connection_created"),
    ConnectionReadyEvent: (ConnectionPoolListener, "connection_ready"),
    ConnectionClosedEvent: (ConnectionPoolListener, "connection_closed"),
    ConnectionCheckOutStartedEvent: (ConnectionPoolListener, "connection_check_out_started"),
    ConnectionCheckOutFailedEvent: (ConnectionPoolListener, "connection_check_out_failed"),
    ConnectionCheckedOutEvent: (ConnectionPoolListener, "connection_checked_out"),
    ConnectionCheckedInEvent: (ConnectionPoolListener, "connection_checked_in"),
    ServerOpeningEvent: (ServerListener, "opened"),
    ServerDescriptionChangedEvent: (ServerListener, "description_changed"),
    ServerClosedEvent: (ServerListener, "closed"),
    TopologyOpenedEvent: (TopologyListener, "opened"),
    TopologyDescriptionChangedEvent: (TopologyListener, "description_changed"),
    TopologyClosedEvent: (TopologyListener, "closed"),
    ServerHeartbeatStartedEvent: (ServerHeartbeatListener, "started"),
    ServerHeartbeatSucceededEvent: (ServerHeartbeatListener, "succeeded"),
    ServerHeartbeatFailedEvent: (ServerHeartbeatListener, "failed"),
}


def listener_method(event: object) -> tuple[type[_EventListener], str]:
    """The listener base class and the method name that receive a public event."""
    try:
        return _METHODS[type(event)]
    except KeyError:
        raise TypeError(f"not a public monitoring event: {type(event).__name__}") from None
