"""GridFS for the blocking client, with PyMongo's names: change ``import gridfs`` to
``from mongo_sansio.adapters.blocking import gridfs``.

``gridfs.GridFSBucket(db, bucket_name="fs", chunk_size_bytes=255 * 1024, write_concern=None,
read_preference=None)`` stores files as chunks in ``<bucket>.chunks`` and one document each in
``<bucket>.files``; :class:`GridIn` is an upload stream, :class:`GridOut` a download stream,
:class:`GridOutCursor` what ``bucket.find()`` returns.  ``gridfs.errors`` holds ``NoFile``,
``CorruptGridFile``, ``FileExists`` and their base ``GridFSError``.  Everything but ``with``
and iteration is shared with the async GridFS (:mod:`mongo_sansio.adapters._api.gridfs`).

``gridfs.GridFS(db, collection="fs")`` is PyMongo's legacy API over the same collections
(``put``, ``get``, ``get_version``, ``get_last_version``, ``delete``, ``list``, ``find``,
``find_one``, ``exists``, ``new_file``; :mod:`mongo_sansio.adapters._api.gridfs_legacy`).
PyMongo's own ``gridfs`` module hands our databases to these classes
(:mod:`mongo_sansio.adapters._pymongo_gridfs`), so ``import gridfs`` works as well.
"""

from __future__ import annotations

from collections.abc import Iterator
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
from .._api.program import Blocking, run_blocking
from .cursor import Cursor
from .database import Database

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "CorruptGridFile",
    "FileExists",
    "GridFS",
    "GridFSBucket",
    "GridFSError",
    "GridIn",
    "GridOut",
    "GridOutCursor",
    "NoFile",
    "errors",
]


class GridIn(Blocking, GridInBase):
    """An upload stream (``bucket.open_upload_stream(...)``); ``with`` closes it (storing
    the file) unless the block raised."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, error_type: Any, error: BaseException | None, traceback: Any) -> None:
        run_blocking(self._engine, self._exiting(error))


class GridOut(Blocking, GridOutBase):
    """A download stream (``bucket.open_download_stream(...)``); iterating gives lines, as
    PyMongo's GridOut; ``with`` closes it."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line


class GridOutCursor(GridOutCursorMixin, Cursor):
    """``bucket.find(...)``: a find cursor over the files collection whose items are
    :class:`GridOut` (options chain as on any cursor)."""


class GridFSBucket(Blocking, GridFSBucketBase[GridIn, GridOut, GridOutCursor]):
    """GridFS over one database (see the module docstring and
    :class:`~mongo_sansio.adapters._api.gridfs.GridFSBucketBase`)."""

    _database_class = Database
    _grid_in_class = GridIn
    _grid_out_class = GridOut
    _cursor_class = GridOutCursor


class GridFS(Blocking, GridFSBase[GridFSBucket, GridOut]):
    """PyMongo's legacy GridFS API over one database (``GridFS(db, collection="fs")``: put,
    get, get_version, get_last_version, delete, list, find, find_one, exists, new_file), over
    a :class:`GridFSBucket` of the same collections
    (:class:`~mongo_sansio.adapters._api.gridfs_legacy.GridFSBase`)."""

    _bucket_class = GridFSBucket
