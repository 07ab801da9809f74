"""The replica set's one shared oplog: Timestamp-ordered entries, appended by every write.

Inputs: :meth:`Oplog.append` with an operation, a namespace, the documents, the term and the
wall-clock seconds of the write.  Outputs: :class:`OplogEntry` values (``oplog.entries``, in
Timestamp order) and :meth:`Oplog.next_timestamp`'s cluster times.

The entry shape (what the change-stream code reads; modelled on mongod's ``local.oplog.rs``):

========== =================================================================================
field       meaning
========== =================================================================================
ts          :class:`~mongo_sansio.bson.Timestamp` (wall seconds, increment), strictly rising
t           the term of the primary that wrote it (int)
wall        wall-clock seconds (float) of the write; ``wall_datetime`` gives a datetime
op          "i" insert, "u" update, "d" delete, "c" command, "n" noop
kind        the engine's finer kind: "insert", "update", "replace", "delete", or for "c" the
            command: "create", "drop", "dropDatabase", "renameCollection", "createIndexes",
            "dropIndexes"; for "n" the noop's purpose ("initiate", "periodic noop")
ns          "db.collection" ("db.$cmd" for database commands, "" for a noop)
ui          the UUID (Binary subtype 4) of the collection the entry writes or changes, as
            mongod's ``ui`` (None for dropDatabase, noops and the applyOps entry itself)
document_key {_id: ...} of the document written (None for commands and noops)
before      the document before the write (None for inserts), a pre-image copy
after       the document after the write (None for deletes), a post-image copy
command     for "c": the command's details, e.g. {"renameCollection": "db.old", "to": "db.new"}
            for a rename (with ``dropTarget``, the UUID of the target it replaced, if any)
lsid, txn_number  the session and transaction number of a retryable write or of a committed
            transaction (else None)
ops         for "c" "applyOps" (a committed transaction, one entry however many writes): the
            transaction's operations in order, as entries of their own (their ``ts``, ``wall``,
            ``lsid`` and ``txn_number`` are the transaction's: :meth:`OplogEntry.operations`)
images      True when the collection had changeStreamPreAndPostImages enabled at the write
            (a change stream may then serve ``before``/``after`` as pre- and post-images)
========== =================================================================================

Entries are never changed after they are appended.  ``max_entries`` bounds the oplog (the
oldest entries fall off, like a capped ``oplog.rs``): ``first_timestamp`` tells how far back it
still reaches, so a change stream resuming from before it can report ChangeStreamHistoryLost.
"""

from __future__ import annotations

import bisect
import datetime
from typing import Any

import attrs

from mongo_sansio.bson import Timestamp

__all__ = ["Oplog", "OplogEntry"]


@attrs.frozen
class OplogEntry:
    ts: Timestamp
    t: int
    wall: float
    op: str
    kind: str
    ns: str
    document_key: dict[str, Any] | None = None
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    command: dict[str, Any] | None = None
    ui: Any = None
    lsid: Any = None
    txn_number: int | None = None
    images: bool = False
    ops: tuple[OplogEntry, ...] = ()

    def operations(self) -> list[OplogEntry]:
        """The document and catalogue operations of this entry: itself, or for an applyOps
        entry its operations stamped with the entry's time and session."""
        if self.kind != "applyOps":
            return [self]
        return [attrs.evolve(op, ts=self.ts, wall=self.wall, t=self.t, lsid=self.lsid, txn_number=self.txn_number)
                for op in self.ops]

    @property
    def wall_datetime(self) -> datetime.datetime:
        return wall_datetime(self.wall)


def wall_datetime(wall: float) -> datetime.datetime:
    """A naive UTC datetime at millisecond precision (what BSON dates carry)."""
    epoch = datetime.datetime(1970, 1, 1)
    return epoch + datetime.timedelta(milliseconds=int(wall * 1000))


class Oplog:
    """Timestamp-ordered entries with a bounded length."""

    def __init__(self, max_entries: int = 100_000) -> None:
        self.entries: list[OplogEntry] = []
        self.max_entries = max_entries
        self._last = Timestamp(0, 0)

    @property
    def last_timestamp(self) -> Timestamp:
        return self._last

    @property
    def first_timestamp(self) -> Timestamp | None:
        return self.entries[0].ts if self.entries else None

    @property
    def last(self) -> OplogEntry | None:
        return self.entries[-1] if self.entries else None

    def next_timestamp(self, wall: float) -> Timestamp:
        """A cluster time after every one handed out: the wall second, or the last one's
        second with the next increment when the clock has not moved on (or went back)."""
        seconds = int(wall)
        if seconds > self._last.time:
            self._last = Timestamp(seconds, 1)
        else:
            self._last = Timestamp(self._last.time, self._last.inc + 1)
        return self._last

    def append(self, *, term: int, wall: float, op: str, kind: str, ns: str, **fields: Any) -> OplogEntry:
        entry = OplogEntry(ts=self.next_timestamp(wall), t=term, wall=wall, op=op, kind=kind, ns=ns, **fields)
        self.entries.append(entry)
        if len(self.entries) > self.max_entries:
            del self.entries[: len(self.entries) - self.max_entries]
        return entry

    def index_from(self, ts: Timestamp) -> int:
        """The index in :attr:`entries` of the first entry at or after ``ts`` (a binary
        search: a stream polling a long oplog costs what it has not read yet, not the oplog)."""
        key = (ts.time, ts.inc)
        return bisect.bisect_left(self.entries, key, key=lambda entry: (entry.ts.time, entry.ts.inc))

    def visible_at(self, wall: float) -> OplogEntry | None:
        """The newest entry written at or before ``wall`` (a lagging member's position)."""
        for entry in reversed(self.entries):
            if entry.wall <= wall:
                return entry
        return self.entries[0] if self.entries else None

    def after(self, ts: Timestamp) -> list[OplogEntry]:
        """Entries strictly after ``ts``, in order (scanned from the newest end, so a recent
        ``ts`` costs little)."""
        key = (ts.time, ts.inc)
        found: list[OplogEntry] = []
        for entry in reversed(self.entries):
            if (entry.ts.time, entry.ts.inc) <= key:
                break
            found.append(entry)
        found.reverse()
        return found
