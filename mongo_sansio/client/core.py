"""The runtime-independent client: topology, monitors, pools and the flows that use them.

Theory of operation
-------------------
:class:`ClientCore` is what the blocking, gevent, asyncio and trio clients share.  It owns
every machine of the client and sequences their outputs:

* the SDAM :class:`~mongo_sansio.sdam.machine.Topology`, fed by the monitors' reports, by the
  handshakes of application connections and by the errors operations meet;
* one :class:`~mongo_sansio.client.monitors.ServerMonitor` per server (background tasks that
  check the server, streaming when it can, with a separate RTT task);
* one CMAP :class:`~mongo_sansio.cmap.Pool` per server: the wait queue, maxPoolSize,
  maxConnecting, minPoolSize, maxIdleTimeMS, generations, clears and pausing; connections are
  opened by background tasks (:meth:`_open_task`) and handed to waiters by the pool;
* the waiting: a server selection that finds nothing suitable asks every monitor for an
  immediate check and waits on a :class:`~mongo_sansio.client.runtime.Signal` fired when the
  topology description changes, up to its deadline (never polling);
* the upkeep task (:meth:`upkeep_task`): pool deadlines (idle connections, minPoolSize
  back-off) and the queue of cursors to kill that finalizers fill.

The operation flows (:mod:`mongo_sansio.client.execute`) use the core through
:meth:`select_server`, :meth:`check_out` / :meth:`check_in` and :meth:`mark_server_unknown`.

Inputs: calls from those flows and the tasks, each with ``now`` where time matters, and what
the runtime gave at construction: ``draw(n)`` (a random int in ``range(n)``; the backoff
jitter of :meth:`jitter` comes from it too), ``nonce()``
(bytes for authentication), ``spawn(task, name)`` (start a background flow),
``close_stream(stream)`` (close a stream at once), ``publish(event)`` (deliver a monitoring
event; None when nobody listens).
Outputs: events through ``publish`` (SDAM, CMAP, command; in the specs' order), tasks through
``spawn``, primitives from the flows (:mod:`mongo_sansio.client.runtime`).

The core is not thread-safe: a runtime with threads holds one lock around every step of every
flow and every call, never across a primitive.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Mapping
from typing import Any, Final

import attrs

from mongo_sansio.auth.aws_credentials import AwsEnvironment
from mongo_sansio.auth.oidc import OidcCache
from mongo_sansio.bson import ObjectId
from mongo_sansio.client.authenticators import ClientAuthenticators
from mongo_sansio.client.execute import upkeep_task
from mongo_sansio.client.link import Link, LinkOptions, open_link
from mongo_sansio.client.monitors import ServerMonitor
from mongo_sansio.client.pinning import CursorPins
from mongo_sansio.client.runtime import Signal, Task, Wait
from mongo_sansio.client.selecting import direct_read_preference, select
from mongo_sansio.client.server_info import describe_server
from mongo_sansio.client.server_state import (
    KillCursor,
    ServerState,
    Waiter,
    error_wire_version,
    establishment_error,
    operation_error,
    server_gone,
)
from mongo_sansio.client.sessions import ClientSessions
from mongo_sansio.client.settings import ClientSettings
from mongo_sansio.client.srv_polling import SrvSource, make_poller, srv_poll_task
from mongo_sansio.cmap import Pool
from mongo_sansio.cmap.actions import (
    CloseConnection,
    FailWaiter,
    GiveConnection,
    InterruptConnection,
    OpenConnection,
    PooledConnection,
)
from mongo_sansio.cmap.states import PoolState
from mongo_sansio.connection import (
    ConnectionDescription,
)
from mongo_sansio.errors import (
    InvalidOperation,
    LocalProtocolError,
    MongoError,
    NetworkTimeout,
)
from mongo_sansio.flow import MarkServerUnknown, Now, SelectServer, ServerInfo
from mongo_sansio.sdam.actions import (
    CancelCheck,
    ClearPool,
    ReadyPool,
    RequestImmediateCheck,
    StartMonitor,
    StopMonitor,
)
from mongo_sansio.sdam.description import (
    Address,
    TopologyType,
    format_address,
)
from mongo_sansio.sdam.events import (
    ServerClosedEvent,
    TopologyDescriptionChangedEvent,
)
from mongo_sansio.sdam.heartbeat import MonitorSettings, report_to_topology
from mongo_sansio.sdam.heartbeat_actions import MonitorReport
from mongo_sansio.sdam.machine import Output, Topology
from mongo_sansio.sdam.topology import TopologyDescription
from mongo_sansio.selection import (
    RandomDraw,
)
from mongo_sansio.wire import RequestIds

__all__ = ["ClientCore", "KillCursor"]

#: the jitter's resolution: draw(2**53) / 2**53 is any double in [0, 1) a float's 53 bits hold
_JITTER_STEPS: Final = 1 << 53
#: load-balanced sessions never expire client-side: a timeout no session outlives
LOAD_BALANCED_SESSION_MINUTES: Final = 1 << 40

Flow = Generator[Any, Any, Any]


class ClientCore:
    """One client's machines (see the module docstring)."""

    def __init__(
        self,
        settings: ClientSettings,
        *,
        topology_id: object,
        draw: RandomDraw,
        nonce: Callable[[], bytes],
        metadata: Mapping[str, Any],
        spawn: Callable[[Task, str], None],
        close_stream: Callable[[Any], None],
        publish: Callable[[object], None] | None = None,
        faas: bool = False,
        srv: SrvSource | None = None,
        aws_environment: Callable[[], AwsEnvironment] | None = None,
    ) -> None:
        self.settings = settings
        self.draw = draw
        #: a random float in [0, 1): the jitter of overload backoffs (tests may replace it)
        self.jitter: Callable[[], float] = lambda: draw(_JITTER_STEPS) / _JITTER_STEPS
        self._nonce = nonce
        self._spawn = spawn
        self._servers: dict[Address, ServerState] = {}
        self._publish = publish
        self._faas = faas
        self._request_ids = RequestIds()
        self.link_options = LinkOptions(
            handshake=settings.handshake,
            metadata=dict(metadata),
            request_ids=self._request_ids.next,
            close_stream=close_stream,
            server_api=settings.server_api,
            zlib_compression_level=settings.handshake.zlib_compression_level,
            proxy=settings.proxy,
        )
        self.authenticators = ClientAuthenticators(
            settings.credential, nonce=nonce, aws_environment=aws_environment
        )
        self._topology = Topology(settings.topology, topology_id=topology_id)
        self._described: dict[Address, ConnectionDescription] = {}
        # (see selecting._known_server): (description, window of a primary read, of a write)
        self.selection_windows: tuple[Any, Any, Any] = (None, None, None)
        # address -> (its server description, connection description, their ServerInfo)
        self._server_infos: dict[Address, tuple[Any, Any, ServerInfo]] = {}
        self._topology_waiters: list[Signal] = []
        self._monitor_ids = 0
        self._kill_queue: deque[KillCursor] = deque()
        self._srv = srv
        self.srv_signal: Signal | None = None
        self.sessions = ClientSessions(
            random16=lambda: nonce()[:16], timeout_minutes=self._session_timeout_minutes
        )
        #: load-balanced mode: connections pinned to cursors (mongo_sansio.client.pinning)
        self.cursor_pins = CursorPins()
        self.upkeep_signal: Signal | None = None
        self.last_now = 0.0
        self._closed = False
        self._opened = False

    @property
    def oidc_cache(self) -> OidcCache:
        """MONGODB-OIDC's token cache, shared by this client's connections."""
        return self.authenticators.oidc_cache

    @property
    def publish(self) -> Callable[[object], None] | None:
        """Where monitoring events go (None: nobody listens, and the pools build none)."""
        return self._publish

    @publish.setter
    def publish(self, publish: Callable[[object], None] | None) -> None:
        self._publish = publish
        for server in self._servers.values():
            server.pool.events = publish is not None

    # -- opening --------------------------------------------------------------------------------

    def open(self, now: float) -> None:
        """Start the topology: monitors, pools and the upkeep task (once; idempotent)."""
        if self._opened:
            return
        self._opened = True
        self.last_now = now
        self._apply(self._topology.open(), now)
        self._spawn(upkeep_task(self), "client upkeep")
        if self._srv is not None:
            self._spawn(srv_poll_task(self, make_poller(self, self._srv, now)), "SRV polling")

    def spawn(self, task: Flow, name: str) -> None:
        """Start ``task`` (a flow of the runtime's primitives) in the background, unless the
        client is closed."""
        if not self._closed:
            self._spawn(task, name)

    # -- read-only state ----------------------------------------------------------------------

    @property
    def load_balanced(self) -> bool:
        return self._topology.description.type is TopologyType.LOAD_BALANCED

    def handshake_seen(self, address: tuple[str, int]) -> bool:
        """Whether a connection to ``address`` completed its handshake (its limits known)."""
        return self.sdam_address(address) in self._described

    def _session_timeout_minutes(self) -> int | None:
        """logicalSessionTimeoutMinutes; load-balanced: sessions are always supported and
        never pruned (load-balancers.md, "Session Expiration")."""
        if self.load_balanced:
            return LOAD_BALANCED_SESSION_MINUTES
        return self._topology.description.logical_session_timeout_minutes

    @property
    def description(self) -> TopologyDescription:
        return self._topology.description

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def topology_id(self) -> object:
        return self._topology.topology_id

    def next_request_id(self) -> int:
        return self._request_ids.next()

    def transport_address(self, address: Address) -> tuple[str, int]:
        return self.settings.seeds.to_transport(address)

    def sdam_address(self, address: tuple[str, int]) -> Address:
        return self.settings.seeds.to_sdam(address)

    def pool(self, address: tuple[str, int]) -> Pool | None:
        """The pool of the server at flow/transport ``address`` (None if not in the topology)."""
        server = self._servers.get(self.sdam_address(address))
        return None if server is None else server.pool

    def in_use_counts(self) -> Mapping[Address, int]:
        return {a: s.pool.in_use_connection_count for a, s in self._servers.items()}

    def min_round_trip_time(self, address: tuple[str, int]) -> float:
        server = self._servers.get(self.sdam_address(address))
        if server is None or server.monitor is None:
            return 0.0
        return server.monitor.machine.round_trip_times.minimum or 0.0

    def server_info(self, address: Address) -> ServerInfo:
        server = self._topology.description.servers.get(address)
        if server is None:
            raise LocalProtocolError(f"{address!r} is not in the topology")
        described = self._described.get(address)
        # a ServerInfo is frozen and depends only on these two (and the fixed seeds): kept
        # while both are the same objects
        kept = self._server_infos.get(address)
        if kept is not None and kept[0] is server and kept[1] is described:
            return kept[2]
        info = describe_server(self.transport_address(address), server, described)
        if len(self._server_infos) >= 64:  # (addresses come and go with the topology)
            self._server_infos.clear()
        self._server_infos[address] = (server, described, info)
        return info

    # -- server selection -----------------------------------------------------------------------

    def select_server(
        self,
        request: SelectServer,
        deadline: float | None = None,
        *,
        operation_id: int | None = None,
    ) -> Flow:
        """Wait for a server that suits ``request`` (:func:`~.selecting.select`)."""
        return select(self, request, deadline, operation_id=operation_id)

    def wait_for_topology_change(self) -> Signal:
        """A signal fired at the next change of the topology description."""
        signal = Signal("topology changed")
        self._topology_waiters.append(signal)
        return signal

    def forget_waiter(self, signal: Signal) -> None:
        if not signal.fired and signal in self._topology_waiters:
            self._topology_waiters.remove(signal)

    def request_checks(self, now: float) -> None:
        """Ask every monitor for an immediate check (a selection found nothing suitable)."""
        for server in self._servers.values():
            if server.monitor is not None:
                server.monitor.request_check(now)

    # -- check-out and check-in -----------------------------------------------------------------

    def check_out(
        self,
        address: tuple[str, int],
        deadline: float | None = None,
        generations: dict[tuple[str, int], int] | None = None,
        *,
        now: float | None = None,
    ) -> Flow:
        """Wait for a connection to the server at ``address`` from its pool (the wait queue,
        waitQueueTimeoutMS or the operation's ``deadline``); returns the :class:`Link`.

        A check-out that fails notes the pool's generation at its start in ``generations``
        (the operation's, by address): an error met while opening a connection for it was
        told to SDAM already, by the opening flow and with that generation, so the same error
        reported again by the operation is stale and changes nothing (one description change,
        one pool clear).  ``now``: the time, when the caller has just read it (None: read here).

        Closing this flow while it waits leaves the queue cleanly; a connection the pool
        handed over meanwhile goes back."""
        self.require_open()
        server = self._servers.get(self.sdam_address(address))
        if server is None:
            raise server_gone(address)
        if now is None:
            now = yield Now()
        self.last_now = now
        timeout = None if deadline is None else max(0.0, deadline - now)
        pool = server.pool
        generation = pool.generation
        waiter = Waiter()
        waiter_id = pool.check_out(now, timeout=timeout)
        server.waiters[waiter_id] = waiter
        if timeout is None and pool.options.wait_queue_timeout_ms:
            timeout = pool.options.wait_queue_timeout_ms / 1000
        wait_until = None if timeout is None else now + timeout
        waited = False
        try:
            self._drain_pool(server)
            while waiter.link is None and waiter.error is None:
                waited = True
                fired = yield Wait(waiter.signal, wait_until)
                if not fired and waiter.link is None and waiter.error is None:
                    now = yield Now()
                    self.last_now = now
                    pool.handle_timeout(now)
                    self._drain_pool(server)
                    if waiter.link is None and waiter.error is None:
                        waiter.signal = Signal("check-out")
                        if wait_until is not None and now >= wait_until:
                            # past the deadline and not failed: waitQueueTimeoutMS, which
                            # stops applying once a connection is being opened for us (CMAP);
                            # that opening (bounded by connectTimeoutMS) ends the wait
                            wait_until = None
        except BaseException:
            server.waiters.pop(waiter_id, None)
            if waiter.link is not None:
                self.check_in(waiter.link)
            elif waiter.error is None and pool.state is not PoolState.CLOSED:
                pool.cancel(waiter_id, self.last_now)
                self._drain_pool(server)
            raise
        if waiter.error is not None:
            error = waiter.error
            if generations is not None:
                generations[address] = generation
            if isinstance(error, MongoError):
                raise error
            raise LocalProtocolError(f"check-out failed: {error!r}") from error
        assert waiter.link is not None
        waiter.link.checked_out_at = None if waited else now
        return waiter.link

    def check_out_now(self, address: tuple[str, int], now: float) -> Link | None:
        """:meth:`check_out`'s result when it needs no waiting and no flow (nobody listens for
        pool events, nobody waits before us, a live connection is available: the pool's
        :meth:`~mongo_sansio.cmap.Pool.check_out_now`); None: run :meth:`check_out`."""
        self.require_open()
        server = self._servers.get(self.sdam_address(address))
        if server is None:
            return None
        pooled = server.pool.check_out_now(now)
        if pooled is None:
            return None
        link = server.links.get(pooled.connection_id)
        if link is None:  # (not expected: an available connection has its link)
            server.pool.check_in(pooled, now)
            return None
        self.last_now = now
        link.pooled = pooled
        link.checked_out_at = now
        return link

    def check_in(self, link: Link) -> None:
        """Give ``link`` back to its pool (a broken link is closed by the pool)."""
        pooled = link.pooled
        link.pooled = None
        server = self._servers.get(self.sdam_address(link.address))
        if pooled is None or server is None:
            link.close()
            return
        pool = server.pool
        if pool.state is PoolState.CLOSED and server.address not in self._servers:
            link.close()
            return
        error = NetworkTimeout("interrupted") if link.broken else None
        try:
            pool.check_in(pooled, self.last_now, error=error)
        except LocalProtocolError:
            link.close()  # the pool no longer knows it (closed meanwhile)
        self._drain_pool(server)

    def _drain_pool(self, server: ServerState) -> None:
        pool = server.pool
        publish = self.publish
        for output in pool.drain_outputs():
            if isinstance(output, GiveConnection):
                self._give(server, output.waiter, output.connection)
            elif isinstance(output, FailWaiter):
                waiter = server.waiters.pop(output.waiter, None)
                if waiter is not None:
                    waiter.error = output.error
                    waiter.signal.fire()
            elif isinstance(output, OpenConnection):
                self._spawn(
                    self._open_task(server, output.connection_id),
                    f"open connection {output.connection_id} to {format_address(server.address)}",
                )
            elif isinstance(output, CloseConnection | InterruptConnection):
                link = server.links.get(output.connection_id)
                if link is None:
                    server.abandoned.add(output.connection_id)
                    opening = server.opening.pop(output.connection_id, None)
                    if opening is not None:
                        opening.close()  # cuts its handshake: the open task ends at once
                elif isinstance(output, CloseConnection):
                    del server.links[output.connection_id]
                    link.close()
                else:  # the operation using it fails with the pool's retryable error
                    link.close(output.error)
            elif publish is not None:
                publish(output)

    def _give(self, server: ServerState, waiter_id: int, pooled: PooledConnection) -> None:
        link = server.links.get(pooled.connection_id)
        waiter = server.waiters.pop(waiter_id, None)
        if link is None or waiter is None:
            server.pool.check_in(pooled, self.last_now)
            return
        link.pooled = pooled
        waiter.link = link
        waiter.signal.fire()

    def _open_task(self, server: ServerState, connection_id: int) -> Flow:
        """Open and establish one pooled connection, then tell SDAM and the pool."""
        now = yield Now()
        timeout = self.settings.connect_timeout
        deadline = None if timeout is None else now + timeout
        authenticator = self.authenticators.for_connection(host=server.address[0], timeout=timeout)
        generation = server.pool.generation

        def stream_opened(link: Link) -> None:
            if connection_id in server.abandoned or server.pool.state is PoolState.CLOSED:
                link.close()
            else:
                server.opening[connection_id] = link

        try:
            link = yield from open_link(
                connection_id,
                self.transport_address(server.address),
                self.link_options,
                deadline=deadline,
                authenticator=authenticator,
                on_stream=stream_opened,
                backpressure=True,
            )
        except MongoError as error:
            opened = server.opening.pop(connection_id, None)
            now = yield Now()
            self.last_now = now
            if connection_id in server.abandoned:
                server.abandoned.discard(connection_id)  # cut by the pool: not the server's fault
                return
            if not self._closed and server.address in self._servers:
                service_id = None
                if opened is not None and self.load_balanced:
                    service_id = opened.hello_service_id
                self._handshake_failed(server.address, error, generation, now, service_id)
            if server.pool.state is not PoolState.CLOSED:
                server.pool.connection_failed(connection_id, now, error)
                self._drain_pool(server)
            return
        except BaseException:
            server.opening.pop(connection_id, None)
            raise
        server.opening.pop(connection_id, None)
        now = yield Now()
        self.last_now = now
        if connection_id in server.abandoned or server.pool.state is PoolState.CLOSED:
            server.abandoned.discard(connection_id)
            link.close()
            if server.pool.state is not PoolState.CLOSED:
                server.pool.connection_failed(connection_id, now, InvalidOperation("abandoned"))
                self._drain_pool(server)
            return
        description = link.description
        assert description is not None
        server.links[connection_id] = link
        self._described[server.address] = description
        # A reply of a generation the pool has cleared since (an error on another connection
        # came in meanwhile) is older news than that error: it must not make the server known
        # again (the connection itself is stale; the pool closes it).
        if not self._closed and server.pool.generation == generation:
            self._apply(
                self._topology.handshake_succeeded(
                    server.address,
                    description.reply,
                    round_trip_time=link.round_trip_time,
                    now=now,
                ),
                now,
            )
        server.pool.connection_established(connection_id, now, service_id=description.service_id)
        self._drain_pool(server)

    def _handshake_failed(
        self, address: Address, error: MongoError, generation: int, now: float,
        service_id: ObjectId | None = None,
    ) -> None:
        failure = establishment_error(address, error, generation, service_id)
        self._apply(self._topology.application_error(failure, now=now), now)

    # -- errors operations met ------------------------------------------------------------------

    def mark_server_unknown(
        self,
        request: MarkServerUnknown,
        now: float,
        *,
        generation: int | None = None,
        service_id: ObjectId | None = None,
    ) -> None:
        """An operation saw ``request.error`` on ``request.address``: tell SDAM
        (``service_id``: the connection's load-balanced service)."""
        self.last_now = now
        if self._closed:
            return
        address = self.sdam_address(request.address)
        server = self._topology.description.servers.get(address)
        if server is None:
            return
        failure = operation_error(
            address,
            request.error,
            generation=generation,
            max_wire_version=error_wire_version(server, self._described.get(address)),
            service_id=service_id,
        )
        self._apply(self._topology.application_error(failure, now=now), now)

    def command_body(self, server: ServerInfo, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """``body`` as sent to ``server`` (see :func:`.selecting.direct_read_preference`)."""
        return direct_read_preference(self._topology.description, self.sdam_address(server.address), body)

    # -- cursors to kill, upkeep ----------------------------------------------------------------

    def kill_cursor_later(self, cursor: KillCursor) -> None:
        """Queue a dropped cursor for killCursors (safe from a finalizer: an append only)."""
        self._kill_queue.append(cursor)

    def take_cursors_to_kill(self) -> list[KillCursor]:
        out: list[KillCursor] = []
        while self._kill_queue:
            out.append(self._kill_queue.popleft())
        return out

    def pool_timeouts(self, now: float) -> None:
        """Let every pool act on its deadlines that passed (idle connections, back-off)."""
        for server in list(self._servers.values()):
            due = server.pool.next_deadline()
            if due is not None and due <= now:
                server.pool.handle_timeout(now)
                self._drain_pool(server)

    def next_pool_deadline(self) -> float | None:
        deadlines = [
            due for server in self._servers.values() if (due := server.pool.next_deadline())
        ]
        return min(deadlines) if deadlines else None

    # -- closing --------------------------------------------------------------------------------

    def close(self, now: float) -> None:
        """Close the client: monitors stop, pools close (with events), the topology closes,
        every connection closes and every waiter fails.  Idempotent."""
        if self._closed:
            return
        self.last_now = now
        self._closed = True
        for server in self._servers.values():
            if server.monitor is not None:
                server.monitor.close(now)
        if self._opened:
            self._apply(self._topology.close(), now)
        for server in list(self._servers.values()):
            self._close_server(server, now)
        self._servers.clear()
        for signal in self._topology_waiters:
            signal.fire()
        self._topology_waiters.clear()
        for waker in (self.upkeep_signal, self.srv_signal):
            if waker is not None:
                waker.fire()

    def srv_hosts_changed(self, hosts: list[Address], now: float) -> None:
        """An SRV rescan's hosts (see :mod:`.srv_polling`)."""
        if not self._closed:
            self._apply(self._topology.srv_hosts(hosts), now)

    def require_open(self) -> None:
        if self._closed:
            raise InvalidOperation("Cannot use MongoClient after close")

    def _close_server(self, server: ServerState, now: float) -> None:
        if server.monitor is not None:
            server.monitor.close(now)
        server.pool.close(now)
        self._drain_pool(server)
        for link in list(server.links.values()):
            if link.pooled is None:
                link.close()
        server.links.clear()
        for link in list(server.opening.values()):
            link.close()
        server.opening.clear()

    # -- SDAM outputs ---------------------------------------------------------------------------

    def monitor_report(self, report: MonitorReport) -> None:
        """A monitor's report: forwarded to the topology, whose outputs are carried out."""
        if self._closed:
            return
        now = getattr(report, "now", self.last_now)
        self.last_now = max(self.last_now, now)
        self._apply(report_to_topology(self._topology, report), now)

    def _apply(self, outputs: list[Output], now: float) -> None:
        publish = self.publish
        for output in outputs:
            if isinstance(output, StartMonitor):
                self._start_server(output.address, now)
            elif isinstance(output, StopMonitor):
                server = self._servers.get(output.address)
                if server is not None and server.monitor is not None:
                    server.monitor.close(now)
            elif isinstance(output, ReadyPool):
                server = self._servers.get(output.address)
                if server is None and self._topology.description.type is TopologyType.LOAD_BALANCED:
                    server = self._add_server(output.address)
                if server is not None:
                    server.pool.ready(now)
                    self._drain_pool(server)
            elif isinstance(output, ClearPool):
                server = self._servers.get(output.address)
                if server is not None:
                    server.pool.clear(
                        now,
                        service_id=output.service_id,
                        interrupt_in_use_connections=output.interrupt_in_use_connections,
                    )
                    self._drain_pool(server)
            elif isinstance(output, RequestImmediateCheck):
                server = self._servers.get(output.address)
                if server is not None and server.monitor is not None:
                    server.monitor.request_check(now)
            elif isinstance(output, CancelCheck):
                server = self._servers.get(output.address)
                if server is not None and server.monitor is not None:
                    server.monitor.cancel_check(now)
            else:
                if publish is not None:
                    publish(output)
                if isinstance(output, ServerClosedEvent):
                    server = self._servers.pop(output.address, None)
                    self._described.pop(output.address, None)
                    if server is not None:
                        self._close_server(server, now)
                elif isinstance(output, TopologyDescriptionChangedEvent):
                    waiters, self._topology_waiters = self._topology_waiters, []
                    for signal in waiters:
                        signal.fire()

    def _add_server(self, address: Address) -> ServerState:
        settings = self.settings
        options = attrs.evolve(
            settings.pool,
            load_balanced=self._topology.description.type is TopologyType.LOAD_BALANCED,
        )
        server = ServerState(
            address, Pool(format_address(address), options, events=self.publish is not None)
        )
        self._servers[address] = server
        self._drain_pool(server)  # PoolCreated
        return server

    def _start_server(self, address: Address, now: float) -> None:
        server = self._servers.get(address) or self._add_server(address)
        settings = self.settings
        monitor_settings = MonitorSettings(
            heartbeat_frequency=settings.topology.heartbeat_frequency,
            connect_timeout=settings.connect_timeout or 0.0,
            server_monitoring_mode=settings.server_monitoring_mode,
            faas=self._faas,
            server_api=settings.server_api is not None,
        )
        server.monitor = ServerMonitor(
            address,
            self.transport_address(address),
            monitor_settings,
            link_options=self.link_options,
            next_link_id=self._next_monitor_link_id,
            report=self.monitor_report,
        )
        for spawn in server.monitor.start(now):
            self._spawn(spawn.flow, spawn.name)

    def _next_monitor_link_id(self) -> int:
        self._monitor_ids += 1
        return self._monitor_ids

