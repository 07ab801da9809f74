"""The engine's BSON order: type ranks, numeric coercion, arrays in sorts, type names."""

from __future__ import annotations

import datetime
import math

import pytest

from mongo_sansio.bson import (
    Binary,
    DatetimeMS,
    Decimal128,
    Int64,
    MaxKey,
    MinKey,
    ObjectId,
    Regex,
    Symbol,
    Timestamp,
    Undefined,
)
from mongo_sansio.testing.engine.order import (
    MISSING,
    compare,
    hashable_key,
    render,
    sort_key,
    strict_equal,
    type_name,
    values_equal,
)

OID = ObjectId("0123456789abcdef01234567")
# one value per canonical type, in mongod's order
ASCENDING_BY_TYPE = [
    MinKey(),
    None,
    1,
    "a",
    {"a": 1},
    [1],
    Binary(b"x", 0),
    OID,
    False,
    datetime.datetime(2020, 1, 1),
    Timestamp(1, 1),
    Regex("a"),
    MaxKey(),
]


def test_types_sort_in_mongod_order() -> None:
    shuffled = list(reversed(ASCENDING_BY_TYPE))
    assert sorted(shuffled, key=sort_key) == ASCENDING_BY_TYPE


@pytest.mark.parametrize(
    ("left", "right"),
    [(1, 1.0), (1, Int64(1)), (1, Decimal128("1")), (Decimal128("1.0"), 1.0), (0, -0.0)],
)
def test_numbers_compare_by_value_across_types(left: object, right: object) -> None:
    assert values_equal(left, right)
    assert compare(left, right) == 0


def test_numbers_order_mixed_types() -> None:
    values = [Decimal128("2.5"), Int64(3), 1, 2.0, -1.5]
    assert sorted(values, key=sort_key) == [-1.5, 1, 2.0, Decimal128("2.5"), Int64(3)]


def test_nan_sorts_before_every_number_and_equals_itself() -> None:
    assert compare(math.nan, -math.inf) < 0
    assert compare(math.nan, math.nan) == 0
    assert compare(Decimal128("NaN"), math.nan) == 0


def test_large_ints_compare_exactly_with_floats() -> None:
    assert compare(2**53 + 1, float(2**53)) > 0


def test_strings_and_symbols_share_a_rank() -> None:
    assert values_equal("abc", Symbol("abc"))
    assert compare("b", "a") > 0
    assert compare("Z", "a") < 0  # byte order, not collation


def test_objects_compare_field_by_field_and_by_name() -> None:
    assert compare({"a": 1}, {"a": 2}) < 0
    assert compare({"a": 1}, {"b": 1}) < 0
    assert compare({"a": 1}, {"a": 1, "b": 1}) < 0
    # type rank of the value comes before the field name
    assert compare({"b": 1}, {"a": "x"}) < 0


def test_arrays_compare_element_by_element() -> None:
    assert compare([1, 2], [1, 3]) < 0
    assert compare([1], [1, 0]) < 0
    assert compare([], [0]) < 0


def test_binary_compares_length_then_subtype_then_bytes() -> None:
    assert compare(Binary(b"zz", 0), Binary(b"aaa", 0)) < 0
    assert compare(Binary(b"a", 5), Binary(b"a", 0)) > 0
    assert compare(b"a", Binary(b"a", 0)) == 0


def test_dates_compare_across_representations() -> None:
    when = datetime.datetime(2021, 5, 1, tzinfo=datetime.UTC)
    assert compare(when, DatetimeMS(when)) == 0
    assert compare(datetime.datetime(2021, 5, 1), DatetimeMS(when)) == 0
    assert compare(DatetimeMS(0), when) < 0


def test_timestamps_compare_time_then_increment() -> None:
    assert compare(Timestamp(1, 5), Timestamp(2, 0)) < 0
    assert compare(Timestamp(2, 1), Timestamp(2, 0)) > 0


def test_booleans() -> None:
    assert compare(False, True) < 0
    assert not values_equal(True, 1)


def test_missing_compares_like_null() -> None:
    assert compare(MISSING, None) == 0


def test_undefined_sorts_before_null_and_is_not_equal_to_it() -> None:
    assert compare(Undefined(), None) < 0
    assert compare(Undefined(), MinKey()) > 0
    assert compare(Undefined(), Undefined()) == 0


def test_strict_equality_sees_types() -> None:
    assert not strict_equal(1, 1.0)
    assert not strict_equal(1, Int64(1))
    assert strict_equal({"a": [1, {"b": "x"}]}, {"a": [1, {"b": "x"}]})
    assert not strict_equal({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert strict_equal(math.nan, math.nan)


def test_hashable_key_is_consistent_with_equality() -> None:
    assert hashable_key(1) == hashable_key(1.0) == hashable_key(Int64(1)) == hashable_key(Decimal128("1"))
    assert hashable_key({"a": [1]}) == hashable_key({"a": [1.0]})
    assert hashable_key("1") != hashable_key(1)
    assert hashable_key(None) == hashable_key(MISSING)


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (1, "int"), (2**40, "long"), (Int64(1), "long"), (1.5, "double"),
        (Decimal128("1"), "decimal"), ("s", "string"), ({}, "object"), ([], "array"),
        (b"x", "binData"), (OID, "objectId"), (True, "bool"), (None, "null"),
        (datetime.datetime(2020, 1, 1), "date"), (Timestamp(0, 0), "timestamp"),
        (Regex("x"), "regex"), (MinKey(), "minKey"), (MaxKey(), "maxKey"), (MISSING, "missing"),
    ],
)
def test_type_names(value: object, name: str) -> None:
    assert type_name(value) == name


def test_render_uses_mongod_shell_shape() -> None:
    assert render({"_id": 1}) == "{ _id: 1 }"
    assert render({"name": "x", "n": 1.0, "o": OID}) == (
        "{ name: \"x\", n: 1.0, o: ObjectId('0123456789abcdef01234567') }"
    )
