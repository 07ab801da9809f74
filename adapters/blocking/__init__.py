"""The blocking client: ``from mongo_sansio.adapters.blocking import MongoClient``.

* :class:`MongoClient` (:mod:`.client`), :class:`Database` (:mod:`.database`);
* :class:`Collection` (:mod:`.collection`); :class:`Cursor`, :class:`CommandCursor` and
  their raw-batch twins (:mod:`.cursor`);
* :class:`ChangeStream` (:mod:`.change_stream`);
* :class:`Engine`, the interpreter of the core's flows over blocking sockets (:mod:`._engine`);
* the values every client module exports (:mod:`mongo_sansio.adapters._api.names`:
  ``InsertOne``, ``IndexModel``, ``ASCENDING``, ``timeout`` ...).
"""

from .._api import names
from .._api.names import *  # noqa: F403 - the values every client module exports
from ._engine import Engine
from .change_stream import ChangeStream
from .client import Database, MongoClient
from .collection import Collection
from .cursor import CommandCursor, Cursor, RawBatchCommandCursor, RawBatchCursor

__all__ = [
    "ChangeStream",
    "Collection",
    "CommandCursor",
    "Cursor",
    "RawBatchCommandCursor",
    "RawBatchCursor",
    "Database",
    "Engine",
    "MongoClient",
    *names.__all__,
]
