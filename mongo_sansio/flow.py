"""The vocabulary of operation flows: what a flow asks its adapter for, and what comes back.

A flow is a generator written once in the core (DESIGN.md, "Driving the machines").  It yields
one of the requests below, and the adapter (blocking, gevent, asyncio or trio) carries it out
and sends the result back with ``generator.send``.  The adapter decides nothing: it waits,
reads and writes.  When carrying out a request fails at the I/O level (refused, reset, closed,
timed out), the adapter throws :class:`~mongo_sansio.errors.NetworkError` (or
:class:`~mongo_sansio.errors.NetworkTimeout`) into the flow with ``generator.throw``, so the
flow decides what a failure means (retry, resume, mark the server unknown, raise).

A flow ends with ``return value`` (the adapter gets it from ``StopIteration.value``) or by
raising one of the library's errors, which the adapter lets propagate to the user.

=========================  =======================================================  ==========
request                    the adapter's answer (sent into the flow)                 I/O error
=========================  =======================================================  ==========
:class:`ConnectionCommand`  the reply document of the command, sent on the           thrown in
                           connection being established (handshake, auth)
:class:`SelectServer`      a :class:`ServerInfo` for a server that matches           --
:class:`RunCommand`        the reply document, ``ok: 0`` included (flows turn it     thrown in
                           into :class:`~mongo_sansio.errors.ServerError`)
:class:`MarkServerUnknown`  None (the adapter hands it to the client's core state)   --
:class:`GetContext`        the :class:`OperationContext` of the running operation    --
:class:`Now`               the monotonic time in seconds (float)                    --
:class:`Sleep`             None, after ``seconds`` have passed                      --
:class:`Random`            a random float in ``[0, 1)`` (backoff jitter)            --
=========================  =======================================================  ==========

Reply documents are plain mappings (``dict``); a flow never sees sockets or bytes.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any, TypeAlias, TypeVar

import attrs

from mongo_sansio.backpressure import MAX_RETRIES
from mongo_sansio.selection.read_preference import PRIMARY, ReadPreference

__all__ = [
    "ServerInfo",
    "ConnectionCommand",
    "SelectServer",
    "RunCommand",
    "MarkServerUnknown",
    "GetContext",
    "OperationContext",
    "TxnSlot",
    "Now",
    "Sleep",
    "Random",
    "Request",
    "Flow",
]


@attrs.frozen
class ServerInfo:
    """The server a flow was given: enough to build commands for it and to send more there.

    ``address`` is ``(host, port)``, or ``(path, 0)`` for a Unix socket.  ``max_wire_version``
    decides which command forms and error rules apply (e.g. the ResumableChangeStreamError
    label from 9 on).  ``is_writable`` is True for a primary, mongos or standalone.  The size
    limits are the server's hello values (write batching splits by them).
    """

    address: tuple[str, int]
    max_wire_version: int
    is_writable: bool = True
    max_bson_object_size: int = 16 * 1024 * 1024
    max_message_size_bytes: int = 48_000_000
    max_write_batch_size: int = 100_000
    supports_retryable_writes: bool = False
    """A replica set member or mongos that supports sessions: it accepts ``txnNumber``."""
    is_standalone: bool = False
    """A standalone server: it is never sent a ``$readPreference``."""
    is_mongos: bool = False
    """A mongos: a retry after any retryable error avoids it when another suits."""
    load_balanced: bool = False
    """A load balancer (load-balanced mode): cursors and transactions keep their connection."""


@attrs.frozen
class ConnectionCommand:
    """Run ``body`` against database ``db`` on the connection being established.

    ``op_query`` asks for the legacy OP_QUERY form (the first hello without Stable API or
    loadBalanced).  Used by the handshake and authentication flows only.
    """

    db: str
    body: Mapping[str, Any]
    op_query: bool = False


@attrs.frozen
class SelectServer:
    """Choose a server for an operation.  ``for_writes`` asks for a writable server whatever
    the read preference; ``deprioritized`` lists addresses to avoid when others suit."""

    read_preference: ReadPreference = PRIMARY
    for_writes: bool = False
    deprioritized: tuple[tuple[str, int], ...] = ()
    operation: str = ""
    """The command the server is selected for (server selection's log messages name it)."""


@attrs.frozen
class RunCommand:
    """Run ``body`` against database ``db`` on a connection to ``server``.

    ``body`` is complete except for what the connection adds itself (``$db``, Stable API
    fields, compression).  ``sequences`` become OP_MSG kind-1 sections.  ``timeout`` (seconds)
    replaces the socket timeout for this one exchange when set; a getMore that waits
    ``maxAwaitTimeMS`` uses it.
    """

    server: ServerInfo
    db: str
    body: Mapping[str, Any]
    sequences: Mapping[str, Sequence[Any]] | None = None
    timeout: float | None = None
    session: Any = attrs.field(default=None, eq=False)
    """The session to send with (a cursor's own); None: the operation's session."""
    txn: TxnSlot | None = attrs.field(default=None, eq=False)
    """A retryable write's transaction number holder (None: not a retryable write)."""


@attrs.define(eq=False)
class TxnSlot:
    """The ``txnNumber`` of one retryable write: drawn from the session when the write is
    first sent, the same on its retry."""

    number: int | None = None


@attrs.frozen
class GetContext:
    """Ask for the running operation's :class:`OperationContext`."""


@attrs.frozen
class OperationContext:
    """What an operation flow may need to know about the operation it runs in: its session
    (explicit, or the implicit one), whether the client retries reads and writes, and the
    operation's deadline (client-side operations timeout; None without one), and the client's
    backpressure settings (``maxAdaptiveRetries``, ``enableOverloadRetargeting``)."""

    session: Any = attrs.field(eq=False)
    retry_reads: bool = True
    retry_writes: bool = True
    deadline: float | None = None
    max_adaptive_retries: int = MAX_RETRIES
    overload_retargeting: bool = False

    @property
    def in_transaction(self) -> bool:
        return bool(self.session is not None and self.session.in_transaction)


@attrs.frozen
class MarkServerUnknown:
    """Tell the client's topology that ``address`` failed (a network error, or a state-change
    error such as NotWritablePrimary), so the next selection does not pick it blindly."""

    address: tuple[str, int]
    error: BaseException = attrs.field(eq=False)


@attrs.frozen
class Now:
    """Ask for the current monotonic time (seconds)."""


@attrs.frozen
class Sleep:
    """Wait ``seconds`` before going on."""

    seconds: float


@attrs.frozen
class Random:
    """Ask for a random float in ``[0, 1)`` (the jitter of a backoff)."""


Request: TypeAlias = (
    ConnectionCommand
    | SelectServer
    | RunCommand
    | MarkServerUnknown
    | GetContext
    | Now
    | Sleep
    | Random
)

T = TypeVar("T")

#: The type of a flow returning ``T``: ``Flow[T]`` (a generic alias of Generator).
Flow = Generator[Request, Any, T]
