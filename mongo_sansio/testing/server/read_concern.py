"""Reads as a member has applied the oplog: a lagging secondary's data, majority reads, and
``afterClusterTime`` waits.

Inputs: a read command's :class:`~.context.Context` (its member, its ``readConcern``) and the
command to run once it may.  Outputs: the position the read sees (:func:`read_view`: a
:class:`~.transactions.SnapshotView` of the data as the member applied it -- a secondary that
has not applied the newest entries, or the majority commit point for ``level: "majority"`` --
or None for the latest data), and a :class:`~.context.Waiting` while ``afterClusterTime`` is
past what the member applied (:func:`hold_read`): mongod blocks such a read until the member
has caught up, bounded by the command's ``maxTimeMS`` (MaxTimeMSExpired 50).

In a set without lag or member partitions every member has applied everything, so every read
sees the latest data at once, as it always did.  A primary's ``afterClusterTime`` is always
satisfied (mongod's primary writes a noop to move its clock past it).  Change streams read the
oplog, not the data (:mod:`.changestreams`); snapshot reads and transactions have their own
view (:mod:`.transactions`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from mongo_sansio.bson import Timestamp
from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.server.context import Context, Outcome, Waiting
from mongo_sansio.testing.server.replset import PRIMARY
from mongo_sansio.testing.server.transactions import SnapshotView

__all__ = ["LAGGING_READS", "hold_read", "read_view"]

#: the commands that read documents as the member has them
LAGGING_READS = frozenset({"find", "aggregate", "distinct", "count"})


def _level(ctx: Context) -> str:
    concern = ctx.body.get("readConcern")
    level = concern.get("level", "local") if isinstance(concern, Mapping) else "local"
    return level if isinstance(level, str) else "local"


def _position(ctx: Context) -> Timestamp:
    """How far the data this read sees reaches."""
    replication = ctx.cluster.replication
    applied = replication.applied(ctx.member.address)
    if _level(ctx) == "majority":
        return min(applied, replication.commit_point)
    return applied


def read_view(ctx: Context) -> SnapshotView | None:
    """The data as ``ctx``'s member has applied it, when that is not the latest (None: the
    latest).  A member so far behind that the oplog no longer reaches its position reads the
    latest (mongod's would be too stale to serve reads at all)."""
    if ctx.request.name not in LAGGING_READS or ctx.cluster.standalone:
        return None
    if ctx.request.name == "aggregate" and _is_change_stream(ctx):
        return None
    replication = ctx.cluster.replication
    position = _position(ctx)
    first = ctx.cluster.oplog.first_timestamp
    if position >= replication.end or (first is not None and first > position):
        return None
    return SnapshotView(ctx.cluster, position, named=False)


def _is_change_stream(ctx: Context) -> bool:
    pipeline = ctx.body.get("pipeline")
    first = pipeline[0] if isinstance(pipeline, list) and pipeline else None
    return isinstance(first, Mapping) and "$changeStream" in first


def hold_read(ctx: Context, run: Callable[[], Outcome]) -> Waiting | None:
    """A Waiting that runs the read once its member applied ``afterClusterTime`` (None: it
    may run now)."""
    concern = ctx.body.get("readConcern")
    after = concern.get("afterClusterTime") if isinstance(concern, Mapping) else None
    if not isinstance(after, Timestamp) or ctx.member.state == PRIMARY or ctx.cluster.standalone:
        return None
    replication = ctx.cluster.replication

    def caught_up() -> bool:
        # (a cluster time past every entry is reached with the newest entry: mongod's
        # primary would write a noop to carry its optime past it)
        return _position(ctx) >= min(after, replication.end)

    if caught_up():
        return None
    limit = ctx.body.get("maxTimeMS")
    expires = (ctx.now + limit / 1000.0) if isinstance(limit, int | float) and not isinstance(limit, bool) and limit > 0 else None

    def poll(now: float, timed_out: bool) -> Outcome | None:
        ctx.now = now
        if caught_up():
            return run()
        if expires is not None and now >= expires:
            raise CommandError(50, "MaxTimeMSExpired", "operation exceeded time limit")
        return Waiting(replication.next_progress(now, until=expires), poll)

    return Waiting(replication.next_progress(ctx.now, until=expires), poll)
