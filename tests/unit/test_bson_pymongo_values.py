"""Our bson values beside PyMongo's: code moved over from PyMongo mixes both.

Our ObjectId, Int64, Decimal128, Timestamp, Regex, Binary, Code, MinKey, MaxKey, DBRef and
DatetimeMS equal PyMongo's value of the same content and hash like it; PyMongo's equal ours
where PyMongo's ``__eq__`` lets Python ask ours (it returns NotImplemented); ``json_util`` and
PyMongo's encoder take our values (they dispatch on ``_type_marker``); ``str()`` of an Int64 is
the number; ``Regex.flags`` is an int; every int64 decodes as Int64; an integer beyond int64
raises OverflowError.  PyMongo's bson is the oracle.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from bson_strategies import documents, shared_scalars
from hypothesis import given, settings

from mongo_sansio.bson import (
    Binary,
    Code,
    DatetimeMS,
    DBRef,
    Decimal128,
    Int64,
    InvalidDocument,
    MaxKey,
    MinKey,
    ObjectId,
    Regex,
    Timestamp,
    decode,
    encode,
)

bson = pytest.importorskip("bson", reason="PyMongo (the test oracle) is not installed")
from bson import json_util  # noqa: E402

OID = bytes(range(12))


def pairs() -> list[tuple[Any, Any]]:
    """(ours, PyMongo's) of the same value, for every class PyMongo has."""
    return [
        (ObjectId(OID), bson.ObjectId(OID)),
        (Int64(7), bson.Int64(7)),
        (Decimal128("1.10"), bson.Decimal128("1.10")),
        (Timestamp(1700000000, 3), bson.Timestamp(1700000000, 3)),
        (Regex("^a", "im"), bson.Regex("^a", "im")),
        (Binary(b"\x01\x02", 5), bson.Binary(b"\x01\x02", 5)),
        (Code("f()"), bson.Code("f()")),
        (Code("f()", {"a": 1}), bson.Code("f()", {"a": 1})),
        (MinKey(), bson.MinKey()),
        (MaxKey(), bson.MaxKey()),
        (DBRef("c", 1, "d", x=2), bson.DBRef("c", 1, "d", x=2)),
        (DatetimeMS(-(2**40)), bson.DatetimeMS(-(2**40))),
    ]


@pytest.mark.parametrize(("ours", "theirs"), pairs(), ids=lambda value: type(value).__name__)
def test_ours_equals_pymongos_and_hashes_like_it(ours: Any, theirs: Any) -> None:
    assert ours == theirs and not ours != theirs
    if type(theirs).__hash__ is not None:  # PyMongo's Decimal128, Regex and Code do not hash
        assert hash(ours) == hash(theirs)
        assert {ours: "found"}[theirs] == "found"  # (the stored key's __eq__ is asked)


#: PyMongo's classes whose __eq__ answers False for a class it does not know (Python never asks
#: ours): ``theirs == ours`` is False for these, and only for these
_PYMONGO_SAYS_FALSE = {"Binary", "Code", "MinKey", "MaxKey", "DatetimeMS"}


@pytest.mark.parametrize(("ours", "theirs"), pairs(), ids=lambda value: type(value).__name__)
def test_pymongos_equals_ours_where_pymongo_lets_python_ask(ours: Any, theirs: Any) -> None:
    expected = type(theirs).__name__ not in _PYMONGO_SAYS_FALSE
    assert (theirs == ours) is expected
    assert (theirs != ours) is not expected
    if expected and type(theirs).__hash__ is not None:
        assert {theirs: "found"}[ours] == "found"


@pytest.mark.parametrize(
    ("ours", "other"),
    [
        (ObjectId(OID), bson.ObjectId(bytes(12))),
        (Decimal128("1.10"), bson.Decimal128("1.1")),
        (Timestamp(1, 2), bson.Timestamp(1, 3)),
        (Regex("^a", "i"), bson.Regex("^a", "m")),
        (Binary(b"\x01", 5), bson.Binary(b"\x01", 6)),
        (Code("f()"), bson.Code("f()", {"a": 1})),
        (MinKey(), bson.MaxKey()),
        (DBRef("c", 1), bson.DBRef("c", 2)),
    ],
    ids=lambda value: type(value).__name__,
)
def test_different_values_are_not_equal(ours: Any, other: Any) -> None:
    assert ours != other and not ours == other and other != ours


def test_an_object_id_of_pymongo_is_an_instance_of_ours_and_orders_with_it() -> None:
    theirs = bson.ObjectId(OID)
    assert isinstance(theirs, ObjectId) and not isinstance("x" * 24, ObjectId)
    assert ObjectId(theirs) == theirs and type(ObjectId(theirs)) is ObjectId
    later = ObjectId(bytes([1] * 12))
    assert later > theirs and theirs < later and sorted([later, theirs]) == [theirs, later]
    assert Timestamp(1, 2) < bson.Timestamp(1, 3) and bson.Timestamp(1, 3) > Timestamp(1, 2)
    assert MinKey() < bson.MaxKey() and not MinKey() < bson.MinKey() and MinKey() <= bson.MinKey()


def test_int64_prints_as_the_number_and_reprs_as_itself() -> None:
    assert str(Int64(42)) == str(bson.Int64(42)) == "42"
    assert f"{Int64(2048)} bytes" == "2048 bytes" and f"{Int64(5):03d}" == "005"
    assert repr(Int64(42)) == "Int64(42)"


def test_regex_flags_are_re_bits_and_options_keep_the_letters() -> None:
    regex = Regex("^a", "xsmi")
    assert regex.flags == re.I | re.M | re.S | re.X == bson.Regex("^a", "imsx").flags
    assert regex.options == "xsmi"  # as stored: bytes survive a round trip
    assert Regex("^a", re.I | re.M).options == "im"
    assert decode(encode({"r": Regex("a", "mi")}))["r"].options == "im"  # BSON sorts them
    assert Regex.from_native(re.compile("a", re.I)).flags == re.I | re.U


def test_every_int64_decodes_as_int64_as_pymongo_decodes_it() -> None:
    for value in (0, -(2**31), 2**31, 2**40, -(2**63), 2**63 - 1):
        data = bson.encode({"v": bson.Int64(value)})
        ours, theirs = decode(data)["v"], bson.decode(data)["v"]
        assert type(ours) is Int64 and type(theirs) is bson.Int64 and ours == theirs == value


def test_an_integer_beyond_int64_raises_overflow_error_as_in_pymongo() -> None:
    for value in (2**63, -(2**63) - 1):
        with pytest.raises(OverflowError):
            bson.encode({"a": {"b": value}})
        with pytest.raises(OverflowError, match="8-byte ints") as info:
            encode({"a": {"b": value}})
        assert isinstance(info.value, InvalidDocument) and info.value.path == "a.b"


@settings(max_examples=200, deadline=None)
@given(documents(shared_scalars))
def test_json_util_writes_our_values_as_pymongos(document: dict[str, Any]) -> None:
    data = encode(document)
    ours, theirs = decode(data), bson.decode(data)
    for options in (json_util.CANONICAL_JSON_OPTIONS, json_util.RELAXED_JSON_OPTIONS):
        assert json_util.dumps(ours, json_options=options) == json_util.dumps(
            theirs, json_options=options
        )


@settings(max_examples=200, deadline=None)
@given(documents(shared_scalars))
def test_pymongos_encoder_writes_our_values_as_ours_does(document: dict[str, Any]) -> None:
    data = encode(document)
    assert bson.encode(decode(data)) == data


@settings(max_examples=200, deadline=None)
@given(documents(shared_scalars))
def test_our_extjson_writes_pymongos_values_as_ours(document: dict[str, Any]) -> None:
    from mongo_sansio.bson import extjson

    data = encode(document)
    for mode in ("canonical", "relaxed"):
        assert extjson.dumps(bson.decode(data), mode=mode) == extjson.dumps(decode(data), mode=mode)
