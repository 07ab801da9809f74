"""The pool's books: its connections, waiters, generations and output queue.

:class:`PoolLedger` holds every record and counter of a pool and the primitive moves that
change them (open a connection, close one, hand one to a waiter, fail a waiter), each of which
also queues the events and actions that announce it.  It decides nothing: which waiter is
served, when the pool clears or a waiter times out is :class:`~mongo_sansio.cmap.pool.Pool`'s
policy, built on these moves.  Keeping every count change in one place is what keeps the
invariants (total = available + pending + in use; every ConnectionClosed with its
CloseConnection; one answer per waiter) easy to check.

Inputs: none from outside (the pool calls it).  Outputs: the queue behind
``next_output()`` / ``drain_outputs()``, plus read-only counters for adapters and tests.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable

from mongo_sansio.bson.objectid import ObjectId
from mongo_sansio.cmap.actions import (
    CloseConnection,
    FailWaiter,
    GiveConnection,
    OpenConnection,
    PoolAction,
    PooledConnection,
)
from mongo_sansio.cmap.errors import (
    ConnectionStateError,
    PoolMisuseError,
    UnknownConnectionError,
    WaitQueueTimeoutError,
)
from mongo_sansio.cmap.events import (
    CheckOutFailedReason,
    ConnectionCheckedOut,
    ConnectionCheckOutFailed,
    ConnectionClosed,
    ConnectionClosedReason,
    ConnectionCreated,
    PoolEvent,
)
from mongo_sansio.cmap.options import PoolOptions
from mongo_sansio.cmap.states import (
    CheckoutPurpose,
    ConnectionRecord,
    ConnState,
    PoolState,
    WaiterRecord,
    WaiterStage,
)
from mongo_sansio.errors import ConfigurationError

__all__ = ["PoolLedger", "Output", "check_now"]

Output = PoolEvent | PoolAction


def check_now(now: object) -> None:
    if not isinstance(now, int | float) or isinstance(now, bool) or math.isnan(now):
        raise PoolMisuseError(f"now must be a number of seconds, not {now!r}")


class PoolLedger:
    """Records, counters and primitive moves of a pool (see the module docstring)."""

    def __init__(
        self, address: str, options: PoolOptions | None = None, *, events: bool = True
    ) -> None:
        if not isinstance(address, str) or not address:
            raise ConfigurationError(f"a pool needs a server address, not {address!r}")
        self.address = address
        # False: no monitoring events are queued, only actions (nobody listens: the three
        # events of every check-out and check-in would be built to be dropped)
        self.events = events
        self.options = options if options is not None else PoolOptions()
        self._state = PoolState.PAUSED
        self._generation = 0
        self._services: dict[ObjectId, list[int]] = {}  # serviceId -> [generation, connections]
        self._conns: dict[int, ConnectionRecord] = {}
        self._available: deque[int] = deque()  # oldest check-in on the left
        self._pending = 0
        self._unowned: dict[int, None] = {}  # pending background connections, oldest first
        self._queue: dict[int, WaiterRecord] = {}  # the wait queue, FIFO
        self._attached: dict[int, WaiterRecord] = {}  # waiters tied to one pending connection
        self._held: dict[int, int] = {}  # waiter -> the connection it was given, while in use
        self._deadlines: list[tuple[float, int]] = []  # heap of (deadline, waiter), lazy
        self._next_connection_id = 1
        self._next_waiter = 1
        self._populate_not_before = -math.inf
        self._clear_cause: BaseException | None = None
        self._token = object()
        self._max_idle = self.options.max_idle_time_ms / 1000
        self._out: deque[Output] = deque()

    # -- outputs and introspection ------------------------------------------------------------

    def next_output(self) -> Output | None:
        """The oldest event or action not yet pulled, or None."""
        return self._out.popleft() if self._out else None

    def drain_outputs(self) -> list[Output]:
        """Every event and action not yet pulled, oldest first."""
        if not self._out:
            return []  # (the usual case after a check-in with nobody listening)
        out = list(self._out)
        self._out.clear()
        return out

    @property
    def state(self) -> PoolState:
        return self._state

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def total_connection_count(self) -> int:
        return len(self._conns)

    @property
    def available_connection_count(self) -> int:
        return len(self._available)

    @property
    def pending_connection_count(self) -> int:
        return self._pending

    @property
    def in_use_connection_count(self) -> int:
        return len(self._conns) - len(self._available) - self._pending

    @property
    def wait_queue_length(self) -> int:
        claimed = sum(1 for w in self._attached.values() if w.stage is WaiterStage.CLAIMED)
        return len(self._queue) + claimed

    def service_generation(self, service_id: ObjectId) -> int:
        entry = self._services.get(service_id)
        return entry[0] if entry else 0

    def service_connection_count(self, service_id: ObjectId) -> int:
        entry = self._services.get(service_id)
        return entry[1] if entry else 0

    def in_use_by_purpose(self) -> dict[CheckoutPurpose, int]:
        counts = dict.fromkeys(CheckoutPurpose, 0)
        for conn in self._conns.values():
            if conn.state is ConnState.IN_USE:
                counts[conn.purpose] += 1
        return counts

    def is_stale(self, connection: PooledConnection) -> bool:
        """Whether a checked-out connection is stale (cleared or interrupted since check-out)."""
        conn = self._checked_out(connection)
        return conn.interrupted or self._is_stale(conn)

    # -- primitive moves: every change to the books goes through these ------------------

    def _emit(self, output: Output) -> None:
        if self.events or not isinstance(output, PoolEvent):
            self._out.append(output)

    def _fail(
        self,
        waiter: int,
        started: float,
        now: float,
        reason: CheckOutFailedReason,
        error: BaseException,
    ) -> None:
        self._emit(
            ConnectionCheckOutFailed(
                address=self.address,
                reason=reason,
                duration=max(0.0, now - started),
                error=error,
            )
        )
        self._emit(FailWaiter(address=self.address, waiter=waiter, error=error))

    def _handle(self, conn: ConnectionRecord) -> PooledConnection:
        assert conn.owner is not None
        return PooledConnection(
            address=self.address,
            connection_id=conn.id,
            generation=conn.generation,
            service_id=conn.service_id,
            waiter=conn.owner,
            pool_token=self._token,
        )

    def _checked_out(self, connection: PooledConnection) -> ConnectionRecord:
        if not isinstance(connection, PooledConnection) or connection.pool_token is not self._token:
            raise UnknownConnectionError(f"{connection!r} was not created by this pool")
        conn = self._conns.get(connection.connection_id)
        if conn is None or conn.state is not ConnState.IN_USE or conn.owner != connection.waiter:
            raise ConnectionStateError(
                f"connection {connection.connection_id} is not checked out under this handle"
                " (checked in twice?)"
            )
        return conn

    def _pending_connection(self, connection_id: int) -> ConnectionRecord | None:
        if (
            not isinstance(connection_id, int)
            or isinstance(connection_id, bool)
            or not 1 <= connection_id < self._next_connection_id
        ):
            raise UnknownConnectionError(f"connection id {connection_id!r} was never issued")
        conn = self._conns.get(connection_id)
        if conn is None:  # closed (interrupted, pool closed) while being opened
            return None
        if conn.state is not ConnState.PENDING:
            raise ConnectionStateError(
                f"connection {connection_id} is {conn.state.value}, not being established"
            )
        return conn

    def _is_stale(self, conn: ConnectionRecord) -> bool:
        if not self.options.load_balanced:
            return conn.generation != self._generation
        if conn.service_id is None:  # pending: its generation comes with its serviceId
            return False
        entry = self._services.get(conn.service_id)
        return entry is None or conn.generation != entry[0]

    def _is_waiting(self, waiter: int) -> bool:
        """The waiter's deadline still applies: it is queued, it claimed a background
        connection, or its own connection is being opened and its deadline bounds that too."""
        if waiter in self._queue:
            return True
        w = self._attached.get(waiter)
        return w is not None and (
            w.stage is WaiterStage.CLAIMED
            or (w.stage is WaiterStage.ESTABLISHING and w.bounds_opening)
        )

    def _may_open(self) -> bool:
        limit = self.options.max_pool_size
        return (not limit or len(self._conns) < limit) and (
            self._pending < self.options.max_connecting
        )

    def _wants_population(self) -> bool:
        return (
            self._state is PoolState.READY
            and len(self._conns) < self.options.min_pool_size
            and self._may_open()
        )

    def _perished(self, conn: ConnectionRecord, now: float) -> ConnectionClosedReason | None:
        """Why an available connection may no longer be handed out (stale, idle too long)."""
        if self._is_stale(conn):
            return ConnectionClosedReason.STALE
        if self._max_idle and now >= conn.available_since + self._max_idle:
            return ConnectionClosedReason.IDLE
        return None

    def _take_available(self, now: float) -> ConnectionRecord | None:
        while self._available:
            conn = self._conns[self._available.pop()]
            reason = self._perished(conn, now)
            if reason is None:
                return conn
            self._close(conn, reason)
        return None

    def _claimable(self) -> ConnectionRecord | None:
        for connection_id in self._unowned:
            conn = self._conns[connection_id]
            if self.options.load_balanced or conn.generation == self._generation:
                return conn
        return None

    def _open(self, now: float, owner: int | None) -> ConnectionRecord:
        conn = ConnectionRecord(
            id=self._next_connection_id, generation=self._generation, created_at=now, owner=owner
        )
        self._next_connection_id += 1
        self._conns[conn.id] = conn
        self._pending += 1
        self._emit(ConnectionCreated(address=self.address, connection_id=conn.id))
        self._emit(OpenConnection(address=self.address, connection_id=conn.id))
        return conn

    def _hand_over(self, w: WaiterRecord, conn: ConnectionRecord, now: float) -> None:
        handle = self._take(w.id, conn, w.purpose)
        if self.events:
            self._emit(
                ConnectionCheckedOut(
                    address=self.address, connection_id=conn.id, duration=max(0.0, now - w.started)
                )
            )
        self._emit(GiveConnection(address=self.address, waiter=w.id, connection=handle))

    def _take(
        self, waiter: int, conn: ConnectionRecord, purpose: CheckoutPurpose
    ) -> PooledConnection:
        """Put ``conn`` in use by ``waiter``; its handle."""
        conn.state = ConnState.IN_USE
        conn.owner = waiter
        conn.purpose = purpose
        self._held[waiter] = conn.id
        return self._handle(conn)

    def _detach(self, w: WaiterRecord) -> None:
        """A waiter lets go of the pending connection it was tied to: keep it for the pool."""
        assert w.connection_id is not None
        conn = self._conns[w.connection_id]
        conn.owner = None
        self._unowned[conn.id] = None

    def _close(
        self,
        conn: ConnectionRecord,
        reason: ConnectionClosedReason,
        error: BaseException | None = None,
    ) -> None:
        """Forget a connection (already out of the available deque) and say so."""
        del self._conns[conn.id]
        if conn.state is ConnState.PENDING:
            self._pending -= 1
            self._unowned.pop(conn.id, None)
        elif conn.service_id is not None:
            entry = self._services[conn.service_id]
            entry[1] -= 1
            if not entry[1]:
                del self._services[conn.service_id]
        self._emit(
            ConnectionClosed(
                address=self.address, connection_id=conn.id, reason=reason, error=error
            )
        )
        self._emit(CloseConnection(address=self.address, connection_id=conn.id, reason=reason))

    def _close_available(
        self, reason: ConnectionClosedReason, which: Callable[[ConnectionRecord], bool]
    ) -> None:
        closing = [self._conns[i] for i in self._available if which(self._conns[i])]
        if closing:
            self._available = deque(i for i in self._available if not which(self._conns[i]))
            for conn in closing:
                self._close(conn, reason)

    def _opening_timeout_error(self) -> WaitQueueTimeoutError:
        return WaitQueueTimeoutError(
            self.address,
            "Timed out while checking out a connection from connection pool: the operation's"
            " time limit (timeoutMS) ran out while a new connection was being established"
            " for it (the connection goes on opening for the pool, within connectTimeoutMS)",
        )

    def _timeout_error(self) -> WaitQueueTimeoutError:
        if not self.options.load_balanced:
            return WaitQueueTimeoutError(self.address)
        counts = self.in_use_by_purpose()
        return WaitQueueTimeoutError(
            self.address,
            "Timeout waiting for connection from the connection pool."
            f" maxPoolSize: {self.options.max_pool_size},"
            f" connections in use by cursors: {counts[CheckoutPurpose.CURSOR]},"
            f" connections in use by transactions: {counts[CheckoutPurpose.TRANSACTION]},"
            f" connections in use by other operations: {counts[CheckoutPurpose.OTHER]}",
        )
