"""The async wrappers, written once for the asyncio and trio clients: PyMongo's async API
(``AsyncMongoClient``, ``AsyncDatabase``, ``AsyncCollection``, ``AsyncCursor``,
``AsyncCommandCursor``, ``AsyncChangeStream``, ``AsyncClientSession``) over the blocking
client's shared bases (:mod:`mongo_sansio.adapters._api`).  Only what must differ from the
blocking classes lives here: ``async for``, ``async with``, ``with_transaction``'s coroutine
callback, the engine and closing.  Import a runtime's client instead:
``from mongo_sansio.adapters.asyncio import AsyncMongoClient`` (or ``.trio``).
"""

from .change_stream import AsyncChangeStream
from .collection import AsyncCollection
from .cursor import AsyncCommandCursor, AsyncCursor, AsyncRawBatchCommandCursor, AsyncRawBatchCursor
from .database import AsyncDatabase
from .session import AsyncClientSession

__all__ = [
    "AsyncChangeStream",
    "AsyncClientSession",
    "AsyncCollection",
    "AsyncCommandCursor",
    "AsyncCursor",
    "AsyncDatabase",
    "AsyncRawBatchCommandCursor",
    "AsyncRawBatchCursor",
]
