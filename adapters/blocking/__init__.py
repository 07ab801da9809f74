"""The blocking client: ``from mongo_sansio.adapters.blocking import MongoClient``.

* :class:`MongoClient`, :class:`Database` (:mod:`.client`);
* :class:`Collection` (:mod:`.collection`), :class:`Cursor` (:mod:`.cursor`);
* :class:`ChangeStream` (:mod:`.change_stream`);
* :class:`Engine`, the interpreter of the core's flows over blocking sockets (:mod:`._engine`).
"""

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
from .cursor import Cursor

__all__ = [
    "ChangeStream",
    "Collection",
    "Cursor",
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
]
