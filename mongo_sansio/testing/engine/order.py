"""MongoDB's order over BSON values: comparison, sort keys, equality and type names.

mongod compares values of different types by a fixed "canonical type" rank (MinKey < null <
numbers < strings < objects < arrays < binary < ObjectId < bool < date < Timestamp < regex <
MaxKey; the numbers come from :func:`mongo_sansio.bson.canonical.canonical_type`); numbers of
every kind (int32, int64, double, decimal) compare by value, so ``1 == 1.0 == Int64(1)``.  Objects compare element by element (type rank, then field name, then
value) and arrays element by element.  Strings compare by code point, the same order as
mongod's byte-wise UTF-8 comparison (the simple collation), unless the functions that compare are
given a :class:`~.collation.Collation`: then strings (and symbols, not code) compare by its sort
keys, at any depth inside objects and arrays; field names always compare by code point.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mongo_sansio.bson import (
    Code,
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
)
from mongo_sansio.bson.canonical import (
    RANK_ARRAY,
    RANK_BINARY,
    RANK_BOOL,
    RANK_CODE,
    RANK_CODE_WITH_SCOPE,
    RANK_DATE,
    RANK_DBPOINTER,
    RANK_MAXKEY,
    RANK_MINKEY,
    RANK_NULL,
    RANK_NUMBER,
    RANK_OBJECT,
    RANK_OBJECTID,
    RANK_REGEX,
    RANK_STRING,
    RANK_TIMESTAMP,
    RANK_UNDEFINED,
    canonical_type,
)

if TYPE_CHECKING:  # (collation.py imports this module)
    from mongo_sansio.testing.engine.collation import Collation

__all__ = [
    "MISSING",
    "Missing",
    "canonical_rank",
    "compare",
    "values_equal",
    "strict_equal",
    "sort_key",
    "sort_key_for",
    "is_number",
    "numeric_value",
    "type_name",
    "type_number",
    "render",
    "copy_value",
    "array_sort_value",
    "compare_by_spec",
    "unique_by_equality",
    "TYPE_NUMBERS",
    "hashable_key",
    "truncated_int",
    "whole_number",
]


class Missing:
    """The absence of a field (distinct from null); a singleton, falsy."""

    _instance: Missing | None = None

    def __new__(cls) -> Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "MISSING"


MISSING = Missing()

# What canonical_rank gives a Python value with no BSON type: after every BSON type but MaxKey.
_RANK_UNKNOWN = RANK_CODE + 1


def is_number(value: Any) -> bool:
    return isinstance(value, int | float | Decimal128) and not isinstance(value, bool)


def canonical_rank(value: Any) -> int:
    """The canonical type rank mongod orders types by (a missing field ranks as null)."""
    if value is None or isinstance(value, Missing):
        return RANK_NULL
    try:
        return canonical_type(value)
    except TypeError:
        return _RANK_UNKNOWN


def numeric_value(value: Any) -> int | float | decimal.Decimal:
    """A number as a Python value that compares exactly with the others (Decimal for decimal128)."""
    if isinstance(value, Decimal128):
        number = value.to_decimal()
        # a signalling NaN would raise on every comparison; mongod treats it as NaN
        return decimal.Decimal("NaN") if number.is_snan() else number
    if isinstance(value, bool):
        return int(value)
    return value  # type: ignore[no-any-return]


def _is_nan(number: int | float | decimal.Decimal) -> bool:
    if isinstance(number, float):
        return math.isnan(number)
    if isinstance(number, decimal.Decimal):
        return number.is_nan()
    return False


def _compare_numbers(left: Any, right: Any) -> int:
    a, b = numeric_value(left), numeric_value(right)
    # mongod: NaN equals NaN and sorts below every other number
    a_nan, b_nan = _is_nan(a), _is_nan(b)
    if a_nan or b_nan:
        return int(b_nan) - int(a_nan)
    if isinstance(a, decimal.Decimal) and isinstance(b, float):
        b = decimal.Decimal(b)
    elif isinstance(b, decimal.Decimal) and isinstance(a, float):
        a = decimal.Decimal(a)
    return int(a > b) - int(a < b)


def _date_ms(value: Any) -> int:
    if isinstance(value, DatetimeMS):
        return int(value)
    return int(DatetimeMS(value))


def _cmp(a: Any, b: Any) -> int:
    return int(a > b) - int(a < b)


def _items(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, DBRef):
        out: list[tuple[str, Any]] = [("$ref", value.collection), ("$id", value.id)]
        if value.database is not None:
            out.append(("$db", value.database))
        return out + list(value.extra.items())
    return list(value.items())


def compare(left: Any, right: Any, collation: Collation | None = None) -> int:
    """-1, 0 or 1 as ``left`` sorts before, with or after ``right`` in mongod's order (strings
    under ``collation`` when one is given)."""
    rank_l, rank_r = canonical_rank(left), canonical_rank(right)
    if rank_l != rank_r:
        return -1 if rank_l < rank_r else 1
    if rank_l == RANK_NUMBER:
        return _compare_numbers(left, right)
    if rank_l == RANK_STRING and collation is not None:
        return collation.compare(str(left), str(right))
    if rank_l == RANK_STRING or rank_l == RANK_CODE:
        return _cmp(str(left), str(right))
    if rank_l == RANK_CODE_WITH_SCOPE:
        return _cmp(str(left), str(right)) or compare(dict(left.scope), dict(right.scope))
    if rank_l == RANK_OBJECT:
        return _compare_sequences_of_fields(_items(left), _items(right), collation)
    if rank_l == RANK_ARRAY:
        for x, y in zip(left, right, strict=False):
            result = compare(x, y, collation)
            if result:
                return result
        return _cmp(len(left), len(right))
    if rank_l == RANK_BINARY:
        # mongod: length first, then subtype, then the bytes
        sub_l = getattr(left, "subtype", 0)
        sub_r = getattr(right, "subtype", 0)
        return _cmp((len(left), sub_l, bytes(left)), (len(right), sub_r, bytes(right)))
    if rank_l == RANK_OBJECTID:
        return _cmp(left.binary, right.binary)
    if rank_l == RANK_BOOL:
        return _cmp(left, right)
    if rank_l == RANK_DATE:
        return _cmp(_date_ms(left), _date_ms(right))
    if rank_l == RANK_TIMESTAMP:
        return _cmp((left.time, left.inc), (right.time, right.inc))
    if rank_l == RANK_REGEX:
        return _cmp(_regex_parts(left), _regex_parts(right))
    if rank_l == RANK_DBPOINTER:
        return _cmp((left.namespace, left.id.binary), (right.namespace, right.id.binary))
    if rank_l in (RANK_NULL, RANK_UNDEFINED, RANK_MINKEY, RANK_MAXKEY):
        return 0
    return _cmp(repr(left), repr(right))


def _regex_parts(value: Any) -> tuple[str, str]:
    if isinstance(value, Regex):
        return (value.pattern, value.options)
    converted = Regex.from_native(value)
    return (converted.pattern, converted.options)


def _compare_sequences_of_fields(
    left: list[tuple[str, Any]], right: list[tuple[str, Any]], collation: Collation | None
) -> int:
    for (key_l, val_l), (key_r, val_r) in zip(left, right, strict=False):
        result = _cmp(canonical_rank(val_l), canonical_rank(val_r))
        if result:
            return result
        result = _cmp(key_l, key_r)
        if result:
            return result
        result = compare(val_l, val_r, collation)
        if result:
            return result
    return _cmp(len(left), len(right))


def values_equal(left: Any, right: Any, collation: Collation | None = None) -> bool:
    """Equality as the query language sees it (numbers by value, no other type coercion)."""
    return compare(left, right, collation) == 0


def strict_equal(left: Any, right: Any) -> bool:
    """Byte-for-byte BSON equality: types must match too (int 1 differs from 1.0).

    Updates use it to decide whether a document was modified, as mongod compares the bytes.
    """
    if type(left) is not type(right):
        # datetime subclasses and friends never reach here from the codec; a str and a
        # Symbol differ in BSON, as do int and Int64
        return False
    if isinstance(left, dict):
        return list(left.keys()) == list(right.keys()) and all(
            strict_equal(left[k], right[k]) for k in left
        )
    if isinstance(left, list):
        return len(left) == len(right) and all(strict_equal(x, y) for x, y in zip(left, right, strict=True))
    if isinstance(left, float) and math.isnan(left):
        return math.isnan(right)
    return bool(left == right)


sort_key: Callable[[Any], Any] = functools.cmp_to_key(compare)
"""A key function ordering values as mongod does: ``sorted(values, key=sort_key)``."""


def sort_key_for(collation: Collation | None) -> Callable[[Any], Any]:
    """:data:`sort_key` with strings compared under ``collation``."""
    if collation is None:
        return sort_key
    return functools.cmp_to_key(lambda left, right: compare(left, right, collation))


class _EmptyArrayKey:
    """Sorts an empty array before null, as mongod's sort does."""


_EMPTY_ARRAY = _EmptyArrayKey()


def array_sort_value(value: Any, descending: bool, collation: Collation | None = None) -> Any:
    """The value a sort on this field uses: an array sorts by its smallest element ascending
    and its largest descending; an empty array sorts before null."""
    if isinstance(value, list):
        if not value:
            return _EMPTY_ARRAY
        chooser = max if descending else min
        return chooser(value, key=sort_key_for(collation))
    return value


def _sort_compare(left: Any, right: Any, collation: Collation | None) -> int:
    left_empty, right_empty = isinstance(left, _EmptyArrayKey), isinstance(right, _EmptyArrayKey)
    if left_empty or right_empty:
        return int(right_empty) - int(left_empty)
    return compare(left, right, collation)


def compare_by_spec(
    left_values: Sequence[Any], right_values: Sequence[Any], directions: Sequence[int],
    collation: Collation | None = None,
) -> int:
    """Compare two rows of sort values field by field, honouring each field's direction."""
    for x, y, direction in zip(left_values, right_values, directions, strict=True):
        result = _sort_compare(x, y, collation)
        if result:
            return result * direction
    return 0


# Type names and numbers ($type in queries and in expressions)
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def type_name(value: Any) -> str:
    """The BSON type alias of a value, as ``$type`` reports it ("missing" for an absent field)."""
    if isinstance(value, Missing):
        return "missing"
    if value is None:
        return "null"
    if isinstance(value, Undefined):
        return "undefined"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, Int64):
        return "long"
    if isinstance(value, int):
        return "int" if _INT32_MIN <= value <= _INT32_MAX else "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, Decimal128):
        return "decimal"
    if isinstance(value, Code):
        return "javascriptWithScope" if value.scope is not None else "javascript"
    if isinstance(value, Symbol):
        return "symbol"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping | DBRef):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, bytes):
        return "binData"
    if isinstance(value, ObjectId):
        return "objectId"
    if isinstance(value, datetime.datetime | DatetimeMS):
        return "date"
    if isinstance(value, Timestamp):
        return "timestamp"
    if isinstance(value, Regex | re.Pattern):
        return "regex"
    if isinstance(value, DBPointer):
        return "dbPointer"
    if isinstance(value, MinKey):
        return "minKey"
    if isinstance(value, MaxKey):
        return "maxKey"
    return type(value).__name__


TYPE_NUMBERS: dict[str, int] = {
    "double": 1, "string": 2, "object": 3, "array": 4, "binData": 5, "undefined": 6,
    "objectId": 7, "bool": 8, "date": 9, "null": 10, "regex": 11, "dbPointer": 12,
    "javascript": 13, "symbol": 14, "javascriptWithScope": 15, "int": 16, "timestamp": 17,
    "long": 18, "decimal": 19, "minKey": -1, "maxKey": 127,
}


def type_number(value: Any) -> int:
    return TYPE_NUMBERS.get(type_name(value), 0)


# Rendering in the shape mongod puts values in error messages: { _id: 1, name: "x" }
def render(value: Any) -> str:
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{k}: {render(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list | tuple):
        return "[ " + ", ".join(render(v) for v in value) + " ]" if value else "[]"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, ObjectId):
        return f"ObjectId('{value}')"
    if isinstance(value, Int64):
        return str(int(value))
    if isinstance(value, float):
        return repr(value) if not value.is_integer() else f"{value:.1f}"
    if isinstance(value, Decimal128):
        return f'NumberDecimal("{value}")'
    if isinstance(value, datetime.datetime | DatetimeMS):
        return f"new Date({_date_ms(value)})"
    if isinstance(value, Timestamp):
        return f"Timestamp({value.time}, {value.inc})"
    if isinstance(value, Regex):
        return f"/{value.pattern}/{value.options}"
    if isinstance(value, MinKey):
        return "MinKey"
    if isinstance(value, MaxKey):
        return "MaxKey"
    if isinstance(value, bytes):
        return f"BinData({getattr(value, 'subtype', 0)}, {bytes(value).hex().upper()})"
    return str(value)


def copy_value(value: Any) -> Any:
    """A deep copy of a document value: dicts and lists are copied, the rest is immutable."""
    if isinstance(value, dict):
        return {k: copy_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_value(v) for v in value]
    return value


def unique_by_equality(values: Iterable[Any], collation: Collation | None = None) -> list[Any]:
    """The values without those equal (by :func:`values_equal`) to an earlier one."""
    out: list[Any] = []
    for value in values:
        if not any(values_equal(value, seen, collation) for seen in out):
            out.append(value)
    return out


def hashable_key(value: Any, collation: Collation | None = None) -> Any:
    """A hashable stand-in for a value such that equal values (by :func:`values_equal`, under
    ``collation`` when given) get equal keys: grouping, distinct and index lookups use it.
    Null and missing share a key.  Storage (a document's place by _id) uses the simple one."""
    rank = canonical_rank(value)
    if rank == RANK_NUMBER:
        number = numeric_value(value)
        return ("nan",) if _is_nan(number) else ("n", number)
    if rank == RANK_NULL:
        return ("null",)
    if rank == RANK_STRING and collation is not None:
        return (rank, collation.key(str(value)))
    if rank in (RANK_STRING, RANK_CODE):
        return (rank, str(value))
    if rank == RANK_CODE_WITH_SCOPE:
        return (rank, str(value), hashable_key(dict(value.scope)))
    if rank == RANK_OBJECT:
        return ("o", tuple((k, hashable_key(v, collation)) for k, v in _items(value)))
    if rank == RANK_ARRAY:
        return ("a", tuple(hashable_key(v, collation) for v in value))
    if rank == RANK_BINARY:
        return ("b", getattr(value, "subtype", 0), bytes(value))
    if rank == RANK_OBJECTID:
        return ("oid", value.binary)
    if rank == RANK_DATE:
        return ("d", _date_ms(value))
    if rank == RANK_REGEX:
        return ("r", *_regex_parts(value))
    if rank == RANK_BOOL:
        return ("bool", bool(value))
    if rank == RANK_TIMESTAMP:
        return ("t", value.time, value.inc)
    if rank in (RANK_MINKEY, RANK_MAXKEY, RANK_UNDEFINED):
        return (rank,)
    return ("x", repr(value))


def truncated_int(value: Any) -> int | None:
    """A number truncated toward zero, or None for non-numbers, NaN and infinities."""
    if not is_number(value):
        return None
    try:
        return int(numeric_value(value))
    except (ValueError, OverflowError, ArithmeticError):
        return None


def whole_number(value: Any) -> int | None:
    """The integer a number stands for exactly (2.0 -> 2), else None (2.5, NaN, "2")."""
    number = truncated_int(value)
    if number is None or numeric_value(value) != number:
        return None
    return number
