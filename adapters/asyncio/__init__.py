"""The asyncio client: ``from mongo_sansio.adapters.asyncio import AsyncMongoClient``.

PyMongo's async API (:mod:`.client`; the wrappers are shared with trio,
:mod:`mongo_sansio.adapters._async_api`) on :class:`~._runtime.AsyncioRuntime`, this runtime's
few primitives (docs/runtimes.md), through the
:class:`~mongo_sansio.adapters._async_engine.AsyncEngine`.  The module exports the same values
as every client module (``InsertOne``, ``IndexModel``, ``ASCENDING``, ``timeout`` ...).
"""

from .. import _async_api
from .._api import names
from .._api.names import *  # noqa: F403 - the values every client module exports
from .._async_api import *  # noqa: F403 - the async wrappers
from .._async_engine import AsyncEngine
from ._runtime import AsyncioRuntime
from .client import AsyncMongoClient

__all__ = ["AsyncMongoClient", "AsyncEngine", "AsyncioRuntime", *_async_api.__all__, *names.__all__]
