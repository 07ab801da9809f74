"""The simulated sharded cluster for tests and demos: mongos routers over replica-set shards,
served in-process on loopback.

::

    from mongo_sansio.adapters.sim import SimulatedShardedCluster

    with SimulatedShardedCluster(shards=2, mongos=2, members=3) as sc:
        client = pymongo.MongoClient(sc.uri)            # every mongos in the seed list
        client.admin.command("shardCollection", "db.c", key={"_id": "hashed"})
        sc.stop_mongos(sc.mongos[0]); sc.restart_mongos(sc.mongos[0])
        sc.step_down("shard0"); sc.stop(sc.shard_members("shard1")[1])
        sc.configure_failpoint(sc.mongos[1], {"configureFailPoint": "failCommand", ...})

The protocol lives in :mod:`mongo_sansio.testing.sharded`; the sockets and threads in
:mod:`mongo_sansio.transports.sim_server`.  Every router, shard member and config server
member listens on a port of its own (``port`` 0: free ports; else the routers take ``port``,
``port + 1``..., the shards' members the next ones, the config server the last).  A shard
added with ``addShard`` (or :meth:`add_shard`) is served inside the cluster only: its members
do not listen.  With ``load_balanced=True`` a load balancer front listens too (on ``port``
itself when given, everything else on the next ports), :attr:`load_balancer`: each connection
to it goes to the next running mongos, as behind a real balancer (hello with ``serviceId``,
which must ask ``loadBalanced: true``), and :attr:`uri` is
``mongodb://<front>/?loadBalanced=true``.  The routers stay reachable directly.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mongo_sansio.testing.server.load_balancer import LoadBalancerFront
from mongo_sansio.testing.sharded import ShardedCluster
from mongo_sansio.testing.sharded.cluster import MongosServices

from ._sim_deployment import LoopbackDeployment

if TYPE_CHECKING:
    from transports.sim_server import Clock, LoopbackServer, bind_tcp_listeners, tcp_address
else:
    from mongo_sansio.transports.sim_server import (
        Clock,
        LoopbackServer,
        bind_tcp_listeners,
        tcp_address,
    )

__all__ = ["SimulatedShardedCluster"]


class SimulatedShardedCluster(LoopbackDeployment[ShardedCluster]):
    """Start ``mongos`` routers over ``shards`` shards of ``members`` members each on ``host``
    and serve them until closed.  ``auth`` maps user names to passwords (SCRAM, on the
    routers and the shards alike); ``None`` runs without access control.  ``tls``: a
    server-side :class:`ssl.SSLContext` every listener serves with (the URI then says
    ``tls=true``).  ``clock`` is the
    monotonic clock the machine sees (a :class:`~._sim_deployment.ManualClock`, also :mod:`.sim`'s, lets a test move time)."""

    kind = "simulated sharded cluster"

    def __init__(
        self,
        shards: int = 2,
        mongos: int = 2,
        members: int = 3,
        auth: Mapping[str, str] | None = None,
        seed: int = 0,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Clock | None = None,
        wall_clock: Clock = time.time,
        max_wire_version: int = 21,
        load_balanced: bool = False,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        if shards < 1 or mongos < 1 or members < 1:
            raise ValueError("a sharded cluster needs at least one shard, one mongos and one member per shard")
        self.shard_count = shards
        self.mongos_count = mongos
        self.member_count = members
        self.auth = dict(auth) if auth else None
        self.seed = seed
        self.clock: Clock = clock if clock is not None else time.monotonic
        self._host = host
        self._port = port
        self._wall_clock = wall_clock
        self._max_wire_version = max_wire_version
        self._server: LoopbackServer | None = None
        self._cluster: ShardedCluster | None = None
        self.mongos: list[str] = []
        self.config_members: list[str] = []
        self._shard_members: list[list[str]] = []
        self.load_balanced = load_balanced
        self.tls = tls
        #: the load balancer front's ``host:port`` (``load_balanced=True``), else None
        self.load_balancer: str | None = None
        #: with ``load_balanced=True``, a front (on a free port) to the first mongos alone --
        #: the load balancer spec's SINGLE_MONGOS_LB_URI, where :attr:`load_balancer` is
        #: MULTI_MONGOS_LB_URI (the same front with one mongos)
        self.single_load_balancer: str | None = None

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> SimulatedShardedCluster:
        if self._server is not None:
            raise RuntimeError("the simulated sharded cluster is already running")
        fronts = 1 if self.load_balanced else 0
        count = fronts + self.mongos_count + self.shard_count * self.member_count + 1
        ports = [0] * count if self._port == 0 else [self._port + i for i in range(count)]
        single = self.load_balanced and self.mongos_count > 1  # the front to the first router
        sockets = bind_tcp_listeners(self._host, ports)
        try:
            if single:
                sockets += bind_tcp_listeners(self._host, [0])
            addresses = [tcp_address(sock) for sock in sockets]
            self.load_balancer = addresses[0] if fronts else None
            self.single_load_balancer = addresses[-1] if single else self.load_balancer
            self.mongos = addresses[fronts:fronts + self.mongos_count]
            rest = addresses[fronts + self.mongos_count:count]
            self._shard_members = [rest[i * self.member_count:(i + 1) * self.member_count] for i in range(self.shard_count)]
            self.config_members = rest[self.shard_count * self.member_count:]
            authenticator = None
            if self.auth is not None:
                if TYPE_CHECKING:
                    from transports.sim_auth import ScramAuthenticator
                else:
                    from mongo_sansio.transports.sim_auth import ScramAuthenticator

                authenticator = ScramAuthenticator(self.auth)
            now = self.clock()
            self._cluster = ShardedCluster(
                self.mongos, self._shard_members, self.config_members, seed=self.seed,
                wall_offset=self._wall_clock() - now, max_wire_version=self._max_wire_version,
                authenticator=authenticator, now=now,
            )
            served: Any = self._cluster
            if self.load_balancer is not None:
                # the single front reaches the first router alone, the main one rotates over all
                served = LoadBalancerFront(self._cluster, self.single_load_balancer or self.load_balancer,
                                           MongosServices(self._cluster),
                                           multi_address=self.load_balancer if single else None)
            self._server = LoopbackServer(
                served, list(zip(sockets, addresses, strict=True)), clock=self.clock, ssl_context=self.tls
            )
        except BaseException:
            for sock in sockets:
                sock.close()
            raise
        self._serve()
        return self

    # --- what a client needs ---------------------------------------------------------------

    def _uri(self, userinfo: str) -> str:
        """``mongodb://`` with every mongos (no replicaSet option: a client discovers a
        sharded topology from the routers' hello); with ``load_balanced=True``,
        ``mongodb://<load balancer>/?loadBalanced=true``."""
        if not self.mongos:
            raise RuntimeError("the simulated sharded cluster is not started")
        tls = "tls=true" if self.tls is not None else ""
        if self.load_balancer is not None:
            return f"mongodb://{userinfo}{self.load_balancer}/?loadBalanced=true{'&' + tls if tls else ''}"
        return f"mongodb://{userinfo}{','.join(self.mongos)}/{'?' + tls if tls else ''}"

    def shard_names(self) -> list[str]:
        names: list[str] = self.call(lambda cluster, _now: list(cluster.shards))
        return names

    def shard_members(self, shard: str) -> list[str]:
        members: list[str] = self.call(lambda cluster, _now: list(cluster.shard(shard).members))
        return members

    # --- fault controls --------------------------------------------------------------------

    def stop_mongos(self, address: str) -> None:
        """Shut a router down (its connections close, its cursors go)."""
        self.call(lambda cluster, now: cluster.stop_mongos(address, now))

    def restart_mongos(self, address: str) -> None:
        self.call(lambda cluster, now: cluster.restart_mongos(address, now))

    def kill(self, address: str) -> None:
        """Stop a router or a shard member, whichever ``address`` is."""
        if address in self.mongos:
            self.stop_mongos(address)
        else:
            self.stop(address)

    def restart(self, address: str) -> None:
        if address in self.mongos:
            self.restart_mongos(address)
        else:
            self.call(lambda cluster, now: self._shard_of(cluster, address).restart(address, now))

    def stop(self, member: str) -> None:
        """Shut a shard member down (its shard elects another primary if a majority runs)."""
        self.call(lambda cluster, now: self._shard_of(cluster, member).stop(member, now))

    def step_down(self, shard: str, successor: str | None = None) -> None:
        self.call(lambda cluster, now: cluster.shard(shard).step_down(now, successor=successor))

    def primary(self, shard: str) -> str | None:
        found: str | None = self.call(lambda cluster, _now: cluster.shard(shard).primary)
        return found

    def add_shard(self, members: int | None = None) -> str:
        """A new shard (not listening on sockets), as ``addShard`` makes one: its name."""
        count = members if members is not None else self.member_count

        def add(cluster: ShardedCluster, now: float) -> str:
            name = f"shard{len(cluster.shards)}"
            hosts = ",".join(f"{name}-{i}.invalid:27017" for i in range(count))
            return cluster.add_shard(f"{name}/{hosts}", now)

        added: str = self.call(add)
        return added

    def configure_failpoint(self, address: str, command: Mapping[str, Any]) -> dict[str, Any]:
        """``configureFailPoint`` on a router or a shard member directly."""

        def configure(cluster: ShardedCluster, _now: float) -> dict[str, Any]:
            if address in cluster.fronts:
                result: dict[str, Any] = cluster.front(address).member(address).failpoints.configure(command)
                return result
            found: dict[str, Any] = self._shard_of(cluster, address).member(address).failpoints.configure(command)
            return found

        result: dict[str, Any] = self.call(configure)
        return result

    def failpoint_off(self, address: str, name: str = "failCommand") -> None:
        self.configure_failpoint(address, {"configureFailPoint": name, "mode": "off"})

    @staticmethod
    def _shard_of(cluster: ShardedCluster, member: str) -> Any:
        for shard in cluster.shards.values():
            if member in shard.members:
                return shard
        if member in cluster.config.members:
            return cluster.config
        raise ValueError(f"{member!r} is not a shard member")
