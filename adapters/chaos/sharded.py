"""The sharded world: the simulator's sharded cluster behind the virtual network.

``--world sharded`` puts two mongos routers (``m0.sim``, ``m1.sim``) in front of two shards
(three-member replica sets) and a config server, all of
:class:`~mongo_sansio.testing.sharded.ShardedCluster`.  The client knows only the routers (a
``mongodb://m0.sim,m1.sim`` URI: a sharded topology); the routers reach the shards inside the
simulator, as mongos does over its own network.

:class:`ShardedDeployment` shows that cluster to the world, the network and the faults with
the replica set's interface they use, so they run unchanged:

- the *members* the client connects to are the routers (their fronts' members): a partition,
  a stall or a cut is between the client and a router, a crash stops a router (its
  connections, cursors and transactions go) and restarts it, a fail point is set on a router;
- a stepdown steps down the primary of a shard (the shards in turn);
- the data, the oplogs and the transaction tables the invariants read are the shards', merged.

:func:`shard_collections` (the setup) shards the workloads' collections on a hashed ``_id``,
and the bank's two accounts on a range key, one on each shard, so a transfer is a two-shard
transaction, a cursor and a change stream merge two shards, and
the retried writes go to the shard of their document.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from mongo_sansio.bson import Timestamp
from mongo_sansio.errors import LocalProtocolError, OperationFailure
from mongo_sansio.testing.server.connection import ServerConnection
from mongo_sansio.testing.server.replset import STOPPED, Member, ReplicaSet
from mongo_sansio.testing.sharded import ShardedCluster

from .faults import ELECTION_TIMEOUT

if TYPE_CHECKING:
    from mongo_sansio.testing.engine import Collection

    from .world import World

__all__ = ["MONGOS", "SHARDED_COLLECTIONS", "SHARD_MEMBERS", "ShardedDeployment", "shard_collections"]

MONGOS = ("m0.sim:27017", "m1.sim:27017")
SHARDS = (
    ("s0a.sim:27018", "s0b.sim:27018", "s0c.sim:27018"),
    ("s1a.sim:27018", "s1b.sim:27018", "s1c.sim:27018"),
)
#: every shard member, in order (what a fault inside the shards targets)
SHARD_MEMBERS = tuple(address for shard in SHARDS for address in shard)
CONFIG = ("cfg.sim:27019",)
#: the collections the setup shards on a hashed _id; the others stay on the primary shard
SHARDED_COLLECTIONS = ("items", "feed", "events", "causal")


class _Parameters(dict[str, Any]):
    """setParameter on the deployment: every shard's members take it."""

    def __init__(self, deployment: ShardedDeployment) -> None:
        super().__init__()
        self._deployment = deployment

    def __setitem__(self, name: str, value: Any) -> None:
        super().__setitem__(name, value)
        for shard in self._deployment.cluster.shards.values():
            shard.parameters[name] = value


class _ClusterOplog:
    """What the workloads read of "the" oplog: the cluster time now."""

    def __init__(self, cluster: ShardedCluster) -> None:
        self._cluster = cluster

    @property
    def last_timestamp(self) -> Timestamp:
        return self._cluster.clock.last


class _Merged:
    """A collection as the invariants read it: the union of its shards' documents."""

    def __init__(self, parts: list[Collection]) -> None:
        self._parts = parts

    def find(self, query: Any) -> Iterator[Any]:
        for part in self._parts:
            yield from part.find(query)


class ShardedDeployment:
    """See the module docstring."""

    def __init__(self, *, seed: int, now: float, oplog_size: int) -> None:
        self.cluster = ShardedCluster(
            MONGOS, [list(shard) for shard in SHARDS], list(CONFIG), seed=seed, now=now, oplog_size=oplog_size
        )
        self.parameters = _Parameters(self)
        self.oplog = _ClusterOplog(self.cluster)
        for shard in self.cluster.shards.values():
            shard.replication.election_timeout = ELECTION_TIMEOUT
        self._stepdowns = 0

    # -- what the network uses -------------------------------------------------------------------

    @property
    def members(self) -> dict[str, Member]:
        return {address: front.member(address) for address, front in self.cluster.fronts.items()}

    def connect(self, address: str, now: float) -> ServerConnection:
        return self.cluster.connect(address, now)

    def tick(self, now: float) -> None:
        self.cluster.tick(now)

    # -- what the faults use ---------------------------------------------------------------------

    @property
    def primary(self) -> str | None:
        """The router a fail point is set on: the first one running."""
        running = [address for address, member in self.members.items() if member.state != STOPPED]
        return running[0] if running else None

    def member(self, address: str) -> Member:
        return self.cluster.front(address).member(address)

    def step_down(self, now: float) -> None:
        """The primary of the next shard (in turn) steps down."""
        shards = list(self.cluster.shards.values())
        shard = shards[self._stepdowns % len(shards)]
        self._stepdowns += 1
        if shard.primary is None:
            raise LocalProtocolError("the shard has no primary")
        shard.step_down(now)

    def stop(self, address: str, now: float) -> None:
        self.cluster.stop_mongos(address, now)

    def restart(self, address: str, now: float) -> None:
        self.cluster.restart_mongos(address, now)

    def shard_of(self, address: str) -> ReplicaSet:
        """The shard ``address`` is a member of."""
        for shard in self.cluster.shards.values():
            if address in shard.members:
                return shard
        raise LocalProtocolError(f"{address!r} is not a member of a shard")

    def stop_shard_member(self, address: str, now: float) -> None:
        """A shard member stops: a primary's shard elects the next member at once (a
        majority still runs) or is left without a primary; the routers call the new one."""
        self.shard_of(address).stop(address, now)

    def restart_shard_member(self, address: str, now: float) -> None:
        self.shard_of(address).restart(address, now)

    def isolate(self, address: str, now: float) -> None:
        """A shard member is cut off from its shard's other members (see ``shard-isolate``)."""
        self.shard_of(address).isolate(address, now)

    def reconnect(self, address: str, now: float) -> None:
        self.shard_of(address).reconnect(address, now)

    # -- what the invariants read ----------------------------------------------------------------

    @property
    def oplogs(self) -> list[Any]:
        return [shard.oplog for shard in self.cluster.shards.values()]

    @property
    def rollbacks(self) -> list[Any]:
        """Every shard's rollbacks."""
        return [rollback for shard in self.cluster.shards.values() for rollback in shard.replication.rollbacks]

    @property
    def transaction_tables(self) -> list[Any]:
        return [shard.transactions for shard in self.cluster.shards.values()]

    @property
    def databases(self) -> dict[str, dict[str, _Merged]]:
        merged: dict[str, dict[str, list[Collection]]] = {}
        for shard in self.cluster.shards.values():
            for database, collections in shard.databases.items():
                for name, collection in collections.items():
                    merged.setdefault(database, {}).setdefault(name, []).append(collection)
        return {db: {name: _Merged(parts) for name, parts in names.items()} for db, names in merged.items()}


async def shard_collections(world: World) -> None:
    """Shard the workloads' collections on a hashed ``_id`` (before the setup's data)."""
    admin = world.client.admin
    await admin.command({"enableSharding": "chaos"})
    for name in SHARDED_COLLECTIONS:
        await admin.command({"shardCollection": f"chaos.{name}", "key": {"_id": "hashed"}})
    # the two accounts on two shards: every transfer is a two-shard transaction
    await admin.command({"shardCollection": "chaos.bank", "key": {"_id": 1}})
    await admin.command({"split": "chaos.bank", "middle": {"_id": "b"}})
    shards = sorted(world.cluster.cluster.shards)
    for account, shard in zip(("a", "b"), shards, strict=False):
        try:
            await admin.command({"moveChunk": "chaos.bank", "find": {"_id": account}, "to": shard})
        except OperationFailure:
            pass  # (already there)
