"""Extended JSON v2 (mongo_sansio.bson.extjson): every type in both modes, the legacy forms,
typed parse errors, nesting and cycles, the relaxed datetime range, and round trips."""

from __future__ import annotations

import collections
import datetime
import json
import math
import re
import uuid
from typing import Any

import pytest
from bson_strategies import (
    binaries,
    cstring,
    datetimes,
    documents,
    int32,
    int64,
    object_ids,
    out_of_range_datetimes,
    regexes,
    text,
    timestamps,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import (
    Binary,
    Code,
    CodecOptions,
    DatetimeConversion,
    DatetimeMS,
    DBPointer,
    DBRef,
    Decimal128,
    Int64,
    MaxKey,
    MinKey,
    ObjectId,
    Regex,
    Symbol,
    Timestamp,
    Undefined,
    UuidRepresentation,
    decode,
    encode,
    extjson,
)
from mongo_sansio.bson.errors import InvalidDocument, InvalidExtendedJSON, UnencodableType

OID = ObjectId("56e1fc72e0c917e9c4714161")
OID_JSON = {"$oid": "56e1fc72e0c917e9c4714161"}
UUID = uuid.UUID("73ffd264-44b3-4c69-90e8-e7d1dfc035d4")
UUID_B64 = "c//SZESzTGmQ6OfR38A11A=="


def dumped(value: Any, mode: str, **kwargs: Any) -> Any:
    """What dumps writes for ``value``, parsed back as plain JSON."""
    return json.loads(extjson.dumps(value, mode=mode, **kwargs))


# --- writing: every type in both modes -----------------------------------------------------

# (value, canonical JSON, relaxed JSON or None when the same)
TYPES: list[tuple[Any, Any, Any]] = [
    ("s", "s", None),
    (True, True, None),
    (None, None, None),
    (1, {"$numberInt": "1"}, 1),
    (-(2**31), {"$numberInt": "-2147483648"}, -(2**31)),
    (2**31, {"$numberLong": "2147483648"}, 2**31),
    (-(2**63), {"$numberLong": "-9223372036854775808"}, -(2**63)),
    (Int64(1), {"$numberLong": "1"}, 1),
    (1.0, {"$numberDouble": "1.0"}, 1.0),
    (-0.0, {"$numberDouble": "-0.0"}, -0.0),
    (1.5, {"$numberDouble": "1.5"}, 1.5),
    (1e300, {"$numberDouble": "1.0E+300"}, 1e300),
    (1.2345678921232e18, {"$numberDouble": "1.2345678921232E+18"}, 1.2345678921232e18),
    (5e-324, {"$numberDouble": "5.0E-324"}, 5e-324),
    (math.inf, {"$numberDouble": "Infinity"}, {"$numberDouble": "Infinity"}),
    (-math.inf, {"$numberDouble": "-Infinity"}, {"$numberDouble": "-Infinity"}),
    (math.nan, {"$numberDouble": "NaN"}, {"$numberDouble": "NaN"}),
    (Decimal128("1.10"), {"$numberDecimal": "1.10"}, None),
    (Decimal128("-Infinity"), {"$numberDecimal": "-Infinity"}, None),
    (b"\xff\xff", {"$binary": {"base64": "//8=", "subType": "00"}}, None),
    (bytearray(b"\x01"), {"$binary": {"base64": "AQ==", "subType": "00"}}, None),
    (memoryview(b"\x01"), {"$binary": {"base64": "AQ==", "subType": "00"}}, None),
    (Binary(b"\xff\xff", 2), {"$binary": {"base64": "//8=", "subType": "02"}}, None),
    (Binary(b"\x01", 0x80), {"$binary": {"base64": "AQ==", "subType": "80"}}, None),
    (UUID, {"$binary": {"base64": UUID_B64, "subType": "04"}}, None),
    (OID, OID_JSON, None),
    (Symbol("sym"), {"$symbol": "sym"}, None),
    (Code("f()"), {"$code": "f()"}, None),
    (Code("f()", {"x": 1}), {"$code": "f()", "$scope": {"x": {"$numberInt": "1"}}},
     {"$code": "f()", "$scope": {"x": 1}}),
    (Timestamp(123456789, 42), {"$timestamp": {"t": 123456789, "i": 42}}, None),
    (Timestamp(2**32 - 1, 2**32 - 1), {"$timestamp": {"t": 2**32 - 1, "i": 2**32 - 1}}, None),
    (Regex("ab/c", "imx"), {"$regularExpression": {"pattern": "ab/c", "options": "imx"}}, None),
    (re.compile("a", re.I | re.M), {"$regularExpression": {"pattern": "a", "options": "imu"}},
     None),
    (DBPointer("db.c", OID), {"$dbPointer": {"$ref": "db.c", "$id": OID_JSON}}, None),
    (DBRef("c", OID), {"$ref": "c", "$id": OID_JSON}, None),
    (DBRef("c", 1, "db", z=2, a=Int64(3)),
     {"$ref": "c", "$id": {"$numberInt": "1"}, "$db": "db", "z": {"$numberInt": "2"},
      "a": {"$numberLong": "3"}},
     {"$ref": "c", "$id": 1, "$db": "db", "z": 2, "a": 3}),
    (MinKey(), {"$minKey": 1}, None),
    (MaxKey(), {"$maxKey": 1}, None),
    (Undefined(), {"$undefined": True}, None),
    (datetime.datetime(1970, 1, 1), {"$date": {"$numberLong": "0"}},
     {"$date": "1970-01-01T00:00:00Z"}),
    (DatetimeMS(-1), {"$date": {"$numberLong": "-1"}}, {"$date": {"$numberLong": "-1"}}),
    ([1, "a"], [{"$numberInt": "1"}, "a"], [1, "a"]),
    ((1,), [{"$numberInt": "1"}], [1]),
    ({"b": {"a": []}}, {"b": {"a": []}}, None),
    (collections.OrderedDict(x=1), {"x": {"$numberInt": "1"}}, {"x": 1}),
]


@pytest.mark.parametrize(("value", "canonical", "relaxed"), TYPES, ids=lambda v: repr(v)[:40])
def test_each_type_in_both_modes(value: Any, canonical: Any, relaxed: Any) -> None:
    assert dumped({"v": value}, "canonical") == {"v": canonical}
    assert dumped({"v": value}, "relaxed") == {"v": canonical if relaxed is None else relaxed}
    # and the top level may be any value
    assert dumped(value, "canonical") == canonical


@pytest.mark.parametrize(("value", "canonical", "relaxed"), TYPES, ids=lambda v: repr(v)[:40])
def test_each_type_reads_back_to_the_same_bson(value: Any, canonical: Any, relaxed: Any) -> None:
    back = extjson.loads(extjson.dumps({"v": value}, mode="canonical"))
    expected = encode({"v": value}, CodecOptions(uuid_representation=UuidRepresentation.STANDARD))
    assert encode(back) == expected


def test_canonical_double_strings_are_exact() -> None:
    # the corpus compares $numberDouble strings as strings
    text = extjson.dumps({"d": 1.2345678921232e18}, mode="canonical")
    assert '"1.2345678921232E+18"' in text
    assert '"-1.0"' in extjson.dumps({"d": -1.0}, mode="canonical")


def test_relaxed_integral_doubles_reload_as_float() -> None:
    back = extjson.loads(extjson.dumps({"d": 2.0, "e": 1e16}, mode="relaxed"))
    assert type(back["d"]) is float and back["d"] == 2.0
    assert type(back["e"]) is float and back["e"] == 1e16


def test_int_subclasses_keep_their_bson_type() -> None:
    class Flag(int):
        pass

    class Long(Int64):
        pass

    class Bin(Binary):
        pass

    assert dumped({"a": Flag(3), "b": Long(3), "c": Bin(b"x", 7)}, "canonical") == {
        "a": {"$numberInt": "3"},
        "b": {"$numberLong": "3"},
        "c": {"$binary": {"base64": "eA==", "subType": "07"}},
    }


def test_uuid_representation_comes_from_codec_options() -> None:
    legacy = CodecOptions(uuid_representation=UuidRepresentation.PYTHON_LEGACY)
    assert dumped({"u": UUID}, "canonical", codec_options=legacy)["u"]["$binary"]["subType"] == "03"
    standard = CodecOptions(uuid_representation=UuidRepresentation.STANDARD)
    assert extjson.loads(json.dumps({"u": {"$uuid": str(UUID)}}), codec_options=standard) == {"u": UUID}
    assert extjson.loads(json.dumps({"u": {"$uuid": str(UUID)}})) == {"u": Binary(UUID.bytes, 4)}


def test_key_order_is_kept_and_sort_keys_sorts_documents_only() -> None:
    doc = {"z": 1, "a": {"y": 1, "b": 2}, "r": DBRef("c", 1, "d")}
    assert list(json.loads(extjson.dumps(doc))) == ["z", "a", "r"]
    out = json.loads(extjson.dumps(doc, sort_keys=True))
    assert list(out) == ["a", "r", "z"] and list(out["a"]) == ["b", "y"]
    assert list(out["r"]) == ["$ref", "$id", "$db"]  # wrappers keep their spec order


def test_indent() -> None:
    assert extjson.dumps({"a": [1]}, indent=2) == '{\n  "a": [\n    1\n  ]\n}'


def test_unknown_mode_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="mode"):
        extjson.dumps({}, mode="legacy")
    with pytest.raises(ValueError):
        extjson.dumps({}, "strict")


# --- relaxed datetimes: ISO-8601 for 1970..9999, $numberLong otherwise --------------------


@pytest.mark.parametrize(
    ("value", "relaxed"),
    [
        (datetime.datetime(1970, 1, 1), "1970-01-01T00:00:00Z"),
        (datetime.datetime(2012, 12, 24, 12, 15, 30, 501000), "2012-12-24T12:15:30.501Z"),
        (datetime.datetime(2012, 12, 24, 12, 15, 30, 1999), "2012-12-24T12:15:30.001Z"),
        (datetime.datetime(2012, 12, 24, 12, 15, 30, 999), "2012-12-24T12:15:30Z"),
        (datetime.datetime(9999, 12, 31, 23, 59, 59, 999999), "9999-12-31T23:59:59.999Z"),
        (datetime.datetime(2000, 1, 1, 2, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
         "2000-01-01T00:00:00Z"),
        (DatetimeMS(1356351330501), "2012-12-24T12:15:30.501Z"),
        (DatetimeMS(0), "1970-01-01T00:00:00Z"),
        (datetime.datetime(1969, 12, 31, 23, 59, 59, 999000), {"$numberLong": "-1"}),
        (datetime.datetime(1, 1, 1), {"$numberLong": "-62135596800000"}),
        (DatetimeMS(253402300800000), {"$numberLong": "253402300800000"}),
        (DatetimeMS(-(2**63)), {"$numberLong": str(-(2**63))}),
    ],
)
def test_relaxed_datetime_range(value: Any, relaxed: Any) -> None:
    assert dumped({"d": value}, "relaxed") == {"d": {"$date": relaxed}}
    ms = json.loads(extjson.dumps({"d": value}, mode="canonical"))["d"]["$date"]["$numberLong"]
    back = extjson.loads(extjson.dumps({"d": value}, mode="relaxed"))
    assert encode(back) == encode({"d": DatetimeMS(int(ms))})


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("1970-01-01T00:00:00Z", 0),
        ("1970-01-01T00:00:00.5Z", 500),
        ("1970-01-01T00:00:00.123456Z", 123),
        ("1970-01-01t00:00:00z", 0),
        ("1970-01-01T01:00:00+01:00", 0),
        ("1970-01-01T00:00:00-0130", 5400000),
        ("1969-12-31T23:59:59.999Z", -1),
        ("0001-01-01T00:00:00Z", -62135596800000),
    ],
)
def test_relaxed_dates_are_read(text: str, ms: int) -> None:
    value = extjson.loads(json.dumps({"d": {"$date": text}}))["d"]
    assert value == datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
    assert value.tzinfo is None


def test_dates_follow_codec_options() -> None:
    aware = extjson.loads('{"d": {"$date": "1970-01-01T00:00:00Z"}}', codec_options=CodecOptions(tz_aware=True))
    assert aware["d"] == datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    ms = CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_MS)
    assert extjson.loads('{"d": {"$date": {"$numberLong": "5"}}}', codec_options=ms) == {"d": DatetimeMS(5)}
    far = extjson.loads('{"d": {"$date": {"$numberLong": "253402300800000"}}}')
    assert far == {"d": DatetimeMS(253402300800000)}


# --- reading ------------------------------------------------------------------------------


def test_canonical_types_are_read_as_the_decoder_types_them() -> None:
    text = json.dumps({
        "i": {"$numberInt": "-5"}, "l": {"$numberLong": "5"}, "d": {"$numberDouble": "-0.0"},
        "n": {"$numberDouble": "NaN"}, "dec": {"$numberDecimal": "1E+3"}, "b0": {"$binary": {"base64": "AQ==", "subType": "0"}},
        "b5": {"$binary": {"base64": "AQ==", "subType": "A"}}, "o": {"$oid": "56E1FC72E0C917E9C4714161"},
        "c": {"$scope": {}, "$code": "x"}, "t": {"$timestamp": {"i": 2, "t": 1}},
        "p": {"$dbPointer": {"$id": OID_JSON, "$ref": "db.c"}}, "u": {"$undefined": True},
    })
    value = extjson.loads(text)
    assert type(value["i"]) is int and value["i"] == -5
    assert type(value["l"]) is Int64 and value["l"] == 5
    assert math.copysign(1.0, value["d"]) == -1.0 and math.isnan(value["n"])
    assert value["dec"] == Decimal128("1E+3")
    assert type(value["b0"]) is bytes and value["b5"] == Binary(b"\x01", 10)
    assert value["o"] == OID and value["c"] == Code("x", {}) and value["t"] == Timestamp(1, 2)
    assert value["p"] == DBPointer("db.c", OID) and value["u"] == Undefined()


def test_relaxed_numbers_follow_the_spec() -> None:
    value = extjson.loads('{"a": 1, "b": 2147483648, "c": 9223372036854775808, "d": 1.0, "e": 1E2}')
    assert value == {"a": 1, "b": 2**31, "c": 9223372036854775808.0, "d": 1.0, "e": 100.0}
    assert [type(v) for v in value.values()] == [int, int, float, float, float]
    assert encode(value) == encode({"a": 1, "b": Int64(2**31), "c": 9.223372036854776e18, "d": 1.0, "e": 100.0})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"$binary": "AQI=", "$type": "5"}', Binary(b"\x01\x02", 5)),
        ('{"$type": "05", "$binary": "AQI="}', Binary(b"\x01\x02", 5)),
        ('{"$binary": "AQI=", "$type": "00"}', b"\x01\x02"),
        ('{"$regex": "a.b", "$options": "xi"}', Regex("a.b", "ix")),
        ('{"$regex": "a.b"}', Regex("a.b", "")),
        ('{"$uuid": "73ffd264-44b3-4c69-90e8-e7d1dfc035d4"}', Binary(UUID.bytes, 4)),
        ('{"$uuid": "73FFD26444B34C6990E8E7D1DFC035D4"}', Binary(UUID.bytes, 4)),
        ('{"$date": "2012-12-24T12:15:30.501Z"}', datetime.datetime(2012, 12, 24, 12, 15, 30, 501000)),
    ],
)
def test_legacy_forms_are_read(text: str, expected: Any) -> None:
    assert extjson.loads('{"v": ' + text + "}") == {"v": expected}


def test_query_operators_stay_documents() -> None:
    regex = {"$regularExpression": {"pattern": "p", "options": ""}}
    assert extjson.loads(json.dumps({"a": {"$regex": regex, "$options": "ix"}})) == {
        "a": {"$regex": Regex("p", ""), "$options": "ix"}
    }
    assert extjson.loads('{"a": {"$type": "string"}, "b": {"$type": 2}}') == {
        "a": {"$type": "string"}, "b": {"$type": 2}
    }
    assert extjson.loads('{"a": {"$in": [1], "$unknown": 2}}') == {"a": {"$in": [1], "$unknown": 2}}


def test_dbref_rules() -> None:
    text = '{"$ref": "not-a-dbref", "$id": 1, "a": {"$id": 2, "$ref": "c", "x": 3}}'
    value = extjson.loads(text)
    assert type(value) is dict and list(value) == ["$ref", "$id", "a"]  # the top level is a document
    assert value["a"] == DBRef("c", 2, x=3)
    assert extjson.loads('[{"$ref": "c", "$id": 1, "$db": "d"}]') == [DBRef("c", 1, "d")]
    # not quite a DBRef: left as it is, no error
    for odd in ('{"$ref": "c"}', '{"$ref": 1, "$id": 1}', '{"$ref": "c", "$id": 1, "$db": 1}'):
        assert type(extjson.loads('{"a": ' + odd + "}")["a"]) is dict
    # a code scope is a document of its own
    code = extjson.loads('{"c": {"$code": "f", "$scope": {"$id": 1, "$ref": "c"}}}')["c"]
    assert type(code.scope) is dict and list(code.scope) == ["$id", "$ref"]


def test_regex_options_are_sorted_when_written() -> None:
    for mode in ("canonical", "relaxed"):
        assert dumped({"r": Regex("a", "xsmi")}, mode) == {
            "r": {"$regularExpression": {"pattern": "a", "options": "imsx"}}
        }


def test_regex_options_are_sorted_when_read() -> None:
    value = extjson.loads('{"r": {"$regularExpression": {"options": "xmi", "pattern": "a"}}}')
    assert value == {"r": Regex("a", "imx")}


def test_duplicate_keys_last_wins() -> None:
    assert extjson.loads('{"a": 1, "a": 2}') == {"a": 2}


def test_bytes_input() -> None:
    assert extjson.loads(b'{"a": "\xc3\xa9"}') == {"a": "\xe9"}
    assert extjson.loads(bytearray(b"[1]")) == [1]
    assert extjson.loads(memoryview(b"[1]")) == [1]
    with pytest.raises(TypeError):
        extjson.loads(1)  # type: ignore[arg-type]


def test_document_class() -> None:
    opts = CodecOptions(document_class=collections.OrderedDict)
    value = extjson.loads('{"a": {"b": {"$numberInt": "1"}}, "c": {"$binary": {"base64": "", "subType": "01"}}}', codec_options=opts)
    assert type(value) is collections.OrderedDict and type(value["a"]) is collections.OrderedDict
    assert value["c"] == Binary(b"", 1)


# --- parse errors: always InvalidExtendedJSON ------------------------------------------------

BAD = [
    "", "{", '{"a": 1,}', "{'a': 1}", '{"a": 01}', '{"a": 1} x', '{"a": NaN}', '{"a": Infinity}',
    '{"a": -Infinity}', '{"a": 1e400}', '{"a": -1E+309}', '{"a": ' + "9" * 5000 + "}",
    '{"a": {"$numberInt": 1}}', '{"a": {"$numberInt": "2147483648"}}', '{"a": {"$numberInt": "1.0"}}',
    '{"a": {"$numberInt": " 1"}}', '{"a": {"$numberInt": "1_0"}}', '{"a": {"$numberInt": "\u0661"}}',
    '{"a": {"$numberInt": "1", "x": 1}}', '{"a": {"$numberLong": "-9223372036854775809"}}',
    '{"a": {"$numberLong": "' + "1" * 5000 + '"}}', '{"a": {"$numberDouble": "1e999"}}',
    '{"a": {"$numberDouble": "inf"}}', '{"a": {"$numberDouble": "1_0"}}', '{"a": {"$numberDouble": 1.5}}',
    '{"a": {"$numberDecimal": "abc"}}', '{"a": {"$numberDecimal": "1E+99999"}}', '{"a": {"$oid": "zz"}}',
    '{"a": {"$oid": "56e1fc72e0c917e9c471416"}}', '{"a": {"$binary": {"base64": "!!!", "subType": "00"}}}',
    '{"a": {"$binary": {"base64": "AQ", "subType": "00"}}}', '{"a": {"$binary": {"base64": "AQ==", "subType": "100"}}}',
    '{"a": {"$binary": {"base64": "AQ==", "subType": "zz"}}}', '{"a": {"$binary": {"base64": "AQ=="}}}',
    '{"a": {"$binary": "AQ==", "$type": 0}}', '{"a": {"$binary": "AQ=="}}', '{"a": {"$binary": [], "$type": "00"}}',
    '{"a": {"$date": 42}}', '{"a": {"$date": 1.5}}', '{"a": {"$date": "2012-13-01T00:00:00Z"}}',
    '{"a": {"$date": "2012-01-01"}}', '{"a": {"$date": "2012-01-01T00:00:00"}}', '{"a": {"$date": "2012-01-01T00:00:60Z"}}',
    '{"a": {"$date": "2012-01-01T00:00:00+24:00"}}', '{"a": {"$date": {"$numberInt": "1"}}}',
    '{"a": {"$date": {"$numberLong": "1"}, "x": 1}}', '{"a": {"$uuid": "zzzzzzzz-44b3-4c69-90e8-e7d1dfc035d4"}}',
    '{"a": {"$uuid": "73ff-d26444b-34c6-990e8e-7d1dfc035d4"}}', '{"a": {"$uuid": 5}}',
    '{"a": {"$timestamp": {"t": -1, "i": 1}}}', '{"a": {"$timestamp": {"t": 4294967296, "i": 1}}}',
    '{"a": {"$timestamp": {"t": 1.0, "i": 1}}}', '{"a": {"$timestamp": {"t": 1}}}', '{"a": {"$timestamp": 1}}',
    '{"a": {"$undefined": false}}', '{"a": {"$minKey": true}}', '{"a": {"$minKey": 1.0}}', '{"a": {"$maxKey": 2}}',
    '{"a": {"$symbol": 1}}', '{"a": {"$code": 1}}', '{"a": {"$code": "x", "$scope": []}}', '{"a": {"$scope": {}}}',
    '{"a": {"$code": "x", "$scope": {}, "y": 1}}', '{"a": {"$oid": "56e1fc72e0c917e9c4714161", "$symbol": "x"}}',
    '{"a": {"$regex": "a", "$options": 1}}', '{"a": {"$regex": "a\\u0000"}}',
    '{"a": {"$regularExpression": {"pattern": "a", "options": "\\u0000"}}}', '{"a": {"$regularExpression": {"pattern": "a"}}}',
    '{"a": {"$dbPointer": {"$ref": "b", "$id": 1}}}', '{"a": {"$dbPointer": {"$ref": "b", "$id": {"$oid": "56e1fc72e0c917e9c4714161"}, "$db": "x"}}}',
    '{"a": {"$dbPointer": "x"}}', '{"a\\u0000": 1}', '{"a": {"b\\u0000": 1}}', '{"a": "\\ud800"}', '{"\\udc00": 1}',
    '["\\ud800x"]', '"\\udfff\\ud800"', "\ud800", b"\xff\xfe", b'{"a": "\xc3"}', b"\xef\xbb\xbf{}",
]


@pytest.mark.parametrize("bad", BAD, ids=lambda t: repr(t)[:50])
def test_bad_text_raises_invalid_extended_json(bad: str | bytes) -> None:
    with pytest.raises(InvalidExtendedJSON):
        extjson.loads(bad)


def test_invalid_extended_json_is_a_value_error_with_a_reason() -> None:
    with pytest.raises(ValueError, match=r"\$numberInt"):
        extjson.loads('{"a": {"$numberInt": "x"}}')
    with pytest.raises(InvalidExtendedJSON, match="line 1 column"):
        extjson.loads('{"a": }')


def test_escaped_surrogate_pairs_and_backslashes_are_fine() -> None:
    assert extjson.loads('{"a": "\\ud83d\\ude00", "b": "\\\\ud800"}') == {"a": "\U0001f600", "b": "\\ud800"}


# --- nesting and cycles ------------------------------------------------------------------------


def test_deep_text_is_refused_without_recursion_error() -> None:
    for deep in ("[" * 100_000 + "]" * 100_000, '{"a":' * 10_000 + "1" + "}" * 10_000):
        with pytest.raises(InvalidExtendedJSON):
            extjson.loads(deep)


def test_nesting_limit_counts_documents_not_wrappers() -> None:
    inner = '{"$numberLong": "1"}'
    text = '{"a":' * 199 + inner + "}" * 199  # 199 documents: wrappers do not count
    assert extjson.loads(text) is not None
    with pytest.raises(InvalidExtendedJSON, match="max_nesting_depth"):
        extjson.loads('{"a":' * 201 + "1" + "}" * 201)
    opts = CodecOptions(max_nesting_depth=3)
    assert extjson.loads("[[[1]]]", codec_options=opts) == [[[1]]]
    with pytest.raises(InvalidExtendedJSON):
        extjson.loads("[[[[1]]]]", codec_options=opts)
    assert extjson.loads('[[{"$code": "", "$scope": {"a": 1}}]]', codec_options=opts)
    with pytest.raises(InvalidExtendedJSON):  # the scope is a level, the $code wrapper is not
        extjson.loads('[[{"$code": "", "$scope": {"a": []}}]]', codec_options=opts)


def test_deep_values_are_refused_without_recursion_error() -> None:
    deep: list[Any] = []
    cur = deep
    for _ in range(10_000):
        cur.append([])
        cur = cur[0]
    for mode in ("relaxed", "canonical"):
        with pytest.raises(InvalidDocument, match="max_nesting_depth"):
            extjson.dumps({"x": deep}, mode=mode)
    assert extjson.dumps([[[]]], codec_options=CodecOptions(max_nesting_depth=3)) == "[[[]]]"
    with pytest.raises(InvalidDocument):
        extjson.dumps([[[[]]]], codec_options=CodecOptions(max_nesting_depth=3))
    with pytest.raises(InvalidDocument):  # a code scope is a level too
        extjson.dumps([[Code("", {"a": []})]], codec_options=CodecOptions(max_nesting_depth=3))


def test_cycles_are_refused() -> None:
    doc: dict[str, Any] = {"a": [1]}
    doc["a"].append(doc)
    with pytest.raises(InvalidDocument, match="cycle") as info:
        extjson.dumps(doc)
    assert info.value.path == "a.1"
    shared = [1]
    assert extjson.dumps({"a": shared, "b": shared}) == '{"a": [1], "b": [1]}'


@pytest.mark.parametrize(
    ("doc", "path", "error"),
    [
        ({1: 2}, "1", InvalidDocument),
        ({"a": {"b": [{(1,): 1}]}}, "a.b.0.(1,)", InvalidDocument),
        ({"a": {"b\x00": 1}}, "a.b\x00", InvalidDocument),
        ({"a": [2**63]}, "a.0", InvalidDocument),
        ({"a": Int64(2**63)}, "a", InvalidDocument),
        ({"a": [-(2**63) - 1]}, "a.0", InvalidDocument),
        ({"a": {"b": object()}}, "a.b", UnencodableType),
        ({"a": 1j}, "a", UnencodableType),
        ({"a": Regex("a\x00")}, "a", InvalidDocument),
    ],
)
def test_unwritable_values_name_their_path(doc: Any, path: str, error: type) -> None:
    for mode in ("relaxed", "canonical"):
        with pytest.raises(error) as info:
            extjson.dumps(doc, mode=mode)
        assert info.value.path == path


def test_lone_surrogates_are_not_written() -> None:
    with pytest.raises(InvalidDocument):
        extjson.dumps({"a": "\ud800"})


# --- the JSON-value helpers -----------------------------------------------------------------


def test_value_helpers() -> None:
    doc = {"a": Int64(1), "b": [datetime.datetime(1970, 1, 1)], "c": DBRef("x", 1)}
    canonical = extjson.to_extjson_value(doc, "canonical")
    assert canonical == json.loads(extjson.dumps(doc, mode="canonical"))
    assert extjson.from_extjson_value(canonical) == doc
    assert extjson.from_extjson_value({"$ref": "x", "$id": 1}) == {"$ref": "x", "$id": 1}
    for bad in ({"a": math.nan}, {"a": (1,)}, {1: 2}, {"a": {"$numberInt": 1}}, {"a": "\udc00"}):
        with pytest.raises(InvalidExtendedJSON):
            extjson.from_extjson_value(bad)
    assert extjson.from_extjson_value([2**64]) == [float(2**64)]


# --- round trips ---------------------------------------------------------------------------

# Decimal128 values Extended JSON can spell: the strategies' random bits include
# non-canonical encodings, which no decimal string reproduces.
canonical_decimals = st.binary(min_size=16, max_size=16).map(
    lambda bits: Decimal128(str(Decimal128.from_bid(bits)))
)
scalars = st.one_of(
    st.none(), st.booleans(), int32, int64, int64.map(Int64), st.floats(allow_nan=False), st.just(math.nan), text, binaries,
    object_ids, datetimes, out_of_range_datetimes, regexes, timestamps, canonical_decimals,
    st.just(MinKey()), st.just(MaxKey()), st.just(Undefined()), text.map(Code), text.map(Symbol),
    st.builds(DBPointer, text, object_ids), st.uuids().map(lambda u: Binary(u.bytes, 4)),
)
every_document = documents(scalars)


@settings(max_examples=300, deadline=None)
@given(every_document)
def test_canonical_round_trip_keeps_the_bson(document: dict[str, Any]) -> None:
    text = extjson.dumps(document, mode="canonical")
    back = extjson.loads(text)
    assert encode(back) == encode(document)
    assert extjson.dumps(back, mode="canonical") == text


@settings(max_examples=200, deadline=None)
@given(every_document)
def test_relaxed_round_trip_keeps_keys_and_text(document: dict[str, Any]) -> None:
    text = extjson.dumps(document, mode="relaxed")
    back = extjson.loads(text)
    assert list(back) == list(document)
    assert extjson.dumps(back, mode="relaxed") == text


@settings(max_examples=200, deadline=None)
@given(every_document)
def test_decoded_bson_writes_like_the_original(document: dict[str, Any]) -> None:
    decoded = decode(encode(document))
    for mode in ("canonical", "relaxed"):
        assert extjson.dumps(decoded, mode=mode) == extjson.dumps(document, mode=mode)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        cstring.filter(lambda key: not key.startswith("$")),
        st.one_of(int32, st.floats(allow_nan=False, allow_infinity=False), text, st.booleans()),
        max_size=5,
    )
)
def test_plain_json_is_relaxed_extended_json(document: dict[str, Any]) -> None:
    text = extjson.dumps(document, mode="relaxed")
    assert text == json.dumps(document, ensure_ascii=False)
    assert extjson.loads(text) == document
