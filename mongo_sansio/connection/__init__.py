"""Connections: client metadata, the handshake, the per-connection machine, establishment.

* :mod:`.metadata` -- the handshake's ``client`` document from data the adapter gathered
  (:func:`build_client_metadata`, :class:`DriverInfo`).
* :mod:`.handshake` -- the hello command (:func:`build_hello`, :class:`HandshakeOptions`)
  and the Stable API fields (:class:`ServerApi`, :func:`stable_api_fields`).
* :mod:`.description` -- what the hello reply says (:class:`ConnectionDescription`, the wire
  version check :func:`check_compatible`).
* :mod:`.conn` -- :class:`Connection`, the h11-style machine: commands in, bytes out; bytes
  in, :class:`Reply` out.
* :mod:`.establish` -- the handshake-then-authenticate flow (:func:`establish`).
"""

from __future__ import annotations

from mongo_sansio.connection.conn import (
    CLOSED,
    NEED_DATA,
    TRANSITIONS,
    Connection,
    ConnectionInput,
    ConnectionState,
    Reply,
)
from mongo_sansio.connection.description import (
    DEFAULT_MAX_BSON_OBJECT_SIZE,
    DEFAULT_MAX_MESSAGE_SIZE_BYTES,
    DEFAULT_MAX_WRITE_BATCH_SIZE,
    MAX_SUPPORTED_WIRE_VERSION,
    MIN_SUPPORTED_WIRE_VERSION,
    ConnectionDescription,
    InvalidHelloReply,
    check_compatible,
)
from mongo_sansio.connection.establish import AuthenticatorLike, establish
from mongo_sansio.connection.handshake import (
    HandshakeOptions,
    ServerApi,
    build_hello,
    sasl_supported_mechs_user,
    stable_api_fields,
)
from mongo_sansio.connection.metadata import (
    MAX_APP_NAME_SIZE,
    MAX_METADATA_SIZE,
    DriverInfo,
    build_client_metadata,
    detect_container,
    detect_faas,
)

__all__ = [
    "AuthenticatorLike",
    "CLOSED",
    "Connection",
    "ConnectionDescription",
    "ConnectionInput",
    "ConnectionState",
    "DEFAULT_MAX_BSON_OBJECT_SIZE",
    "DEFAULT_MAX_MESSAGE_SIZE_BYTES",
    "DEFAULT_MAX_WRITE_BATCH_SIZE",
    "DriverInfo",
    "HandshakeOptions",
    "InvalidHelloReply",
    "MAX_APP_NAME_SIZE",
    "MAX_METADATA_SIZE",
    "MAX_SUPPORTED_WIRE_VERSION",
    "MIN_SUPPORTED_WIRE_VERSION",
    "NEED_DATA",
    "Reply",
    "ServerApi",
    "TRANSITIONS",
    "build_client_metadata",
    "build_hello",
    "check_compatible",
    "detect_container",
    "detect_faas",
    "establish",
    "sasl_supported_mechs_user",
    "stable_api_fields",
]
