"""Schema inference for batch reads: sampled documents in, a column type tree out.

Inputs: documents (decoded BSON) sampled from the collection, and optional hints.  Outputs: a
:class:`Struct` of typed fields (:func:`infer_schema`), its Spark spelling
(:func:`spark_type_name`, turned into pyspark types by the adapter), and per column a converter
from BSON values to the plain Python values Arrow builds columns from (:func:`converter`).

BSON types and their columns (the table docs/spark.md repeats):

================================ ============================== ==============================
BSON                             kind                           Spark column
================================ ============================== ==============================
double                           DOUBLE                         double
32-bit integer                   INT                            int
64-bit integer                   LONG                           bigint
Decimal128                       DECIMAL                        string (its exact text)
string, symbol, JavaScript code  STRING                         string
ObjectId                         OBJECT_ID                      string (24 hex digits)
boolean                          BOOLEAN                        boolean
date                             DATE                           timestamp (UTC)
binary (any subtype)             BINARY                         binary (the bytes)
timestamp                        BSON_TIMESTAMP                 struct<t: bigint, i: bigint>
document                         Struct                         struct (fields widened)
array                            Array                          array (elements widened)
null, undefined                  NULL                           (the other samples' type)
regex, DBPointer, MinKey,        JSON                           string (relaxed Extended JSON)
MaxKey, code with scope
================================ ============================== ==============================

Widening, when a field holds different types across the sample (:func:`widen`):

1. null (or a missing field) takes the other type; a field that is only ever null is a string.
2. int and bigint give bigint; int or bigint with double give double; Decimal128 with any
   number stays DECIMAL (a string of the exact value).
3. Two documents give a document with the union of their fields, each widened; two arrays an
   array of the widened element type (empty arrays say nothing about their elements).
4. Anything else (a string and a number, a document and an array, ...) gives string; such a
   column holds strings as they are, ObjectIds as hex, Decimal128 as text and every other value
   as compact relaxed Extended JSON.

Fields are ordered ``_id`` first, then by name, so a schema does not depend on sampling order.
A value that does not fit its column (a document seen after sampling with a type the sample
never showed) raises :class:`SchemaMismatch` naming the field; a field the schema does not
have is left out (hints or a larger ``sampleSize`` bring it in).
"""

from __future__ import annotations

import datetime
import enum
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from mongo_sansio.bson import (
    Code,
    Decimal128,
    Int64,
    MaxKey,
    MinKey,
    Timestamp,
    Undefined,
)
from mongo_sansio.bson.objectid import ObjectId
from mongo_sansio.bson.types import DatetimeMS, DBPointer, DBRef, Regex, Symbol
from mongo_sansio.pipeline.jsontext import relaxed_json

__all__ = [
    "Array",
    "Field",
    "Kind",
    "SchemaMismatch",
    "Struct",
    "apply_hints",
    "converter",
    "finalize",
    "infer_schema",
    "kind_of",
    "parse_hints",
    "passthrough_types",
    "render",
    "row_converter",
    "spark_type_name",
    "widen",
]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class Kind(enum.Enum):
    NULL = "null"
    BOOLEAN = "boolean"
    INT = "int"
    LONG = "bigint"
    DOUBLE = "double"
    DECIMAL = "decimal"
    STRING = "string"
    OBJECT_ID = "objectId"
    DATE = "timestamp"
    BINARY = "binary"
    BSON_TIMESTAMP = "bsonTimestamp"
    JSON = "json"


@attrs.frozen
class Field:
    name: str
    type: ColumnType


@attrs.frozen
class Struct:
    fields: tuple[Field, ...] = ()

    def field(self, name: str) -> Field | None:
        for item in self.fields:
            if item.name == name:
                return item
        return None

    @property
    def names(self) -> list[str]:
        return [item.name for item in self.fields]


@attrs.frozen
class Array:
    element: ColumnType


ColumnType = Kind | Struct | Array

_NUMBERS = {Kind.INT: 0, Kind.LONG: 1, Kind.DOUBLE: 2, Kind.DECIMAL: 3}
_STRINGISH = {Kind.STRING, Kind.OBJECT_ID, Kind.DECIMAL, Kind.JSON}


class SchemaMismatch(ValueError):
    """A value that does not fit its column; ``path`` names the field (dotted)."""

    def __init__(self, path: str, value: Any, expected: ColumnType) -> None:
        self.path = path
        self.expected = expected
        self.found = kind_name(value)
        super().__init__(
            f"field {path!r} holds a {self.found} but the schema says {spark_type_name(expected)}; "
            "pass a 'schema' hint for it or sample more documents ('sampleSize')"
        )


def kind_name(value: Any) -> str:
    kind = kind_of(value)
    return kind.value if isinstance(kind, Kind) else type(kind).__name__.lower()


def kind_of(value: Any) -> ColumnType:
    """The column type one value suggests."""
    if value is None or isinstance(value, Undefined):
        return Kind.NULL
    if isinstance(value, bool):
        return Kind.BOOLEAN
    if isinstance(value, Int64):
        return Kind.LONG
    if isinstance(value, int):
        return Kind.INT if _INT32_MIN <= value <= _INT32_MAX else Kind.LONG
    if isinstance(value, float):
        return Kind.DOUBLE
    if isinstance(value, Decimal128):
        return Kind.DECIMAL
    if isinstance(value, Code):
        return Kind.STRING if value.scope is None else Kind.JSON
    if isinstance(value, str):
        return Kind.STRING
    if isinstance(value, datetime.datetime | DatetimeMS):
        return Kind.DATE
    if isinstance(value, bytes):
        return Kind.BINARY
    if isinstance(value, Timestamp):
        return Kind.BSON_TIMESTAMP
    if isinstance(value, DBRef):
        return infer_schema([value.as_doc()], id_first=False)
    if isinstance(value, Mapping):
        return infer_schema([value], id_first=False)
    if isinstance(value, list | tuple):
        element: ColumnType = Kind.NULL
        for item in value:
            element = widen(element, kind_of(item))
        return Array(element)
    # (last of the classes: ObjectId's isinstance asks its metaclass for any other value)
    if isinstance(value, ObjectId):
        return Kind.OBJECT_ID
    return Kind.JSON  # regex, DBPointer, MinKey, MaxKey, code with scope


def widen(left: ColumnType, right: ColumnType) -> ColumnType:
    """The narrowest column type both fit (the rules in the module docstring)."""
    if left == right:
        return left
    if left is Kind.NULL:
        return right
    if right is Kind.NULL:
        return left
    if isinstance(left, Struct) and isinstance(right, Struct):
        return _merge(left, right)
    if isinstance(left, Array) and isinstance(right, Array):
        return Array(widen(left.element, right.element))
    if left in _NUMBERS and right in _NUMBERS:
        return max(left, right, key=lambda kind: _NUMBERS[kind])
    return Kind.JSON  # a string column of rendered values (never a pushed-down filter's target)


def _merge(left: Struct, right: Struct) -> Struct:
    types: dict[str, ColumnType] = {item.name: item.type for item in left.fields}
    for item in right.fields:
        types[item.name] = widen(types.get(item.name, Kind.NULL), item.type)
    return _ordered(types, id_first=False)


def _ordered(types: Mapping[str, ColumnType], *, id_first: bool) -> Struct:
    names = sorted(types)
    if id_first and "_id" in types:
        names.remove("_id")
        names.insert(0, "_id")
    return Struct(tuple(Field(name, types[name]) for name in names))


def infer_schema(documents: Iterable[Mapping[str, Any]], *, id_first: bool = True) -> Struct:
    """The widened schema of ``documents``; fields only ever null stay NULL here and become
    strings in :func:`spark_type_name`."""
    types: dict[str, ColumnType] = {}
    for document in documents:
        for name, value in document.items():
            types[name] = widen(types.get(name, Kind.NULL), kind_of(value))
    return _ordered(types, id_first=id_first)


_HINT_TYPES = {
    "string": Kind.STRING, "int": Kind.INT, "integer": Kind.INT, "long": Kind.LONG,
    "bigint": Kind.LONG, "double": Kind.DOUBLE, "boolean": Kind.BOOLEAN, "timestamp": Kind.DATE,
    "binary": Kind.BINARY,
}
_HINT = re.compile(r"^\s*(?:`([^`]+)`|(\S+))\s+(\w+)\s*$")


def parse_hints(text: str | None) -> dict[str, Kind]:
    """The ``schema`` option: ``"name type, other type"`` with types string, int, bigint
    (long), double, boolean, timestamp or binary, for top-level fields."""
    if not text:
        return {}
    hints: dict[str, Kind] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        match = _HINT.match(part)
        if not match or match.group(3).lower() not in _HINT_TYPES:
            raise ValueError(
                f"schema hint {part.strip()!r}: expected 'name type' with type one of "
                f"{', '.join(sorted(_HINT_TYPES))}"
            )
        hints[match.group(1) or match.group(2)] = _HINT_TYPES[match.group(3).lower()]
    return hints


def finalize(column: ColumnType) -> ColumnType:
    """The schema as columns: a document field only ever seen empty becomes a string of
    Extended JSON (a struct needs at least one field)."""
    if isinstance(column, Struct):
        if not column.fields:
            return Kind.JSON
        return Struct(tuple(Field(item.name, finalize(item.type)) for item in column.fields))
    if isinstance(column, Array):
        return Array(finalize(column.element))
    return column


def apply_hints(schema: Struct, hints: Mapping[str, Kind]) -> Struct:
    types: dict[str, ColumnType] = {item.name: item.type for item in schema.fields}
    types.update(hints)
    return _ordered(types, id_first=True)


def spark_type_name(column: ColumnType) -> str:
    """The column's Spark DDL spelling, e.g. ``struct<a: bigint, b: array<string>>``."""
    if isinstance(column, Struct):
        inner = ", ".join(f"`{item.name}`: {spark_type_name(item.type)}" for item in column.fields)
        return f"struct<{inner}>"
    if isinstance(column, Array):
        return f"array<{spark_type_name(column.element)}>"
    if column is Kind.BSON_TIMESTAMP:
        return "struct<t: bigint, i: bigint>"
    if column in (Kind.NULL, Kind.DECIMAL, Kind.OBJECT_ID, Kind.JSON):
        return "string"
    return str(column.value)


def render(value: Any) -> str:
    """A value in a string column: strings as they are, ObjectIds as hex, Decimal128 as its
    text, anything else as compact relaxed Extended JSON."""
    if isinstance(value, str) and not isinstance(value, Code):
        return str(value)
    if isinstance(value, ObjectId | Decimal128):
        return str(value)
    if isinstance(value, Code) and value.scope is None:
        return str(value)
    return relaxed_json(value)


Convert = Callable[[Any, str], Any]


def _is_null(value: Any) -> bool:
    return value is None or isinstance(value, Undefined)


def converter(column: ColumnType) -> Convert:
    """A function ``(value, path) -> Python value`` for ``column``: None for null, else the
    value Arrow builds the column from (int, float, str, bool, bytes, datetime, dict, list);
    :class:`SchemaMismatch` when it does not fit."""
    if isinstance(column, Struct):
        return _struct_converter(column)
    if isinstance(column, Array):
        element = converter(column.element)

        def array(value: Any, path: str) -> Any:
            if _is_null(value):
                return None
            if not isinstance(value, list | tuple):
                raise SchemaMismatch(path, value, column)
            return [element(item, f"{path}.{index}") for index, item in enumerate(value)]

        return array
    return _ATOMIC[column](column)


def _struct_converter(column: Struct) -> Convert:
    fields = [(item.name, converter(item.type)) for item in column.fields]

    bson_timestamp = {name for name, _convert in fields} == {"t", "i"}

    def struct(value: Any, path: str) -> Any:
        if _is_null(value):
            return None
        if bson_timestamp and isinstance(value, Timestamp):
            value = {"t": value.time, "i": value.inc}
        if isinstance(value, DBRef):
            value = value.as_doc()
        if not isinstance(value, Mapping):
            raise SchemaMismatch(path, value, column)
        return {name: convert(value.get(name), f"{path}.{name}") for name, convert in fields}

    return struct


def row_converter(schema: Struct) -> Callable[[Mapping[str, Any]], list[Any]]:
    """Top-level: a document to its column values, in the schema's order."""
    fields = [(item.name, converter(item.type)) for item in schema.fields]

    def row(document: Mapping[str, Any]) -> list[Any]:
        return [convert(document.get(name), name) for name, convert in fields]

    return row


def _checked(column: Kind, accept: Callable[[Any], Any]) -> Convert:
    def convert(value: Any, path: str) -> Any:
        if _is_null(value):
            return None
        result = accept(value)
        if result is _REJECT:
            raise SchemaMismatch(path, value, column)
        return result

    return convert


_REJECT = object()


def _boolean(value: Any) -> Any:
    return value if isinstance(value, bool) else _REJECT


def _integer(low: int, high: int) -> Callable[[Any], Any]:
    def accept(value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
            return int(value)
        return _REJECT

    return accept


def _double(value: Any) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return _REJECT


def _date(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
    if isinstance(value, DatetimeMS):
        try:
            return value.as_datetime(datetime.UTC)
        except (ValueError, OverflowError):
            return _REJECT  # outside the years 1-9999 a timestamp column can hold
    return _REJECT


def _binary(value: Any) -> Any:
    return bytes(value) if isinstance(value, bytes) else _REJECT


def _bson_timestamp(value: Any) -> Any:
    return {"t": value.time, "i": value.inc} if isinstance(value, Timestamp) else _REJECT


def _string(value: Any) -> Any:
    return render(value)


_ATOMIC: dict[Kind, Callable[[Kind], Convert]] = {
    Kind.NULL: lambda kind: _checked(kind, _string),
    Kind.BOOLEAN: lambda kind: _checked(kind, _boolean),
    Kind.INT: lambda kind: _checked(kind, _integer(_INT32_MIN, _INT32_MAX)),
    Kind.LONG: lambda kind: _checked(kind, _integer(_INT64_MIN, _INT64_MAX)),
    Kind.DOUBLE: lambda kind: _checked(kind, _double),
    Kind.DECIMAL: lambda kind: _checked(kind, _string),
    Kind.STRING: lambda kind: _checked(kind, _string),
    Kind.OBJECT_ID: lambda kind: _checked(kind, _string),
    Kind.JSON: lambda kind: _checked(kind, _string),
    Kind.DATE: lambda kind: _checked(kind, _date),
    Kind.BINARY: lambda kind: _checked(kind, _binary),
    Kind.BSON_TIMESTAMP: lambda kind: _checked(kind, _bson_timestamp),
}


# Per column kind, the exact Python types (besides None) whose values the converter returns
# unchanged and Arrow builds the column from as they are: a column holding only these needs no
# conversion.  Ranges are Arrow's to check (int32, int64 overflow); any refusal sends the
# column through its converter, which names the value that does not fit.
_PASSTHROUGH: dict[Kind, frozenset[type]] = {
    Kind.BOOLEAN: frozenset({bool, type(None)}),
    Kind.INT: frozenset({int, type(None)}),
    Kind.LONG: frozenset({int, Int64, type(None)}),
    Kind.DOUBLE: frozenset({float, type(None)}),
    Kind.STRING: frozenset({str, type(None)}),
    Kind.JSON: frozenset({str, type(None)}),
    Kind.NULL: frozenset({str, type(None)}),
    Kind.DATE: frozenset({datetime.datetime, type(None)}),
}


def passthrough_types(column: ColumnType) -> frozenset[type]:
    """The exact types of values a ``column`` takes unconverted (see ``_PASSTHROUGH``); empty
    for documents and arrays, whose values always go through :func:`converter`."""
    if isinstance(column, Kind):
        return _PASSTHROUGH.get(column, frozenset())
    return frozenset()


def sample_types() -> Sequence[Any]:
    """One value of every BSON type (for tests and the documentation's table)."""
    return [
        1.5, "text", {"a": 1}, [1, 2], b"\x01", Undefined(), ObjectId("0" * 24), True,
        datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC), None,
        Regex("^a", "i"), DBPointer("db.c", ObjectId("1" * 24)), Code("f()"), Symbol("s"),
        Code("g()", {"x": 1}), 7, Timestamp(1, 2), Int64(8), Decimal128("1.10"), MinKey(),
        MaxKey(),
    ]
