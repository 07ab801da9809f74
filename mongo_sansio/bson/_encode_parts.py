"""The BSON encoder's building blocks that need none of its key caches.

:mod:`._encode` owns the key caches, the type table and the main loop.  What lives here
writes or joins pieces of an encoding without them: the struct packers, the payloads of
scalar values (strings, binaries, regular expressions, UTC datetimes), the run that writes a
big container's scalars with each key encoded afresh, the chunked join of many parts, and the
error that names the key path where encoding failed.

Inputs: Python values, the encoder's list of parts.  Outputs: bytes, or parts appended to that
list.  Errors: :class:`InvalidDocument` for a value BSON cannot hold (a NUL inside a cstring,
an integer outside int64, a non-str pattern).

:func:`~._encode._make_encode` binds the ones the main loop calls per element (the packers,
:func:`_run_uncached`, :func:`_join_parts`) as closure variables when it builds the encoder,
so their living in another module costs the loop nothing; the rest run once per error or per
rare value.
"""

from __future__ import annotations

import datetime
import re
import struct
from collections.abc import Iterator
from typing import Any

from mongo_sansio.bson.errors import IntegerOverflow, InvalidDocument
from mongo_sansio.bson.types import OLD_BINARY_SUBTYPE, Int64, Regex

#: PyMongo's message for an integer beyond int64
_OVERFLOW = "BSON can only handle up to 8-byte ints (an integer out of int64 range)"

_INT32 = struct.Struct("<i")
_pack_i32 = _INT32.pack
_pack_i64 = struct.Struct("<q").pack
_pack_double = struct.Struct("<d").pack
_pack_timestamp = struct.Struct("<II").pack  # increment first: it is the low 4 bytes
_pack_binary_header = struct.Struct("<iB").pack  # length, subtype
# The uncached path writes a key without its NUL and lets the value's packer add it.
_pack_nul_i32 = struct.Struct("<xi").pack
_pack_nul_i64 = struct.Struct("<xq").pack
_pack_nul_double = struct.Struct("<xd").pack

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1

# Pre-packed int32s: string length prefixes and small integers are mostly small, and a tuple
# subscript costs a quarter of a struct call.  Negative values sit at the end, so that
# ``_SMALL_I32[i]`` is right for -128 <= i < 1024.
_SMALL_I32 = tuple(_pack_i32(i) for i in [*range(1024), *range(-128, 0)])
_SMALL_NUL_I32 = tuple(b"\x00" + packed for packed in _SMALL_I32)

_EPOCH_NAIVE = datetime.datetime(1970, 1, 1)
_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _cstring(value: str, what: str) -> bytes:
    if "\x00" in value:
        raise InvalidDocument(f"{what} must not contain a NUL character")
    return value.encode("utf-8") + b"\x00"


def _string(value: str) -> bytes:
    """A BSON string: int32 byte length (counting the NUL), UTF-8, NUL."""
    data = value.encode("utf-8")
    return _pack_i32(len(data) + 1) + data + b"\x00"


def _binary(data: bytes, subtype: int = 0) -> bytes:
    if subtype == OLD_BINARY_SUBTYPE:
        # the deprecated subtype 2 repeats the length inside the payload (BSON spec)
        return _pack_binary_header(len(data) + 4, 2) + _pack_i32(len(data)) + data
    return _pack_binary_header(len(data), subtype) + data


def _int64(value: int) -> bytes:
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise IntegerOverflow(_OVERFLOW)
    return _pack_i64(value)


def _regex(value: Regex) -> bytes:
    flags = value.options
    if len(flags) > 1:
        flags = "".join(sorted(flags))  # BSON's canonical form lists the options alphabetically
    return _cstring(value.pattern, "a regular expression pattern") + _cstring(
        flags, "regular expression flags"
    )


def _pattern(value: re.Pattern[Any]) -> bytes:
    if not isinstance(value.pattern, str):
        raise InvalidDocument("only str regular expression patterns can be stored in BSON")
    return _regex(Regex.from_native(value))


def _datetime_ms(value: datetime.datetime) -> int:
    """Like types.datetime_to_ms (aware datetimes are converted to UTC), in fewer steps."""
    if value.tzinfo is None or value.utcoffset() is None:
        delta = value.replace(tzinfo=None) - _EPOCH_NAIVE
    else:
        delta = value - _EPOCH_UTC
    return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000


def _big_items(container: Any, is_array: bool) -> Iterator[tuple[Any, Any]]:
    """The (key, value) pairs of a big container, for :func:`_run_uncached`."""
    if is_array:
        return zip(map(str, range(len(container))), container)  # noqa: B905 - same length
    return iter(container.items())


def _run_uncached(
    parts: list[Any],
    items: Iterator[tuple[Any, Any]],
    small_nul_i32: tuple[bytes, ...] = _SMALL_NUL_I32,
    pack_nul_i32: Any = _pack_nul_i32,
    pack_nul_i64: Any = _pack_nul_i64,
    pack_nul_double: Any = _pack_nul_double,
    int64_type: type = Int64,
) -> tuple[Any, Any] | None:
    """Write the scalar elements of a big container, encoding each key afresh.

    Returns at the container's end (None) or at the first element it does not handle -- a
    container, a rarer type, a key to refuse, or a value that fails to encode -- as
    (key, value) for the main loop, which writes it (or raises with the key path).  The key's
    NUL terminator rides along with the value's packer (the "<x..." formats).
    """
    key: Any = None
    value: Any = None
    try:
        for key, value in items:
            if "\x00" in key:  # (a non-str key fails here or at key.encode(): handed back)
                return key, value
            t = type(value)
            if t is str:
                data = value.encode()
                parts.append(b"\x02")
                parts.append(key.encode())
                size = len(data) + 1
                parts.append(small_nul_i32[size] if size < 1024 else pack_nul_i32(size))
                parts.append(data)
                parts.append(b"\x00")
            elif t is int64_type:
                parts.append(b"\x12")
                parts.append(key.encode())
                parts.append(pack_nul_i64(value))  # out of range: struct.error, handed back below
            elif t is int:
                if -2147483648 <= value <= 2147483647:
                    parts.append(b"\x10")
                    parts.append(key.encode())
                    parts.append(small_nul_i32[value] if -128 <= value < 1024 else pack_nul_i32(value))
                else:
                    parts.append(b"\x12")
                    parts.append(key.encode())
                    parts.append(pack_nul_i64(value))
            elif t is float:
                parts.append(b"\x01")
                parts.append(key.encode())
                parts.append(pack_nul_double(value))
            elif t is bool:
                parts.append(b"\x08")
                parts.append(key.encode())
                parts.append(b"\x00\x01" if value else b"\x00\x00")
            elif value is None:
                parts.append(b"\x0a")
                parts.append(key.encode())
                parts.append(b"\x00")
            else:
                return key, value
    except (UnicodeEncodeError, struct.error, TypeError, AttributeError):
        return key, value
    return None


# bytes.join takes a buffer view of every part first, into one array of about 80 bytes per
# part: a join of half a million parts allocates 40 MB and, on a machine where fresh pages
# are slow to fault in, costs five times the copying.  Parts are joined in chunks instead.
_JOIN_CHUNK = 4096


def _chunks(parts: list[Any], start: int = 0) -> list[bytes]:
    """``parts[start:]`` joined :data:`_JOIN_CHUNK` parts at a time."""
    join = b"".join
    return [join(parts[i : i + _JOIN_CHUNK]) for i in range(start, len(parts), _JOIN_CHUNK)]


def _join_parts(parts: list[Any], start: int = 0) -> bytes:
    """``b"".join(parts[start:])`` in chunks of :data:`_JOIN_CHUNK` parts."""
    if len(parts) - start <= _JOIN_CHUNK:
        return b"".join(parts[start:] if start else parts)
    return b"".join(_chunks(parts, start))


def _located(exc: Exception, stack: list[Any], *keys: Any) -> InvalidDocument:
    """The error to raise for ``exc``, met at the key path of ``stack`` frames and ``keys``."""
    path = ".".join([str(frame[2]) for frame in stack] + [str(key) for key in keys])
    if isinstance(exc, InvalidDocument):
        return exc if exc.path else type(exc)(exc.reason, path)
    if isinstance(exc, UnicodeEncodeError):
        return InvalidDocument(f"string is not encodable as UTF-8 ({exc.reason})", path)
    # struct.error: a value did not fit its packer -- an integer (a length over int32 would
    # be a string of 2 GiB, refused by every size limit before)
    return IntegerOverflow(_OVERFLOW, path)
