"""Ending transactions, and the convenient API's decisions (Transactions and Convenient API for
Transactions specs).

Flows (run with the session as the operation's explicit session):

* :func:`commit_transaction` -- ``commitTransaction`` on the primary with the transaction's
  write concern and ``maxTimeMS`` (``max_commit_time_ms``); retried once after a retryable
  error, and up to ``maxAdaptiveRetries`` times with backoff after retryable overload errors
  (:mod:`mongo_sansio.backpressure`; such a retry keeps the failed attempt's write concern).  A commit sent again (a retry, or the user calling commit twice) asks for
  ``w: "majority"`` (``wtimeout`` 10 s unless one was set) so that the result, once known, is
  durable.  Under a client-side operations timeout (timeoutMS) no ``wtimeout`` is sent.
  Errors that leave the outcome unknown (network, retryable, MaxTimeMSExpired, write concern
  errors but UnsatisfiableWriteConcern / UnknownReplWriteConcern, server selection) get the
  ``UnknownTransactionCommitResult`` label.  A transaction that never sent a command commits
  without a word to the server.
* :func:`abort_transaction` -- ``abortTransaction``, retried as commit is; every error is
  swallowed.  One that kept it from being sent (no server, no connection in time) leaves the
  transaction open on the server: it is then treated as a cut abort (below).
* A commit or abort *cut* before its answer was known -- the task cancelled while it waited
  for a server or a connection or a reply, a timeout around the call, KeyboardInterrupt --
  leaves the transaction perhaps open on the server, holding its documents' locks until the
  transaction lifetime (60 s) ends it.  PyMongo leaves it there; here the session notes the
  cut (:meth:`~mongo_sansio.sessions.Session.end_cut`) and the operation driver starts
  :func:`abort_cut_transaction` in the background (:func:`take_cut_abort`): one
  ``abortTransaction`` with the same lsid and txnNumber, within :data:`CUT_ABORT_TIMEOUT`.  It
  cannot undo a commit the server already applied (the answer is TransactionCommitted then),
  so the session learns the outcome either way (``session.cut_outcome``: "aborted" or
  "committed").  The cancellation itself propagates unchanged; a later
  ``commit_transaction()`` is a commit retry as the spec has it and gets the server's answer
  (success, or NoSuchTransaction labelled TransientTransactionError once the abort won).

Decisions for ``with_transaction(callback)`` (each runtime's loop is a few lines around them):
:func:`after_callback_error` and :func:`after_commit_error`, within
:data:`WITH_TRANSACTION_TIMEOUT` seconds of the first start.

Inputs: the session, replies, errors, elapsed time.  Outputs: flows; decisions.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final

from mongo_sansio.backpressure import is_retryable_overload_error
from mongo_sansio.cmap.errors import PoolError
from mongo_sansio.command import run_command
from mongo_sansio.errors import MongoError, ServerError, WriteConcernError
from mongo_sansio.flow import Flow
from mongo_sansio.ops.retryable import decide_retry, operation_context, retry_ledger, select
from mongo_sansio.ops.write_errors import reply_write_concern_error
from mongo_sansio.retry import is_retryable_write_error, label_write_error
from mongo_sansio.selection import ServerSelectionTimeoutError
from mongo_sansio.selection.errors import ServerSelectionError
from mongo_sansio.sessions import Session
from mongo_sansio.sessions.server_session import ServerSession
from mongo_sansio.sessions.transaction import TransactionState, sends_command

__all__ = [
    "CUT_ABORT_TIMEOUT",
    "abort_cut_transaction",
    "take_cut_abort",
    "UNKNOWN_COMMIT_RESULT",
    "TRANSIENT_TRANSACTION_ERROR",
    "WITH_TRANSACTION_TIMEOUT",
    "Next",
    "commit_transaction",
    "abort_transaction",
    "after_callback_error",
    "after_commit_error",
    "abandon_commit",
    "concern_document",
]

UNKNOWN_COMMIT_RESULT: Final = "UnknownTransactionCommitResult"
TRANSIENT_TRANSACTION_ERROR: Final = "TransientTransactionError"
#: seconds with_transaction keeps retrying (the spec's 120)
WITH_TRANSACTION_TIMEOUT: Final = 120.0
_MAJORITY_WTIMEOUT_MS: Final = 10_000
_MAX_TIME_EXPIRED: Final = 50
#: write concern errors that say the commit will never be satisfied: the result is known
_DEFINITE_WRITE_CONCERN_CODES: Final = frozenset({79, 100})
#: seconds the background abort of a transaction whose commit or abort was cut may take
CUT_ABORT_TIMEOUT: Final = 5.0
_NO_SUCH_TRANSACTION: Final = 251
_TRANSACTION_COMMITTED: Final = 256


def concern_document(concern: Any) -> dict[str, Any]:
    """A read or write concern (ours, PyMongo-shaped, or a mapping) as its document."""
    if concern is None:
        return {}
    if isinstance(concern, Mapping):
        return dict(concern)
    for name in ("to_document", "document"):
        value = getattr(concern, name, None)
        if callable(value):
            value = value()
        if isinstance(value, Mapping):
            return dict(value)
    return {}


def _commit_body(session: Session, again: bool) -> dict[str, Any]:
    options = session.transaction_options
    body: dict[str, Any] = {"commitTransaction": 1}
    concern = concern_document(None if options is None else options.write_concern)
    if again:
        concern["w"] = "majority"
        concern.setdefault("wtimeout", _MAJORITY_WTIMEOUT_MS)
    if concern:
        body["writeConcern"] = concern
    if options is not None and options.max_commit_time_ms is not None:
        body["maxTimeMS"] = options.max_commit_time_ms
    return body


def _unknown_result(error: MongoError) -> bool:
    if isinstance(error, ServerSelectionTimeoutError) or is_retryable_write_error(error):
        return True
    if isinstance(error, WriteConcernError):
        return error.code not in _DEFINITE_WRITE_CONCERN_CODES
    if isinstance(error, ServerError):
        return error.code == _MAX_TIME_EXPIRED
    return False


def _without_wtimeout(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` without a ``wtimeout``: under a client-side operations timeout the deadline
    bounds the wait for the write concern (the CSOT spec ignores wTimeoutMS, and the
    Transactions spec adds no 10 s wtimeout to a commit retry)."""
    concern = body.get("writeConcern")
    if isinstance(concern, Mapping) and "wtimeout" in concern:
        kept = {key: value for key, value in concern.items() if key != "wtimeout"}
        body = {key: value for key, value in body.items() if key != "writeConcern"}
        if kept:
            body["writeConcern"] = kept
    return body


def _end(body_for: Any, session: Session | None = None, operation: str = "") -> Flow[None]:
    """Send commitTransaction / abortTransaction (``body_for(again)``), once more after a
    retryable error -- whatever ``retryWrites`` says (the Transactions spec's retryable-commit
    and retryable-abort tests run with retryWrites=false) -- and, after retryable overload
    errors, up to ``maxAdaptiveRetries`` times with backoff; raise the last error (labelled)
    when it fails.  ``again`` turns true once an attempt failed with an error that is not a
    retryable overload error: after overload errors alone the retry is sent as the failed
    attempt was (Transactions spec, "Interaction with Client Backpressure")."""
    context = yield from operation_context()
    timeout_set = context.deadline is not None
    ledger = retry_ledger(context)
    again = False
    deprioritized: tuple[tuple[str, int], ...] = ()
    while True:
        server = yield from select(for_writes=True, deprioritized=deprioritized, operation=operation)
        body = body_for(again)
        if session is not None and session.recovery_token is not None:
            body["recoveryToken"] = session.recovery_token
        if timeout_set:
            body = _without_wtimeout(body)
        try:
            reply = yield from run_command(server, "admin", body)
            failure = reply_write_concern_error(reply)
            if failure is not None:
                label_write_error(failure, server.max_wire_version)
                raise failure
            return
        except MongoError as error:
            label_write_error(error, server.max_wire_version)
            decision = yield from decide_retry(
                ledger,
                context,
                error,
                server,
                retryable=is_retryable_write_error(error),
                overload_retry_enabled=True,
                # a transaction's mongos is not avoided: only an overload error with
                # enableOverloadRetargeting moves the commit or abort elsewhere
                sharded=False,
            )
            if decision is None:
                raise
            if not is_retryable_overload_error(error):
                again = True
            if session is not None:
                session.unpin()  # a retried commit or abort may go to another mongos
            deprioritized = (server.address,) if decision.deprioritize else ()


def commit_transaction(session: Session) -> Flow[None]:
    """Commit the session's transaction (see the module docstring)."""
    before = session.transaction_state
    session.commit()
    if not sends_command(before):
        return
    committed_before = before is TransactionState.COMMITTED
    try:
        yield from _end(lambda again: _commit_body(session, again or committed_before), session, "commitTransaction")
    except MongoError as error:
        if _unknown_result(error):
            error._remove_error_label(TRANSIENT_TRANSACTION_ERROR)
            error._add_error_label(UNKNOWN_COMMIT_RESULT)
        if error.has_error_label(UNKNOWN_COMMIT_RESULT) or error.has_error_label(TRANSIENT_TRANSACTION_ERROR):
            session.unpin()
        raise
    except BaseException:
        session.end_cut()  # cut: the transaction may be open on the server (module docstring)
        raise


def abort_transaction(session: Session) -> Flow[None]:
    """Abort the session's transaction; errors are swallowed (see the module docstring)."""
    before = session.transaction_state
    session.abort()
    if not sends_command(before):
        return
    options = session.transaction_options

    def body(_again: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"abortTransaction": 1}
        concern = concern_document(None if options is None else options.write_concern)
        if concern:
            out["writeConcern"] = concern
        return out

    try:
        yield from _end(body, session, "abortTransaction")
    except (ServerSelectionError, PoolError):
        # never sent (no server or no connection in time): the transaction may still be open
        # on the server with its locks -- treated as a cut abort, it is aborted in the background
        session.end_cut()
    except MongoError:
        pass
    except BaseException:
        session.end_cut()
        raise
    finally:
        session.unpin()  # (Transactions spec: an abort, successful or not, unpins)


def take_cut_abort(session: Session | None) -> tuple[Session, Flow[None]] | None:
    """When ``session``'s commit or abort was just cut (:meth:`Session.end_cut`), the flow
    to start in the background and the stand-in session to run it with; None otherwise.
    The stand-in carries the cut transaction's lsid and txnNumber, frozen: whatever the user
    does with the session meanwhile (a new transaction takes a new number), the abort names
    only the cut transaction, and the session stays free for the user.  The server session is
    marked dirty: when the session ends it is discarded, not handed to another session while
    the abort may still run under its lsid."""
    if session is None or not session.cut_abort_due:
        return None
    session.cut_abort_due = False
    server_session = session.server_session
    txn_number = session.cut_txn_number
    if server_session is None or txn_number is None:
        return None
    # The abort runs under this lsid while the session goes on: once the session ends, its
    # server session must not serve another session while the abort may still be in flight
    # (discarded, as after a network error: Driver Sessions spec, "dirty" sessions).
    server_session.dirty = True
    frozen = ServerSession(server_session.session_id, server_session.last_use)
    frozen.txn_number = txn_number
    stand_in = Session(session.owner, implicit=False)
    stand_in.server_session = frozen
    stand_in.transaction_state = TransactionState.ABORTED
    stand_in.transaction_options = session.transaction_options
    return stand_in, abort_cut_transaction(session, txn_number)


def abort_cut_transaction(session: Session, txn_number: int) -> Flow[None]:
    """``abortTransaction`` for the cut transaction ``txn_number`` of ``session`` (run with
    the stand-in session of :func:`take_cut_abort`), once, and more only as :func:`_end`
    retries; the server's answer goes to ``session.cut_outcome``.  Errors other than the
    answers that tell the outcome are swallowed (the transaction lifetime still ends it)."""
    outcome: str | None = "aborted"
    try:
        yield from _end(lambda _again: {"abortTransaction": 1})
    except ServerError as error:
        if error.code == _TRANSACTION_COMMITTED:
            outcome = "committed"
        elif error.code != _NO_SUCH_TRANSACTION:
            outcome = None
    except MongoError:
        outcome = None
    session.cut_resolved(txn_number, outcome)


class Next(enum.Enum):
    """What ``with_transaction`` does after an error."""

    RETRY_TRANSACTION = "retry the whole transaction"
    RETRY_COMMIT = "commit again"
    RAISE = "raise the error"


def after_callback_error(error: BaseException, elapsed: float) -> Next:
    """The callback raised (the transaction was aborted): retry the whole transaction on a
    TransientTransactionError while time is left."""
    if (
        isinstance(error, MongoError)
        and error.has_error_label(TRANSIENT_TRANSACTION_ERROR)
        and elapsed < WITH_TRANSACTION_TIMEOUT
    ):
        return Next.RETRY_TRANSACTION
    return Next.RAISE


def abandon_commit(session: Session, error: BaseException) -> Flow[None]:
    """``with_transaction`` gives up after its commit failed with ``error``.  When that is not
    the server's answer (no server or connection in time, the connection lost, the time
    limit spent), the transaction may still be open on the server, holding its documents'
    locks until its lifetime ends it: it is treated as a cut commit (the module docstring),
    so the operation driver that runs this flow aborts it in the background.  Nothing is
    sent here."""
    if not isinstance(error, ServerError):
        session.end_cut()
    return
    yield  # (a flow)


def after_commit_error(error: BaseException, elapsed: float) -> Next:
    """The commit failed: commit again when its result is unknown (not after a
    MaxTimeMSExpired), retry the transaction when it is transient, while time is left."""
    if not isinstance(error, MongoError) or elapsed >= WITH_TRANSACTION_TIMEOUT:
        return Next.RAISE
    if error.has_error_label(UNKNOWN_COMMIT_RESULT):
        timed_out = isinstance(error, ServerError) and error.code == _MAX_TIME_EXPIRED
        if isinstance(error, WriteConcernError) and error.code == _MAX_TIME_EXPIRED:
            timed_out = True
        if not timed_out:
            return Next.RETRY_COMMIT
    if error.has_error_label(TRANSIENT_TRANSACTION_ERROR):
        return Next.RETRY_TRANSACTION
    return Next.RAISE
