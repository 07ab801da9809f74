"""The blocking runtime: threads, blocking sockets and ``time.monotonic``.

What :class:`~mongo_sansio.adapters._sync.SyncInterpreter` needs, and nothing else: streams
from :mod:`mongo_sansio.transports.blocking` (each read and write bounded by the time the
interpreter computed from the flow's deadline), ``threading.Event`` to wait on, daemon
threads for background tasks (remembered, so that :meth:`ThreadRuntime.join` can make sure
none is left after the client closed), one re-entrant lock.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transports.blocking import BlockingStream, open_stream
else:
    from mongo_sansio.transports.blocking import BlockingStream, open_stream

__all__ = ["ThreadRuntime"]

Buffer = bytes | bytearray | memoryview


class ThreadRuntime:
    """Threads and blocking sockets (see the module docstring)."""

    def __init__(self, ssl_context: ssl.SSLContext | None) -> None:
        self.lock = threading.RLock()
        self._ssl_context = ssl_context
        self._threads: set[threading.Thread] = set()
        self._threads_lock = threading.Lock()

    monotonic = staticmethod(time.monotonic)
    sleep = staticmethod(time.sleep)

    def event(self) -> threading.Event:
        return threading.Event()

    def spawn(self, target: Callable[[], None], name: str) -> None:
        def run() -> None:
            try:
                target()
            finally:
                with self._threads_lock:
                    self._threads.discard(thread)

        thread = threading.Thread(target=run, name=f"mongo-sansio {name}", daemon=True)
        with self._threads_lock:
            self._threads.add(thread)
        thread.start()

    def open_stream(self, address: tuple[str, int], timeout: float | None) -> BlockingStream:
        return open_stream(
            address, connect_timeout=timeout, socket_timeout=None, ssl_context=self._ssl_context
        )

    def send_all(
        self, stream: BlockingStream, buffers: Sequence[Buffer], timeout: float | None
    ) -> None:
        stream.set_timeout(timeout)
        stream.send_all(buffers)

    def receive(self, stream: BlockingStream, timeout: float | None) -> bytes:
        stream.set_timeout(timeout)
        return stream.recv()

    def close_stream(self, stream: BlockingStream) -> None:
        stream.close()

    def join(self, timeout: float) -> list[str]:
        """Wait up to ``timeout`` seconds for the background threads to end; returns the names
        of those still running."""
        deadline = time.monotonic() + timeout
        while True:
            with self._threads_lock:
                alive = [t for t in self._threads if t.is_alive()]
            current = threading.current_thread()
            alive = [t for t in alive if t is not current]
            if not alive:
                return []
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return [t.name for t in alive]
            alive[0].join(min(remaining, 0.05))
