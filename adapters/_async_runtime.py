"""What the asyncio and trio runtimes share: the clock, spawning, and using a stream.

The clock is ``time.monotonic`` on both -- the clock of ``timeout()`` blocks, to which every
deadline of the core is compared -- never the event loop's own.  The asyncio and trio
transports (:mod:`mongo_sansio.transports.asyncio_stream`,
:mod:`~mongo_sansio.transports.trio_stream`) give streams of one shape -- ``await
send_all(buffers, timeout)``, ``await receive(timeout)``, a synchronous ``close()`` that wakes a
blocked reader -- so sending, receiving, closing and answering DNS questions are written once
here; each runtime adds how a stream is opened, its events and sleep, and how a background
task is launched.  Spawning is shared too: a task spawned before the runtime can run it (the
core spawns its monitors as soon as it is built, maybe outside any event loop) is queued until
the runtime launches the queue, and once the client closed, a spawned task is dropped (its
flow ends unstarted).
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, Self

from mongo_sansio.client import TlsSettings
from mongo_sansio.client.runtime import RECEIVE_SIZE

if TYPE_CHECKING:
    from transports.blocking import make_https_context, make_ssl_context
else:
    from mongo_sansio.transports.blocking import make_https_context, make_ssl_context

__all__ = ["AsyncRuntimeBase", "AsyncStream"]

Buffer = bytes | bytearray | memoryview
Target = Callable[[], Awaitable[None]]


class AsyncStream(Protocol):
    async def send_all(self, buffers: Sequence[Buffer], timeout: float | None) -> None: ...
    async def receive(self, timeout: float | None, max_bytes: int = ...) -> bytes: ...
    def close(self) -> None: ...


class AsyncRuntimeBase:
    """The clock, spawning, stream and DNS primitives.  ``ssl_context`` is the client's TLS
    context (None: plain TCP); ``resolver`` (an object with ``async ask(question)``) answers
    SRV polling, else :meth:`default_resolver` made on first use."""

    monotonic = staticmethod(time.monotonic)

    def __init__(self, ssl_context: ssl.SSLContext | None, resolver: Any = None) -> None:
        self._ssl_context = ssl_context  # for the runtime's open_stream (None: plain TCP)
        self._https_context: ssl.SSLContext | None = None
        self._resolver = resolver
        self._queued: list[tuple[Target, str]] = []
        self._stopped = False

    @classmethod
    def for_tls(cls, tls: TlsSettings, resolver: Any = None) -> Self:
        """A runtime for a client whose TLS settings are ``tls`` (the context built as the
        blocking client builds it)."""
        return cls(make_ssl_context(tls) if tls.enabled else None, resolver)

    def spawn(self, target: Target, name: str) -> None:
        """Run ``target`` as the background task ``mongo-sansio <name>``, now or once the
        runtime can (see the module docstring)."""
        if self._stopped:
            return
        if not self._launch(target, f"mongo-sansio {name}"):
            self._queued.append((target, name))

    def _launch(self, target: Target, name: str) -> bool:
        """Start the task, or say (False) that the runtime cannot run tasks yet."""
        raise NotImplementedError

    def _launch_queued(self) -> None:
        queued, self._queued = self._queued, []
        for target, name in queued:
            self.spawn(target, name)

    def _stop_spawning(self) -> None:
        self._stopped = True
        self._queued.clear()

    async def send_all(
        self, stream: AsyncStream, buffers: Sequence[Buffer], timeout: float | None
    ) -> None:
        await stream.send_all(buffers, timeout)

    async def receive(
        self, stream: AsyncStream, timeout: float | None, size: int = RECEIVE_SIZE
    ) -> bytes:
        return await stream.receive(timeout, size)

    def tls_context(self, https: bool) -> ssl.SSLContext | None:
        """The context of a :class:`~mongo_sansio.client.runtime.StartTls`: the client's (None:
        no TLS), or for ``https`` one verifying with the system's CAs (made on first use)."""
        if not https:
            return self._ssl_context
        if self._https_context is None:
            self._https_context = make_https_context()
        return self._https_context

    def close_stream(self, stream: AsyncStream, /) -> None:
        """Close at once; a task blocked on ``stream`` wakes (end of stream or NetworkError)."""
        stream.close()

    async def resolve(self, question: Any) -> Any:
        """Answer a DNS question (SRV polling) with the client's resolver."""
        if self._resolver is None:
            self._resolver = self.default_resolver()
        return await self._resolver.ask(question)

    def default_resolver(self) -> Any:
        raise NotImplementedError
