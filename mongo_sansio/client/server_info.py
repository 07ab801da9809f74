"""What an operation flow is told about the server it was given (:class:`~mongo_sansio.flow.ServerInfo`).

Inputs: the server's SDAM description and, once a connection to it completed its handshake,
that connection's description (the size limits come from there).  Output: the
:class:`ServerInfo`.  Pure.
"""

from __future__ import annotations

from typing import Final

from mongo_sansio.connection import (
    DEFAULT_MAX_BSON_OBJECT_SIZE,
    DEFAULT_MAX_MESSAGE_SIZE_BYTES,
    DEFAULT_MAX_WRITE_BATCH_SIZE,
    ConnectionDescription,
)
from mongo_sansio.flow import ServerInfo
from mongo_sansio.sdam.description import ServerDescription, ServerType
from mongo_sansio.sdam.topology import CLIENT_MAX_WIRE_VERSION

__all__ = ["RETRYABLE_WRITES_WIRE_VERSION", "describe_server"]

#: MongoDB 3.6, the first to accept txnNumber (retryable writes)
RETRYABLE_WRITES_WIRE_VERSION: Final = 6
#: MongoDB 5.0, the oldest server a load balancer fronts (load-balancers.md)
LOAD_BALANCED_MIN_WIRE_VERSION: Final = 13


def describe_server(
    address: tuple[str, int],
    server: ServerDescription,
    described: ConnectionDescription | None,
) -> ServerInfo:
    """The :class:`ServerInfo` of ``server`` reached at ``address``."""
    if described is None:
        limits = (
            DEFAULT_MAX_BSON_OBJECT_SIZE,
            DEFAULT_MAX_MESSAGE_SIZE_BYTES,
            DEFAULT_MAX_WRITE_BATCH_SIZE,
        )
    else:
        limits = (
            described.max_bson_object_size,
            described.max_message_size_bytes,
            described.max_write_batch_size,
        )
    if server.type is ServerType.LOAD_BALANCER:
        # no monitoring: the services' version comes from the connections' handshakes; before
        # the first one, the newest this client speaks (a command an older service lacks then
        # fails on the server, where refusing it here would wrongly refuse a newer service's
        # features); every service behind a balancer supports sessions (load-balancers.md)
        wire = CLIENT_MAX_WIRE_VERSION if described is None else described.max_wire_version
        return ServerInfo(
            address=address,
            max_wire_version=wire,
            is_writable=True,
            max_bson_object_size=limits[0],
            max_message_size_bytes=limits[1],
            max_write_batch_size=limits[2],
            supports_retryable_writes=wire >= RETRYABLE_WRITES_WIRE_VERSION,
            load_balanced=True,
        )
    return ServerInfo(
        address=address,
        max_wire_version=server.max_wire_version,
        is_writable=server.is_writable,
        max_bson_object_size=limits[0],
        max_message_size_bytes=limits[1],
        max_write_batch_size=limits[2],
        supports_retryable_writes=server.type is not ServerType.STANDALONE
        and server.logical_session_timeout_minutes is not None
        and server.max_wire_version >= RETRYABLE_WRITES_WIRE_VERSION,
        is_standalone=server.type is ServerType.STANDALONE,
        is_mongos=server.type is ServerType.MONGOS,
    )
