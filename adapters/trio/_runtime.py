"""The trio runtime: a nursery for the client's background tasks, trio streams, no threads.

What :class:`~mongo_sansio.adapters._async.AsyncInterpreter` needs: streams from
:mod:`mongo_sansio.transports.trio_stream` (names looked up with dnspython on trio's sockets, so
no worker thread is ever started), a ``trio.Event`` waited on under a cancel scope, dnspython's
trio resolver for SRV polling, and a nursery for the background flows (monitors, connection
openers, the client's upkeep, SRV polling).

Structured concurrency.  The background tasks live in one nursery owned by a *host* task, which
keeps the nursery open until the client closes.  Where the host runs is the caller's choice:

* ``async with client:`` -- the host runs in a nursery opened by that block, in the caller's
  task: cancelling the scope around the block cancels the client's tasks too, and leaving the
  block closes the client and waits for every task to end.  This is the structured way.
* an operation awaited outside such a block (or before it) starts the host as a trio *system*
  task (:func:`trio.lowlevel.spawn_system_task`), the way trio itself hosts long-lived helpers:
  the caller's cancel scopes do not reach the monitors, ``await client.close()`` ends them, and
  trio cancels them when ``trio.run`` returns.

Tasks spawned before the host runs (the core spawns its monitors as soon as it is built, which
may be outside ``trio.run``) are queued and started by the host.  ``close_stream`` closes the
socket through trio (``notify_closing``), so a task blocked reading it wakes at once.

The clock is the shared one (``time.monotonic``, :mod:`.._async_runtime`), not trio's: trio is
only ever given relative timeouts.
"""

from __future__ import annotations

import contextlib
import math
import ssl
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import trio

if TYPE_CHECKING:
    from transports.dns_asyncio import AsyncResolver
    from transports.dns_trio import TrioResolver
    from transports.trio_stream import HostLookup, TrioStream, open_stream, start_tls
else:
    from mongo_sansio.transports.dns_asyncio import AsyncResolver
    from mongo_sansio.transports.dns_trio import TrioResolver
    from mongo_sansio.transports.trio_stream import HostLookup, TrioStream, open_stream, start_tls

from .._async_runtime import AsyncRuntimeBase, Target

__all__ = ["TrioRuntime", "TrioEvent"]


class TrioEvent:
    """A ``trio.Event`` whose wait takes a timeout (True once set, False on timeout)."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = trio.Event()

    def set(self) -> None:
        self._event.set()

    async def wait(self, timeout: float | None) -> bool:
        with trio.move_on_after(math.inf if timeout is None else timeout):
            await self._event.wait()
        return self._event.is_set()


class TrioRuntime(AsyncRuntimeBase):
    """trio tasks and streams (see the module docstring).  ``ssl_context`` is the client's TLS
    context (None: plain TCP); ``resolver`` answers SRV polling's DNS questions; ``lookup``
    resolves host names to addresses (default: dnspython on trio's sockets)."""

    def __init__(
        self,
        ssl_context: ssl.SSLContext | None,
        resolver: AsyncResolver | None = None,
        lookup: HostLookup | None = None,
    ) -> None:
        super().__init__(ssl_context, resolver)
        self._lookup = lookup
        self._nursery: trio.Nursery | None = None
        self._hosting = False  # a host task was started (it may not have run yet)
        self._stop_requested = trio.Event()
        self._host_done = trio.Event()

    sleep = staticmethod(trio.sleep)

    async def in_thread(self, function: Any, argument: Any, timeout: float | None = None) -> Any:
        """``function(argument)`` in a worker thread (user code, blocking I/O); TimeoutError
        after ``timeout`` seconds (the thread is abandoned to finish)."""
        with trio.move_on_after(math.inf if timeout is None else timeout):
            return await trio.to_thread.run_sync(function, argument, abandon_on_cancel=True)
        raise TimeoutError(f"no result within {timeout} s")
    event = TrioEvent

    # -- background tasks -------------------------------------------------------------------------

    def _launch(self, target: Target, name: str) -> bool:
        if self._nursery is None:  # no host yet: it launches the queue
            return False
        self._nursery.start_soon(target, name=name)
        return True

    def start(self) -> None:
        """Host the background tasks in a system task, unless a host exists (see the module
        docstring); called from a trio task before each operation."""
        if self._hosting or self._stopped:
            return
        self._hosting = True
        trio.lowlevel.spawn_system_task(self._host, name="mongo-sansio client tasks")

    @contextlib.asynccontextmanager
    async def hosted(self) -> AsyncIterator[None]:
        """The block of ``async with client``: the host runs in a nursery of this block.  The
        engine stops the host before the block ends, so the nursery closes at once; an error
        of the block leaves it as raised, not wrapped in an exception group."""
        if self._hosting or self._stopped:
            yield
            return
        self._hosting = True
        error: BaseException | None = None
        async with trio.open_nursery() as nursery:
            await nursery.start(self._host)
            try:
                yield
            except BaseException as exc:  # noqa: BLE001 - raised again below, unwrapped
                error = exc
            finally:
                self._request_stop(0.0)
        if error is not None:
            raise error

    async def _host(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            if self._stopped:  # closed before this task ran
                task_status.started()
                return
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self._launch_queued()
                task_status.started()
                await self._stop_requested.wait()
        finally:
            self._nursery = None
            self._host_done.set()

    def _request_stop(self, grace: float) -> None:
        self._stop_spawning()
        if self._nursery is not None:
            scope = self._nursery.cancel_scope
            scope.deadline = min(scope.deadline, trio.current_time() + grace)
        self._stop_requested.set()

    async def stop(self, grace: float) -> None:
        """End the background tasks: they have up to ``grace`` seconds to finish (the core
        has closed, so they are ending), then the host's nursery cancels the rest."""
        self._request_stop(grace)
        if self._hosting:
            await self._host_done.wait()

    def renewed(self) -> TrioRuntime:
        """A new runtime with these settings (for a forked child's new core)."""
        return TrioRuntime(self._ssl_context, self._resolver, self._lookup)

    # -- streams (sending, receiving, closing, DNS and the clock: AsyncRuntimeBase) ------------

    async def open_stream(
        self, address: tuple[str, int], timeout: float | None, tls: bool = True
    ) -> TrioStream:
        context = self._ssl_context if tls else None
        return await open_stream(address, timeout=timeout, ssl_context=context, lookup=self._lookup)

    async def start_tls(
        self, stream: TrioStream, address: tuple[str, int], timeout: float | None, https: bool
    ) -> TrioStream:
        context = self.tls_context(https)
        if context is None:
            return stream
        return await start_tls(stream, context, address, timeout=timeout)

    def default_resolver(self) -> AsyncResolver:
        return TrioResolver()
