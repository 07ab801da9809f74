"""The async change stream (PyMongo's ``AsyncChangeStream``), shared by asyncio and trio.

``stream = await coll.watch()`` opens it (the aggregate has run when the await returns, so no
change made afterwards is missed); then ``async for change in stream``, ``await
stream.next()``, ``await stream.try_next()`` and ``await stream.close()`` (``async with stream``
closes it on the way out).  Everything but iteration is the blocking stream's code
(:mod:`mongo_sansio.adapters._api.change_stream`): resuming, the resume token, ``alive``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from .._api.change_stream import ChangeStreamBase
from .._api.closing import AsyncClosesOnExit
from .._api.cursor import END
from .._api.program import Asynchronous, run_async

__all__ = ["AsyncChangeStream"]


class AsyncChangeStream(Asynchronous, AsyncClosesOnExit, ChangeStreamBase):
    """A change stream (see the module docstring)."""

    async def next(self) -> Mapping[str, Any]:
        """The next change, waiting for it; StopAsyncIteration once the stream has ended."""
        buffered = self._next_buffered()
        if buffered is not None:
            return buffered
        change: Mapping[str, Any] = await run_async(self._engine, self._next_change())
        if change is END:
            raise StopAsyncIteration
        return change

    __anext__ = next  # (the same coroutine function: no second coroutine per change)

    def __aiter__(self) -> Self:
        return self
