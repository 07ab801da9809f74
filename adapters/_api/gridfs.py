"""What the blocking and async GridFS buckets share: PyMongo's ``GridFSBucket`` API, each
method written once as a program (:mod:`.program`) over the bucket's two collections.

A bucket named ``fs`` keeps each file as one document of ``fs.files`` (its ``_id``,
``filename``, ``length``, ``chunkSize``, ``uploadDate`` and optional ``metadata``) and its
bytes as numbered documents of ``fs.chunks`` (``files_id``, ``n``, ``data``).  The rules are the
core's (:mod:`mongo_sansio.gridfs`); the upload and download streams are
:mod:`.grid_file`'s.

* Before the first upload of a bucket object the two indexes are made, only when the files
  collection is empty (checked by a primary read), and only those missing from listIndexes.
* Every method runs under one deadline as a whole when a timeoutMS applies (a ``timeout()``
  block, else the database's or client's timeoutMS), as the CSOT spec asks of GridFS.
* GridFS refuses to run in a transaction (``InvalidOperation``), as PyMongo's does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from mongo_sansio.errors import ConfigurationError, OperationFailure
from mongo_sansio.gridfs import (
    CHUNKS_INDEX,
    DEFAULT_CHUNK_SIZE,
    FILES_INDEX,
    NoFile,
    by_id,
    check_chunk_size,
    check_filename,
    index_exists,
    revision_order,
)
from mongo_sansio.ops.write_concern import WriteConcern
from mongo_sansio.selection import ReadPreference

from .grid_file import check_no_transaction, stream_deadline, within
from .program import Program, operation

__all__ = ["GridFSBucketBase"]

GridInT = TypeVar("GridInT")
GridOutT = TypeVar("GridOutT")
CursorT = TypeVar("CursorT")

_PRIMARY = ReadPreference(mode="primary")


class GridFSBucketBase(Generic[GridInT, GridOutT, CursorT]):
    """GridFS over one database (see the module docstring); PyMongo's arguments:
    ``GridFSBucket(db, bucket_name="fs", chunk_size_bytes=255 * 1024, write_concern=None,
    read_preference=None)`` (None: the database's)."""

    _database_class: type[Any]
    _grid_in_class: Callable[..., GridInT]
    _grid_out_class: Callable[..., GridOutT]
    _cursor_class: Callable[..., CursorT]

    def __init__(
        self,
        db: Any,
        bucket_name: str = "fs",
        chunk_size_bytes: int = DEFAULT_CHUNK_SIZE,
        write_concern: WriteConcern | None = None,
        read_preference: ReadPreference | None = None,
    ) -> None:
        if not isinstance(db, self._database_class):
            name = self._database_class.__name__
            raise TypeError(f"database must be an instance of {name}, not {type(db)}")
        concern = write_concern if write_concern is not None else db.write_concern
        if not concern.acknowledged:
            raise ConfigurationError("write concern must be acknowledged")
        if not isinstance(bucket_name, str):
            raise TypeError(f"bucket_name must be an instance of str, not {type(bucket_name)}")
        self._bucket_name = bucket_name
        self._chunk_size_bytes = check_chunk_size(chunk_size_bytes)
        self._database = db
        self._engine = db.client.engine
        self._timeout: float | None = db.timeout
        self._files: Any = db[f"{bucket_name}.files"].with_options(
            write_concern=write_concern, read_preference=read_preference
        )
        # chunks keep our value classes whatever the client's (their bytes are read by this
        # module only, and PyMongo's classes would cost a conversion per chunk)
        chunks_codec = db.codec_options
        if chunks_codec.pymongo_types:
            chunks_codec = chunks_codec.with_options(pymongo_types=False)
        self._chunks: Any = db[f"{bucket_name}.chunks"].with_options(
            codec_options=chunks_codec, write_concern=write_concern, read_preference=read_preference
        )
        self._indexes_checked = False

    @property
    def bucket_name(self) -> str:
        return self._bucket_name

    @property
    def chunk_size_bytes(self) -> int:
        return self._chunk_size_bytes

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._database!r}, {self._bucket_name!r})"

    # -- shared steps ----------------------------------------------------------------------------

    def _whole(self, program: Program[Any]) -> Program[Any]:
        """Run ``program`` under one deadline (the bucket's timeoutMS for the whole method)."""
        return (yield from within(stream_deadline(self), program))

    def _ensure_index(
        self, collection: Any, key: dict[str, int], unique: bool, session: Any
    ) -> Program[None]:
        try:
            cursor = yield from type(collection).list_indexes.program(collection, session=session)
            indexes = yield from type(cursor).to_list.program(cursor)
        except OperationFailure:
            indexes = []
        if not index_exists(indexes, key):
            options = {"unique": True} if unique else {}
            yield from type(collection).create_index.program(
                collection, list(key.items()), session=session, **options
            )

    def _ensuring_indexes(self, session: Any) -> Program[None]:
        """The two indexes, before this bucket's first write (see the module docstring)."""
        if self._indexes_checked:
            return
        files = self._files.with_options(read_preference=_PRIMARY)
        first = yield from type(files).find_one.program(
            files, {}, projection={"_id": 1}, session=session
        )
        if first is None:
            yield from self._ensure_index(self._files, FILES_INDEX, False, session)
            yield from self._ensure_index(self._chunks, CHUNKS_INDEX, True, session)
        self._indexes_checked = True

    def _find_file(self, query: Mapping[str, Any], session: Any, **options: Any) -> Program[Any]:
        files = self._files
        return (yield from type(files).find_one.program(files, query, session=session, **options))

    # -- uploads ---------------------------------------------------------------------------------

    def open_upload_stream(
        self,
        filename: str,
        chunk_size_bytes: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        session: Any = None,
    ) -> GridInT:
        """A stream to write a new file's contents to (stored on ``close()``); its ``_id`` is
        a new ObjectId (PyMongo's ``bson.ObjectId`` when the database's values are PyMongo's)."""
        return self.open_upload_stream_with_id(
            self._new_id(), filename, chunk_size_bytes, metadata, session
        )

    def _new_id(self) -> Any:
        """A new file ``_id``, of the class the files collection generates."""
        return self._files.ops.id_factory()

    def open_upload_stream_with_id(
        self,
        file_id: Any,
        filename: str,
        chunk_size_bytes: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        session: Any = None,
    ) -> GridInT:
        """As :meth:`open_upload_stream`, with the file's ``_id`` given."""
        check_filename(filename)
        size = self._chunk_size_bytes if chunk_size_bytes is None else chunk_size_bytes
        return self._grid_in_class(
            self, file_id, filename, check_chunk_size(size), metadata, session
        )

    def _uploading(self, grid_in: Any, source: Any) -> Program[None]:
        try:
            yield from grid_in._writing(source)
        except BaseException:
            grid_in._closed = True
            raise
        yield from grid_in._closing()

    @operation
    def upload_from_stream(
        self,
        filename: str,
        source: Any,
        chunk_size_bytes: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        session: Any = None,
    ) -> Program[Any]:
        """Store ``source`` (bytes or a file-like object) as a new file; its ``_id``."""
        grid_in: Any = self.open_upload_stream(filename, chunk_size_bytes, metadata, session)
        yield from self._whole(self._uploading(grid_in, source))
        return grid_in._id

    @operation
    def upload_from_stream_with_id(
        self,
        file_id: Any,
        filename: str,
        source: Any,
        chunk_size_bytes: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        session: Any = None,
    ) -> Program[None]:
        """As :meth:`upload_from_stream`, with the file's ``_id`` given."""
        grid_in: Any = self.open_upload_stream_with_id(
            file_id, filename, chunk_size_bytes, metadata, session
        )
        yield from self._whole(self._uploading(grid_in, source))

    # -- downloads -------------------------------------------------------------------------------

    def _opening_by_id(self, file_id: Any, session: Any) -> Program[GridOutT]:
        check_no_transaction(session)
        document = yield from self._find_file(by_id(file_id), session)
        if document is None:
            raise NoFile(f"no file in gridfs collection {self._files!r} with _id {file_id!r}")
        return self._grid_out_class(self, document, session)

    def _opening_by_name(self, filename: str, revision: int, session: Any) -> Program[GridOutT]:
        check_filename(filename)
        check_no_transaction(session)
        skip, direction = revision_order(revision)
        document = yield from self._find_file(
            {"filename": filename}, session, skip=skip, sort=[("uploadDate", direction)]
        )
        if document is None:
            raise NoFile(f"no version {revision} for filename {filename!r}")
        return self._grid_out_class(self, document, session)

    @operation
    def open_download_stream(self, file_id: Any, session: Any = None) -> Program[GridOutT]:
        """A stream to read the file with ``_id`` ``file_id`` (NoFile if none)."""
        grid_out: GridOutT = yield from self._whole(self._opening_by_id(file_id, session))
        return grid_out

    @operation
    def open_download_stream_by_name(
        self, filename: str, revision: int = -1, session: Any = None
    ) -> Program[GridOutT]:
        """A stream to read revision ``revision`` of ``filename``: 0 the first stored, 1 the
        next...; -1 the newest (the default), -2 the one before."""
        opening = self._opening_by_name(filename, revision, session)
        grid_out: GridOutT = yield from self._whole(opening)
        return grid_out

    def _copying(self, opening: Program[Any], destination: Any) -> Program[None]:
        grid_out = yield from opening
        try:
            while True:
                chunk = yield from grid_out._readchunk()
                if not chunk:
                    break
                destination.write(chunk)
            yield from grid_out._check_end()
        finally:
            yield from grid_out._closing()

    @operation
    def download_to_stream(
        self, file_id: Any, destination: Any, session: Any = None
    ) -> Program[None]:
        """Write the file's contents to ``destination`` (anything with ``write``)."""
        yield from self._whole(self._copying(self._opening_by_id(file_id, session), destination))

    @operation
    def download_to_stream_by_name(
        self, filename: str, destination: Any, revision: int = -1, session: Any = None
    ) -> Program[None]:
        """Write revision ``revision`` of ``filename`` to ``destination``."""
        opening = self._opening_by_name(filename, revision, session)
        yield from self._whole(self._copying(opening, destination))

    def find(self, *args: Any, **kwargs: Any) -> CursorT:
        """A cursor of GridOut over the files documents matching ``filter`` (find's
        options: ``skip``, ``limit``, ``sort``, ``batch_size``, ``no_cursor_timeout``,
        ``session``...); opened lazily, as ``Collection.find``."""
        session = kwargs.pop("session", None)
        check_no_transaction(session)
        cursor: Any = self._cursor_class(self._files, *args, session=session, **kwargs)
        cursor._bucket = self
        result: CursorT = cursor
        return result

    # -- deletes, renames, drop ------------------------------------------------------------------

    def _deleting(self, file_id: Any, session: Any) -> Program[None]:
        check_no_transaction(session)
        files, chunks = self._files, self._chunks
        result = yield from type(files).delete_one.program(files, by_id(file_id), session=session)
        yield from type(chunks).delete_many.program(
            chunks, by_id(file_id, "files_id"), session=session
        )
        if not result.deleted_count:
            raise NoFile(f"no file could be deleted because none matched {file_id!r}")

    @operation
    def delete(self, file_id: Any, session: Any = None) -> Program[None]:
        """Delete the file with ``_id`` ``file_id`` and its chunks (NoFile if no files
        document matched; orphaned chunks are deleted all the same)."""
        yield from self._whole(self._deleting(file_id, session))

    def _deleting_by_name(self, filename: str, session: Any) -> Program[None]:
        check_no_transaction(session)
        files, chunks = self._files, self._chunks
        cursor = files.find({"filename": filename}, {"_id": 1}, session=session)
        documents = yield from type(cursor).to_list.program(cursor)
        ids = [document["_id"] for document in documents]
        result = yield from type(files).delete_many.program(
            files, {"_id": {"$in": ids}}, session=session
        )
        yield from type(chunks).delete_many.program(
            chunks, {"files_id": {"$in": ids}}, session=session
        )
        if not result.deleted_count:
            raise NoFile(f"no file could be deleted because none matched filename {filename!r}")

    @operation
    def delete_by_name(self, filename: str, session: Any = None) -> Program[None]:
        """Delete every revision of ``filename`` and their chunks (NoFile if none)."""
        yield from self._whole(self._deleting_by_name(filename, session))

    def _renaming(
        self, query: Mapping[str, Any], new_filename: str, many: bool, session: Any
    ) -> Program[int]:
        check_no_transaction(session)
        files = self._files
        update = {"$set": {"filename": new_filename}}
        method = type(files).update_many if many else type(files).update_one
        result = yield from method.program(files, query, update, session=session)
        matched: int = result.matched_count
        return matched

    @operation
    def rename(self, file_id: Any, new_filename: str, session: Any = None) -> Program[None]:
        """Rename the file with ``_id`` ``file_id`` (NoFile if none)."""
        matched = yield from self._whole(
            self._renaming(by_id(file_id), new_filename, False, session)
        )
        if not matched:
            raise NoFile(
                f"no files could be renamed {new_filename!r} because none matched file_id "
                f"{file_id!r}"
            )

    @operation
    def rename_by_name(
        self, filename: str, new_filename: str, session: Any = None
    ) -> Program[None]:
        """Rename every revision of ``filename`` (NoFile if none)."""
        renaming = self._renaming({"filename": filename}, new_filename, True, session)
        if not (yield from self._whole(renaming)):
            raise NoFile(
                f"no files could be renamed {new_filename!r} because none matched filename "
                f"{filename!r}"
            )

    def _dropping(self, session: Any) -> Program[None]:
        check_no_transaction(session)
        for collection in (self._files, self._chunks):
            yield from type(collection).drop.program(collection, session=session)
        self._indexes_checked = False

    @operation
    def drop(self, session: Any = None) -> Program[None]:
        """Drop the files and chunks collections (the GridFS spec's ``drop``)."""
        yield from self._whole(self._dropping(session))
