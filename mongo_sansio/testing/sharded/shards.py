"""The shards' side of the sharded cluster: one logical clock, shard-aware document keys, and
the call a router makes into a shard's primary.

Inputs: the shared :class:`ClusterClock` (every shard's oplog and every router stamp their
times from it, as mongod's hybrid logical clock gossiped by every message would make them),
the :class:`~.catalog.Catalog` (shard-key fields), ``wake`` (called after a write that may
feed a waiting router cursor).  Outputs: :class:`ShardReplicaSet` (a
:class:`~mongo_sansio.testing.server.ReplicaSet` with those three), :func:`call` (a command
run on a replica set's primary as a router sends it: answered by the same pipeline a client's
command goes through, failpoints, sessions and transactions included).

One logical clock makes every oplog timestamp in the cluster distinct, so a merged change
stream orders events from different shards by cluster time alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mongo_sansio.bson import Timestamp
from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.server import context as server_context
from mongo_sansio.testing.server.context import Close, ConnectionState, Context, Request, Waiting
from mongo_sansio.testing.server.dispatch import execute
from mongo_sansio.testing.server.oplog import Oplog
from mongo_sansio.testing.server.replset import ReplicaSet

__all__ = ["Blocked", "ClusterClock", "ShardReplicaSet", "call", "use_clock", "wait_for_lock"]

_LOCK_POLL_SECONDS = 0.02


class Blocked(Exception):  # noqa: N818 -- a signal to the router, not an error
    """A shard's answer waits for another session's open transaction to end (its lock on a
    document): the router waits too, as mongos waits for the shard."""


class ClusterClock:
    """The cluster time: a (seconds, increment) Timestamp that only moves forward."""

    def __init__(self) -> None:
        self.last = Timestamp(0, 0)

    def next(self, wall: float) -> Timestamp:
        seconds = int(wall)
        if seconds > self.last.time:
            self.last = Timestamp(seconds, 1)
        else:
            self.last = Timestamp(self.last.time, self.last.inc + 1)
        return self.last

    def observe(self, ts: Timestamp) -> None:
        if (ts.time, ts.inc) > (self.last.time, self.last.inc):
            self.last = ts


class _ClockedOplog(Oplog):
    """An oplog whose timestamps come from the cluster's clock."""

    def __init__(self, clock: ClusterClock, old: Oplog) -> None:
        super().__init__(old.max_entries)
        self.clock = clock
        self.entries = old.entries
        self._last = old.last_timestamp
        clock.observe(old.last_timestamp)

    def next_timestamp(self, wall: float) -> Timestamp:
        self._last = self.clock.next(wall)
        return self._last

    @property
    def last_timestamp(self) -> Timestamp:
        """The cluster time (not only this oplog's last entry's): a shard's snapshots,
        transactions and change streams start there, as they would after the gossip."""
        return self.clock.last


def use_clock(cluster: ReplicaSet, clock: ClusterClock) -> None:
    """Make ``cluster``'s oplog draw its timestamps from ``clock``."""
    cluster.oplog = _ClockedOplog(clock, cluster.oplog)


class ShardReplicaSet(ReplicaSet):
    """A shard: a replica set whose document keys carry the shard key and whose writes wake
    the routers' waiting cursors."""

    def __init__(self, members: list[str], *, clock: ClusterClock, key_fields: Callable[[str], list[str]],
                 wake: Callable[[float], None], **options: Any) -> None:
        super().__init__(members, **options)
        use_clock(self, clock)
        self._key_fields = key_fields
        self._wake = wake

    def document_key(self, ns: str, document: dict[str, Any]) -> dict[str, Any]:
        fields = self._key_fields(ns)
        if not fields:
            return {"_id": document["_id"]}
        from mongo_sansio.testing.sharded.catalog import shard_key_value

        key = {field: value for field, value in shard_key_value(dict.fromkeys(fields, 1), document).items()}
        key["_id"] = document["_id"]
        return key

    def wake_waiters(self, now: float) -> None:
        wrote = self._poke_all_later
        super().wake_waiters(now)
        if wrote:
            self._wake(now)


def call(cluster: ReplicaSet, db: str, body: Mapping[str, Any], now: float, *, user: str | None = None,
         may_block: bool = False) -> dict[str, Any]:
    """Run the command ``body`` on ``db`` at ``cluster``'s primary, as a router does, and give
    its reply (``ok: 0`` replies included).  No primary: FailedToSatisfyReadPreference (133),
    as mongos answers after its selection gives up.  A reply that waits for an open
    transaction's lock raises :class:`Blocked` when ``may_block`` (the router waits, then sends
    the command again); any other reply that would wait (a blocking failpoint, or a lock when
    the router cannot wait) is answered at once by its timeout path; a failpoint that closes
    the connection is a HostUnreachable error (6) as the router sees it."""
    primary = cluster.primary
    if primary is None:
        raise CommandError(133, "FailedToSatisfyReadPreference",
                           f"Could not find host matching read preference {{ mode: \"primary\" }} for set {cluster.set_name}")
    member = cluster.members[primary]
    state = ConnectionState(0, handshake_done=True, user=user if user is not None else ("__system" if cluster.auth_enabled else None))
    request = Request(next(iter(body)), db, body, {}, 0, secondary_ok=True)
    outcome: Any = execute(Context(cluster, member, state, request, now))
    if isinstance(outcome, Waiting) and may_block and any(t.open for t in cluster.transactions.by_session.values()):
        raise Blocked(f"{next(iter(body))} waits for a transaction on {cluster.set_name}")
    for _ in range(3):
        if not isinstance(outcome, Waiting):
            break
        outcome = outcome.poll(now, False) or outcome.poll(outcome.deadline if outcome.deadline is not None else now, True)
    if isinstance(outcome, Close) or isinstance(outcome, Waiting) or not isinstance(outcome, dict):
        raise CommandError(6, "HostUnreachable", f"Connection to {primary} was closed")
    return outcome


def wait_for_lock(ctx: Context, again: Callable[[], server_context.Outcome],
                  answer: Callable[[server_context.Outcome | CommandError], server_context.Outcome]) -> Waiting:
    """The router's wait for a shard that holds a write back behind another session's
    transaction (:class:`Blocked`): as mongos waits for the shard, until the transaction ends
    or the command's maxTimeMS (``answer`` gets 50 MaxTimeMSExpired), then ``again`` routes
    the command anew (none of it was applied) and ``answer`` gets its outcome.  The holder
    lives on a shard, not on the router, so the router looks again every few milliseconds."""
    max_time = ctx.body.get("maxTimeMS")
    limit = ctx.now + float(max_time) / 1000.0 if isinstance(max_time, int | float) and max_time > 0 else None

    def next_look(now: float) -> float:
        return min(now + _LOCK_POLL_SECONDS, limit) if limit is not None else now + _LOCK_POLL_SECONDS

    waiting = Waiting(next_look(ctx.now), lambda now, timed_out: None)
    busy: list[bool] = []  # a poll under way: the writes it routes wake the router's waiters,
    # this one too, which must not answer the same request a second time

    def look(now: float) -> server_context.Outcome | None:
        ctx.now = now
        if limit is not None and now >= limit:
            return answer(CommandError(50, "MaxTimeMSExpired", "operation exceeded time limit"))
        outcome = again()
        if isinstance(outcome, Waiting):
            waiting.deadline = next_look(now)
            return None
        return answer(outcome)

    def poll(now: float, timed_out: bool) -> server_context.Outcome | None:
        if busy:
            return None
        busy.append(True)
        try:
            return look(now)
        finally:
            busy.clear()

    waiting.poll = poll
    return waiting

