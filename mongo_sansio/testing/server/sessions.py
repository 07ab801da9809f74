"""Server sessions and retryable writes: the first reply of each (lsid, txnNumber) is kept.

Inputs: a write command's ``lsid`` and ``txnNumber`` before it runs (:meth:`Sessions.replay`)
and its reply after (:meth:`Sessions.record`); ``endSessions`` / ``killAllSessions``.
A command a mongos sends a shard names its statements' ids (``stmtIds``: their indexes in the
client's command); mongos may send a shard several commands of one retryable write (an
ordered write goes run by run), so the record is kept per (lsid, txnNumber, first stmtId) --
mongod keeps one per statement; a driver's own command starts at statement 0.
Outputs: the stored reply for a retried write (the write is not applied again), or None when
the write is new.  Transactions (:mod:`.transactions`) share the session's txnNumber order.  A txnNumber lower than the session's newest answers
TransactionTooOld (225), as mongod does.

The records are cluster-wide (mongod replicates them in ``config.transactions``), so a retry
sent to a new primary after a failover is recognised too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.bson import Binary, decode, encode
from mongo_sansio.testing.engine import CommandError

__all__ = ["Sessions", "first_statement", "session_key"]


def session_key(lsid: Any) -> bytes | None:
    """A hashable key for an lsid document (its BSON bytes), None when absent or malformed."""
    if not isinstance(lsid, Mapping) or "id" not in lsid:
        return None
    try:
        return encode({"id": lsid["id"]})
    except Exception:  # a value BSON cannot encode is no session at all
        return None


def first_statement(body: Mapping[str, Any]) -> int:
    """The id of a write command's first statement: its ``stmtIds``' first (a mongos's
    command to a shard), else 0."""
    ids = body.get("stmtIds")
    if isinstance(ids, list) and ids and isinstance(ids[0], int) and not isinstance(ids[0], bool):
        return ids[0]
    return 0


class Sessions:
    def __init__(self) -> None:
        self._latest: dict[bytes, int] = {}
        self._replies: dict[tuple[bytes, int, int], dict[str, Any]] = {}
        self.seen: set[bytes] = set()

    def touch(self, lsid: Any) -> None:
        key = session_key(lsid)
        if key is not None:
            self.seen.add(key)

    def listed(self, now: Any) -> list[dict[str, Any]]:
        """``$listLocalSessions``'s documents: one per session seen, named by its id and the
        SHA-256 of its user (the simulator has one user: 32 zero bytes); ``lastUse`` is
        ``now`` (the simulator does not keep when each was last used)."""
        anyone = Binary(bytes(32))
        return [
            {"_id": {"id": decode(key)["id"], "uid": anyone}, "lastUse": now}
            for key in sorted(self.seen)
        ]

    def replay(self, lsid: Any, txn_number: int, statement: int = 0) -> dict[str, Any] | None:
        key = session_key(lsid)
        if key is None:
            raise CommandError(
                50768, "Location50768", "Transaction numbers are only allowed on a replica set member or mongos"
            )
        latest = self._latest.get(key)
        if latest is not None and txn_number < latest:
            raise CommandError(
                225, "TransactionTooOld",
                f"Retryable write with txnNumber {txn_number} is prohibited on session because a newer "
                f"retryable write with txnNumber {latest} has already started on this session.",
            )
        stored = self._replies.get((key, txn_number, statement))
        return None if stored is None else dict(stored)

    def latest(self, lsid: Any) -> int | None:
        """The newest txnNumber the session has used (retryable write or transaction)."""
        key = session_key(lsid)
        return None if key is None else self._latest.get(key)

    def advance(self, lsid: Any, txn_number: int) -> None:
        """A transaction started with ``txn_number``: older numbers are now too old."""
        key = session_key(lsid)
        if key is not None:
            self._latest[key] = max(txn_number, self._latest.get(key, txn_number))

    def record(self, lsid: Any, txn_number: int, reply: dict[str, Any], statement: int = 0) -> None:
        key = session_key(lsid)
        if key is None:
            return
        self._latest[key] = max(txn_number, self._latest.get(key, txn_number))
        self._replies[(key, txn_number, statement)] = dict(reply)

    def forget(self, lsid: Any, txn_number: int) -> None:
        """The write ``txn_number`` of ``lsid`` was rolled back: a retry runs it again."""
        key = session_key(lsid)
        if key is None:
            return
        # a write's record is kept per run of statements (its first stmtId): forget them all
        for stored in [k for k in self._replies if k[0] == key and k[1] == txn_number]:
            del self._replies[stored]

    def end(self, lsids: Any) -> None:
        """endSessions: mongod keeps retryable-write history until the session expires, so
        only the liveness record goes."""
        for lsid in lsids if isinstance(lsids, list) else []:
            key = session_key(lsid)
            if key is not None:
                self.seen.discard(key)

    def kill_all(self) -> None:
        self.seen.clear()
