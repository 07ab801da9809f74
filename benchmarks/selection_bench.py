"""Server selection and CMAP pool benchmark: mongo-sansio against PyMongo, without a server.

Run from the repository root::

    python benchmarks/selection_bench.py [--quick]

Inputs: none; the deployment is made up.  A 50-member replica set (one primary, 49
secondaries) with ``dc``/``rack`` tags, round-trip times from 1 to 50 ms and replication lags
from 0 to 196 s, described twice from the same facts: as our ``TopologyDescription`` and as
PyMongo's (``pymongo.topology_description.TopologyDescription`` over ServerDescriptions parsed
from hand-built hello replies).  PyMongo must be installed (it is the comparison).

Output: one table -- case, selections (or pool cycles) per second for ours and PyMongo's, and
the ratio ours/PyMongo.

Cases:

* selection: ``secondary`` with two tag sets and maxStalenessSeconds=120; ``nearest`` with one
  tag set; ``secondaryPreferred`` whose tags match nothing (falls back to the primary); a write.
  Ours is one full :func:`mongo_sansio.selection.select_server` call (suitability, staleness,
  tags, latency window and the two-random operationCount choice).  PyMongo's is
  ``TopologyDescription.apply_selector`` (suitability, staleness, tags, latency window) plus
  ``random.choice``: its operationCount choice lives in ``Topology`` with live ``Server``
  objects and is left out, which favours PyMongo slightly.
* pool: one check-out and check-in of an idle connection.  Ours drives the CMAP machine
  (``check_out``, read the GiveConnection action, ``check_in``, drain the events).  PyMongo's
  ``synchronous.pool.Pool`` runs its real ``checkout()`` context manager with locks and
  telemetry; its ``connect`` is overridden to wrap one end of a local ``socketpair`` (never read
  or written) so that no server is needed.

Method: each measurement is ``--trials`` trials; a trial runs the operation ``n`` times, ``n``
calibrated so that a trial lasts about ``--trial-seconds``; the result is the median trial.
Trials alternate ours / PyMongo's so both see the same machine.
"""

from __future__ import annotations

import argparse
import datetime
import random
import socket
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MEMBERS = 50
SET_NAME = "rs"
HEARTBEAT = 10.0
NOW = 1000.0  # our monotonic clock for the descriptions' lastUpdateTime
BASE_WRITE = datetime.datetime(2026, 1, 1)  # naive UTC, as PyMongo decodes it
DATA_CENTERS = ["ny", "sf", "ldn", "fra", "syd"]


class Timer:
    """Times ``fn()``: calibrated once to about ``trial_seconds`` per trial; each
    :meth:`trial` records one trial's seconds per call."""

    def __init__(self, fn: Callable[[], Any], trial_seconds: float) -> None:
        self.fn = fn
        start = time.perf_counter()
        for _ in range(10):
            fn()
        once = max((time.perf_counter() - start) / 10, 1e-9)
        self.n = max(1, int(trial_seconds / once))
        self.results: list[float] = []

    def trial(self) -> None:
        fn, n = self.fn, self.n
        start = time.perf_counter()
        for _ in range(n):
            fn()
        self.results.append((time.perf_counter() - start) / n)

    def ops_per_second(self) -> float:
        return 1.0 / statistics.median(self.results)


# -- the deployment, as facts ------------------------------------------------------------------


def members() -> list[dict[str, Any]]:
    """host, primary?, rtt (s), tags, lag (s): the same facts for both libraries."""
    rng = random.Random(50)
    facts = []
    for i in range(MEMBERS):
        facts.append(
            {
                "host": f"m{i:02d}.example.com",
                "primary": i == 0,
                "rtt": 0.001 + (i % 50) * 0.001,
                "tags": {"dc": DATA_CENTERS[i % len(DATA_CENTERS)], "rack": f"r{i % 3}"},
                "lag": 0.0 if i == 0 else float(rng.randrange(0, 197)),
            }
        )
    return facts


def hello(fact: dict[str, Any], hosts: list[str]) -> dict[str, Any]:
    return {
        "ok": 1,
        "setName": SET_NAME,
        "isWritablePrimary": fact["primary"],
        "secondary": not fact["primary"],
        "hosts": hosts,
        "tags": fact["tags"],
        "lastWrite": {"lastWriteDate": BASE_WRITE - datetime.timedelta(seconds=fact["lag"])},
        "minWireVersion": 0,
        "maxWireVersion": 21,
    }


# -- ours ---------------------------------------------------------------------------------------


def our_selection_cases() -> dict[str, Callable[[], Any]]:
    from mongo_sansio.sdam import ServerDescription, TopologyDescription, TopologyType
    from mongo_sansio.selection import ReadPreference, SelectionCriteria, select_server

    facts = members()
    hosts = [f"{f['host']}:27017" for f in facts]
    servers = {}
    for fact in facts:
        address = (fact["host"], 27017)
        servers[address] = ServerDescription.from_hello(
            address, hello(fact, hosts), round_trip_time=fact["rtt"], now=NOW
        )
    topology = TopologyDescription(
        type=TopologyType.REPLICA_SET_WITH_PRIMARY, servers=servers, set_name=SET_NAME
    )
    draw = random.Random(1).randrange
    counts = {address: i % 4 for i, address in enumerate(servers)}
    criteria = {
        "secondary, 2 tag sets, maxStaleness": SelectionCriteria.for_read(
            ReadPreference(
                mode="secondary",
                tag_sets=[{"dc": "mars"}, {"dc": "ny"}],
                max_staleness_seconds=120,
            )
        ),
        "nearest, 1 tag set": SelectionCriteria.for_read(
            ReadPreference(mode="nearest", tag_sets=[{"rack": "r1"}])
        ),
        "secondaryPreferred, no match": SelectionCriteria.for_read(
            ReadPreference(mode="secondaryPreferred", tag_sets=[{"dc": "mars"}])
        ),
        "write (primary)": SelectionCriteria.for_write(),
    }

    def case(wanted: SelectionCriteria) -> Callable[[], Any]:
        def run() -> Any:
            return select_server(
                topology,
                wanted,
                heartbeat_frequency=HEARTBEAT,
                local_threshold=0.015,
                draw=draw,
                operation_counts=counts,
            )

        assert run() is not None
        return run

    return {name: case(wanted) for name, wanted in criteria.items()}


def our_pool_cycle() -> Callable[[], Any]:
    from mongo_sansio.cmap.actions import GiveConnection, OpenConnection
    from mongo_sansio.cmap.pool import Pool

    pool = Pool("m00.example.com:27017")
    pool.ready(0.0)
    pool.check_out(0.0)
    (opening,) = [o for o in pool.drain_outputs() if isinstance(o, OpenConnection)]
    pool.connection_established(opening.connection_id, 0.0)
    (given,) = [o for o in pool.drain_outputs() if isinstance(o, GiveConnection)]
    pool.check_in(given.connection, 0.0)
    pool.drain_outputs()
    clock = [0.0]

    def cycle() -> None:
        clock[0] += 1e-6
        now = clock[0]
        pool.check_out(now)
        connection = None
        for output in pool.drain_outputs():
            if isinstance(output, GiveConnection):
                connection = output.connection
        assert connection is not None
        pool.check_in(connection, now)
        pool.drain_outputs()

    cycle()
    return cycle


# -- PyMongo ------------------------------------------------------------------------------------


def pymongo_selection_cases() -> dict[str, Callable[[], Any]]:
    from pymongo.hello import Hello
    from pymongo.read_preferences import Nearest, Secondary, SecondaryPreferred
    from pymongo.server_description import ServerDescription
    from pymongo.server_selectors import writable_server_selector
    from pymongo.synchronous.settings import TopologySettings
    from pymongo.topology_description import TOPOLOGY_TYPE, TopologyDescription

    facts = members()
    hosts = [f"{f['host']}:27017" for f in facts]
    servers: dict[Any, Any] = {}
    for fact in facts:
        address = (fact["host"], 27017)
        servers[address] = ServerDescription(
            address, Hello(hello(fact, hosts)), round_trip_time=fact["rtt"]
        )
    settings = TopologySettings(
        seeds=list(servers), replica_set_name=SET_NAME, heartbeat_frequency=int(HEARTBEAT)
    )
    topology = TopologyDescription(
        TOPOLOGY_TYPE.ReplicaSetWithPrimary, servers, SET_NAME, None, None, settings
    )
    rng = random.Random(1)
    selectors: dict[str, Any] = {
        "secondary, 2 tag sets, maxStaleness": Secondary(
            tag_sets=[{"dc": "mars"}, {"dc": "ny"}], max_staleness=120
        ),
        "nearest, 1 tag set": Nearest(tag_sets=[{"rack": "r1"}]),
        "secondaryPreferred, no match": SecondaryPreferred(tag_sets=[{"dc": "mars"}]),
        "write (primary)": writable_server_selector,
    }

    def case(selector: Any) -> Callable[[], Any]:
        def run() -> Any:
            return rng.choice(topology.apply_selector(selector))

        assert run() is not None
        return run

    return {name: case(selector) for name, selector in selectors.items()}


def pymongo_pool_cycle() -> Callable[[], Any]:
    from pymongo.network_layer import NetworkingInterface
    from pymongo.pool_options import PoolOptions
    from pymongo.synchronous.pool import Connection, Pool

    peers: list[socket.socket] = []

    class ServerlessPool(Pool):
        """PyMongo's pool with ``connect`` making a Connection over an idle socketpair end."""

        def connect(self, handler: Any = None) -> Connection:
            ours, theirs = socket.socketpair()
            peers.append(theirs)
            with self.lock:
                connection_id = self.next_connection_id
                self.next_connection_id += 1
            address: Any = self.address
            return Connection(NetworkingInterface(ours), self, address, connection_id, True)

    pool = ServerlessPool(("m00.example.com", 27017), PoolOptions(max_pool_size=100))
    pool.ready()

    def cycle() -> None:
        with pool.checkout():
            pass

    cycle()
    return cycle


# -- the run ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 short trials per case")
    parser.add_argument("--trials", type=int, default=7)
    parser.add_argument("--trial-seconds", type=float, default=0.3)
    args = parser.parse_args(argv)
    trials, trial_seconds = (3, 0.1) if args.quick else (args.trials, args.trial_seconds)

    ours = our_selection_cases()
    theirs = pymongo_selection_cases()
    pairs = [(f"select: {name}", ours[name], theirs[name]) for name in ours]
    pairs.append(("pool: check-out + check-in", our_pool_cycle(), pymongo_pool_cycle()))
    timers = [(name, Timer(a, trial_seconds), Timer(b, trial_seconds)) for name, a, b in pairs]
    for _ in range(trials):
        for _, our_timer, their_timer in timers:
            our_timer.trial()
            their_timer.trial()

    import pymongo

    print(
        f"{MEMBERS}-member replica set; PyMongo {pymongo.version}; {trials} trials x ~{trial_seconds}s"
    )
    print(f"{'case':<46} {'ours ops/s':>12} {'PyMongo ops/s':>14} {'ratio':>7}")
    for name, our_timer, their_timer in timers:
        a, b = our_timer.ops_per_second(), their_timer.ops_per_second()
        print(f"{name:<46} {a:>12,.0f} {b:>14,.0f} {a / b:>6.2f}x")


if __name__ == "__main__":
    main()
