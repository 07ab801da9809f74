"""GridFS for the async clients (PyMongo's ``AsyncGridFSBucket``, ``AsyncGridIn``,
``AsyncGridOut``, ``AsyncGridOutCursor``), shared by asyncio and trio.

Everything but ``async with`` and ``async for`` is the blocking GridFS's code
(:mod:`mongo_sansio.adapters._api.gridfs`); here each operation is awaited:
``file_id = await bucket.upload_from_stream("name", data)``, ``grid_out = await
bucket.open_download_stream(file_id)``, ``await grid_out.read()``.  ``bucket.find()`` and
``open_upload_stream()`` return at once, as in PyMongo.  A source's ``read`` may be a
coroutine function (an async file).
"""

from __future__ import annotations

from typing import Any, Self

from mongo_sansio.gridfs import (
    DEFAULT_CHUNK_SIZE,
    CorruptGridFile,
    FileExists,
    GridFSError,
    NoFile,
    errors,
)

from .._api.grid_file import GridInBase, GridOutBase, GridOutCursorMixin
from .._api.gridfs import GridFSBucketBase
from .._api.gridfs_legacy import GridFSBase
from .._api.program import Asynchronous, run_async
from .cursor import AsyncCursor
from .database import AsyncDatabase

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "AsyncGridFS",
    "AsyncGridFSBucket",
    "AsyncGridIn",
    "AsyncGridOut",
    "AsyncGridOutCursor",
    "CorruptGridFile",
    "FileExists",
    "GridFSError",
    "NoFile",
    "errors",
]


class AsyncGridIn(Asynchronous, GridInBase):
    """An upload stream; ``async with`` closes it (storing the file) unless the block
    raised."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, error_type: Any, error: BaseException | None, traceback: Any) -> None:
        await run_async(self._engine, self._exiting(error))


class AsyncGridOut(Asynchronous, GridOutBase):
    """A download stream; ``async for`` gives lines; ``async with`` closes it."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> bytes:
        line = await self.readline()
        if not line:
            raise StopAsyncIteration
        return line

    async def to_list(self) -> list[bytes]:
        """The remaining lines."""
        return [line async for line in self]


class AsyncGridOutCursor(GridOutCursorMixin, AsyncCursor):
    """``bucket.find(...)``: an async find cursor over the files collection whose items are
    :class:`AsyncGridOut`."""


class AsyncGridFSBucket(
    Asynchronous, GridFSBucketBase[AsyncGridIn, AsyncGridOut, AsyncGridOutCursor]
):
    """GridFS over one async database (see the module docstring and
    :class:`~mongo_sansio.adapters._api.gridfs.GridFSBucketBase`)."""

    _database_class = AsyncDatabase
    _grid_in_class = AsyncGridIn
    _grid_out_class = AsyncGridOut
    _cursor_class = AsyncGridOutCursor


class AsyncGridFS(Asynchronous, GridFSBase[AsyncGridFSBucket, AsyncGridOut]):
    """PyMongo's legacy ``AsyncGridFS`` over one async database (``await fs.put(data)``,
    ``await fs.get(file_id)``...), over an :class:`AsyncGridFSBucket` of the same collections
    (:class:`~mongo_sansio.adapters._api.gridfs_legacy.GridFSBase`)."""

    _bucket_class = AsyncGridFSBucket
