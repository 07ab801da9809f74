"""Building blocks of the BSON decoder (:mod:`._decode`) and the lazy views (:mod:`.raw`).

Inputs are always a ``bytes`` buffer, a position in it and, where values depend on them,
:class:`CodecOptions`.  Outputs are decoded values together with the position just past them,
or (:func:`value_end`) just the position.  Every malformation raises :class:`InvalidBSON` with
the offset in the buffer; Python's own IndexError / struct.error / ValueError that a truncated
buffer provokes are converted by the callers, which wrap whole loops rather than each read.

Also here: the *shape trie*, the decoder's memory of the element headers it has seen (see the
comment above :func:`new_node`).
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Callable, MutableMapping
from typing import Any

from mongo_sansio.bson.codec_options import CodecOptions, DatetimeConversion, UuidRepresentation
from mongo_sansio.bson.decimal128 import Decimal128
from mongo_sansio.bson.errors import InvalidBSON
from mongo_sansio.bson.objectid import ObjectId
from mongo_sansio.bson.types import (
    DATETIME_MAX_MS,
    DATETIME_MIN_MS,
    Binary,
    Code,
    DatetimeMS,
    DBPointer,
    DBRef,
    MaxKey,
    MinKey,
    Regex,
    Symbol,
    Timestamp,
    Undefined,
)

I32 = struct.Struct("<i").unpack_from
I64 = struct.Struct("<q").unpack_from
DOUBLE = struct.Struct("<d").unpack_from
U32_PAIR = struct.Struct("<II").unpack_from

EPOCH_NAIVE = datetime.datetime(1970, 1, 1)
_EPOCH_AWARE = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_MIN_NAIVE = datetime.datetime.min
_MAX_NAIVE = datetime.datetime.max.replace(microsecond=999000)  # BSON has milliseconds
OBJECTID = ObjectId._from_bytes

# The valueless types compare by type only and are immutable, so one instance serves all.
MINKEY = MinKey()
MAXKEY = MaxKey()
UNDEFINED = Undefined()

_LEGACY_UUIDS = (
    UuidRepresentation.PYTHON_LEGACY,
    UuidRepresentation.JAVA_LEGACY,
    UuidRepresentation.CSHARP_LEGACY,
)

_new_object = object.__new__
_set = object.__setattr__
_new_str = str.__new__


def make_code(code: str) -> Code:
    """``Code(code)`` without the constructor's checks (the decoder's str is known good)."""
    value = _new_str(Code, code)
    value.scope = None
    return value


def make_timestamp(time: int, inc: int) -> Timestamp:
    """``Timestamp(time, inc)`` without the checks: two unsigned 32-bit halves always fit."""
    value = _new_object(Timestamp)
    _set(value, "time", time)
    _set(value, "inc", inc)
    return value


def bad_string(what: str, length: int, pos: int) -> InvalidBSON:
    if length < 1:
        return InvalidBSON(f"{what} length {length} is below the minimum of 1", pos)
    return InvalidBSON(f"{what} of length {length} is not NUL-terminated", pos)


def bad_end(data: bytes, pos: int, stop: int) -> InvalidBSON:
    """The error for a container whose elements do not end exactly at its trailing NUL."""
    if pos != stop:
        return InvalidBSON("an element runs past the end of its document", stop)
    return InvalidBSON(f"document ends with byte {data[stop]}, not NUL", stop)


def too_deep(max_depth: int, pos: int) -> InvalidBSON:
    return InvalidBSON(f"documents nested deeper than max_nesting_depth {max_depth}", pos)


def converter(doc_class: type) -> Callable[[dict[str, Any]], Any]:
    """How a finished ``dict`` becomes an instance of a document class other than dict."""
    if issubclass(doc_class, MutableMapping):

        def convert(value: dict[str, Any]) -> Any:
            document = doc_class()
            document.update(value)
            return document

        return convert
    return doc_class  # an immutable Mapping type: built from a mapping


def finish_dbref(value: dict[str, Any], convert: Callable[[dict[str, Any]], Any] | None) -> Any:
    """A subdocument holding ``$ref``: a DBRef if it is one by the DBRef spec, else a document.

    It is one when ``$ref`` is a string, ``$id`` is present and ``$db`` is absent or a string;
    the other fields, in order, become the DBRef's extra fields.
    """
    ref = value["$ref"]
    if type(ref) is str and "$id" in value:
        database = value.get("$db")
        if database is None and "$db" not in value or type(database) is str:
            extra = {k: v for k, v in value.items() if k != "$ref" and k != "$id" and k != "$db"}
            dbref = DBRef(ref, value["$id"], database)
            # set directly: extra keys named like DBRef's parameters ("id", ...) cannot be
            # passed as keyword arguments
            _set(dbref, "extra", extra)
            return dbref
    return value if convert is None else convert(value)


def code_header(data: bytes, pos: int, stop: int, errors: str) -> tuple[str, int, int]:
    """Check a code-with-scope value at ``pos`` and decode its code string.

    Layout: int32 total length, string (int32 length, UTF-8, NUL), scope document; the total
    must be exactly the sum of the parts and end at or before ``stop``.  Returns the code,
    where the scope document starts and where the value ends.
    """
    total = I32(data, pos)[0]
    end = pos + total
    if total < 14 or end > stop:
        raise InvalidBSON(f"code with scope length {total} does not fit its parent", pos)
    n = I32(data, pos + 4)[0]
    scope_start = pos + 8 + n
    if n < 1 or scope_start + 5 > end or data[scope_start - 1]:
        raise InvalidBSON(f"code with scope string length {n} is inconsistent", pos + 4)
    code = data[pos + 8 : scope_start - 1].decode("utf-8", errors)
    scope_length = I32(data, scope_start)[0]
    if scope_length < 5 or scope_start + scope_length != end:
        raise InvalidBSON(f"code with scope length {total} does not match its parts", pos)
    return code, scope_start, end


def read_string(data: bytes, pos: int, errors: str, what: str = "string") -> tuple[str, int]:
    """A BSON string at ``pos`` (int32 length counting the NUL, UTF-8, NUL) and its end."""
    n = I32(data, pos)[0]
    end = pos + 4 + n
    if n < 1 or data[end - 1]:
        raise bad_string(what, n, pos)
    return data[pos + 4 : end - 1].decode("utf-8", errors), end


def binary_value(data: bytes, start: int, end: int, subtype: int, opts: CodecOptions) -> Any:
    """The value of binary payload ``data[start:end]`` of ``subtype`` (its bounds checked)."""
    if subtype == 0:
        return data[start:end]
    if subtype == 2:
        # the old binary subtype repeats the payload length inside the payload
        if end - start < 4 or I32(data, start)[0] != end - start - 4:
            raise InvalidBSON("binary subtype 2 inner length does not match its size", start)
        return Binary(data[start + 4 : end], 2)
    value = Binary(data[start:end], subtype)
    if (subtype == 3 or subtype == 4) and end - start == 16:
        rep = opts.uuid_representation
        if (subtype == 4 and rep == UuidRepresentation.STANDARD) or (
            subtype == 3 and rep in _LEGACY_UUIDS
        ):
            return value.as_uuid(rep)
    return value


def read_binary(data: bytes, pos: int, opts: CodecOptions) -> tuple[Any, int]:
    n = I32(data, pos)[0]
    if n < 0:
        raise InvalidBSON(f"binary length {n} is negative", pos)
    start = pos + 5
    end = start + n
    if end > len(data):
        raise InvalidBSON(f"binary length {n} runs past the end of the data", pos)
    return binary_value(data, start, end, data[pos + 4], opts), end


def datetime_value(ms: int, opts: CodecOptions) -> Any:
    """A UTC datetime (ms since the epoch) per ``tz_aware``, ``tzinfo``, ``datetime_conversion``.

    Never fails on range: values datetime cannot hold give DatetimeMS (or are clamped under
    DATETIME_CLAMP).
    """
    conversion = opts.datetime_conversion
    if conversion == DatetimeConversion.DATETIME_MS:
        return DatetimeMS(ms)
    if not DATETIME_MIN_MS <= ms <= DATETIME_MAX_MS:
        if conversion != DatetimeConversion.DATETIME_CLAMP:
            return DatetimeMS(ms)
        ms = DATETIME_MIN_MS if ms < DATETIME_MIN_MS else DATETIME_MAX_MS
    if not opts.tz_aware:
        return EPOCH_NAIVE + datetime.timedelta(0, 0, 0, ms)
    value = _EPOCH_AWARE + datetime.timedelta(0, 0, 0, ms)
    tzinfo = opts.tzinfo
    if tzinfo is not None:
        try:
            value = value.astimezone(tzinfo)
        except OverflowError:
            # within a day of year 1 or 9999 the local time may not exist as a datetime
            if conversion == DatetimeConversion.DATETIME_CLAMP:
                edge = _MIN_NAIVE if ms < 0 else _MAX_NAIVE
                return edge.replace(tzinfo=tzinfo)
            return DatetimeMS(ms)
    return value


def read_rare(data: bytes, t: int, pos: int, opts: CodecOptions) -> tuple[Any, int]:
    """Decode a value of one of the less common non-container types; return it and its end."""
    if t == 5:
        return read_binary(data, pos, opts)
    if t == 17:
        inc, time = U32_PAIR(data, pos)
        return make_timestamp(time, inc), pos + 8
    if t == 13:
        code, end = read_string(data, pos, opts.unicode_decode_error_handler, "code")
        return make_code(code), end
    if t == 255:
        return MINKEY, pos
    if t == 127:
        return MAXKEY, pos
    if t == 19:
        if pos + 16 > len(data):
            raise InvalidBSON("decimal128 value is truncated", pos)
        return Decimal128.from_bid(data[pos : pos + 16]), pos + 16
    if t == 11:
        mid = data.index(0, pos)
        end = data.index(0, mid + 1)
        errors = opts.unicode_decode_error_handler
        regex = _new_object(Regex)
        _set(regex, "pattern", data[pos:mid].decode("utf-8", errors))
        _set(regex, "options", data[mid + 1 : end].decode("utf-8", errors))
        return regex, end + 1
    if t == 14:
        symbol, end = read_string(data, pos, opts.unicode_decode_error_handler, "symbol")
        return Symbol(symbol), end
    if t == 6:
        return UNDEFINED, pos
    if t == 12:
        namespace, end = read_string(data, pos, opts.unicode_decode_error_handler, "DBPointer")
        if end + 12 > len(data):
            raise InvalidBSON("DBPointer ObjectId is truncated", end)
        return DBPointer(namespace, OBJECTID(data[end : end + 12])), end + 12
    raise InvalidBSON(f"unknown element type 0x{t:02x}", pos)


# value sizes of the fixed-size types
_FIXED = {0x01: 8, 0x06: 0, 0x07: 12, 0x08: 1, 0x09: 8, 0x0A: 0, 0x10: 4, 0x11: 8, 0x12: 8,
          0x13: 16, 0x7F: 0, 0xFF: 0}


def value_end(data: bytes, t: int, pos: int) -> int:
    """Where the value of type ``t`` starting at ``pos`` ends, without decoding it.

    Lengths are checked to be at least their minimum, so a walk always moves forward; the
    caller checks the end against its container's end.
    """
    size = _FIXED.get(t)
    if size is not None:
        return pos + size
    n: int
    if t == 2 or t == 13 or t == 14:
        n = I32(data, pos)[0]
        if n < 1:
            raise bad_string("string", n, pos)
        return pos + 4 + n
    if t == 3 or t == 4 or t == 15:
        n = I32(data, pos)[0]
        if n < (14 if t == 15 else 5):
            raise InvalidBSON(f"embedded document length {n} is below the minimum", pos)
        return pos + n
    if t == 5:
        n = I32(data, pos)[0]
        if n < 0:
            raise InvalidBSON(f"binary length {n} is negative", pos)
        return pos + 5 + n
    if t == 11:
        return data.index(0, data.index(0, pos) + 1) + 1
    if t == 12:
        n = I32(data, pos)[0]
        if n < 1:
            raise bad_string("DBPointer", n, pos)
        return pos + 16 + n
    raise InvalidBSON(f"unknown element type 0x{t:02x}", pos)


# --- The shape trie ------------------------------------------------------------------------
#
# Finding a key's NUL and decoding the key cost more than most values do, and the documents
# of a collection mostly repeat the same keys in the same order.  So the decoder remembers the
# element headers (type byte, key, NUL) it has seen, as a trie: a node is one element of a
# document; its ``next`` slot predicts the element that follows it, its ``kids`` slot maps
# every header seen after it to that element's node.  Decoding walks the trie: one
# precompiled struct call reads the predicted header together with the value's fixed part,
# and if the header bytes are exactly the predicted ones the key is known without searching
# or decoding.  Any difference is a miss (the element is then read the ordinary way), so the
# trie can never change a result.  Embedded documents have their own root below their
# element's node (``sub``); all documents of one array share one root.  Memory is bounded:
# one decode learns at most LEARN_BUDGET nodes and the whole trie is dropped past MAX_NODES.
#
# A node is a list:
#   [next node, hot tuple, type byte, kids dict or None, child root or None, constant value,
#    position in its document, walk tuple, shape slot]
# The decoder unpacks the hot tuple (header bytes, unpack_from of "<{len(header)}s" + the
# value's fixed part, key, len(header) + fixed part, value kind) and a walk that does not
# decode unpacks the walk tuple (header, unpack_from, key, size, len(header), skip mode, type).
# Value kinds say how a value is finished after a hit (the loops test the numbers, most
# frequent first): 0 ready (int32, double), 1 string (read: its length), 2 document and
# 3 array (read: their length), 4 boolean, 5 constant (null, MinKey, MaxKey, undefined),
# 6 int64, 7 ObjectId, 8 datetime, 9 binary (read: its length), 10 code (read: its length),
# 11 timestamp, 12 decimal128, 13 anything else (read: nothing).  Skip modes tell a walk how
# to step over a value: 0 fixed size, 1 string or code (n >= 1 more bytes), 2 document or
# array (n bytes from the value's start), 3 binary (1 + n more bytes), 4 ask value_end.
# Only the first LEARN_DEPTH elements of a document are learned, so that a huge document
# (or one keyed by ids) cannot flood the trie.  The shape slot belongs to RawDocument's lazy
# walk (see _walkers.py): a root keeps its compiled walkers there, another node a mark that a
# whole document ended on it.
V_OTHER = 13

# type byte -> (struct format of the fixed part of the value, its size, value kind, constant)
_LAYOUT: dict[int, tuple[str, int, int, Any]] = {
    0x01: ("d", 8, 0, None),
    0x02: ("i", 4, 1, None),
    0x03: ("i", 4, 2, None),
    0x04: ("i", 4, 3, None),
    0x05: ("i", 4, 9, None),
    0x06: ("0s", 0, 5, UNDEFINED),
    0x07: ("12s", 12, 7, None),
    0x08: ("B", 1, 4, None),
    0x09: ("q", 8, 8, None),
    0x0A: ("0s", 0, 5, None),
    0x0D: ("i", 4, 10, None),
    0x10: ("i", 4, 0, None),
    0x11: ("Q", 8, 11, None),
    0x12: ("q", 8, 6, None),
    0x13: ("16s", 16, 12, None),
    0x7F: ("0s", 0, 5, MAXKEY),
    0xFF: ("0s", 0, 5, MINKEY),
}
_OTHER_LAYOUT = ("0s", 0, V_OTHER, None)
_SKIP = {1: 1, 10: 1, 2: 2, 3: 2, 9: 3, V_OTHER: 4}  # value kind -> skip mode (else 0)
LEARN_BUDGET = 1024
LEARN_DEPTH = 256
_MAX_NODES = 16384
_UNPACKERS: dict[str, Any] = {}  # struct format -> unpack_from, shared by nodes


def new_node(hdr: bytes, t: int, key: str, ordinal: int) -> list[Any]:
    fmt, size, vkind, const = _LAYOUT.get(t, _OTHER_LAYOUT)
    hlen = len(hdr)
    fmt = f"<{hlen}s{fmt}"
    unpack = _UNPACKERS.get(fmt)
    if unpack is None:
        if len(_UNPACKERS) >= 4096:
            _UNPACKERS.clear()
        unpack = _UNPACKERS[fmt] = struct.Struct(fmt).unpack_from
    size += hlen
    hot = (hdr, unpack, key, size, vkind)
    walk = (hdr, unpack, key, size, hlen, _SKIP.get(vkind, 0), t)
    return [MISS, hot, t, None, None, const, ordinal, walk, None]


def _never(data: bytes, pos: int) -> tuple[None, None]:
    return None, None


# The prediction of a node that has none yet: its header never equals a real one.
MISS: list[Any] = [
    None, (b"", _never, "", 0, V_OTHER), 0, None, None, None, 0, (b"", _never, "", 0, 0, 4, 0),
    None,
]


def new_root() -> list[Any]:
    return [MISS, MISS[1], 0, None, None, None, 0, MISS[7], None]


# [root of the top-level documents' trie, nodes learned since it was made]
TRIE: list[Any] = [new_root(), 0]


def count_nodes(learned: int) -> None:
    """Account for the nodes a decode added; drop the whole trie once it is too big."""
    TRIE[1] += learned
    if TRIE[1] > _MAX_NODES:
        TRIE[0] = new_root()
        TRIE[1] = 0
