"""The asyncio runtime: tasks on the running event loop, asyncio streams.

What :class:`~mongo_sansio.adapters._async.AsyncInterpreter` needs, and nothing else: streams
from :mod:`mongo_sansio.transports.asyncio_stream`, an ``asyncio.Event`` to wait on with a
deadline, a task per background flow (monitors, connection openers, the client's upkeep, SRV
polling) and dnspython's asyncio resolver for SRV polling.  No thread is started for an IP
address; asyncio's ``getaddrinfo`` (a worker thread) is only asked about host names.  Runs on
any asyncio event loop, uvloop's included.

Background tasks: a client may be built outside any event loop (``client = AsyncMongoClient()``
at import time).  Its first tasks are then kept until :meth:`AsyncioRuntime.start` -- called by
the engine before each operation and by ``async with`` -- finds the running loop; a client built
inside a coroutine starts them at once.  The runtime keeps a strong reference to each task
(asyncio only keeps weak ones) and :meth:`AsyncioRuntime.stop` waits for them on close,
cancelling those that outlive the grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Coroutine
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from transports.asyncio_stream import AsyncioStream, open_stream, start_tls
    from transports.dns_asyncio import AsyncioResolver, AsyncResolver
else:
    from mongo_sansio.transports.asyncio_stream import AsyncioStream, open_stream, start_tls
    from mongo_sansio.transports.dns_asyncio import AsyncioResolver, AsyncResolver

from .._async_runtime import AsyncRuntimeBase, Target

__all__ = ["AsyncioRuntime", "AsyncioEvent"]


class AsyncioEvent(asyncio.Event):
    """An ``asyncio.Event`` whose wait takes a timeout (True once set, False on timeout)."""

    async def wait(self, timeout: float | None = None) -> bool:  # type: ignore[override]
        if timeout is None:
            return await super().wait()
        try:
            async with asyncio.timeout(timeout):
                return await super().wait()
        except TimeoutError:
            return self.is_set()


class AsyncioRuntime(AsyncRuntimeBase):
    """asyncio tasks and streams (see the module docstring).  ``ssl_context`` is the client's
    TLS context (None: plain TCP); ``resolver`` answers SRV polling's DNS questions."""

    def __init__(self, ssl_context: ssl.SSLContext | None, resolver: AsyncResolver | None = None):
        super().__init__(ssl_context, resolver)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    sleep = staticmethod(asyncio.sleep)

    async def in_thread(self, function: Any, argument: Any, timeout: float | None = None) -> Any:
        """``function(argument)`` in a worker thread (user code, blocking I/O); TimeoutError
        after ``timeout`` seconds (the thread is left to finish)."""
        return await asyncio.wait_for(asyncio.to_thread(function, argument), timeout)
    event = AsyncioEvent

    # -- background tasks -------------------------------------------------------------------------

    def _launch(self, target: Target, name: str) -> bool:
        if self._loop is None:
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:  # built outside a loop: wait for start()
                return False
        # the interpreter's targets are coroutine functions; the protocol says Awaitable
        task = self._loop.create_task(cast(Coroutine[Any, Any, None], target()), name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    def start(self) -> None:
        """Run the queued background tasks on the running loop (and later ones there too)."""
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            raise RuntimeError("this client is bound to another event loop")
        self._launch_queued()

    @contextlib.asynccontextmanager
    async def hosted(self) -> AsyncIterator[None]:
        """The block of ``async with client``: tasks start on entry (the engine stops them)."""
        self.start()
        yield

    async def stop(self, grace: float) -> None:
        """End the background tasks: wait up to ``grace`` seconds for them to finish (the core
        has closed, so they are ending), then cancel the rest and wait for those."""
        self._stop_spawning()
        current = asyncio.current_task()
        tasks = [task for task in self._tasks if task is not current]
        if not tasks:
            return
        _done, late = await asyncio.wait(tasks, timeout=grace)
        for task in late:
            task.cancel()
        if late:
            await asyncio.wait(late)

    def renewed(self) -> AsyncioRuntime:
        """A new runtime with these settings (for a forked child's new core)."""
        return AsyncioRuntime(self._ssl_context, self._resolver)

    # -- streams (sending, receiving, closing, DNS and the clock: AsyncRuntimeBase) ------------

    async def open_stream(
        self, address: tuple[str, int], timeout: float | None, tls: bool = True
    ) -> AsyncioStream:
        context = self._ssl_context if tls else None
        return await open_stream(address, timeout=timeout, ssl_context=context)

    async def start_tls(
        self, stream: AsyncioStream, address: tuple[str, int], timeout: float | None, https: bool
    ) -> AsyncioStream:
        context = self.tls_context(https)
        if context is None:
            return stream
        return await start_tls(stream, context, address, timeout=timeout)

    def default_resolver(self) -> AsyncResolver:
        return AsyncioResolver()
