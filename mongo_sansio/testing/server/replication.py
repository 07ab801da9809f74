"""Replication in the simulated replica set: lag, the majority commit point, elections decided
by who can see whom, and rollback.

Inputs: every oplog entry as it is appended, with ``now`` (:meth:`Replication.appended`);
``now`` as time passes (:meth:`Replication.advance`, from the cluster's ``tick``); member
partitions (:meth:`Replication.isolate`, :meth:`Replication.reconnect`); the choice of a new
primary (:meth:`Replication.catch_up`).  Outputs: each member's applied position
(:meth:`applied`), the majority commit point (:attr:`commit_point`), whether a write is
replicated as a write concern asks (:meth:`satisfied`), when replication next moves
(:meth:`next_progress`), the timed step-down and election the cluster must hold
(:meth:`due_election`), and the rollback files (:attr:`rollbacks`).

Theory of operation.  The members share one data set (the cluster's collections, one
oplog): what differs between them is how far each has *applied* that oplog.  The primary has
applied everything.  A secondary that reaches the primary applies an entry ``lag`` seconds
after it was written (the member's ``lag``; 0, the default, applies it at once, so a set
without lag behaves as it always did); one cut off from the primary (isolated, stopped, or
with no primary to sync from) applies only what a member it reaches has applied, and stops
there.  The *majority commit point* is the newest position a majority of the members has
applied; it never goes back.  A ``w:majority`` write waits for it (:mod:`.write_concern`), and
change streams return only majority-committed entries, as mongod's do.

An election follows mongod: the winner is the most up-to-date member of a side that holds a
majority of the members, and before it takes writes it catches up to the newest entry any
member of its side has applied.  Entries past that point were applied only by members outside
the side (an old primary cut off or crashed with ``w:1`` writes nobody else had): mongod rolls
them back on that member when it rejoins and keeps them in rollback files.  Here, as the data
is shared, the new primary's data is the shared data with those entries undone, so they are
undone at the election (:meth:`roll_back`): newest first, each document back to its pre-image,
a collection they created dropped; the entries leave the oplog; the retryable-write records and
committed transactions they carried are forgotten (mongod's ``config.transactions`` rolls back
with them).  Majority-committed entries are never rolled back: a majority side always holds a
member that applied them.

Member partitions: an isolated member reaches no other member (the client may still reach
it: that is the network's business).  A primary that cannot see a majority steps down
``election_timeout`` seconds after it lost it, and a side with a majority and no primary elects
one after the same time (mongod's ``electionTimeoutMillis``, 10 s by default); both happen at
the same instant here, so there is never more than one primary.

What this module must not know: commands, replies, the wire.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

import attrs

from mongo_sansio.bson import Timestamp
from mongo_sansio.testing.engine.order import copy_value, hashable_key
from mongo_sansio.testing.server.oplog import OplogEntry

if TYPE_CHECKING:
    from mongo_sansio.testing.server.replset import Member, ReplicaSet

__all__ = ["ELECTION_TIMEOUT", "Replication", "RollbackFile"]

#: mongod's default settings.electionTimeoutMillis, in seconds
ELECTION_TIMEOUT = 10.0
_ZERO = Timestamp(0, 0)
_STOPPED = "STOPPED"


@attrs.frozen
class RollbackFile:
    """What a member rolled back (mongod writes these documents to its rollback directory)."""

    member: str
    entries: tuple[OplogEntry, ...]
    at: float  # monotonic seconds of the election that decided it


class Replication:
    """See the module documentation."""

    def __init__(self, cluster: ReplicaSet) -> None:
        self.cluster = cluster
        self.election_timeout = ELECTION_TIMEOUT
        self.isolated: set[str] = set()
        self.rollbacks: list[RollbackFile] = []
        self._applied: dict[str, Timestamp] = {}
        # when each entry not yet applied everywhere was written (monotonic seconds), by ts
        self._written_ts: list[Timestamp] = []
        self._written_at: list[float] = []
        self._commit_point = _ZERO
        self._unsettled_since: float | None = None  # members lost sight of each other then

    # --- who reaches whom ------------------------------------------------------------------

    def _running(self, member: Member) -> bool:
        return member.state != _STOPPED

    def reaches(self, a: str, b: str) -> bool:
        """Whether members ``a`` and ``b`` see each other (both running, neither isolated)."""
        members = self.cluster.members
        if not (self._running(members[a]) and self._running(members[b])):
            return False
        return a == b or (a not in self.isolated and b not in self.isolated)

    def side(self, address: str) -> list[str]:
        """The running members ``address`` sees (itself included), in member order."""
        return [other for other in self.cluster.members if self.reaches(address, other)]

    def has_majority(self, members: list[str]) -> bool:
        return len(members) * 2 > len(self.cluster.members)

    def isolate(self, address: str, now: float) -> None:
        """Cut ``address`` off from the other members (not from clients)."""
        self.advance(now)
        self.isolated.add(address)
        self.unsettle(now)

    def reconnect(self, address: str, now: float) -> None:
        self.isolated.discard(address)
        self.advance(now)
        self.unsettle(now)

    def unsettle(self, now: float) -> None:
        """Members lost or regained sight of each other: an election may follow after the
        election timeout (counted from the latest change: a primary that has just lost its
        majority does not step down before the timeout, whatever happened before)."""
        self._unsettled_since = now

    def initiated(self) -> None:
        """The set was initiated: every member has the first entry."""
        for address in self.cluster.members:
            self._applied[address] = self.end
        self._recompute_commit_point()

    def stepped_down(self, address: str) -> None:
        """A primary stepped down: it has applied everything it wrote."""
        self._applied[address] = self.end

    # --- positions -------------------------------------------------------------------------

    @property
    def end(self) -> Timestamp:
        last = self.cluster.oplog.last
        return last.ts if last is not None else _ZERO

    def applied(self, address: str) -> Timestamp:
        """How far ``address`` has applied the oplog (the primary: all of it)."""
        if address == self.cluster.primary:
            return self.end
        return min(self._applied.get(address, _ZERO), self.end)

    @property
    def commit_point(self) -> Timestamp:
        """The majority commit point: the newest entry a majority of the members applied."""
        return self._commit_point

    def _recompute_commit_point(self) -> bool:
        positions = sorted((self.applied(a) for a in self.cluster.members), reverse=True)
        majority = len(positions) // 2 + 1
        point = positions[majority - 1]
        if point > self._commit_point:
            self._commit_point = point
            return True
        return False

    def satisfied(self, ts: Timestamp, w: int | str) -> bool:
        """Whether the entry at ``ts`` is replicated as write concern ``w`` asks (a number of
        members, or ``"majority"``)."""
        if w == "majority":
            return self.commit_point >= ts
        count = sum(1 for a in self.cluster.members if self.applied(a) >= ts)
        return isinstance(w, int) and count >= w

    def appended(self, entry: OplogEntry, now: float) -> None:
        """An entry was written at ``now``: members with no lag that reach the primary apply it
        at once."""
        self._written_ts.append(entry.ts)
        self._written_at.append(now)
        primary = self.cluster.primary
        for address, member in self.cluster.members.items():
            if address == primary:
                continue
            if member.lag <= 0 and primary is not None and self.reaches(address, primary):
                self._applied[address] = entry.ts
        self._recompute_commit_point()

    def advance(self, now: float) -> bool:
        """Let each secondary apply what it can by ``now``; True when the commit point moved."""
        primary = self.cluster.primary
        end = self.end
        for address, member in self.cluster.members.items():
            if address == primary or not self._running(member):
                continue
            current = self._applied.get(address, _ZERO)
            if primary is not None and self.reaches(address, primary):
                # (a hair of slack: the wait that woke at write time + lag must find it applied)
                target = self._written_by(now - member.lag + 1e-9) if member.lag > 0 else end
            else:  # no primary in sight: only what a member it reaches has applied
                target = max((self._applied.get(o, _ZERO) for o in self.side(address)), default=current)
            if target > current:
                self._applied[address] = min(target, end)
        self._forget_applied()
        return self._recompute_commit_point()

    def _written_by(self, when: float) -> Timestamp:
        index = bisect.bisect_right(self._written_at, when)
        return self._written_ts[index - 1] if index else _ZERO

    def _forget_applied(self) -> None:
        """Keep the write times of entries some member has still to apply, no more."""
        oldest = min((self.applied(a) for a in self.cluster.members), default=_ZERO)
        keep = bisect.bisect_left(self._written_ts, oldest)
        if keep > 1:
            del self._written_ts[: keep - 1]
            del self._written_at[: keep - 1]

    def next_progress(self, now: float, *, until: float | None = None) -> float | None:
        """When a lagging secondary that reaches the primary applies its next entry, or
        ``until`` if that is sooner (None: neither will come without a change in who reaches
        whom): when a wait for replication looks again."""
        primary = self.cluster.primary
        if primary is None:
            return until
        soonest = until
        for address, member in self.cluster.members.items():
            if address == primary or member.lag <= 0 or not self.reaches(address, primary):
                continue
            index = bisect.bisect_right(self._written_ts, self._applied.get(address, _ZERO))
            if index < len(self._written_at):
                at = max(now + 1e-6, self._written_at[index] + member.lag)
                soonest = at if soonest is None else min(soonest, at)
        return soonest

    # --- elections -------------------------------------------------------------------------

    def best_candidate(self, sides_of: list[str]) -> str | None:
        """The member a majority side would elect among ``sides_of`` (candidates in order of
        preference): the first of the most up-to-date, on a side with a majority."""
        best: str | None = None
        for address in sides_of:
            if not self._running(self.cluster.members[address]) or not self.has_majority(self.side(address)):
                continue
            if best is None or self.applied(address) > self.applied(best):
                best = address
        return best

    def due_election(self, now: float) -> tuple[bool, str | None] | None:
        """After the election timeout since members lost sight of each other: whether the
        primary steps down (it cannot see a majority) and whom a majority side elects (None:
        nobody can be).  None: nothing is due yet."""
        since = self._unsettled_since
        if since is None or now < since + self.election_timeout:
            return None
        self._unsettled_since = None
        primary = self.cluster.primary
        keeps = primary is not None and self.has_majority(self.side(primary))
        if keeps:
            return (False, None)
        return (primary is not None, self.best_candidate(list(self.cluster.members)))

    def catch_up(self, winner: str, now: float) -> None:
        """``winner`` is about to become primary: it takes the newest entry its side applied,
        and what is past that is rolled back."""
        side = self.side(winner)
        point = max((self._applied.get(a, _ZERO) for a in side), default=_ZERO)
        old = self.cluster.primary
        if old is not None and old in side:
            point = self.end
        if point < self.end:
            self.roll_back(point, now)
        self._applied[winner] = self.end

    def roll_back(self, point: Timestamp, now: float) -> None:
        """Undo the entries after ``point`` (see the module documentation)."""
        cluster = self.cluster
        oplog = cluster.oplog
        keep = oplog.index_from(Timestamp(point.time, point.inc + 1))
        undone = tuple(oplog.entries[keep:])
        if not undone:
            return
        del oplog.entries[keep:]
        for entry in reversed(undone):
            for op in reversed(entry.operations()):
                self._undo(op)
            if entry.lsid is not None and entry.txn_number is not None:
                cluster.sessions.forget(entry.lsid, entry.txn_number)
                cluster.transactions.forget_committed(entry.lsid, entry.txn_number)
        cut = bisect.bisect_right(self._written_ts, point)
        del self._written_ts[cut:]
        del self._written_at[cut:]
        holders = [a for a in cluster.members if self._applied.get(a, _ZERO) > point]
        for address in cluster.members:
            if self._applied.get(address, _ZERO) > point:
                self._applied[address] = point
        self.rollbacks.append(RollbackFile(",".join(holders) or "?", undone, now))

    def _undo(self, op: OplogEntry) -> None:
        database, _, name = op.ns.partition(".")
        cluster = self.cluster
        if op.op in ("i", "u", "d") and op.document_key is not None:
            collection = cluster.collection(database, name)
            if collection is not None:
                before = copy_value(op.before) if op.before is not None else None
                collection.put_raw(hashable_key(op.document_key.get("_id")), before)
        elif op.op == "c" and op.kind == "create" and isinstance(op.command, dict):
            created = op.command.get("create")
            collections = cluster.databases.get(database, {})
            if isinstance(created, str) and created in collections:
                del collections[created]
        # other catalogue changes are not undone (the simulator's workloads do not roll them
        # back; mongod would): they stay, and the rollback file still lists them
