"""A client's configuration, read once from a validated connection string.

Input: a resolved :class:`~mongo_sansio.uri.ConnectionString` (a ``mongodb+srv`` string after
its seedlist was applied), the declared Stable API version, and the driver's name.
Output: a frozen :class:`ClientSettings` holding what every machine of the client takes as
configuration: the SDAM :class:`~mongo_sansio.sdam.topology.TopologySettings`, the
:class:`~mongo_sansio.connection.HandshakeOptions`, the credential, the TLS settings the
transports apply (:class:`TlsSettings`), timeouts in seconds, the default read preference,
write concern and read concern, and the seed addresses.

Addresses: SDAM names servers ``(host, port)`` with the host lower-cased.  A Unix socket has
no such name, so it gets a stand-in SDAM address (:func:`unix_stand_in`, the path with port
27017) while flows and transports see ``(path, 0)`` (:class:`~mongo_sansio.flow.ServerInfo`'s
convention); :class:`Seeds` keeps the two directions.  A Unix socket path must therefore be
usable as an SDAM host name: no white space, no ``:``, and no two paths differing only in case.

Nothing here does I/O; every problem is a :class:`~mongo_sansio.errors.ConfigurationError`
naming the option.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mongo_sansio.backpressure import MAX_RETRIES
from mongo_sansio.client.dial import ProxySettings
from mongo_sansio.cmap.options import PoolOptions
from mongo_sansio.connection import HandshakeOptions, ServerApi, sasl_supported_mechs_user
from mongo_sansio.errors import ConfigurationError
from mongo_sansio.sdam.description import (
    DEFAULT_PORT,
    Address,
    format_address,
    parse_address,
)
from mongo_sansio.sdam.heartbeat_states import ServerMonitoringMode
from mongo_sansio.sdam.topology import TopologySettings
from mongo_sansio.selection.read_preference import ReadPreference, check_max_staleness
from mongo_sansio.uri import ConnectionString, Credential, Host
from mongo_sansio.wire import COMPRESSOR_IDS

__all__ = [
    "ClientSettings",
    "Seeds",
    "TlsSettings",
    "DRIVER_NAME",
    "UNIX_PORT",
    "is_unix_address",
    "unix_stand_in",
]

DRIVER_NAME = "mongo-sansio"
UNIX_PORT = 0
"""The port of a Unix socket's address as flows and transports see it: ``(path, 0)``."""


def is_unix_address(address: tuple[str, int]) -> bool:
    """Whether a flow/transport address names a Unix socket: ``(path, 0)``, or any host that is
    a path (holds ``/``; a host name never does)."""
    host, port = address
    return port == UNIX_PORT or "/" in host


def unix_stand_in(path: str) -> Address:
    """The SDAM address standing in for the Unix socket ``path``."""
    try:
        address = parse_address(format_address((path, DEFAULT_PORT)))
    except ConfigurationError:
        address = None
    if address is None or address[1] != DEFAULT_PORT:
        raise ConfigurationError(
            f"Unix socket path {path!r} cannot be used: it must not contain white space or ':'"
        )
    return address


@attrs.frozen
class Seeds:
    """The seeds as SDAM addresses, and the Unix socket paths behind stand-in addresses."""

    addresses: tuple[Address, ...]
    unix_paths: Mapping[Address, str] = attrs.field(factory=dict)

    @classmethod
    def from_hosts(cls, hosts: tuple[Host, ...]) -> Seeds:
        addresses: list[Address] = []
        unix_paths: dict[Address, str] = {}
        for host in hosts:
            if host.kind == "unix":
                stand_in = unix_stand_in(host.host)
                previous = unix_paths.get(stand_in)
                if previous is not None and previous != host.host:
                    raise ConfigurationError(
                        f"Unix socket paths {previous!r} and {host.host!r} differ only in case"
                    )
                unix_paths[stand_in] = host.host
                addresses.append(stand_in)
            else:
                port = host.port if host.port is not None else DEFAULT_PORT
                addresses.append(parse_address(format_address((host.host, port))))
        return cls(tuple(dict.fromkeys(addresses)), unix_paths)

    def to_transport(self, address: Address) -> tuple[str, int]:
        """The address flows and transports use for the SDAM address ``address``."""
        path = self.unix_paths.get(address)
        return (path, UNIX_PORT) if path is not None else address

    def to_sdam(self, address: tuple[str, int]) -> Address:
        """The SDAM address of a flow/transport address (the inverse of :meth:`to_transport`)."""
        host, port = address
        if port == UNIX_PORT:
            stand_in = unix_stand_in(host)
            if self.unix_paths.get(stand_in) == host:
                return stand_in
        return address


@attrs.frozen(kw_only=True)
class TlsSettings:
    """What a transport needs to set up TLS; ``enabled`` False means plain TCP.

    Verification is on unless ``allow_invalid_certificates`` (``tlsAllowInvalidCertificates``
    or ``tlsInsecure``); host name checking is on unless that or ``allow_invalid_hostnames``.
    """

    enabled: bool = False
    ca_file: str | None = None
    certificate_key_file: str | None = None
    certificate_key_file_password: str | None = attrs.field(default=None, repr=False)
    allow_invalid_certificates: bool = False
    allow_invalid_hostnames: bool = False

    @classmethod
    def from_connection_string(cls, uri: ConnectionString) -> TlsSettings:
        return cls(
            enabled=uri.tls,
            ca_file=uri.tls_ca_file,
            certificate_key_file=uri.tls_certificate_key_file,
            certificate_key_file_password=uri.tls_certificate_key_file_password,
            allow_invalid_certificates=uri.tls_allow_invalid_certificates,
            allow_invalid_hostnames=uri.tls_allow_invalid_hostnames,
        )


def _seconds(milliseconds: int | None) -> float | None:
    """``connectTimeoutMS``/``socketTimeoutMS`` style: None or 0 mean "no timeout"."""
    if milliseconds is None or milliseconds == 0:
        return None
    return milliseconds / 1000.0


@attrs.frozen(kw_only=True)
class ClientSettings:
    """Everything a client reads from its connection string (see the module docstring).

    Times are seconds; ``connect_timeout`` and ``socket_timeout`` None mean no limit.
    ``server_selection_try_once`` is the single-threaded "try once" mode; it is off unless the
    connection string turns it on, because this client's callers expect selection to wait up
    to ``serverSelectionTimeoutMS`` as multi-threaded drivers do (server-selection.md).
    """

    seeds: Seeds
    topology: TopologySettings
    handshake: HandshakeOptions
    credential: Credential | None
    tls: TlsSettings
    connect_timeout: float | None
    socket_timeout: float | None
    server_selection_try_once: bool
    max_pool_size: int
    max_idle_time: float | None
    read_preference: ReadPreference
    write_concern: Mapping[str, Any] | None
    read_concern: Mapping[str, Any] | None
    retry_reads: bool
    retry_writes: bool
    database: str | None
    server_api: ServerApi | None = None
    pool: PoolOptions = attrs.field(factory=PoolOptions)
    server_monitoring_mode: ServerMonitoringMode = ServerMonitoringMode.AUTO
    timeout: float | None = None
    """timeoutMS in seconds (client-side operations timeout); None: not set; 0: no limit."""
    max_adaptive_retries: int = MAX_RETRIES
    """maxAdaptiveRetries: retries of an operation once an overload error was seen."""
    overload_retargeting: bool = False
    """enableOverloadRetargeting: a retry after an overload error avoids that server."""
    proxy: ProxySettings | None = None
    """proxyHost, proxyPort, proxyUsername, proxyPassword: the SOCKS5 proxy (None: none)."""

    @classmethod
    def from_connection_string(
        cls,
        uri: ConnectionString,
        *,
        server_api: ServerApi | None = None,
        driver_name: str = DRIVER_NAME,
    ) -> ClientSettings:
        if uri.needs_seedlist:
            raise ConfigurationError(
                "a mongodb+srv connection string must be resolved (its SRV and TXT records "
                "applied) before a client is built from it"
            )
        seeds = Seeds.from_hosts(uri.hosts)
        topology = TopologySettings(
            seeds=seeds.addresses,
            set_name=uri.replica_set,
            direct_connection=uri.direct_connection,
            load_balanced=uri.load_balanced,
            heartbeat_frequency=uri.heartbeat_frequency_ms / 1000.0,
            local_threshold=uri.local_threshold_ms / 1000.0,
            server_selection_timeout=uri.server_selection_timeout_ms / 1000.0,
            driver_name=driver_name,
        )
        credential = uri.credential
        handshake = HandshakeOptions(
            app_name=uri.app_name,
            compressors=tuple(name for name in uri.compressors if name in COMPRESSOR_IDS),
            zlib_compression_level=uri.zlib_compression_level,
            load_balanced=uri.load_balanced,
            server_api=server_api,
            sasl_supported_mechs_user=sasl_supported_mechs_user(credential),
        )
        read_preference = ReadPreference(
            mode=uri.read_preference,
            tag_sets=uri.read_preference_tags or None,
            max_staleness_seconds=uri.max_staleness_seconds,
        )
        check_max_staleness(read_preference, topology.heartbeat_frequency)
        max_idle = uri.max_idle_time_ms
        pool = PoolOptions(
            max_pool_size=uri.max_pool_size,
            min_pool_size=uri.min_pool_size,
            max_idle_time_ms=max_idle or 0,
            max_connecting=uri.max_connecting,
            wait_queue_timeout_ms=uri.wait_queue_timeout_ms or 0,
            load_balanced=uri.load_balanced,
            wait_queue_size=uri.wait_queue_size,
            wait_queue_multiple=uri.wait_queue_multiple,
        )
        timeout_ms = uri.timeout_ms
        return cls(
            seeds=seeds,
            topology=topology,
            handshake=handshake,
            credential=credential,
            tls=TlsSettings.from_connection_string(uri),
            connect_timeout=_seconds(uri.connect_timeout_ms),
            socket_timeout=_seconds(uri.socket_timeout_ms),
            server_selection_try_once=bool(uri.options.get("serverSelectionTryOnce", False)),
            max_pool_size=uri.max_pool_size,
            max_idle_time=max_idle / 1000.0 if max_idle else None,
            read_preference=read_preference,
            write_concern=_write_concern(uri),
            read_concern={"level": uri.read_concern_level} if uri.read_concern_level else None,
            retry_reads=uri.retry_reads,
            retry_writes=uri.retry_writes,
            database=uri.database,
            server_api=server_api,
            pool=pool,
            server_monitoring_mode=ServerMonitoringMode(uri.server_monitoring_mode),
            timeout=None if timeout_ms is None else timeout_ms / 1000.0,
            max_adaptive_retries=uri.max_adaptive_retries,
            overload_retargeting=uri.enable_overload_retargeting,
            proxy=ProxySettings.from_options(uri.options),
        )


def _write_concern(uri: ConnectionString) -> Mapping[str, Any] | None:
    """The ``writeConcern`` document the URI asks for, or None for the server's default."""
    document: dict[str, Any] = {}
    if uri.w is not None:
        document["w"] = uri.w
    if uri.journal is not None:
        document["j"] = uri.journal
    if uri.wtimeout_ms is not None:
        document["wtimeout"] = uri.wtimeout_ms
    return document or None
