"""The CMAP connection pool for one server address, as a pure state machine.

Theory of operation
-------------------
The pool owns bookkeeping, never sockets.  It decides which connections to open and close, who
gets which connection, and when a waiter gives up; its adapter opens sockets, runs handshakes,
parks and wakes tasks, and keeps one timer.  It must not know how waiting is done (threads,
greenlets, asyncio or trio tasks), what a handshake is, or what SDAM thinks of the server: an
adapter that sees a handshake fail asks SDAM first (which may ``clear`` this pool) and then
reports the failure here, which is why PoolCleared comes before that connection's
ConnectionClosed, as the specification's tests expect.

Inputs (methods; those that depend on time take ``now``, monotonic seconds):

* ``check_out(now, timeout=None, purpose=...)`` -> a waiter id; ``cancel(waiter, now)`` when the
  waiting task dies (it never leaks a slot: a pending connection it started is kept for the
  next waiter, a connection already given to it is checked back in).
* ``check_out_now(now)`` -> a connection's handle, or None: the check-out that needs no
  waiting (nobody listening, nobody queued, a live connection available) done at once,
  without a waiter id or a GiveConnection.
* ``connection_established(connection_id, now, service_id=None)`` and
  ``connection_failed(connection_id, now, error)``: results of ``OpenConnection``.
* ``check_in(connection, now, error=None)``; ``error`` says the connection is broken.
* ``ready(now)``, ``clear(now, service_id=None, interrupt_in_use_connections=False, cause=None)``,
  ``close(now)``.
* ``handle_timeout(now)`` at (or after) ``next_deadline()``: wait-queue timeouts, idle
  connections, and minPoolSize upkeep after a failed background connection.

Outputs, pulled in order with ``next_output()`` or ``drain_outputs()``: monitoring events
(:mod:`mongo_sansio.cmap.events`) to publish and actions (:mod:`mongo_sansio.cmap.actions`) to
carry out.  A pool made with ``events=False`` (nobody listens) queues the actions only.
Misuse (a connection checked in twice, an id never issued, a second result for one attempt)
raises a :class:`~mongo_sansio.cmap.errors.PoolMisuseError` before anything changes,
so the pool stays usable; a result for a connection the pool already closed is ignored (the
adapter cannot always stop an attempt in time).

Waiters
-------
A check-out enters the FIFO wait queue.  The head is served, in this order, by the most recently
checked-in live connection (perished ones met on the way are closed), by *claiming* a connection
the pool is opening in the background for minPoolSize, or by opening a new connection if
``maxPoolSize`` and ``maxConnecting`` allow; otherwise everybody waits.  A waiter whose
connection is being opened has left the queue: the wait-queue timeout no longer applies, and a
clear without interruption does not fail it (as the specification's check-out algorithm says).
A waiter that claimed a background connection is still waiting in the specification's sense.

The pool starts paused (SDAM readies it after a successful check; a load-balanced pool is
readied when the topology opens).  ``states.py`` holds the transition table; ``ledger.py`` the
records and the primitive moves this module's policy is built from.
"""

from __future__ import annotations

import heapq
import math

from mongo_sansio.bson.objectid import ObjectId
from mongo_sansio.cmap.actions import InterruptConnection, PooledConnection
from mongo_sansio.cmap.errors import (
    PoolClearedError,
    PoolClosedError,
    PoolMisuseError,
    UnknownWaiterError,
)
from mongo_sansio.cmap.events import (
    CheckOutFailedReason,
    ConnectionCheckedIn,
    ConnectionCheckOutFailed,
    ConnectionCheckOutStarted,
    ConnectionClosedReason,
    ConnectionReady,
    PoolCleared,
    PoolClosed,
    PoolCreated,
    PoolReady,
)
from mongo_sansio.cmap.ledger import Output, PoolLedger, check_now
from mongo_sansio.cmap.options import PoolOptions
from mongo_sansio.cmap.states import (
    CHECK_OUT_REFUSALS,
    TRANSITIONS,
    CheckoutPurpose,
    ConnState,
    PoolInput,
    PoolState,
    WaiterRecord,
    WaiterStage,
)

__all__ = [
    "Pool",
    "PoolState",
    "PoolInput",
    "CheckoutPurpose",
    "TRANSITIONS",
    "CHECK_OUT_REFUSALS",
    "Output",
]


class Pool(PoolLedger):
    """A connection pool for one server; see the module docstring for inputs and outputs."""

    def __init__(
        self, address: str, options: PoolOptions | None = None, *, events: bool = True
    ) -> None:
        super().__init__(address, options, events=events)
        self._emit(PoolCreated(address=address, options=self.options.non_default()))

    # -- check-out ----------------------------------------------------------------------------

    def check_out(
        self,
        now: float,
        *,
        timeout: float | None = None,
        purpose: CheckoutPurpose = CheckoutPurpose.OTHER,
    ) -> int:
        """Ask for a connection; returns the waiter id that GiveConnection/FailWaiter will name.

        ``timeout`` (seconds) replaces waitQueueTimeoutMS for this request (the timeout computed
        by client-side operations timeout); None uses the option, where 0 means no limit.  An
        explicit ``timeout`` bounds the whole check-out, the opening of a connection for it
        included (client-side operations timeout: establishment is blocking work of the
        operation); waitQueueTimeoutMS stops applying once a connection is being opened for
        the request (CMAP).  A request failed at its deadline while its connection is being
        opened lets go of it: the connection goes on opening for the pool.
        """
        check_now(now)
        if timeout is not None and (
            not isinstance(timeout, int | float) or isinstance(timeout, bool) or not timeout >= 0
        ):
            raise PoolMisuseError(f"timeout must be a non-negative number or None: {timeout!r}")
        if not isinstance(purpose, CheckoutPurpose):
            raise PoolMisuseError(f"purpose must be a CheckoutPurpose, not {purpose!r}")
        waiter = self._next_waiter
        self._next_waiter += 1
        if self.events:
            self._emit(ConnectionCheckOutStarted(address=self.address))
        refusal = CHECK_OUT_REFUSALS[self._state]
        if refusal is CheckOutFailedReason.POOL_CLOSED:
            self._fail(waiter, now, now, refusal, PoolClosedError(self.address))
            return waiter
        if refusal is not None:
            self._fail(waiter, now, now, refusal, PoolClearedError(self.address, self._clear_cause))
            return waiter
        bounds_opening = timeout is not None
        if timeout is None and self.options.wait_queue_timeout_ms:
            timeout = self.options.wait_queue_timeout_ms / 1000
        deadline = None if timeout is None else now + timeout
        self._queue[waiter] = WaiterRecord(
            id=waiter, started=now, deadline=deadline, purpose=purpose, bounds_opening=bounds_opening
        )
        if deadline is not None:
            heapq.heappush(self._deadlines, (deadline, waiter))
        self._service(now)
        return waiter

    def check_out_now(
        self, now: float, *, purpose: CheckoutPurpose = CheckoutPurpose.OTHER
    ) -> PooledConnection | None:
        """A check-out that needs no waiting, done at once: when nobody listens for events (a
        check-out publishes several), the pool is ready, nobody is queued and the most recently
        checked-in connection is live, that connection is handed over and its handle returned
        -- the books are as after :meth:`check_out` and its GiveConnection.  Otherwise None,
        and nothing changed: call :meth:`check_out` (which also closes a perished connection,
        with its event)."""
        if type(now) is not float or now != now:  # (the core's clock: a float, never NaN)
            check_now(now)
        if self.events or self._queue or self._state is not PoolState.READY or not self._available:
            return None
        if not isinstance(purpose, CheckoutPurpose):
            raise PoolMisuseError(f"purpose must be a CheckoutPurpose, not {purpose!r}")
        conn = self._conns[self._available[-1]]
        if self._perished(conn, now) is not None:
            return None
        self._available.pop()
        waiter = self._next_waiter
        self._next_waiter += 1
        return self._take(waiter, conn, purpose)

    def cancel(
        self,
        waiter: int,
        now: float,
        *,
        reason: CheckOutFailedReason = CheckOutFailedReason.CONNECTION_ERROR,
    ) -> None:
        """The task behind ``waiter`` is gone (killed, cancelled, timed out on its own).

        A waiting request leaves the queue (ConnectionCheckOutFailed with ``reason``, no
        FailWaiter); a connection being opened for it is kept for the next waiter; a connection
        already given to it is checked back in.  Cancelling a finished request does nothing.
        """
        check_now(now)
        if not isinstance(reason, CheckOutFailedReason):
            raise PoolMisuseError(f"reason must be a CheckOutFailedReason, not {reason!r}")
        if not isinstance(waiter, int) or not 1 <= waiter < self._next_waiter:
            raise UnknownWaiterError(f"waiter {waiter!r} was never issued by this pool")
        w = self._queue.pop(waiter, None)
        if w is None:
            w = self._attached.pop(waiter, None)
            if w is not None:
                self._detach(w)
        if w is not None:
            self._emit(
                ConnectionCheckOutFailed(
                    address=self.address, reason=reason, duration=max(0.0, now - w.started)
                )
            )
            self._settle(now)
            return
        held = self._held.get(waiter)
        if held is not None:
            self.check_in(self._handle(self._conns[held]), now)

    # -- connection results -------------------------------------------------------------------

    def connection_established(
        self, connection_id: int, now: float, *, service_id: ObjectId | None = None
    ) -> None:
        """The connection asked for by OpenConnection finished its handshake (and auth).

        Load-balanced pools need the ``serviceId`` of the handshake reply; a reply without one
        is a handshake failure, to be reported with :meth:`connection_failed`.
        """
        check_now(now)
        if self.options.load_balanced:
            if not isinstance(service_id, ObjectId):
                raise PoolMisuseError(
                    "a load-balanced pool needs the serviceId (an ObjectId) from the handshake"
                )
        elif service_id is not None:
            raise PoolMisuseError("service_id is only for load-balanced pools")
        conn = self._pending_connection(connection_id)
        if conn is None:
            return
        conn.state = ConnState.AVAILABLE
        self._pending -= 1
        self._unowned.pop(conn.id, None)
        if service_id is not None:
            entry = self._services.setdefault(service_id, [0, 0])
            entry[1] += 1
            conn.generation = entry[0]
            conn.service_id = service_id
        self._emit(
            ConnectionReady(
                address=self.address,
                connection_id=conn.id,
                duration=max(0.0, now - conn.created_at),
            )
        )
        if conn.owner is not None:
            self._hand_over(self._attached.pop(conn.owner), conn, now)
        elif self._is_stale(conn):
            self._close(conn, ConnectionClosedReason.STALE)
        else:
            conn.available_since = now
            self._available.append(conn.id)
        self._settle(now)

    def connection_failed(self, connection_id: int, now: float, error: BaseException) -> None:
        """Opening the connection failed (connect, TLS, handshake or auth): ``error`` says why.

        Report the error to SDAM *before* calling this, as the specification orders it.
        """
        check_now(now)
        if not isinstance(error, BaseException):
            raise PoolMisuseError(f"error must be an exception, not {error!r}")
        conn = self._pending_connection(connection_id)
        if conn is None:
            return
        owner = conn.owner
        self._close(conn, ConnectionClosedReason.ERROR, error)
        if owner is not None:
            w = self._attached.pop(owner)
            self._fail(w.id, w.started, now, CheckOutFailedReason.CONNECTION_ERROR, error)
        else:
            self._populate_not_before = now + self.options.populate_backoff_ms / 1000
        self._settle(now)

    def pin(self, connection: PooledConnection, purpose: CheckoutPurpose) -> None:
        """A checked-out connection is kept for a cursor or a transaction (load-balanced
        pinning): counted under ``purpose`` in the wait queue timeout's message."""
        if not isinstance(purpose, CheckoutPurpose):
            raise PoolMisuseError(f"purpose must be a CheckoutPurpose, not {purpose!r}")
        self._checked_out(connection).purpose = purpose

    # -- check-in -----------------------------------------------------------------------------

    def check_in(
        self, connection: PooledConnection, now: float, *, error: BaseException | None = None
    ) -> None:
        """Give a checked-out connection back; ``error`` marks it broken (closed, reason error)."""
        check_now(now)
        if error is not None and not isinstance(error, BaseException):
            raise PoolMisuseError(f"error must be an exception or None, not {error!r}")
        conn = self._checked_out(connection)
        if self.events:
            self._emit(ConnectionCheckedIn(address=self.address, connection_id=conn.id))
        if conn.owner is not None:
            self._held.pop(conn.owner, None)
            conn.owner = None
        conn.state = ConnState.AVAILABLE
        if error is not None:
            self._close(conn, ConnectionClosedReason.ERROR, error)
        elif self._state is PoolState.CLOSED:
            self._close(conn, ConnectionClosedReason.POOL_CLOSED)
        elif conn.interrupted or self._is_stale(conn):
            self._close(conn, ConnectionClosedReason.STALE)
        else:
            conn.available_since = now
            self._available.append(conn.id)
        self._settle(now)

    # -- ready, clear, close ------------------------------------------------------------------

    def ready(self, now: float) -> None:
        """Mark the pool ready (SDAM does, after a successful check); no-op unless paused."""
        check_now(now)
        old = self._state
        self._state = TRANSITIONS[(old, PoolInput.READY)]
        if old is PoolState.PAUSED:
            self._populate_not_before = -math.inf
            self._emit(PoolReady(address=self.address))
            self._settle(now)

    def clear(
        self,
        now: float,
        *,
        service_id: ObjectId | None = None,
        interrupt_in_use_connections: bool = False,
        cause: BaseException | None = None,
    ) -> None:
        """Mark every connection stale (load-balanced: those of ``service_id``).

        Not load-balanced: the pool pauses, waiters fail with PoolClearedError (naming
        ``cause``), available connections close.  With ``interrupt_in_use_connections`` the
        connections in use are interrupted and those being opened are abandoned.
        """
        check_now(now)
        load_balanced = self.options.load_balanced
        if load_balanced and not isinstance(service_id, ObjectId):
            raise PoolMisuseError("a load-balanced pool is cleared for one service_id (ObjectId)")
        if not load_balanced and service_id is not None:
            raise PoolMisuseError("service_id is only for load-balanced pools")
        if not isinstance(interrupt_in_use_connections, bool):
            raise PoolMisuseError("interrupt_in_use_connections must be a boolean")
        if cause is not None and not isinstance(cause, BaseException):
            raise PoolMisuseError(f"cause must be an exception or None, not {cause!r}")
        old = self._state
        new = TRANSITIONS[(old, PoolInput.CLEAR_SERVICE if load_balanced else PoolInput.CLEAR)]
        if old is PoolState.CLOSED:
            return
        interrupt = interrupt_in_use_connections
        if service_id is not None:
            self._clear_service(now, service_id, interrupt)
            return
        threshold = self._generation
        self._generation += 1
        self._state = new
        self._clear_cause = cause
        if old is PoolState.READY:  # clearing a paused pool is silent (but still counts)
            self._emit(PoolCleared(address=self.address, interrupt_in_use_connections=interrupt))
        error = PoolClearedError(self.address, cause)
        waiting = list(self._queue.values())
        self._queue.clear()
        for w in list(self._attached.values()):
            if w.stage is WaiterStage.CLAIMED:
                del self._attached[w.id]
                self._detach(w)
                waiting.append(w)
        for w in sorted(waiting, key=lambda w: w.id):
            self._fail(w.id, w.started, now, CheckOutFailedReason.CONNECTION_ERROR, error)
        self._close_available(ConnectionClosedReason.STALE, lambda conn: True)
        if interrupt:
            self._interrupt(now, threshold, None)

    def close(self, now: float) -> None:
        """Close the pool: available and pending connections close, waiters fail."""
        check_now(now)
        old = self._state
        self._state = TRANSITIONS[(old, PoolInput.CLOSE)]
        if old is PoolState.CLOSED:
            return
        reason = ConnectionClosedReason.POOL_CLOSED
        self._close_available(reason, lambda conn: True)
        error = PoolClosedError(self.address)
        failed: list[WaiterRecord] = []
        for conn in [c for c in self._conns.values() if c.state is ConnState.PENDING]:
            owner = conn.owner
            self._close(conn, reason)
            if owner is not None:
                failed.append(self._attached.pop(owner))
        failed.extend(self._queue.values())
        self._queue.clear()
        self._deadlines.clear()
        for w in sorted(failed, key=lambda w: w.id):
            self._fail(w.id, w.started, now, CheckOutFailedReason.POOL_CLOSED, error)
        self._emit(PoolClosed(address=self.address))

    # -- time ---------------------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        """When :meth:`handle_timeout` has work to do next (``now`` seconds), or None."""
        deadlines = self._deadlines
        while deadlines and not self._is_waiting(deadlines[0][1]):
            heapq.heappop(deadlines)
        candidates: list[float] = []
        if deadlines:
            candidates.append(deadlines[0][0])
        if self._max_idle and self._available:
            oldest = self._conns[self._available[0]]
            candidates.append(oldest.available_since + self._max_idle)
        if self._populate_not_before > -math.inf and self._wants_population():
            candidates.append(self._populate_not_before)
        return min(candidates) if candidates else None

    def handle_timeout(self, now: float) -> None:
        """Fail waiters past their deadline, close idle connections, resume minPoolSize upkeep."""
        check_now(now)
        deadlines = self._deadlines
        while deadlines and deadlines[0][0] <= now:
            _, waiter = heapq.heappop(deadlines)
            w = self._queue.pop(waiter, None)
            opening = False
            if w is None:
                if not self._is_waiting(waiter):
                    continue
                w = self._attached.pop(waiter)
                opening = w.stage is WaiterStage.ESTABLISHING
                self._detach(w)  # its connection goes on opening, for the pool
            error = self._opening_timeout_error() if opening else self._timeout_error()
            self._fail(w.id, w.started, now, CheckOutFailedReason.TIMEOUT, error)
        if self._max_idle:
            while self._available:
                oldest = self._conns[self._available[0]]
                if now < oldest.available_since + self._max_idle:
                    break
                self._available.popleft()
                self._close(oldest, ConnectionClosedReason.IDLE)
        self._settle(now)

    def _settle(self, now: float) -> None:
        """After any change: serve the wait queue, then top the pool up to minPoolSize."""
        self._service(now)
        if now >= self._populate_not_before:
            while self._wants_population():
                self._unowned[self._open(now, None).id] = None

    def _service(self, now: float) -> None:
        while self._queue and self._state is PoolState.READY:
            w = next(iter(self._queue.values()))
            conn = self._take_available(now)
            if conn is not None:
                del self._queue[w.id]
                self._hand_over(w, conn, now)
                continue
            conn = self._claimable()
            if conn is None and self._may_open():
                conn = self._open(now, w.id)
                w.stage = WaiterStage.ESTABLISHING
            elif conn is not None:
                del self._unowned[conn.id]
                conn.owner = w.id
                w.stage = WaiterStage.CLAIMED
            else:
                break  # the head waits; nobody behind it may overtake
            del self._queue[w.id]
            w.connection_id = conn.id
            self._attached[w.id] = w

    def _clear_service(self, now: float, service_id: ObjectId, interrupt: bool) -> None:
        self._emit(
            PoolCleared(
                address=self.address,
                service_id=service_id,
                interrupt_in_use_connections=interrupt,
            )
        )
        entry = self._services.get(service_id)
        if entry is None:  # no connection to that service: nothing can be stale
            return
        threshold = entry[0]
        entry[0] += 1
        self._close_available(ConnectionClosedReason.STALE, lambda c: c.service_id == service_id)
        if interrupt:
            self._interrupt(now, threshold, service_id)

    def _interrupt(self, now: float, threshold: int, service_id: ObjectId | None) -> None:
        """Interrupt connections in use, abandon those being opened (generation <= threshold)."""
        error = PoolClearedError(self.address, interrupted=True)
        for conn in list(self._conns.values()):
            if conn.generation > threshold or conn.service_id != service_id:
                continue  # newer, or (load-balanced) another service's or still pending
            if conn.state is ConnState.IN_USE and not conn.interrupted:
                conn.interrupted = True
                self._emit(
                    InterruptConnection(address=self.address, connection_id=conn.id, error=error)
                )
            elif conn.state is ConnState.PENDING:
                owner = conn.owner
                self._close(conn, ConnectionClosedReason.STALE)
                if owner is not None:
                    w = self._attached.pop(owner)
                    self._fail(w.id, w.started, now, CheckOutFailedReason.CONNECTION_ERROR, error)
