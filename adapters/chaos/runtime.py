"""The virtual runtime: the runtime seam's primitives on the virtual loop and network.

:class:`VirtualRuntime` is an asynchronous runtime (what
:class:`~mongo_sansio.adapters._async.AsyncInterpreter` awaits, as it awaits asyncio's and
trio's): the clock is the loop's virtual now, sleeping and waiting are timers, a stream is a
:class:`~.network.VirtualStream`, a background task is a task of the loop.  The interpreter,
the engine, the core's flows and the PyMongo-shaped async API (:class:`ChaosMongoClient`, an
``AsyncMongoClient``) run on it unchanged; only the randomness the engine draws (selection,
nonces, lsids) comes from the world's seed instead of the system.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from mongo_sansio.client import ClientSettings
from mongo_sansio.errors import NetworkError

from .._async_api.client import AsyncMongoClientBase
from .._async_engine import AsyncEngine
from .loop import Loop, VirtualTask, Waiter
from .network import Network, VirtualStream

__all__ = ["ChaosMongoClient", "VirtualEngine", "VirtualEvent", "VirtualRuntime"]


class VirtualEvent:
    """An event a flow waits on with a deadline (the interpreter's ``Wait``)."""

    def __init__(self, loop: Loop) -> None:
        self._loop = loop
        self._set = False
        self._waiters: list[Waiter] = []

    def set(self) -> None:
        if self._set:
            return
        self._set = True
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.wake(True)

    async def wait(self, timeout: float | None) -> bool:
        if self._set:
            return True

        def hook(waiter: Waiter) -> Callable[[], None]:
            self._waiters.append(waiter)

            def unhook() -> None:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

            return unhook

        result: bool = await self._loop.park(hook, timeout, lambda: self._set)
        return result


class VirtualRuntime:
    """See the module docstring."""

    def __init__(self, loop: Loop, network: Network, rng: random.Random) -> None:
        self.loop = loop
        self.network = network
        self.rng = rng
        self.tasks: list[VirtualTask] = []
        self._stopped = False

    def monotonic(self) -> float:
        return self.loop.now

    async def sleep(self, seconds: float) -> None:
        await self.loop.sleep(seconds)

    def event(self) -> VirtualEvent:
        return VirtualEvent(self.loop)

    def spawn(self, target: Callable[[], Awaitable[None]], name: str) -> None:
        if self._stopped:
            return
        coro: Any = target()
        self.tasks.append(self.loop.spawn(coro, f"mongo-sansio {name}"))
        self.tasks = [task for task in self.tasks if not task.done]

    def start(self) -> None:
        pass  # tasks run as soon as they are spawned

    @contextlib.asynccontextmanager
    async def hosted(self) -> AsyncIterator[None]:
        yield

    async def stop(self, grace: float) -> None:
        self._stopped = True
        current = self.loop.current
        tasks = [task for task in self.tasks if task is not current and not task.done]
        end = self.loop.now + grace
        for task in tasks:
            await self.loop.join(task, max(0.0, end - self.loop.now))
        for task in tasks:
            self.loop.cancel(task)
        for task in tasks:
            await self.loop.join(task)

    def renewed(self) -> VirtualRuntime:
        return self

    async def open_stream(self, address: tuple[str, int], timeout: float | None, tls: bool = True) -> VirtualStream:
        stream: VirtualStream = await self.network.connect(address, timeout)
        return stream

    async def start_tls(self, stream: VirtualStream, address: tuple[str, int], timeout: float | None, https: bool) -> VirtualStream:
        return stream  # the virtual network carries no TLS

    async def send_all(self, stream: VirtualStream, buffers: Sequence[bytes | bytearray | memoryview], timeout: float | None) -> None:
        await stream.send_all(buffers, timeout)

    async def receive(self, stream: VirtualStream, timeout: float | None, size: int = 65536) -> bytes:
        return await stream.receive(timeout, size)

    def close_stream(self, stream: VirtualStream, /) -> None:
        stream.close()

    async def resolve(self, question: Any) -> Any:
        raise NetworkError("the virtual network has no DNS")

    async def in_thread(self, function: Callable[[Any], Any], argument: Any, timeout: float | None = None) -> Any:
        raise NetworkError("the virtual runtime runs no threads")


class VirtualEngine(AsyncEngine):
    """The async engine on a :class:`VirtualRuntime`, drawing its randomness from the seed."""

    runtime: VirtualRuntime

    def _randomness(self) -> random.Random:
        return self.runtime.rng

    def _nonce(self) -> bytes:
        return self.runtime.rng.randbytes(24)


class ChaosMongoClient(AsyncMongoClientBase):
    """PyMongo's ``AsyncMongoClient`` on the virtual runtime ``runtime``."""

    def __init__(self, host: str, *, runtime: VirtualRuntime, **options: Any) -> None:
        self._virtual_runtime = runtime
        super().__init__(host, **options)

    def _new_engine(self, settings: ClientSettings, resolver: Any, **common: Any) -> AsyncEngine:
        return VirtualEngine(settings, runtime=self._virtual_runtime, **common)
