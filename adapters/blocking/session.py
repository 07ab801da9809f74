"""The blocking ``ClientSession``: PyMongo's session API over the core's
:class:`~mongo_sansio.sessions.Session`.

``client.start_session()`` returns one; pass it as ``session=`` to operations, use it as a
context manager (it ends on the way out, aborting a transaction left open).  Transactions:
``start_transaction()`` (also a context manager: commit on success, abort on an exception),
``commit_transaction()``, ``abort_transaction()``, ``with_transaction(callback)``.  Every
decision (what commands carry, retries, labels, the convenient API's loop rules) is the core's
(:mod:`mongo_sansio.sessions`, :mod:`mongo_sansio.ops.transactions`); this module only waits.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

from mongo_sansio.errors import InvalidOperation
from mongo_sansio.ops.transactions import (
    Next,
    abort_transaction,
    after_callback_error,
    after_commit_error,
    commit_transaction,
)
from mongo_sansio.sessions import Session, SessionOptions, TransactionOptions

if TYPE_CHECKING:
    from ._engine import Engine
    from .client import MongoClient

__all__ = ["ClientSession", "SessionOptions", "TransactionOptions"]

T = TypeVar("T")


class _TransactionBlock:
    """``with session.start_transaction():`` commits on success, aborts on an exception."""

    def __init__(self, session: ClientSession) -> None:
        self._session = session

    def __enter__(self) -> _TransactionBlock:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if not self._session.in_transaction:
            return
        if exc_type is None:
            self._session.commit_transaction()
        else:
            self._session.abort_transaction()


class ClientSession:
    """A session of one :class:`~.client.MongoClient` (see the module docstring)."""

    def __init__(self, client: MongoClient, session: Session) -> None:
        self._client = client
        self._session = session

    @property
    def _engine(self) -> Engine:
        return self._client.engine

    def core_session(self, engine: Engine) -> Session:
        """The core's session, for ``engine`` (the client that started this one)."""
        if engine is not self._engine:
            raise InvalidOperation("Can only use session with the MongoClient that started it")
        return self._session

    # -- state ----------------------------------------------------------------------------------

    @property
    def client(self) -> MongoClient:
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
        return session_id

    @property
    def cluster_time(self) -> Mapping[str, Any] | None:
        return self._session.cluster_time

    @property
    def operation_time(self) -> Any:
        return self._session.operation_time

    @property
    def has_ended(self) -> bool:
        return self._session.ended

    @property
    def in_transaction(self) -> bool:
        return self._session.in_transaction

    def advance_cluster_time(self, cluster_time: Mapping[str, Any]) -> None:
        self._session.advance_cluster_time(cluster_time)

    def advance_operation_time(self, operation_time: Any) -> None:
        self._session.advance_operation_time(operation_time)

    # -- ending ---------------------------------------------------------------------------------

    def end_session(self) -> None:
        """End the session (aborting an open transaction); idempotent."""
        if self._session.ended:
            return
        try:
            if self._session.in_transaction:
                self.abort_transaction()
        finally:
            self._engine.end_session(self._session)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.end_session()

    # -- transactions ---------------------------------------------------------------------------

    def start_transaction(
        self,
        read_concern: Any = None,
        write_concern: Any = None,
        read_preference: Any = None,
        max_commit_time_ms: int | None = None,
    ) -> _TransactionBlock:
        """Start a transaction; unset options come from the session's defaults, then the
        client's.  Returns a context manager (commit on success, abort on an exception)."""
        self._session.require_usable(self._engine.core)
        options = TransactionOptions(
            read_concern, write_concern, read_preference, max_commit_time_ms
        ).merged(self._session.default_transaction_options)
        options = options.merged(self._client.default_transaction_options())
        self._session.start_transaction(options)
        return _TransactionBlock(self)

    def commit_transaction(self) -> None:
        self._engine.run(commit_transaction(self._session), session=self)

    def abort_transaction(self) -> None:
        self._engine.run(abort_transaction(self._session), session=self)

    def with_transaction(
        self,
        callback: Callable[[ClientSession], T],
        read_concern: Any = None,
        write_concern: Any = None,
        read_preference: Any = None,
        max_commit_time_ms: int | None = None,
    ) -> T:
        """Run ``callback(session)`` in a transaction and commit it, retrying as the
        convenient transaction API says (for up to 120 seconds)."""
        start = time.monotonic()
        while True:
            self.start_transaction(read_concern, write_concern, read_preference, max_commit_time_ms)
            try:
                result = callback(self)
            except BaseException as error:
                if self.in_transaction:
                    self.abort_transaction()
                if after_callback_error(error, time.monotonic() - start) is Next.RETRY_TRANSACTION:
                    continue
                raise
            if not self.in_transaction:
                return result  # the callback committed or aborted itself
            while True:
                try:
                    self.commit_transaction()
                    return result
                except Exception as error:  # noqa: BLE001 - the core's rules decide
                    decision = after_commit_error(error, time.monotonic() - start)
                    if decision is Next.RETRY_COMMIT:
                        continue
                    if decision is Next.RETRY_TRANSACTION:
                        break
                    raise

    def __repr__(self) -> str:
        return f"ClientSession({self._session!r})"
