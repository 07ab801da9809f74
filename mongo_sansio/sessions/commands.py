"""What a session adds to a command, and what it learns from the reply.

:func:`with_session_fields` is called by the client for every command it sends, after a
connection was checked out and the session bound to a server session:

* ``lsid`` when the deployment supports sessions -- except for an unacknowledged write on an
  implicit session (the spec's rule: the server would keep the session for nothing), and an
  explicit session with an unacknowledged write is refused;
* ``$clusterTime``: the later of the client's and the session's, to servers of wire version 6
  (3.6) and later;
* in a transaction: ``txnNumber``, ``autocommit: false``, and on the first command
  ``startTransaction: true`` with the transaction's read concern (plus ``afterClusterTime`` in a
  causally consistent session); operations inside carry no read or write concern of their own
  (the collection's are dropped, as PyMongo does);
* outside one: the retryable write's ``txnNumber``; ``afterClusterTime`` on reads and on write
  commands (:data:`CAUSAL_WRITE_COMMANDS`, the Causal Consistency spec's write rule) of a
  causally consistent session that has an operation time; ``level: snapshot`` (and
  ``atClusterTime`` once known) on every command of a snapshot session (the snapshot sessions
  spec: writes and catalogue reads too, so that the server refuses what it cannot read at a
  snapshot) but the cursor continuations (getMore, killCursors), which read at their
  cursor's.

Inputs: the command body, the session, the client's clock, what the server supports.  Outputs:
the body to send.  Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mongo_sansio.bson import Int64
from mongo_sansio.errors import ConfigurationError
from mongo_sansio.sessions.cluster_time import ClusterClock, later_cluster_time
from mongo_sansio.sessions.session import Session
from mongo_sansio.sessions.transaction import TransactionState

__all__ = [
    "CAUSAL_WRITE_COMMANDS",
    "READ_CONCERN_COMMANDS",
    "TRANSACTION_END_COMMANDS",
    "CLUSTER_TIME_WIRE_VERSION",
    "with_session_fields",
    "is_unacknowledged",
    "takes_session",
]

#: commands that take a read concern (and so ``afterClusterTime`` / snapshot reads)
READ_CONCERN_COMMANDS: Final = frozenset({"find", "aggregate", "distinct", "count"})
#: write commands that carry ``afterClusterTime`` in a causally consistent session (outside a
#: transaction), so that a write is ordered after what the session has already seen
CAUSAL_WRITE_COMMANDS: Final = frozenset(
    {
        "insert",
        "update",
        "delete",
        "findAndModify",
        "bulkWrite",
        "create",
        "createIndexes",
        "drop",
        "dropDatabase",
        "dropIndexes",
    }
)
#: the commands that end a transaction: they carry its number but never start it
TRANSACTION_END_COMMANDS: Final = frozenset({"commitTransaction", "abortTransaction"})
#: servers from MongoDB 3.6 gossip cluster time
CLUSTER_TIME_WIRE_VERSION: Final = 6

#: commands that continue a cursor: they read as the command that opened it did
_CURSOR_CONTINUATIONS: Final = frozenset({"getMore", "killCursors"})

_NO_SESSION_COMMANDS: Final = frozenset(
    {
        "hello",
        "isMaster",
        "ismaster",
        "saslStart",
        "saslContinue",
        "authenticate",
        "getnonce",
        "endSessions",
    }
)


def takes_session(body: Mapping[str, Any]) -> bool:
    """Whether the command carries a session at all (not the handshake's, auth's or
    endSessions)."""
    return next(iter(body), "") not in _NO_SESSION_COMMANDS


def is_unacknowledged(body: Mapping[str, Any]) -> bool:
    """Whether ``body`` carries ``writeConcern: {w: 0}``."""
    concern = body.get("writeConcern")
    if concern is None:  # (the usual case, before any isinstance check)
        return False
    return isinstance(concern, Mapping) and concern.get("w") == 0


def with_session_fields(
    body: Mapping[str, Any],
    session: Session | None,
    clock: ClusterClock,
    *,
    max_wire_version: int,
    sessions_supported: bool,
    txn_number: int | None = None,
) -> Mapping[str, Any]:
    """``body`` with the session's fields (see the module docstring).  ``txn_number`` is the
    retryable write's transaction number (None: not a retryable write)."""
    name = next(iter(body), "")
    if name in _NO_SESSION_COMMANDS:
        return body
    out = dict(body)
    if max_wire_version >= CLUSTER_TIME_WIRE_VERSION:
        cluster_time = clock.cluster_time
        if session is not None:
            cluster_time = later_cluster_time(cluster_time, session.cluster_time)
        if cluster_time is not None:
            out["$clusterTime"] = cluster_time
    if session is not None and session.in_transaction and name not in TRANSACTION_END_COMMANDS:
        # The collection's or database's write concern is ignored inside a transaction (the
        # transaction's own applies at commit), unacknowledged ones included: PyMongo's rule
        # and the Transactions spec's "collection writeConcern ignored" tests.
        out.pop("writeConcern", None)
    elif session is not None and not session.implicit and is_unacknowledged(body):
        # checked before binding matters: an explicit session's first command is refused too
        raise ConfigurationError(
            "Explicit sessions are incompatible with unacknowledged write concern"
        )
    if session is None or not sessions_supported or session.server_session is None:
        return out
    if is_unacknowledged(out):
        return out
    out["lsid"] = session.server_session.session_id
    if name in TRANSACTION_END_COMMANDS:
        out["txnNumber"] = Int64(session.server_session.txn_number)
        out["autocommit"] = False
        return out
    if session.in_transaction:
        return _in_transaction(out, name, session)
    if session.transaction_state is not TransactionState.NONE:
        session.operation_sent()  # the first command after a commit or abort leaves it
    if txn_number is not None:
        out["txnNumber"] = Int64(txn_number)
    if name in READ_CONCERN_COMMANDS or (session.snapshot and name not in _CURSOR_CONTINUATIONS):
        _read_concern(out, session)
    elif name in CAUSAL_WRITE_COMMANDS:
        _after_cluster_time(out, session)
    return out


def _in_transaction(out: dict[str, Any], name: str, session: Session) -> Mapping[str, Any]:
    assert session.server_session is not None
    out.pop("readConcern", None)
    out["txnNumber"] = Int64(session.server_session.txn_number)
    if session.transaction_state is TransactionState.STARTING:
        out["startTransaction"] = True
        concern = dict(_transaction_read_concern(session))
        if session.causal_consistency and session.operation_time is not None:
            concern["afterClusterTime"] = session.operation_time
        if concern:
            out["readConcern"] = concern
    out["autocommit"] = False
    session.operation_sent()
    return out


def _transaction_read_concern(session: Session) -> Mapping[str, Any]:
    options = session.transaction_options
    concern = None if options is None else options.read_concern
    if concern is None:
        return {}
    document = getattr(concern, "document", None)
    if document is None:
        to_document = getattr(concern, "to_document", None)
        document = to_document() if callable(to_document) else concern
    return document if isinstance(document, Mapping) else {}


def _read_concern(out: dict[str, Any], session: Session) -> None:
    if session.snapshot:
        concern = dict(out.get("readConcern") or {})
        concern["level"] = "snapshot"
        if session.snapshot_time is not None:
            concern["atClusterTime"] = session.snapshot_time
        out["readConcern"] = concern
    else:
        _after_cluster_time(out, session)


def _after_cluster_time(out: dict[str, Any], session: Session) -> None:
    if session.causal_consistency and session.operation_time is not None:
        concern = dict(out.get("readConcern") or {})
        concern["afterClusterTime"] = session.operation_time
        out["readConcern"] = concern
