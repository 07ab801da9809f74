"""The parsed connection string: an immutable value the other machines take as configuration.

A :class:`ConnectionString` holds the scheme, the hosts, the credentials, the URI's database
and the validated :class:`~mongo_sansio.uri.options.UriOptions`, with typed accessors (and the
specs' defaults) for what SDAM, CMAP, server selection, the handshake and auth need.

A ``mongodb+srv`` string parses without DNS: its one host is the SRV name and
``needs_seedlist`` is true.  The seedlist machine resolves it and calls
:meth:`ConnectionString.with_seedlist` with the hosts and the TXT record's options; the
merged result is validated again, because the TXT record may add ``loadBalanced`` or
``replicaSet`` and the SRV answer may add hosts (Initial DNS Seedlist Discovery: validate
after the lookup).

The password, and secret option values, never appear in a repr or str.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import attrs

from mongo_sansio.backpressure import MAX_RETRIES
from mongo_sansio.errors import ConfigurationError
from mongo_sansio.uri.credential import Credential, build_credential
from mongo_sansio.uri.options import UriOptions, merge_options

__all__ = ["DEFAULT_PORT", "ConnectionString", "Host", "HostKind", "validate_topology_options"]

DEFAULT_PORT = 27017

HostKind = Literal["hostname", "ipv4", "ip_literal", "unix"]
Scheme = Literal["mongodb", "mongodb+srv"]


@attrs.frozen
class Host:
    """One seed: ``host`` is lower-cased for names, bare for IPv6 (no brackets), a path for
    ``unix``.  ``port`` is None when the string did not give one."""

    host: str
    port: int | None = None
    kind: HostKind = "hostname"

    @property
    def address(self) -> tuple[str, int] | str:
        """``(host, port)`` with the default port filled in, or the socket path."""
        if self.kind == "unix":
            return self.host
        return (self.host, self.port if self.port is not None else DEFAULT_PORT)

    def __str__(self) -> str:
        if self.kind == "unix":
            return self.host
        host = f"[{self.host}]" if self.kind == "ip_literal" else self.host
        return host if self.port is None else f"{host}:{self.port}"


def _host_from(value: Host | tuple[str, int] | str) -> Host:
    if isinstance(value, Host):
        return value
    if isinstance(value, tuple) and len(value) == 2:
        host, port = value
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return Host(host.lower(), port, "hostname")
        return Host(str(address), port, "ipv4" if address.version == 4 else "ip_literal")
    raise TypeError(f"a seed must be a Host or a (host, port) tuple, not {value!r}")


def validate_topology_options(
    scheme: Scheme, hosts: tuple[Host, ...], options: Mapping[str, Any], *, resolved: bool
) -> None:
    """Rules that combine options with the scheme and the host list."""
    srv = scheme == "mongodb+srv"
    if not srv:
        for name in ("srvServiceName", "srvMaxHosts"):
            if name in options:
                raise ConfigurationError(f"option {name!r} is only allowed with mongodb+srv://")
    if options.get("directConnection") is True:
        if srv and not resolved:
            raise ConfigurationError("option 'directConnection=true' is not allowed with mongodb+srv://")
        if len(hosts) > 1:
            raise ConfigurationError("option 'directConnection=true' is not allowed with multiple hosts")
    if options.get("loadBalanced") is True and len(hosts) > 1:
        raise ConfigurationError("option 'loadBalanced=true' is not allowed with multiple hosts")


@attrs.frozen(repr=False)
class ConnectionString:
    """A validated ``mongodb://`` or ``mongodb+srv://`` connection string."""

    scheme: Scheme
    hosts: tuple[Host, ...]
    username: str | None = None
    password: str | None = None
    # The path part of the URI, percent-decoded: the default database and, absent authSource,
    # the auth database (auth spec).
    database: str | None = None
    options: UriOptions = attrs.field(factory=UriOptions)
    warnings: tuple[str, ...] = ()
    needs_seedlist: bool = False
    # Whether parse_uri checked the auth spec's rules (with_seedlist checks them again).
    check_credential: bool = True

    # -- identity ---------------------------------------------------------------------------

    @property
    def srv(self) -> bool:
        return self.scheme == "mongodb+srv"

    @property
    def srv_host(self) -> str | None:
        """The name to resolve (``_{srvServiceName}._tcp.{srv_host}``), for SRV strings."""
        return self.hosts[0].host if self.srv and self.needs_seedlist else None

    @property
    def addresses(self) -> tuple[tuple[str, int] | str, ...]:
        return tuple(host.address for host in self.hosts)

    def __repr__(self) -> str:
        password = None if self.password is None else "<hidden>"
        return (
            f"ConnectionString(scheme={self.scheme!r}, hosts=({', '.join(map(str, self.hosts))}), "
            f"username={self.username!r}, password={password}, database={self.database!r}, "
            f"options={self.options!r}, needs_seedlist={self.needs_seedlist})"
        )

    __str__ = __repr__

    # -- seedlist ---------------------------------------------------------------------------

    def with_seedlist(
        self,
        hosts: Iterable[Host | tuple[str, int]],
        txt_options: UriOptions | None = None,
    ) -> ConnectionString:
        """The connection string after SRV resolution: ``hosts`` replace the SRV name, and the
        TXT record's options (from ``parse_options(text, origin="txt")``) fill in what the
        URI and keyword options did not set.  The merge is validated again."""
        seeds = tuple(_host_from(h) for h in hosts)
        if not seeds:
            raise ConfigurationError("the SRV lookup returned no hosts")
        layers = (txt_options, self.options) if txt_options is not None else (self.options,)
        merged = merge_options(*layers)
        validate_topology_options(self.scheme, seeds, merged, resolved=True)
        result = attrs.evolve(
            self,
            hosts=seeds,
            options=merged,
            warnings=self.warnings + (txt_options.warnings if txt_options is not None else ()),
            needs_seedlist=False,
        )
        if self.check_credential:
            result.credential  # noqa: B018 -- raises when the TXT authSource breaks a rule
        return result

    # -- auth -------------------------------------------------------------------------------

    @property
    def credential(self) -> Credential | None:
        """The auth spec's credential (raises ConfigurationError if the rules are broken)."""
        return build_credential(self.username, self.password, self.database, self.options)

    @property
    def auth_source(self) -> str | None:
        credential = self.credential
        return credential.source if credential is not None else self.options.get("authSource")

    @property
    def auth_mechanism(self) -> str | None:
        return self.options.get("authMechanism")

    @property
    def auth_mechanism_properties(self) -> Mapping[str, Any]:
        properties: Mapping[str, Any] = self.options.get("authMechanismProperties", {})
        return properties

    # -- topology and selection -------------------------------------------------------------

    @property
    def replica_set(self) -> str | None:
        return self.options.get("replicaSet")

    @property
    def direct_connection(self) -> bool | None:
        """None when not given: SDAM then decides from the seeds and replicaSet."""
        return self.options.get("directConnection")

    @property
    def load_balanced(self) -> bool:
        return bool(self.options.get("loadBalanced", False))

    @property
    def read_preference(self) -> str:
        return str(self.options.get("readPreference", "primary"))

    @property
    def read_preference_tags(self) -> tuple[Mapping[str, str], ...]:
        return tuple(self.options.get("readPreferenceTags", ()))

    @property
    def max_staleness_seconds(self) -> int | None:
        value = self.options.get("maxStalenessSeconds", -1)
        return None if value == -1 else int(value)

    @property
    def heartbeat_frequency_ms(self) -> int:
        return int(self.options.get("heartbeatFrequencyMS", 10_000))

    @property
    def local_threshold_ms(self) -> int:
        return int(self.options.get("localThresholdMS", 15))

    @property
    def server_selection_timeout_ms(self) -> int:
        return int(self.options.get("serverSelectionTimeoutMS", 30_000))

    @property
    def server_selection_try_once(self) -> bool:
        return bool(self.options.get("serverSelectionTryOnce", True))

    @property
    def server_monitoring_mode(self) -> str:
        return str(self.options.get("serverMonitoringMode", "auto"))

    @property
    def srv_max_hosts(self) -> int:
        return int(self.options.get("srvMaxHosts", 0))

    @property
    def srv_service_name(self) -> str:
        return str(self.options.get("srvServiceName", "mongodb"))

    # -- connections and pools --------------------------------------------------------------

    @property
    def tls(self) -> bool:
        """Explicit tls/ssl, else on for mongodb+srv (Initial DNS Seedlist Discovery) or when
        any other tls* option is given, else off."""
        if "tls" in self.options:
            return bool(self.options["tls"])
        return self.srv or any(name.startswith("tls") for name in self.options)

    @property
    def tls_insecure(self) -> bool:
        return bool(self.options.get("tlsInsecure", False))

    @property
    def tls_allow_invalid_certificates(self) -> bool:
        return bool(self.options.get("tlsAllowInvalidCertificates", self.tls_insecure))

    @property
    def tls_allow_invalid_hostnames(self) -> bool:
        return bool(self.options.get("tlsAllowInvalidHostnames", self.tls_insecure))

    @property
    def tls_ca_file(self) -> str | None:
        return self.options.get("tlsCAFile")

    @property
    def tls_certificate_key_file(self) -> str | None:
        return self.options.get("tlsCertificateKeyFile")

    @property
    def tls_certificate_key_file_password(self) -> str | None:
        return self.options.get("tlsCertificateKeyFilePassword")

    @property
    def app_name(self) -> str | None:
        return self.options.get("appname")

    @property
    def compressors(self) -> tuple[str, ...]:
        return tuple(self.options.get("compressors", ()))

    @property
    def zlib_compression_level(self) -> int:
        return int(self.options.get("zlibCompressionLevel", -1))

    @property
    def connect_timeout_ms(self) -> int:
        return int(self.options.get("connectTimeoutMS", 10_000))

    @property
    def socket_timeout_ms(self) -> int | None:
        return self.options.get("socketTimeoutMS")

    @property
    def timeout_ms(self) -> int | None:
        return self.options.get("timeoutMS")

    @property
    def max_pool_size(self) -> int:
        return int(self.options.get("maxPoolSize", 100))

    @property
    def min_pool_size(self) -> int:
        return int(self.options.get("minPoolSize", 0))

    @property
    def max_connecting(self) -> int:
        return int(self.options.get("maxConnecting", 2))

    @property
    def max_idle_time_ms(self) -> int:
        return int(self.options.get("maxIdleTimeMS", 0))

    @property
    def wait_queue_timeout_ms(self) -> int | None:
        return self.options.get("waitQueueTimeoutMS")

    @property
    def wait_queue_size(self) -> int | None:
        """The legacy ``waitQueueSize`` (reported in the pool's creation log, not enforced)."""
        return self.options.get("waitQueueSize")

    @property
    def wait_queue_multiple(self) -> int | None:
        """The legacy ``waitQueueMultiple`` (reported in the pool's creation log, not enforced)."""
        return self.options.get("waitQueueMultiple")

    # -- operations -------------------------------------------------------------------------

    @property
    def w(self) -> int | str | None:
        return self.options.get("w")

    @property
    def wtimeout_ms(self) -> int | None:
        return self.options.get("wTimeoutMS")

    @property
    def journal(self) -> bool | None:
        return self.options.get("journal")

    @property
    def read_concern_level(self) -> str | None:
        return self.options.get("readConcernLevel")

    @property
    def retry_reads(self) -> bool:
        return bool(self.options.get("retryReads", True))

    @property
    def retry_writes(self) -> bool:
        return bool(self.options.get("retryWrites", True))

    @property
    def max_adaptive_retries(self) -> int:
        """How many times an overload error may be retried (client backpressure)."""
        return int(self.options.get("maxAdaptiveRetries", MAX_RETRIES))

    @property
    def enable_overload_retargeting(self) -> bool:
        """Whether a retry after an overload error avoids the overloaded server (False)."""
        return bool(self.options.get("enableOverloadRetargeting", False))
