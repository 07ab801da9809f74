"""The faults a seed chooses, and how each is carried out on the world.

A fault is a value (:class:`Fault`): when it starts (virtual seconds after the workloads
start), its kind, its target member, how long it lasts, a detail.  :func:`draw_schedule` draws
a schedule from a ``random.Random``; :func:`start` and :func:`end` carry a fault out on the
network and the cluster.  Kinds (``--faults`` takes a comma-separated list of them):

=============  ============================================================================
partition      the client cannot reach a member (both ways, or one way), until it heals
cut            the next bytes on one live connection are cut short; the connection ends
               (``to_client``: the server ran the command, its reply is lost)
stall          everything to and from a member is delayed until the stall ends
stepdown       the primary steps down; the next member is elected
crash          a member stops (its connections close) and restarts after the duration
failpoint      a ``failCommand`` / ``onPrimaryTransactionalWrite`` fail point on the primary
isolate        a member is cut off from the other members (clients still reach it) until it
               heals: a primary so cut off steps down after the election timeout and the
               others elect a new one; what only it had is rolled back
rollback       the primary is cut off from the others (``isolate``) or crashes (``crash``)
               past the election timeout: its writes no majority applied are rolled back
clock          a member's wall clock jumps forward or back (``+s``/``-s``), and back again
truncate       the oplog keeps only its newest ``keep`` entries until the fault ends (as a
               capped oplog that a burst of writes fills; never past the majority commit
               point): a change stream behind it cannot resume and must say so
shard-crash    (sharded world only) a member of a shard stops and restarts after the
               duration: a stopped primary's shard elects another member at once; the routers
               reach the new primary, and a shard cursor or transaction that lived on the
               stopped one is gone (mongos answers the error: CursorNotFound,
               NoSuchTransaction); a shard with a majority stopped has no primary until one
               restarts (mongos answers FailedToSatisfyReadPreference)
shard-isolate  (sharded world only) the primary of a shard (the target's) is cut off from its
               shard's other members past the election timeout: they elect a new primary,
               and the writes only the old one had (``w:1``) are rolled back
=============  ============================================================================

Rollback needs writes a majority has not applied: the world's secondaries apply the oplog with
a drawn lag (see :mod:`.world`), and a cut-off primary's writes reach nobody.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from mongo_sansio.errors import LocalProtocolError

from .network import TO_CLIENT, TO_SERVER

if TYPE_CHECKING:
    from .world import World

__all__ = [
    "FAILPOINTS", "KINDS", "ROUTER_KINDS", "SHARD_KINDS", "Fault", "draw_schedule", "draw_shard_schedule", "end",
    "start",
]

KINDS = (
    "partition", "cut", "stall", "stepdown", "crash", "failpoint", "isolate", "rollback", "clock", "truncate",
    "shard-crash", "shard-isolate",
)
#: the kinds a sharded world carries out on its routers (and stepdowns of its shards' primaries):
#: its shards replicate without lag and have no member-to-member network, clocks or truncation
ROUTER_KINDS = ("partition", "cut", "stall", "stepdown", "crash", "failpoint")
#: the kinds a sharded world carries out inside its shards (drawn from their own stream, so a
#: sharded seed's router faults and every replica-set seed's faults stay what they were)
SHARD_KINDS = ("shard-crash", "shard-isolate")
#: what the replica set's election timeout is in the worlds (settings.electionTimeoutMillis)
ELECTION_TIMEOUT = 2.0

#: the fail points a ``failpoint`` fault sets, by name (failCommand data, or another one)
FAILPOINTS: dict[str, dict[str, Any]] = {
    "insert-shutdown": {"failCommands": ["insert"], "errorCode": 91},
    "update-stepdown": {"failCommands": ["update"], "errorCode": 189},
    "update-close": {"failCommands": ["update"], "closeConnection": True},
    "find-notprimary": {"failCommands": ["find"], "errorCode": 10107},
    "getmore-close": {"failCommands": ["getMore"], "closeConnection": True},
    "aggregate-interrupted": {"failCommands": ["aggregate"], "errorCode": 11602},
    "commit-close": {"failCommands": ["commitTransaction"], "closeConnection": True},
    "commit-wce": {
        "failCommands": ["commitTransaction"],
        "writeConcernError": {"code": 91, "errmsg": "Replication is being shut down"},
    },
    "insert-block": {"failCommands": ["insert"], "blockConnection": True, "blockTimeMS": 800},
    "write-then-close": {"onPrimaryTransactionalWrite": True},
}


@attrs.frozen(order=True)
class Fault:
    at: float
    kind: str
    target: str = ""
    duration: float = 0.0
    detail: str = ""

    def describe(self) -> str:
        parts = [self.kind]
        if self.target:
            parts.append(self.target)
        if self.detail:
            parts.append(self.detail)
        return f"{' '.join(parts)} at +{self.at:.3f}s for {self.duration:.3f}s"


def draw_schedule(
    rng: random.Random, members: Sequence[str], kinds: Sequence[str], count: int, horizon: float
) -> tuple[Fault, ...]:
    """``count`` faults of ``kinds`` within ``horizon`` virtual seconds, sorted by start."""
    faults = []
    if not kinds:
        return ()
    for _ in range(count):
        kind = rng.choice(list(kinds))
        at = round(rng.uniform(0.0, horizon), 4)
        member = rng.choice(list(members))
        duration = round(rng.uniform(0.05, 6.0), 3)
        detail = ""
        if kind == "partition":
            detail = rng.choice(("both", TO_SERVER, TO_CLIENT))
        elif kind == "cut":
            detail, member, duration = rng.choice((TO_SERVER, TO_CLIENT, TO_CLIENT)), "", 0.0
        elif kind == "stepdown":
            member, duration = "", 0.0
        elif kind == "failpoint":
            detail, member = rng.choice(sorted(FAILPOINTS)), ""
        elif kind == "rollback":
            # long enough for the others to elect a new primary
            detail, member = rng.choice(("isolate", "crash")), ""
            duration = round(ELECTION_TIMEOUT + rng.uniform(0.5, 4.0), 3)
        elif kind == "clock":
            detail = f"{rng.choice((-1, 1)) * rng.choice((1, 30, 3600, 86400 * 365)):+d}s"
        elif kind == "truncate":
            detail, member = f"keep {rng.randint(1, 4)}", ""
        faults.append(Fault(at, kind, member, duration, detail))
    return tuple(sorted(faults))


def draw_shard_schedule(
    rng: random.Random, shard_members: Sequence[str], kinds: Sequence[str], horizon: float
) -> tuple[Fault, ...]:
    """Up to two faults of ``kinds`` inside the shards within ``horizon`` virtual seconds."""
    if not kinds:
        return ()
    faults = []
    for _ in range(rng.randint(0, 2)):
        kind = rng.choice(list(kinds))
        at = round(rng.uniform(0.0, horizon), 4)
        member = rng.choice(list(shard_members))
        duration = round(rng.uniform(0.05, 6.0), 3)
        if kind == "shard-isolate":  # long enough for the others to elect a new primary
            duration = round(ELECTION_TIMEOUT + rng.uniform(0.5, 4.0), 3)
        faults.append(Fault(at, kind, member, duration))
    return tuple(sorted(faults))


def start(world: World, fault: Fault) -> None:
    """Begin ``fault`` now."""
    network, cluster, now = world.network, world.cluster, world.loop.now
    kind = fault.kind
    if kind == "partition":
        directions = (TO_SERVER, TO_CLIENT) if fault.detail == "both" else (fault.detail,)
        network.partition(fault.target, directions)
    elif kind == "cut":
        network.cut_one(fault.detail)
    elif kind == "stall":
        network.stall(fault.target, now + fault.duration)
    elif kind == "stepdown":
        if cluster.primary is not None:
            try:
                cluster.step_down(now)
            except LocalProtocolError:
                pass  # no member can be elected
    elif kind == "crash":
        cluster.stop(fault.target, now)
    elif kind == "failpoint":
        primary = cluster.primary
        if primary is not None:
            cluster.member(primary).failpoints.configure(_failpoint(fault.detail))
    elif kind == "isolate":
        world.faults_on.add(fault)
        _isolate(world, fault.target)
    elif kind == "rollback":
        _start_rollback(world, fault)
    elif kind == "clock":
        cluster.jump_clock(fault.target, _seconds(fault.detail))
        world.faults_on.add(fault)
    elif kind == "truncate":
        cluster.limit_oplog(int(fault.detail.split()[-1]))
    elif kind == "shard-crash":
        cluster.stop_shard_member(fault.target, now)
    elif kind == "shard-isolate":
        primary = cluster.shard_of(fault.target).primary
        world.rollback_victims[fault] = primary
        if primary is not None:
            _isolate(world, primary)
    network.flush_all()


def _start_rollback(world: World, fault: Fault) -> None:
    """Cut off or crash the primary of the moment (noted for the fault's end)."""
    cluster, now = world.cluster, world.loop.now
    primary = cluster.primary
    world.rollback_victims[fault] = primary
    if primary is None:
        return
    if fault.detail == "crash":
        cluster.stop(primary, now)
    else:
        _isolate(world, primary)


def _isolate(world: World, member: str) -> None:
    world.isolations[member] = world.isolations.get(member, 0) + 1
    world.cluster.isolate(member, world.loop.now)


def _reconnect(world: World, member: str) -> None:
    """One fault less holds ``member`` cut off: it rejoins when none does."""
    held = world.isolations.get(member, 0) - 1
    world.isolations[member] = max(0, held)
    if held <= 0:
        world.cluster.reconnect(member, world.loop.now)


def _seconds(detail: str) -> float:
    return float(detail.rstrip("s"))


def end(world: World, fault: Fault) -> None:
    """End ``fault`` (a partition heals, a crashed member restarts, a cut-off member rejoins
    and rolls back what it alone had, a clock jumps back, the oplog's limit lifts, a fail point
    goes off).  Ending a fault twice changes nothing."""
    network, cluster, now = world.network, world.cluster, world.loop.now
    if fault.kind == "partition":
        network.heal(fault.target)
    elif fault.kind == "crash":
        cluster.restart(fault.target, now)
    elif fault.kind == "shard-crash":
        cluster.restart_shard_member(fault.target, now)
    elif fault.kind == "shard-isolate":
        victim = world.rollback_victims.pop(fault, None)
        if victim is not None:
            _reconnect(world, victim)
    elif fault.kind == "isolate" and fault in world.faults_on:
        world.faults_on.discard(fault)
        _reconnect(world, fault.target)
    elif fault.kind == "truncate":
        cluster.limit_oplog(None)
    elif fault.kind == "rollback":
        victim = world.rollback_victims.pop(fault, None)
        if victim is not None:
            cluster.restart(victim, now)
            if fault.detail != "crash":
                _reconnect(world, victim)
    elif fault.kind == "clock" and fault in world.faults_on:
        world.faults_on.discard(fault)
        cluster.jump_clock(fault.target, -_seconds(fault.detail))
    elif fault.kind == "failpoint":
        for member in cluster.members.values():
            name = "onPrimaryTransactionalWrite" if fault.detail == "write-then-close" else "failCommand"
            member.failpoints.configure({"configureFailPoint": name, "mode": "off"})
    network.flush_all()


def _failpoint(name: str) -> dict[str, Any]:
    data = FAILPOINTS[name]
    if "onPrimaryTransactionalWrite" in data:
        return {"configureFailPoint": "onPrimaryTransactionalWrite", "mode": {"times": 1}}
    return {"configureFailPoint": "failCommand", "mode": {"times": 1}, "data": dict(data)}
