"""The simulated replica set for tests and demos: N members served in-process on loopback.

::

    from mongo_sansio.adapters.sim import SimulatedReplicaSet

    with SimulatedReplicaSet(members=3, replset="rs0", auth={"user": "pw"}) as rs:
        client = pymongo.MongoClient(rs.uri, username="user", password="pw")
        rs.step_down()                      # elect the next member
        rs.stop(rs.members[1]); rs.restart(rs.members[1])
        rs.configure_failpoint(rs.primary, {"configureFailPoint": "failCommand", ...})
        rs.clock.advance(30)                # only with SimulatedReplicaSet(clock=ManualClock())

The protocol lives in :mod:`mongo_sansio.testing.server`; the sockets and threads in
:mod:`mongo_sansio.transports.sim_server`. This module only wires them together: it binds the
listeners first (the members' ports must be known before the cluster is built, because hello
reports them), builds the cluster with those addresses and the injected clocks, and serves.
"""

from __future__ import annotations

import os
import socket
import ssl
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from mongo_sansio.testing.server import ReplicaSet
from mongo_sansio.testing.server.load_balancer import LoadBalancerFront, PrimaryRouters
from mongo_sansio.testing.server.oidc import OidcIssuer, mint_hs256

from ._sim_deployment import LoopbackDeployment, ManualClock
from .sim_sharded import SimulatedShardedCluster

if TYPE_CHECKING:
    # mypy checks the source tree, where transports/ is a top-level folder; installed, it is
    # mongo_sansio.transports (pyproject's package-dir mapping, docs/architecture.md).
    from transports.sim_server import (
        Clock,
        LoopbackServer,
        bind_tcp_listeners,
        bind_unix_listener,
        tcp_address,
    )
else:
    from mongo_sansio.transports.sim_server import (
        Clock,
        LoopbackServer,
        bind_tcp_listeners,
        bind_unix_listener,
        tcp_address,
    )

__all__ = ["ManualClock", "SimulatedReplicaSet", "SimulatedShardedCluster"]



class SimulatedReplicaSet(LoopbackDeployment[ReplicaSet]):
    """Start ``members`` simulated mongods on ``host`` and serve them until closed.

    ``auth`` maps user names to passwords (users of the admin database, SCRAM-SHA-1 and -256);
    ``None`` runs without access control. ``tls`` is a server-side :class:`ssl.SSLContext`.
    ``port`` 0 picks free ports, otherwise members take ``port``, ``port + 1``, ...
    ``advertised_host``, when given, is the host name the members call themselves (in hello's
    ``hosts``/``me``/``primary``, :attr:`members` and :attr:`uri`) instead of the address they
    listen on, e.g. ``"localhost"`` while listening on ``127.0.0.1``.  ``tls_allow_plain``
    (with ``tls``) also serves connections that do not open with a TLS handshake, unencrypted
    (mongod's ``--tlsMode preferTLS``).
    ``unix_socket_dir``, when given, also serves each member on ``<dir>/mongodb-<port>.sock``
    (as mongod does). ``clock`` is the monotonic clock the machine sees (a :class:`ManualClock`
    lets a test move time); ``wall_clock`` gives the wall time at start.  The oplog keeps the
    last ``oplog_entries`` entries (a change stream resuming from before them fails with
    ChangeStreamHistoryLost, as against mongod's capped oplog).
    ``oidc_secret`` and ``oidc_audience`` (or an ``oidc_issuer``) enable MONGODB-OIDC: JWTs
    signed with HS256 and that secret (or RS256 with a key of the JSON Web Key Set
    ``oidc_jwks``), for that audience, not expired, authenticate their ``sub`` (``mongo_sansio.testing.server.oidc.mint_hs256`` makes them); a saslStart without a
    ``jwt`` is answered with the issuer's IdpInfo (the human flow).
    ``aws`` is an AWS identity ``(access_key_id, secret[, session_token])``, or a list of them,
    accepted with MONGODB-AWS on ``$external`` (the SigV4 signature checked as STS would, with
    the secret; the user is the identity's ARN); it turns access control on.
    ``standalone=True`` serves one server that is not a replica set (``members`` defaults to 1
    and must be 1): its hello has no ``setName``/``hosts``, change streams are refused (40573),
    stepdowns and elections raise, and :attr:`uri` is ``mongodb://host:port/`` without
    ``replicaSet``.
    ``load_balanced=True`` also serves a load balancer front on one more port (``port``
    itself when given, the members then taking the next ones), :attr:`load_balancer`: each
    connection to it is handed to the primary as to a mongos behind a load balancer (its
    hello has ``serviceId`` and must ask ``loadBalanced: true``; see
    :mod:`mongo_sansio.testing.server.load_balancer`), and :attr:`uri` is
    ``mongodb://<front>/?loadBalanced=true``.  The members stay reachable directly.
    ``load_balancer_services`` routers (each its own ``serviceId``, as mongoses behind a real
    balancer; all of them serve through the primary): with more than one, a second front,
    :attr:`multi_load_balancer` (on a free port), hands its connections to them in turn while
    :attr:`load_balancer` reaches the first alone (the load balancer spec's test setup).
    """

    kind = "simulated replica set"

    def __init__(
        self,
        members: int | None = None,
        replset: str = "rs0",
        auth: Mapping[str, str] | None = None,
        tls: ssl.SSLContext | None = None,
        seed: int = 0,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        unix_socket_dir: str | None = None,
        clock: Clock | None = None,
        wall_clock: Clock = time.time,
        max_wire_version: int = 21,
        advertised_host: str | None = None,
        tls_allow_plain: bool = False,
        standalone: bool = False,
        oplog_entries: int = 100_000,
        oidc_secret: str | None = None,
        oidc_audience: str | None = None,
        oidc_issuer: OidcIssuer | None = None,
        oidc_jwks: Mapping[str, Any] | None = None,
        aws: Sequence[str | None] | Sequence[Sequence[str | None]] | None = None,
        load_balanced: bool = False,
        load_balancer_services: int = 1,
    ) -> None:
        if members is None:
            members = 1 if standalone else 3
        if members < 1:
            raise ValueError("a replica set needs at least one member")
        if standalone and members != 1:
            raise ValueError("a standalone server is one member: leave members out or pass 1")
        if tls_allow_plain and tls is None:
            raise ValueError("tls_allow_plain needs a tls context")
        self.replset = replset
        self.auth = dict(auth) if auth else None
        if (oidc_secret is None and oidc_jwks is None) != (oidc_audience is None):
            raise ValueError("oidc_audience goes with oidc_secret or oidc_jwks (or both)")
        if oidc_audience is not None:
            oidc_issuer = OidcIssuer(secret=oidc_secret, audience=oidc_audience, jwks=oidc_jwks)
        #: the identity provider whose HS256 JWTs MONGODB-OIDC accepts (None: no OIDC)
        self.oidc = oidc_issuer
        self.aws = _aws_identities(aws)
        self.tls = tls
        self.seed = seed
        self.clock: Clock = clock if clock is not None else time.monotonic
        self._host = host
        if load_balanced and standalone:
            # the services behind a balancer are mongos routers, which take transactions and
            # retryable writes; their simulated stand-ins serve through a replica set
            raise ValueError("load_balanced serves routers over a replica set, not a standalone")
        self.load_balanced = load_balanced
        if load_balancer_services < 1:
            raise ValueError("a load balancer fronts one service or more")
        self._lb_services = load_balancer_services
        first_member_port = port + 1 if load_balanced and port != 0 else port
        self._lb_port = port
        self._ports = [0] * members if port == 0 else [first_member_port + i for i in range(members)]
        self._unix_socket_dir = unix_socket_dir
        self._wall_clock = wall_clock
        self._max_wire_version = max_wire_version
        self._advertised_host = advertised_host
        self._tls_allow_plain = tls_allow_plain
        self.standalone = standalone
        self._oplog_entries = oplog_entries
        self._server: LoopbackServer | None = None
        self._cluster: ReplicaSet | None = None
        self.members: list[str] = []
        self.unix_sockets: list[str] = []
        #: the load balancer front's ``host:port`` (``load_balanced=True``), else None
        self.load_balancer: str | None = None
        #: with ``load_balancer_services`` > 1, the front over every router (else None)
        self.multi_load_balancer: str | None = None

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> SimulatedReplicaSet:
        if self._server is not None:
            raise RuntimeError("the simulated replica set is already running")
        tcp = bind_tcp_listeners(self._host, self._ports)
        listeners = [(sock, self._member_address(sock)) for sock in tcp]
        try:
            self.members = [address for _sock, address in listeners]
            if self.load_balanced:
                ports = [self._lb_port] + ([0] if self._lb_services > 1 else [])
                fronts = bind_tcp_listeners(self._host, ports)
                listeners += [(front, self._member_address(front)) for front in fronts]
                self.load_balancer = self._member_address(fronts[0])
                if len(fronts) > 1:
                    self.multi_load_balancer = self._member_address(fronts[1])
            if self._unix_socket_dir is not None:
                for sock, address in list(listeners):
                    path = os.path.join(self._unix_socket_dir, f"mongodb-{sock.getsockname()[1]}.sock")
                    listeners.append((bind_unix_listener(path), address))
                    self.unix_sockets.append(path)
            authenticator = None
            if self.auth is not None:
                # Imported only when needed: it pulls in scramp.
                if TYPE_CHECKING:
                    from transports.sim_auth import ScramAuthenticator
                else:
                    from mongo_sansio.transports.sim_auth import ScramAuthenticator

                authenticator = ScramAuthenticator(self.auth)
            if self.aws:
                authenticator = _with_aws(authenticator, self.aws)
            now = self.clock()
            self._cluster = ReplicaSet(
                self.members,
                set_name=self.replset,
                seed=self.seed,
                wall_offset=self._wall_clock() - now,
                max_wire_version=self._max_wire_version,
                authenticator=authenticator,
                oidc=self.oidc,
                now=now,
                oplog_size=self._oplog_entries,
                standalone=self.standalone,
            )
            served: Any = self._cluster
            if self.load_balancer is not None:
                served = LoadBalancerFront(
                    self._cluster,
                    self.load_balancer,
                    PrimaryRouters(self._cluster, self._lb_services, now=now),
                    multi_address=self.multi_load_balancer,
                )
            self._server = LoopbackServer(
                served,
                listeners,
                clock=self.clock,
                ssl_context=self.tls,
                allow_plain=self._tls_allow_plain,
            )
        except BaseException:
            for sock, _address in listeners:
                sock.close()
            raise
        self._serve()
        return self

    def _member_address(self, listener: socket.socket) -> str:
        """What a member listening on ``listener`` calls itself."""
        if self._advertised_host is None:
            return tcp_address(listener)
        host, port = self._advertised_host, listener.getsockname()[1]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    # --- what a client needs ---------------------------------------------------------------

    def oidc_token(self, subject: str = "user", *, expires_in: float = 3600.0) -> str:
        """A JWT this deployment's OIDC issuer accepts, for ``subject``, valid ``expires_in``
        seconds from now (wall clock)."""
        if self.oidc is None or self.oidc.secret is None:
            raise ValueError("this simulated deployment has no OIDC secret (oidc_secret=...)")
        claims = {"sub": subject, "aud": self.oidc.audience, "exp": int(self._wall_clock() + expires_in)}
        return mint_hs256(claims, self.oidc.secret)

    def uri_with_aws(self, index: int = 0) -> str:
        """The URI with the ``index``-th AWS identity (``aws=``) as username and password, its
        session token in ``authMechanismProperties``, and ``authMechanism=MONGODB-AWS``."""
        access_key, secret, *rest = self.aws[index]
        userinfo = f"{quote(str(access_key), safe='')}:{quote(str(secret), safe='')}@"
        uri = self._uri(userinfo)
        uri += ("&" if "?" in uri else "?") + "authMechanism=MONGODB-AWS&authSource=%24external"
        if rest and rest[0]:
            uri += "&authMechanismProperties=AWS_SESSION_TOKEN:" + quote(str(rest[0]), safe="")
        return uri

    def _uri(self, userinfo: str) -> str:
        """``mongodb://`` with every member and ``replicaSet=`` (and ``tls=true`` with TLS);
        a standalone server's is ``mongodb://host:port/`` (no replicaSet option); with
        ``load_balanced=True``, ``mongodb://<load balancer>/?loadBalanced=true``."""
        if not self.members:
            raise RuntimeError("the simulated replica set is not started")
        options = [] if self.standalone else [f"replicaSet={quote(self.replset, safe='')}"]
        hosts = ",".join(self.members)
        if self.load_balancer is not None:
            options, hosts = ["loadBalanced=true"], self.load_balancer
        if self.tls is not None:
            options.append("tls=true")
        query = f"?{'&'.join(options)}" if options else ""
        return f"mongodb://{userinfo}{hosts}/{query}"

    # --- fault controls --------------------------------------------------------------------

    @property
    def primary(self) -> str | None:
        result: str | None = self.call(lambda cluster, _now: cluster.primary)
        return result

    def step_down(self, successor: str | None = None) -> None:
        """The primary steps down; ``successor`` (default: the next member) is elected."""
        self.call(lambda cluster, now: cluster.step_down(now, successor=successor))

    def elect(self, member: str) -> None:
        self.call(lambda cluster, now: cluster.elect(member, now))

    def stop(self, member: str) -> None:
        """Shut ``member`` down: its connections close and new ones are closed at once.  When
        fewer than a majority of the members still run, the primary steps down: no primary
        until a restart makes a majority again (and elects one at once)."""
        self.call(lambda cluster, now: cluster.stop(member, now))

    def restart(self, member: str) -> None:
        self.call(lambda cluster, now: cluster.restart(member, now))

    def set_lag(self, member: str, seconds: float) -> None:
        self.call(lambda cluster, _now: cluster.set_lag(member, seconds))

    def isolate(self, member: str) -> None:
        """Cut ``member`` off from the other members (clients still reach it): an isolated
        primary steps down after the election timeout and the others elect one (at the
        cluster's next tick: any request or timer), rolling back what only it had."""
        self.call(lambda cluster, now: cluster.isolate(member, now))

    def reconnect(self, member: str) -> None:
        self.call(lambda cluster, now: cluster.reconnect(member, now))

    def configure_failpoint(self, member: str, command: Mapping[str, Any]) -> dict[str, Any]:
        """Run a ``configureFailPoint`` command document on ``member`` directly (without a
        client), e.g. ``{"configureFailPoint": "failCommand", "mode": {"times": 1},
        "data": {"failCommands": ["find"], "errorCode": 91}}``."""
        result: dict[str, Any] = self.call(
            lambda cluster, _now: cluster.member(member).failpoints.configure(command)
        )
        return result

    def failpoint_off(self, member: str, name: str = "failCommand") -> None:
        self.configure_failpoint(member, {"configureFailPoint": name, "mode": "off"})


def _aws_identities(
    aws: Sequence[str | None] | Sequence[Sequence[str | None]] | None,
) -> list[tuple[str | None, ...]]:
    """``aws`` as a list of identities (one identity may be given alone)."""
    if not aws:
        return []
    if isinstance(aws[0], str):
        return [tuple(aws)]  # type: ignore[arg-type]
    return [tuple(identity) for identity in aws]  # type: ignore[arg-type]


def _with_aws(scram: Any, identities: list[tuple[str | None, ...]]) -> Any:
    """An authenticator for the AWS ``identities``, beside the SCRAM users when there are."""
    if TYPE_CHECKING:
        from transports.sim_auth_aws import AwsAuthenticator, CombinedAuthenticator
    else:
        from mongo_sansio.transports.sim_auth_aws import AwsAuthenticator, CombinedAuthenticator

    aws = AwsAuthenticator(identities)
    if scram is None:
        return aws
    return CombinedAuthenticator([(("MONGODB-AWS",), aws), (("SCRAM-SHA-1", "SCRAM-SHA-256"), scram)])

