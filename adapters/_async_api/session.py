"""The async ``ClientSession`` (PyMongo's ``AsyncClientSession``), shared by asyncio and trio.

``async with client.start_session() as s`` (``start_session`` itself is not awaited, as in
PyMongo) ends the session on the way out; ``async with await s.start_transaction():`` commits
on success and aborts on an exception; ``await s.commit_transaction()``, ``await
s.abort_transaction()``, ``await s.with_transaction(coroutine_function)``.  All of it is the
blocking session's code (:mod:`mongo_sansio.adapters._api.session`); this module adds
``async with`` and the callback's type.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Self, TypeVar

from .._api.program import Asynchronous, run_async
from .._api.session import ClientSessionBase, TransactionBlockBase

if TYPE_CHECKING:
    from .client import AsyncMongoClientBase  # noqa: F401 - named in a base class (a cycle)

__all__ = ["AsyncClientSession"]

T = TypeVar("T")


class _AsyncTransactionBlock(TransactionBlockBase):
    """``async with await session.start_transaction():`` commits on success, aborts on an
    exception."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, *exc_info: object) -> None:
        await run_async(self._engine, self._finishing(failed=kind is not None))


class AsyncClientSession(
    Asynchronous, ClientSessionBase["AsyncMongoClientBase", _AsyncTransactionBlock]
):
    """A session of one async client (see the module docstring)."""

    _transaction_block = _AsyncTransactionBlock

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.end_session()

    async def with_transaction(
        self,
        callback: Callable[[AsyncClientSession], Awaitable[T]],
        *args: Any,
        **kwargs: Any,
    ) -> T:
        """Run ``await callback(session)`` in a transaction and commit it, retrying as the
        convenient transaction API says (for up to 120 seconds); the other arguments are
        :meth:`start_transaction`'s."""
        result: T = await run_async(self._engine, self._with_transaction(callback, *args, **kwargs))
        return result
