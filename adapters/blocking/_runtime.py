"""The blocking runtime: threads, blocking sockets and ``time.monotonic``.

What :class:`~mongo_sansio.adapters._sync.SyncInterpreter` needs, and nothing else: streams
from :mod:`mongo_sansio.transports.blocking` (each read and write bounded by the time the
interpreter computed from the flow's deadline), ``threading.Event`` to wait on, daemon
threads for background tasks (remembered, so that :meth:`ThreadRuntime.join` can make sure
none is left after the client closed), one re-entrant lock.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from mongo_sansio.client.runtime import RECEIVE_SIZE

if TYPE_CHECKING:
    from transports.blocking import BlockingStream, make_https_context, open_stream, start_tls
else:
    from mongo_sansio.transports.blocking import (
        BlockingStream,
        make_https_context,
        open_stream,
        start_tls,
    )

__all__ = ["ThreadRuntime"]

Buffer = bytes | bytearray | memoryview


class ThreadRuntime:
    """Threads and blocking sockets (see the module docstring)."""

    def __init__(self, ssl_context: ssl.SSLContext | None, resolver: Any = None) -> None:
        self.lock = threading.RLock()
        self._resolver = resolver
        self._ssl_context = ssl_context
        self._https_context: ssl.SSLContext | None = None
        self._threads: set[threading.Thread] = set()
        self._threads_lock = threading.Lock()
        # streams some thread is reading or writing (how many), and those of them whose
        # close waits for that thread (see close_stream)
        self._busy: dict[BlockingStream, int] = {}
        self._close_when_idle: set[BlockingStream] = set()
        self._streams_lock = threading.Lock()

    monotonic = staticmethod(time.monotonic)
    sleep = staticmethod(time.sleep)

    def event(self) -> threading.Event:
        return threading.Event()

    def in_thread(self, function: Callable[[Any], Any], argument: Any) -> Any:
        """``function(argument)``, blocking I/O (an OIDC token file or metadata request):
        this thread may block."""
        return function(argument)

    def resolve(self, question: Any) -> Any:
        """Answer a DNS question (SRV polling) with the client's resolver."""
        if self._resolver is None:
            if TYPE_CHECKING:
                from transports.dns import BlockingResolver
            else:  # imported on first use: dnspython costs a sixth of the client's import time
                from mongo_sansio.transports.dns import BlockingResolver
            self._resolver = BlockingResolver()
        return self._resolver.ask(question)

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

    def open_stream(
        self, address: tuple[str, int], timeout: float | None, tls: bool = True
    ) -> BlockingStream:
        context = self._ssl_context if tls else None
        return open_stream(address, connect_timeout=timeout, socket_timeout=None, ssl_context=context)

    def start_tls(
        self, stream: BlockingStream, address: tuple[str, int], timeout: float | None, https: bool
    ) -> BlockingStream:
        if https:
            if self._https_context is None:
                self._https_context = make_https_context()
            context: ssl.SSLContext | None = self._https_context
        else:
            context = self._ssl_context
        if context is None:
            return stream
        return start_tls(stream, context, address, timeout=timeout)

    def send_all(
        self, stream: BlockingStream, buffers: Sequence[Buffer], timeout: float | None
    ) -> None:
        self._use(stream, timeout, stream.send_all, buffers)

    def receive(
        self, stream: BlockingStream, timeout: float | None, size: int = RECEIVE_SIZE
    ) -> bytes:
        data: bytes = self._use(stream, timeout, stream.recv, size)
        return data

    def close_stream(self, stream: BlockingStream) -> None:
        """Close ``stream`` at once, also while another thread reads or writes it.

        That thread holds the socket's file descriptor, not a reference the kernel counts:
        closed under it, the number can be given to a new socket (another connection of this
        process) before the thread's next system call, which then reads or waits on the wrong
        connection.  So a busy stream is only shut down here (which wakes the thread with an
        error or the end of the stream), and closed by the last thread that leaves it."""
        with self._streams_lock:
            if stream not in self._busy:
                stream.close()
                return
            self._close_when_idle.add(stream)
            _shut_down(stream)

    def _use(
        self, stream: BlockingStream, timeout: float | None, action: Callable[[Any], Any], arg: Any
    ) -> Any:
        """``action(arg)`` on ``stream`` under ``timeout``, the stream counted busy meanwhile
        (see :meth:`close_stream`).  (One method for both directions, the counting written
        inline: this runs twice per command.)"""
        busy = self._busy
        with self._streams_lock:
            busy[stream] = busy.get(stream, 0) + 1
        try:
            stream.set_timeout(timeout)
            return action(arg)
        finally:
            with self._streams_lock:
                count = busy.pop(stream) - 1
                if count:
                    busy[stream] = count
                elif stream in self._close_when_idle:
                    self._close_when_idle.discard(stream)
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


def _shut_down(stream: BlockingStream) -> None:
    """Shut ``stream``'s socket down in both directions, keeping its file descriptor: a thread
    blocked on it wakes up (the end of the stream, or an error).  The plain socket's method is
    used on TLS sockets too, so that the TLS object a reading thread uses stays in place."""
    sock = getattr(stream, "_sock", None)  # transports.blocking has no public way to do this
    if sock is None:
        stream.close()
        return
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass
