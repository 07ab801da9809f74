"""The four settings a database passes to its collections (PyMongo's chain): codec options,
read preference, write concern and read concern, read from the runtime-independent object
(:class:`~mongo_sansio.ops.database.DatabaseOps` or
:class:`~mongo_sansio.ops.collection.CollectionOps`) whose flows the wrapper runs."""

from __future__ import annotations

from mongo_sansio.bson.codec_options import CodecOptions
from mongo_sansio.ops.collection import CollectionOps
from mongo_sansio.ops.database import DatabaseOps
from mongo_sansio.ops.write_concern import ReadConcern, WriteConcern
from mongo_sansio.selection import ReadPreference

__all__ = ["Settings"]


class Settings:
    """Mixin: the settings of ``self._ops``."""

    _ops: DatabaseOps | CollectionOps

    @property
    def codec_options(self) -> CodecOptions:
        return self._ops.codec_options

    @property
    def read_preference(self) -> ReadPreference:
        return self._ops.read_preference

    @property
    def write_concern(self) -> WriteConcern:
        return self._ops.write_concern

    @property
    def read_concern(self) -> ReadConcern:
        return self._ops.read_concern
