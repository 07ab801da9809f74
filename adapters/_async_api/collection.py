"""The async ``Collection`` (PyMongo's ``AsyncCollection``), shared by asyncio and trio.

Every method is the blocking collection's (:mod:`mongo_sansio.adapters._api.collection`); here
each operation is awaited (``await coll.insert_one(...)``, ``cursor = await
coll.aggregate(...)``, ``stream = await coll.watch()``), while ``find`` and
``find_raw_batches`` return their cursor at once, as in PyMongo.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._api.collection import CollectionBase
from .._api.program import Asynchronous
from .change_stream import AsyncChangeStream
from .cursor import AsyncCommandCursor, AsyncCursor, AsyncRawBatchCommandCursor, AsyncRawBatchCursor

if TYPE_CHECKING:
    from .database import AsyncDatabase  # noqa: F401 - named in a base class (a cycle)

__all__ = ["AsyncCollection"]


class AsyncCollection(
    Asynchronous,
    CollectionBase[
        "AsyncDatabase",
        AsyncCursor,
        AsyncRawBatchCursor,
        AsyncCommandCursor,
        AsyncRawBatchCommandCursor,
        AsyncChangeStream,
    ],
):
    """One collection; methods as in PyMongo's ``AsyncCollection`` (see the module
    docstring)."""

    _cursor_class = AsyncCursor
    _raw_cursor_class = AsyncRawBatchCursor
    _command_cursor_class = AsyncCommandCursor
    _raw_command_cursor_class = AsyncRawBatchCommandCursor
    _change_stream_class = AsyncChangeStream
