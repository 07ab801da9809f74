"""The blocking client: ``from mongo_sansio.adapters.blocking import MongoClient``.

* :class:`MongoClient` (:mod:`.client`), :class:`Database` (:mod:`.database`);
* :class:`Collection` (:mod:`.collection`); :class:`Cursor`, :class:`CommandCursor` and
  their raw-batch twins (:mod:`.cursor`);
* :class:`ChangeStream` (:mod:`.change_stream`);
* :class:`Engine`, the interpreter of the core's flows over blocking sockets (:mod:`._engine`).
"""

from mongo_sansio.ops.database import CollectionInvalid
from mongo_sansio.ops.find_and_modify import ReturnDocument
from mongo_sansio.ops.indexes import IndexModel
from mongo_sansio.ops.models import (
    DeleteMany,
    DeleteOne,
    InsertOne,
    ReplaceOne,
    UpdateMany,
    UpdateOne,
)
from mongo_sansio.ops.write_concern import ReadConcern, WriteConcern
from mongo_sansio.selection.read_preference import ReadPreference

from .._timeout import timeout
from ._engine import Engine
from .change_stream import ChangeStream
from .client import Database, MongoClient
from .collection import Collection
from .cursor import CommandCursor, Cursor, RawBatchCommandCursor, RawBatchCursor

#: Index key directions and types, under PyMongo's names (``from pymongo import ASCENDING``).
ASCENDING = 1
DESCENDING = -1
GEO2D = "2d"
GEOSPHERE = "2dsphere"
HASHED = "hashed"
TEXT = "text"

__all__ = [
    "ChangeStream",
    "Collection",
    "CollectionInvalid",
    "CommandCursor",
    "Cursor",
    "RawBatchCommandCursor",
    "RawBatchCursor",
    "Database",
    "Engine",
    "MongoClient",
    "timeout",
    # Collection API values (PyMongo's names)
    "IndexModel",
    "InsertOne",
    "UpdateOne",
    "UpdateMany",
    "ReplaceOne",
    "DeleteOne",
    "DeleteMany",
    "ReturnDocument",
    "WriteConcern",
    "ReadConcern",
    "ReadPreference",
    "ASCENDING",
    "DESCENDING",
    "GEO2D",
    "GEOSPHERE",
    "HASHED",
    "TEXT",
]
