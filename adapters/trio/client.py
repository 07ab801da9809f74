"""The trio client: PyMongo's ``AsyncMongoClient`` API on trio, with no threads at all.

``async with AsyncMongoClient(uri) as client:`` hosts the client's monitors and pools in a
nursery of the entering task (structured concurrency: they end with the block); without it
they run in a trio system task from the first operation until ``await client.close()``.  The
wrappers are the async ones shared with asyncio (:mod:`mongo_sansio.adapters._async_api`);
this module only names the runtime, :class:`~._runtime.TrioRuntime`: trio's sockets and cancel
scopes, host names looked up with dnspython on trio's sockets (no thread, even for DNS).
"""

from __future__ import annotations

from .._async_api.client import AsyncMongoClientBase
from ._runtime import TrioRuntime

__all__ = ["AsyncMongoClient"]


class AsyncMongoClient(AsyncMongoClientBase):
    """A client for one deployment on trio (see the module docstring and
    :class:`~mongo_sansio.adapters._async_api.client.AsyncMongoClientBase`)."""

    runtime_class = TrioRuntime
