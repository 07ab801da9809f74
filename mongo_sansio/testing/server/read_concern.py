"""A read's ``afterClusterTime``: wait until the member has applied that optime.

Inputs: the command's :class:`~.context.Context` (its ``readConcern`` and ``maxTimeMS``, the
member it runs on, ``now``) and the answer to give once the wait is over.  Output: None (no
wait: the member has applied the time already, it is the primary, or the read asks for no
time), or a :class:`~.context.Waiting` that gives the answer once the member's position (its
newest applied oplog entry, :func:`~.handshake.member_position`) reaches the time, or fails
with MaxTimeMSExpired at the command's ``maxTimeMS``.

mongod does the same before any read with ``afterClusterTime`` (causally consistent sessions'
reads, ``readConcern: majority`` with a cluster time): a lagging secondary holds the read until
its replication catches up, so a causal session never reads from before its own writes.  A
member's position moves with time (:meth:`~.replset.ReplicaSet.set_lag`), so the wait's
deadline is when the first entry at or after the time becomes visible there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from mongo_sansio.bson import Timestamp
from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.server.context import Context, Outcome, Waiting
from mongo_sansio.testing.server.handshake import member_position
from mongo_sansio.testing.server.replset import PRIMARY

__all__ = ["wait_for_cluster_time"]


def _after_cluster_time(ctx: Context) -> Timestamp | None:
    concern = ctx.body.get("readConcern")
    after = concern.get("afterClusterTime") if isinstance(concern, Mapping) else None
    return after if isinstance(after, Timestamp) else None


def _applied(ctx: Context, now: float, after: Timestamp) -> bool:
    entry = member_position(ctx.cluster, ctx.member, now)
    return entry is not None and (entry.ts.time, entry.ts.inc) >= (after.time, after.inc)


def _visible_from(ctx: Context, after: Timestamp) -> float | None:
    """When the member will have applied ``after`` (None: nothing at or after it is written)."""
    oplog = ctx.cluster.oplog
    index = oplog.index_from(after)
    if index >= len(oplog.entries):
        return None
    return oplog.entries[index].wall + ctx.member.lag - ctx.cluster.wall_offset


def wait_for_cluster_time(
    ctx: Context, max_time_ms: float | None, answer: Callable[[], Outcome]
) -> Waiting | None:
    """See the module docstring."""
    after = _after_cluster_time(ctx)
    if after is None or ctx.member.state == PRIMARY or _applied(ctx, ctx.now, after):
        return None
    expires = None if max_time_ms is None else ctx.now + max_time_ms / 1000.0

    def waiting(now: float) -> Waiting:
        candidates = [t for t in (_visible_from(ctx, after), expires) if t is not None]
        return Waiting(max(now, min(candidates)) if candidates else None, poll)

    def poll(now: float, timed_out: bool) -> Outcome | None:
        ctx.now = now
        if _applied(ctx, now, after):
            return answer()
        if expires is not None and now >= expires:
            raise CommandError(50, "MaxTimeMSExpired", "operation exceeded time limit")
        return waiting(now) if timed_out else None

    return waiting(ctx.now)
