"""The PySpark data source for MongoDB: ``from mongo_sansio.adapters.spark import
MongoDataSource``, registered with ``spark.dataSource.register(MongoDataSource)`` under the name
``mongo_sansio`` (``spark.read``, ``readStream``, ``write`` and ``writeStream``).

Needs the ``spark`` extra (``pyspark[sql]`` 4.2 or later, with pyarrow).  docs/spark.md has the
options, the column types, the exactly-once argument and the restart story.
"""

from __future__ import annotations

from .errors import (
    ChangeStreamHistoryLost,
    EndTokenNotReached,
    MongoDataSourceError,
    MongoRowWriteError,
)
from .source import MongoDataSource

__all__ = [
    "ChangeStreamHistoryLost",
    "EndTokenNotReached",
    "MongoDataSource",
    "MongoDataSourceError",
    "MongoRowWriteError",
]
