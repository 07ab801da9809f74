"""What the blocking and async GridFS files share: :class:`GridInBase` (an upload stream,
PyMongo's ``GridIn``), :class:`GridOutBase` (a download stream, ``GridOut``) and
:class:`GridOutCursorMixin` (a find over the files collection that hands out ``GridOut``\\ s),
each method written once as a program (:mod:`.program`) over the collections' own programs.

The rules are the core's (:mod:`mongo_sansio.gridfs`): a :class:`~mongo_sansio.gridfs.ChunkWriter`
cuts an upload into numbered chunks and batches them, a
:class:`~mongo_sansio.gridfs.ChunkReader` checks a download's chunks.  The flavours add ``with``
/ ``async with`` and iteration (lines, as PyMongo's ``GridOut``).
"""

from __future__ import annotations

import datetime
import inspect
import os
import time
from collections.abc import Mapping
from typing import Any, TypeVar

from mongo_sansio.client.execute import operation_deadline
from mongo_sansio.errors import BulkWriteError, DuplicateKeyError, InvalidOperation
from mongo_sansio.gridfs import (
    ChunkReader,
    ChunkWriter,
    CorruptGridFile,
    FileExists,
    by_id,
    files_document,
)

from .._timeout import current_deadline, deadline_block
from .cursor import END
from .program import Call, Program, operation

__all__ = [
    "GridInBase",
    "GridOutBase",
    "GridOutCursorMixin",
    "check_no_transaction",
    "stream_deadline",
    "within",
]

T = TypeVar("T")

#: the server's duplicate key error codes
_DUPLICATE_KEY = (11000, 11001, 12582)


def check_no_transaction(session: Any) -> None:
    """GridFS refuses to run in a transaction (its files and chunks are written apart), as
    PyMongo's does."""
    if session is not None and getattr(session, "in_transaction", False):
        raise InvalidOperation("GridFS does not support multi-document transactions")


def stream_deadline(bucket: Any) -> float | None:
    """The deadline of a stream opened now: the CSOT spec has a timeoutMS (a ``timeout()``
    block around the opening, else the bucket's database's or client's) cap the whole lifetime
    of a GridFS stream, not each of the many operations it runs."""
    return operation_deadline(
        time.monotonic(),
        context=current_deadline(),
        own=bucket._timeout,
        client=bucket._engine.settings.timeout,
    )


def within(deadline: float | None, program: Program[T]) -> Program[T]:
    """Run ``program`` until ``deadline`` (None: under whatever deadline applies now)."""
    if deadline is None:
        return (yield from program)
    with deadline_block(deadline):
        return (yield from program)


def _now() -> datetime.datetime:
    # BSON dates keep milliseconds: the files document holds what the server will return
    now = datetime.datetime.now(tz=datetime.UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


class GridInBase:
    """A file being uploaded (``bucket.open_upload_stream(...)``): ``write`` bytes or a
    file-like object's contents, then ``close`` (or leave the ``with`` block) to store the last
    chunk and the files document.  Chunks go to the server in batches while writing."""

    #: extra fields of the files document (the legacy GridFS's ``put(data, contentType=...)``)
    _extra: Mapping[str, Any] | None = None

    def __init__(
        self,
        bucket: Any,
        file_id: Any,
        filename: str,
        chunk_size: int,
        metadata: Mapping[str, Any] | None,
        session: Any,
    ) -> None:
        check_no_transaction(session)
        self._bucket = bucket
        self._engine = bucket._engine
        self._session = session
        self._deadline = stream_deadline(bucket)
        self._writer = ChunkWriter(file_id, chunk_size)
        self._file: dict[str, Any] = {"_id": file_id, "filename": filename, "chunkSize": chunk_size}
        if metadata is not None:
            self._file["metadata"] = metadata
        self._closed = False

    # -- the files document's fields -------------------------------------------------------------

    @property
    def _id(self) -> Any:
        return self._file["_id"]

    @property
    def filename(self) -> str:
        filename: str = self._file["filename"]
        return filename

    name = filename

    @property
    def chunk_size(self) -> int:
        return self._writer.chunk_size

    @property
    def metadata(self) -> Mapping[str, Any] | None:
        return self._file.get("metadata")

    @property
    def closed(self) -> bool:
        return self._closed

    def _closed_only(self, field: str) -> Any:
        if not self._closed:
            raise AttributeError(f"can only get {field!r} on a closed file")
        return self._file.get(field)

    @property
    def length(self) -> int:
        """The file's length in bytes (once closed)."""
        length: int = self._closed_only("length")
        return length

    @property
    def upload_date(self) -> datetime.datetime:
        """When the upload finished (once closed)."""
        date: datetime.datetime = self._closed_only("uploadDate")
        return date

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    # -- writing ---------------------------------------------------------------------------------

    def _store(self, chunks: list[dict[str, Any]]) -> Program[None]:
        if not chunks:
            return
        yield from self._bucket._ensuring_indexes(self._session)
        collection = self._bucket._chunks
        try:
            yield from type(collection).insert_many.program(
                collection, chunks, session=self._session
            )
        except BulkWriteError as error:
            codes = {e.get("code") for e in error.details.get("writeErrors", ())}
            if codes & set(_DUPLICATE_KEY):
                raise FileExists(f"file with _id {self._id!r} already exists") from error
            raise

    def _writing(self, data: Any) -> Program[None]:
        if self._closed:
            raise ValueError("cannot write to a closed file")
        read = getattr(data, "read", None)
        if read is None:
            if isinstance(data, str):
                raise TypeError("must specify an encoding for file in order to write str")
            if not isinstance(data, bytes | bytearray | memoryview):
                raise TypeError("can only write strings or file-like objects")
            yield from self._store(self._writer.write(data))
            return
        awaited = inspect.iscoroutinefunction(read)
        while True:
            piece = (yield Call(read, (self.chunk_size,))) if awaited else read(self.chunk_size)
            if not piece:
                return
            if isinstance(piece, str):
                raise TypeError("must specify an encoding for file in order to write str")
            yield from self._store(self._writer.write(piece))

    @operation
    def write(self, data: Any) -> Program[None]:
        """Write ``data`` (bytes, or a file-like object read to its end)."""
        yield from within(self._deadline, self._writing(data))

    @operation
    def writelines(self, sequence: Any) -> Program[None]:
        """Write each piece of ``sequence`` (no separators added)."""
        for piece in sequence:
            yield from within(self._deadline, self._writing(piece))

    def _closing(self) -> Program[None]:
        if self._closed:
            return
        yield from self._store(self._writer.finish())
        yield from self._bucket._ensuring_indexes(self._session)
        document = files_document(
            self._id,
            self.filename,
            self._writer.length,
            self.chunk_size,
            _now(),
            self._file.get("metadata"),
        )
        # the legacy GridFS's (gridfs_legacy.new_file): a file may have no name, and any
        # other keyword is a field of the files document (contentType...)
        if document["filename"] is None:
            del document["filename"]
        if self._extra:
            document.update(self._extra)
        files = self._bucket._files
        try:
            yield from type(files).insert_one.program(files, document, session=self._session)
        except DuplicateKeyError as error:
            raise FileExists(f"file with _id {self._id!r} already exists") from error
        self._file = document
        self._closed = True

    @operation
    def close(self) -> Program[None]:
        """Store what is left and the files document (once; closing again does nothing)."""
        yield from within(self._deadline, self._closing())

    @operation
    def abort(self) -> Program[None]:
        """Delete the chunks written so far and close without storing the file."""
        yield from within(self._deadline, self._aborting())

    def _aborting(self) -> Program[None]:
        chunks, files = self._bucket._chunks, self._bucket._files
        yield from type(chunks).delete_many.program(
            chunks, by_id(self._id, "files_id"), session=self._session
        )
        yield from type(files).delete_one.program(files, by_id(self._id), session=self._session)
        self._closed = True

    def _exiting(self, error: BaseException | None) -> Program[None]:
        """Leaving a ``with`` block: close, or after an error only mark it closed (as PyMongo
        does; what was written stays until :meth:`abort`)."""
        if error is None:
            yield from within(self._deadline, self._closing())
        else:
            self._closed = True

    def __repr__(self) -> str:
        return f"{type(self).__name__}(_id={self._id!r}, filename={self.filename!r})"


class GridOutBase:
    """A stored file being read (``bucket.open_download_stream(...)``): ``read(size)``,
    ``readchunk()``, ``readline()``, ``seek``/``tell``, and the files document's fields
    (``filename``, ``length``, ``chunk_size``, ``upload_date``, ``metadata``; others as
    attributes).  The chunks come from one cursor, sorted by ``n``, checked as they come."""

    def __init__(self, bucket: Any, file_document: Mapping[str, Any], session: Any = None) -> None:
        check_no_transaction(session)
        self._bucket = bucket
        self._engine = bucket._engine
        self._session = session
        self._deadline = stream_deadline(bucket)
        self._file = file_document
        self._position = 0
        self._buffer = b""  # the rest of the chunk last read, past _position
        self._reader: ChunkReader | None = None
        self._cursor: Any = None
        self._closed = False

    # -- the files document's fields -------------------------------------------------------------

    @property
    def _id(self) -> Any:
        return self._file.get("_id")

    @property
    def filename(self) -> str | None:
        return self._file.get("filename")

    name = filename

    @property
    def length(self) -> int:
        length: int = self._file.get("length", 0)  # as stored (an Int64), as PyMongo's
        return length

    @property
    def chunk_size(self) -> int:
        return int(self._file.get("chunkSize", 0))

    @property
    def upload_date(self) -> datetime.datetime | None:
        return self._file.get("uploadDate")

    @property
    def metadata(self) -> Mapping[str, Any] | None:
        return self._file.get("metadata")

    @property
    def content_type(self) -> str | None:
        """The files document's ``contentType`` (PyMongo's legacy attribute), or None."""
        return self._file.get("contentType")

    @property
    def aliases(self) -> Any:
        """The files document's ``aliases`` (PyMongo's legacy attribute), or None."""
        return self._file.get("aliases")

    @property
    def closed(self) -> bool:
        return self._closed

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("__"):
            document = self.__dict__.get("_file")
            if document is not None and name in document:
                return document[name]
        raise AttributeError(f"{type(self).__name__} object has no attribute {name!r}")

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def tell(self) -> int:
        return self._position

    def seek(self, pos: int, whence: int = os.SEEK_SET) -> int:
        """Move to ``pos`` (from the start, the current position or the end, by ``whence``);
        the next read starts a new cursor at that chunk.  Returns the new position."""
        if whence == os.SEEK_SET:
            new = pos
        elif whence == os.SEEK_CUR:
            new = self._position + pos
        elif whence == os.SEEK_END:
            new = self.length + pos
        else:
            raise OSError(22, "Invalid value for `whence`")
        if new < 0:
            raise OSError(22, "Invalid value for `pos` - must be positive")
        if new != self._position:
            self._position = new
            self._buffer = b""
            self._drop_cursor()
        return new

    def _drop_cursor(self) -> None:
        # a cursor dropped unclosed is killed by the client's upkeep task (no I/O here)
        self._cursor = None
        self._reader = None

    # -- reading ---------------------------------------------------------------------------------

    def _next_chunk(self) -> Program[bytes]:
        """The data of the chunk holding ``_position`` (checked), from the chunks cursor."""
        if self._reader is None:
            start = self._position // self.chunk_size
            self._reader = ChunkReader(
                self._file.get("length", 0), self._file.get("chunkSize"), start
            )
            query = by_id(self._id, "files_id")
            if start:
                query["n"] = {"$gte": start}
            chunks = self._bucket._chunks
            self._cursor = chunks.find(query, sort=[("n", 1)], session=self._session)
        document = yield from self._cursor._next_item()
        if document is END:
            self._reader.end()  # raises: a chunk is missing
            return b""
        return self._reader.accept(document)

    def _check_end(self) -> Program[None]:
        """At the end of the file: an extra chunk with data makes the file corrupt; the cursor
        is closed either way."""
        if self._cursor is None or self._reader is None:
            return
        cursor, reader = self._cursor, self._reader
        self._drop_cursor()
        try:
            document = yield from cursor._next_item()
            if document is not END:
                reader.accept(document)
        finally:
            yield from cursor._closing()

    def _readchunk(self) -> Program[bytes]:
        if self._closed:
            raise ValueError("I/O operation on closed file")
        if self._buffer:
            data, self._buffer = self._buffer, b""
        elif self._position < self.length:
            chunk = yield from self._next_chunk()
            data = chunk[self._position % self.chunk_size :]
            if not data:
                raise CorruptGridFile("truncated chunk")  # (a checked chunk is never short)
        else:
            data = b""
        self._position += len(data)
        return data

    @operation
    def readchunk(self) -> Program[bytes]:
        """The rest of the current chunk (b"" at the end)."""
        return (yield from within(self._deadline, self._readchunk()))

    def _reading(self, size: int = -1, line: bool = False) -> Program[bytes]:
        remaining = self.length - self._position
        if size is None or size < 0 or size > remaining:
            size = max(remaining, 0)
        pieces: list[bytes] = []
        received = 0
        while received < size:
            piece = yield from self._readchunk()
            if not piece:
                break
            wanted = size - received
            if line:
                newline = piece.find(b"\n", 0, wanted)
                if newline >= 0:
                    wanted = newline + 1
                    size = received + wanted
            if len(piece) > wanted:  # keep the rest for the next read
                self._buffer = piece[wanted:]
                self._position -= len(self._buffer)
                piece = piece[:wanted]
            pieces.append(piece)
            received += len(piece)
        if self._position >= self.length:
            yield from self._check_end()
        return b"".join(pieces)

    @operation
    def read(self, size: int = -1) -> Program[bytes]:
        """At most ``size`` bytes (all that is left when negative or omitted)."""
        return (yield from within(self._deadline, self._reading(size)))

    @operation
    def readline(self, size: int = -1) -> Program[bytes]:
        """One line (up to and with ``b"\\n"``), or at most ``size`` bytes."""
        return (yield from within(self._deadline, self._reading(size, line=True)))

    @operation
    def readlines(self, hint: int = -1) -> Program[list[bytes]]:
        lines: list[bytes] = []
        total = 0
        while self._position < self.length:
            line = yield from within(self._deadline, self._reading(-1, line=True))
            lines.append(line)
            total += len(line)
            if 0 < hint <= total:
                break
        return lines

    def _closing(self) -> Program[None]:
        cursor = self._cursor
        self._drop_cursor()
        self._closed = True
        if cursor is not None:
            yield from cursor._closing()

    @operation
    def close(self) -> Program[None]:
        """Free the chunks cursor; reading afterwards is a ValueError."""
        yield from self._closing()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(_id={self._id!r}, filename={self.filename!r})"


class GridOutCursorMixin:
    """First among the bases of a flavour's find cursor over the files collection: hands out
    each files document as the flavour's ``GridOut`` (PyMongo's ``GridOutCursor``)."""

    _bucket: Any
    _session: Any

    def _grid_out(self, document: Any) -> Any:
        return self._bucket._grid_out_class(self._bucket, document, self._session)

    def _next_buffered(self) -> Any | None:
        document = super()._next_buffered()  # type: ignore[misc]
        return None if document is None else self._grid_out(document)

    def _next_item(self) -> Program[Any]:
        item = yield from super()._next_item()  # type: ignore[misc]
        return item if item is END else self._grid_out(item)

    def clone(self) -> Any:
        twin = super().clone()  # type: ignore[misc]
        twin._bucket = self._bucket
        return twin

    def add_option(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("Method does not exist for GridOutCursor")

    remove_option = add_option
