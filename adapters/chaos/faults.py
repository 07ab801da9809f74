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
=============  ============================================================================
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

__all__ = ["FAILPOINTS", "KINDS", "Fault", "draw_schedule", "end", "start"]

KINDS = ("partition", "cut", "stall", "stepdown", "crash", "failpoint")

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
        faults.append(Fault(at, kind, member, duration, detail))
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
    network.flush_all()


def end(world: World, fault: Fault) -> None:
    """End ``fault`` (a partition heals, a crashed member restarts, a fail point goes off)."""
    network, cluster, now = world.network, world.cluster, world.loop.now
    if fault.kind == "partition":
        network.heal(fault.target)
    elif fault.kind == "crash":
        cluster.restart(fault.target, now)
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
