"""What the blocking and async ``ClientSession`` share: PyMongo's session API over the core's
:class:`~mongo_sansio.sessions.Session`, written once as programs (:mod:`.program`).

A client's ``start_session()`` returns one; pass it as ``session=`` to operations, and use it
as a context manager (``with`` / ``async with``: it ends on the way out, aborting a transaction
left open).  Transactions: ``start_transaction()`` (a context manager too: commit on success,
abort on an exception), ``commit_transaction()``, ``abort_transaction()`` and
``with_transaction(callback)``.  Every decision (what commands carry, retries, labels, the
convenient API's loop rules) is the core's (:mod:`mongo_sansio.sessions`,
:mod:`mongo_sansio.ops.transactions`).

Each flavour adds only what differs: the context-manager protocol of the session and of its
transaction block, and ``with_transaction``'s callback (a function, or a coroutine function).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from mongo_sansio.client.execute import operation_deadline
from mongo_sansio.errors import InvalidOperation, NetworkTimeout
from mongo_sansio.ops.transactions import (
    Next,
    abandon_commit,
    abort_transaction,
    after_callback_error,
    after_commit_error,
    commit_transaction,
)
from mongo_sansio.sessions import Session, SessionOptions, TransactionOptions

from .._timeout import callback_block, current_deadline, deadline_block
from .program import Call, Program, Run, operation
from .pymongo_objects import adopt
from .pymongo_values import handed_out

__all__ = ["ClientSessionBase", "TransactionBlockBase", "SessionOptions", "TransactionOptions"]


def _refreshed(deadline: float | None, start: float, now: float) -> float | None:
    """A deadline as long as ``deadline`` was, from ``now`` (an abort after a timed-out attempt
    gets a timeoutMS of its own)."""
    if deadline is None or deadline == math.inf:
        return deadline
    return now + (deadline - start)


def _raise_if_out_of_time(
    error: BaseException, deadline: float | None, timed: bool, now: float
) -> None:
    """Past with_transaction's deadline nothing is retried: the error is raised, as a timeout
    error caused by it when it is not one itself."""
    if not timed or deadline is None or now < deadline:
        return
    if getattr(error, "timeout", False) or not isinstance(error, Exception):
        raise error
    raise NetworkTimeout(
        f"with_transaction's timeoutMS expired; the last error: {error}"
    ) from error


class _Client(Protocol):
    @property
    def engine(self) -> Any: ...

    def default_transaction_options(self) -> TransactionOptions: ...


ClientT = TypeVar("ClientT", bound=_Client)
BlockT = TypeVar("BlockT")
T = TypeVar("T")


class TransactionBlockBase:
    """What ``start_transaction()`` returns: a context manager that commits the transaction
    when its block succeeds and aborts it when the block raises."""

    def __init__(self, session: ClientSessionBase[Any, Any]) -> None:
        self._session = session
        self._engine = session._engine

    def _finishing(self, failed: bool) -> Program[None]:
        session = self._session
        if not session.in_transaction:
            return
        flow = abort_transaction if failed else commit_transaction
        yield session._ending(flow(session._session))


class ClientSessionBase(Generic[ClientT, BlockT]):
    """A session of one client (see the module docstring); ``ClientT`` is the flavour's client
    and ``BlockT`` its transaction block."""

    _transaction_block: Callable[[Any], BlockT]

    def __init__(self, client: ClientT, session: Session) -> None:
        self._client = client
        self._engine = client.engine
        self._session = session

    def core_session(self, engine: object) -> Session:
        """The core's session, for ``engine`` (the client that started this one)."""
        if engine is not self._engine:
            raise InvalidOperation("Can only use session with the MongoClient that started it")
        return self._session

    def _ending(self, flow: Any) -> Run:
        return Run(flow, session=self)

    # -- state ----------------------------------------------------------------------------------

    @property
    def client(self) -> ClientT:
        return self._client

    @property
    def options(self) -> SessionOptions:
        return self._session.options

    @property
    def session_id(self) -> Mapping[str, Any]:
        """The ``lsid`` document (the server session is taken from the pool if needed)."""
        if self._session.ended:
            raise InvalidOperation("Cannot use ended session")
        self._engine.bind_session(self._session)
        session_id = self._session.session_id
        assert session_id is not None
        return handed_out(self._client, session_id)  # type: ignore[no-any-return]

    @property
    def cluster_time(self) -> Mapping[str, Any] | None:
        return handed_out(self._client, self._session.cluster_time)  # type: ignore[no-any-return]

    @property
    def operation_time(self) -> Any:
        return handed_out(self._client, self._session.operation_time)

    @property
    def has_ended(self) -> bool:
        return self._session.ended

    @property
    def snapshot_time(self) -> Any:
        """A snapshot session's snapshot (a Timestamp): the one it was started with, or the
        ``atClusterTime`` of its first read; None before that, and for other sessions."""
        return handed_out(self._client, self._session.snapshot_time)

    @property
    def in_transaction(self) -> bool:
        return self._session.in_transaction

    @property
    def _pinned_address(self) -> tuple[str, int] | None:
        """The mongos the session's transaction is pinned to, or in load-balanced mode the
        address of the connection it holds (PyMongo's private name, which the unified test
        format's assertSessionPinned reads), or None."""
        session = self._session
        if session.pinned_address is not None:
            return session.pinned_address
        pin = session.pinned_connection
        return None if pin is None or pin.released else pin.link.address

    def advance_cluster_time(self, cluster_time: Mapping[str, Any]) -> None:
        self._session.advance_cluster_time(cluster_time)

    def advance_operation_time(self, operation_time: Any) -> None:
        self._session.advance_operation_time(operation_time)

    # -- ending ---------------------------------------------------------------------------------

    @operation
    def end_session(self) -> Program[None]:
        """End the session (aborting an open transaction); idempotent."""
        if self._session.ended:
            return
        try:
            if self._session.in_transaction:
                yield self._ending(abort_transaction(self._session))
        finally:
            self._engine.end_session(self._session)

    # -- transactions ---------------------------------------------------------------------------

    def _begin(
        self,
        read_concern: Any = None,
        write_concern: Any = None,
        read_preference: Any = None,
        max_commit_time_ms: int | None = None,
    ) -> None:
        self._session.require_usable(self._engine.core)
        options = TransactionOptions(  # (PyMongo's concerns made ours: pymongo_objects.py)
            adopt(read_concern), adopt(write_concern), adopt(read_preference), max_commit_time_ms
        ).merged(self._session.default_transaction_options)
        options = options.merged(self._client.default_transaction_options())
        self._session.start_transaction(options)

    @operation
    def start_transaction(
        self,
        read_concern: Any = None,
        write_concern: Any = None,
        read_preference: Any = None,
        max_commit_time_ms: int | None = None,
    ) -> Program[BlockT]:
        """Start a transaction; unset options come from the session's defaults, then the
        client's.  Returns a context manager (commit on success, abort on an exception)."""
        yield from ()  # nothing to send: the transaction starts with its first command
        self._begin(read_concern, write_concern, read_preference, max_commit_time_ms)
        return self._transaction_block(self)

    @operation
    def commit_transaction(self) -> Program[None]:
        yield self._ending(commit_transaction(self._session))

    @operation
    def abort_transaction(self) -> Program[None]:
        yield self._ending(abort_transaction(self._session))

    def _with_transaction(
        self,
        callback: Callable[[Any], Any],
        read_concern: Any = None,
        write_concern: Any = None,
        read_preference: Any = None,
        max_commit_time_ms: int | None = None,
    ) -> Program[Any]:
        """``with_transaction``: run ``callback(session)`` in a transaction and commit it,
        retrying as the convenient transaction API says (for up to 120 seconds).

        Under a timeoutMS (a ``timeout()`` block around the call, else the client's), the
        callback's operations, the commits and the retries share one deadline, a timeout of
        their own inside the callback is refused, an abort after a failed attempt gets a fresh
        timeoutMS, and running out of time raises a timeout error caused by the last error
        (the CSOT spec's rules for the convenient API)."""
        # the engine's clock, not time.monotonic: the one its deadlines are on (the same on
        # real runtimes; virtual time on the chaos runtime)
        clock = self._engine.now
        start = clock()
        deadline = operation_deadline(
            start, context=current_deadline(), own=None, client=self._engine.settings.timeout
        )
        timed = deadline is not None and deadline != math.inf
        while True:
            self._begin(read_concern, write_concern, read_preference, max_commit_time_ms)
            try:
                with deadline_block(deadline), callback_block(timed):
                    result = yield Call(callback, (self,))
            except BaseException as error:
                if self.in_transaction:
                    with deadline_block(_refreshed(deadline, start, clock())):
                        yield self._ending(abort_transaction(self._session))
                _raise_if_out_of_time(error, deadline, timed, clock())
                if after_callback_error(error, clock() - start) is Next.RETRY_TRANSACTION:
                    continue
                raise
            if not self.in_transaction:
                return result  # the callback committed or aborted itself
            while True:
                try:
                    with deadline_block(deadline):
                        yield self._ending(commit_transaction(self._session))
                    return result
                except Exception as error:  # noqa: BLE001 - the core's rules decide
                    decision = Next.RAISE
                    if not timed or deadline is None or clock() < deadline:
                        decision = after_commit_error(error, clock() - start)
                    if decision is Next.RETRY_COMMIT:
                        continue
                    if decision is Next.RETRY_TRANSACTION:
                        break
                    # giving up: a commit that never got the server's answer may have left
                    # the transaction open there (the core aborts it in the background)
                    with deadline_block(_refreshed(deadline, start, clock())):
                        yield self._ending(abandon_commit(self._session, error))
                    _raise_if_out_of_time(error, deadline, timed, clock())
                    raise

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._session!r})"
