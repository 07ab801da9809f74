"""Cursor replies whose batch documents stay as RawDocument views over the reply's bytes.

Input: the bytes of one reply document (``data[start:end]``, its length prefix checked by the
reader), the codec options its own fields decode with, the codec options the batch documents
are read with (the operation's, whose document class is RawDocument) and the nesting depth
the reply's top level counts as.  Output: the reply as a ``dict``, decoded as the general
decoder decodes it, except that ``cursor.firstBatch`` / ``cursor.nextBatch`` are lists of
:class:`~mongo_sansio.bson.RawDocument` views: nothing of a batch document is decoded or
copied until it is read.  Malformed bytes raise :class:`~mongo_sansio.bson.InvalidBSON`.

Why: an operation whose codec options ask for RawDocuments (``document_class=RawDocument``,
and the raw-batch cursors) would otherwise get every batch document decoded into a dict by
the connection and encoded back into a RawDocument afterwards -- for a batch of a thousand
documents, most of the client's time.  PyMongo's C extension leaves such batches raw too.
A reply without a cursor decodes exactly as it would otherwise.
"""

from __future__ import annotations

import struct
from typing import Any, Final

from mongo_sansio.bson._decode import document_end, read_value
from mongo_sansio.bson._decode_parts import I32, TRIE
from mongo_sansio.bson.codec_options import CodecOptions
from mongo_sansio.bson.errors import InvalidBSON
from mongo_sansio.bson.raw import UNWALKED, RawDocument

__all__ = ["decode_with_raw_batches"]

_BATCH_KEYS: Final = frozenset({"firstBatch", "nextBatch"})


def decode_with_raw_batches(
    data: bytes, start: int, end: int, opts: CodecOptions, batch_opts: CodecOptions, depth: int
) -> dict[str, Any]:
    """The reply at ``data[start:end]`` (see the module docstring)."""
    return _fields(data, start, end, opts, batch_opts, depth, True)


def _fields(
    data: bytes,
    start: int,
    end: int,
    opts: CodecOptions,
    batch_opts: CodecOptions,
    depth: int,
    top: bool,
) -> dict[str, Any]:
    """The elements of the document at ``data[start:end]``: the top level (``top``), whose
    ``cursor`` is read by this function too, or that cursor, whose batches stay raw."""
    if data[end - 1]:
        raise InvalidBSON(f"document ends with byte {data[end - 1]}, not NUL", end - 1)
    document: dict[str, Any] = {}
    pos = start + 4
    stop = end - 1
    find = data.find
    while pos < stop:
        t = data[pos]
        key_end = find(b"\x00", pos + 1, stop)
        if key_end < 0:
            raise InvalidBSON("an element's key is not NUL-terminated", pos)
        try:
            key = data[pos + 1 : key_end].decode()
        except UnicodeDecodeError as exc:
            raise InvalidBSON(f"invalid UTF-8 in a key ({exc.reason})", pos) from None
        pos = key_end + 1
        if top and t == 3 and key == "cursor":
            value_end = document_end(data, pos, stop, opts)
            value: Any = _fields(data, pos, value_end, opts, batch_opts, depth + 1, False)
        elif not top and t == 4 and key in _BATCH_KEYS:
            value_end = document_end(data, pos, stop, opts)
            value = _raw_documents(data, pos, value_end, batch_opts, depth + 1)
        else:
            value, value_end = read_value(data, t, pos, stop, opts, depth)
        document[key] = value
        pos = value_end
    if pos != stop:
        raise InvalidBSON("an element runs past the end of its document", pos)
    return document


def _raw_documents(
    data: bytes, start: int, end: int, batch_opts: CodecOptions, depth: int
) -> list[Any]:
    """The documents of the array at ``data[start:end]`` as views; an element that is not a
    document is decoded as it is (a server sends only documents in a batch)."""
    documents: list[Any] = []
    append = documents.append
    find = data.index
    new = object.__new__
    raw_document = RawDocument
    root = TRIE[0]
    unwalked = UNWALKED
    pos = start + 4
    stop = end - 1
    if data[stop]:
        raise InvalidBSON(f"array ends with byte {data[stop]}, not NUL", stop)
    try:
        while pos < stop:
            t = data[pos]
            value = find(0, pos + 1) + 1  # array keys are ignored, as the decoder ignores them
            if t != 3:
                item, pos = read_value(data, t, value, stop, batch_opts, depth)
                append(item)
                continue
            size = I32(data, value)[0]
            pos = value + size
            if size < 5 or pos > stop:
                document_end(data, value, stop, batch_opts)  # raises the precise error
            elif batch_opts.max_document_size is not None:
                document_end(data, value, stop, batch_opts)
            if data[pos - 1]:
                raise InvalidBSON(f"document ends with byte {data[pos - 1]}, not NUL", pos - 1)
            # RawDocument._view, inlined (a call per document fewer); test_raw_batches pins
            # that the two agree
            document = new(raw_document)
            document._data = data
            document._start = value
            document._end = pos
            document._opts = batch_opts
            document._index = unwalked
            document._scan = value + 4
            document._node = root
            document._whole = None
            document._positions = None
            append(document)
    except InvalidBSON:  # (a ValueError: precise already)
        raise
    except (ValueError, struct.error):
        raise InvalidBSON("an array element's key or length runs past the array", pos) from None
    if pos != stop:
        raise InvalidBSON("an element runs past the end of its array", pos)
    return documents
