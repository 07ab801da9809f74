"""The client's connections per server: which are idle, which are in use, which must close.

Theory of operation
-------------------
:class:`ConnectionSets` keeps bookkeeping only; the connections themselves are the adapter's
objects (a socket and its :class:`~mongo_sansio.connection.Connection` machine), held here as
opaque hashable handles.  It decides which idle connection a checkout gets (the most recently
used: its socket is the least likely to have been dropped by a firewall), when an idle one has
perished (older than maxIdleTimeMS), and which connections must be closed after SDAM cleared a
server's pool (each connection remembers the pool generation it was opened in; a clear bumps
it) or removed the server.

This is deliberately simpler than the CMAP pool machine (:mod:`mongo_sansio.cmap`): no wait
queue, no maxConnecting, no background minPoolSize.  A checkout never waits -- with no idle
connection the adapter opens a new one -- and ``maxPoolSize`` bounds only how many idle
connections are kept per server.

Inputs: :meth:`~ConnectionSets.add`, :meth:`~ConnectionSets.check_out`,
:meth:`~ConnectionSets.check_in`, :meth:`~ConnectionSets.forget`,
:meth:`~ConnectionSets.clear`, :meth:`~ConnectionSets.remove`, :meth:`~ConnectionSets.close`
(``now`` is monotonic seconds).
Outputs: the connection a checkout gets (or None: open one), whether a checked-in connection
is kept, and the connections the adapter must close (:meth:`~ConnectionSets.take_to_close`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Generic, TypeVar

import attrs

from mongo_sansio.connection import ConnectionDescription
from mongo_sansio.errors import LocalProtocolError
from mongo_sansio.sdam.description import Address

__all__ = ["ConnectionSets", "ConnectionRecord"]

C = TypeVar("C", bound=Hashable)


@attrs.define
class ConnectionRecord:
    """What the sets know of one live connection."""

    address: Address
    generation: int
    description: ConnectionDescription
    idle_since: float | None = None  # None while checked out


class ConnectionSets(Generic[C]):
    """Idle and in-use connections per server address (see the module docstring).

    ``max_idle_time`` (seconds, None for no limit) makes idle connections perish;
    ``max_idle_per_server`` (0 for no limit) bounds how many idle ones a server keeps.
    """

    def __init__(self, *, max_idle_time: float | None = None, max_idle_per_server: int = 0):
        self._max_idle_time = max_idle_time
        self._max_idle_per_server = max_idle_per_server
        self._records: dict[C, ConnectionRecord] = {}
        self._idle: dict[Address, list[C]] = {}
        self._generations: dict[Address, int] = {}
        self._to_close: list[C] = []
        self._closed = False

    # -- what the owner may look at -----------------------------------------------------------

    def generation(self, address: Address) -> int:
        return self._generations.get(address, 0)

    def record(self, connection: C) -> ConnectionRecord | None:
        return self._records.get(connection)

    def idle_count(self, address: Address) -> int:
        return len(self._idle.get(address, ()))

    def in_use_counts(self) -> Mapping[Address, int]:
        """How many connections to each server are checked out (selection's operationCount)."""
        counts: dict[Address, int] = {}
        for record in self._records.values():
            if record.idle_since is None:
                counts[record.address] = counts.get(record.address, 0) + 1
        return counts

    @property
    def closed(self) -> bool:
        return self._closed

    # -- inputs -------------------------------------------------------------------------------

    def add(
        self,
        address: Address,
        connection: C,
        description: ConnectionDescription,
        *,
        now: float,
        idle: bool,
    ) -> None:
        """A connection to ``address`` was established; ``idle`` puts it straight in the idle
        set, otherwise it counts as checked out.  After :meth:`close` it is queued to close."""
        if connection in self._records:
            raise LocalProtocolError(f"connection {connection!r} was added twice")
        if self._closed or (idle and address not in self._generations):
            self._to_close.append(connection)
            return
        record = ConnectionRecord(address, self.generation(address), description)
        self._records[connection] = record
        if idle:
            self._make_idle(connection, record, now)

    def check_out(self, address: Address, now: float) -> C | None:
        """The most recently used idle connection to ``address`` that has not perished, or
        None (the adapter opens a new one).  Perished ones are queued to close."""
        idle = self._idle.get(address)
        while idle:
            connection = idle.pop()
            record = self._records[connection]
            since = record.idle_since if record.idle_since is not None else now
            if self._max_idle_time is not None and now - since > self._max_idle_time:
                self._discard(connection)
                continue
            record.idle_since = None
            return connection
        return None

    def check_in(self, connection: C, now: float) -> bool:
        """Return a checked-out connection.  False means it is no longer wanted (its server's
        pool was cleared since it was opened, the server left the topology, the client closed,
        or enough idle connections are kept): the adapter closes it."""
        record = self._records.get(connection)
        if record is None:
            return False  # forgotten or discarded meanwhile
        if record.idle_since is not None:
            raise LocalProtocolError(f"connection {connection!r} was checked in twice")
        stale = record.generation != self.generation(record.address)
        full = (
            self._max_idle_per_server > 0
            and self.idle_count(record.address) >= self._max_idle_per_server
        )
        if self._closed or stale or full or record.address not in self._generations:
            del self._records[connection]
            return False
        self._make_idle(connection, record, now)
        return True

    def forget(self, connection: C) -> None:
        """The adapter closed ``connection`` itself (its I/O failed).  Idempotent."""
        record = self._records.pop(connection, None)
        if record is not None and record.idle_since is not None:
            self._idle[record.address].remove(connection)

    def discard(self, connection: C) -> None:
        """Queue ``connection`` to be closed by the adapter (and forget it)."""
        self._discard(connection)

    def track(self, address: Address) -> None:
        """Start keeping connections to ``address`` (a server in the topology)."""
        self._generations.setdefault(address, 0)

    def clear(self, address: Address) -> None:
        """SDAM cleared the pool of ``address``: its idle connections close now, those in use
        when they come back."""
        if address in self._generations:
            self._generations[address] += 1
        for connection in self._idle.pop(address, []):
            self._discard(connection)

    def remove(self, address: Address) -> None:
        """``address`` left the topology: its connections close (in-use ones on check-in)."""
        self.clear(address)
        self._generations.pop(address, None)

    def close(self) -> None:
        """The client closes: every idle connection closes, later check-ins are refused."""
        self._closed = True
        for address in list(self._idle):
            for connection in self._idle.pop(address):
                self._discard(connection)

    def take_to_close(self) -> list[C]:
        """The connections the adapter must close now (each is handed out once)."""
        out, self._to_close = self._to_close, []
        return out

    # -- internals ------------------------------------------------------------------------------

    def _make_idle(self, connection: C, record: ConnectionRecord, now: float) -> None:
        record.idle_since = now
        self._idle.setdefault(record.address, []).append(connection)

    def _discard(self, connection: C) -> None:
        self._records.pop(connection, None)
        self._to_close.append(connection)
