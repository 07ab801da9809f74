"""The blocking ``ClientSession``: PyMongo's session API over the core's
:class:`~mongo_sansio.sessions.Session`.

``client.start_session()`` returns one; pass it as ``session=`` to operations, use it as a
context manager (it ends on the way out, aborting a transaction left open).  Transactions:
``start_transaction()`` (also a context manager: commit on success, abort on an exception),
``commit_transaction()``, ``abort_transaction()``, ``with_transaction(callback)``.  All of it
is shared with the async session (:mod:`mongo_sansio.adapters._api.session`); this module adds
``with`` and the callback's type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self, TypeVar

from .._api.program import Blocking, run_blocking
from .._api.session import (
    ClientSessionBase,
    SessionOptions,
    TransactionBlockBase,
    TransactionOptions,
)

if TYPE_CHECKING:
    from .client import MongoClient  # noqa: F401 - named in a base class (a cycle)

__all__ = ["ClientSession", "SessionOptions", "TransactionOptions"]

T = TypeVar("T")


class _TransactionBlock(TransactionBlockBase):
    """``with session.start_transaction():`` commits on success, aborts on an exception."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc_info: object) -> None:
        run_blocking(self._engine, self._finishing(failed=kind is not None))


class ClientSession(Blocking, ClientSessionBase["MongoClient", _TransactionBlock]):
    """A session of one :class:`~.client.MongoClient` (see the module docstring)."""

    _transaction_block = _TransactionBlock

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.end_session()

    def with_transaction(
        self, callback: Callable[[ClientSession], T], *args: Any, **kwargs: Any
    ) -> T:
        """Run ``callback(session)`` in a transaction and commit it, retrying as the
        convenient transaction API says (for up to 120 seconds); the other arguments are
        :meth:`start_transaction`'s."""
        result: T = run_blocking(self._engine, self._with_transaction(callback, *args, **kwargs))
        return result
