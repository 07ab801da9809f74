"""Waiting for a write concern: a write's reply is held until the members have applied it.

Inputs: a :class:`~.context.Context` of a command that wrote (or a retried write answered from
its record, or a commit) and its reply.  Outputs: the reply at once when its write concern is
already satisfied (always, in a set without replication lag or partitions), else a
:class:`~.context.Waiting` that answers it once the write is replicated as asked
(:mod:`.replication`), or, past ``wtimeout`` or ``maxTimeMS``, answers it with mongod's
``writeConcernError`` (WriteConcernFailed 64 with ``errInfo.wtimeout``, MaxTimeMSExpired 50).
A stepdown interrupts the wait (InterruptedDueToReplStateChange, as other waits).

As mongod 5.0 and later, a write with no ``w`` waits for a majority (the implicit default
write concern); ``w: 0`` and ``w: 1`` do not wait.  The write waited for is the newest entry of
the oplog at the reply (mongod waits for the client's last optime, which for a write that
changed nothing or a retried one is the newest as well).  Statements inside a transaction do not
wait (only its commit does).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.testing.server.context import Context, Outcome, Waiting

__all__ = ["wait_for_write_concern"]

_TXN_ENDS = ("commitTransaction", "abortTransaction")


def _w(ctx: Context) -> int | str | None:
    """The ``w`` to wait for (None: none to wait for)."""
    concern = ctx.body.get("writeConcern")
    concern = concern if isinstance(concern, Mapping) else {}
    w = concern.get("w", "majority")
    if isinstance(w, bool) or not isinstance(w, int | str):
        return None
    if isinstance(w, int) and (w <= 1 or w > len(ctx.cluster.members)):
        return None  # (w above the set's size already got UnsatisfiableWriteConcern)
    if isinstance(w, str) and w != "majority":
        return None  # (an unknown mode already got UnknownReplWriteConcern)
    return w


def _expiry(ctx: Context) -> tuple[float | None, dict[str, Any]]:
    """When waiting gives up, and the writeConcernError it answers then."""
    concern = ctx.body.get("writeConcern")
    wtimeout = concern.get("wtimeout") if isinstance(concern, Mapping) else None
    max_time = ctx.body.get("maxTimeMS")
    limits: list[tuple[float, dict[str, Any]]] = []
    if isinstance(wtimeout, int | float) and not isinstance(wtimeout, bool) and wtimeout > 0:
        limits.append((ctx.now + wtimeout / 1000.0, {
            "code": 64, "codeName": "WriteConcernFailed", "errmsg": "waiting for replication timed out",
            "errInfo": {"wtimeout": True, "writeConcern": dict(concern) if isinstance(concern, Mapping) else {}},
        }))
    if isinstance(max_time, int | float) and not isinstance(max_time, bool) and max_time > 0:
        limits.append((ctx.now + max_time / 1000.0, {
            "code": 50, "codeName": "MaxTimeMSExpired", "errmsg": "operation exceeded time limit",
        }))
    if not limits:
        return None, {}
    return min(limits, key=lambda limit: limit[0])


def wait_for_write_concern(ctx: Context, reply: dict[str, Any]) -> Outcome:
    """``reply``, once its write is replicated as the command's write concern asks."""
    if reply.get("ok") != 1.0 or "writeConcernError" in reply:
        return reply
    if ctx.body.get("autocommit") is False and ctx.request.name not in _TXN_ENDS:
        return reply
    w = _w(ctx)
    if w is None:
        return reply
    replication = ctx.cluster.replication
    ts = replication.end
    if replication.satisfied(ts, w):
        return reply
    expires, error = _expiry(ctx)

    def poll(now: float, timed_out: bool) -> Outcome | None:
        if replication.satisfied(ts, w):
            return reply
        if expires is not None and now >= expires:
            answer = dict(reply)
            answer["writeConcernError"] = dict(error)
            return answer
        return Waiting(replication.next_progress(now, until=expires), poll)

    return Waiting(replication.next_progress(ctx.now, until=expires), poll)
