"""The runtime seam: the only requests the client core's flows make of a runtime.

Every flow of the client (server selection, check-out, a command's exchange, a monitor's
check, opening a connection, the client's upkeep) is a generator in the core.  Underneath all
of them, a runtime carries out just the primitives below: waiting, reading and writing.  The
blocking, gevent, asyncio and trio adapters differ only in how they do these things; they
decide nothing.

=====================  ====================================================  ==============
request                the runtime's answer (sent into the flow)              on failure
=====================  ====================================================  ==============
:class:`OpenStream`    an opaque stream handle: a TCP (or Unix socket)        NetworkError /
                       connection to ``address``, TLS set up when the         NetworkTimeout
                       client's settings ask for it (and ``tls`` is True),    thrown in
                       before ``deadline``
:class:`StartTls`      a stream handle for TLS on top of ``stream`` (which    thrown in
                       it replaces), as the client's settings say (the same
                       handle back when they ask for none; ``https``: a
                       verifying context with the system's CAs instead)
:class:`SendAll`       None, once every buffer was written                    thrown in
:class:`Receive`       the next bytes that arrived (``b""`` at end of          thrown in
                       stream), waiting at most until ``deadline``
:class:`Wait`          True when ``signal`` fired, False when ``deadline``    --
                       passed first (never raises for the deadline)
:class:`~.flow.Now`    the monotonic time in seconds                          --
:class:`~.flow.Sleep`  None, after ``seconds``                                --
:class:`Resolve`       the :class:`~mongo_sansio.uri.seedlist.DnsAnswer` to     --
                       ``question`` (a ``DnsFailure`` for DNS trouble; SRV
                       polling of ``mongodb+srv`` clients only)
=====================  ====================================================  ==============

MONGODB-OIDC's token requests (:mod:`mongo_sansio.auth.oidc_providers`: call the user's
callback, read a token file, a metadata service's HTTP GET) are carried out by every runtime
too; their failures are answered as values, never raised.

Deadlines are absolute monotonic seconds (None: no limit).  A runtime that sees a deadline in
the past raises :class:`~mongo_sansio.errors.NetworkTimeout` into the flow at once, so one
deadline bounds a whole exchange however the peer trickles its bytes.

Besides these, a runtime gives the core two plain callables when it builds it: ``spawn(task,
name)`` starts a flow of primitives as a background task (a daemon thread, a greenlet, an
asyncio task, a task in the client's trio nursery), and ``close_stream(stream)`` closes a
stream at once, interrupting a read blocked on it elsewhere.  Both are synchronous on every
runtime, so the core can use them at any point, also while a flow is being closed.

Signals: a :class:`Signal` is the core's wake-up call.  The core fires it (a connection was
given to a waiter, the topology changed, a monitor must check now); a flow waiting on it with
:class:`Wait` resumes.  The runtime attaches a waker (e.g. ``threading.Event.set``) before it
waits and must check :attr:`Signal.fired` first, under the same exclusion that guards the core
(a lock for threads; nothing for a single-threaded event loop), so a wake-up can never be lost.

A spawned flow that raises is a bug in the core, not an operation failure: the runtime reports
it (e.g. on stderr) and carries on.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any, TypeAlias

import attrs

from mongo_sansio.flow import Now, Sleep

__all__ = [
    "Signal",
    "OpenStream",
    "StartTls",
    "SendAll",
    "Receive",
    "Wait",
    "Resolve",
    "Spawn",
    "Primitive",
    "Task",
]

Buffer: TypeAlias = bytes | bytearray | memoryview


class Signal:
    """A one-shot wake-up: fired once by the core, waited on by one flow at a time."""

    __slots__ = ("fired", "_waker", "name")

    def __init__(self, name: str = "") -> None:
        self.name = name
        self.fired = False
        self._waker: Callable[[], object] | None = None

    def fire(self) -> None:
        """Wake the waiting flow (idempotent)."""
        if self.fired:
            return
        self.fired = True
        waker, self._waker = self._waker, None
        if waker is not None:
            waker()

    def attach(self, waker: Callable[[], object]) -> None:
        """The runtime's way to be woken; call only while ``fired`` is False."""
        self._waker = waker

    def __repr__(self) -> str:
        return f"<Signal {self.name or id(self)} fired={self.fired}>"


@attrs.frozen
class OpenStream:
    """Open a byte stream to ``address`` (``(host, port)``, or ``(path, 0)`` for a Unix
    socket) within ``deadline``; TLS as the client's settings say."""

    address: tuple[str, int]
    deadline: float | None
    #: False: plain TCP whatever the client's settings (a SOCKS5 proxy, which TLS goes over
    #: with :class:`StartTls` once the proxy connected us; a plain HTTP endpoint)
    tls: bool = True


@attrs.frozen
class StartTls:
    """Set TLS up on ``stream`` (opened with ``tls=False``) for the server at ``address``
    (its host name is sent as SNI and checked) before ``deadline``.  With the client's TLS
    settings, or, when ``https`` is True, a context that verifies against the system's
    certificate authorities (an HTTPS endpoint, whatever the client's settings).  Answered
    with the new stream handle; on failure the stream is closed and the error thrown in."""

    stream: object = attrs.field(eq=False)
    address: tuple[str, int]
    deadline: float | None
    https: bool = False


@attrs.frozen
class SendAll:
    """Write ``buffers`` in order on ``stream`` before ``deadline``; answered with None, or,
    when ``receive`` is not 0, then read as :class:`Receive` of that ``size`` does (before the
    same deadline) and answered with what arrived.  (A command and the first read of its
    reply are one primitive: one round trip through the runtime instead of two.)"""

    stream: object = attrs.field(eq=False)
    buffers: Sequence[Buffer] = attrs.field(eq=False)
    deadline: float | None
    receive: int = 0


#: What a Receive reads at most when no larger reply is known to be under way.
RECEIVE_SIZE = 65536


@attrs.frozen
class Receive:
    """Read what arrives next on ``stream`` (``b""`` at its end), at most ``size`` bytes,
    before ``deadline``.  ``size`` is larger than :data:`RECEIVE_SIZE` when the rest of a
    large reply is known to be on its way: read in one piece, it is parsed where it lies."""

    stream: object = attrs.field(eq=False)
    deadline: float | None
    size: int = RECEIVE_SIZE


@attrs.frozen
class Wait:
    """Wait until ``signal`` fires (answer True) or ``deadline`` passes (answer False)."""

    signal: Signal = attrs.field(eq=False)
    deadline: float | None


@attrs.frozen
class Resolve:
    """Ask DNS ``question`` (a :class:`~mongo_sansio.uri.seedlist.DnsQuestion`); DNS trouble
    is answered as a ``DnsFailure`` value, never raised."""

    question: Any


Primitive: TypeAlias = OpenStream | StartTls | SendAll | Receive | Wait | Resolve | Now | Sleep

#: A flow made only of primitives: what the runtime runs, in the foreground or as a task.
Task: TypeAlias = Generator[Any, Any, Any]


@attrs.frozen
class Spawn:
    """A background task for the runtime's ``spawn``: ``flow`` named ``name``."""

    flow: Task = attrs.field(eq=False)
    name: str = ""
