"""Columns and Arrow record batches: the pure schema's types as Spark and Arrow types, and
documents turned into ``pyarrow.RecordBatch`` column by column (no Row objects on the way).

The converters come from :mod:`mongo_sansio.pipeline.schema`; this module only knows which
Spark type each column type is and how to hand finished columns to Arrow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from mongo_sansio.pipeline.parse_modes import (
    CORRUPT_RECORD,
    ParseMode,
    Tally,
    tolerant_row_converter,
)
from mongo_sansio.pipeline.schema import (
    Array,
    ColumnType,
    Convert,
    Field,
    Kind,
    SchemaMismatch,
    Struct,
    converter,
    passthrough_types,
    row_converter,
)

from .errors import MongoDataSourceError

__all__ = ["batches", "column_type", "record_batch", "spark_type"]

BATCH_ROWS = 8192

_ATOMIC: dict[Kind, DataType] = {
    Kind.NULL: StringType(),
    Kind.BOOLEAN: BooleanType(),
    Kind.INT: IntegerType(),
    Kind.LONG: LongType(),
    Kind.DOUBLE: DoubleType(),
    Kind.DECIMAL: StringType(),
    Kind.STRING: StringType(),
    Kind.OBJECT_ID: StringType(),
    Kind.JSON: StringType(),
    Kind.DATE: TimestampType(),
    Kind.BINARY: BinaryType(),
}


def spark_type(column: ColumnType) -> DataType:
    """The Spark type of a column type (the table in :mod:`mongo_sansio.pipeline.schema`)."""
    if isinstance(column, Struct):
        return StructType([StructField(f.name, spark_type(f.type), True) for f in column.fields])
    if isinstance(column, Array):
        return ArrayType(spark_type(column.element), True)
    if column is Kind.BSON_TIMESTAMP:
        return StructType([StructField("t", LongType(), True), StructField("i", LongType(), True)])
    return _ATOMIC[column]


def column_type(data_type: DataType) -> ColumnType:
    """The column type a Spark type stands for (a user's schema, or ours coming back): a
    string column renders whatever it meets (Kind.JSON)."""
    if isinstance(data_type, StructType):
        return Struct(tuple(Field(f.name, column_type(f.dataType)) for f in data_type.fields))
    if isinstance(data_type, ArrayType):
        return Array(column_type(data_type.elementType))
    for kind, spark in _ATOMIC.items():
        if kind not in (Kind.NULL, Kind.DECIMAL, Kind.STRING, Kind.OBJECT_ID) and data_type == spark:
            return kind
    if isinstance(data_type, StringType):
        return Kind.JSON
    raise MongoDataSourceError(
        f"the data source cannot fill a {data_type.simpleString()} column; use string, int, "
        "bigint, double, boolean, timestamp, binary, struct or array"
    )


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects for ``schema`` (it checks batches against it)."""
    return to_arrow_schema(schema, timezone="UTC")


def record_batch(columns: Sequence[list[Any]], schema: pa.Schema) -> pa.RecordBatch:
    arrays = [pa.array(values, type=field.type) for values, field in zip(columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def batches(
    documents: Iterable[Mapping[str, Any]],
    schema: StructType,
    *,
    rows_per_batch: int = BATCH_ROWS,
    describe: Callable[[Mapping[str, Any]], str] | None = None,
    mode: ParseMode = ParseMode.FAILFAST,
    corrupt_column: str = CORRUPT_RECORD,
    tally: Tally | None = None,
) -> Iterator[pa.RecordBatch]:
    """Record batches of ``documents`` under ``schema``; a value that does not fit raises
    :class:`MongoDataSourceError` naming the document's ``_id`` and the field (``mode``
    FAILFAST), or the chunk is converted document by document under ``mode``
    (:mod:`mongo_sansio.pipeline.parse_modes`), counting what it dropped or marked in ``tally``.

    Built column by column: a column whose values are all of types Arrow takes as they are
    (:func:`~mongo_sansio.pipeline.schema.passthrough_types`; for a document column, plain
    dicts of such values) goes to Arrow untouched, the others through their converters; only when a value does not fit are the chunk's rows
    walked one by one, to name the document."""
    tree = column_type(schema)
    assert isinstance(tree, Struct)
    target = arrow_schema(schema)
    columns = [
        (item.name, converter(item.type), passthrough_types(item.type), _struct_passthrough(item.type),
         field.type)
        for item, field in zip(tree.fields, target, strict=True)
    ]
    tolerant = (
        None if mode is ParseMode.FAILFAST
        else tolerant_row_converter(tree, mode, corrupt_column, tally)
    )
    chunk: list[Mapping[str, Any]] = []
    for document in documents:
        chunk.append(document)
        if len(chunk) == rows_per_batch:
            yield _chunk_batch(chunk, columns, tree, target, describe, tolerant)
            chunk = []
    if chunk:
        yield _chunk_batch(chunk, columns, tree, target, describe, tolerant)


_StructFields = tuple[tuple[str, frozenset[type]], ...]
_Column = tuple[str, Convert, frozenset[type], _StructFields | None, Any]


def _struct_passthrough(column: ColumnType) -> _StructFields | None:
    """For a document column whose fields all take their values unconverted (strings,
    numbers, dates...: no documents or arrays inside), each field's name and those types;
    None for any other column."""
    if not isinstance(column, Struct) or not column.fields:
        return None
    fields = tuple((item.name, passthrough_types(item.type)) for item in column.fields)
    return fields if all(types for _name, types in fields) else None


def _plain_structs(values: list[Any], fields: _StructFields) -> bool:
    """Whether every value is null or a plain dict whose fields Arrow takes as they are (it
    reads a dict's fields by name and leaves other keys out, as the converter does)."""
    for value in values:
        if value is None:
            continue
        if type(value) is not dict:
            return False
        get = value.get
        for name, types in fields:
            if type(get(name)) not in types:
                return False
    return True


def _chunk_batch(
    chunk: list[Mapping[str, Any]],
    columns: list[_Column],
    tree: Struct,
    target: pa.Schema,
    describe: Callable[[Mapping[str, Any]], str] | None,
    tolerant: Callable[[Mapping[str, Any]], list[Any] | None] | None = None,
) -> pa.RecordBatch:
    arrays = []
    try:
        for name, convert, passthrough, struct_fields, arrow_type in columns:
            values = [document.get(name) for document in chunk]
            if (passthrough and passthrough.issuperset(map(type, values))) or (
                struct_fields is not None and _plain_structs(values, struct_fields)
            ):
                try:
                    arrays.append(pa.array(values, type=arrow_type))
                    continue
                except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                    pass  # (out of range: the converter says which value)
            arrays.append(pa.array([convert(value, name) for value in values], type=arrow_type))
    except SchemaMismatch:
        if tolerant is None:
            _name_the_misfit(chunk, tree, describe)
            raise
        rows = [row for row in map(tolerant, chunk) if row is not None]
        return record_batch([list(column) for column in zip(*rows, strict=True)] if rows
                            else [[] for _ in target], target)
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def _name_the_misfit(
    chunk: list[Mapping[str, Any]], tree: Struct, describe: Callable[[Mapping[str, Any]], str] | None
) -> None:
    """Raise the error that names the first document of ``chunk`` with a value that does not
    fit its column."""
    convert = row_converter(tree)
    for document in chunk:
        try:
            convert(document)
        except SchemaMismatch as exc:
            name = describe(document) if describe else repr(document.get("_id"))
            raise MongoDataSourceError(f"document {name}: {exc}") from None
