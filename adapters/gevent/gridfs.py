"""GridFS for the gevent client: the blocking client's (:mod:`mongo_sansio.adapters.blocking.gridfs`),
whose operations wait on greenlets when the database is a gevent client's.  Change
``import gridfs`` to ``from mongo_sansio.adapters.gevent import gridfs``."""

from ..blocking.gridfs import *  # noqa: F403 - the same names as the blocking client's
from ..blocking.gridfs import __all__ as __all__
