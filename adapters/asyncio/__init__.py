"""The asyncio client: the client core run by the async interpreter on asyncio tasks and streams.

:class:`~._runtime.AsyncioRuntime` is this runtime's few primitives (docs/runtimes.md); the
client built on it shares :class:`~mongo_sansio.adapters._async_engine.AsyncEngine` with trio.
"""

from ._runtime import AsyncioRuntime

__all__ = ["AsyncioRuntime"]
