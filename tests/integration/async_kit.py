"""The few things the async engine tests do differently on asyncio and on trio.

A :class:`Kit` runs a test's main coroutine (``asyncio.run`` / ``trio.run``), builds an
:class:`~mongo_sansio.adapters._async_engine.AsyncEngine` on its runtime, and offers the
runtime-neutral helpers the scenarios need: sleep, run coroutines concurrently, cancel an
awaitable after a delay (an asyncio ``task.cancel()``; a trio cancel scope) and poll a
condition.  Each test module parametrizes over :data:`KITS` (uvloop's kit skips, naming why,
when uvloop is not installed).
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import trio

from mongo_sansio.adapters._async_engine import AsyncEngine, BackgroundRuntime
from mongo_sansio.adapters._uri import parse_client_uri
from mongo_sansio.adapters.asyncio import AsyncioRuntime
from mongo_sansio.adapters.environment import client_metadata
from mongo_sansio.adapters.trio import TrioRuntime
from mongo_sansio.client import ClientSettings, TlsSettings

CANCELLED = object()
"""What :meth:`Kit.cancel_after` returns when the awaitable was cancelled before it ended."""


class Kit:
    name = ""
    family = ""  # "asyncio" (uvloop included) or "trio"
    available = True

    def run(self, main: Callable[[], Awaitable[Any]]) -> Any:
        raise NotImplementedError

    def runtime(self, tls: TlsSettings) -> BackgroundRuntime:
        raise NotImplementedError

    async def sleep(self, seconds: float) -> None:
        raise NotImplementedError

    async def gather(self, *jobs: Callable[[], Awaitable[Any]]) -> list[Any]:
        raise NotImplementedError

    async def cancel_after(self, seconds: float, job: Callable[[], Awaitable[Any]]) -> Any:
        raise NotImplementedError

    def engine(
        self,
        uri: str,
        *,
        events: list[object] | None = None,
        runtime: BackgroundRuntime | None = None,
        **options: Any,
    ) -> AsyncEngine:
        """An engine for ``uri`` (URI options as keywords); ``events`` collects what the core
        publishes."""
        settings = ClientSettings.from_connection_string(
            parse_client_uri(uri, options, stacklevel=2)
        )
        return AsyncEngine(
            settings,
            runtime=runtime or self.runtime(settings.tls),
            metadata=client_metadata(None),
            publish=None if events is None else events.append,
        )

    async def wait_for(self, predicate: Callable[[], object], timeout: float) -> float:
        """Poll ``predicate`` until true; the seconds it took (AssertionError on timeout)."""
        start = time.monotonic()
        while not predicate():
            if time.monotonic() - start > timeout:
                raise AssertionError(f"not true after {timeout} s")
            await self.sleep(0.005)
        return time.monotonic() - start


class AsyncioKit(Kit):
    name = "asyncio"
    family = "asyncio"

    def run(self, main: Callable[[], Awaitable[Any]]) -> Any:
        async def wrapped() -> Any:
            return await main()

        return asyncio.run(wrapped())

    def runtime(self, tls: TlsSettings) -> BackgroundRuntime:
        return AsyncioRuntime.for_tls(tls)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def gather(self, *jobs: Callable[[], Awaitable[Any]]) -> list[Any]:
        async def call(job: Callable[[], Awaitable[Any]]) -> Any:
            return await job()

        return list(await asyncio.gather(*(call(job) for job in jobs)))

    async def cancel_after(self, seconds: float, job: Callable[[], Awaitable[Any]]) -> Any:
        async def call() -> Any:
            return await job()

        task = asyncio.create_task(call())
        await asyncio.sleep(seconds)
        if task.done():
            return task.result()
        task.cancel()
        try:
            return await task
        except asyncio.CancelledError:
            return CANCELLED


class UvloopKit(AsyncioKit):
    """asyncio on uvloop's event loop, when uvloop is installed (it is optional)."""

    name = "uvloop"
    available = importlib.util.find_spec("uvloop") is not None

    def run(self, main: Callable[[], Awaitable[Any]]) -> Any:
        import uvloop

        async def wrapped() -> Any:
            return await main()

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(wrapped())


class TrioKit(Kit):
    name = "trio"
    family = "trio"

    def run(self, main: Callable[[], Awaitable[Any]]) -> Any:
        return trio.run(main)

    def runtime(self, tls: TlsSettings) -> BackgroundRuntime:
        return TrioRuntime.for_tls(tls)

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)

    async def gather(self, *jobs: Callable[[], Awaitable[Any]]) -> list[Any]:
        results: list[Any] = [None] * len(jobs)

        async def call(index: int, job: Callable[[], Awaitable[Any]]) -> None:
            results[index] = await job()

        async with trio.open_nursery() as nursery:
            for index, job in enumerate(jobs):
                nursery.start_soon(call, index, job)
        return results

    async def cancel_after(self, seconds: float, job: Callable[[], Awaitable[Any]]) -> Any:
        result: Any = CANCELLED
        with trio.move_on_after(seconds):
            result = await job()
        return result


KITS: Sequence[Kit] = (AsyncioKit(), TrioKit(), UvloopKit())
