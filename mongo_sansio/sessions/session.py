"""The client side of one session: what every runtime's ``ClientSession`` wraps.

A :class:`Session` is created by a client (``start_session``: explicit) or by an operation that
was given none (implicit).  It is bound to a :class:`~.server_session.ServerSession` from the
client's pool when its first command is sent, and gives it back when it ends (an implicit
session: when its operation, and any cursor that operation opened, is done).

It remembers:

* the highest ``$clusterTime`` and the ``operationTime`` of its replies (causal consistency:
  a read in a causally consistent session carries ``afterClusterTime: operation_time``);
* for a snapshot session, the ``atClusterTime`` its first read was given;
* the transaction state (:mod:`.transaction`'s table) and the transaction's options;
* who uses it: ``owner`` (the client core that made it: a session is never used with another
  client), ``in_use`` (an operation is running with it: a second one at the same time is a
  clear error, never a corrupt txnNumber), ``cursor_holds`` (open cursors that still need it);
* a transaction whose end was cut (``cut_txn_number``): its commit or abort was cancelled
  (a cancelled task, a timeout around the call, KeyboardInterrupt) before the server's answer
  was known, so the server may still hold it open, locking the documents it wrote; the client
  aborts it in the background (:func:`mongo_sansio.ops.transactions.abort_cut_transaction`)
  and ``cut_outcome`` then says what the server did: ``"aborted"`` or ``"committed"`` (None
  while unknown).  A commit retried by the user meanwhile gets the server's answer as the
  Transactions spec says (success, or NoSuchTransaction with TransientTransactionError once
  the abort won).

Inputs: the options, replies' times, the transaction table's events.  Outputs: the fields
:mod:`.commands` puts on commands.  Pure: no clock or randomness (times are arguments).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.bson import Timestamp
from mongo_sansio.errors import ConfigurationError, InvalidOperation
from mongo_sansio.sessions.cluster_time import later_cluster_time, timestamp_key
from mongo_sansio.sessions.server_session import ServerSession
from mongo_sansio.sessions.transaction import (
    ABORT,
    COMMIT,
    OPERATION,
    RETRY_FIRST,
    START,
    TransactionOptions,
    TransactionState,
    next_state,
)

__all__ = ["Session", "SessionOptions"]

# (one tuple made once: building it from the enum's attributes at every call cost 6x the test)
_ACTIVE_STATES = (TransactionState.STARTING, TransactionState.IN_PROGRESS)


class SessionOptions:
    """PyMongo's ``SessionOptions``: ``causal_consistency`` (default True unless
    ``snapshot``), ``default_transaction_options``, ``snapshot``; and the snapshot sessions
    spec's ``snapshot_time`` (a Timestamp: the snapshot to read at, with ``snapshot`` only)."""

    def __init__(
        self,
        causal_consistency: bool | None = None,
        default_transaction_options: TransactionOptions | None = None,
        snapshot: bool | None = False,
        snapshot_time: Timestamp | None = None,
    ) -> None:
        if snapshot_time is not None:
            if not snapshot:
                raise ConfigurationError("snapshot_time requires a snapshot session (snapshot=True)")
            if not isinstance(snapshot_time, Timestamp):
                key = timestamp_key(snapshot_time)  # (PyMongo's bson.Timestamp: made ours)
                if key is None:
                    raise TypeError(
                        f"snapshot_time must be a Timestamp, not {type(snapshot_time).__name__}"
                    )
                snapshot_time = Timestamp(*key)
        if snapshot:
            if causal_consistency:
                raise ConfigurationError(
                    "snapshot reads and causal consistency are mutually exclusive"
                )
            causal_consistency = False
        elif causal_consistency is None:
            causal_consistency = True
        if default_transaction_options is not None and not isinstance(
            default_transaction_options, TransactionOptions
        ):
            raise TypeError(
                "default_transaction_options must be an instance of TransactionOptions, not "
                f"{type(default_transaction_options).__name__}"
            )
        self._causal_consistency = causal_consistency
        self._default_transaction_options = default_transaction_options
        self._snapshot = bool(snapshot)
        self._snapshot_time = snapshot_time

    @property
    def causal_consistency(self) -> bool:
        return self._causal_consistency

    @property
    def default_transaction_options(self) -> TransactionOptions | None:
        return self._default_transaction_options

    @property
    def snapshot(self) -> bool:
        return self._snapshot

    @property
    def snapshot_time(self) -> Timestamp | None:
        return self._snapshot_time


class Session:
    """One logical session (see the module docstring)."""

    def __init__(
        self,
        owner: object,
        *,
        implicit: bool,
        causal_consistency: bool | None = None,
        snapshot: bool = False,
        default_transaction_options: TransactionOptions | None = None,
        snapshot_time: Timestamp | None = None,
    ) -> None:
        self.options = SessionOptions(
            causal_consistency, default_transaction_options, snapshot, snapshot_time
        )
        self.owner = owner
        self.implicit = implicit
        self.snapshot = snapshot
        self.causal_consistency = False if implicit or snapshot else causal_consistency is not False
        self.default_transaction_options = default_transaction_options
        self.server_session: ServerSession | None = None
        self.cluster_time: Mapping[str, Any] | None = None
        self.operation_time: Any = None
        # the snapshot's atClusterTime: given, or that of the first snapshot read's reply
        self.snapshot_time: Any = snapshot_time
        self.transaction_state = TransactionState.NONE
        self.transaction_options: TransactionOptions | None = None
        self.ended = False
        self.in_use = False
        self.cursor_holds = 0
        #: the txnNumber of a transaction whose commit or abort was cut (see above), or None
        self.cut_txn_number: int | None = None
        #: what the server did with that transaction, once the background abort learned it
        self.cut_outcome: str | None = None
        #: the background abort of that transaction is still to be started
        self.cut_abort_due = False
        #: load-balanced mode: the connection the transaction is pinned to (a
        #: :class:`mongo_sansio.client.pinning.Pin`, released by :meth:`unpin`), or None
        self.pinned_connection: Any = None
        #: the mongos a sharded transaction is pinned to (its commands all go there), or None
        self.pinned_address: tuple[str, int] | None = None
        #: the last ``recoveryToken`` a mongos gave in the transaction (sent with its
        #: commitTransaction and abortTransaction, so another mongos can finish it)
        self.recovery_token: Mapping[str, Any] | None = None

    # -- state ----------------------------------------------------------------------------------

    @property
    def session_id(self) -> Mapping[str, Any] | None:
        """The ``lsid`` document (None until the session's first command is sent)."""
        return None if self.server_session is None else self.server_session.session_id

    @property
    def in_transaction(self) -> bool:
        """A transaction was started and is neither committed nor aborted."""
        return self.transaction_state in _ACTIVE_STATES

    @property
    def txn_number(self) -> int | None:
        return None if self.server_session is None else self.server_session.txn_number

    def require_usable(self, owner: object) -> None:
        """Refuse a session that ended or belongs to another client."""
        if self.ended:
            raise InvalidOperation("Cannot use ended session")
        if owner is not self.owner:
            raise InvalidOperation("Can only use session with the MongoClient that started it")

    # -- times ----------------------------------------------------------------------------------

    def advance_cluster_time(self, cluster_time: Any) -> None:
        """Keep ``cluster_time`` if it is later than the session's (PyMongo's method)."""
        if not isinstance(cluster_time, Mapping):
            raise TypeError("cluster_time must be a mapping (a $clusterTime document)")
        if timestamp_key(cluster_time.get("clusterTime")) is None:
            raise ValueError("invalid cluster_time: its clusterTime must be a Timestamp")
        self.cluster_time = later_cluster_time(self.cluster_time, cluster_time)

    def advance_operation_time(self, operation_time: Any) -> None:
        """Keep ``operation_time`` if it is later than the session's (PyMongo's method)."""
        key = timestamp_key(operation_time)
        if key is None:
            raise TypeError("operation_time must be a Timestamp")
        current = timestamp_key(self.operation_time)
        if current is None or key > current:
            self.operation_time = operation_time

    def absorb_reply(self, reply: Mapping[str, Any]) -> None:
        """Learn the times of a reply (``ok: 0`` replies carry them too)."""
        # (later_cluster_time keeps the current one when the reply's is not a valid one)
        self.cluster_time = later_cluster_time(self.cluster_time, reply.get("$clusterTime"))
        operation_time = reply.get("operationTime")
        if timestamp_key(operation_time) is not None:
            self.advance_operation_time(operation_time)
        if self.snapshot and self.snapshot_time is None:
            self.snapshot_time = _at_cluster_time(reply)

    # -- transactions ---------------------------------------------------------------------------

    def start_transaction(self, options: TransactionOptions) -> None:
        if self.snapshot:
            raise InvalidOperation("Transactions are not supported in snapshot sessions")
        if _unacknowledged(options.write_concern):
            # the transaction's write concern applies at commit, which w:0 could not report
            raise ConfigurationError("transactions do not support unacknowledged write concern")
        self.transaction_state = next_state(self.transaction_state, START)
        self.transaction_options = options
        self.unpin()
        self.recovery_token = None
        # (a transaction whose end was cut is the server's to abort now: the new txnNumber
        # aborts it there at the new transaction's first command)
        self.cut_txn_number = None
        self.cut_outcome = None
        if self.server_session is not None:
            self.server_session.advance_txn_number()

    def unpin(self) -> None:
        """Let the next command of the session go to any mongos, and give back the connection
        a transaction pinned in load-balanced mode (idempotent). Transactions spec, "Mongos
        Pinning": on a new transaction, a transient or unknown-commit error, a commit retry,
        an operation outside the transaction."""
        self.pinned_address = None
        pin, self.pinned_connection = self.pinned_connection, None
        if pin is not None:
            pin.release()

    def operation_sent(self) -> None:
        self.transaction_state = next_state(self.transaction_state, OPERATION)

    @property
    def starting_transaction(self) -> bool:
        """A transaction was started and none of its commands was sent yet."""
        return self.transaction_state is TransactionState.STARTING

    def retry_first_command(self) -> None:
        """The transaction's first command is sent again (after a retryable overload error):
        it carries ``startTransaction`` again."""
        self.transaction_state = next_state(self.transaction_state, RETRY_FIRST)

    def commit(self) -> None:
        self.transaction_state = next_state(self.transaction_state, COMMIT)

    def abort(self) -> None:
        self.transaction_state = next_state(self.transaction_state, ABORT)

    def end_cut(self) -> bool:
        """The commit or abort of the current transaction was cut before its answer was known
        (not a library error: a cancellation).  True when the server may hold the transaction
        open (a command of it was sent) and nobody is aborting it yet: the client must then
        abort it."""
        server_session = self.server_session
        if server_session is None or self.cut_txn_number == server_session.txn_number:
            return False
        self.cut_txn_number = server_session.txn_number
        self.cut_outcome = None
        self.cut_abort_due = True
        return True

    def cut_resolved(self, txn_number: int, outcome: str | None) -> None:
        """The background abort of transaction ``txn_number`` learned ``outcome``
        ("aborted", "committed"; None: the server could not be reached)."""
        if self.cut_txn_number == txn_number and outcome is not None:
            self.cut_txn_number = None
            self.cut_outcome = outcome

    def __repr__(self) -> str:
        kind = "implicit" if self.implicit else "explicit"
        return f"Session({kind}, transaction={self.transaction_state.value}, ended={self.ended})"


def _unacknowledged(concern: Any) -> bool:
    """Whether a write concern (ours, PyMongo-shaped, or a document) is ``w: 0``."""
    if isinstance(concern, Mapping):
        return concern.get("w") == 0
    return getattr(concern, "acknowledged", True) is False


def _at_cluster_time(reply: Mapping[str, Any]) -> Any:
    """A snapshot read's ``atClusterTime`` (at the top of the reply or in its cursor)."""
    value = reply.get("atClusterTime")
    if value is None:
        cursor = reply.get("cursor")
        if isinstance(cursor, Mapping):
            value = cursor.get("atClusterTime")
    return value if timestamp_key(value) is not None else None
