"""GridFS errors, with PyMongo's names (``gridfs.errors``).

All three are client-side errors (a :class:`~mongo_sansio.errors.MongoError`, never a server
error): :class:`NoFile` when no file matches, :class:`CorruptGridFile` when a file's chunks do
not add up to its files document, :class:`FileExists` when an upload's ``_id`` is taken.
"""

from __future__ import annotations

from mongo_sansio.errors import MongoError

__all__ = ["CorruptGridFile", "FileExists", "GridFSError", "NoFile"]


class GridFSError(MongoError):
    """Base class of the GridFS errors."""


class CorruptGridFile(GridFSError):
    """A stored file's chunks are missing, out of order or of the wrong size."""


class NoFile(GridFSError):
    """No stored file matches (by id, by name or revision)."""


class FileExists(GridFSError):
    """A file (or one of its chunks) with the upload's ``_id`` already exists."""
