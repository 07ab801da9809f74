"""What the client knows about one server: addresses, server types, ServerDescription.

Theory of operation
-------------------
A :class:`ServerDescription` is an immutable record of one server as the latest check (a hello
reply, or a failure) showed it.  It is built from an already-decoded hello reply by
:meth:`ServerDescription.from_hello`, or as the default "Unknown" description by
:meth:`ServerDescription.unknown`.  Nothing here keeps time: the caller passes ``now``
(monotonic seconds) and the round-trip times it measured (seconds).

Inputs: an address, a decoded hello reply (any mapping), RTTs, ``now``.
Outputs: frozen descriptions, or :class:`InvalidHelloReply` (a :class:`RemoteProtocolError`)
when the reply breaks the protocol (a field of the wrong type, an unparsable host).

Rules followed here (server-discovery-and-monitoring.md, "Parsing a hello response"):

* the server type comes from ``ok``, ``isreplicaset``, ``msg: isdbgrid``, ``setName`` and the
  member-state flags, checking ``isWritablePrimary`` before the legacy ``ismaster``;
* every host name (seeds, ``me``, ``hosts``, ``passives``, ``arbiters``, ``primary``) is
  lower-cased; an address is a ``(host, port)`` tuple, IPv6 hosts kept without brackets;
* "Server Description Equality" (:meth:`ServerDescription.equivalent_to`) compares only the
  fields the spec marks (=), so round-trip times and update times never make two
  descriptions differ.

This module must not know about topologies: how a description changes the topology lives in
:mod:`mongo_sansio.sdam.topology`.
"""

from __future__ import annotations

import datetime
import enum
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, NamedTuple

import attrs

from mongo_sansio._numbers import whole_number
from mongo_sansio.bson import DatetimeMS, ObjectId
from mongo_sansio.errors import ConfigurationError, RemoteProtocolError, command_succeeded

__all__ = [
    "Address",
    "DEFAULT_PORT",
    "parse_address",
    "format_address",
    "is_address",
    "ServerType",
    "TopologyType",
    "TopologyVersion",
    "compare_topology_versions",
    "ServerDescription",
    "InvalidHelloReply",
    "DATA_BEARING_TYPES",
    "WRITABLE_TYPES",
    "READABLE_TYPES",
    "SERVER_TYPE",
    "TOPOLOGY_TYPE",
    "server_type_code",
    "topology_type_code",
]

Address = tuple[str, int]
"""A server address: the host name lower-cased (IPv6 literals without brackets) and the port."""

DEFAULT_PORT = 27017


class InvalidHelloReply(RemoteProtocolError):
    """A hello reply (or a State Change Error reply) breaks the protocol: the message says which
    field and why.  A monitor treats it like a failed check."""


def parse_address(text: str, default_port: int = DEFAULT_PORT) -> Address:
    """``"Host:27017"`` -> ``("host", 27017)``; ``"[::1]:27018"`` -> ``("::1", 27018)``.

    The port defaults to ``default_port``.  Raises :class:`ConfigurationError` (a ``ValueError``)
    for an empty host, a bad port, or an IPv6 literal without brackets.
    """
    if not isinstance(text, str) or not text:
        raise ConfigurationError(f"host: expected 'host[:port]', got {text!r}")
    port_text: str | None
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ConfigurationError(f"host: IPv6 literal without closing ']' in {text!r}")
        host, rest = text[1:end], text[end + 1 :]
        if rest and not rest.startswith(":"):
            raise ConfigurationError(f"host: unexpected {rest!r} after ']' in {text!r}")
        port_text = rest[1:] if rest else None
    elif text.count(":") > 1:
        raise ConfigurationError(f"host: IPv6 literal {text!r} must be enclosed in '[' and ']'")
    elif ":" in text:
        host, port_text = text.split(":", 1)
    else:
        host, port_text = text, None
    if not host or any(c.isspace() for c in host):
        raise ConfigurationError(f"host: empty or blank host name in {text!r}")
    if port_text is None:
        port = default_port
    else:
        if not port_text.isascii() or not port_text.isdigit():
            raise ConfigurationError(f"host: port must be a number in {text!r}")
        port = int(port_text)
        if not 0 < port <= 65535:
            raise ConfigurationError(f"host: port {port} out of range 1-65535 in {text!r}")
    return host.lower(), port


def is_address(value: object) -> bool:
    """Whether ``value`` has the shape of an :data:`Address` (a ``(str, int)`` pair)."""
    return (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], str)
        and isinstance(value[1], int)
        and not isinstance(value[1], bool)
    )


def format_address(address: Address) -> str:
    """``("::1", 27017)`` -> ``"[::1]:27017"``; the inverse of :func:`parse_address`."""
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class ServerType(enum.Enum):
    """The spec's ServerType; values are the spec's spelling."""

    UNKNOWN = "Unknown"
    STANDALONE = "Standalone"
    MONGOS = "Mongos"
    POSSIBLE_PRIMARY = "PossiblePrimary"
    RS_PRIMARY = "RSPrimary"
    RS_SECONDARY = "RSSecondary"
    RS_ARBITER = "RSArbiter"
    RS_OTHER = "RSOther"
    RS_GHOST = "RSGhost"
    LOAD_BALANCER = "LoadBalancer"


class TopologyType(enum.Enum):
    """The spec's TopologyType; values are the spec's spelling."""

    UNKNOWN = "Unknown"
    SINGLE = "Single"
    REPLICA_SET_NO_PRIMARY = "ReplicaSetNoPrimary"
    REPLICA_SET_WITH_PRIMARY = "ReplicaSetWithPrimary"
    SHARDED = "Sharded"
    LOAD_BALANCED = "LoadBalanced"


class _ServerTypeCodes(NamedTuple):
    Unknown: int
    Mongos: int
    RSPrimary: int
    RSSecondary: int
    RSArbiter: int
    RSOther: int
    RSGhost: int
    Standalone: int
    LoadBalancer: int


class _TopologyTypeCodes(NamedTuple):
    Single: int
    ReplicaSetNoPrimary: int
    ReplicaSetWithPrimary: int
    Sharded: int
    Unknown: int
    LoadBalanced: int


SERVER_TYPE: Final = _ServerTypeCodes(*range(9))
"""PyMongo's integer server type codes (``pymongo.server_type.SERVER_TYPE``), for listeners
ported from PyMongo that compare ``description.server_type`` with them."""

TOPOLOGY_TYPE: Final = _TopologyTypeCodes(*range(6))
"""PyMongo's integer topology type codes (``pymongo.topology_description.TOPOLOGY_TYPE``)."""


def server_type_code(server_type: ServerType) -> int:
    """PyMongo's code for a server type.  PossiblePrimary, which PyMongo never reports (it is
    for single-threaded clients), is Unknown there."""
    if server_type is ServerType.POSSIBLE_PRIMARY:
        return SERVER_TYPE.Unknown
    code: int = getattr(SERVER_TYPE, server_type.value)
    return code


def topology_type_code(topology_type: TopologyType) -> int:
    """PyMongo's code for a topology type."""
    code: int = getattr(TOPOLOGY_TYPE, topology_type.value)
    return code


DATA_BEARING_TYPES = frozenset(
    {
        ServerType.MONGOS,
        ServerType.RS_PRIMARY,
        ServerType.RS_SECONDARY,
        ServerType.STANDALONE,
        ServerType.LOAD_BALANCER,
    }
)
"""Server types from which a client can receive application data."""

WRITABLE_TYPES = frozenset(
    {ServerType.MONGOS, ServerType.RS_PRIMARY, ServerType.STANDALONE, ServerType.LOAD_BALANCER}
)
READABLE_TYPES = DATA_BEARING_TYPES
_UNKNOWN_TYPES = frozenset({ServerType.UNKNOWN, ServerType.POSSIBLE_PRIMARY})


@attrs.frozen(kw_only=True, order=False)
class TopologyVersion:
    """A server's ``topologyVersion``: which process (``process_id``) and how many significant
    topology changes it has seen since it started (``counter``)."""

    process_id: ObjectId = attrs.field(validator=attrs.validators.instance_of(ObjectId))
    counter: int = attrs.field(validator=attrs.validators.instance_of(int))

    @classmethod
    def from_document(cls, document: object) -> TopologyVersion:
        """Parse ``{processId: ObjectId, counter: int64}``; :class:`InvalidHelloReply` otherwise."""
        if not isinstance(document, Mapping):
            raise InvalidHelloReply(f"topologyVersion must be a document, got {document!r}")
        process_id = document.get("processId")
        counter = document.get("counter")
        if not isinstance(process_id, ObjectId):
            raise InvalidHelloReply(
                f"topologyVersion.processId must be an ObjectId: {process_id!r}"
            )
        if not isinstance(counter, int) or isinstance(counter, bool):
            raise InvalidHelloReply(f"topologyVersion.counter must be an integer: {counter!r}")
        return cls(process_id=process_id, counter=int(counter))

    def to_document(self) -> dict[str, Any]:
        """The form a hello command sends back (``counter`` as a plain int)."""
        return {"processId": self.process_id, "counter": self.counter}


def compare_topology_versions(current: TopologyVersion | None, new: TopologyVersion | None) -> int:
    """-1 if ``new`` is more recent than ``current``, 0 if equal, 1 if ``current`` is newer.

    Per the spec, a missing version on either side or a different ``processId`` means the
    new one is assumed more recent.
    """
    if current is None or new is None or current.process_id != new.process_id:
        return -1
    if current.counter == new.counter:
        return 0
    return -1 if current.counter < new.counter else 1


def _frozen_mapping(value: Mapping[str, str] | None) -> Mapping[str, str]:
    return MappingProxyType(dict(value or {}))


@attrs.frozen(kw_only=True, unsafe_hash=False)
class ServerDescription:
    """The client's view of one server (server-discovery-and-monitoring.md, ServerDescription).

    Times are seconds: ``round_trip_time`` is the moving average (None while the server is
    Unknown), ``min_round_trip_time`` the minimum of the recent samples, ``last_update_time``
    the ``now`` of the check (``-inf``, "infinity ago", until checked).  ``last_write_date``
    is the server's wall-clock ``lastWrite.lastWriteDate``; ``op_time`` is kept opaque.

    ``==`` compares every field; :meth:`equivalent_to` is the spec's equality rule, used to
    decide whether to publish events.  Descriptions are not hashable (``tags`` is a mapping).
    """

    address: Address
    type: ServerType = ServerType.UNKNOWN
    error: str | None = None
    round_trip_time: float | None = None
    min_round_trip_time: float | None = None
    last_write_date: DatetimeMS | None = None
    op_time: Mapping[str, Any] | None = None
    last_update_time: float = -math.inf
    min_wire_version: int = 0
    max_wire_version: int = 0
    me: Address | None = None
    hosts: frozenset[Address] = frozenset()
    passives: frozenset[Address] = frozenset()
    arbiters: frozenset[Address] = frozenset()
    tags: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_mapping)
    set_name: str | None = None
    set_version: int | None = None
    election_id: ObjectId | None = None
    primary: Address | None = None
    logical_session_timeout_minutes: int | None = None
    topology_version: TopologyVersion | None = None
    iscryptd: bool = False
    service_id: ObjectId | None = None
    hello_ok: bool = False

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def unknown(
        cls,
        address: Address,
        error: str | None = None,
        *,
        topology_version: TopologyVersion | None = None,
        last_update_time: float = -math.inf,
    ) -> ServerDescription:
        """The default description: type Unknown, optionally with an error message (and the
        ``topologyVersion`` of a State Change Error)."""
        return cls(
            address=address,
            error=error,
            topology_version=topology_version,
            last_update_time=last_update_time,
        )

    @classmethod
    def from_hello(
        cls,
        address: Address,
        reply: Mapping[str, Any],
        *,
        round_trip_time: float | None,
        now: float,
        min_round_trip_time: float | None = None,
    ) -> ServerDescription:
        """Build a description from a decoded hello (or legacy hello) reply.

        A reply without ``ok: 1`` gives an Unknown description whose error carries the
        server's message.  ``round_trip_time`` should already be the moving average (see
        :class:`mongo_sansio.sdam.monitor.RoundTripTimes`).  Raises :class:`InvalidHelloReply`
        for a field of the wrong type.
        """
        if not isinstance(reply, Mapping):
            raise InvalidHelloReply(f"a hello reply must be a document, got {type(reply).__name__}")
        if not command_succeeded(reply):
            return cls.unknown(address, _failed_hello_message(reply), last_update_time=now)
        server_type = hello_server_type(reply)
        last_write = reply.get("lastWrite")
        last_write_date: DatetimeMS | None = None
        op_time: Mapping[str, Any] | None = None
        if last_write is not None:
            if not isinstance(last_write, Mapping):
                raise InvalidHelloReply(f"lastWrite must be a document, got {last_write!r}")
            last_write_date = _datetime_ms(last_write.get("lastWriteDate"))
            raw_op_time = last_write.get("opTime")
            if raw_op_time is not None:
                if not isinstance(raw_op_time, Mapping):
                    raise InvalidHelloReply(f"lastWrite.opTime must be a document: {raw_op_time!r}")
                op_time = MappingProxyType(dict(raw_op_time))
        raw_tv = reply.get("topologyVersion")
        return cls(
            address=address,
            type=server_type,
            round_trip_time=round_trip_time,
            min_round_trip_time=min_round_trip_time,
            last_write_date=last_write_date,
            op_time=op_time,
            last_update_time=now,
            min_wire_version=read_int(reply, "minWireVersion") or 0,
            max_wire_version=read_int(reply, "maxWireVersion") or 0,
            me=read_address(reply, "me"),
            hosts=frozenset(read_addresses(reply, "hosts")),
            passives=frozenset(read_addresses(reply, "passives")),
            arbiters=frozenset(read_addresses(reply, "arbiters")),
            tags=_tags(reply.get("tags")),
            set_name=read_str(reply, "setName"),
            set_version=read_int(reply, "setVersion"),
            election_id=read_object_id(reply, "electionId"),
            primary=read_address(reply, "primary"),
            logical_session_timeout_minutes=read_int(reply, "logicalSessionTimeoutMinutes"),
            topology_version=None if raw_tv is None else TopologyVersion.from_document(raw_tv),
            iscryptd=read_bool(reply, "iscryptd"),
            service_id=read_object_id(reply, "serviceId"),
            hello_ok=read_bool(reply, "helloOk"),
        )

    # -- the spec's questions ---------------------------------------------------------------

    def equivalent_to(self, other: ServerDescription) -> bool:
        """Server Description Equality: the (=) fields are respectively equal (RTTs, update
        times, lastWrite, serviceId and helloOk are ignored)."""
        return (
            self.address == other.address
            and self.type == other.type
            and self.error == other.error
            and self.min_wire_version == other.min_wire_version
            and self.max_wire_version == other.max_wire_version
            and self.me == other.me
            and self.hosts == other.hosts
            and self.passives == other.passives
            and self.arbiters == other.arbiters
            and dict(self.tags) == dict(other.tags)
            and self.set_name == other.set_name
            and self.set_version == other.set_version
            and self.election_id == other.election_id
            and self.primary == other.primary
            and self.logical_session_timeout_minutes == other.logical_session_timeout_minutes
            and self.topology_version == other.topology_version
            and self.iscryptd == other.iscryptd
        )

    @property
    def is_known(self) -> bool:
        """False for Unknown and PossiblePrimary (which multi-threaded clients treat alike)."""
        return self.type not in _UNKNOWN_TYPES

    @property
    def is_data_bearing(self) -> bool:
        return self.type in DATA_BEARING_TYPES

    @property
    def is_writable(self) -> bool:
        """Standalone, Mongos, RSPrimary or LoadBalancer: may receive writes."""
        return self.type in WRITABLE_TYPES

    @property
    def is_readable(self) -> bool:
        """Data-bearing: may receive reads (given a read preference that allows its type)."""
        return self.type in READABLE_TYPES

    @property
    def all_hosts(self) -> frozenset[Address]:
        """This server's opinion of the replica set: hosts, passives and arbiters together."""
        return self.hosts | self.passives | self.arbiters

    # -- PyMongo's names, for monitoring listeners (pymongo.server_description) ------------

    @property
    def server_type(self) -> int:
        """PyMongo's integer code for the type (:data:`SERVER_TYPE`)."""
        return server_type_code(self.type)

    @property
    def server_type_name(self) -> str:
        """PyMongo's name for the type: "RSPrimary", "Standalone", "Unknown", ..."""
        return SERVER_TYPE._fields[self.server_type]

    @property
    def replica_set_name(self) -> str | None:
        return self.set_name

    @property
    def is_server_type_known(self) -> bool:
        """PyMongo's test: the type is not Unknown (nor PossiblePrimary)."""
        return self.server_type != SERVER_TYPE.Unknown

    @property
    def mongos(self) -> bool:
        return self.type is ServerType.MONGOS

    @property
    def retryable_writes_supported(self) -> bool:
        """As PyMongo answers it: a mongos, a primary or a load balancer."""
        return self.type in (ServerType.MONGOS, ServerType.RS_PRIMARY, ServerType.LOAD_BALANCER)

    @property
    def retryable_reads_supported(self) -> bool:
        return self.max_wire_version >= 6


# -- hello reply parsing ------------------------------------------------------------------------


def _failed_hello_message(reply: Mapping[str, Any]) -> str:
    message = reply.get("errmsg")
    code = reply.get("code")
    text = f"hello failed: {message}" if isinstance(message, str) and message else "hello failed"
    if isinstance(code, int) and not isinstance(code, bool):
        text += f" (code {code})"
    return text


def hello_server_type(reply: Mapping[str, Any]) -> ServerType:
    """The server type an ``ok: 1`` hello reply describes (load balancers aside: a client knows
    it asked for load-balanced mode, the reply does not say so)."""
    if read_bool(reply, "isreplicaset"):
        return ServerType.RS_GHOST
    if reply.get("msg") == "isdbgrid":
        return ServerType.MONGOS
    if read_str(reply, "setName") is not None:
        primary_key = "isWritablePrimary" if "isWritablePrimary" in reply else "ismaster"
        if read_bool(reply, primary_key):
            return ServerType.RS_PRIMARY
        if read_bool(reply, "hidden"):
            return ServerType.RS_OTHER
        if read_bool(reply, "secondary"):
            return ServerType.RS_SECONDARY
        if read_bool(reply, "arbiterOnly"):
            return ServerType.RS_ARBITER
        return ServerType.RS_OTHER
    return ServerType.STANDALONE


# -- typed readers of hello fields (shared with mongo_sansio.connection.description) ----------
# Each returns the field's value (None or a neutral value when absent) or raises
# InvalidHelloReply naming the field.


def shown(value: object) -> str:
    """A short description of a bad value: the reply is the server's, maybe large."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def read_bool(reply: Mapping[str, Any], key: str) -> bool:
    """A boolean field (numbers count as their truth; absent is False)."""
    value = reply.get(key)
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and not (isinstance(value, float) and math.isnan(value)):
        return value != 0
    raise InvalidHelloReply(f"{key} must be a boolean, got {shown(value)}")


def read_int(reply: Mapping[str, Any], key: str) -> int | None:
    """An integer field (an integral double counts); None when absent."""
    value = reply.get(key)
    if value is None:
        return None
    number = whole_number(value)
    if number is None:
        raise InvalidHelloReply(f"{key} must be an integer, got {shown(value)}")
    return number


def read_str(reply: Mapping[str, Any], key: str) -> str | None:
    """A string field; None when absent."""
    value = reply.get(key)
    if value is None or isinstance(value, str):
        return value
    raise InvalidHelloReply(f"{key} must be a string, got {shown(value)}")


def read_strings(reply: Mapping[str, Any], key: str) -> tuple[str, ...] | None:
    """An array-of-strings field; None when absent."""
    value = reply.get(key)
    if value is None:
        return None
    if not isinstance(value, list | tuple):
        raise InvalidHelloReply(f"{key} must be an array of strings, got {shown(value)}")
    for item in value:
        if not isinstance(item, str):
            raise InvalidHelloReply(f"{key} must hold only strings, got {shown(item)}")
    return tuple(value)


def read_object_id(reply: Mapping[str, Any], key: str) -> ObjectId | None:
    """An ObjectId field; None when absent."""
    value = reply.get(key)
    if value is None or isinstance(value, ObjectId):
        return value
    raise InvalidHelloReply(f"{key} must be an ObjectId, got {shown(value)}")


def read_address(reply: Mapping[str, Any], key: str) -> Address | None:
    """A ``"host:port"`` field as an address; None when absent."""
    value = reply.get(key)
    return None if value is None else _parse_host(key, value)


def read_addresses(reply: Mapping[str, Any], key: str) -> tuple[Address, ...]:
    """An array of ``"host:port"`` strings as addresses, in the reply's order; () when absent."""
    return tuple(_parse_host(key, host) for host in read_strings(reply, key) or ())


def _parse_host(key: str, value: object) -> Address:
    if not isinstance(value, str):
        raise InvalidHelloReply(f"{key} must be a 'host:port' string, got {shown(value)}")
    try:
        return parse_address(value)
    except ConfigurationError as exc:
        raise InvalidHelloReply(f"{key}: {exc}") from None


def _tags(value: object) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidHelloReply(f"tags must be a document, got {value!r}")
    tags: dict[str, str] = {}
    for name, tag in value.items():
        if not isinstance(name, str) or not isinstance(tag, str):
            raise InvalidHelloReply(f"tags must map strings to strings, got {name!r}: {tag!r}")
        tags[name] = tag
    return tags


def _datetime_ms(value: object) -> DatetimeMS | None:
    if value is None or isinstance(value, DatetimeMS):
        return value
    if isinstance(value, datetime.datetime):
        try:
            return DatetimeMS(value)
        except (ValueError, OverflowError) as exc:
            raise InvalidHelloReply(f"lastWrite.lastWriteDate: {exc}") from None
    raise InvalidHelloReply(f"lastWrite.lastWriteDate must be a datetime, got {value!r}")
