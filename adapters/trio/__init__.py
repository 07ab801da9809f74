"""The trio client: ``from mongo_sansio.adapters.trio import AsyncMongoClient``.

PyMongo's async API (:mod:`.client`; the wrappers are shared with asyncio,
:mod:`mongo_sansio.adapters._async_api`) on :class:`~._runtime.TrioRuntime`, this runtime's few
primitives (docs/runtimes.md), in a trio nursery, with no threads.  The module exports the same
values as every client module (``InsertOne``, ``IndexModel``, ``ASCENDING``, ``timeout`` ...).
"""

from .. import _async_api
from .._api import names
from .._api.names import *  # noqa: F403 - the values every client module exports
from .._async_api import *  # noqa: F403 - the async wrappers
from .._async_engine import AsyncEngine
from ._runtime import TrioRuntime
from .client import AsyncMongoClient

__all__ = ["AsyncMongoClient", "AsyncEngine", "TrioRuntime", *_async_api.__all__, *names.__all__]
