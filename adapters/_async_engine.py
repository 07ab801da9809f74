"""The asynchronous engine: one client core, run by the async interpreter on asyncio or trio.

:class:`AsyncEngine` is the shared :class:`~._engine_base.EngineBase` (the client core and the
preparation of each operation) run by :class:`~._async.AsyncInterpreter` on a
:class:`BackgroundRuntime` -- :class:`~.asyncio._runtime.AsyncioRuntime` or
:class:`~.trio._runtime.TrioRuntime`.  Every decision is the core's; the engine only starts,
runs and stops.  The asyncio and trio clients (``AsyncMongoClient``) are written on top of it::

    engine = AsyncEngine(settings, runtime=TrioRuntime(None), metadata=client_metadata(None))
    async with engine:                      # trio: the engine's tasks live in this block
        await engine.run(DatabaseOps("db").get_collection("c").insert_one({"x": 1}))

Life cycle.  The core spawns its background tasks (monitors, the upkeep task) as soon as it is
built, possibly outside any event loop; the runtime holds them until it can run them.
``async with engine`` hosts them for the block (on trio in a nursery of the caller's task:
structured concurrency) and closes the engine when the block ends.  Without it, the first
:meth:`~AsyncEngine.run` (or :meth:`~AsyncEngine.start`) starts them where the runtime can:
the running asyncio loop, a trio system task.  :meth:`~AsyncEngine.aclose` sends the dropped
cursors' killCursors and ``endSessions``, closes the core (every connection closes, every
waiter fails, the monitors see it) and waits for the background tasks to end, cancelling those
still running after a grace period.

Cancellation.  A task cancelled at any await inside :meth:`~AsyncEngine.run` (an asyncio
``cancel()``, a trio cancel scope, ``asyncio.timeout``) closes the operation's flow where it
waits; the core's ``finally`` blocks put back its pool slot and close a connection cut
mid-message, so the client goes on serving.  The cancellation itself propagates unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, Protocol, TypeVar

from mongo_sansio.bson.codec_options import CodecOptions
from mongo_sansio.client import ClientSettings
from mongo_sansio.client.srv_polling import SrvSource
from mongo_sansio.flow import Flow

from ._async import AsyncInterpreter, AsyncRuntime
from ._engine_base import EngineBase, Primitives

__all__ = ["AsyncEngine", "BackgroundRuntime"]

T = TypeVar("T")
#: How long closing waits for the background tasks to notice before cancelling them.
_CLOSE_GRACE_SECONDS = 5.0


class BackgroundRuntime(AsyncRuntime, Protocol):
    """An :class:`~._async.AsyncRuntime` that also hosts the background tasks' life."""

    def start(self) -> None:
        """Run the queued background tasks, and later ones, from now on (a no-op once
        started); called from a task of the event loop."""
        ...

    def hosted(self) -> AbstractAsyncContextManager[None]:
        """Host the background tasks for the block of ``async with engine``."""
        ...

    async def stop(self, grace: float) -> None:
        """Wait up to ``grace`` seconds for the background tasks to end, cancel the rest,
        and wait for them; later spawns are dropped."""
        ...

    def renewed(self) -> BackgroundRuntime:
        """A new runtime of the same kind and settings, for the core a forked child builds
        (the inherited one's tasks and streams belong to the parent's event loop)."""
        ...


class AsyncEngine(EngineBase):
    """See the module docstring.  ``metadata`` is the handshake's ``client`` document;
    ``publish`` delivers monitoring events (None when nobody listens); ``srv`` is the SRV
    source of a ``mongodb+srv`` client (polled through ``runtime.resolve``)."""

    def __init__(
        self,
        settings: ClientSettings,
        *,
        runtime: BackgroundRuntime,
        metadata: Mapping[str, Any],
        publish: Callable[[object], None] | None = None,
        faas: bool = False,
        topology_id: object = None,
        srv: SrvSource | None = None,
    ) -> None:
        self._hosting: AbstractAsyncContextManager[None] | None = None
        super().__init__(
            settings,
            metadata=metadata,
            publish=publish,
            faas=faas,
            topology_id=topology_id,
            srv=srv,
            **self._use(runtime)._asdict(),
        )

    def renewed_runtime(self) -> Primitives:
        return self._use(self.runtime.renewed())

    def _use(self, runtime: BackgroundRuntime) -> Primitives:
        self.runtime = runtime
        self.interpreter = AsyncInterpreter(runtime)
        return Primitives(self.interpreter.spawn, runtime.close_stream, runtime.monotonic)

    async def run(
        self,
        flow: Flow[T],
        *,
        timeout: float | None = None,
        session: Any = None,
        codec_options: CodecOptions | None = None,
    ) -> T:
        """Run an operation flow of the core to its result (see
        :meth:`~._engine_base.EngineBase.operation`)."""
        # operation() first: in a forked child it renews the runtime, and so the interpreter
        task = self.operation(flow, timeout, session, codec_options)
        self.runtime.start()
        result: T = await self.interpreter.run(task)
        return result

    async def start(self) -> None:
        """Start the background tasks now (monitoring begins) rather than at the first
        operation; ``async with engine`` does it in the structured way."""
        self.runtime.start()

    async def __aenter__(self) -> AsyncEngine:
        if self._hosting is None:
            hosting = self.runtime.hosted()
            await hosting.__aenter__()
            self._hosting = hosting
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            await self.aclose()
        finally:
            hosting, self._hosting = self._hosting, None
            if hosting is not None:
                await hosting.__aexit__(kind, error, traceback)

    async def aclose(self) -> None:
        """Close the client: best-effort killCursors and endSessions, then the core, then the
        background tasks (see the module docstring).  Idempotent."""
        try:
            flows = self.closing_flows()
            if flows:
                self.runtime.start()
            for flow in flows:
                try:
                    await self.interpreter.run(flow)
                except Exception:  # noqa: BLE001 - best effort, the client is going away
                    pass
        finally:
            self.close_core()
            await self.runtime.stop(_CLOSE_GRACE_SECONDS)
