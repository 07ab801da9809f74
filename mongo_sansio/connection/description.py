"""What a connection learned from its handshake: :class:`ConnectionDescription`.

Inputs: the server's address, its decoded hello (or legacy hello) reply, the compressors we
offered (in our order of preference) and whether we asked for load-balanced mode.
Outputs: a frozen :class:`ConnectionDescription`, the :class:`~mongo_sansio.flow.ServerInfo`
flows are given, and the compatibility verdict of :func:`check_compatible`.

Every field read from the reply is type-checked, by the readers SDAM uses too: a malformed
reply raises :class:`~mongo_sansio.sdam.description.InvalidHelloReply` (a
:class:`~mongo_sansio.errors.RemoteProtocolError`) naming the field, an ``ok: 0`` reply the
typed :class:`~mongo_sansio.errors.ServerError`, and nothing else escapes.  Fields the
handshake does not use (``lastWrite``, ``tags``, ...) are left for SDAM, which parses them
from the same reply.

Wire versions: this client speaks :data:`MIN_SUPPORTED_WIRE_VERSION` (7, MongoDB 4.0) through
:data:`MAX_SUPPORTED_WIRE_VERSION` (25, MongoDB 8.0); a server whose range does not overlap
raises :class:`~mongo_sansio.errors.IncompatibleServerError` naming both ranges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import attrs

from mongo_sansio.bson import ObjectId
from mongo_sansio.errors import IncompatibleServerError, check_reply
from mongo_sansio.flow import ServerInfo
from mongo_sansio.sdam.description import (
    WRITABLE_TYPES,
    Address,
    InvalidHelloReply,
    ServerType,
    TopologyVersion,
    format_address,
    hello_server_type,
    read_address,
    read_addresses,
    read_bool,
    read_int,
    read_object_id,
    read_str,
    read_strings,
    shown,
)
from mongo_sansio.wire import OP_MSG
from mongo_sansio.wire.messages import MIN_MESSAGE_SIZE

__all__ = [
    "ConnectionDescription",
    "InvalidHelloReply",
    "MIN_SUPPORTED_WIRE_VERSION",
    "MAX_SUPPORTED_WIRE_VERSION",
    "MIN_SUPPORTED_MONGODB",
    "DEFAULT_MAX_BSON_OBJECT_SIZE",
    "DEFAULT_MAX_MESSAGE_SIZE_BYTES",
    "DEFAULT_MAX_WRITE_BATCH_SIZE",
    "check_compatible",
]

MIN_SUPPORTED_WIRE_VERSION = 7
MAX_SUPPORTED_WIRE_VERSION = 25
MIN_SUPPORTED_MONGODB = "4.0"

DEFAULT_MAX_BSON_OBJECT_SIZE = 16 * 1024 * 1024
DEFAULT_MAX_MESSAGE_SIZE_BYTES = 48_000_000
DEFAULT_MAX_WRITE_BATCH_SIZE = 100_000

# the smallest maxMessageSizeBytes a reader accepts (a header and an empty OP_MSG): a
# description never hands the reader a maximum it refuses, which would blame the caller
_MIN_SIZE = MIN_MESSAGE_SIZE[OP_MSG]
_LOAD_BALANCER_MESSAGE = (
    "Driver attempted to initialize in load balancing mode, "
    "but the server does not support this mode."
)


@attrs.frozen(kw_only=True)
class ConnectionDescription:
    """The outcome of one connection's handshake.

    ``server_type`` is a hint (SDAM decides the topology from its own checks);
    ``is_writable_primary`` is the reply's ``isWritablePrimary`` (legacy ``ismaster``).
    ``compressor`` is the first of our offered compressors the server also named, or None.
    ``sasl_supported_mechs`` is None when the reply had no such field (a user name was not
    asked about, or the server does not know it).  ``speculative_authenticate`` is the
    reply's speculative authentication document, or None.  ``reply`` is the whole reply.
    """

    address: Address
    server_type: ServerType
    is_writable_primary: bool = False
    hello_ok: bool = False
    min_wire_version: int = 0
    max_wire_version: int = 0
    max_bson_object_size: int = DEFAULT_MAX_BSON_OBJECT_SIZE
    max_message_size_bytes: int = DEFAULT_MAX_MESSAGE_SIZE_BYTES
    max_write_batch_size: int = DEFAULT_MAX_WRITE_BATCH_SIZE
    logical_session_timeout_minutes: int | None = None
    compressor: str | None = None
    sasl_supported_mechs: tuple[str, ...] | None = None
    speculative_authenticate: Mapping[str, Any] | None = None
    server_connection_id: int | None = None
    service_id: ObjectId | None = None
    topology_version: TopologyVersion | None = None
    set_name: str | None = None
    hosts: tuple[Address, ...] = ()
    primary: Address | None = None
    is_secondary: bool = False
    msg: str | None = None
    reply: Mapping[str, Any] = attrs.field(factory=dict, eq=False, repr=False)

    @classmethod
    def from_hello(
        cls,
        address: Address,
        reply: Mapping[str, Any],
        *,
        compressors: Sequence[str] = (),
        load_balanced: bool = False,
    ) -> ConnectionDescription:
        """Describe the connection from the handshake's reply (see the module documentation).

        Raises the typed ServerError for ``ok: 0`` and InvalidHelloReply for a field of the
        wrong type.  Wire versions are not checked here: :func:`check_compatible` does that.
        """
        if not isinstance(reply, Mapping):
            raise InvalidHelloReply(f"a hello reply must be a document, not {type(reply).__name__}")
        check_reply(reply)
        primary_key = "isWritablePrimary" if "isWritablePrimary" in reply else "ismaster"
        server_type = ServerType.LOAD_BALANCER if load_balanced else hello_server_type(reply)
        raw_version = reply.get("topologyVersion")
        speculative = reply.get("speculativeAuthenticate")
        if speculative is not None and not isinstance(speculative, Mapping):
            raise InvalidHelloReply(
                f"speculativeAuthenticate must be a document, got {shown(speculative)}"
            )
        return cls(
            address=address,
            server_type=server_type,
            is_writable_primary=read_bool(reply, primary_key),
            hello_ok=read_bool(reply, "helloOk"),
            min_wire_version=_int(reply, "minWireVersion", 0, minimum=0),
            max_wire_version=_int(reply, "maxWireVersion", 0, minimum=0),
            max_bson_object_size=_int(
                reply, "maxBsonObjectSize", DEFAULT_MAX_BSON_OBJECT_SIZE, minimum=1
            ),
            max_message_size_bytes=_int(
                reply, "maxMessageSizeBytes", DEFAULT_MAX_MESSAGE_SIZE_BYTES, minimum=_MIN_SIZE
            ),
            max_write_batch_size=_int(
                reply, "maxWriteBatchSize", DEFAULT_MAX_WRITE_BATCH_SIZE, minimum=1
            ),
            logical_session_timeout_minutes=read_int(reply, "logicalSessionTimeoutMinutes"),
            compressor=_negotiated(reply, compressors),
            sasl_supported_mechs=read_strings(reply, "saslSupportedMechs"),
            speculative_authenticate=None
            if speculative is None
            else MappingProxyType(dict(speculative)),
            server_connection_id=read_int(reply, "connectionId"),
            service_id=read_object_id(reply, "serviceId"),
            topology_version=None
            if raw_version is None
            else TopologyVersion.from_document(raw_version),
            set_name=read_str(reply, "setName"),
            hosts=read_addresses(reply, "hosts"),
            primary=read_address(reply, "primary"),
            is_secondary=read_bool(reply, "secondary"),
            msg=read_str(reply, "msg"),
            reply=MappingProxyType(dict(reply)),
        )

    @property
    def is_writable(self) -> bool:
        """A primary, mongos, standalone or load balancer: may receive writes."""
        return self.server_type in WRITABLE_TYPES

    def to_server_info(self) -> ServerInfo:
        """The :class:`~mongo_sansio.flow.ServerInfo` of this server, for flows."""
        return ServerInfo(
            address=self.address,
            max_wire_version=self.max_wire_version,
            is_writable=self.is_writable,
            max_bson_object_size=self.max_bson_object_size,
            max_message_size_bytes=self.max_message_size_bytes,
            max_write_batch_size=self.max_write_batch_size,
        )


def check_compatible(description: ConnectionDescription, *, load_balanced: bool = False) -> None:
    """Raise IncompatibleServerError when the server's wire version range does not overlap
    ours, or when load-balanced mode was asked for and the reply has no ``serviceId``."""
    where = format_address(description.address)
    low, high = description.min_wire_version, description.max_wire_version
    ours = f"{MIN_SUPPORTED_WIRE_VERSION} through {MAX_SUPPORTED_WIRE_VERSION}"
    if low > MAX_SUPPORTED_WIRE_VERSION:
        raise IncompatibleServerError(
            f"server at {where} requires wire version {low} (it speaks {low} through {high}), "
            f"but this client only supports {ours}"
        )
    if high < MIN_SUPPORTED_WIRE_VERSION:
        raise IncompatibleServerError(
            f"server at {where} reports wire version {high} (it speaks {low} through {high}), "
            f"but this client requires at least {MIN_SUPPORTED_WIRE_VERSION} "
            f"(MongoDB {MIN_SUPPORTED_MONGODB}) and supports {ours}"
        )
    if load_balanced and description.service_id is None:
        raise IncompatibleServerError(f"{_LOAD_BALANCER_MESSAGE} (server at {where})")


# -- reading typed fields (the readers shared with SDAM live in mongo_sansio.sdam.description) --


def _int(reply: Mapping[str, Any], key: str, default: int, *, minimum: int) -> int:
    value = read_int(reply, key)
    if value is None:
        return default
    if value < minimum:
        raise InvalidHelloReply(f"{key} must be at least {minimum}, got {value}")
    return value


def _negotiated(reply: Mapping[str, Any], offered: Sequence[str]) -> str | None:
    """The first compressor of ours that the server also lists (compression spec)."""
    accepted = read_strings(reply, "compression") or ()
    for name in offered:
        if name in accepted:
            return name
    return None
