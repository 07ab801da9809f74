"""Batch reads: schema inference, ``_id``-range or chunk-range partitions and Arrow output.

Runs in Spark's Python workers: :func:`infer` and :meth:`MongoBatchReader.partitions` on the
planning side, :meth:`MongoBatchReader.read` on the executors.  Nothing holding a socket is
pickled: each process makes its clients from the options' URI (:mod:`.clients`; a worker keeps
its client between tasks).

With ``filterPushdown=true`` (and Spark's ``spark.sql.python.filterPushdown.enabled``), filters become a ``$match``
on the columns whose values compare on the server as they do in Spark (numbers, booleans,
timestamps, strings that were strings in every sampled document); the rest stay with Spark.

With ``partitioner=shardChunks`` a sharded collection is read one partition per chunk
(:mod:`mongo_sansio.pipeline.chunks`, from ``config.collections`` and ``config.chunks`` read
through mongos); an unsharded one falls back to the ``_id`` sampling, with a warning on the
``mongo_sansio.spark`` logger.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import (
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.types import StructType

from mongo_sansio.bson import extjson
from mongo_sansio.pipeline.chunks import ChunkMapError, chunk_partitions, is_sharded
from mongo_sansio.pipeline.parse_modes import ParseMode
from mongo_sansio.pipeline.partitions import choose_boundaries, range_filters
from mongo_sansio.pipeline.schema import (
    ColumnType,
    Field,
    Kind,
    Struct,
    apply_hints,
    finalize,
    infer_schema,
)

from .arrow import batches, spark_type
from .clients import open_client, open_collection
from .errors import MongoDataSourceError
from .gc_passes import fewer_gc_passes
from .options import SourceOptions

__all__ = [
    "MongoBatchReader",
    "MongoPushdownReader",
    "infer",
    "open_client",
    "open_collection",
    "plan_chunk_partitions",
    "plan_partitions",
]

_log = logging.getLogger("mongo_sansio.spark")

# Sampled _id values per wanted partition (more samples, evener partitions).
SAMPLES_PER_PARTITION = 32
_PUSHABLE = {Kind.INT, Kind.LONG, Kind.DOUBLE, Kind.BOOLEAN, Kind.STRING, Kind.DATE}


def infer(options: SourceOptions) -> tuple[StructType, Struct]:
    """The schema of ``sampleSize`` sampled documents run through the user's pipeline."""
    with open_collection(options) as collection:
        sample = list(
            collection.aggregate(
                [{"$sample": {"size": options.sample_size}}, *options.user_pipeline()],
                **options.read_options(),
            )
        )
    tree = infer_schema(sample)
    if options.schema_hints:
        tree = apply_hints(tree, dict(options.schema_hints))
    column = finalize(tree)
    if not isinstance(column, Struct) or not column.fields:
        column = Struct()
    column = with_read_columns(column, options)
    return _spark_schema(column), column


def with_read_columns(tree: Struct, options: SourceOptions) -> Struct:
    """The inferred columns and those the options add: the corrupt-record column (PERMISSIVE)
    and, for typed change events (``publishFullDocumentOnly``), ``operationType``."""
    extra = []
    if options.mode is ParseMode.PERMISSIVE:
        extra.append(options.corrupt_column)
    if options.publish_full_document_only:
        extra.append("operationType")
    fields = tree.fields + tuple(
        Field(name, Kind.JSON) for name in extra if tree.field(name) is None
    )
    return Struct(fields)


def _spark_schema(tree: Struct) -> StructType:
    schema = spark_type(tree)
    assert isinstance(schema, StructType)
    return schema


def plan_partitions(options: SourceOptions) -> list[dict[str, Any]]:
    """One filter per partition, covering the collection with no gaps or overlaps: a chunk's
    shard-key range each (``partitioner=shardChunks`` on a sharded collection), else ``_id``
    ranges from a sample."""
    if options.partitioner == "shardChunks":
        chunks = plan_chunk_partitions(options)
        if chunks is not None:
            return chunks
        _log.warning(
            "partitioner shardChunks: %s is not a sharded collection (no sharded "
            "config.collections entry); reading it with the default _id sampling partitioner (%d partitions) instead",
            options.namespace, options.partitions,
        )
    if options.partitions == 1:
        return [{}]
    with open_collection(options) as collection:
        stats = list(collection.aggregate([{"$collStats": {"count": {}}}], **options.command_options()))
        count = int(stats[0].get("count", 0)) if stats else 0
        if count < options.partitions * 2:
            return [{}]
        size = min(count, options.partitions * SAMPLES_PER_PARTITION)
        sample = [
            document["_id"]
            for document in collection.aggregate(
                [{"$sample": {"size": size}}, {"$project": {"_id": 1}}, {"$sort": {"_id": 1}}],
                **options.read_options(),
            )
        ]
    return range_filters(choose_boundaries(sample, options.partitions, count))


# Reads of the chunk map before giving up on one that keeps changing under the read.
CHUNK_MAP_READS = 3


def plan_chunk_partitions(options: SourceOptions) -> list[dict[str, Any]] | None:
    """One shard-key range filter per chunk of the sharded collection, in key order; None when
    the collection is not sharded.  The chunk map is read again if it does not tile the key
    space (a split or migration committed between the reads)."""
    options.single_collection("batch reads")
    with open_client(options) as client:
        config = client["config"]
        for attempt in range(CHUNK_MAP_READS):
            entry = config["collections"].find_one({"_id": options.namespace}, **options.command_options())
            if not is_sharded(entry):
                return None
            # (chunks name their collection by uuid since MongoDB 5.0, by namespace before)
            which = {"uuid": entry["uuid"]} if "uuid" in entry else {"ns": options.namespace}
            chunks = list(config["chunks"].find(which, **options.command_options()))
            try:
                return [partition.query for partition in chunk_partitions(entry, chunks)]
            except ChunkMapError as error:
                if attempt + 1 == CHUNK_MAP_READS:
                    raise MongoDataSourceError(
                        f"partitioner shardChunks: the chunk map of {options.namespace} read "
                        f"through {options.uri!r} does not cover the shard key once: {error}"
                    ) from None
    return None  # (not reached: the last attempt returns or raises)


class MongoPartition(InputPartition):
    """One ``_id`` or chunk range (canonical Extended JSON of its ``$match`` filter)."""

    def __init__(self, index: int, filter_json: str) -> None:
        super().__init__(index)
        self.index = index
        self.filter_json = filter_json


def _path_kind(tree: Struct | None, path: Sequence[str]) -> ColumnType | None:
    column: ColumnType | None = tree
    for name in path:
        if not isinstance(column, Struct):
            return None
        found = column.field(name)
        column = found.type if found is not None else None
    return column


def _to_match(item: Filter, tree: Struct | None) -> dict[str, Any] | None:
    path = tuple(getattr(item, "attribute", ()))
    if not path or _path_kind(tree, path) not in _PUSHABLE:
        return None
    field = ".".join(path)
    if isinstance(item, EqualTo):
        return {field: item.value}
    operators: dict[type[Filter], str] = {
        GreaterThan: "$gt", GreaterThanOrEqual: "$gte", LessThan: "$lt", LessThanOrEqual: "$lte",
    }
    for kind, operator in operators.items():
        if isinstance(item, kind):
            return {field: {operator: getattr(item, "value", None)}}
    if isinstance(item, In):
        return {field: {"$in": list(getattr(item, "value", ()))}}
    if isinstance(item, IsNull):
        return {field: None}
    if isinstance(item, IsNotNull):
        return {field: {"$ne": None}}
    return None


class MongoBatchReader(DataSourceReader):
    """Reads a collection (through the user's pipeline) in ``_id``-range or chunk partitions."""

    def __init__(self, options: SourceOptions, schema: StructType, inferred: Struct | None) -> None:
        self.options = options
        self.schema = schema
        # Known column kinds (from our inference) decide which filters may go to the server.
        self.kinds = inferred if inferred is not None and _spark_schema(inferred) == schema else None
        self.pushed: list[str] = []

    def partitions(self) -> Sequence[InputPartition]:
        return [
            MongoPartition(index, extjson.dumps(query, mode="canonical"))
            for index, query in enumerate(plan_partitions(self.options))
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, MongoPartition)
        query = extjson.loads(partition.filter_json)
        filters = [query] if query else []
        filters.extend(extjson.loads(text) for text in self.pushed)
        user = self.options.user_pipeline()
        with fewer_gc_passes(), open_collection(self.options) as collection:
            if user:
                documents = collection.aggregate(
                    [*({"$match": item} for item in filters), *user], **self.options.read_options()
                )
            else:  # a plain query: the server's find path (mongod treats both alike)
                query = filters[0] if len(filters) == 1 else ({"$and": filters} if filters else {})
                documents = collection.find(query, **self.options.read_options(find=True))
            yield from batches(
                documents, self.schema, mode=self.options.mode,
                corrupt_column=self.options.corrupt_column,
            )


class MongoPushdownReader(MongoBatchReader):
    """The reader with ``pushFilters`` (option ``filterPushdown=true``): Spark refuses a reader
    that has it unless ``spark.sql.python.filterPushdown.enabled`` is true, so it is opt-in."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        for item in filters:
            match = _to_match(item, self.kinds)
            if match is None:
                yield item
            else:
                self.pushed.append(extjson.dumps(match, mode="canonical"))
