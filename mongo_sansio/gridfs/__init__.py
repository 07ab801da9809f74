"""GridFS's pure rules (the GridFS spec): files documents, indexes, revisions, and chunks
written and checked.  The GridFS API itself (``GridFSBucket``) is written once in
:mod:`mongo_sansio.adapters._api.gridfs` over these rules; each client module exposes it
(``mongo_sansio.adapters.blocking.gridfs``, ``...asyncio.gridfs``...)."""

from .chunks import BATCH_BYTES, ChunkReader, ChunkWriter, chunk_count
from .errors import CorruptGridFile, FileExists, GridFSError, NoFile
from .files import (
    CHUNKS_INDEX,
    DEFAULT_CHUNK_SIZE,
    FILES_INDEX,
    by_id,
    check_chunk_size,
    check_filename,
    files_document,
    index_exists,
    revision_order,
)

__all__ = [
    "BATCH_BYTES",
    "CHUNKS_INDEX",
    "DEFAULT_CHUNK_SIZE",
    "FILES_INDEX",
    "ChunkReader",
    "ChunkWriter",
    "CorruptGridFile",
    "FileExists",
    "GridFSError",
    "NoFile",
    "by_id",
    "check_chunk_size",
    "check_filename",
    "chunk_count",
    "files_document",
    "index_exists",
    "revision_order",
]
