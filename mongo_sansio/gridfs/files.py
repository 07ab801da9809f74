"""The GridFS rules that are not about chunks: the files document, the two indexes and when
to create them, revisions of a name, and the filters the operations send.

Pure functions of their arguments: the upload date is given (the core reads no clock).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any

from mongo_sansio.bson.types import Int64

__all__ = [
    "CHUNKS_INDEX",
    "DEFAULT_CHUNK_SIZE",
    "FILES_INDEX",
    "by_id",
    "check_chunk_size",
    "check_filename",
    "files_document",
    "index_exists",
    "revision_order",
]

#: 255 KiB: a chunk plus its document stays under the 256 KiB the server once allocated
DEFAULT_CHUNK_SIZE = 255 * 1024
#: the files collection's index (filename, then upload date: revisions of one name in order)
FILES_INDEX: dict[str, int] = {"filename": 1, "uploadDate": 1}
#: the chunks collection's unique index (a file's chunks by number)
CHUNKS_INDEX: dict[str, int] = {"files_id": 1, "n": 1}


def check_chunk_size(chunk_size: Any) -> int:
    """A chunk size in bytes: a positive int (TypeError / ValueError otherwise)."""
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool):
        raise TypeError(f"chunk_size_bytes must be an integer, not {type(chunk_size)}")
    if chunk_size <= 0:
        raise ValueError(f"chunk_size_bytes must be positive, not {chunk_size}")
    return chunk_size


def check_filename(filename: Any) -> str:
    """PyMongo's check of a file name: a str (TypeError otherwise)."""
    if not isinstance(filename, str):
        raise TypeError(f"filename must be an instance of str, not {type(filename)}")
    return filename


def files_document(
    file_id: Any,
    filename: str,
    length: int,
    chunk_size: int,
    upload_date: datetime.datetime,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The files collection document of a finished upload.  ``length`` is an Int64 (the
    spec's SHOULD); no ``md5`` (deprecated by the spec, and PyMongo 4 writes none);
    ``metadata`` only when given."""
    document: dict[str, Any] = {
        "_id": file_id,
        "length": Int64(length),
        "chunkSize": chunk_size,
        "uploadDate": upload_date,
        "filename": filename,
    }
    if metadata is not None:
        document["metadata"] = metadata
    return document


def by_id(value: Any, field: str = "_id") -> dict[str, Any]:
    """The filter for ``field == value``: the value itself (the form the spec's tests expect
    on the wire), or ``{"$eq": value}`` when the value is a document, which the server would
    otherwise read as operators or as a whole-document match."""
    if isinstance(value, Mapping):
        return {field: {"$eq": value}}
    return {field: value}


def revision_order(revision: Any) -> tuple[int, int]:
    """``(skip, uploadDate sort direction)`` that finds revision ``revision`` of a name with
    a one-document query: 0 the oldest, 1 the next, ...; -1 the newest, -2 the one before."""
    if not isinstance(revision, int) or isinstance(revision, bool):
        raise TypeError(f"revision must be an integer, not {type(revision)}")
    if revision >= 0:
        return revision, 1
    return -revision - 1, -1


def _same_key(existing: Any, wanted: Mapping[str, int]) -> bool:
    # the spec: keys compare in order with numbers compared as numbers (1 == 1.0 == Int64(1))
    if not isinstance(existing, Mapping) or len(existing) != len(wanted):
        return False
    for (name, direction), (wanted_name, wanted_direction) in zip(
        existing.items(), wanted.items(), strict=True
    ):
        if name != wanted_name or isinstance(direction, bool):
            return False
        if not isinstance(direction, int | float) or direction != wanted_direction:
            return False
    return True


def index_exists(indexes: Iterable[Mapping[str, Any]], key: Mapping[str, int]) -> bool:
    """Whether one of ``indexes`` (listIndexes documents) has exactly ``key``."""
    return any(_same_key(index.get("key"), key) for index in indexes)
