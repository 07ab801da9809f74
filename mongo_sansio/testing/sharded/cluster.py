"""The simulated sharded cluster's shared state: routers, shards, the config server, the clock.

Construction (the interface the socket server codes against, as
:class:`~mongo_sansio.testing.server.ReplicaSet`'s)::

    cluster = ShardedCluster(
        mongos=["127.0.0.1:27017", "127.0.0.1:27018"],        # the routers' addresses
        shards=[["127.0.0.1:27101", ...], ["127.0.0.1:27201", ...]],  # each shard's members
        config=["127.0.0.1:27301"],                             # the config server's members
        seed=0, wall_offset=time.time() - time.monotonic(), authenticator=None, now=...)
    conn = cluster.connect(address, now)      # a router's, a shard member's or the config's

A router's connection (:class:`MongosConnection`) is a server connection whose commands go
to its :class:`~.router.Router`; its hello is mongos's (``msg: "isdbgrid"``, no set fields) and
every reply gossips the cluster time.  Each shard is a
:class:`~mongo_sansio.testing.server.ReplicaSet` of the simulator (elections, stepdowns,
failpoints, sessions and transactions as there), named ``shard0``, ``shard1``... (its
``setName`` too); the config server is one more (``configRepl``).  All of them stamp their
oplogs from one :class:`~.shards.ClusterClock`.  Each router keeps its own users'
connections, cursors and failpoints in a one-member standalone replica set (its "front"):
stop and restart a router there (:meth:`stop_mongos`, :meth:`restart_mongos`).

Behind a load balancer (:class:`~mongo_sansio.testing.server.load_balancer.LoadBalancerFront`
over :class:`MongosServices`) the services are the routers: each connection goes to the next
running router, whose hello then answers as on mongos' load balancer port (``serviceId`` is
the router's processId, as mongos gives it).

Pure and not thread-safe, like the replica set: the socket server holds one lock around every
call into it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mongo_sansio.bson import ObjectId
from mongo_sansio.errors import LocalProtocolError
from mongo_sansio.testing.server.auth import Authenticator
from mongo_sansio.testing.server.connection import ServerConnection
from mongo_sansio.testing.server.context import Context, Outcome
from mongo_sansio.testing.server.dispatch import HELLO_NAMES, cluster_fields
from mongo_sansio.testing.server.oidc import OidcIssuer
from mongo_sansio.testing.server.replset import STOPPED, Member, ReplicaSet
from mongo_sansio.testing.sharded.catalog import Catalog
from mongo_sansio.testing.sharded.router import Router
from mongo_sansio.testing.sharded.shards import ClusterClock, ShardReplicaSet, call, use_clock

__all__ = ["MongosConnection", "MongosServices", "ShardedCluster"]


class MongosConnection(ServerConnection):
    """One client connection to a router."""

    def __init__(self, front: ReplicaSet, member: Member, connection_id: int, now: float, router: Router) -> None:
        super().__init__(front, member, connection_id, now)
        self.router = router

    def _handle(self, message: Any, now: float) -> None:
        request = self._request(message)
        if request is None:
            return
        ctx = Context(self.cluster, self.member, self.state, request, now)
        self._deliver(ctx, self.router.execute(ctx))

    def _deliver(self, ctx: Context, outcome: Outcome) -> None:
        if isinstance(outcome, dict):
            if ctx.request.name in HELLO_NAMES and outcome.get("ok") == 1.0:
                outcome = _mongos_hello(outcome)
            elif ctx.request.name == "serverStatus" and outcome.get("ok") == 1.0:
                outcome["process"] = "mongos"
            clock = self.router.cluster.clock.last
            fields = cluster_fields(ctx)
            fields["$clusterTime"]["clusterTime"] = clock
            fields["operationTime"] = clock
            outcome.update(fields)
        super()._deliver(ctx, outcome)


def _mongos_hello(reply: dict[str, Any]) -> dict[str, Any]:
    """A standalone server's hello as mongos gives it: ``msg: "isdbgrid"`` after the role."""
    out: dict[str, Any] = {}
    for name, value in reply.items():
        out[name] = value
        if name in ("isWritablePrimary", "ismaster"):
            out["msg"] = "isdbgrid"
    return out


class ShardedCluster:
    """See the module documentation."""

    def __init__(
        self,
        mongos: Sequence[str],
        shards: Sequence[Sequence[str]],
        config: Sequence[str],
        *,
        seed: int = 0,
        wall_offset: float = 1_700_000_000.0,
        max_wire_version: int = 21,
        authenticator: Authenticator | None = None,
        oidc: OidcIssuer | None = None,
        now: float = 0.0,
        oplog_size: int = 100_000,
    ) -> None:
        if not mongos or not shards:
            raise LocalProtocolError("a sharded cluster needs a mongos and a shard")
        self.clock = ClusterClock()
        self.catalog = Catalog([])
        self.seed = seed
        self._options: dict[str, Any] = {
            "wall_offset": wall_offset, "max_wire_version": max_wire_version, "authenticator": authenticator,
            "oidc": oidc, "oplog_size": oplog_size,
        }
        self.shards: dict[str, ShardReplicaSet] = {}
        self.decisions: dict[tuple[bytes, int], dict[str, Any]] = {}  # the commit decisions
        self.config_version = -1
        self.config = ShardReplicaSet(list(config), clock=self.clock, key_fields=lambda _ns: [], wake=self.wake,
                                      set_name="configRepl", seed=seed + 1000, now=now, **self._options)
        for index, members in enumerate(shards):
            self._new_shard(f"shard{index}", list(members), now)
        self.fronts: dict[str, ReplicaSet] = {}
        self.routers: dict[str, Router] = {}
        for index, address in enumerate(mongos):
            front = ReplicaSet([address], set_name="mongos", seed=seed + 2000 + index, now=now, standalone=True,
                               **self._options)
            use_clock(front, self.clock)
            self.fronts[address] = front
            self.routers[address] = Router(self, address)

    def _new_shard(self, name: str, members: list[str], now: float) -> ShardReplicaSet:
        if any(address in shard.members for shard in self.shards.values() for address in members):
            raise LocalProtocolError(f"a member of {members} already belongs to a shard")
        shard = ShardReplicaSet(members, clock=self.clock, key_fields=self.catalog.key_fields, wake=self.wake,
                                set_name=name, seed=self.seed + 1 + len(self.shards), now=now, **self._options)
        self.shards[name] = shard
        wall = now + float(self._options["wall_offset"])
        self.catalog.add_shard(name, f"{name}/{','.join(members)}", self.clock.next(wall))
        return shard

    # --- connections ---------------------------------------------------------------------------

    @property
    def mongos(self) -> list[str]:
        return list(self.fronts)

    def connect(self, address: str, now: float) -> ServerConnection:
        front = self.fronts.get(address)
        if front is not None:
            member = front.member(address)
            connection = MongosConnection(front, member, front.new_connection_id(), now, self.routers[address])
            if member.state == STOPPED:
                connection.close("mongos is stopped")
            else:
                member.connections.append(connection)
            return connection
        for shard in (*self.shards.values(), self.config):
            if address in shard.members:
                return shard.connect(address, now)
        raise LocalProtocolError(f"{address!r} is not a member of the sharded cluster")

    def call(self, cluster: ReplicaSet, db: str, body: Any, now: float, *, user: str | None = None,
             may_block: bool = False) -> dict[str, Any]:
        return call(cluster, db, body, now, user=user, may_block=may_block)

    def wake(self, now: float) -> None:
        """A shard wrote: the routers' waiting getMores look again."""
        for front in self.fronts.values():
            front.topology_changed(now)

    def tick(self, now: float) -> None:
        for shard in self.shards.values():
            shard.tick(now)
        self.config.tick(now)
        for front in self.fronts.values():
            front.tick(now)

    # --- changes -------------------------------------------------------------------------------

    def add_shard(self, seed: str, now: float, *, name: str | None = None) -> str:
        """addShard: a new shard replica set at the hosts ``seed`` names (``set/host,...``)."""
        set_name, _, hosts = seed.partition("/")
        members = [host for host in hosts.split(",") if host] if hosts else [set_name]
        if not hosts:
            set_name = f"shard{len(self.shards)}"
        shard_name = name or set_name
        if shard_name in self.shards:
            raise LocalProtocolError(f"a shard named {shard_name} already exists")
        self._new_shard(shard_name, members, now)
        return shard_name

    def shard(self, name: str) -> ShardReplicaSet:
        try:
            return self.shards[name]
        except KeyError:
            raise LocalProtocolError(f"no shard named {name!r}") from None

    def front(self, address: str) -> ReplicaSet:
        try:
            return self.fronts[address]
        except KeyError:
            raise LocalProtocolError(f"{address!r} is not a mongos of the cluster") from None

    def stop_mongos(self, address: str, now: float) -> None:
        """Kill a router: its connections drop without a reply (a getMore waiting there
        included), its cursors and transactions go."""
        front = self.front(address)
        member = front.member(address)
        if member.state == STOPPED:
            return
        member.state = STOPPED
        front.primary = None
        member.cursors.clear()
        for connection in list(member.connections):
            connection.close("mongos stopped")
        member.connections.clear()
        self.routers[address] = Router(self, address)

    def restart_mongos(self, address: str, now: float) -> None:
        self.front(address).restart(address, now)


class MongosServices:
    """The routers as the services behind a load balancer (the front's ``Services``): service
    ``index`` is the ``index``-th mongos, down while it is stopped; its serviceId is its
    processId (None here: the hello reads it from the router), so a restarted router is a new
    service."""

    def __init__(self, cluster: ShardedCluster) -> None:
        self.cluster = cluster

    @property
    def count(self) -> int:
        return len(self.cluster.fronts)

    def backend(self, index: int) -> tuple[str, ObjectId | None] | None:
        address = self.cluster.mongos[index]
        if self.cluster.front(address).member(address).state == STOPPED:
            return None
        return address, None

    def anchor(self) -> str:
        return self.cluster.mongos[0]
