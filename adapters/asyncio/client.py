"""The asyncio client: PyMongo's ``AsyncMongoClient`` API on asyncio tasks and streams.

``async with AsyncMongoClient(uri) as client: await client.db.coll.insert_one({...})``.  The
wrappers are the async ones shared with trio (:mod:`mongo_sansio.adapters._async_api`); this
module only names the runtime, :class:`~._runtime.AsyncioRuntime`: a task (never a thread) per
monitor and background job, no thread at all for a numeric host (a host name is looked up by
asyncio's ``getaddrinfo``, in its worker thread), any event loop (uvloop's included).
"""

from __future__ import annotations

from .._async_api.client import AsyncMongoClientBase
from ._runtime import AsyncioRuntime

__all__ = ["AsyncMongoClient"]


class AsyncMongoClient(AsyncMongoClientBase):
    """A client for one deployment on asyncio (see the module docstring and
    :class:`~mongo_sansio.adapters._async_api.client.AsyncMongoClientBase`)."""

    runtime_class = AsyncioRuntime
