"""``mongo-sansio sim --sharded``: the options of the simulated sharded cluster.

``--sharded [--shards N] [--mongos M] [--members K]`` serves ``M`` mongos routers over ``N``
shards of ``K`` members each (defaults 2, 2, 3); the first line printed is the URI with every
mongos in the seed list (and the first ``--auth`` user's credentials).  The other ``sim``
options that apply (``--auth``, ``--host``, ``--port``, ``--seed``, ``--load-balanced``: a
load balancer front over the routers, ``mongodb://<front>/?loadBalanced=true``) apply as to a
replica set.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_sharded_arguments", "sharded_cluster"]


def add_sharded_arguments(sim: argparse.ArgumentParser) -> None:
    sim.add_argument(
        "--sharded", action="store_true",
        help="serve a sharded cluster: mongos routers over replica-set shards (URI: every mongos)",
    )
    sim.add_argument("--shards", type=int, default=2, help="with --sharded: how many shards (default 2)")
    sim.add_argument("--mongos", type=int, default=2, help="with --sharded: how many mongos routers (default 2)")


def sharded_cluster(args: argparse.Namespace, users: dict[str, str] | None) -> Any:
    """The cluster the options describe (not started)."""
    from .sim_sharded import SimulatedShardedCluster

    if args.standalone or args.aws or args.oidc_audience is not None:
        raise SystemExit("mongo-sansio sim: --sharded does not combine with --standalone, --aws or OIDC")
    return SimulatedShardedCluster(
        shards=args.shards, mongos=args.mongos, members=args.members if args.members is not None else 3,
        auth=users, seed=args.seed, host=args.host, port=args.port, load_balanced=args.load_balanced,
    )
