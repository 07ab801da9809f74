"""What the client core keeps per server, and how a connection's error is told to SDAM.

Inputs: a server's address and pool (:class:`ServerState`), errors met while connecting or
running operations.  Outputs: the per-server records :class:`~.core.ClientCore` works on
(its pool, monitor, open and opening links, check-outs in progress), and the
:class:`~mongo_sansio.sdam.errors.ApplicationError` an error becomes for the SDAM machine.
Pure: no I/O; the core sequences everything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mongo_sansio.bson import ObjectId
from mongo_sansio.client.link import Link
from mongo_sansio.client.monitors import ServerMonitor
from mongo_sansio.client.runtime import Signal
from mongo_sansio.cmap import Pool
from mongo_sansio.connection.description import ConnectionDescription
from mongo_sansio.errors import (
    AuthenticationError,
    MongoError,
    NetworkError,
    NetworkTimeout,
    ServerError,
)
from mongo_sansio.sdam.description import Address, ServerDescription, ServerType
from mongo_sansio.sdam.errors import ApplicationError, ErrorKind, ErrorPhase

__all__ = [
    "KillCursor",
    "ServerState",
    "Waiter",
    "error_kind",
    "establishment_error",
    "server_gone",
]


@attrs.frozen
class KillCursor:
    """The ``killCursors`` command (``body`` against ``db``) for a cursor the application
    dropped while the server at ``address`` still held it."""

    address: tuple[str, int]
    db: str
    body: Mapping[str, Any] = attrs.field(eq=False)
    session: Any = attrs.field(default=None, eq=False)


class Waiter:
    """One check-out in progress: its signal and, once decided, its link or error."""

    __slots__ = ("signal", "link", "error")

    def __init__(self) -> None:
        self.signal = Signal("check-out")
        self.link: Link | None = None
        self.error: BaseException | None = None


class ServerState:
    """What the core keeps per server: its pool, its monitor, its open links."""

    def __init__(self, address: Address, pool: Pool) -> None:
        self.address = address
        self.pool = pool
        self.monitor: ServerMonitor | None = None
        self.links: dict[int, Link] = {}
        self.waiters: dict[int, Waiter] = {}
        self.abandoned: set[int] = set()  # pending connections the pool closed meanwhile
        self.opening: dict[int, Link] = {}  # pending connections whose handshake is running


def server_gone(address: tuple[str, int]) -> MongoError:
    """The error of a check-out from a server that left the topology."""
    return NetworkError(f"{address[0]}:{address[1]} is no longer part of the topology")


def error_kind(error: BaseException) -> ErrorKind:
    """How SDAM sees an error a connection met: a timeout, a server's (or authentication's)
    refusal, or any other network failure."""
    if isinstance(error, NetworkTimeout):
        return ErrorKind.TIMEOUT
    if isinstance(error, ServerError | AuthenticationError):
        return ErrorKind.COMMAND
    return ErrorKind.NETWORK


def establishment_error(
    address: Address, error: MongoError, generation: int, service_id: ObjectId | None = None
) -> ApplicationError:
    """What SDAM is told when opening a pooled connection of pool ``generation`` failed:
    while connecting and handshaking, or while authenticating.  ``service_id``: load-balanced,
    the service the connection's hello named (so the error came after it: authentication)."""
    phase = (
        ErrorPhase.AUTHENTICATING
        if isinstance(error, AuthenticationError) or service_id is not None
        else ErrorPhase.CONNECTING
    )
    reply = error.details if isinstance(error, ServerError) else None
    return ApplicationError(
        address=address,
        kind=error_kind(error),
        phase=phase,
        generation=generation,
        reply=reply or None,
        message=str(error),
        error_labels=error.error_labels,
        service_id=service_id,
    )


def operation_error(
    address: Address,
    error: BaseException,
    *,
    generation: int | None,
    max_wire_version: int | None,
    service_id: ObjectId | None,
) -> ApplicationError:
    """What SDAM is told of an error an operation met on a connection of pool ``generation``
    (``service_id``: the connection's load-balanced service)."""
    reply: Mapping[str, Any] | None = None
    if isinstance(error, ServerError):
        reply = error.details or {"ok": 0, "code": error.code, "errmsg": error.errmsg}
    return ApplicationError(
        address=address,
        kind=error_kind(error),
        generation=generation,
        max_wire_version=max_wire_version,
        reply=reply,
        message=str(error),
        error_labels=error.error_labels if isinstance(error, MongoError) else (),
        service_id=service_id,
    )


def error_wire_version(
    server: ServerDescription, described: ConnectionDescription | None
) -> int | None:
    """The wire version SDAM's error rules read: load-balanced, the services' (from a
    connection's handshake, ``described``; the balancer's own description has none)."""
    if server.type is ServerType.LOAD_BALANCER:
        return None if described is None else described.max_wire_version
    return server.max_wire_version if server.is_known else None
