"""GridFS for the trio client, with PyMongo's names: change import gridfs to
``from mongo_sansio.adapters.trio import gridfs`` and use ``gridfs.AsyncGridFSBucket(db)``
(:mod:`mongo_sansio.adapters._async_api.gridfs`, shared with the other async runtime)."""

from .._async_api.gridfs import *  # noqa: F403 - the async GridFS
from .._async_api.gridfs import __all__ as __all__
