"""The trio client: the client core run by the async interpreter in a trio nursery, no threads.

:class:`~._runtime.TrioRuntime` is this runtime's few primitives (docs/runtimes.md); the client
built on it shares :class:`~mongo_sansio.adapters._async_engine.AsyncEngine` with asyncio.
"""

from ._runtime import TrioRuntime

__all__ = ["TrioRuntime"]
