"""The client's sessions: the server session pool, the cluster clock, and what each command
of an operation carries.

:class:`ClientSessions` belongs to one :class:`~mongo_sansio.client.core.ClientCore`.  The
operation driver (:mod:`.execute`) calls it around each command:

* :meth:`~ClientSessions.prepare` -- after a connection was checked out: bind the session to a
  pooled server session (lazily, so an operation that never reaches a server takes none), draw
  a retryable write's ``txnNumber``, and add the session's fields
  (:func:`~mongo_sansio.sessions.commands.with_session_fields`);
* :meth:`~ClientSessions.absorb` -- the reply's cluster and operation times;
* :meth:`~ClientSessions.failed` -- a network error: the server session is dirty (never reused),
  and inside a transaction the error gets ``TransientTransactionError``;
* :meth:`~ClientSessions.finish` -- when an operation ends: an implicit session no cursor holds
  goes back to the pool.

Inputs: sessions, command bodies, replies, errors, the topology's session timeout, the time.
Outputs: command bodies; pool changes; ``endSessions`` batches on close (:meth:`drain`).  Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mongo_sansio.errors import ConfigurationError, MongoError, NetworkError
from mongo_sansio.flow import RunCommand, ServerInfo
from mongo_sansio.sessions import ClusterClock, ServerSessionPool, Session, with_session_fields
from mongo_sansio.sessions.commands import (
    TRANSACTION_END_COMMANDS,
    is_unacknowledged,
    takes_session,
)
from mongo_sansio.sessions.transaction import TransactionState

__all__ = ["ClientSessions", "TRANSIENT_TRANSACTION_ERROR"]

TRANSIENT_TRANSACTION_ERROR = "TransientTransactionError"


class ClientSessions:
    """See the module docstring.  ``random16`` gives 16 random bytes for each new lsid;
    ``timeout_minutes`` reads the deployment's logicalSessionTimeoutMinutes (None: the
    deployment does not support sessions, or is not known yet)."""

    def __init__(
        self, random16: Callable[[], bytes], timeout_minutes: Callable[[], int | None]
    ) -> None:
        self.pool = ServerSessionPool(random16)
        self.clock = ClusterClock()
        self._timeout_minutes = timeout_minutes

    @property
    def supported(self) -> bool:
        return self._timeout_minutes() is not None

    def prepare(
        self, request: RunCommand, session: Session | None, body: Mapping[str, Any], now: float
    ) -> Mapping[str, Any]:
        """``body`` with the session's fields, binding the session first if needed."""
        server: ServerInfo = request.server
        minutes = self._timeout_minutes()  # (read once: bind needs it too)
        supported = minutes is not None
        if not takes_session(body):
            session = None
        if session is not None:
            if not supported and not session.implicit:
                raise ConfigurationError("Sessions are not supported by this MongoDB deployment")
            unacknowledged = session.implicit and is_unacknowledged(body)
            if supported and session.server_session is None and not unacknowledged:
                self.bind(session, now, minutes)
        txn_number = None
        slot = request.txn
        if slot is not None and session is not None and session.server_session is not None:
            if slot.number is None:
                slot.number = session.server_session.advance_txn_number()
            txn_number = slot.number
        if session is not None and session.server_session is not None:
            session.server_session.last_use = now
        return with_session_fields(
            body,
            session,
            self.clock,
            max_wire_version=server.max_wire_version,
            sessions_supported=supported,
            txn_number=txn_number,
        )

    def bind(self, session: Session, now: float, timeout_minutes: int | None = None) -> None:
        """Give ``session`` a server session from the pool (a transaction that was started
        before the session's first command takes its number now).  ``timeout_minutes``: the
        deployment's logicalSessionTimeoutMinutes, when the caller has it (None: read here)."""
        if timeout_minutes is None:
            timeout_minutes = self._timeout_minutes()
        server_session = self.pool.acquire(now, timeout_minutes)
        session.server_session = server_session
        if session.transaction_state is TransactionState.STARTING:
            server_session.advance_txn_number()

    def absorb(self, session: Session | None, reply: Mapping[str, Any]) -> None:
        self.clock.absorb(reply)
        # An implicit session's times are never read: the cluster time it would keep is never
        # later than the client's (which learns from the same replies), and it is neither
        # causally consistent nor a snapshot session (only explicit sessions are)
        if session is not None and not session.implicit:
            session.absorb_reply(reply)

    def failed(self, session: Session | None, body: Mapping[str, Any], error: MongoError) -> None:
        if session is None:
            return
        if isinstance(error, NetworkError):
            if session.server_session is not None:
                session.server_session.dirty = True
            if session.in_transaction and next(iter(body), "") not in TRANSACTION_END_COMMANDS:
                error._add_error_label(TRANSIENT_TRANSACTION_ERROR)
        if error.has_error_label(TRANSIENT_TRANSACTION_ERROR):
            session.unpin()  # (Transactions spec: a transient error unpins the session)

    def finish(self, session: Session, now: float) -> None:
        """An operation of ``session`` ended: an implicit session nothing holds any more goes
        back to the pool."""
        if not session.implicit or session.cursor_holds > 0 or session.ended:
            return
        session.ended = True
        self.release(session, now)

    def end(self, session: Session, now: float) -> None:
        """``end_session()`` of an explicit session (idempotent)."""
        if session.ended:
            return
        session.ended = True
        session.unpin()
        self.release(session, now)

    def release(self, session: Session, now: float) -> None:
        server_session = session.server_session
        if server_session is not None:
            self.pool.release(server_session, now, self._timeout_minutes())

    def drain(self) -> list[list[dict[str, Any]]]:
        """The pooled lsids in ``endSessions`` batches (the pool is emptied)."""
        return self.pool.drain()
