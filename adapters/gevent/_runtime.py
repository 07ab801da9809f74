"""The gevent runtime: greenlets, gevent's cooperative sockets and ``time.monotonic``.

What :class:`~mongo_sansio.adapters._sync.SyncInterpreter` needs, taken from gevent itself so
that the client cooperates with the hub whether or not the process is monkey-patched: streams
of :mod:`mongo_sansio.transports.blocking` connected with :mod:`gevent.socket` (its
``getaddrinfo`` resolves through gevent's resolver) and, for TLS, wrapped by a
:class:`gevent.ssl.SSLContext`; :class:`gevent.event.Event` to wait on; a greenlet per
background task (remembered, so that :meth:`GeventRuntime.join` can make sure none is left
after the client closed); :func:`gevent.sleep`; SRV polling's DNS questions answered by the
blocking resolver in the hub's thread pool.

No lock.  Greenlets of one hub never run at once, and a step of a flow does no I/O, so it
never switches: the core needs no guard, and a no-op context stands in for the lock.  The
same fact makes killing safe: a greenlet killed (``greenlet.kill``, ``gevent.Timeout``,
``KeyboardInterrupt``) is interrupted inside a primitive -- a read, a write, a wait, a sleep
-- never in the middle of a step, and the interpreter closes its flow, which returns what it
held.  (Monitoring listeners run inside steps: under gevent they must not block.)

Closing a stream another greenlet waits on is safe at once: gevent wakes that greenlet with an
error before it makes another system call on the descriptor (the thread runtime must defer
such a close).  A client belongs to the thread whose hub runs it.

After ``os.fork()`` (:mod:`.._fork`), the parent's greenlets are still scheduled in the child:
there the runtime prepares the hub for the new process (``gevent.reinit``, as
``gevent.fork`` does; the event loop's descriptors are the parent's otherwise), forgets every
stream without a word to the server, and kills every greenlet before it runs again.
"""

from __future__ import annotations

import contextlib
import ssl
import time
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import gevent
import gevent.event
import gevent.socket
import gevent.ssl
from gevent import Greenlet, GreenletExit

from mongo_sansio.client.runtime import RECEIVE_SIZE

from .. import _fork
from .._sync import SyncEvent

if TYPE_CHECKING:
    from transports.blocking import BlockingStream, make_https_context, open_stream, start_tls
else:
    from mongo_sansio.transports.blocking import (
        BlockingStream,
        make_https_context,
        open_stream,
        start_tls,
    )

__all__ = ["GeventRuntime"]

Buffer = bytes | bytearray | memoryview


class GeventRuntime:
    """Greenlets and gevent's sockets (see the module docstring)."""

    #: what stops a background task on purpose: the interpreter does not report it as a bug
    task_stopped = GreenletExit

    def __init__(self, ssl_context: ssl.SSLContext | None, resolver: Any = None) -> None:
        self.lock = contextlib.nullcontext()
        self._ssl_context = ssl_context
        self._https_context: ssl.SSLContext | None = None
        self._resolver = resolver
        self._greenlets: set[Greenlet[[], None]] = set()
        self._streams: weakref.WeakSet[BlockingStream] = weakref.WeakSet()
        _fork.watch(self)

    monotonic = staticmethod(time.monotonic)

    def sleep(self, seconds: float) -> None:
        gevent.sleep(seconds)

    def event(self) -> SyncEvent:
        # (the stubs overload wait() by its timeout, which the protocol's one signature lacks)
        return cast(SyncEvent, gevent.event.Event())

    def in_thread(self, function: Callable[[Any], Any], argument: Any) -> Any:
        """``function(argument)``, blocking I/O (an OIDC token file or metadata request), in
        the hub's thread pool: it would stop the hub otherwise."""
        return gevent.get_hub().threadpool.apply(function, (argument,))

    def resolve(self, question: Any) -> Any:
        """Answer a DNS question (SRV polling) with the client's resolver, in the hub's
        thread pool (dnspython's blocking sockets would stop the hub)."""
        if self._resolver is None:
            if TYPE_CHECKING:
                from transports.dns import BlockingResolver
            else:  # imported on first use: dnspython costs a sixth of the client's import time
                from mongo_sansio.transports.dns import BlockingResolver
            self._resolver = BlockingResolver()
        return gevent.get_hub().threadpool.apply(self._resolver.ask, (question,))

    def spawn(self, target: Callable[[], None], name: str) -> None:
        greenlet: Greenlet[[], None] = Greenlet(target)
        greenlet.name = f"mongo-sansio {name}"
        self._greenlets.add(greenlet)
        greenlet.rawlink(self._greenlets.discard)
        greenlet.start()

    def open_stream(
        self, address: tuple[str, int], timeout: float | None, tls: bool = True
    ) -> BlockingStream:
        stream = open_stream(
            address,
            connect_timeout=timeout,
            socket_timeout=None,
            ssl_context=self._ssl_context if tls else None,
            sockets=gevent.socket,
        )
        self._streams.add(stream)
        return stream

    def start_tls(
        self, stream: BlockingStream, address: tuple[str, int], timeout: float | None, https: bool
    ) -> BlockingStream:
        if https:
            if self._https_context is None:
                self._https_context = make_https_context(gevent.ssl.SSLContext)
            context: ssl.SSLContext | None = self._https_context
        else:
            context = self._ssl_context
        if context is None:
            return stream
        self._streams.discard(stream)
        tls = start_tls(stream, context, address, timeout=timeout)
        self._streams.add(tls)
        return tls

    def send_all(
        self, stream: BlockingStream, buffers: Sequence[Buffer], timeout: float | None
    ) -> None:
        stream.set_timeout(timeout)
        stream.send_all(buffers)

    def receive(
        self, stream: BlockingStream, timeout: float | None, size: int = RECEIVE_SIZE
    ) -> bytes:
        stream.set_timeout(timeout)
        return stream.recv(size)

    def close_stream(self, stream: BlockingStream) -> None:
        """Close ``stream`` at once (see the module docstring)."""
        self._streams.discard(stream)
        stream.close()

    def join(self, timeout: float) -> list[str]:
        """Wait up to ``timeout`` seconds for the background greenlets to end; returns the
        names of those still running."""
        current = gevent.getcurrent()
        alive = [g for g in self._greenlets if g is not current and not g.dead]
        gevent.joinall(alive, timeout=timeout)
        return [g.name for g in alive if not g.dead]

    def after_fork_in_child(self) -> None:
        """In a forked child (see the module docstring): nothing here may switch."""
        gevent.reinit()  # when this thread has a hub: its event loop is the parent's
        for stream in list(self._streams):
            _fork.forget_stream(stream)
        self._streams.clear()
        for greenlet in list(self._greenlets):
            greenlet.kill(block=False)
