"""The simulated sharded cluster's server side: mongos routers over shards that are replica
sets of :mod:`mongo_sansio.testing.server`, pure as they are (bytes and ``now`` in, bytes out).

Modules: :mod:`.cluster` (:class:`ShardedCluster`, the routers' connections), :mod:`.router`
(command routing, merging reads), :mod:`.catalog` (shards, chunks, hashed keys, the config
documents), :mod:`.admin` (sharding commands, ``config`` reads), :mod:`.transactions`
(multi-shard transactions), :mod:`.streams` (merged change streams), :mod:`.shards` (the
cluster clock, shard replica sets, the router's call into a shard).
"""

from __future__ import annotations

from mongo_sansio.testing.sharded.catalog import Catalog, hash_value
from mongo_sansio.testing.sharded.cluster import MongosConnection, ShardedCluster

__all__ = ["Catalog", "MongosConnection", "ShardedCluster", "hash_value"]
