"""The BSON decoder: BSON bytes in, Python documents out.

Inputs: ``bytes``, ``bytearray`` or ``memoryview`` (the latter two are copied to ``bytes``
once, because ``bytes`` slicing and ``bytes.index`` are what make the loop fast) and optional
:class:`CodecOptions`.

Outputs: :func:`decode` returns the one document the buffer holds (trailing bytes are an
error); :func:`decode_all` returns a list of the concatenated documents of a buffer and
:func:`decode_iter` yields them one by one, checking each document's length before decoding
it.  Documents are ``dict`` unless ``codec_options.document_class`` says otherwise (with
:class:`~mongo_sansio.bson.raw.RawDocument` as the document class, documents come back as lazy
views).  :func:`read_document` and :func:`read_value` are the pieces the lazy views share.

BSON type to Python value:

====================== ===============================================================
0x01 double            float
0x02 string            str (``unicode_decode_error_handler`` applies)
0x03 document          document_class, or DBRef for a subdocument with a str ``$ref``,
                       a ``$id`` and a ``$db`` that is absent or a str (DBRef spec)
0x04 array             list
0x05 binary            bytes (subtype 0); Binary(payload, 2) for the old subtype 2;
                       uuid.UUID for subtype 4 (STANDARD) or 3 (the legacy
                       representations) when ``uuid_representation`` says so;
                       Binary(payload, subtype) otherwise
0x06 / 0x0A            Undefined() / None
0x07 ObjectId          ObjectId
0x08 boolean           bool (the byte must be 0 or 1)
0x09 UTC datetime      datetime.datetime, naive UTC unless ``tz_aware`` (then aware, in
                       ``tzinfo`` if set); DatetimeMS where datetime cannot hold the
                       value or ``datetime_conversion`` asks for it; clamped to
                       datetime.min/max under DATETIME_CLAMP
0x0B / 0x0C            Regex(pattern, flags) / DBPointer(namespace, ObjectId)
0x0D / 0x0E / 0x0F     Code(code) / Symbol / Code(code, scope document)
0x10 int32             int
0x11 timestamp         Timestamp(time, increment)
0x12 int64             Int64 (so that re-encoding gives int64 again, and as PyMongo's
                       ``bson.decode`` does): bytes survive a decode/encode round trip
0x13 decimal128        Decimal128
0xFF / 0x7F            MinKey() / MaxKey()
====================== ===============================================================

With ``codec_options.pymongo_types`` the values are then replaced by PyMongo's bson classes,
as ``bson.decode`` gives them (:mod:`._pymongo_types`).

Errors: every malformed input raises :class:`InvalidBSON` with the byte offset (in the
buffer handed to the public function) and the reason; never IndexError, struct.error,
UnicodeDecodeError or RecursionError.  Documents nested deeper than
``codec_options.max_nesting_depth`` (the top level is depth 1) or larger than
``codec_options.max_document_size`` are refused.

How it is fast: see the general loop, :mod:`._decode_loop`, and the shape decoders it hands
known shapes to, :mod:`._decode_shapes`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from mongo_sansio.bson._decode_loop import (
    DEFAULT_SETTINGS,
    KIND_ARRAY,
    KIND_DOC,
    KIND_TOP,
    read_general,
    settings_for,
)

# re-exported where they were imported from before the loop had a module of its own: the
# shape decoders' helpers (_walkers) and the RawDocument check (wire/reader, connection/conn)
from mongo_sansio.bson._decode_loop import _is_raw as _is_raw
from mongo_sansio.bson._decode_loop import decode_array as decode_array
from mongo_sansio.bson._decode_loop import decode_nested as decode_nested
from mongo_sansio.bson._decode_parts import (
    DOUBLE,
    I32,
    I64,
    OBJECTID,
    TRIE,
    code_header,
    datetime_value,
    read_rare,
    read_string,
)
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from mongo_sansio.bson.errors import InvalidBSON
from mongo_sansio.bson.types import Code, Int64

__all__ = [
    "decode",
    "decode_all",
    "decode_iter",
    "read_document",
    "read_value",
    "as_bytes",
    "document_end",
    "KIND_TOP",
    "KIND_DOC",
    "KIND_ARRAY",
]

def as_bytes(data: Any) -> bytes:
    """``data`` as ``bytes``: bytes pass through, bytearray and memoryview are copied once."""
    if type(data) is bytes:
        return data
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    raise TypeError(f"BSON data must be bytes, bytearray or memoryview, not {type(data).__name__}")


def document_end(data: bytes, start: int, limit: int, opts: CodecOptions) -> int:
    """Check the length prefix of the document starting at ``start``; return where it ends.

    The document must fit within ``data[start:limit]`` and ``max_document_size``.  The
    trailing NUL is checked by whoever walks the document.
    """
    if limit - start < 5:
        raise InvalidBSON(f"{limit - start} bytes cannot hold a document (5 at least)", start)
    length: int = I32(data, start)[0]
    if length < 5:
        raise InvalidBSON(f"document length {length} is below the minimum of 5", start)
    if start + length > limit:
        raise InvalidBSON(
            f"document length {length} runs past the {limit - start} bytes available", start
        )
    max_size = opts.max_document_size
    if max_size is not None and length > max_size:
        raise InvalidBSON(f"document of {length} bytes exceeds max_document_size {max_size}", start)
    return start + length


def decode(data: bytes | bytearray | memoryview, codec_options: CodecOptions | None = None) -> Any:
    """Decode the one BSON document ``data`` holds (no bytes may follow it)."""
    if codec_options is None:
        opts = DEFAULT_CODEC_OPTIONS
        settings = DEFAULT_SETTINGS
    else:
        opts = codec_options
        settings = settings_for(opts)
    if type(data) is not bytes:
        data = as_bytes(data)
    size = len(data)
    if size < 5 or I32(data, 0)[0] != size or (settings[7] is not None and size > settings[7]):
        end = document_end(data, 0, size, opts)  # raises, unless bytes follow the document
        raise InvalidBSON(f"{size - end} bytes follow the document", end)
    if settings[3]:  # RawDocument is the document class
        return settings[2]._view(data, 0, size, opts, TRIE[0])
    if codec_options is not None and opts.pymongo_types:
        return _pymongo_values(read_general(data, 0, size, opts, settings, 1, KIND_TOP, TRIE[0]))
    return read_general(data, 0, size, opts, settings, 1, KIND_TOP, TRIE[0])


def decode_iter(
    data: bytes | bytearray | memoryview, codec_options: CodecOptions | None = None
) -> Iterator[Any]:
    """Yield each of the concatenated BSON documents of ``data`` in turn.

    Each document's length is checked against the bytes left before it is decoded, so a
    truncated last document fails only when it is reached.
    """
    opts = DEFAULT_CODEC_OPTIONS if codec_options is None else codec_options
    if type(data) is not bytes:
        data = as_bytes(data)
    size = len(data)
    settings = settings_for(opts)
    pos = 0
    while pos < size:
        end = document_end(data, pos, size, opts)
        if settings[3]:
            yield settings[2]._view(data, pos, end, opts, TRIE[0])
        elif opts.pymongo_types:
            document = read_general(data, pos, end, opts, settings, 1, KIND_TOP, TRIE[0])
            yield _pymongo_values(document)
        else:
            yield read_general(data, pos, end, opts, settings, 1, KIND_TOP, TRIE[0])
        pos = end


def decode_all(
    data: bytes | bytearray | memoryview, codec_options: CodecOptions | None = None
) -> list[Any]:
    """Decode the concatenated BSON documents of ``data`` (empty data gives ``[]``)."""
    return list(decode_iter(data, codec_options))


def read_document(
    data: bytes,
    start: int,
    end: int,
    opts: CodecOptions = DEFAULT_CODEC_OPTIONS,
    depth: int = 1,
    kind: int = KIND_TOP,
    shapes: bool = True,
) -> Any:
    """Decode the document (or, with ``kind=KIND_ARRAY``, the array) filling ``data[start:end]``.

    The caller has checked that the length prefix at ``start`` equals ``end - start``, is at
    least 5 and that ``end <= len(data)`` (:func:`document_end` does that).  ``depth`` is the
    nesting depth of this container (1 for a top-level document).  ``shapes`` says whether to
    use (and teach) the shape trie of top-level documents; pass False for containers that
    are not top-level documents.  Embedded documents are decoded fully, except that with
    RawDocument as the document class they come back as views.
    """
    root = TRIE[0] if shapes and kind != KIND_ARRAY else None
    document = read_general(data, start, end, opts, settings_for(opts), depth, kind, root)
    return _pymongo_values(document) if opts.pymongo_types else document


def _pymongo_values(document: Any) -> Any:
    """``document`` with PyMongo's bson classes in place of ours (``pymongo_types``)."""
    from mongo_sansio.bson._pymongo_types import to_pymongo  # late: it imports raw.py

    return to_pymongo(document)


def read_value(
    data: bytes, t: int, pos: int, stop: int, opts: CodecOptions, depth: int = 1
) -> tuple[Any, int]:
    """Decode the value of one element of type ``t`` starting at ``pos``; return it and its end.

    ``stop`` is the position of the containing document's trailing NUL: the value must end at
    or before it.  Documents, arrays and code-with-scope scopes are decoded fully at nesting
    depth ``depth + 1``, except that documents come back as views when RawDocument is the
    document class.  This is how the lazy views decode one value on access.
    """
    value: Any
    doc_class: Any = opts.document_class
    try:
        if t == 2:
            value, end = read_string(data, pos, opts.unicode_decode_error_handler)
        elif t == 16:
            value, end = I32(data, pos)[0], pos + 4
        elif t == 1:
            value, end = DOUBLE(data, pos)[0], pos + 8
        elif t == 18:
            value, end = Int64(I64(data, pos)[0]), pos + 8
        elif t == 8:
            value, end = data[pos], pos + 1
            if value > 1:
                raise InvalidBSON(f"boolean byte {value} is not 0 or 1", pos)
            value = value == 1
        elif t == 10:
            value, end = None, pos
        elif t == 7:
            value, end = OBJECTID(data[pos : pos + 12]), pos + 12
        elif t == 9:
            value, end = datetime_value(I64(data, pos)[0], opts), pos + 8
        elif t == 3 or t == 4:
            end = document_end(data, pos, stop, opts)
            if t == 3 and settings_for(opts)[3]:
                value = doc_class._view(data, pos, end, opts, None)
            else:
                value = read_document(
                    data, pos, end, opts, depth + 1, KIND_DOC if t == 3 else KIND_ARRAY, False
                )
        elif t == 15:
            code, scope_start, end = code_header(data, pos, stop, opts.unicode_decode_error_handler)
            if settings_for(opts)[3]:
                scope = doc_class._view(data, scope_start, end, opts, None)
            else:
                scope = read_document(data, scope_start, end, opts, depth + 1, KIND_TOP, False)
            value = Code(code, scope)
        else:
            value, end = read_rare(data, t, pos, opts)
    except InvalidBSON:
        raise
    except (IndexError, struct.error) as exc:
        raise InvalidBSON(f"data ends inside an element ({exc})", pos) from None
    except UnicodeDecodeError as exc:
        raise InvalidBSON(f"invalid UTF-8 in a string ({exc.reason})", pos) from None
    except ValueError as exc:
        raise InvalidBSON(f"cstring is not NUL-terminated ({exc})", pos) from None
    if end > stop:
        raise InvalidBSON("an element runs past the end of its document", pos)
    return value, end
