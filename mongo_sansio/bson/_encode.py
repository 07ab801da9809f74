"""The BSON encoder: Python documents in, BSON bytes out.

Inputs: a top-level mapping (``dict``, any ``collections.abc.Mapping``, or a
:class:`~mongo_sansio.bson.raw.RawDocument`) and optional :class:`CodecOptions`, of which
``uuid_representation``, ``max_nesting_depth`` and ``max_document_size`` are consulted.

Outputs: :func:`encode` returns the document's BSON bytes; :func:`encode_into` appends them to
a caller's ``bytearray`` (the wire layer builds messages that way) and returns how many bytes
it wrote (:mod:`._encode_many` encodes a list of dicts, an insert's documents, in one run of
the encoder).  Key order is kept exactly as the mapping
yields it (a top-level ``_id`` is *not* moved first).

Errors: :class:`InvalidDocument` for values BSON cannot hold (non-str or NUL-containing keys,
integers outside int64, nesting deeper than ``max_nesting_depth`` -- the top level is depth 1
--, documents over ``max_document_size`` or 2**31-1 bytes, ...) and :class:`UnencodableType`
(also a ``TypeError``) for Python types with no BSON counterpart.  Both carry ``path``, the
dotted key path of the offending value (``"a.b.3"``).

Python type to BSON element type:

==================================== ==================================================
bool / None / float                  0x08 boolean / 0x0A null / 0x01 double
int / Int64                          0x10 int32 if it fits, else 0x12 int64 / 0x12 int64
str / Symbol / Code                  0x02 string / 0x0E symbol / 0x0D code, or 0x0F code
                                     with scope when ``scope`` is not None
dict, Mapping, DBRef / RawDocument   0x03 document / its bytes copied unchanged
list, tuple / RawArray               0x04 array / its bytes copied unchanged
bytes, bytearray, memoryview, Binary 0x05 binary (subtype 0, or the Binary's own)
uuid.UUID / BinaryVector             0x05 per ``uuid_representation`` / subtype 9
Undefined / ObjectId / DBPointer     0x06 / 0x07 / 0x0C
datetime.datetime, DatetimeMS        0x09 UTC datetime (a naive datetime is UTC)
Regex, re.Pattern                    0x0B regular expression
Timestamp / Decimal128               0x11 / 0x13
MinKey / MaxKey                      0xFF / 0x7F
PyMongo's bson classes               as PyMongo encodes them (converted to ours first,
                                     by :mod:`._pymongo_types`, on the slow path)
==================================== ==================================================

How it is fast (pure Python: every bytecode counts): the pieces go onto one list with
``list.append`` (which CPython specialises; a third cheaper than ``bytearray +=``), and a
container's pieces are joined into one when it closes, behind their int32 length.  Measured
with callgrind (instructions per encode): flat_bson -16%, small_doc -17%, large_doc -15%
against growing a bytearray; deep_bson (many tiny containers) +5%.  The commonest types are tested
inline, in order of frequency; the rest go through a type-keyed table.  Per element type a
cache (a plain dict: a miss raises KeyError and the loop learns the key) maps a key to the
element's header -- type byte, key, NUL -- so a cached element costs one subscript.
Containers of common scalars ("leaves") are written by an inner loop without a stack frame.
With the default codec options, a dict whose shape (keys and value types) was met before is
encoded by that shape's compiled encoder instead (:mod:`._encode_shapes`).  Containers over ``_BIG_CONTAINER`` entries skip the caches (unique keys).  There
is no recursion: an explicit stack of suspended iterators bounds depth by
``max_nesting_depth`` alone.  The pieces that need none of the caches -- packers, scalar
payloads, the big-container run, chunked joins -- live in :mod:`._encode_parts`.
"""

from __future__ import annotations

import datetime
import re
import struct
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

from mongo_sansio.bson._encode_parts import (
    _EPOCH_NAIVE,
    _JOIN_CHUNK,
    _SMALL_I32,
    _big_items,
    _binary,
    _chunks,
    _datetime_ms,
    _int64,
    _join_parts,
    _located,
    _pack_double,
    _pack_i32,
    _pack_i64,
    _pack_timestamp,
    _pattern,
    _run_uncached,
    _string,
)
from mongo_sansio.bson._encode_parts import _INT32 as _INT32  # for _encode_many
from mongo_sansio.bson._encode_parts import _regex as _regex  # for _encode_shapes
from mongo_sansio.bson._encode_shapes import shaped
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from mongo_sansio.bson.decimal128 import Decimal128
from mongo_sansio.bson.errors import InvalidDocument, UnencodableType
from mongo_sansio.bson.objectid import ObjectId
from mongo_sansio.bson.types import (
    Binary,
    Code,
    DatetimeMS,
    DBPointer,
    DBRef,
    Int64,
    MaxKey,
    MinKey,
    Regex,
    Symbol,
    Timestamp,
    Undefined,
)
from mongo_sansio.bson.vector import BinaryVector

__all__ = ["encode", "encode_into"]

_BSON_SIZE_LIMIT = 2**31 - 1  # the int32 length prefix cannot say more
_TOO_DEEP = "document nested deeper than max_nesting_depth"
_EMPTY_CONTAINER = b"\x05\x00\x00\x00\x00"
_NO_KEY = object()  # "not inside an inlined child" (error paths name the key path with it)

# Containers with more entries than this are walked without the key caches: their keys are
# mostly seen once (a 100k-key document, a long array), so caching would miss and would evict
# the keys of ordinary documents.
_BIG_CONTAINER = 1024
_INDEX_STRS = tuple(str(i) for i in range(_BIG_CONTAINER))  # array keys share the caches

# A cache holds at most _KEY_CACHE_LIMIT keys and is emptied when full, so ids used as keys
# cannot grow memory without bound; keys over _KEY_CACHE_MAX_LEN characters are not cached.
_KEY_CACHE_LIMIT = 4096
_KEY_CACHE_MAX_LEN = 64


def _encode_key(key: Any) -> bytes:
    """A document key as a BSON cstring (UTF-8 plus the terminating NUL), validated."""
    if not isinstance(key, str):
        raise InvalidDocument(f"document keys must be str, not {type(key).__name__}")
    if "\x00" in key:
        raise InvalidDocument("document keys must not contain a NUL character")
    return key.encode("utf-8") + b"\x00"


class _KeyCache(dict[Any, bytes]):
    """Key -> key cstring, for the rarer types.  A miss validates and encodes the key."""

    __slots__ = ()

    def __missing__(self, key: Any) -> bytes:
        ekey = _encode_key(key)
        if type(key) is str and len(key) <= _KEY_CACHE_MAX_LEN:
            if len(self) >= _KEY_CACHE_LIMIT:
                self.clear()
            self[key] = ekey
        return ekey


_KEYS = _KeyCache()

# The hot loop's caches, key -> element header (type byte, key cstring and, for booleans, the
# value byte).  They are plain dicts -- a plain dict subscript costs half a subclass's -- so a
# miss raises KeyError; the loop then calls _learn and retries the element.
_Cache = dict[Any, bytes]
_H_DOUBLE, _H_STR, _H_DOC, _H_ARRAY, _H_OID, _H_DATE, _H_NULL = (_Cache() for _ in range(7))
_H_TRUE, _H_FALSE, _H_INT32, _H_INT64, _H_CODE_W_SCOPE = (_Cache() for _ in range(5))
_H_BINARY, _H_UNDEFINED, _H_REGEX, _H_DBPOINTER, _H_SYMBOL = (_Cache() for _ in range(5))
_H_TIMESTAMP, _H_DECIMAL128, _H_MINKEY, _H_MAXKEY = (_Cache() for _ in range(4))

# value type -> the caches the hot loop looks its key up in, as (cache, prefix, suffix)
# (the types of _SIMPLE below are added to it there)
_HOT: dict[type, tuple[tuple[_Cache, bytes, bytes], ...]] = {
    int: ((_H_INT32, b"\x10", b""), (_H_INT64, b"\x12", b"")),
    dict: ((_H_DOC, b"\x03", b""),),
    list: ((_H_ARRAY, b"\x04", b""),),
    bool: ((_H_TRUE, b"\x08", b"\x01"), (_H_FALSE, b"\x08", b"\x00")),
    Code: ((_H_CODE_W_SCOPE, b"\x0f", b""),),
}


class _Uncached:
    """A value whose key cannot be cached, handed to the hot loop to write on the slow path."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _learn(key: Any, value: Any) -> bool | None:
    """Called when the hot loop's cache lookup of ``key`` (for ``value``) raised KeyError.

    Adds the key's headers to the caches for the value's type and returns True (retry the
    element), or returns None when the key is not cacheable (long, or a str subclass: write
    the element on the slow path), or False when the KeyError was no cache miss (the key is
    cached already, or the type has no cache).  Raises InvalidDocument for a key to refuse.
    """
    caches = _HOT.get(type(value))
    if caches is None or all(key in cache for cache, _, _ in caches):
        return False
    ekey = _encode_key(key)
    if type(key) is not str or len(key) > _KEY_CACHE_MAX_LEN:
        return None
    for cache, prefix, suffix in caches:
        if len(cache) >= _KEY_CACHE_LIMIT:
            cache.clear()  # bounded memory: a fresh start beats tracking recency
        cache[key] = prefix + ekey + suffix
    return True


# Types written as (header, payload(value)): exact type -> (type byte, the header cache,
# payload function or None for no payload).  The order matters for subclasses, which take the
# first entry they are an instance of (Symbol before str, Binary before bytes).
_SIMPLE: dict[type, tuple[bytes, _Cache, Callable[[Any], bytes] | None]] = {
    Int64: (b"\x12", _H_INT64, _int64),
    float: (b"\x01", _H_DOUBLE, _pack_double),
    Symbol: (b"\x0e", _H_SYMBOL, _string),
    str: (b"\x02", _H_STR, _string),
    bool: (b"\x08", _H_TRUE, lambda value: b"\x01" if value else b"\x00"),  # slow path only
    Binary: (b"\x05", _H_BINARY, lambda value: _binary(value, value.subtype)),
    bytes: (b"\x05", _H_BINARY, _binary),
    bytearray: (b"\x05", _H_BINARY, lambda value: _binary(bytes(value))),
    memoryview: (b"\x05", _H_BINARY, lambda value: _binary(value.tobytes())),  # len(): items
    BinaryVector: (b"\x05", _H_BINARY, lambda value: _binary(value.to_binary(), 9)),
    Undefined: (b"\x06", _H_UNDEFINED, None),
    ObjectId: (b"\x07", _H_OID, lambda value: value.binary),
    datetime.datetime: (b"\x09", _H_DATE, lambda value: _pack_i64(_datetime_ms(value))),
    DatetimeMS: (b"\x09", _H_DATE, lambda value: _pack_i64(int(value))),
    type(None): (b"\x0a", _H_NULL, None),
    Regex: (b"\x0b", _H_REGEX, _regex),
    re.Pattern: (b"\x0b", _H_REGEX, _pattern),
    DBPointer: (b"\x0c", _H_DBPOINTER, lambda value: _string(value.namespace) + value.id.binary),
    Timestamp: (b"\x11", _H_TIMESTAMP, lambda value: _pack_timestamp(value.inc, value.time)),
    Decimal128: (b"\x13", _H_DECIMAL128, lambda value: value.bid),
    MinKey: (b"\xff", _H_MINKEY, None),
    MaxKey: (b"\x7f", _H_MAXKEY, None),
}
for _type, (_byte, _cache, _) in _SIMPLE.items():
    _HOT.setdefault(_type, ((_cache, _byte, b""),))
del _type, _byte, _cache

# What the main loop descends into: (container, is it an array, where a code-with-scope's
# total length goes or -1).
_Descend = tuple[Any, bool, int]


def _write_special(parts: list[Any], key: Any, value: Any, opts: CodecOptions) -> _Descend | None:
    """Write an element whose exact type is neither inlined nor in _SIMPLE.

    That is code, containers other than dict and list, UUIDs, subclasses, and values whose key
    the hot loop cannot cache.  Containers get their header written here and are returned for
    the main loop to descend into.
    """
    if type(value) is _Uncached:
        value = value.value
    if isinstance(value, Code):
        if value.scope is None:
            parts.append(b"\x0d")
            parts.append(_KEYS[key])
            parts.append(_string(value))
            return None
        parts.append(b"\x0f")
        parts.append(_KEYS[key])
        cws_start = len(parts)  # the total length goes in front of parts[cws_start:] at the end
        parts.append(_string(value))
        raw = None if type(value.scope) is dict else _raw_bytes(value.scope)
        if raw is None:
            return (value.scope, False, cws_start)
        parts.append(raw)
        _close(parts, cws_start)
        return None
    if isinstance(value, Mapping):
        parts.append(b"\x03")
        parts.append(_KEYS[key])
        raw = _raw_bytes(value)
        if raw is None:
            return (value, False, -1)
        parts.append(raw)
        return None
    if isinstance(value, list | tuple):
        parts.append(b"\x04")
        parts.append(_KEYS[key])
        return (value, True, -1)
    if isinstance(value, _raw_types()[1]):  # a RawArray: its bytes as they are
        parts.append(b"\x04")
        parts.append(_KEYS[key])
        parts.append(value.raw)
        return None
    if isinstance(value, DBRef):
        parts.append(b"\x03")
        parts.append(_KEYS[key])
        return (value.as_doc(), False, -1)
    if isinstance(value, uuid.UUID):
        value = Binary.from_uuid(value, opts.uuid_representation)
    else:
        # PyMongo's bson values (some subclass str, bytes or int: caught before the loop)
        convert = _PYMONGO.get(type(value), _unseen)
        if convert is _unseen:
            convert = _learn_pymongo(type(value))
        if convert is not None:
            return _write_special(parts, key, convert(value), opts)  # ours now: no loop
    for cls, (type_byte, _, payload) in _SIMPLE.items():
        if isinstance(value, cls):
            data = b"" if payload is None else payload(value)
            parts.append(type_byte)
            parts.append(_KEYS[key])
            parts.append(data)
            return None
    if isinstance(value, int):  # int subclasses (IntEnum, ...) size like a plain int
        if -2147483648 <= value <= 2147483647:
            parts.append(b"\x10")
            parts.append(_KEYS[key])
            parts.append(_pack_i32(value))
        else:
            data = _int64(int(value))
            parts.append(b"\x12")
            parts.append(_KEYS[key])
            parts.append(data)
        return None
    name = type(value).__qualname__
    if type(value).__module__ != "builtins":
        name = f"{type(value).__module__}.{name}"
    raise UnencodableType(f"cannot encode an object of type {name}")


def _close(parts: list[Any], start: int) -> None:
    """Put the int32 length of ``parts[start:]`` (counting itself) in front of them, joined."""
    body = b"".join(parts[start:])
    parts[start:] = (_pack_i32(len(body) + 4), body)


_RAW_TYPES: tuple[Any, Any] | None = None


def _raw_types() -> tuple[Any, Any]:
    """(RawDocument, RawArray), imported on first use: raw.py sits above this module."""
    global _RAW_TYPES
    if _RAW_TYPES is None:
        from mongo_sansio.bson.raw import RawArray, RawDocument

        _RAW_TYPES = (RawDocument, RawArray)
    return _RAW_TYPES


def _raw_bytes(value: Any) -> Any:
    """The encoded bytes of ``value`` if it is a RawDocument (or PyMongo's RawBSONDocument),
    else None."""
    raw_document = _raw_types()[0]
    if isinstance(value, raw_document):
        return value.raw
    convert = _PYMONGO.get(type(value), _unseen)
    if convert is _unseen:
        convert = _learn_pymongo(type(value))
    if convert is not None:
        value = convert(value)
        if isinstance(value, raw_document):
            return value.raw
    return None


def _unseen(value: Any) -> Any:  # the _PYMONGO marker of a class not looked at yet
    raise AssertionError("never called")


# class -> how to convert its values from PyMongo's bson classes to ours, or None for a class
# that is not PyMongo's; filled as classes are met (PyMongo's bson is imported only then).
_PYMONGO: dict[type, Callable[[Any], Any] | None] = {}


def _learn_pymongo(cls: type) -> Callable[[Any], Any] | None:
    convert = None
    if any(base.__module__.startswith("bson.") for base in cls.__mro__):
        from mongo_sansio.bson._pymongo_types import to_ours_converter

        convert = to_ours_converter(cls)
    if len(_PYMONGO) >= _KEY_CACHE_LIMIT:
        _PYMONGO.clear()
    _PYMONGO[cls] = convert
    return convert


class _Encode(Protocol):
    def __call__(
        self, document: Mapping[str, Any], codec_options: CodecOptions | None = None
    ) -> bytes: ...


def _make_encode() -> _Encode:
    """Build :func:`encode`.  Constants are bound here as closure variables: in the loop they
    load as cheaply as locals, and calls stay free of the setup (small documents are
    dominated by per-call costs)."""
    pack_i32, pack_i64, pack_double = _pack_i32, _pack_i64, _pack_double
    h_str, h_int32, h_int64, h_double = _H_STR, _H_INT32, _H_INT64, _H_DOUBLE
    h_doc, h_array, h_true, h_false = _H_DOC, _H_ARRAY, _H_TRUE, _H_FALSE
    h_null, h_oid, h_date, h_cws, keys = _H_NULL, _H_OID, _H_DATE, _H_CODE_W_SCOPE, _KEYS
    datetime_type, int64_type, objectid_type, code_type = datetime.datetime, Int64, ObjectId, Code
    small_i32, index_strs, simple, run_uncached = _SMALL_I32, _INDEX_STRS, _SIMPLE, _run_uncached
    epoch, big_container, no_key = _EPOCH_NAIVE, _BIG_CONTAINER, _NO_KEY
    empty_container, join = _EMPTY_CONTAINER, b"".join
    join_parts, join_chunk, chunks_of = _join_parts, _JOIN_CHUNK, _chunks
    default_options = DEFAULT_CODEC_OPTIONS
    default_max_frames = DEFAULT_CODEC_OPTIONS.max_nesting_depth - 1
    default_depth = DEFAULT_CODEC_OPTIONS.max_nesting_depth
    default_uuid = DEFAULT_CODEC_OPTIONS.uuid_representation

    def encode(document: Mapping[str, Any], codec_options: CodecOptions | None = None) -> bytes:
        """The BSON encoding of ``document`` (see the module docstring for the type mapping)."""
        if type(document) is dict and len(document) <= big_container:
            if codec_options is None or (
                # options that encode as the defaults do (the document class and the decoding
                # options do not matter here): a collection's usual options
                codec_options.max_document_size is None
                and codec_options.max_nesting_depth == default_depth
                and codec_options.uuid_representation is default_uuid
            ):
                data = shaped(document)
                if data is not None and len(data) <= _BSON_SIZE_LIMIT:
                    return data
            items: Iterator[tuple[Any, Any]] = iter(document.items())
            big = False
        elif isinstance(document, Mapping):
            raw = None if type(document) is dict else _raw_bytes(document)
            if raw is not None:
                _check_size(len(raw), codec_options or default_options)
                return bytes(raw)
            big = len(document) > big_container
            items = _big_items(document, False) if big else iter(document.items())
        else:
            raise UnencodableType(
                f"a BSON document must be a mapping, not {type(document).__qualname__}"
            )
        if codec_options is None:
            opts = default_options
            max_frames = default_max_frames
            max_size = _BSON_SIZE_LIMIT
        else:
            opts = codec_options
            max_frames = opts.max_nesting_depth - 1
            max_size = opts.max_document_size or _BSON_SIZE_LIMIT
            if max_size > _BSON_SIZE_LIMIT:
                max_size = _BSON_SIZE_LIMIT
        # A frame saves the parent while a child container is written: (parent items, parent
        # start offset, key of the child, the child's code-with-scope start or -1, parent is
        # big).  The top level is depth 1, so at most max_nesting_depth - 1 frames.
        stack: list[tuple[Iterator[tuple[Any, Any]], int, Any, int, bool]] = []
        # The encoding is a list of byte strings, joined once at the end: appending to a list
        # costs a third less than growing a bytearray.  A container's length prefix goes in
        # when it closes: its parts are joined into one, preceded by the packed length.
        parts: list[Any] = []  # the top level's length and NUL are added at the end
        start = 0
        depth = 0  # len(stack), kept by hand: cheaper than calling len()
        # ``cur`` is what the for loop walks: the container's own iterator, or a one-element tuple
        # re-injecting an element that a faster path handed back (``items`` then continues).
        cur: Iterable[tuple[Any, Any]] = items
        key: Any = None
        key2: Any = no_key
        try:
            while True:
                try:
                    if big and cur is items:
                        # a big container: the uncached run writes what it can and hands the rest here
                        pending = run_uncached(parts, items)
                        cur = items if pending is None else (pending,)
                    for key, value in cur:
                        t = type(value)
                        if t is str:
                            data = value.encode()
                            parts.append(h_str[key])
                            size = len(data) + 1
                            parts.append(small_i32[size] if size < 1024 else pack_i32(size))
                            parts.append(data)
                            parts.append(b"\x00")
                            continue
                        if t is int:
                            if -2147483648 <= value <= 2147483647:
                                parts.append(h_int32[key])
                                parts.append(small_i32[value] if -128 <= value < 1024 else pack_i32(value))
                            else:
                                parts.append(h_int64[key])
                                parts.append(pack_i64(value))  # out of range: struct.error, reported below
                            continue
                        if t is bool:
                            parts.append(h_true[key] if value else h_false[key])
                            continue
                        if value is None:
                            parts.append(h_null[key])
                            continue
                        if t is float:
                            parts.append(h_double[key])
                            parts.append(pack_double(value))
                            continue
                        if t is int64_type:
                            parts.append(h_int64[key])
                            parts.append(pack_i64(value))  # out of range: struct.error, reported below
                            continue
                        if t is dict:
                            parts.append(h_doc[key])
                            container, is_array, cws_start = value, False, -1
                        elif t is list:
                            parts.append(h_array[key])
                            container, is_array, cws_start = value, True, -1
                        elif t is objectid_type:
                            parts.append(h_oid[key])
                            parts.append(value._id)  # the slot behind .binary: a property call costs more
                            continue
                        elif t is datetime_type and value.tzinfo is None:
                            parts.append(h_date[key])
                            # (days, seconds >= 0, microseconds >= 0): the sum floors sub-ms
                            # digits towards the past, as datetime_to_ms does
                            delta = value - epoch
                            parts.append(pack_i64(
                                (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000
                            ))
                            continue
                        elif t is code_type and type(value.scope) is dict:
                            # code with scope: int32 total length, code string, scope document
                            data = value.encode()
                            parts.append(h_cws[key])
                            cws_start = len(parts)
                            size = len(data) + 1
                            parts.append(small_i32[size] if size < 1024 else pack_i32(size))
                            parts.append(data)
                            parts.append(b"\x00")
                            container, is_array = value.scope, False
                        else:
                            spec = simple.get(t)
                            if spec is not None:
                                payload = spec[2]
                                if payload is None:
                                    parts.append(spec[1][key])
                                else:
                                    data = payload(value)  # first: nothing written if it fails
                                    parts.append(spec[1][key])
                                    parts.append(data)
                                continue
                            descend = _write_special(parts, key, value, opts)
                            if descend is None:
                                continue
                            container, is_array, cws_start = descend
                        # Only containers get here, with the header written: enter ``container`` --
                        # and, while the first non-scalar met is itself a dict or list, that one
                        # too: descending directly saves a detour through the loop.
                        parent = items
                        while True:
                            if depth >= max_frames:
                                raise InvalidDocument(_TOO_DEEP)
                            size = len(container)
                            if not size:
                                parts.append(empty_container)
                                if cws_start >= 0:
                                    body = join(parts[cws_start:])
                                    parts[cws_start:] = (pack_i32(len(body) + 4), body)
                                break
                            child_start = len(parts)
                            if size > big_container:
                                stack.append((items, start, key, cws_start, big))
                                depth += 1
                                cur = items = _big_items(container, is_array)
                                start = child_start
                                big = True
                                break
                            # (zip(..., strict=False) would double the cost of making the zip)
                            child: Iterator[tuple[Any, Any]] = (
                                zip(index_strs, container) if is_array else iter(container.items())  # noqa: B905
                            )
                            # Write the child right here while it holds only common scalars: a leaf
                            # container then costs no stack frame.
                            for key2, value2 in child:
                                t = type(value2)
                                if t is str:
                                    data = value2.encode()
                                    parts.append(h_str[key2])
                                    size = len(data) + 1
                                    parts.append(small_i32[size] if size < 1024 else pack_i32(size))
                                    parts.append(data)
                                    parts.append(b"\x00")
                                elif t is int and -2147483648 <= value2 <= 2147483647:
                                    parts.append(h_int32[key2])
                                    parts.append(small_i32[value2] if -128 <= value2 < 1024 else pack_i32(value2))
                                elif t is bool:
                                    parts.append(h_true[key2] if value2 else h_false[key2])
                                elif value2 is None:
                                    parts.append(h_null[key2])
                                elif t is float:
                                    parts.append(h_double[key2])
                                    parts.append(pack_double(value2))
                                else:
                                    break
                            else:
                                key2 = no_key
                                body = join(parts[child_start:])
                                parts[child_start:] = (pack_i32(len(body) + 5), body, b"\x00")
                                if cws_start >= 0:
                                    body = join(parts[cws_start:])
                                    parts[cws_start:] = (pack_i32(len(body) + 4), body)
                                break
                            # value2 stopped the inline loop: the child becomes the current container
                            stack.append((items, start, key, cws_start, big))
                            depth += 1
                            cur = items = child
                            start = child_start
                            big = False
                            key = key2
                            key2 = no_key
                            t = type(value2)
                            if t is dict:
                                parts.append(b"\x03")
                            elif t is list:
                                parts.append(b"\x04")
                            else:
                                cur = ((key, value2),)  # the general path writes it, then goes on
                                break
                            parts.append(keys[key])
                            container, is_array, cws_start = value2, t is list, -1
                        if items is parent:
                            continue  # the child was written inline: on with this container
                        break
                    else:
                        if cur is not items:
                            cur = items  # a re-injected element is written; go on with the container
                            continue
                        if not depth:
                            break  # the top level: closed below
                        body = join_parts(parts, start) if big else join(parts[start:])
                        parts[start:] = (pack_i32(len(body) + 5), body, b"\x00")
                        items, start, key, cws_start, big = stack.pop()
                        depth -= 1
                        cur = items
                        if cws_start >= 0:
                            body = join(parts[cws_start:])
                            parts[cws_start:] = (pack_i32(len(body) + 4), body)
                except KeyError as exc:
                    # A hot cache missed (or user code raised KeyError: then _learn says False).
                    if key2 is not no_key:
                        # the miss was inside the inline loop: the child becomes current
                        stack.append((items, start, key, cws_start, big))
                        depth += 1
                        items = child
                        start = child_start
                        big = False
                        key, value = key2, value2
                        key2 = no_key
                    learned = (
                        _learn(key, value)
                        if exc.args and exc.args[0] is key and exc.__traceback__ is not None
                        and exc.__traceback__.tb_next is None  # raised by our own subscript
                        else False
                    )
                    if learned is False:
                        raise
                    cur = ((key, value if learned else _Uncached(value)),)  # retry it
        except (InvalidDocument, UnicodeEncodeError, struct.error) as exc:
            if key2 is no_key:
                raise _located(exc, stack, key) from None
            raise _located(exc, stack, key, key2) from None
        if len(parts) > join_chunk:  # a big document: one copy of the bytes, not two
            chunks = chunks_of(parts)
            size = sum(map(len, chunks)) + 5
            if size > max_size:
                _check_size(size, opts)
            chunks.append(b"\x00")
            chunks.insert(0, pack_i32(size))
            return join(chunks)
        body = join(parts)
        size = len(body) + 5
        if size > max_size:
            _check_size(size, opts)
        return join((pack_i32(size), body, b"\x00"))

    return encode


def _check_size(size: int, opts: CodecOptions) -> int:
    """``size``, or InvalidDocument when a document of that size is over the limit."""
    limit = opts.max_document_size
    if size > _BSON_SIZE_LIMIT or (limit is not None and size > limit):
        shown = _BSON_SIZE_LIMIT if limit is None else min(limit, _BSON_SIZE_LIMIT)
        raise InvalidDocument(f"document is {size} bytes, over the limit of {shown}")
    return size


encode: _Encode = _make_encode()


def encode_into(
    buf: bytearray, document: Mapping[str, Any], codec_options: CodecOptions | None = None
) -> int:
    """Append the BSON encoding of ``document`` to ``buf``; return the number of bytes written.

    On error ``buf`` is left as it was.
    """
    data = encode(document, codec_options)
    buf += data
    return len(data)
