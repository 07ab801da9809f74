"""Multi-document transactions, as a replica-set mongod (7.0/8.0) runs them.

Inputs: each command's ``lsid``, ``txnNumber``, ``autocommit``, ``startTransaction``,
``readConcern`` and ``writeConcern`` (:func:`enter`, called by the dispatcher before the
handler), commitTransaction / abortTransaction, endSessions / killSessions, a stepdown, and
``now`` (:meth:`Transactions.expire`, for ``transactionLifetimeLimitSeconds``).  Outputs: the
:class:`Transaction` a command runs in (its :class:`SnapshotView` is the data the command sees),
the errors mongod gives (NoSuchTransaction 251, TransactionTooOld 225, TransactionCommitted
256, OperationNotSupportedInTransaction 263, WriteConflict 112, InvalidOptions 72), the error
labels of transaction statements, and, at commit, the transaction's writes applied to the
committed collections with ONE oplog entry (``applyOps``) carrying the session.

Theory of operation.  Committed data lives in the cluster's collections; every committed
document write is in the oplog with its pre- and post-image.  A transaction reads at a
snapshot: the oplog Timestamp when it started.  The first time it touches a collection it
clones the committed collection and undoes, newest first, every later oplog write to it, so the
clone is the collection as it was at the snapshot; its own writes then go to that clone (it
sees them, nobody else does) and are recorded, in order, for the commit.  Before a transaction
writes a document it takes the document's lock: a lock held by another open transaction, or a
committed write to the document after the snapshot, is a WriteConflict (the transaction is
aborted, the error carries TransientTransactionError).  A write outside transactions to a
locked document waits until the transaction ends (:class:`WriteBlocked`, turned into a wait by
the command handlers), as mongod's does.  Aborting discards the clones and releases the locks.

What this module must not know: how replies are framed or labelled beyond the transaction
labels, nor the wire.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from mongo_sansio.bson import Binary, Timestamp
from mongo_sansio.testing.engine import Collection, CommandError, WriteEvent
from mongo_sansio.testing.engine.order import copy_value, hashable_key, render
from mongo_sansio.testing.server.oplog import OplogEntry
from mongo_sansio.testing.server.sessions import session_key

if TYPE_CHECKING:
    from mongo_sansio.testing.server.context import Context, Outcome, Waiting
    from mongo_sansio.testing.server.replset import ReplicaSet

__all__ = [
    "ALLOWED_IN_TRANSACTION", "SnapshotView", "Transaction", "Transactions", "WriteBlocked",
    "enter", "snapshot_read", "stamp_snapshot", "transaction_labels", "wait_for_transaction",
]

IN_PROGRESS = "in progress"
COMMITTED = "committed"
ABORTED = "aborted"

COMMIT = "commitTransaction"
ABORT = "abortTransaction"

# The commands mongod runs inside a multi-document transaction; the others answer 263.
ALLOWED_IN_TRANSACTION = frozenset({
    "find", "getMore", "killCursors", "insert", "update", "delete", "findAndModify", "findandmodify",
    "aggregate", "distinct", "create", "createIndexes", "bulkWrite", COMMIT, ABORT,
})
# mongod's transient transaction errors (a commit's retryable errors are retried instead: see
# transaction_labels): write conflicts, lock timeouts, a transaction that is gone, a snapshot
# that is unavailable or too old, a prepared transaction in the way.
TRANSIENT_CODES = frozenset({112, 24, 251, 246, 239, 267})
READ_CONCERN_LEVELS = ("local", "majority", "snapshot")
_NO_TIME = Timestamp(0, 0)


def _error(code: int, name: str, message: str) -> CommandError:
    return CommandError(code, name, message)


def write_conflict() -> CommandError:
    return _error(112, "WriteConflict", "Caused by :: Write conflict during plan execution and yielding is disabled. "
                  ":: Please retry your operation or multi-document transaction.")


class WriteBlocked(Exception):
    """A write outside transactions met a document an open transaction has written: it must
    wait until that transaction commits or aborts."""

    def __init__(self, holder: Transaction) -> None:
        super().__init__("the document is locked by an open transaction")
        self.holder = holder


# --- snapshots -------------------------------------------------------------------------------


class SnapshotView:
    """The collections as they were at the cluster time ``at`` (plus, for a transaction, its
    own writes).  ``prepare`` is called with each collection the view makes (a transaction
    sets its write hooks there).  ``named``: the reply names the time it read at (a snapshot
    read's ``atClusterTime``; not a lagging member's own position, see .read_concern)."""

    def __init__(self, cluster: ReplicaSet, at: Timestamp,
                 prepare: Callable[[Collection], None] | None = None, *, named: bool = True) -> None:
        first = cluster.oplog.first_timestamp
        if first is not None and (first.time, first.inc) > (at.time, at.inc):
            raise _error(239, "SnapshotTooOld", f"Read timestamp {at} is older than the oldest available timestamp.")
        self.cluster = cluster
        self.at = at
        self.prepare = prepare
        self.named = named
        self.collections: dict[tuple[str, str], Collection] = {}
        self.created: list[tuple[str, str]] = []

    def collection(self, database: str, name: str, *, create: bool = False) -> Collection | None:
        key = (database, name)
        found = self.collections.get(key)
        if found is not None:
            return found
        first = self.cluster.oplog.first_timestamp
        if first is not None and first > self.at:
            # (the oplog lost the history this snapshot needs since the view was made)
            raise _error(239, "SnapshotTooOld", f"Read timestamp {self.at} is older than the oldest available timestamp.")
        committed = self.cluster.collection(database, name)
        if committed is None:
            if not create:
                return None
            found = Collection(database, name, id_factory=self.cluster.new_object_id)
            self.created.append(key)
        else:
            found = committed.clone()
            self._undo_since(found, f"{database}.{name}")
        if self.prepare is not None:
            self.prepare(found)
        self.collections[key] = found
        return found

    def _undo_since(self, collection: Collection, ns: str) -> None:
        for entry in reversed(self.cluster.oplog.after(self.at)):
            for op in reversed(entry.operations()):
                if op.ns == ns and op.op in ("i", "u", "d") and op.document_key is not None:
                    before = copy_value(op.before) if op.before is not None else None
                    collection.put_raw(hashable_key(op.document_key.get("_id")), before)

    def names(self, database: str) -> list[str]:
        """The collections of ``database`` this view can see (committed ones and its own)."""
        names = list(self.cluster.databases.get(database, {}))
        names += [name for db, name in self.created if db == database and name not in names]
        return names


# --- transactions ----------------------------------------------------------------------------


@attrs.define(eq=False)
class Transaction:
    session: bytes  # the session's key (see sessions.session_key)
    lsid: Any  # the lsid document as the client sent it
    number: int
    started: float  # monotonic seconds
    view: SnapshotView
    state: str = IN_PROGRESS
    ops: list[OplogEntry] = attrs.Factory(list)  # the writes, in order, for the commit entry
    locks: set[tuple[str, Any]] = attrs.Factory(set)
    commit_reply: dict[str, Any] | None = None
    abort_reason: str = ""
    api: Any = None  # the Stable API parameters of its first command (an ApiParameters)

    @property
    def open(self) -> bool:
        return self.state == IN_PROGRESS


class Transactions:
    """Every session's newest transaction and the document locks of the open ones."""

    def __init__(self, cluster: ReplicaSet) -> None:
        self.cluster = cluster
        self.by_session: dict[bytes, Transaction] = {}
        self.locks: dict[tuple[str, Any], Transaction] = {}

    @property
    def lifetime(self) -> float:
        value = self.cluster.parameters.get("transactionLifetimeLimitSeconds", 60)
        return float(value) if isinstance(value, int | float) else 60.0

    def deadline(self, txn: Transaction) -> float:
        return txn.started + self.lifetime

    # --- life cycle ------------------------------------------------------------------------

    def start(self, ctx: Context, key: bytes, number: int, at: Timestamp | None) -> Transaction:
        old = self.by_session.get(key)
        if old is not None and old.open:
            self.abort(old, "a newer transaction started on the session")
        snapshot = at if at is not None else self.cluster.oplog.last_timestamp
        txn = Transaction(key, _oplog_lsid(ctx), number, ctx.now, SnapshotView(self.cluster, snapshot), api=ctx.api)
        txn.view.prepare = lambda collection: self._hook(txn, collection)
        self.by_session[key] = txn
        self.cluster.sessions.advance(ctx.request.lsid, number)
        return txn

    def abort(self, txn: Transaction, reason: str) -> None:
        if not txn.open:
            return
        txn.state = ABORTED
        txn.abort_reason = reason
        self._release(txn)

    def commit(self, txn: Transaction, now: float) -> None:
        """Apply the transaction's writes to the committed collections and log them as one
        applyOps entry (none for a transaction that wrote nothing)."""
        cluster = self.cluster
        ops: list[OplogEntry] = []
        for database, name in txn.view.created:
            if cluster.collection(database, name) is None:
                target = cluster.install(database, name)
                ops.append(_sub_entry("c", "create", f"{database}.$cmd", command={"create": name}, ui=target.uuid))
                private = txn.view.collections.get((database, name))
                if private is not None:  # (a create in the transaction may have given one)
                    target.set_collation(private.collation)
                    target.validation = private.validation
                indexes = [spec for spec in (private.list_indexes() if private is not None else []) if spec["name"] != "_id_"]
                if indexes:
                    target.create_indexes(indexes)
                    ops.append(_sub_entry("c", "createIndexes", f"{database}.$cmd",
                                          command={"createIndexes": name, "indexes": indexes}, ui=target.uuid))
        for op in txn.ops:
            database, _, name = op.ns.partition(".")
            found = cluster.collection(database, name)  # (an empty Collection is falsy)
            target = found if found is not None else cluster.install(database, name)
            assert op.document_key is not None
            after = copy_value(op.after) if op.after is not None else None
            target.put_raw(hashable_key(op.document_key.get("_id")), after)
            # (a collection the transaction created has its UUID from the commit on)
            ops.append(attrs.evolve(op, ui=target.uuid))
        if ops:
            cluster.begin_write(now, txn.lsid, txn.number)
            cluster.log("c", "applyOps", "admin.$cmd", command={"applyOps": len(ops)}, ops=tuple(ops))
        txn.state = COMMITTED
        self._release(txn)

    def _release(self, txn: Transaction) -> None:
        for lock in txn.locks:
            if self.locks.get(lock) is txn:
                del self.locks[lock]
        txn.locks.clear()
        txn.view.collections.clear()
        self.cluster.changed()  # writes waiting for these locks look again

    def expire(self, now: float) -> None:
        """Abort the open transactions older than transactionLifetimeLimitSeconds."""
        for txn in list(self.by_session.values()):
            if txn.open and now >= self.deadline(txn):
                self.abort(txn, "exceeded transactionLifetimeLimitSeconds")

    def end_sessions(self, keys: set[bytes] | None) -> None:
        """endSessions / killSessions (``None``: killAllSessions) abort the open transactions."""
        for key, txn in list(self.by_session.items()):
            if keys is None or key in keys:
                self.abort(txn, "the session was ended")

    def forget_committed(self, lsid: Any, number: int) -> None:
        """The commit of transaction ``number`` of ``lsid`` was rolled back: the session no
        longer knows it (a retried commit answers NoSuchTransaction)."""
        key = session_key(lsid)
        txn = self.by_session.get(key) if key is not None else None
        if txn is not None and txn.number == number and txn.state == COMMITTED:
            del self.by_session[txn.session]

    def abort_all(self, reason: str) -> None:
        for txn in list(self.by_session.values()):
            self.abort(txn, reason)

    # --- write hooks -----------------------------------------------------------------------

    def _hook(self, txn: Transaction, collection: Collection) -> None:
        ns = collection.namespace

        def guard(key: Any) -> None:
            self._lock(txn, ns, key)

        def on_write(event: WriteEvent) -> None:
            source = event.after if event.after is not None else event.before
            assert source is not None
            op = {"insert": "i", "delete": "d"}.get(event.kind, "u")
            txn.ops.append(_sub_entry(op, event.kind, ns, document_key=self.cluster.document_key(ns, source), before=event.before,
                                      after=event.after, images=ns in self.cluster.image_namespaces))

        collection.guard = guard
        collection.on_write = on_write

    def _lock(self, txn: Transaction, ns: str, key: Any) -> None:
        if not txn.open:
            raise _no_such_transaction(txn.number, txn)
        lock = (ns, key)
        holder = self.locks.get(lock)
        if holder is txn:
            return
        if (holder is not None and holder.open) or self._changed_since(ns, key, txn.view.at):
            raise write_conflict()
        self.locks[lock] = txn
        txn.locks.add(lock)

    def _changed_since(self, ns: str, key: Any, at: Timestamp) -> bool:
        for entry in self.cluster.oplog.after(at):
            for op in entry.operations():
                if op.ns == ns and op.document_key is not None and hashable_key(op.document_key.get("_id")) == key:
                    return True
        return False

    def committed_guard(self, ns: str) -> Callable[[Any], None]:
        """The guard of a committed collection: a write to a document an open transaction
        holds waits for it."""

        def guard(key: Any) -> None:
            holder = self.locks.get((ns, key))
            if holder is not None and holder.open:
                raise WriteBlocked(holder)

        return guard


def _oplog_lsid(ctx: Context) -> dict[str, Any]:
    """The lsid as mongod logs it (and change events show it): the client's id and the
    ``uid``, the SHA-256 of the authenticated user's name (of "" without one)."""
    lsid = ctx.request.lsid
    user = ctx.state.user or ""
    return {"id": copy_value(lsid["id"]), "uid": Binary(hashlib.sha256(user.encode()).digest())}


def _sub_entry(op: str, kind: str, ns: str, **fields: Any) -> OplogEntry:
    """One operation of an applyOps entry (its time and session are the entry's)."""
    return OplogEntry(ts=_NO_TIME, t=0, wall=0.0, op=op, kind=kind, ns=ns, **fields)


def _no_such_transaction(number: int, txn: Transaction | None) -> CommandError:
    if txn is not None and txn.number == number and txn.state == ABORTED:
        message = f"Transaction with {{ txnNumber: {number} }} has been aborted."
        if txn.abort_reason:
            message += f" ({txn.abort_reason})"
    else:
        active = txn.number if txn is not None else -1
        message = (f"Given transaction number {number} does not match any in-progress transactions. "
                   f"The active transaction number is {active}")
    return _error(251, "NoSuchTransaction", message)


# --- the dispatcher's entry point -------------------------------------------------------------


def _same_api(ctx: Context, current: Transaction) -> None:
    """mongod compares a command's Stable API parameters with those of the transaction open on
    its session (kept with the transaction's resources) when it checks the session out, before
    it looks at the transaction number: any command with a txnNumber, in the transaction or
    not."""
    if ctx.api is not None and current.api is not None:
        # imported here: api_version imports context, which imports replset, which imports us
        from mongo_sansio.testing.server.api_version import check_same

        check_same(ctx.request.name, ctx.api, current.api, "the transaction's first command")


def enter(ctx: Context) -> Transaction | None:
    """The transaction ``ctx``'s command runs in, started when it carries startTransaction, or
    None for a command outside transactions.  Raises mongod's errors for a command that may
    not run (the transaction is gone, too old, committed; options not allowed here)."""
    body = ctx.body
    name = ctx.request.name
    if "autocommit" not in body:
        if "startTransaction" in body:
            raise _error(72, "InvalidOptions", "'startTransaction' requires 'autocommit: false'")  # code from memory
        if name in (COMMIT, ABORT):
            raise _error(50768, "Location50768", f"'{name}' must be run within a transaction")  # code from memory
        number = ctx.request.txn_number
        key = session_key(ctx.request.lsid)
        current = ctx.cluster.transactions.by_session.get(key) if key is not None else None
        if number is not None and current is not None and current.open:
            _same_api(ctx, current)
        if number is not None and current is not None and current.open and number > current.number:
            ctx.cluster.transactions.abort(current, "a newer retryable write started on the session")
        return None
    if body["autocommit"] is not False:
        raise _error(72, "InvalidOptions", "'autocommit' field can only be set to false")
    number = ctx.request.txn_number
    if number is None:
        raise _error(72, "InvalidOptions", "'autocommit' field requires a transaction number to also be specified")
    key = session_key(ctx.request.lsid)
    if key is None:
        raise _error(72, "InvalidOptions", "Transaction numbers are only allowed within a logical session")
    if name not in ALLOWED_IN_TRANSACTION:
        raise _error(263, "OperationNotSupportedInTransaction", f"Cannot run '{name}' in a multi-document transaction.")
    transactions = ctx.cluster.transactions
    transactions.expire(ctx.now)
    current = transactions.by_session.get(key)
    if current is not None and current.open:
        _same_api(ctx, current)
    latest = ctx.cluster.sessions.latest(ctx.request.lsid)
    if name not in (COMMIT, ABORT) and "writeConcern" in body:
        raise _error(72, "InvalidOptions", f"Cannot set write concern after starting a transaction: '{name}'")
    if "startTransaction" in body:
        if body["startTransaction"] is not True:
            raise _error(72, "InvalidOptions", "'startTransaction' field can only be set to true")
        if latest is not None and number < latest:
            raise _error(225, "TransactionTooOld",
                         f"Cannot start transaction {number} on session because a newer transaction with "
                         f"txnNumber {latest} has already started on this session.")
        if latest is not None and number == latest:
            # code from memory: mongod refuses to restart a transaction number already used
            raise _error(117, "ConflictingOperationInProgress",
                         f"Cannot start transaction with {{ txnNumber: {number} }} on session because a "
                         "transaction or retryable write with the same number has already started.")
        return transactions.start(ctx, key, number, _read_timestamp(ctx))
    if current is None or current.number != number:
        if latest is not None and number < latest:
            raise _error(225, "TransactionTooOld",
                         f"txnNumber {number} is less than last txnNumber {latest} seen in session")
        raise _no_such_transaction(number, current)
    if "readConcern" in body:
        raise _error(72, "InvalidOptions", "Only the first command in a transaction may specify a readConcern")
    if current.state == ABORTED:
        raise _no_such_transaction(number, current)
    if current.state == COMMITTED:
        if name == ABORT:
            raise _error(256, "TransactionCommitted", "Cannot call abortTransaction after calling commitTransaction.")
        if name != COMMIT:
            raise _error(256, "TransactionCommitted", f"Transaction with {{ txnNumber: {number} }} has been committed.")
    return current


def _read_timestamp(ctx: Context) -> Timestamp | None:
    """The snapshot a new transaction reads at: readConcern's atClusterTime (level snapshot),
    else the latest committed write.  afterClusterTime is already satisfied here (a
    secondary's read waited for it: .read_concern)."""
    read_concern = ctx.body.get("readConcern")
    if read_concern is None:
        return None
    if not isinstance(read_concern, Mapping):
        raise _error(14, "TypeMismatch", "BSON field 'readConcern' is the wrong type, expected type 'object'")
    level = read_concern.get("level", "local")
    if level not in READ_CONCERN_LEVELS:
        raise _error(72, "InvalidOptions", "The readConcern level must be either 'local' (default), 'majority' or "
                     "'snapshot' in order to run in a transaction")
    at = read_concern.get("atClusterTime")
    if at is None:
        return majority_snapshot(ctx.cluster) if level in ("majority", "snapshot") else None
    if level != "snapshot" or not isinstance(at, Timestamp):
        raise _error(72, "InvalidOptions", "readConcern atClusterTime must be a Timestamp, with level 'snapshot'")
    return at


# The commands that read at a snapshot outside transactions (readConcern level "snapshot").
SNAPSHOT_READS = frozenset({"find", "aggregate", "distinct"})
# Cursor continuations take any readConcern and read at their cursor's (drivers send a snapshot
# session's on them too, as PyMongo does).
_CURSOR_CONTINUATIONS = frozenset({"getMore", "killCursors"})


def majority_snapshot(cluster: ReplicaSet) -> Timestamp | None:
    """Where a read of majority-committed data (level majority or snapshot, no atClusterTime)
    reads when the majority commit point is behind the newest entry (replication lag, a
    cut-off primary); None when it is not (the latest then, as it always was)."""
    replication = cluster.replication
    point = replication.commit_point
    return point if point < replication.end else None


def snapshot_read(ctx: Context) -> SnapshotView | None:
    """A read outside transactions with readConcern level "snapshot": the data at its
    ``atClusterTime`` (else at the latest write, which the reply then names).  mongod allows
    it on find, aggregate and distinct of a replica set; afterClusterTime was waited for
    already (.read_concern).  Any other command is refused with mongod's 72
    "Command insert does not support { readConcern: ... } :: caused by :: read concern not
    supported" (the sessions spec's snapshot-sessions-unsupported-ops cases)."""
    read_concern = ctx.body.get("readConcern")
    if not isinstance(read_concern, Mapping) or read_concern.get("level") != "snapshot":
        return None
    if ctx.request.name in _CURSOR_CONTINUATIONS:
        return None
    if ctx.cluster.standalone:  # mongod 5.0+'s answer on a standalone
        raise _error(123, "NotAReplicaSet", "node needs to be a replica set member to use readConcern: snapshot")
    if ctx.request.name not in SNAPSHOT_READS:
        shown = render({**read_concern, "provenance": "clientSupplied"})
        raise _error(72, "InvalidOptions", f"Command {ctx.request.name} does not support {{ readConcern: {shown} }} "
                     ":: caused by :: read concern not supported")
    at = read_concern.get("atClusterTime")
    last = ctx.cluster.oplog.last_timestamp
    if at is None:
        at = majority_snapshot(ctx.cluster) or last
    elif not isinstance(at, Timestamp):
        raise _error(14, "TypeMismatch", "BSON field 'atClusterTime' is the wrong type, expected type 'timestamp'")
    elif (at.time, at.inc) > (last.time, last.inc):  # code and message from memory
        raise _error(72, "InvalidOptions", f"readConcern atClusterTime value {at} must not be greater than the "
                     f"current clusterTime {last}")
    return SnapshotView(ctx.cluster, at)


def stamp_snapshot(reply: dict[str, Any], view: SnapshotView) -> None:
    """A snapshot read's reply names the time it read at: in the cursor for find and
    aggregate, at the top for distinct."""
    if reply.get("ok") != 1.0 or not view.named:
        return
    cursor = reply.get("cursor")
    if isinstance(cursor, dict):
        cursor["atClusterTime"] = view.at
    else:
        reply["atClusterTime"] = view.at


def transaction_labels(ctx: Context, code: int | None, retryable_codes: frozenset[int]) -> list[str]:
    """The labels mongod puts on an error of a command run in a transaction: a retryable
    error of commit/abort is RetryableWriteError (a commit's transient error, such as
    NoSuchTransaction or WriteConflict, is TransientTransactionError); a statement's transient
    or retryable error is TransientTransactionError.  A writeConcernError is not labelled here."""
    if ctx.body.get("autocommit") is not False or code is None:
        return []
    if ctx.request.name in (COMMIT, ABORT):
        if code in retryable_codes:
            return ["RetryableWriteError"]
        if code in TRANSIENT_CODES and ctx.request.name == COMMIT:
            return ["TransientTransactionError"]
        return []
    if code in TRANSIENT_CODES or code in retryable_codes:
        return ["TransientTransactionError"]
    return []


def wait_for_transaction(ctx: Context, holder: Transaction, resume: Callable[[], Outcome]) -> Waiting:
    """A write blocked by ``holder``'s lock: wait until it commits or aborts (it is aborted at
    its lifetime limit at the latest), or until the command's maxTimeMS, then ``resume``."""
    from mongo_sansio.testing.server.context import Waiting

    transactions = ctx.cluster.transactions
    max_time = ctx.body.get("maxTimeMS")
    limit = ctx.now + float(max_time) / 1000.0 if isinstance(max_time, int | float) and max_time > 0 else None

    def deadline() -> float:
        expiry = transactions.deadline(holder)
        return min(expiry, limit) if limit is not None else expiry

    waiting = Waiting(deadline(), lambda now, timed_out: None)

    def poll(now: float, timed_out: bool) -> Outcome | None:
        transactions.expire(now)
        ctx.now = now
        if holder.open:
            if limit is not None and now >= limit:
                raise _error(50, "MaxTimeMSExpired", "operation exceeded time limit")
            waiting.deadline = deadline()
            return None
        return resume()

    waiting.poll = poll
    return waiting
