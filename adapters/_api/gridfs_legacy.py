"""PyMongo's legacy GridFS API (``gridfs.GridFS`` / ``gridfs.AsyncGridFS``): ``put``,
``get``, ``get_version``, ``get_last_version``, ``delete``, ``list``, ``find``, ``find_one``,
``exists`` and ``new_file``, written once as programs for the blocking and async clients.

It is a thin layer over a :class:`~.gridfs.GridFSBucketBase` of the same collections (the
bucket's upload and download streams, its index creation, its deadlines): no GridFS flow is
written twice.  What differs from the bucket is PyMongo's: files may have no filename and
carry any extra top-level field (``contentType``...), ``delete`` of a missing file does
nothing, ``get_version`` takes extra query fields, ``put`` of a ``str`` needs ``encoding``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from mongo_sansio.gridfs import NoFile, by_id, check_chunk_size, revision_order

from .grid_file import check_no_transaction
from .program import Program, operation

__all__ = ["GridFSBase"]

BucketT = TypeVar("BucketT")
GridOutT = TypeVar("GridOutT")

#: new_file's keywords that are the GridIn's own, not extra fields of the files document
_OWN = frozenset({"_id", "filename", "chunkSize", "chunk_size", "metadata", "encoding"})


class GridFSBase(Generic[BucketT, GridOutT]):
    """``GridFS(database, collection="fs")``: the legacy API over the ``<collection>.files``
    and ``<collection>.chunks`` collections (see the module docstring)."""

    _bucket_class: Callable[..., BucketT]

    def __init__(self, database: Any, collection: str = "fs") -> None:
        if not isinstance(collection, str):
            raise TypeError(f"collection must be an instance of str, not {type(collection)}")
        bucket: Any = self._bucket_class(database, bucket_name=collection)
        self._bucket = bucket
        self._engine = bucket._engine
        self._database = database
        self._collection = collection

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._database!r}, {self._collection!r})"

    # -- writing ---------------------------------------------------------------------------------

    def new_file(self, **kwargs: Any) -> Any:
        """A new upload stream (a GridIn).  ``_id`` (default: a new ObjectId), ``filename``,
        ``chunkSize`` / ``chunk_size``, ``metadata``, ``encoding`` (for ``str`` data) and any
        other keyword, stored as a field of the files document (``contentType``...)."""
        bucket: Any = self._bucket
        size = kwargs.get("chunkSize", kwargs.get("chunk_size", bucket.chunk_size_bytes))
        grid_in = bucket._grid_in_class(
            bucket,
            kwargs["_id"] if "_id" in kwargs else bucket._new_id(),
            kwargs.get("filename"),
            check_chunk_size(size),
            kwargs.get("metadata"),
            kwargs.get("session"),
        )
        grid_in._extra = {k: v for k, v in kwargs.items() if k not in _OWN and k != "session"}
        grid_in._encoding = kwargs.get("encoding")
        return grid_in

    @operation
    def put(self, data: Any, /, **kwargs: Any) -> Program[Any]:
        """Store ``data`` (bytes, a file-like object, or ``str`` with ``encoding``) as a new
        file (``kwargs`` as :meth:`new_file`'s); its ``_id``.  FileExists if ``_id`` is
        taken."""
        if isinstance(data, str):
            encoding = kwargs.get("encoding")
            if encoding is None:
                raise TypeError("must specify an encoding for file in order to write str")
            data = data.encode(encoding)
        grid_in = self.new_file(**kwargs)
        bucket: Any = self._bucket
        yield from bucket._whole(bucket._uploading(grid_in, data))
        return grid_in._id

    # -- reading ---------------------------------------------------------------------------------

    @operation
    def get(self, file_id: Any, session: Any = None) -> Program[GridOutT]:
        """The file with ``_id`` ``file_id`` (a GridOut); NoFile if none."""
        bucket: Any = self._bucket
        grid_out: GridOutT = yield from bucket._whole(bucket._opening_by_id(file_id, session))
        return grid_out

    def _version(
        self, filename: str | None, version: int, session: Any, query: dict[str, Any]
    ) -> Program[GridOutT]:
        check_no_transaction(session)
        if filename is not None:
            query["filename"] = filename
        skip, direction = revision_order(version)
        bucket: Any = self._bucket
        document = yield from bucket._find_file(
            query, session, skip=skip, sort=[("uploadDate", direction)]
        )
        if document is None:
            raise NoFile(f"no version {version} for filename {filename!r}")
        grid_out: GridOutT = bucket._grid_out_class(bucket, document, session)
        return grid_out

    @operation
    def get_version(
        self,
        /,
        filename: str | None = None,
        version: int = -1,
        session: Any = None,
        **kwargs: Any,
    ) -> Program[GridOutT]:
        """Version ``version`` of ``filename`` (0 the first stored, -1 the newest, -2 the one
        before...) among the files also matching ``kwargs``; NoFile if none."""
        bucket: Any = self._bucket
        found: GridOutT = yield from bucket._whole(
            self._version(filename, version, session, dict(kwargs))
        )
        return found

    @operation
    def get_last_version(
        self, /, filename: str | None = None, session: Any = None, **kwargs: Any
    ) -> Program[GridOutT]:
        """The newest version of ``filename`` (``get_version(filename, -1)``)."""
        bucket: Any = self._bucket
        found: GridOutT = yield from bucket._whole(
            self._version(filename, -1, session, dict(kwargs))
        )
        return found

    def find(self, *args: Any, **kwargs: Any) -> Any:
        """A cursor of GridOut over the files documents matching the filter (find's
        options), as ``GridFSBucket.find``."""
        bucket: Any = self._bucket
        return bucket.find(*args, **kwargs)

    @operation
    def find_one(
        self, filter: Any = None, session: Any = None, *args: Any, **kwargs: Any
    ) -> Program[GridOutT | None]:
        """The first file matching ``filter`` (a value that is not a document is an ``_id``),
        or None."""
        check_no_transaction(session)
        if filter is not None and not isinstance(filter, Mapping):
            filter = by_id(filter)
        bucket: Any = self._bucket
        document = yield from bucket._find_file(filter or {}, session, *args, **kwargs)
        if document is None:
            return None
        grid_out: GridOutT = bucket._grid_out_class(bucket, document, session)
        return grid_out

    @operation
    def exists(
        self, /, document_or_id: Any = None, session: Any = None, **kwargs: Any
    ) -> Program[bool]:
        """Whether a file matches: by ``_id`` (a value), a filter document, or ``kwargs``
        as a filter."""
        check_no_transaction(session)
        query = kwargs if kwargs else document_or_id
        if query is not None and not isinstance(query, Mapping):
            query = by_id(query)
        bucket: Any = self._bucket
        document = yield from bucket._find_file(query or {}, session, projection={"_id": 1})
        return document is not None

    @operation
    def list(self, session: Any = None) -> Program[list[str]]:
        """The distinct filenames stored (files without one left out)."""
        check_no_transaction(session)
        bucket: Any = self._bucket
        files = bucket._files
        names = yield from type(files).distinct.program(files, "filename", session=session)
        return [name for name in names if name is not None]

    # -- deleting --------------------------------------------------------------------------------

    def _deleting(self, file_id: Any, session: Any) -> Program[None]:
        check_no_transaction(session)
        bucket: Any = self._bucket
        files, chunks = bucket._files, bucket._chunks
        yield from type(files).delete_one.program(files, by_id(file_id), session=session)
        yield from type(chunks).delete_many.program(
            chunks, by_id(file_id, "files_id"), session=session
        )

    @operation
    def delete(self, file_id: Any, session: Any = None) -> Program[None]:
        """Delete the file with ``_id`` ``file_id`` and its chunks (nothing if there is none,
        as PyMongo's GridFS)."""
        bucket: Any = self._bucket
        yield from bucket._whole(self._deleting(file_id, session))
