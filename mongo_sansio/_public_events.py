"""The public monitoring event classes, as ``pymongo.monitoring`` defines them.

Import them from :mod:`mongo_sansio.monitoring`; this module only keeps that one under its size.
Each class has PyMongo's constructor and read-only properties (plain slotted classes, compared by
identity, as PyMongo's are).  Command events also carry ``driver_connection_id``.

Inputs: the values of an event.  Outputs: the event objects.  Nothing here does I/O.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Final

from mongo_sansio.bson import ObjectId
from mongo_sansio.client.events import SENSITIVE_COMMANDS
from mongo_sansio.sdam.description import Address, ServerDescription
from mongo_sansio.sdam.topology import TopologyDescription

# -- command events -------------------------------------------------------------------------

_SENSITIVE: Final = SENSITIVE_COMMANDS


def _is_sensitive(command_name: str, document: Mapping[str, Any]) -> bool:
    name = command_name.lower()
    return name in _SENSITIVE or (
        name in ("hello", "ismaster") and "speculativeAuthenticate" in document
    )


def _to_micros(duration: datetime.timedelta) -> int:
    return int(duration.total_seconds() * 1_000_000)


class _CommandEvent:
    __slots__ = (
        "_command_name",
        "_request_id",
        "_connection_id",
        "_operation_id",
        "_service_id",
        "_database_name",
        "_server_connection_id",
        "_driver_connection_id",
    )

    def __init__(
        self,
        command_name: str,
        request_id: int,
        connection_id: Address,
        operation_id: int | None,
        service_id: ObjectId | None = None,
        database_name: str = "",
        server_connection_id: int | None = None,
        *,
        driver_connection_id: int | None = None,
    ) -> None:
        self._command_name = command_name
        self._request_id = request_id
        self._connection_id = connection_id
        self._operation_id = operation_id
        self._service_id = service_id
        self._database_name = database_name
        self._server_connection_id = server_connection_id
        self._driver_connection_id = driver_connection_id

    @property
    def command_name(self) -> str:
        return self._command_name

    @property
    def request_id(self) -> int:
        """The wire message's requestID."""
        return self._request_id

    @property
    def connection_id(self) -> Address:
        """The address ``(host, port)`` of the server the command was sent to."""
        return self._connection_id

    @property
    def operation_id(self) -> int | None:
        """Shared by the commands of one operation (the request id when the operation has none)."""
        return self._operation_id

    @property
    def service_id(self) -> ObjectId | None:
        return self._service_id

    @property
    def database_name(self) -> str:
        return self._database_name

    @property
    def server_connection_id(self) -> int | None:
        """The server's id for the connection (its handshake ``connectionId``), if known."""
        return self._server_connection_id

    @property
    def driver_connection_id(self) -> int | None:
        """The pool's id for the connection (``ConnectionCreatedEvent.connection_id``)."""
        return self._driver_connection_id

    def _ids(self) -> str:
        return (
            f"operation_id: {self.operation_id}, service_id: {self.service_id}, "
            f"server_connection_id: {self.server_connection_id}"
        )


class CommandStartedEvent(_CommandEvent):
    """A command was sent.  ``command`` is ``{}`` for security-sensitive commands."""

    __slots__ = ("_command",)

    def __init__(
        self,
        command: Mapping[str, Any],
        database_name: str,
        request_id: int,
        connection_id: Address,
        operation_id: int | None,
        service_id: ObjectId | None = None,
        server_connection_id: int | None = None,
        *,
        driver_connection_id: int | None = None,
    ) -> None:
        if not command:
            raise ValueError(f"{command!r} is not a valid command")
        command_name = next(iter(command))
        super().__init__(
            command_name,
            request_id,
            connection_id,
            operation_id,
            service_id,
            database_name,
            server_connection_id,
            driver_connection_id=driver_connection_id,
        )
        self._command: Mapping[str, Any] = {} if _is_sensitive(command_name, command) else command

    @property
    def command(self) -> Mapping[str, Any]:
        return self._command

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} {self.connection_id} db: {self.database_name!r}, "
            f"command: {self.command_name!r}, {self._ids()}>"
        )


class CommandSucceededEvent(_CommandEvent):
    """A command succeeded (``ok: 1``).  ``reply`` is ``{}`` for sensitive commands."""

    __slots__ = ("_duration_micros", "_reply")

    def __init__(
        self,
        duration: datetime.timedelta,
        reply: Mapping[str, Any],
        command_name: str,
        request_id: int,
        connection_id: Address,
        operation_id: int | None,
        service_id: ObjectId | None = None,
        database_name: str = "",
        server_connection_id: int | None = None,
        *,
        driver_connection_id: int | None = None,
    ) -> None:
        super().__init__(
            command_name,
            request_id,
            connection_id,
            operation_id,
            service_id,
            database_name,
            server_connection_id,
            driver_connection_id=driver_connection_id,
        )
        self._duration_micros = _to_micros(duration)
        self._reply: Mapping[str, Any] = {} if _is_sensitive(command_name, reply) else reply

    @property
    def duration_micros(self) -> int:
        return self._duration_micros

    @property
    def reply(self) -> Mapping[str, Any]:
        return self._reply

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} {self.connection_id} db: {self.database_name!r}, "
            f"command: {self.command_name!r}, duration_micros: {self.duration_micros}, "
            f"{self._ids()}>"
        )


class CommandFailedEvent(_CommandEvent):
    """A command failed: an ``ok: 0`` reply or an error.  ``failure`` is a document: the
    server's reply, or ``{"errmsg": ..., "errtype": ...}`` (see :func:`failure_document`)."""

    __slots__ = ("_duration_micros", "_failure")

    def __init__(
        self,
        duration: datetime.timedelta,
        failure: Mapping[str, Any],
        command_name: str,
        request_id: int,
        connection_id: Address,
        operation_id: int | None,
        service_id: ObjectId | None = None,
        database_name: str = "",
        server_connection_id: int | None = None,
        *,
        driver_connection_id: int | None = None,
    ) -> None:
        super().__init__(
            command_name,
            request_id,
            connection_id,
            operation_id,
            service_id,
            database_name,
            server_connection_id,
            driver_connection_id=driver_connection_id,
        )
        self._duration_micros = _to_micros(duration)
        self._failure = failure

    @property
    def duration_micros(self) -> int:
        return self._duration_micros

    @property
    def failure(self) -> Mapping[str, Any]:
        return self._failure

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} {self.connection_id} db: {self.database_name!r}, "
            f"command: {self.command_name!r}, duration_micros: {self.duration_micros}, "
            f"failure: {self.failure!r}, {self._ids()}>"
        )


# -- pool and connection events ---------------------------------------------------------------


class ConnectionClosedReason:
    """Values of :attr:`ConnectionClosedEvent.reason`."""

    STALE = "stale"
    IDLE = "idle"
    ERROR = "error"
    POOL_CLOSED = "poolClosed"


class ConnectionCheckOutFailedReason:
    """Values of :attr:`ConnectionCheckOutFailedEvent.reason`."""

    TIMEOUT = "timeout"
    POOL_CLOSED = "poolClosed"
    CONN_ERROR = "connectionError"


class _PoolEvent:
    __slots__ = ("_address",)

    def __init__(self, address: tuple[str, int | None]) -> None:
        self._address = address

    @property
    def address(self) -> tuple[str, int | None]:
        """The ``(host, port)`` of the server the pool connects to (port None: a Unix socket)."""
        return self._address

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._address!r})"


class PoolCreatedEvent(_PoolEvent):
    """A pool was created; ``options`` holds its non-default options by their URI names."""

    __slots__ = ("_options",)

    def __init__(self, address: tuple[str, int | None], options: dict[str, Any]) -> None:
        super().__init__(address)
        self._options = options

    @property
    def options(self) -> dict[str, Any]:
        return self._options

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.address!r}, {self._options!r})"


class PoolReadyEvent(_PoolEvent):
    """A pool was marked ready."""

    __slots__ = ()


class PoolClearedEvent(_PoolEvent):
    """A pool (or one load-balanced service's connections) was cleared."""

    __slots__ = ("_service_id", "_interrupt_connections")

    def __init__(
        self,
        address: tuple[str, int | None],
        service_id: ObjectId | None = None,
        interrupt_connections: bool = False,
    ) -> None:
        super().__init__(address)
        self._service_id = service_id
        self._interrupt_connections = interrupt_connections

    @property
    def service_id(self) -> ObjectId | None:
        return self._service_id

    @property
    def interrupt_connections(self) -> bool:
        """Whether connections in use were interrupted too."""
        return self._interrupt_connections

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.address!r}, {self._service_id!r}, "
            f"{self._interrupt_connections!r})"
        )


class PoolClosedEvent(_PoolEvent):
    """A pool was closed."""

    __slots__ = ()


class _ConnectionIdEvent(_PoolEvent):
    __slots__ = ("_connection_id",)

    def __init__(self, address: tuple[str, int | None], connection_id: int) -> None:
        super().__init__(address)
        self._connection_id = connection_id

    @property
    def connection_id(self) -> int:
        """The pool's id for the connection."""
        return self._connection_id

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.address!r}, {self._connection_id!r})"


class _ConnectionDurationEvent(_ConnectionIdEvent):
    __slots__ = ("_duration",)

    def __init__(
        self, address: tuple[str, int | None], connection_id: int, duration: float | None
    ) -> None:
        super().__init__(address, connection_id)
        self._duration = duration

    @property
    def duration(self) -> float | None:
        """Seconds (see the event for since when)."""
        return self._duration

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.address!r}, {self.connection_id!r}, {self._duration!r})"
        )


class ConnectionCreatedEvent(_ConnectionIdEvent):
    """A connection was created (not yet ready for use)."""

    __slots__ = ()


class ConnectionReadyEvent(_ConnectionDurationEvent):
    """A connection finished its setup; ``duration`` is since ConnectionCreatedEvent."""

    __slots__ = ()


class ConnectionClosedEvent(_ConnectionIdEvent):
    """A connection was closed; ``reason`` is a :class:`ConnectionClosedReason` value."""

    __slots__ = ("_reason",)

    def __init__(self, address: tuple[str, int | None], connection_id: int, reason: str) -> None:
        super().__init__(address, connection_id)
        self._reason = reason

    @property
    def reason(self) -> str:
        return self._reason

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.address!r}, {self.connection_id!r}, {self._reason!r})"


class ConnectionCheckOutStartedEvent(_PoolEvent):
    """A check-out began."""

    __slots__ = ()


class ConnectionCheckOutFailedEvent(_ConnectionDurationEvent):
    """A check-out failed; ``reason`` is a :class:`ConnectionCheckOutFailedReason` value,
    ``duration`` is since ConnectionCheckOutStartedEvent, ``connection_id`` is 0."""

    __slots__ = ("_reason",)

    def __init__(
        self, address: tuple[str, int | None], reason: str, duration: float | None
    ) -> None:
        super().__init__(address, 0, duration)
        self._reason = reason

    @property
    def reason(self) -> str:
        return self._reason

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.address!r}, {self._reason!r}, {self.duration!r})"


class ConnectionCheckedOutEvent(_ConnectionDurationEvent):
    """A check-out succeeded; ``duration`` is since ConnectionCheckOutStartedEvent."""

    __slots__ = ()


class ConnectionCheckedInEvent(_ConnectionIdEvent):
    """A connection was checked back in."""

    __slots__ = ()


# -- server and topology events ---------------------------------------------------------------


class _ServerEvent:
    __slots__ = ("_server_address", "_topology_id")

    def __init__(self, server_address: Address, topology_id: Any) -> None:
        self._server_address = server_address
        self._topology_id = topology_id

    @property
    def server_address(self) -> Address:
        return self._server_address

    @property
    def topology_id(self) -> Any:
        """The client's id for its topology (an ObjectId)."""
        return self._topology_id

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.server_address} topology_id: {self.topology_id}>"


class ServerDescriptionChangedEvent(_ServerEvent):
    """A server's description changed."""

    __slots__ = ("_previous_description", "_new_description")

    def __init__(
        self,
        previous_description: ServerDescription,
        new_description: ServerDescription,
        server_address: Address,
        topology_id: Any,
    ) -> None:
        super().__init__(server_address, topology_id)
        self._previous_description = previous_description
        self._new_description = new_description

    @property
    def previous_description(self) -> ServerDescription:
        return self._previous_description

    @property
    def new_description(self) -> ServerDescription:
        return self._new_description

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} {self.server_address} changed from: "
            f"{self.previous_description.server_type_name}, "
            f"to: {self.new_description.server_type_name}>"
        )


class ServerOpeningEvent(_ServerEvent):
    """A server joined the topology."""

    __slots__ = ()


class ServerClosedEvent(_ServerEvent):
    """A server left the topology."""

    __slots__ = ()


class TopologyEvent:
    """Base of the topology events."""

    __slots__ = ("_topology_id",)

    def __init__(self, topology_id: Any) -> None:
        self._topology_id = topology_id

    @property
    def topology_id(self) -> Any:
        return self._topology_id

    def __repr__(self) -> str:
        return f"<{type(self).__name__} topology_id: {self.topology_id}>"


class TopologyDescriptionChangedEvent(TopologyEvent):
    """The topology's description changed."""

    __slots__ = ("_previous_description", "_new_description")

    def __init__(
        self,
        previous_description: TopologyDescription,
        new_description: TopologyDescription,
        topology_id: Any,
    ) -> None:
        super().__init__(topology_id)
        self._previous_description = previous_description
        self._new_description = new_description

    @property
    def previous_description(self) -> TopologyDescription:
        return self._previous_description

    @property
    def new_description(self) -> TopologyDescription:
        return self._new_description

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} topology_id: {self.topology_id} changed from: "
            f"{self.previous_description.topology_type_name}, "
            f"to: {self.new_description.topology_type_name}>"
        )


class TopologyOpenedEvent(TopologyEvent):
    """The topology was opened."""

    __slots__ = ()


class TopologyClosedEvent(TopologyEvent):
    """The topology was closed."""

    __slots__ = ()


class _ServerHeartbeatEvent:
    __slots__ = ("_connection_id", "_awaited")

    def __init__(self, connection_id: Address, awaited: bool = False) -> None:
        self._connection_id = connection_id
        self._awaited = awaited

    @property
    def connection_id(self) -> Address:
        """The address ``(host, port)`` of the monitored server."""
        return self._connection_id

    @property
    def awaited(self) -> bool:
        """Whether the heartbeat was an awaitable (streaming) hello."""
        return self._awaited

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.connection_id} awaited: {self.awaited}>"


class ServerHeartbeatStartedEvent(_ServerHeartbeatEvent):
    """A heartbeat started."""

    __slots__ = ()


class ServerHeartbeatSucceededEvent(_ServerHeartbeatEvent):
    """A heartbeat succeeded; ``duration`` is seconds, ``reply`` the hello reply."""

    __slots__ = ("_duration", "_reply")

    def __init__(
        self,
        duration: float,
        reply: Mapping[str, Any],
        connection_id: Address,
        awaited: bool = False,
    ) -> None:
        super().__init__(connection_id, awaited)
        self._duration = duration
        self._reply = reply

    @property
    def duration(self) -> float:
        return self._duration

    @property
    def reply(self) -> Mapping[str, Any]:
        return self._reply

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} {self.connection_id} duration: {self.duration}, "
            f"awaited: {self.awaited}, reply: {dict(self.reply)}>"
        )


class ServerHeartbeatFailedEvent(_ServerHeartbeatEvent):
    """A heartbeat failed; ``reply`` is the exception (an ``ok: 0`` reply becomes its
    ServerError), ``duration`` seconds."""

    __slots__ = ("_duration", "_reply")

    def __init__(
        self, duration: float, reply: Exception, connection_id: Address, awaited: bool = False
    ) -> None:
        super().__init__(connection_id, awaited)
        self._duration = duration
        self._reply = reply

    @property
    def duration(self) -> float:
        return self._duration

    @property
    def reply(self) -> Exception:
        return self._reply

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} {self.connection_id} duration: {self.duration}, "
            f"awaited: {self.awaited}, reply: {self.reply!r}>"
        )
