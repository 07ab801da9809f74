"""The values every client module exports beside its classes, under PyMongo's names: the
Collection API's write models and options, concerns and read preferences, the index
constants, ``timeout`` and the MONGODB-OIDC callback types (PyMongo's ``pymongo.auth_oidc``).  ``from mongo_sansio.adapters.<runtime> import InsertOne`` works
for every runtime because each client module re-exports this list."""

from mongo_sansio.auth.oidc import (
    OIDCCallback,
    OIDCCallbackContext,
    OIDCCallbackResult,
    OIDCIdPInfo,
)
from mongo_sansio.ops.crud_commands import CursorType
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
from mongo_sansio.ops.search_indexes import SearchIndexModel
from mongo_sansio.ops.write_concern import ReadConcern, WriteConcern
from mongo_sansio.selection.read_preference import ReadPreference
from mongo_sansio.sessions import TransactionOptions

from .._timeout import timeout

#: Index key directions and types, under PyMongo's names (``from pymongo import ASCENDING``).
ASCENDING = 1
DESCENDING = -1
GEO2D = "2d"
GEOSPHERE = "2dsphere"
HASHED = "hashed"
TEXT = "text"

__all__ = [
    "CollectionInvalid",
    "CursorType",
    "TransactionOptions",
    "timeout",
    # Collection API values (PyMongo's names)
    "IndexModel",
    "SearchIndexModel",
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
    # MONGODB-OIDC callbacks (PyMongo's pymongo.auth_oidc names)
    "OIDCCallback",
    "OIDCCallbackContext",
    "OIDCCallbackResult",
    "OIDCIdPInfo",
]
