"""Arrow record batches built column by column hold what converting each document row by row
gives: for columns whose values pass to Arrow as they are, for columns that need their
converter, for a chunk where one value is out of an int column's range; a value that does not
fit names its document."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from mongo_sansio.bson import Code, Decimal128, Int64, ObjectId, Timestamp

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

import pyarrow as pa  # type: ignore[import-untyped]  # noqa: E402

from mongo_sansio.adapters.spark.arrow import arrow_schema, batches, spark_type  # noqa: E402
from mongo_sansio.adapters.spark.errors import MongoDataSourceError  # noqa: E402
from mongo_sansio.pipeline.schema import Struct, finalize, infer_schema, row_converter  # noqa: E402


def _documents() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for n in range(50):
        docs.append({
            "_id": n,
            "small": n if n != 7 else None,
            "big": Int64(n * 10**10) if n % 2 else n,
            "score": n * 1.5,
            "label": f"item {n}" if n % 9 else Code("f()"),  # a Code needs the converter
            "oid": ObjectId(),
            "when": datetime.datetime(2024, 1, 1) + datetime.timedelta(minutes=n),
            "flag": n % 2 == 0,
            "amount": Decimal128(f"{n}.25"),
            "ts": Timestamp(1_700_000_000, n),
            "nested": {"depth": {"n": n, "tags": [str(n)]}},
            # plain fields only: whole chunks go to Arrow as dicts, unless one value needs
            # its converter (a number in a field that is mostly text, a Code)
            "address": None if n == 3 else {
                "city": n if n == 40 else Code("g()") if n == 41 else f"city {n}",
                "since": datetime.datetime(2020, 1, 1) + datetime.timedelta(days=n),
                "n": n,
                **({"extra": n} if n % 5 == 0 else {}),
            },
        })
    docs[10]["address"].pop("since")  # a missing field is null
    return docs


def _row_by_row(docs: list[dict[str, Any]], schema: Any) -> pa.Table:
    tree = finalize(infer_schema(docs))
    assert isinstance(tree, Struct)
    convert = row_converter(tree)
    rows = [convert(document) for document in docs]
    target = arrow_schema(schema)
    columns = [pa.array([row[i] for row in rows], type=field.type) for i, field in enumerate(target)]
    return pa.Table.from_batches([pa.RecordBatch.from_arrays(columns, schema=target)])


def test_column_by_column_equals_row_by_row() -> None:
    docs = _documents()
    schema = spark_type(finalize(infer_schema(docs)))
    built = pa.Table.from_batches(list(batches(docs, schema, rows_per_batch=16)))
    assert built.equals(_row_by_row(docs, schema))
    assert built.schema.field("small").type == pa.int32()
    assert built.column("address")[3].as_py() is None
    assert built.column("address")[10].as_py()["since"] is None
    assert built.column("address")[40].as_py()["city"] == "40"
    assert built.column("address")[41].as_py()["city"] == "g()"  # (Code: its text)


def test_an_out_of_range_value_is_named() -> None:
    docs = _documents()
    schema = spark_type(finalize(infer_schema(docs)))
    docs[20]["small"] = 2**40  # int in the sample, bigint now: does not fit
    with pytest.raises(MongoDataSourceError, match=r"document 20: .*small"):
        list(batches(docs, schema, rows_per_batch=16))


def test_a_value_of_another_type_is_named() -> None:
    docs = _documents()
    schema = spark_type(finalize(infer_schema(docs)))
    docs[33]["when"] = "yesterday"
    with pytest.raises(MongoDataSourceError, match=r"document 33: .*when"):
        list(batches(docs, schema, rows_per_batch=16))
