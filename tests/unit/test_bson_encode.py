"""Unit tests of the BSON encoder (mongo_sansio/bson/_encode.py).

Exact bytes are either computed by hand from the BSON spec or taken from PyMongo's
``bson.encode`` (the test oracle) for documents without a top-level ``_id`` -- PyMongo moves
that key first, we keep the caller's order.  Each code path of the encoder gets a case: the
inlined types, the type table, subclasses, leaf containers written inline, containers that
escalate to the general path, big (uncached) containers, and every error with its key path.
"""

from __future__ import annotations

import collections
import datetime
import enum
import re
import struct
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from mongo_sansio.bson import _encode
from mongo_sansio.bson._encode import encode, encode_into
from mongo_sansio.bson.codec_options import CodecOptions, UuidRepresentation
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
    datetime_to_ms,
)
from mongo_sansio.bson.vector import BinaryVector, BinaryVectorDtype

pymongo_bson = pytest.importorskip("bson", reason="PyMongo (the test oracle) is not installed")
import bson.binary as pm_binary  # noqa: E402
import bson.code as pm_code  # noqa: E402
import bson.dbref as pm_dbref  # noqa: E402
import bson.decimal128 as pm_decimal128  # noqa: E402
import bson.int64 as pm_int64  # noqa: E402
import bson.max_key as pm_max_key  # noqa: E402
import bson.min_key as pm_min_key  # noqa: E402
import bson.objectid as pm_objectid  # noqa: E402
import bson.regex as pm_regex  # noqa: E402
import bson.timestamp as pm_timestamp  # noqa: E402

OID = ObjectId(bytes(range(12)))


def doc(*elements: bytes) -> bytes:
    """A BSON document from its encoded elements."""
    body = b"".join(elements)
    return struct.pack("<i", len(body) + 5) + body + b"\x00"


def string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<i", len(data) + 1) + data + b"\x00"


def to_pymongo(value: Any) -> Any:
    """The same value built from PyMongo's classes (for the oracle)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, Int64):
        return pm_int64.Int64(value)
    if isinstance(value, Binary):
        return pm_binary.Binary(bytes(value), value.subtype)
    if isinstance(value, Code):
        return pm_code.Code(str(value), None if value.scope is None else to_pymongo(value.scope))
    if isinstance(value, ObjectId):
        return pm_objectid.ObjectId(value.binary)
    if isinstance(value, Regex):
        return pm_regex.Regex(value.pattern, value.flags)
    if isinstance(value, Timestamp):
        return pm_timestamp.Timestamp(value.time, value.inc)
    if isinstance(value, Decimal128):
        return pm_decimal128.Decimal128.from_bid(value.bid)
    if isinstance(value, MinKey):
        return pm_min_key.MinKey()
    if isinstance(value, MaxKey):
        return pm_max_key.MaxKey()
    if isinstance(value, DBRef):
        extra = {k: to_pymongo(v) for k, v in value.extra.items()}
        return pm_dbref.DBRef(value.collection, to_pymongo(value.id), value.database, **extra)
    if isinstance(value, dict):
        return {key: to_pymongo(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_pymongo(item) for item in value]
    return value


def assert_same_as_pymongo(document: dict[str, Any]) -> None:
    assert encode(document) == pymongo_bson.encode(to_pymongo(document))


def every_type() -> dict[str, Any]:
    return {
        "double": 1.5, "string": "héllo", "doc": {"a": 1}, "array": [1, "two", None],
        "binary": b"\x00\x01", "binary5": Binary(b"xyz", 5), "oid": OID, "true": True,
        "false": False, "date": datetime.datetime(2020, 1, 2, 3, 4, 5, 678000),
        "null": None, "regex": Regex("a.c", "im"), "code": Code("f()"),
        "scoped": Code("g(x)", {"x": [1, {"y": 2}]}), "int32": 7, "ts": Timestamp(5, 6),
        "int64": Int64(8), "big": 2**40, "dec": Decimal128("1.5"), "min": MinKey(),
        "max": MaxKey(), "ref": DBRef("coll", 5, "db", extra=1),
    }


# --- exact bytes of each type ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "element"),
    [
        (1.0, b"\x01v\x00" + struct.pack("<d", 1.0)),
        ("", b"\x02v\x00" + string("")),
        ("héllo", b"\x02v\x00" + string("héllo")),
        ({}, b"\x03v\x00" + doc()),
        ([], b"\x04v\x00" + doc()),
        (b"ab", b"\x05v\x00\x02\x00\x00\x00\x00ab"),
        (bytearray(b"ab"), b"\x05v\x00\x02\x00\x00\x00\x00ab"),
        (memoryview(b"ab"), b"\x05v\x00\x02\x00\x00\x00\x00ab"),
        (Binary(b"ab", 0x80), b"\x05v\x00\x02\x00\x00\x00\x80ab"),
        # subtype 2 repeats the length inside the payload
        (Binary(b"ab", 2), b"\x05v\x00\x06\x00\x00\x00\x02\x02\x00\x00\x00ab"),
        (Undefined(), b"\x06v\x00"),
        (OID, b"\x07v\x00" + bytes(range(12))),
        (False, b"\x08v\x00\x00"),
        (True, b"\x08v\x00\x01"),
        (datetime.datetime(1970, 1, 1, 0, 0, 1), b"\x09v\x00" + struct.pack("<q", 1000)),
        (DatetimeMS(-(2**63)), b"\x09v\x00" + struct.pack("<q", -(2**63))),
        (None, b"\x0av\x00"),
        (Regex("a+", "ix"), b"\x0bv\x00a+\x00ix\x00"),
        (DBPointer("db.c", OID), b"\x0cv\x00" + string("db.c") + bytes(range(12))),
        (Code("f()"), b"\x0dv\x00" + string("f()")),
        (Symbol("sym"), b"\x0ev\x00" + string("sym")),
        (Code("f()", {}), b"\x0fv\x00" + struct.pack("<i", 4 + 8 + 5) + string("f()") + doc()),
        (
            Code("f()", {"x": 1}),
            b"\x0fv\x00" + struct.pack("<i", 4 + 8 + 12) + string("f()")
            + doc(b"\x10x\x00\x01\x00\x00\x00"),
        ),
        (5, b"\x10v\x00\x05\x00\x00\x00"),
        (Timestamp(0x01020304, 0x0A0B0C0D), b"\x11v\x00\x0d\x0c\x0b\x0a\x04\x03\x02\x01"),
        (Int64(5), b"\x12v\x00" + struct.pack("<q", 5)),
        (Decimal128("0"), b"\x13v\x00" + Decimal128("0").bid),
        (MinKey(), b"\xffv\x00"),
        (MaxKey(), b"\x7fv\x00"),
        (
            DBRef("c", 1, "d", z=None),
            b"\x03v\x00"
            + doc(b"\x02$ref\x00" + string("c"), b"\x10$id\x00\x01\x00\x00\x00",
                  b"\x02$db\x00" + string("d"), b"\x0az\x00"),
        ),
    ],
    ids=lambda v: type(v).__name__,
)
def test_type_bytes(value: Any, element: bytes) -> None:
    # top level, inside a small container (written inline) and inside a big one (uncached)
    assert encode({"v": value}) == doc(element)
    assert encode({"d": {"v": value}}) == doc(b"\x03d\x00" + doc(element))
    filler = {f"f{i}": i for i in range(_encode._BIG_CONTAINER)}
    big = encode({**filler, "v": value})
    assert big == encode(filler)[:-1].replace(
        encode(filler)[:4], struct.pack("<i", len(big))
    ) + element + b"\x00"


def test_every_type_matches_pymongo() -> None:
    assert_same_as_pymongo(every_type())
    assert_same_as_pymongo({"nested": every_type(), "list": list(every_type().values())})


def test_vector_is_binary_subtype_9() -> None:
    vector = BinaryVector([1, -1], BinaryVectorDtype.INT8)
    assert encode({"v": vector}) == encode({"v": vector.to_binary()})
    assert encode({"v": vector})[11] == 9


def test_datetimes() -> None:
    def millis(value: datetime.datetime) -> int:
        return int(struct.unpack_from("<q", encode({"d": value}), 7)[0])

    # sub-millisecond digits are truncated towards the past, before and after the epoch
    assert millis(datetime.datetime(1970, 1, 1, 0, 0, 0, 1999)) == 1
    assert millis(datetime.datetime(1969, 12, 31, 23, 59, 59, 999500)) == -1
    assert millis(datetime.datetime(1, 1, 1)) == -62135596800000
    assert millis(datetime.datetime(9999, 12, 31, 23, 59, 59, 999999)) == 253402300799999
    # aware datetimes are converted to UTC
    plus2 = datetime.timezone(datetime.timedelta(hours=2))
    assert millis(datetime.datetime(1970, 1, 1, 2, tzinfo=plus2)) == 0
    assert millis(datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)) == 0
    when = datetime.datetime(2001, 2, 3, 4, 5, 6, 7000, tzinfo=plus2)
    assert_same_as_pymongo({"d": when, "l": [when], "n": when.replace(tzinfo=None)})


class NoOffset(datetime.tzinfo):
    """A tzinfo that knows no offset: its datetimes count as naive."""

    def utcoffset(self, dt: datetime.datetime | None) -> None:
        return None

    def dst(self, dt: datetime.datetime | None) -> None:
        return None

    def tzname(self, dt: datetime.datetime | None) -> str:
        return "nowhere"


@pytest.mark.parametrize(
    "tz", [None, datetime.UTC, datetime.timezone(datetime.timedelta(hours=-9, minutes=-30)), NoOffset()]
)
def test_datetimes_agree_with_datetime_to_ms(tz: datetime.tzinfo | None) -> None:
    for when in (
        datetime.datetime(1, 1, 1, 12), datetime.datetime(1969, 12, 31, 23, 59, 59, 999999),
        datetime.datetime(1970, 1, 1), datetime.datetime(2024, 2, 29, 13, 14, 15, 161718),
        datetime.datetime(9999, 12, 31, 1, 2, 3, 999999),
    ):
        when = when.replace(tzinfo=tz)
        expected = doc(b"\x09d\x00" + struct.pack("<q", datetime_to_ms(when)))
        assert encode({"d": when}) == expected
        assert encode({"x": {"d": when}}) == doc(b"\x03x\x00" + expected)


def test_regular_expressions() -> None:
    pattern = re.compile("a.c", re.IGNORECASE | re.MULTILINE)
    assert encode({"r": pattern}) == encode({"r": Regex.from_native(pattern)})
    assert_same_as_pymongo({"r": pattern})
    for bad in (Regex("a\x00", ""), Regex("a", "i\x00")):
        with pytest.raises(InvalidDocument, match="NUL") as info:
            encode({"x": {"r": bad}})
        assert info.value.path == "x.r"
    with pytest.raises(InvalidDocument, match="str regular expression"):
        encode({"r": re.compile(b"bytes")})


# --- integers and booleans ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "type_byte"),
    [
        (0, 0x10), (-1, 0x10), (1023, 0x10), (1024, 0x10), (-128, 0x10), (-129, 0x10),
        (2**31 - 1, 0x10), (-(2**31), 0x10), (2**31, 0x12), (-(2**31) - 1, 0x12),
        (2**63 - 1, 0x12), (-(2**63), 0x12),
    ],
)
def test_int_sizes(value: int, type_byte: int) -> None:
    fmt = "<i" if type_byte == 0x10 else "<q"
    expected = doc(bytes((type_byte,)) + b"v\x00" + struct.pack(fmt, value))
    assert encode({"v": value}) == expected
    assert encode({"d": {"v": value}}) == doc(b"\x03d\x00" + expected)
    assert encode({"a": [value]}) == doc(b"\x04a\x00" + expected.replace(b"v\x00", b"0\x00"))


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**30])
def test_int_out_of_int64_range(value: int) -> None:
    for document, path in (
        ({"v": value}, "v"),
        ({"d": {"v": value}}, "d.v"),
        ({"a": [1, value]}, "a.1"),
        ({**{f"k{i}": 0 for i in range(2000)}, "v": value}, "v"),
        ({"v": Int64(value)}, "v"),
    ):
        with pytest.raises(InvalidDocument, match="int64") as info:
            encode(document)
        assert info.value.path == path


def test_bool_is_not_int() -> None:
    assert encode({"b": True}) == doc(b"\x08b\x00\x01")
    assert encode({"b": 1}) == doc(b"\x10b\x00\x01\x00\x00\x00")
    assert encode({"l": [True, 1, False, 0]}) == doc(
        b"\x04l\x00"
        + doc(b"\x080\x00\x01", b"\x101\x00\x01\x00\x00\x00", b"\x082\x00\x00",
              b"\x103\x00\x00\x00\x00\x00")
    )


def test_int64_stays_int64() -> None:
    assert encode({"v": Int64(1)}) == doc(b"\x12v\x00" + struct.pack("<q", 1))
    assert encode({"d": {"v": Int64(1)}}) == doc(b"\x03d\x00" + doc(b"\x12v\x00" + struct.pack("<q", 1)))


# --- subclasses and other containers -----------------------------------------------------


class Color(enum.IntEnum):
    RED = 1
    HUGE = 2**40


class MyStr(str):
    pass


class MyFloat(float):
    pass


class MyDict(dict[str, Any]):
    pass


class MyList(list[Any]):
    pass


class MyInt64(Int64):
    pass


class ReadOnly(Mapping[str, Any]):
    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def test_subclasses_and_mappings() -> None:
    plain = {"e": 1, "h": 2**40, "s": "x", "f": 1.5, "d": {"a": 1}, "l": [1, 2], "i": Int64(3)}
    subclassed = {
        "e": Color.RED, "h": Color.HUGE, "s": MyStr("x"), "f": MyFloat(1.5),
        "d": MyDict(a=1), "l": MyList([1, 2]), "i": MyInt64(3),
    }
    assert encode(subclassed) == encode(plain)
    assert encode({"d": ReadOnly({"a": 1})}) == encode({"d": {"a": 1}})
    assert encode({"d": collections.OrderedDict(a=1)}) == encode({"d": {"a": 1}})
    assert encode({"t": (1, "a", (2,))}) == encode({"t": [1, "a", [2]]})
    assert encode(ReadOnly({"a": 1})) == encode({"a": 1})
    assert encode(collections.OrderedDict(b=1, a=2)) == encode({"b": 1, "a": 2})


def test_key_order_is_kept_and_id_not_moved() -> None:
    document = {"z": 1, "_id": 2, "a": 3}
    assert encode(document) == doc(
        b"\x10z\x00\x01\x00\x00\x00", b"\x10_id\x00\x02\x00\x00\x00", b"\x10a\x00\x03\x00\x00\x00"
    )


def test_unicode_and_long_keys() -> None:
    long_key = "k" * 500
    document = {"ключ": "значение", long_key: 1, MyStr("sub"): 2, "": 3}
    assert_same_as_pymongo(document)
    assert encode(document) == encode(document)  # a second time, from the caches


@pytest.mark.parametrize("key", ["k" * 65, "k" * 500, MyStr("sub"), "\u00e9" * 40])
def test_uncacheable_keys_with_every_type(key: str) -> None:
    for value in every_type().values():
        assert_same_as_pymongo({key: value})
        assert_same_as_pymongo({"d": {"a": 1, key: value}})  # met by the inline loop
        assert_same_as_pymongo({"l": [{key: value}], key: [value]})
    assert encode({key: True}) == doc(b"\x08" + str(key).encode() + b"\x00\x01")


def test_many_distinct_keys_overflow_the_cache() -> None:
    for round_ in range(3):
        documents = [{f"key-{round_}-{i}": i} for i in range(_encode._KEY_CACHE_LIMIT + 10)]
        for document in documents[:50] + documents[-50:]:
            assert_same_as_pymongo(document)
        for document in documents:
            encode(document)
    assert len(_encode._H_INT32) <= _encode._KEY_CACHE_LIMIT


# --- UUIDs ------------------------------------------------------------------------------

UUID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")


@pytest.mark.parametrize(
    ("representation", "subtype", "payload"),
    [
        (UuidRepresentation.STANDARD, 4, UUID.bytes),
        (UuidRepresentation.PYTHON_LEGACY, 3, UUID.bytes),
        (UuidRepresentation.JAVA_LEGACY, 3, bytes.fromhex("7766554433221100ffeeddccbbaa9988")),
        (UuidRepresentation.CSHARP_LEGACY, 3, UUID.bytes_le),
    ],
)
def test_uuid_representations(representation: UuidRepresentation, subtype: int, payload: bytes) -> None:
    options = CodecOptions(uuid_representation=representation)
    expected = doc(b"\x05u\x00\x10\x00\x00\x00" + bytes((subtype,)) + payload)
    assert encode({"u": UUID}, options) == expected
    theirs = pymongo_bson.encode(
        {"u": UUID},
        codec_options=pymongo_bson.CodecOptions(uuid_representation=int(representation)),
    )
    assert theirs == expected


def test_uuid_needs_a_representation() -> None:
    with pytest.raises(InvalidDocument, match="representation") as info:
        encode({"a": [{"u": UUID}]})
    assert info.value.path == "a.0.u"


# --- errors and key paths --------------------------------------------------------------------


def test_unencodable_type_names_type_and_path() -> None:
    with pytest.raises(UnencodableType, match="object") as info:
        encode({"a": {"b": [1, object()]}})
    assert info.value.path == "a.b.1"
    assert isinstance(info.value, TypeError)
    with pytest.raises(UnencodableType, match="datetime.date") as info:
        encode({"when": datetime.date(2020, 1, 1)})
    assert info.value.path == "when"
    with pytest.raises(UnencodableType, match="set"):
        encode({"s": {1, 2}})


@pytest.mark.parametrize("top", [[("a", 1)], "abc", b"\x05\x00\x00\x00\x00", None, 5, DBRef("c", 1)])
def test_top_level_must_be_a_mapping(top: Any) -> None:
    with pytest.raises(UnencodableType, match="mapping"):
        encode(top)


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({1: "x"}, "1"),
        ({"a": {2: "x"}}, "a.2"),
        ({"a": {"b": {(1, 2): "x"}}}, "a.b.(1, 2)"),
        ({"a": [{"ok": 1, b"k": "x"}]}, "a.0.k".replace("k", "b'k'")),
        ({"a": {"b": {"c": {}, None: 1}}}, "a.b.None"),
        # big containers (walked without the key caches)
        ({**{f"k{i}": i for i in range(2000)}, 5: "x"}, "5"),
        ({"d": {**{f"k{i}": "v" for i in range(2000)}, b"k": 1.5}}, "d.b'k'"),
        ({"d": {**{f"k{i}": None for i in range(2000)}, (1,): True}}, "d.(1,)"),
    ],
)
def test_non_str_keys(document: dict[Any, Any], path: str) -> None:
    with pytest.raises(InvalidDocument, match="keys must be str") as info:
        encode(document)
    assert info.value.path == path


def test_nul_in_key() -> None:
    for document, path in (
        ({"a\x00b": 1}, "a\x00b"),
        ({"x": {"a\x00": {}}}, "x.a\x00"),
        ({**{f"k{i}": 0 for i in range(2000)}, "\x00": "v"}, "\x00"),
    ):
        with pytest.raises(InvalidDocument, match="NUL") as info:
            encode(document)
        assert info.value.path == path


def test_lone_surrogates() -> None:
    for document, path in (
        ({"s": "\ud800"}, "s"),
        ({"d": {"s": "ok", "t": "\udfff"}}, "d.t"),
        ({"l": [{"s": "\ud800"}]}, "l.0.s"),
        ({"\ud800": 1}, "\ud800"),
        ({**{f"k{i}": 0 for i in range(2000)}, "s": "\ud800"}, "s"),
        ({"c": Code("\ud800")}, "c"),
    ):
        with pytest.raises(InvalidDocument, match="UTF-8") as info:
            encode(document)
        assert info.value.path == path


class RaisingMapping(Mapping[str, Any]):
    """Iterates keys that __getitem__ then refuses with KeyError(<the previous key>)."""

    def __init__(self) -> None:
        self.first = "first"

    def __getitem__(self, key: str) -> Any:
        if key == "first":
            return 1
        raise KeyError(self.first)

    def __iter__(self) -> Iterator[str]:
        return iter([self.first, "second"])

    def __len__(self) -> int:
        return 2


def test_keyerror_from_user_code_propagates() -> None:
    with pytest.raises(KeyError):
        encode({"m": RaisingMapping()})
    with pytest.raises(KeyError):
        encode(RaisingMapping())


def test_self_reference() -> None:
    looped: dict[str, Any] = {"a": 1}
    looped["self"] = looped
    with pytest.raises(InvalidDocument, match="max_nesting_depth"):
        encode(looped)
    looped_list: list[Any] = [1]
    looped_list.append(looped_list)
    with pytest.raises(InvalidDocument, match="max_nesting_depth") as info:
        encode({"l": looped_list})
    assert info.value.path.startswith("l.1.1.1")


def nested(depth: int, leaf: Any = 1) -> dict[str, Any]:
    """``depth`` documents nested inside one another (the outermost counts)."""
    document: dict[str, Any] = {"v": leaf}
    for _ in range(depth - 1):
        document = {"d": document}
    return document


def test_nesting_limit() -> None:
    encode(nested(200))  # the default limit: the top level is depth 1
    with pytest.raises(InvalidDocument, match="max_nesting_depth"):
        encode(nested(201))
    with pytest.raises(InvalidDocument, match="max_nesting_depth"):
        encode(nested(200, {}))
    with pytest.raises(InvalidDocument, match="max_nesting_depth"):
        encode(nested(200, []))
    with pytest.raises(InvalidDocument, match="max_nesting_depth"):
        encode(nested(200, Code("f", {})))
    assert encode(nested(3), CodecOptions(max_nesting_depth=3))
    with pytest.raises(InvalidDocument, match="max_nesting_depth") as info:
        encode({"a": [[1]]}, CodecOptions(max_nesting_depth=2))
    assert info.value.path == "a.0"
    encode({"a": 1}, CodecOptions(max_nesting_depth=1))
    with pytest.raises(InvalidDocument):
        encode({"a": {}}, CodecOptions(max_nesting_depth=1))


def test_very_deep_nesting_never_hits_recursion_limit() -> None:
    depth = 10**5
    document = nested(depth)
    data = encode(document, CodecOptions(max_nesting_depth=10**6))
    # every level adds a header (type byte, "d", NUL), a length and a trailing NUL
    assert len(data) == (depth - 1) * 8 + 12
    assert data.startswith(struct.pack("<i", len(data)) + b"\x03d\x00")
    mixed: Any = 1
    for i in range(depth):
        mixed = [mixed] if i % 2 else {"k": mixed, "s": "x"}
    assert encode({"m": mixed}, CodecOptions(max_nesting_depth=10**6))


def test_document_size_limits() -> None:
    document = {"s": "x" * 100}
    size = len(encode(document))
    assert encode(document, CodecOptions(max_document_size=size))
    with pytest.raises(InvalidDocument, match="over the limit"):
        encode(document, CodecOptions(max_document_size=size - 1))


def test_documents_over_the_int32_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_encode, "_BSON_SIZE_LIMIT", 50)
    assert encode({"s": "x" * 30})
    with pytest.raises(InvalidDocument, match="over the limit of 50"):
        encode({"s": "x" * 50})


# --- encode_into ------------------------------------------------------------------------


def test_encode_into_appends() -> None:
    buf = bytearray(b"head")
    written = encode_into(buf, {"a": 1})
    assert bytes(buf) == b"head" + encode({"a": 1})
    assert written == len(encode({"a": 1}))
    encode_into(buf, {"b": [1, {"c": "d"}]})
    assert bytes(buf) == b"head" + encode({"a": 1}) + encode({"b": [1, {"c": "d"}]})


def test_encode_into_leaves_buffer_alone_on_error() -> None:
    buf = bytearray(b"head")
    with pytest.raises(UnencodableType):
        encode_into(buf, {"a": [1, 2, {"b": object()}]})
    assert buf == b"head"
    with pytest.raises(InvalidDocument):
        encode_into(buf, {"s": "x" * 100}, CodecOptions(max_document_size=20))
    assert buf == b"head"


# --- the code paths of the loop ----------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 1023, 1024, 1025, 3000])
def test_container_sizes_around_the_big_threshold(size: int) -> None:
    values: list[Any] = [
        "s", 1, 2**40, 1.5, True, None, Int64(2), OID, {"n": 1}, [1], MinKey(), b"b",
        datetime.datetime(2020, 1, 1), "\u00e9", -5, {}, [],
    ]
    items = [values[i % len(values)] for i in range(size)]
    assert_same_as_pymongo({"l": items})
    assert_same_as_pymongo({f"k{i}": value for i, value in enumerate(items)})
    assert_same_as_pymongo({"d": {f"k{i}": value for i, value in enumerate(items)}})
    assert_same_as_pymongo({"c": Code("f", {f"k{i}": value for i, value in enumerate(items)})})


def test_leaf_containers_escalate_at_any_element() -> None:
    scalars: list[Any] = ["s", 1, -3, 2**35, 1.5, False, None, 700]
    others: list[Any] = [{"x": 1}, [2], {}, [], OID, Int64(4), MaxKey(), Code("c", {"q": [1]})]
    for position in range(len(scalars) + 1):
        for other in others:
            items = scalars[:position] + [other] + scalars[position:]
            assert_same_as_pymongo({"l": items, "after": 1})
            assert_same_as_pymongo({"d": {f"k{i}": v for i, v in enumerate(items)}, "after": 1})
            assert_same_as_pymongo({"deep": [[{"x": items}]], "after": [items]})


def test_direct_descent_through_first_containers() -> None:
    document: Any = {"leaf": "x", "n": 1}
    for i in range(30):
        document = {"first": document, "second": [i, {"s": i}]} if i % 3 else [document, {"s": i}]
    assert_same_as_pymongo({"root": document})


def test_big_document_of_containers_and_rare_types() -> None:
    document: dict[str, Any] = {}
    for i in range(3000):
        document[f"k{i}"] = every_type() if i % 500 == 0 else [i, {"s": str(i)}] if i % 7 == 0 else i
    assert_same_as_pymongo(document)
    assert_same_as_pymongo({"nested": document, "list": list(document.values())})


def test_documents_of_many_parts_are_joined_in_chunks() -> None:
    # over _JOIN_CHUNK parts at the top level, in a big child, and in a big child's child
    wide = {f"k{i}": ("s" * (i % 50) if i % 3 else i * 7919 ** 2) for i in range(3 * _encode._JOIN_CHUNK)}
    assert_same_as_pymongo(wide)
    assert_same_as_pymongo({"a": 1, "wide": wide, "list": list(wide.values()), "z": [wide]})
    with pytest.raises(InvalidDocument, match="over the limit"):
        encode(wide, CodecOptions(max_document_size=1000))


def test_str_lengths_around_the_prepacked_table() -> None:
    for length in (0, 1, 1022, 1023, 1024, 5000):
        assert_same_as_pymongo({"s": "a" * length, "d": {"s": "é" * length}})


# --- RawDocument --------------------------------------------------------------------------


def test_raw_document_is_copied_unchanged() -> None:
    raw_module = pytest.importorskip("mongo_sansio.bson.raw")
    # deliberately not what the encoder would produce: _id is not first, keys are odd
    data = pymongo_bson.encode({"b": 1, "a": {"x": [1, 2]}, "_id": 3})
    raw = raw_module.RawDocument(data)
    assert encode(raw) == data
    assert encode({"r": raw, "l": [raw]}) == doc(b"\x03r\x00" + data, b"\x04l\x00" + doc(b"\x030\x00" + data))
    assert encode({"c": Code("f", raw)}) == doc(
        b"\x0fc\x00" + struct.pack("<i", 4 + 6 + len(data)) + string("f") + data
    )
    view = raw_module.RawDocument(memoryview(b"xx" + data)[2:])
    assert encode({"v": view}) == doc(b"\x03v\x00" + data)


def test_raw_views_are_copied_unchanged() -> None:
    raw_module = pytest.importorskip("mongo_sansio.bson.raw")
    plain = {"a": [1, {"b": "c", "_id": 2}, [3]], "d": {"e": {"f": None}}}
    raw = raw_module.RawDocument(encode(plain))
    # embedded documents and arrays come back as views (memoryview-backed); both pass through
    assert encode({"x": raw["a"], "y": raw["d"], "z": raw["a"][1]}) == encode(
        {"x": plain["a"], "y": plain["d"], "z": plain["a"][1]}
    )
    assert encode(raw["d"]["e"]) == encode({"f": None})
    assert encode({"l": [raw["a"][2], raw["d"]]}) == encode({"l": [[3], plain["d"]]})


# -- encode_many: a list of documents in one run of the encoder ---------------------------

from bson_strategies import every_type_documents  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from mongo_sansio.bson._encode_many import encode_batch, encode_many  # noqa: E402
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS  # noqa: E402


def one_by_one(documents: list[Any], opts: CodecOptions | None = None) -> bytes:
    return b"".join([encode(document, opts) for document in documents])


@settings(max_examples=60, deadline=None)
@given(st.lists(every_type_documents, max_size=5))
def test_encode_many_is_the_concatenation_of_each_encoding(documents: list[dict[str, Any]]) -> None:
    expected = one_by_one(documents)
    assert encode_many(documents) == expected
    batch = encode_batch(documents, DEFAULT_CODEC_OPTIONS)
    assert batch is not None and bytes(batch) == expected


def test_encode_many_of_no_one_and_empty_documents() -> None:
    assert encode_many([]) == b""
    assert encode_many([{"a": 1}]) == encode({"a": 1})
    documents: list[dict[str, Any]] = [{}, {"a": {}}, {}, {"l": [], "d": {"e": {}}}]
    assert encode_many(documents) == one_by_one(documents)
    assert encode_batch(documents, DEFAULT_CODEC_OPTIONS) is not None


def test_encode_many_of_big_batches_and_big_documents() -> None:
    # over 1024 documents (written in chunks) and documents over 1024 keys (the uncached walk)
    documents: list[dict[str, Any]] = [{"_id": i, "s": str(i), "n": {"x": i}} for i in range(2500)]
    documents[7] = {f"k{i}": i for i in range(1500)}
    documents[1800] = {"big": list(range(2000))}
    assert encode_many(documents) == one_by_one(documents)
    assert encode_batch(documents, DEFAULT_CODEC_OPTIONS) is not None


def test_encode_many_survives_the_dict_header_cache_being_emptied() -> None:
    # more fresh dict-valued keys than a cache holds: the cache is emptied mid-batch
    documents = [{f"fresh-{i}": {"v": i}} for i in range(_encode._KEY_CACHE_LIMIT + 50)]
    assert encode_many(documents) == one_by_one(documents)
    assert encode_many(documents[:3]) == one_by_one(documents[:3])


def test_encode_many_with_other_options_then_the_defaults_again() -> None:
    opts = CodecOptions(uuid_representation=UuidRepresentation.STANDARD, max_nesting_depth=3)
    value = uuid.UUID(int=7)
    documents: list[dict[str, Any]] = [{"u": value, "a": {"b": 1}}, {"c": [1]}]
    assert encode_many(documents, opts) == one_by_one(documents, opts)
    with pytest.raises(InvalidDocument):  # the default options refuse a UUID
        encode_many(documents)
    assert encode_many([{"a": {"b": {"c": {}}}}]) == encode({"a": {"b": {"c": {}}}})


def test_encode_many_limits_apply_to_each_document() -> None:
    # at the nesting limit, and documents each under the size limit though the batch is over
    opts = CodecOptions(max_nesting_depth=3, max_document_size=200)
    documents = [{"a": {"b": {"c": "x" * 100}}} for _ in range(5)]
    assert encode_many(documents, opts) == one_by_one(documents, opts)
    assert encode_batch(documents, opts) is not None


class _Unencodable:
    pass


_LIMITS = CodecOptions(max_nesting_depth=3, max_document_size=100)
_BAD_DOCUMENTS: list[dict[Any, Any]] = [
    {"a": {"b": [1, _Unencodable()]}},  # no BSON type
    {"x\x00y": 1},  # a key with NUL
    {"a": {"b\x00": {"c": 1}}},  # the same, inside
    {1: "not a str key"},
    {"a": [{"n": 2**70}]},  # over int64
    {"s": "\ud800"},  # not UTF-8 encodable
    {"a": {"b": {"c": {"d": 1}}}},  # deeper than max_nesting_depth 3
    {"s": "x" * 200},  # over max_document_size 100
]


@pytest.mark.parametrize("bad", _BAD_DOCUMENTS)
@pytest.mark.parametrize("index", [0, 2])
def test_encode_many_raises_what_encode_raises_for_the_first_bad_document(
    bad: dict[Any, Any], index: int
) -> None:
    documents: list[dict[Any, Any]] = [{"ok": i, "d": {"e": [i]}} for i in range(4)]
    documents.insert(index, bad)
    documents.append({"s": "y" * 300})  # a later bad document is not the one reported
    with pytest.raises(Exception) as expected:
        encode(bad, _LIMITS)
    with pytest.raises(type(expected.value)) as got:
        encode_many(documents, _LIMITS)
    assert str(got.value) == str(expected.value)
    assert getattr(got.value, "path", None) == getattr(expected.value, "path", None)
    assert encode_batch(documents, _LIMITS) is None


def test_encode_batch_refuses_what_is_not_a_dict() -> None:
    good = {"a": 1}
    others: list[Any] = [
        encode(good),
        collections.OrderedDict(good),
        {"a": 1}.items(),
        None,
        5,
        "text",
        [good],
    ]
    for other in others:
        assert encode_batch([good, other, good], DEFAULT_CODEC_OPTIONS) is None
    assert encode_many([good, collections.OrderedDict(good)]) == encode(good) * 2
