"""Batch and streaming writes: each task writes its rows in ``maxBatchSize`` bulk writes.

``operationType`` says how a row is written: ``replace`` (the default) replaces the document
whose ``idFields`` equal the row's, inserting it when there is none; ``update`` sets the row's
other fields on that document (upserting likewise); ``insert`` inserts, and a duplicate key on
an insert is taken as "written by an earlier attempt" and passed over.  Replace and update are
keyed by the row itself, so a retried task, a replayed micro-batch or a rerun of the job writes
nothing twice; insert is idempotent only when rows carry their ``_id``.

A row the server refuses raises :class:`MongoRowWriteError` with the row (an ordered write
stops there; an unordered one writes the rest and reports the first refusal and how many).
Clients are opened in the task and closed when it ends.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from mongo_sansio.bson import Decimal128
from mongo_sansio.errors import BulkWriteError
from mongo_sansio.ops.models import InsertOne, ReplaceOne, UpdateOne

from .batch import open_collection
from .errors import MongoDataSourceError, MongoRowWriteError
from .options import SourceOptions

__all__ = ["MongoStreamWriter", "MongoWriter", "WriteSummary", "write_rows"]

_DUPLICATE_KEY = 11000


@attrs.frozen
class WriteSummary(WriterCommitMessage):
    rows: int = 0
    inserted: int = 0
    upserted: int = 0
    matched: int = 0
    modified: int = 0
    duplicates_passed: int = 0


def _bson_value(value: Any) -> Any:
    """What Arrow's Python values are in BSON terms (decimals, dates)."""
    if isinstance(value, dict):
        return {key: _bson_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_bson_value(item) for item in value]
    if isinstance(value, decimal.Decimal):
        return Decimal128(value)
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
    if isinstance(value, datetime.date):
        return datetime.datetime(value.year, value.month, value.day, tzinfo=datetime.UTC)
    return value


def _model(options: SourceOptions, row: dict[str, Any], index: int) -> Any:
    if options.operation_type == "insert":
        return InsertOne(row)
    missing = [name for name in options.id_fields if name not in row or row[name] is None]
    if missing:
        raise MongoRowWriteError(index, row, None, f"the row has no value for idFields {missing}")
    key = {name: row[name] for name in options.id_fields}
    if options.operation_type == "update":
        fields = {name: value for name, value in row.items() if name not in options.id_fields}
        return UpdateOne(key, {"$set": fields}, upsert=True)
    if "_id" in row and "_id" not in key:
        # A replacement may not change _id: leave it to the matched document (or the upsert).
        row = {name: value for name, value in row.items() if name != "_id"}
    return ReplaceOne(key, row, upsert=True)


def _id_duplicate(error: Mapping[str, Any]) -> bool:
    """A duplicate ``_id`` (the row is already there), not another unique index's refusal."""
    if error.get("code") != _DUPLICATE_KEY:
        return False
    pattern = error.get("keyPattern")
    if isinstance(pattern, Mapping):
        return list(pattern) == ["_id"]
    return "index: _id_ " in str(error.get("errmsg", ""))


def _flush(collection: Any, options: SourceOptions, chunk: list[dict[str, Any]], first: int, summary: dict[str, int]) -> None:
    models = [_model(options, row, first + offset) for offset, row in enumerate(chunk)]
    ordered = options.ordered
    try:
        result = collection.bulk_write(models, ordered=ordered, **options.command_options())
    except BulkWriteError as error:
        details = error.details
        refused = [e for e in error.write_errors if not (options.operation_type == "insert" and _id_duplicate(e))]
        summary["duplicates_passed"] += len(error.write_errors) - len(refused)
        _count(summary, details)
        if refused:
            first_error = refused[0]
            index = int(first_error.get("index", 0))
            raise MongoRowWriteError(
                first + index, chunk[index], first_error.get("code"), str(first_error.get("errmsg")),
                failed=len(refused),
            ) from None
        if ordered and error.write_errors:
            # An ordered insert stopped at a duplicate (an earlier attempt's row): go on after it.
            stop = int(error.write_errors[-1].get("index", 0)) + 1
            if stop < len(chunk):
                _flush(collection, options, chunk[stop:], first + stop, summary)
        if error.write_concern_errors:
            raise MongoDataSourceError(f"write concern error: {error.write_concern_errors[0]}") from None
        return
    _count(summary, {
        "nInserted": result.inserted_count, "nUpserted": result.upserted_count,
        "nMatched": result.matched_count, "nModified": result.modified_count,
    })


def _count(summary: dict[str, int], details: Mapping[str, Any]) -> None:
    summary["inserted"] += int(details.get("nInserted", 0) or 0)
    summary["upserted"] += int(details.get("nUpserted", 0) or 0)
    summary["matched"] += int(details.get("nMatched", 0) or 0)
    summary["modified"] += int(details.get("nModified", 0) or 0)


def write_rows(options: SourceOptions, batches: Iterator[pa.RecordBatch]) -> WriteSummary:
    """Write the task's rows in ``maxBatchSize`` chunks; the counts for the commit message."""
    summary = {"rows": 0, "inserted": 0, "upserted": 0, "matched": 0, "modified": 0, "duplicates_passed": 0}
    chunk: list[dict[str, Any]] = []
    first = 0
    with open_collection(options) as collection:
        for batch in batches:
            for row in batch.to_pylist():
                chunk.append({name: _bson_value(value) for name, value in row.items()})
                if len(chunk) == options.max_batch_size:
                    _flush(collection, options, chunk, first, summary)
                    first += len(chunk)
                    chunk = []
        if chunk:
            _flush(collection, options, chunk, first, summary)
            first += len(chunk)
    summary["rows"] = first
    return WriteSummary(**summary)


class MongoWriter(DataSourceArrowWriter):
    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return write_rows(self.options, iterator)


class MongoStreamWriter(DataSourceStreamArrowWriter):
    """A micro-batch replayed after a failure writes the same rows again: keyed replaces and
    updates make that a no-op, so the sink is exactly-once with the default operationType."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return write_rows(self.options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass  # each task's writes are already durable (acknowledged by the write concern)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass  # nothing to undo: a replay rewrites the same keys
