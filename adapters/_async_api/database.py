"""The async ``Database`` (PyMongo's ``AsyncDatabase``), shared by asyncio and trio.

Every method is the blocking database's (:mod:`mongo_sansio.adapters._api.database`); here
each operation is awaited (``await db.command("ping")``, ``await db.create_collection(...)``,
``cursor = await db.list_collections()``), while ``db["name"]`` / ``get_collection`` give an
:class:`~.collection.AsyncCollection` at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._api.database import DatabaseBase
from .._api.program import Asynchronous
from .change_stream import AsyncChangeStream
from .collection import AsyncCollection
from .cursor import AsyncCommandCursor

if TYPE_CHECKING:
    from .client import AsyncMongoClientBase  # noqa: F401 - named in a base class (a cycle)

__all__ = ["AsyncDatabase"]


class AsyncDatabase(
    Asynchronous,
    DatabaseBase["AsyncMongoClientBase", AsyncCollection, AsyncCommandCursor, AsyncChangeStream],
):
    """One database of an async client (see the module docstring)."""

    _collection_class = AsyncCollection
    _command_cursor_class = AsyncCommandCursor
    _change_stream_class = AsyncChangeStream
