"""The async cursors (PyMongo's ``AsyncCursor``, ``AsyncCommandCursor`` and their raw-batch
twins), shared by the asyncio and trio clients.

Everything but iteration is the blocking cursors' code (:mod:`mongo_sansio.adapters._api.cursor`);
here each operation is a coroutine: ``async for document in cursor``, ``await cursor.next()``,
``await cursor.to_list()``, ``await cursor.close()`` (``async with cursor`` closes it too),
``await cursor.explain()``, ``await cursor.rewind()``.  ``Collection.find`` itself is not awaited:
the cursor opens on its first read, after the options were chained.  As PyMongo's
``AsyncCursor``, an async find cursor cannot be indexed (``cursor[0]``: IndexError).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn, Self

from .._api.closing import AsyncClosesOnExit
from .._api.cursor import END, CommandCursorBase, CursorBase, FindCursorBase, RawBatches
from .._api.program import Asynchronous, run_async

if TYPE_CHECKING:
    from .collection import AsyncCollection  # noqa: F401 - named in a base class (a cycle)

__all__ = ["AsyncCursor", "AsyncCommandCursor", "AsyncRawBatchCursor", "AsyncRawBatchCommandCursor"]


class _AsyncIterating(Asynchronous, AsyncClosesOnExit, CursorBase["AsyncCollection"]):
    """``async for`` and ``async with`` (closes the cursor on the way out)."""

    async def next(self) -> Any:
        """The next document (a raw batch for raw-batch cursors); StopAsyncIteration at the
        end."""
        item = self._next_buffered()
        if item is not None:
            return item
        item = await run_async(self._engine, self._next_item())
        if item is END:
            raise StopAsyncIteration
        return item

    # the same coroutine function: ``async for`` pays no second coroutine per document
    __anext__ = next

    def __aiter__(self) -> Self:
        return self


class AsyncCursor(_AsyncIterating, FindCursorBase["AsyncCollection"]):
    """The documents of a find, from ``AsyncCollection.find`` (options chain until the first
    read, as in PyMongo)."""

    def __getitem__(self, index: Any) -> NoReturn:
        raise IndexError(f"{type(self).__name__} does not support indexing")


class AsyncRawBatchCursor(RawBatches, AsyncCursor):
    """A find cursor that yields each batch as the BSON bytes of its documents, concatenated
    (PyMongo's ``AsyncRawBatchCursor``, from ``AsyncCollection.find_raw_batches``)."""


class AsyncCommandCursor(_AsyncIterating, CommandCursorBase["AsyncCollection"]):
    """An open cursor of an aggregate, a listX command or ``cursor_command``, or the fixed
    list of ``listDatabases`` (PyMongo's ``AsyncCommandCursor``)."""


class AsyncRawBatchCommandCursor(RawBatches, AsyncCommandCursor):
    """A command cursor that yields each batch as the BSON bytes of its documents
    (PyMongo's ``AsyncRawBatchCommandCursor``, from ``aggregate_raw_batches``)."""
