"""The half of an asynchronous runtime that asyncio and trio share: using a stream.

The asyncio and trio transports (:mod:`mongo_sansio.transports.asyncio_stream`,
:mod:`~mongo_sansio.transports.trio_stream`) give streams of one shape -- ``await
send_all(buffers, timeout)``, ``await receive(timeout)``, a synchronous ``close()`` that wakes a
blocked reader -- so sending, receiving, closing and answering DNS questions are written once
here; each runtime adds how a stream is opened, its tasks, events and sleep.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

__all__ = ["AsyncStreams", "AsyncStream"]

Buffer = bytes | bytearray | memoryview


class AsyncStream(Protocol):
    async def send_all(self, buffers: Sequence[Buffer], timeout: float | None) -> None: ...
    async def receive(self, timeout: float | None) -> bytes: ...
    def close(self) -> None: ...


class AsyncStreams:
    """Stream and DNS primitives; ``resolver`` (an object with ``async ask(question)``)
    answers SRV polling, else :meth:`default_resolver` made on first use."""

    def __init__(self, resolver: Any = None) -> None:
        self._resolver = resolver

    async def send_all(
        self, stream: AsyncStream, buffers: Sequence[Buffer], timeout: float | None
    ) -> None:
        await stream.send_all(buffers, timeout)

    async def receive(self, stream: AsyncStream, timeout: float | None) -> bytes:
        return await stream.receive(timeout)

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
