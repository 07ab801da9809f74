"""Multi-shard transactions as a mongos runs them.

Inputs: the statements of a transaction (``lsid``, ``txnNumber``, ``autocommit: false``,
``startTransaction`` on the first) and its commitTransaction / abortTransaction.  Outputs: the
statements as each shard receives them (the first one a shard sees starts the transaction
there, with the transaction's read concern -- at the transaction's cluster time for
``snapshot`` -- and later ones continue it), ``recoveryToken`` on every reply once a shard
takes part, and the commit: every participant checked first (one aborted, and the whole
transaction is aborted with NoSuchTransaction, TransientTransactionError), then committed on
each; all of this happens under the simulator's one lock, so no reader sees part of it.

A statement failing on a shard aborts the transaction on the other participants (mongos
does).  The commit decision is kept where every router can read it (mongod's coordinator
shard keeps it): a commitTransaction retried on another mongos with the ``recoveryToken`` is
answered from it; without the token a router that did not run the transaction answers
NoSuchTransaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from mongo_sansio.bson import Timestamp
from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.server.context import Context
from mongo_sansio.testing.server.sessions import session_key

if TYPE_CHECKING:
    from mongo_sansio.testing.sharded.router import Router

__all__ = ["ABORT", "COMMIT", "RouterTransactions", "TxnRecord", "stamp"]

COMMIT = "commitTransaction"
ABORT = "abortTransaction"


@attrs.define
class TxnRecord:
    session: bytes
    number: int
    read_concern: Any
    at: Timestamp
    participants: list[str] = attrs.Factory(list)
    aborted: bool = False


def stamp(txn: TxnRecord, reply: dict[str, Any]) -> None:
    if txn.participants:
        reply["recoveryToken"] = {"recoveryShardId": txn.participants[0]}


def _no_such_transaction(number: int) -> CommandError:
    return CommandError(251, "NoSuchTransaction", f"Transaction {number} has been aborted.")


class RouterTransactions:
    """The transactions one router runs (keyed by session and transaction number)."""

    def __init__(self, router: Router) -> None:
        self.router = router
        self.records: dict[bytes, TxnRecord] = {}

    def current(self, ctx: Context) -> TxnRecord | None:
        if ctx.body.get("autocommit") is not False:
            return None
        key = session_key(ctx.request.lsid)
        number = ctx.request.txn_number
        record = self.records.get(key) if key is not None else None
        if record is None or record.number != number:
            return None
        return record

    def enter(self, ctx: Context) -> TxnRecord | None:
        if ctx.body.get("autocommit") is not False:
            return None
        key = session_key(ctx.request.lsid)
        number = ctx.request.txn_number
        if key is None or number is None:
            return None  # (the shard refuses it with its own error)
        if ctx.body.get("startTransaction") is True:
            started = TxnRecord(key, number, ctx.body.get("readConcern"), self.router.cluster.clock.last)
            self.records[key] = started
            return started
        record = self.current(ctx)
        if record is None or record.aborted:
            raise _no_such_transaction(number)
        return record

    def for_shard(self, ctx: Context, shard: str, body: Mapping[str, Any]) -> dict[str, Any]:
        record = self.current(ctx)
        out = dict(body)
        if record is None:
            return out
        out.pop("startTransaction", None)
        out.pop("readConcern", None)
        if shard not in record.participants:
            record.participants.append(shard)
            out["startTransaction"] = True
            concern = dict(record.read_concern) if isinstance(record.read_concern, Mapping) else None
            if concern is not None and concern.get("level") == "snapshot" and "atClusterTime" not in concern:
                concern["atClusterTime"] = record.at
            if concern is not None:
                out["readConcern"] = concern
        return out

    def after_shard(self, ctx: Context, shard: str, reply: Mapping[str, Any]) -> None:
        if reply.get("ok") != 1.0 or reply.get("writeErrors"):
            self.failed(ctx, reply)

    def failed(self, ctx: Context, reply: Mapping[str, Any]) -> None:
        """A statement failed: mongos aborts the transaction on every participant."""
        record = self.current(ctx)
        if record is None or record.aborted or ctx.request.name in (COMMIT, ABORT):
            return
        record.aborted = True
        self._abort_everywhere(ctx, record)

    def _abort_everywhere(self, ctx: Context, record: TxnRecord) -> list[dict[str, Any]]:
        replies = []
        for shard in record.participants:
            body = {ABORT: 1, "lsid": ctx.body.get("lsid"), "txnNumber": ctx.body.get("txnNumber"), "autocommit": False}
            try:
                replies.append(self.router.cluster.call(self.router.cluster.shards[shard], "admin", body, ctx.now,
                                                        user=ctx.state.user))
            except CommandError as error:
                replies.append(error.to_document())
        return replies

    # --- commit and abort --------------------------------------------------------------------

    def finish(self, ctx: Context) -> dict[str, Any]:
        name = ctx.request.name
        number = ctx.request.txn_number
        key = session_key(ctx.request.lsid)
        if ctx.body.get("autocommit") is not False or key is None or number is None:
            raise CommandError(50768, "Location50768", f"'{name}' must be run within a transaction")
        record = self.current(ctx)
        decisions = self.router.cluster.decisions
        if record is None:
            decided = decisions.get((key, number))
            if name == COMMIT and decided is not None and isinstance(ctx.body.get("recoveryToken"), Mapping):
                return dict(decided)
            raise _no_such_transaction(number)
        if name == ABORT:
            if not record.participants:
                raise _no_such_transaction(number)
            record.aborted = True
            replies = self._abort_everywhere(ctx, record)
            failures = [r for r in replies if r.get("ok") != 1.0]
            return failures[0] if failures else replies[0]
        if not record.participants:
            return {"ok": 1.0}
        self._check_all_open(ctx, record)
        replies = []
        for shard in record.participants:
            body = {k: v for k, v in self.router.body(ctx).items()}
            replies.append(self.router.cluster.call(self.router.cluster.shards[shard], "admin", body, ctx.now,
                                                    user=ctx.state.user))
        failures = [r for r in replies if r.get("ok") != 1.0]
        if failures:
            return failures[0]
        reply = dict(replies[0])
        for other in replies[1:]:
            if "writeConcernError" in other and "writeConcernError" not in reply:
                reply["writeConcernError"] = other["writeConcernError"]
        decisions[(key, number)] = {"ok": 1.0}
        return reply

    def _check_all_open(self, ctx: Context, record: TxnRecord) -> None:
        """Before committing anywhere: a participant whose part was aborted (a lifetime limit,
        a stepdown) aborts the whole transaction.  So does, in a transaction of several
        shards, a participant whose primary cannot reach a majority of its shard: mongos's
        two-phase commit prepares on every participant with ``w:majority`` first, and such a
        prepare fails (the primary steps down at its election timeout; here at once), so the
        coordinator decides abort and no participant commits a part a rollback could undo."""
        several = len(record.participants) > 1
        for shard in record.participants:
            replica_set = self.router.cluster.shards[shard]
            txn = replica_set.transactions.by_session.get(record.session)
            aborted = txn is None or txn.number != record.number or txn.state == "aborted"
            if aborted or (several and not _can_prepare(replica_set)):
                record.aborted = True
                self._abort_everywhere(ctx, record)
                raise _no_such_transaction(record.number)


def _can_prepare(shard: Any) -> bool:
    """Whether ``shard``'s primary sees a majority of its members (a ``w:majority`` prepare
    can be acknowledged)."""
    primary = shard.primary
    replication = shard.replication
    return primary is not None and bool(replication.has_majority(replication.side(primary)))
