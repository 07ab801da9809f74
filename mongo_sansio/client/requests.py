"""The client-internal requests: what the client core's own flows ask an adapter for.

Operation flows speak :mod:`mongo_sansio.flow`'s vocabulary.  Server selection, which the core
answers for them, needs two more things done on the network -- open a connection, and run a
hello on one the client already has -- and also uses :class:`~mongo_sansio.flow.Now` and
:class:`~mongo_sansio.flow.Sleep`.

=========================  ==================================================  =================
request                    the adapter's answer (sent into the flow)           on failure
=========================  ==================================================  =================
:class:`OpenConnection`    an :class:`Opened`: the new connection (open a       the error thrown
                           socket, then drive :func:`~mongo_sansio.connection.  in (NetworkError,
                           establish` on it), its description and the first     AuthenticationError,
                           hello's round-trip time                              ServerError...)
:class:`CheckConnection`   a :class:`CheckReply`: the reply document of          NetworkError or
                           ``body`` run against ``admin`` on ``connection``,     ProtocolError
                           and its round-trip time                              thrown in
:class:`~.flow.Now`        the monotonic time in seconds                        --
:class:`~.flow.Sleep`      None, after ``seconds``                              --
=========================  ==================================================  =================

The adapter closes a connection whose I/O failed (and tells the core with ``forget``) before
throwing the error in; it never decides anything else.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, Generic, TypeAlias, TypeVar

import attrs

from mongo_sansio.connection import ConnectionDescription
from mongo_sansio.flow import Now, Sleep

__all__ = ["OpenConnection", "Opened", "CheckConnection", "CheckReply", "ClientRequest"]

C = TypeVar("C", bound=Hashable)


@attrs.frozen
class OpenConnection:
    """Open and establish (handshake, authentication) a new connection to ``address``:
    ``(host, port)``, or ``(path, 0)`` for a Unix socket."""

    address: tuple[str, int]


@attrs.frozen
class Opened(Generic[C]):
    """An established connection: the adapter's handle, what its handshake said, and the
    round-trip time of its first hello (seconds)."""

    connection: C
    description: ConnectionDescription
    round_trip_time: float


@attrs.frozen
class CheckConnection(Generic[C]):
    """Run the hello ``body`` against ``admin`` on an idle ``connection`` (a server check)."""

    connection: C
    body: Mapping[str, Any]


@attrs.frozen
class CheckReply:
    """The reply to a :class:`CheckConnection` and its round-trip time (seconds)."""

    reply: Mapping[str, Any]
    round_trip_time: float


ClientRequest: TypeAlias = OpenConnection | CheckConnection[Any] | Now | Sleep
