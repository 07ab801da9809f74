"""``MongoDataSource``: the PySpark data source named ``mongo_sansio``.

::

    from mongo_sansio.adapters.spark import MongoDataSource

    spark.dataSource.register(MongoDataSource)
    df = spark.read.format("mongo_sansio").option("uri", uri) \\
        .option("database", "shop").option("collection", "orders").load()

Batch reads (:mod:`.batch`), batch and streaming writes (:mod:`.write`) and change-stream
reads (:mod:`.stream`); docs/spark.md lists the options.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from mongo_sansio.pipeline.schema import Struct

from .options import SourceOptions, parse_options

__all__ = ["MongoDataSource", "STREAM_OPTIONS"]

# Options only a stream takes: their presence tells schema() that a stream is being planned.
STREAM_OPTIONS = frozenset({
    "startat", "fulldocument", "fulldocumentbeforechange", "maxeventsperbatch", "keypartitions",
    "keypartitionfilter", "checkpointlocation", "documentformat", "quietadvanceseconds",
    "endtokentimeoutms", "maxawaittimems", "publishfulldocumentonly",
})


class MongoDataSource(DataSource):
    """MongoDB collections and change streams for Spark (format ``mongo_sansio``)."""

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        self.parsed: SourceOptions = parse_options(options)
        self._inferred: Struct | None = None

    @classmethod
    def name(cls) -> str:
        return "mongo_sansio"

    def schema(self) -> StructType | str:
        # Spark asks for the schema without saying whether a batch read or a stream follows;
        # any stream option (docs/spark.md: startAt is the usual one) means a stream, whose
        # columns are fixed.  Otherwise the schema is inferred from a sample.
        if self.is_stream() and not self.parsed.publish_full_document_only:
            from .stream import event_schema

            return event_schema(self.parsed)
        from .batch import infer

        schema, self._inferred = infer(self.parsed)
        return schema

    def is_stream(self) -> bool:
        return any(str(key).lower() in STREAM_OPTIONS for key in self.options)

    def reader(self, schema: StructType) -> DataSourceReader:
        from .batch import MongoBatchReader, MongoPushdownReader

        kind = MongoPushdownReader if self.parsed.filter_pushdown else MongoBatchReader
        return kind(self.parsed, schema, self._inferred)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from .stream import MongoStreamReader

        return MongoStreamReader(self.parsed, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from .write import MongoWriter

        return MongoWriter(self.parsed, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from .write import MongoStreamWriter

        return MongoStreamWriter(self.parsed, schema)

    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__.copy()
