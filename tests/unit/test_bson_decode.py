"""The BSON decoder (mongo_sansio.bson._decode): every type, the codec options, every kind of
malformation, the depth limit, the bson-corpus, and properties under random input.

Documents are built byte by byte here (so that malformed ones are easy to make); PyMongo, when
installed, serves as an oracle for random documents.
"""

from __future__ import annotations

import datetime
import json
import os
import struct
import uuid
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import _decode_parts
from mongo_sansio.bson._decode import decode, decode_all, decode_iter, read_document
from mongo_sansio.bson.codec_options import (
    CodecOptions,
    DatetimeConversion,
    UuidRepresentation,
)
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
    Int64,
    MaxKey,
    MinKey,
    Regex,
    Symbol,
    Timestamp,
    Undefined,
)

# --- building BSON by hand -----------------------------------------------------------------


def i32(value: int) -> bytes:
    return struct.pack("<i", value)


def cstr(text: str) -> bytes:
    return text.encode() + b"\x00"


def string(text: str) -> bytes:
    data = text.encode()
    return i32(len(data) + 1) + data + b"\x00"


def el(type_byte: int, key: str, payload: bytes = b"") -> bytes:
    return bytes([type_byte]) + cstr(key) + payload


def doc(*elements: bytes) -> bytes:
    body = b"".join(elements)
    return i32(len(body) + 5) + body + b"\x00"


def array(*payloads: tuple[int, bytes]) -> bytes:
    return doc(*(el(t, str(i), p) for i, (t, p) in enumerate(payloads)))


def one(type_byte: int, payload: bytes = b"", opts: CodecOptions | None = None) -> Any:
    """Decode ``{"v": <value>}`` and return the value (twice: cold and with the trie warm)."""
    data = doc(el(type_byte, "v", payload))
    first = decode(data, opts)["v"]
    second = decode(data, opts)["v"]
    assert type(first) is type(second)
    return first


OID = bytes(range(12))

# --- every type ----------------------------------------------------------------------------


def test_double() -> None:
    assert one(0x01, struct.pack("<d", 1.5)) == 1.5
    assert type(one(0x01, struct.pack("<d", -0.0))) is float


def test_string() -> None:
    assert one(0x02, string("héllo")) == "héllo"
    assert one(0x02, string("")) == ""
    assert one(0x02, i32(4) + b"a\x00b\x00") == "a\x00b"  # embedded NUL: the length rules


def test_document_and_array() -> None:
    inner = doc(el(0x10, "x", i32(1)))
    assert decode(doc(el(0x03, "d", inner))) == {"d": {"x": 1}}
    arr = array((0x10, i32(1)), (0x02, string("two")), (0x03, doc()))
    assert decode(doc(el(0x04, "a", arr))) == {"a": [1, "two", {}]}
    assert decode(doc(el(0x04, "a", doc()))) == {"a": []}


def test_array_keys_are_ignored() -> None:
    # keys out of order, repeated or not numbers at all: items keep their order
    arr = doc(el(0x10, "0", i32(1)), el(0x10, "0", i32(2)), el(0x10, "x", i32(3)))
    data = doc(el(0x04, "a", arr))
    for _ in range(3):
        assert decode(data) == {"a": [1, 2, 3]}


def test_binary_subtypes() -> None:
    assert one(0x05, i32(3) + b"\x00abc") == b"abc"
    assert type(one(0x05, i32(3) + b"\x00abc")) is bytes
    user = one(0x05, i32(2) + b"\x80xy")
    assert isinstance(user, Binary) and user.subtype == 0x80 and bytes(user) == b"xy"
    old = one(0x05, i32(7) + b"\x02" + i32(3) + b"abc")
    assert isinstance(old, Binary) and old.subtype == 2 and bytes(old) == b"abc"
    vector = one(0x05, i32(3) + b"\x09\x03\x00\x7f")
    assert isinstance(vector, Binary) and vector.subtype == 9


@pytest.mark.parametrize("inner", [2, 4, -1, 100])
def test_old_binary_with_bad_inner_length(inner: int) -> None:
    with pytest.raises(InvalidBSON):
        decode(doc(el(0x05, "v", i32(7) + b"\x02" + i32(inner) + b"abc")))


def test_old_binary_too_short_for_inner_length() -> None:
    with pytest.raises(InvalidBSON):
        decode(doc(el(0x05, "v", i32(2) + b"\x02ab")))


UUID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")


@pytest.mark.parametrize(
    "rep, subtype, payload",
    [
        (UuidRepresentation.STANDARD, 4, UUID.bytes),
        (UuidRepresentation.PYTHON_LEGACY, 3, UUID.bytes),
        (UuidRepresentation.JAVA_LEGACY, 3, UUID.bytes[7::-1] + UUID.bytes[:7:-1]),
        (UuidRepresentation.CSHARP_LEGACY, 3, UUID.bytes_le),
    ],
)
def test_uuid_representations(rep: UuidRepresentation, subtype: int, payload: bytes) -> None:
    opts = CodecOptions(uuid_representation=rep)
    assert one(0x05, i32(16) + bytes([subtype]) + payload, opts) == UUID
    # the other UUID subtype stays binary
    other = one(0x05, i32(16) + bytes([7 - subtype]) + payload, opts)
    assert isinstance(other, Binary) and other.subtype == 7 - subtype
    # and so does everything under UNSPECIFIED, the default
    unspecified = one(0x05, i32(16) + bytes([subtype]) + payload)
    assert isinstance(unspecified, Binary) and unspecified.subtype == subtype


def test_uuid_of_wrong_length_stays_binary() -> None:
    opts = CodecOptions(uuid_representation=UuidRepresentation.STANDARD)
    value = one(0x05, i32(3) + b"\x04abc", opts)
    assert isinstance(value, Binary) and value.subtype == 4


def test_valueless_types() -> None:
    assert one(0x06) == Undefined()
    assert one(0x0A) is None
    assert one(0xFF) == MinKey()
    assert one(0x7F) == MaxKey()
    assert isinstance(one(0xFF), MinKey) and isinstance(one(0x7F), MaxKey)


def test_objectid() -> None:
    value = one(0x07, OID)
    assert isinstance(value, ObjectId) and value.binary == OID


def test_boolean() -> None:
    assert one(0x08, b"\x01") is True
    assert one(0x08, b"\x00") is False


@pytest.mark.parametrize("byte", [2, 0xFF])
def test_boolean_must_be_0_or_1(byte: int) -> None:
    data = doc(el(0x08, "v", bytes([byte])))
    for _ in range(2):
        with pytest.raises(InvalidBSON, match="boolean"):
            decode(data)
    # also when the trie has seen a good boolean under that key
    decode(doc(el(0x08, "v", b"\x01")))
    with pytest.raises(InvalidBSON, match="boolean"):
        decode(data)


def test_regex_keeps_flags_as_stored() -> None:
    value = one(0x0B, cstr("a.*b") + cstr("xsmi"))
    assert value == Regex("a.*b", "xsmi")


def test_dbpointer_code_symbol() -> None:
    assert one(0x0C, string("db.coll") + OID) == DBPointer("db.coll", ObjectId(OID))
    code = one(0x0D, string("x = 1"))
    assert isinstance(code, Code) and code == Code("x = 1") and code.scope is None
    symbol = one(0x0E, string("sym"))
    assert isinstance(symbol, Symbol) and symbol == Symbol("sym")


def code_w_scope(code: str, scope: bytes) -> bytes:
    body = string(code) + scope
    return i32(len(body) + 4) + body


def test_code_with_scope() -> None:
    value = one(0x0F, code_w_scope("f(x)", doc(el(0x10, "x", i32(5)))))
    assert isinstance(value, Code) and str(value) == "f(x)" and value.scope == {"x": 5}
    nested = code_w_scope("g", doc(el(0x0F, "c", code_w_scope("h", doc()))))
    value = one(0x0F, nested)
    assert value.scope == {"c": Code("h", {})}


@pytest.mark.parametrize(
    "payload",
    [
        i32(0) + string("f") + doc(),  # total too small
        i32(-1) + string("f") + doc(),
        i32(100) + string("f") + doc(),  # longer than the outer document
        i32(19) + string("f") + doc(),  # one more than its parts
        i32(17) + string("f") + doc() + b"\x00",  # one less than its parts (scope clipped)
        i32(15) + i32(0) + b"f\x00" + doc(),  # code string length 0
        i32(15) + i32(50) + b"f\x00" + doc(),  # code string longer than the value
        i32(15) + i32(2) + b"fg" + doc(),  # code string not NUL-terminated
        i32(16) + string("f") + i32(6) + b"\x00\x00\x00",  # scope length past the value
    ],
)
def test_code_with_scope_inconsistent(payload: bytes) -> None:
    with pytest.raises(InvalidBSON):
        decode(doc(el(0x0F, "v", payload)))


def test_int32_and_timestamp() -> None:
    assert one(0x10, i32(-7)) == -7
    assert type(one(0x10, i32(7))) is int
    # increment is the low 4 bytes, time the high 4 bytes
    assert one(0x11, struct.pack("<II", 7, 1700000000)) == Timestamp(1700000000, 7)


def test_every_int64_decodes_as_int64() -> None:
    """As PyMongo's bson.decode: an Int64 whatever the value (one that fits an int32 too)."""
    small = one(0x12, struct.pack("<q", 5))
    assert type(small) is Int64 and small == 5
    edge = one(0x12, struct.pack("<q", -(2**31)))
    assert type(edge) is Int64
    big = one(0x12, struct.pack("<q", 2**40))
    assert type(big) is Int64 and big == 2**40 and str(big) == str(2**40)
    lowest = one(0x12, struct.pack("<q", -(2**63)))
    assert type(lowest) is Int64 and lowest == -(2**63)


def test_decimal128() -> None:
    bid = bytes.fromhex("0100000000000000000000000000403e")  # 1E+1? any 16 bytes will do
    value = one(0x13, bid)
    assert isinstance(value, Decimal128) and value.bid == bid


@pytest.mark.parametrize("type_byte", [0x00, 0x14, 0x80, 0xFE, 0x20])
def test_unknown_type(type_byte: int) -> None:
    data = doc(el(0x10, "a", i32(1)), el(type_byte, "b", i32(0)))
    for _ in range(2):
        with pytest.raises(InvalidBSON) as info:
            decode(data)
        if type_byte:
            assert f"0x{type_byte:02x}" in str(info.value)
            assert info.value.offset is not None


def test_keys_must_be_utf8() -> None:
    with pytest.raises(InvalidBSON):
        decode(doc(b"\x10\xff\xfe\x00" + i32(1)))


# --- codec options -------------------------------------------------------------------------

EPOCH = datetime.datetime(1970, 1, 1)


def date(ms: int, opts: CodecOptions | None = None) -> Any:
    return one(0x09, struct.pack("<q", ms), opts)


def test_datetime_default_is_naive_utc() -> None:
    value = date(1_700_000_000_123)
    assert value == EPOCH + datetime.timedelta(milliseconds=1_700_000_000_123)
    assert value.tzinfo is None
    assert date(-1) == EPOCH - datetime.timedelta(milliseconds=1)


def test_datetime_tz_aware_and_tzinfo() -> None:
    aware = date(0, CodecOptions(tz_aware=True))
    assert aware == datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    assert aware.utcoffset() == datetime.timedelta(0)
    plus2 = datetime.timezone(datetime.timedelta(hours=2))
    local = date(0, CodecOptions(tz_aware=True, tzinfo=plus2))
    assert local.tzinfo is plus2 and local.hour == 2 and local == aware


@pytest.mark.parametrize("ms", [DATETIME_MAX_MS + 1, DATETIME_MIN_MS - 1, 2**63 - 1, -(2**63)])
def test_datetime_out_of_range_gives_datetime_ms(ms: int) -> None:
    for conversion in (DatetimeConversion.DATETIME, DatetimeConversion.DATETIME_AUTO):
        assert date(ms, CodecOptions(datetime_conversion=conversion)) == DatetimeMS(ms)
        assert date(ms, CodecOptions(datetime_conversion=conversion, tz_aware=True)) == DatetimeMS(ms)


def test_datetime_edges_are_datetimes() -> None:
    assert date(DATETIME_MAX_MS) == datetime.datetime.max.replace(microsecond=999000)
    assert date(DATETIME_MIN_MS) == datetime.datetime.min


def test_datetime_ms_conversion() -> None:
    opts = CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_MS)
    assert date(12345, opts) == DatetimeMS(12345)


def test_datetime_clamp() -> None:
    opts = CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_CLAMP)
    assert date(2**62, opts) == datetime.datetime.max.replace(microsecond=999000)
    assert date(-(2**62), opts) == datetime.datetime.min
    aware = date(2**62, opts.with_options(tz_aware=True))
    assert aware.tzinfo is not None and aware.year == 9999


def test_datetime_near_edges_with_tzinfo_never_raises() -> None:
    minus5 = datetime.timezone(datetime.timedelta(hours=-5))
    plus5 = datetime.timezone(datetime.timedelta(hours=5))
    for tz, ms in ((minus5, DATETIME_MIN_MS), (plus5, DATETIME_MAX_MS)):
        value = date(ms, CodecOptions(tz_aware=True, tzinfo=tz))
        assert value == DatetimeMS(ms)
        clamped = date(ms, CodecOptions(tz_aware=True, tzinfo=tz, datetime_conversion=2))
        assert isinstance(clamped, datetime.datetime) and clamped.tzinfo is tz


def test_unicode_decode_error_handler() -> None:
    data = doc(el(0x02, "s", i32(4) + b"a\xffb\x00"))
    for _ in range(2):
        with pytest.raises(InvalidBSON, match="UTF-8"):
            decode(data)
    replaced = decode(data, CodecOptions(unicode_decode_error_handler="replace"))
    assert replaced == {"s": "a\ufffdb"}
    ignored = decode(data, CodecOptions(unicode_decode_error_handler="ignore"))
    assert ignored == {"s": "ab"}


class MyMapping(Mapping[str, Any]):
    """An immutable mapping type, built from a dict."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = dict(data)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


@pytest.mark.parametrize("doc_class", [OrderedDict, MyMapping])
def test_document_class(doc_class: type) -> None:
    data = doc(el(0x03, "d", doc(el(0x10, "x", i32(1)))), el(0x04, "a", array((0x03, doc()))))
    value = decode(data, CodecOptions(document_class=doc_class))
    assert type(value) is doc_class
    assert type(value["d"]) is doc_class and value["d"]["x"] == 1
    assert type(value["a"][0]) is doc_class


def test_raw_document_class() -> None:
    from mongo_sansio.bson.raw import RawDocument

    data = doc(el(0x03, "d", doc(el(0x10, "x", i32(1)))))
    value = decode(data, CodecOptions(document_class=RawDocument))
    assert isinstance(value, RawDocument) and value["d"]["x"] == 1
    values = decode_all(data + data, CodecOptions(document_class=RawDocument))
    assert all(isinstance(v, RawDocument) for v in values)


def test_max_document_size() -> None:
    data = doc(el(0x02, "s", string("x" * 100)))
    assert decode(data, CodecOptions(max_document_size=len(data))) == {"s": "x" * 100}
    with pytest.raises(InvalidBSON, match="max_document_size"):
        decode(data, CodecOptions(max_document_size=len(data) - 1))
    with pytest.raises(InvalidBSON, match="max_document_size"):
        decode_all(data, CodecOptions(max_document_size=len(data) - 1))


# --- DBRef ---------------------------------------------------------------------------------


def test_dbref() -> None:
    ref = doc(el(0x02, "$ref", string("coll")), el(0x07, "$id", OID))
    assert decode(doc(el(0x03, "r", ref)))["r"] == DBRef("coll", ObjectId(OID))
    with_db = doc(el(0x02, "$ref", string("c")), el(0x10, "$id", i32(1)), el(0x02, "$db", string("d")))
    assert decode(doc(el(0x03, "r", with_db)))["r"] == DBRef("c", 1, "d")


def test_dbref_extra_fields_keep_order_even_with_awkward_names() -> None:
    ref = doc(
        el(0x02, "$ref", string("c")),
        el(0x10, "$id", i32(1)),
        el(0x10, "id", i32(2)),
        el(0x10, "collection", i32(3)),
        el(0x10, "$x", i32(4)),
    )
    value = decode(doc(el(0x03, "r", ref)))["r"]
    assert isinstance(value, DBRef)
    assert value.collection == "c" and value.id == 1 and value.database is None
    assert list(value.extra.items()) == [("id", 2), ("collection", 3), ("$x", 4)]


@pytest.mark.parametrize(
    "elements",
    [
        (el(0x02, "$ref", string("c")),),  # no $id
        (el(0x10, "$ref", i32(1)), el(0x10, "$id", i32(1))),  # $ref not a string
        (el(0x02, "$ref", string("c")), el(0x10, "$id", i32(1)), el(0x10, "$db", i32(1))),
        (el(0x02, "$ref", string("c")), el(0x10, "$id", i32(1)), el(0x0A, "$db")),
    ],
)
def test_not_a_dbref(elements: tuple[bytes, ...]) -> None:
    value = decode(doc(el(0x03, "r", doc(*elements))))["r"]
    assert type(value) is dict and list(value) == [e[1 : e.index(0)].decode() for e in elements]


def test_top_level_is_never_a_dbref() -> None:
    data = doc(el(0x02, "$ref", string("c")), el(0x10, "$id", i32(1)))
    assert decode(data) == {"$ref": "c", "$id": 1}


# --- structure errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x05\x00\x00",
        b"\x04\x00\x00\x00\x00",
        b"\x05\x00\x00\x00\x01",  # trailing byte not NUL
        b"\x06\x00\x00\x00\x00\x00",  # stray NUL where an element should start... as type 0
        doc() + b"\x00",  # trailing bytes
        doc(el(0x10, "a", i32(1)))[:-1],  # truncated
        doc(el(0x02, "s", i32(-5) + b"ab\x00")),  # negative string length
        doc(el(0x02, "s", i32(0) + b"ab\x00")),
        doc(el(0x02, "s", i32(50) + b"ab\x00")),  # past the end
        doc(el(0x02, "s", i32(2) + b"abc")),  # no NUL
        doc(el(0x05, "b", i32(-1) + b"\x00")),  # negative binary length
        doc(el(0x05, "b", i32(50) + b"\x00abc")),  # binary past the end
        doc(el(0x03, "d", i32(4) + b"\x00")),  # embedded length below 5
        doc(el(0x03, "d", i32(100) + b"\x00")),  # embedded document past its parent
        doc(el(0x03, "d", doc(el(0x10, "x", i32(1)))[:-1] + b"\x01")),  # bad inner NUL
        doc(el(0x04, "a", i32(12) + b"\x10\x30\x00" + i32(1) + b"\x00") + b"\x00"),
        doc(el(0x0B, "r", b"abc")),  # regex without its NULs
        doc(el(0x07, "o", b"short")),
        doc(el(0x01, "f", b"\x00\x00")),
        b"\x0c\x00\x00\x00\x10abc",  # key without NUL
        doc(el(0x0C, "p", string("ns") + b"12345")),  # DBPointer id truncated
        doc(el(0x13, "d", b"\x00" * 10)),
    ],
)
def test_malformed(data: bytes) -> None:
    for _ in range(2):
        with pytest.raises(InvalidBSON) as info:
            decode(data)
        assert info.value.reason


def test_nested_length_running_past_parent_even_when_buffer_continues() -> None:
    inner = doc(el(0x10, "x", i32(1)))
    # the outer document claims the inner one ends inside its own terminator
    bad = doc(el(0x03, "d", inner[:-1])) + b"\x00"
    with pytest.raises(InvalidBSON):
        decode(bad)
    with pytest.raises(InvalidBSON):
        decode_all(bad + doc())


def test_inputs_may_be_bytearray_or_memoryview() -> None:
    data = doc(el(0x02, "s", string("x")))
    assert decode(bytearray(data)) == decode(memoryview(data)) == {"s": "x"}
    assert decode_all(memoryview(data + data)) == [{"s": "x"}, {"s": "x"}]
    with pytest.raises(TypeError):
        decode("not bytes")  # type: ignore[arg-type]


def test_decode_all_and_iter() -> None:
    a = doc(el(0x10, "a", i32(1)))
    b = doc(el(0x02, "b", string("x")))
    assert decode_all(b"") == []
    assert decode_all(a + b + a) == [{"a": 1}, {"b": "x"}, {"a": 1}]
    iterator = decode_iter(a + b + a[:-2])
    assert next(iterator) == {"a": 1}
    assert next(iterator) == {"b": "x"}
    with pytest.raises(InvalidBSON):
        next(iterator)
    with pytest.raises(InvalidBSON):
        decode_all(a + b"\x01")


# --- depth ---------------------------------------------------------------------------------


def nested(depth: int, *, as_array: bool = False) -> bytes:
    """A document ``depth`` levels deep (the top level counts), built without recursion."""
    data = doc()
    for _ in range(depth - 1):
        data = doc(el(0x04 if as_array else 0x03, "0" if as_array else "d", data))
    return data


def depth_of(value: Any) -> int:
    depth = 1
    while value:
        value = next(iter(value.values())) if isinstance(value, dict) else value[0]
        depth += 1
    return depth


@pytest.mark.parametrize("as_array", [False, True])
def test_depth_limit(as_array: bool) -> None:
    assert depth_of(decode(nested(200, as_array=as_array))) == 200
    with pytest.raises(InvalidBSON, match="max_nesting_depth"):
        decode(nested(201, as_array=as_array))
    assert depth_of(decode(nested(10), CodecOptions(max_nesting_depth=10))) == 10
    with pytest.raises(InvalidBSON, match="max_nesting_depth"):
        decode(nested(11), CodecOptions(max_nesting_depth=10))


def test_scopes_count_towards_depth() -> None:
    data = doc(el(0x0F, "c", code_w_scope("x", doc(el(0x03, "d", doc())))))
    assert decode(data, CodecOptions(max_nesting_depth=3))["c"].scope == {"d": {}}
    with pytest.raises(InvalidBSON, match="max_nesting_depth"):
        decode(data, CodecOptions(max_nesting_depth=2))


def test_very_deep_documents_never_exhaust_the_stack() -> None:
    deep = nested(100_000)
    with pytest.raises(InvalidBSON, match="max_nesting_depth"):
        decode(deep)
    generous = CodecOptions(max_nesting_depth=10**6)
    assert depth_of(decode(deep, generous)) == 100_000
    corrupt = deep[: len(deep) // 2] + b"\xee" + deep[len(deep) // 2 + 1 :]
    with pytest.raises(InvalidBSON):
        decode(corrupt, generous)


# --- the shape trie never changes a result -------------------------------------------------


def test_same_key_different_types() -> None:
    variants = [
        doc(el(0x10, "k", i32(1)), el(0x02, "s", string("a"))),
        doc(el(0x01, "k", struct.pack("<d", 2.0)), el(0x02, "s", string("b"))),
        doc(el(0x02, "k", string("three")), el(0x10, "s", i32(4))),
        doc(el(0x03, "k", doc(el(0x10, "s", i32(5))))),
        doc(el(0x04, "k", array((0x10, i32(6))))),
        doc(el(0x10, "k", i32(1))),
        doc(el(0x10, "k", i32(1)), el(0x02, "s", string("a")), el(0x0A, "extra")),
    ]
    expected = [
        {"k": 1, "s": "a"},
        {"k": 2.0, "s": "b"},
        {"k": "three", "s": 4},
        {"k": {"s": 5}},
        {"k": [6]},
        {"k": 1},
        {"k": 1, "s": "a", "extra": None},
    ]
    for _ in range(3):
        for data, value in zip(variants, expected, strict=True):
            assert decode(data) == value


def test_a_document_cut_where_the_trie_expects_more() -> None:
    full = doc(el(0x10, "a", i32(1)), el(0x01, "bbbbbbbbbbbb", struct.pack("<d", 1.0)))
    short = doc(el(0x10, "a", i32(1)), el(0x08, "b", b"\x01"))
    for _ in range(3):
        assert decode(full) == {"a": 1, "bbbbbbbbbbbb": 1.0}
        assert decode(short) == {"a": 1, "b": True}


def test_big_documents_and_trie_limits() -> None:
    big = doc(*(el(0x10, f"k{i}", i32(i)) for i in range(3000)))
    for _ in range(3):
        assert decode(big) == {f"k{i}": i for i in range(3000)}
    # documents keyed by ids: every decode learns new nodes, and the trie stays bounded
    for n in range(40):
        data = doc(*(el(0x10, f"id{n}_{i}", i32(i)) for i in range(300)))
        assert len(decode(data)) == 300
    assert _decode_parts.TRIE[1] <= _decode_parts._MAX_NODES


def test_long_arrays_and_arrays_of_documents() -> None:
    items = [(0x03, doc(el(0x10, "x", i32(i)), el(0x02, "y", string(str(i))))) for i in range(600)]
    data = doc(el(0x04, "a", array(*items)))
    expected = {"a": [{"x": i, "y": str(i)} for i in range(600)]}
    for _ in range(3):
        assert decode(data) == expected


def test_read_document_without_the_trie() -> None:
    data = doc(el(0x04, "a", array((0x10, i32(1)))), el(0x02, "s", string("x")))
    assert read_document(data, 0, len(data), shapes=False) == {"a": [1], "s": "x"}


# --- the bson corpus -----------------------------------------------------------------------

SPECS = Path(os.environ.get("MONGO_SANSIO_SPECS", Path(__file__).resolve().parents[3] / "shared" / "specs"))
CORPUS = SPECS / "bson-corpus" / "tests"


def corpus_cases(kind: str) -> list[Any]:
    if not CORPUS.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"bson-corpus not found at {CORPUS}"))]
    cases = []
    for path in sorted(CORPUS.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for case in data.get(kind, []):
            cases.append(pytest.param(case, id=f"{path.stem}: {case['description']}"))
    return cases


@pytest.mark.parametrize("case", corpus_cases("decodeErrors"))
def test_corpus_decode_errors(case: dict[str, Any]) -> None:
    data = bytes.fromhex(case["bson"])
    for _ in range(2):  # cold, then with whatever the trie learned
        with pytest.raises(InvalidBSON):
            decode(data)


@pytest.mark.parametrize("case", corpus_cases("valid"))
def test_corpus_valid(case: dict[str, Any]) -> None:
    for field in ("canonical_bson", "degenerate_bson"):
        if field in case:
            data = bytes.fromhex(case[field])
            first = decode(data)
            assert isinstance(first, dict)
            assert repr(decode(data)) == repr(first)
            assert repr(read_document(data, 0, len(data), shapes=False)) == repr(first)


# --- properties ----------------------------------------------------------------------------


def decode_or_fail(data: bytes) -> Any:
    try:
        return decode(data)
    except InvalidBSON:
        return InvalidBSON


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=120))
def test_random_bytes_decode_or_raise_invalid_bson(data: bytes) -> None:
    first = decode_or_fail(data)
    assert repr(decode_or_fail(data)) == repr(first)
    try:
        decode_all(data)
    except InvalidBSON:
        pass


def sample_documents() -> list[bytes]:
    return [
        doc(
            el(0x02, "name", string("alpha")),
            el(0x10, "n", i32(7)),
            el(0x03, "sub", doc(el(0x01, "f", struct.pack("<d", 0.5)), el(0x08, "b", b"\x01"))),
            el(0x04, "arr", array((0x10, i32(1)), (0x02, string("x")), (0x03, doc()))),
            el(0x12, "big", struct.pack("<q", 2**40)),
            el(0x09, "when", struct.pack("<q", 1_700_000_000_000)),
            el(0x07, "_id", OID),
            el(0x0A, "nothing"),
            el(0x05, "bin", i32(3) + b"\x00abc"),
            el(0x0F, "cws", code_w_scope("f", doc(el(0x10, "x", i32(1))))),
            el(0x11, "ts", struct.pack("<II", 1, 2)),
            el(0x0B, "re", cstr("a+") + cstr("i")),
        ),
        doc(el(0x03, "r", doc(el(0x02, "$ref", string("c")), el(0x10, "$id", i32(1))))),
    ]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(sample_documents())))
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(data) - 1))
        action = draw(st.sampled_from(["set", "insert", "cut"]))
        if action == "set":
            data[position] = draw(st.integers(0, 255))
        elif action == "insert":
            data[position:position] = draw(st.binary(min_size=1, max_size=4))
        else:
            del data[position : position + draw(st.integers(1, 4))]
    return bytes(data)


@settings(max_examples=600, deadline=None)
@given(mutated())
def test_mutated_documents_decode_or_raise_invalid_bson(data: bytes) -> None:
    for sample in sample_documents():
        decode(sample)  # teach the trie the unmutated shapes
    first = decode_or_fail(data)
    assert repr(decode_or_fail(data)) == repr(first)
    if first is not InvalidBSON:
        assert repr(read_document(data, 0, len(data), shapes=False)) == repr(first)


# --- PyMongo as an oracle ------------------------------------------------------------------

pymongo_bson = pytest.importorskip("bson", reason="PyMongo (the test oracle) is not installed")


def to_plain(value: Any) -> Any:
    """Ours or PyMongo's decoded value as comparable plain data."""
    if isinstance(value, Mapping):
        return {key: to_plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_plain(item) for item in value]
    name = type(value).__name__
    if name == "ObjectId":
        return ("oid", str(value))
    if name == "Int64":
        return ("int", int(value))
    if name in ("Binary",):
        return ("bin", bytes(value), value.subtype)
    if name == "Regex":
        return ("re", value.pattern)
    if name == "Timestamp":
        return ("ts", value.time, value.inc)
    if name == "Decimal128":
        return ("dec", bytes(value.bid))
    if name in ("MinKey", "MaxKey"):
        return name
    if name == "Code":
        return ("code", str(value), to_plain(value.scope))
    if name == "DBRef":
        return ("ref", value.collection, to_plain(value.id), value.database)
    if isinstance(value, int) and not isinstance(value, bool):
        return ("int", int(value))
    return value


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.binary(max_size=12),
    st.datetimes(
        min_value=datetime.datetime(1, 1, 1), max_value=datetime.datetime(9999, 12, 31)
    ).map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)),
)
keys = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00$."), max_size=8)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(keys, values, max_size=8))
def test_agrees_with_pymongo(document: dict[str, Any]) -> None:
    data = pymongo_bson.encode(document)
    expected = to_plain(pymongo_bson.decode(data))
    assert to_plain(decode(data)) == expected
    assert to_plain(decode(data)) == expected  # trie warm


def test_agrees_with_pymongo_on_the_corpus_of_types() -> None:
    for data in sample_documents():
        assert to_plain(decode(data)) == to_plain(pymongo_bson.decode(data))
