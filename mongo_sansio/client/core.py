"""The runtime-independent client: topology, server selection with inline scans, connections.

Theory of operation
-------------------
:class:`ClientCore` is what the blocking, gevent, asyncio and trio clients share.  It holds the
SDAM :class:`~mongo_sansio.sdam.machine.Topology` machine, the connections per server
(:class:`~mongo_sansio.client.connections.ConnectionSets`) and the request-id counter, and
answers the questions an adapter meets while interpreting operation flows:

* ``SelectServer`` -- :meth:`ClientCore.select_server_flow` is a flow over the client-internal
  requests (:mod:`mongo_sansio.client.requests`).  There are no background monitors: the
  topology is brought up to date *inline*, as SDAM's single-threaded mode describes.  When the
  topology is stale (never scanned, last scanned over heartbeatFrequencyMS ago, or marked stale
  by an error or a failed selection) the flow scans: it checks every server not checked since
  the scan began, the primary first, then a possible primary, then known servers before
  unknown ones, oldest check first (ties broken by the injected random draw).  A check runs
  hello on an idle connection when there is one, else opens (establishes) a new connection,
  whose handshake reply updates the topology and which is then kept for operations (a failed
  idle connection is retried once on a new one).  A server whose check failed with a network
  error is not checked again for 5 s (cooldownMS).  Scans are at least
  minHeartbeatFrequencyMS (0.5 s) apart.  Selection itself is
  :func:`mongo_sansio.selection.select_server`; without a suitable server the flow marks the
  topology stale, and tries again until serverSelectionTimeoutMS (or, in "try once" mode,
  after one scan) before raising :class:`~mongo_sansio.selection.ServerSelectionTimeoutError`.
  An authentication failure while connecting ends the selection with that error.
* ``RunCommand`` -- :meth:`ClientCore.check_out` gives an idle connection or None (the adapter
  then opens one and reports it with :meth:`ClientCore.connection_opened`);
  :meth:`ClientCore.check_in` takes it back; :meth:`ClientCore.command_body` adds the
  ``$readPreference`` a direct connection needs.
* ``MarkServerUnknown`` -- :meth:`ClientCore.mark_server_unknown` feeds the error to SDAM as an
  application error: the server becomes Unknown and, for network errors, its connections are
  discarded (pool cleared); a state-change error also marks the topology stale.

Inputs: the calls above with ``now`` (monotonic seconds), the answers sent into the selection
flow, and a random ``draw(n)`` given at construction.
Outputs: the flows' requests and results (:class:`~mongo_sansio.flow.ServerInfo`), and the
connections the adapter must close, pulled with :meth:`ClientCore.take_to_close` after any
call.  SDAM events are not published by this first client.

The core is not thread-safe: an adapter serving several threads or tasks holds one lock
around every call (and every step of a flow), never across I/O.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Hashable, Mapping
from typing import Any, Final, Generic, TypeVar

from mongo_sansio.client.connections import ConnectionSets
from mongo_sansio.client.requests import (
    CheckConnection,
    CheckReply,
    ClientRequest,
    OpenConnection,
    Opened,
)
from mongo_sansio.client.settings import ClientSettings
from mongo_sansio.connection import (
    DEFAULT_MAX_BSON_OBJECT_SIZE,
    DEFAULT_MAX_MESSAGE_SIZE_BYTES,
    DEFAULT_MAX_WRITE_BATCH_SIZE,
    ConnectionDescription,
)
from mongo_sansio.errors import (
    AuthenticationError,
    IncompatibleServerError,
    InvalidOperation,
    LocalProtocolError,
    MongoError,
    NetworkError,
    NetworkTimeout,
    ServerError,
)
from mongo_sansio.flow import MarkServerUnknown, Now, SelectServer, ServerInfo, Sleep
from mongo_sansio.sdam.actions import ClearPool, RequestImmediateCheck
from mongo_sansio.sdam.description import (
    Address,
    ServerDescription,
    ServerType,
    TopologyType,
)
from mongo_sansio.sdam.errors import ApplicationError, ErrorKind, ErrorPhase
from mongo_sansio.sdam.events import ServerClosedEvent, ServerOpeningEvent
from mongo_sansio.sdam.machine import Output, Topology
from mongo_sansio.sdam.topology import MIN_HEARTBEAT_FREQUENCY, TopologyDescription
from mongo_sansio.selection import (
    RandomDraw,
    SelectionCriteria,
    ServerSelectionTimeoutError,
    describe_topology,
    select_server,
)
from mongo_sansio.wire import RequestIds

__all__ = ["ClientCore", "COOLDOWN"]

C = TypeVar("C", bound=Hashable)

COOLDOWN: Final = 5.0
"""cooldownMS (seconds): a server whose check failed with a network error is skipped this long."""

# Servers that take a read without being told a read preference on a direct connection.
_READ_WITHOUT_PREFERENCE: Final = frozenset(
    {ServerType.MONGOS, ServerType.LOAD_BALANCER, ServerType.STANDALONE}
)
_UNKNOWN_LIKE: Final = frozenset({ServerType.UNKNOWN, ServerType.RS_GHOST})

SelectionFlow = Generator[ClientRequest, Any, ServerInfo]
ScanFlow = Generator[ClientRequest, Any, None]


class ClientCore(Generic[C]):
    """One client's shared state (see the module docstring).

    ``topology_id`` names the topology in SDAM events (the adapter makes one, e.g. an
    ObjectId).  ``draw(n)`` returns a uniformly random int in ``range(n)``.  ``C`` is the
    adapter's connection handle type (hashable; compared by identity is fine).
    """

    def __init__(self, settings: ClientSettings, *, topology_id: object, draw: RandomDraw):
        self.settings = settings
        self._draw = draw
        self._topology = Topology(settings.topology, topology_id=topology_id)
        self._connections: ConnectionSets[C] = ConnectionSets(
            max_idle_time=settings.max_idle_time, max_idle_per_server=settings.max_pool_size
        )
        self._request_ids = RequestIds()
        self._last_scan: float | None = None
        self._stale = True
        self._cooldown_until: dict[Address, float] = {}
        self._described: dict[Address, ConnectionDescription] = {}
        self._closed = False
        self._apply(self._topology.open())

    # -- read-only state ----------------------------------------------------------------------

    @property
    def description(self) -> TopologyDescription:
        """The topology as last seen."""
        return self._topology.description

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def connections(self) -> ConnectionSets[C]:
        return self._connections

    def next_request_id(self) -> int:
        """The next wire request id (one counter per client)."""
        return self._request_ids.next()

    def transport_address(self, address: Address) -> tuple[str, int]:
        """The address flows and transports use for SDAM's ``address``."""
        return self.settings.seeds.to_transport(address)

    def sdam_address(self, address: tuple[str, int]) -> Address:
        return self.settings.seeds.to_sdam(address)

    def server_info(self, address: Address) -> ServerInfo:
        """The :class:`ServerInfo` flows get for the server at SDAM address ``address``."""
        server = self._topology.description.servers.get(address)
        if server is None:
            raise LocalProtocolError(f"{address!r} is not in the topology")
        described = self._described.get(address)
        return ServerInfo(
            address=self.transport_address(address),
            max_wire_version=server.max_wire_version,
            is_writable=server.is_writable,
            max_bson_object_size=described.max_bson_object_size
            if described is not None
            else DEFAULT_MAX_BSON_OBJECT_SIZE,
            max_message_size_bytes=described.max_message_size_bytes
            if described is not None
            else DEFAULT_MAX_MESSAGE_SIZE_BYTES,
            max_write_batch_size=described.max_write_batch_size
            if described is not None
            else DEFAULT_MAX_WRITE_BATCH_SIZE,
        )

    # -- server selection -----------------------------------------------------------------------

    def select_server_flow(self, request: SelectServer) -> SelectionFlow:
        """Answer ``request`` (see the module docstring); returns the server's ServerInfo."""
        self._require_open()
        criteria = self._criteria(request)
        settings = self.settings.topology
        start = yield Now()
        deadline = start + settings.server_selection_timeout
        if self._last_scan is None or start - self._last_scan >= settings.heartbeat_frequency:
            self._stale = True
        scanned = False
        while True:
            if self._stale and settings.initial_type is not TopologyType.LOAD_BALANCED:
                if self._last_scan is not None:
                    ready = self._last_scan + MIN_HEARTBEAT_FREQUENCY
                    if not self.settings.server_selection_try_once and ready > deadline:
                        self._selection_failed(criteria, settings.server_selection_timeout)
                    now = yield Now()
                    if now < ready:
                        yield Sleep(ready - now)
                yield from self._scan()
                scanned = True
            self._require_open()
            server = select_server(
                self._topology.description,
                criteria,
                heartbeat_frequency=settings.heartbeat_frequency,
                local_threshold=settings.local_threshold,
                draw=self._draw,
                operation_counts=self._connections.in_use_counts(),
            )
            if server is not None:
                return self.server_info(server.address)
            self._stale = True
            now = yield Now()
            if (self.settings.server_selection_try_once and scanned) or now >= deadline:
                self._selection_failed(criteria, settings.server_selection_timeout)

    def _criteria(self, request: SelectServer) -> SelectionCriteria:
        deprioritized = frozenset(self.sdam_address(a) for a in request.deprioritized)
        if request.for_writes:
            return SelectionCriteria.for_write(deprioritized=deprioritized)
        return SelectionCriteria.for_read(request.read_preference, deprioritized=deprioritized)

    def _selection_failed(self, criteria: SelectionCriteria, timeout: float) -> None:
        raise ServerSelectionTimeoutError(
            f"Server selection timed out after {timeout:g} s: no server suitable for "
            f"{criteria}; {describe_topology(self._topology.description)}"
        )

    def _scan(self) -> ScanFlow:
        """Check every server not checked since the scan began (the module docstring's order)."""
        start = yield Now()
        checked: set[Address] = set()
        while True:
            candidates = [
                server
                for server in self._topology.description.servers.values()
                if server.address not in checked
                and server.last_update_time < start
                and self._cooldown_until.get(server.address, -math.inf) <= start
            ]
            if not candidates:
                break
            address = self._next_to_check(candidates)
            checked.add(address)
            yield from self._check(address)
        self._last_scan = yield Now()
        self._stale = False

    def _next_to_check(self, candidates: list[ServerDescription]) -> Address:
        for wanted in (ServerType.RS_PRIMARY, ServerType.POSSIBLE_PRIMARY):
            for server in candidates:
                if server.type is wanted:
                    return server.address
        known = [
            s for s in candidates if s.type not in _UNKNOWN_LIKE | {ServerType.POSSIBLE_PRIMARY}
        ]
        pool = known or candidates
        oldest = min(server.last_update_time for server in pool)
        ties = [server for server in pool if server.last_update_time == oldest]
        return ties[self._draw(len(ties)) if len(ties) > 1 else 0].address

    def _check(self, address: Address) -> ScanFlow:
        """One server check: hello on an idle connection, or a new connection's handshake.

        An idle connection that fails is not held against the server (the server or a
        firewall may have dropped it while it sat unused): the check is retried once on a new
        connection, as a monitor retries a known server's failed check once.
        """
        now = yield Now()
        connection = self._connections.check_out(address, now)
        if connection is not None and (yield from self._check_idle(address, connection)):
            return
        try:
            opened = yield OpenConnection(self.transport_address(address))
        except NetworkError as error:
            yield from self._check_failed(address, error, cooldown=True)
            return
        except AuthenticationError as error:
            now = yield Now()
            self._apply(
                self._topology.application_error(
                    ApplicationError(
                        address=address,
                        kind=ErrorKind.COMMAND,
                        phase=ErrorPhase.AUTHENTICATING,
                        message=str(error),
                    ),
                    now=now,
                )
            )
            raise
        except IncompatibleServerError as error:
            yield from self._check_failed(address, error, cooldown=False)
            raise
        except MongoError as error:  # an ok: 0 or malformed hello reply
            yield from self._check_failed(address, error, cooldown=False)
            return
        if not isinstance(opened, Opened):
            raise LocalProtocolError(
                f"an OpenConnection must be answered with Opened, got {opened!r}"
            )
        now = yield Now()
        self.connection_opened(self.transport_address(address), opened, now, idle=True)

    def _check_idle(self, address: Address, connection: C) -> Generator[ClientRequest, Any, bool]:
        """Hello on an idle connection; False when the exchange failed (the adapter closed
        that connection) and the check must be made on a new one."""
        record = self._connections.record(connection)
        hello_ok = record is not None and record.description.hello_ok
        try:
            answer = yield CheckConnection(
                connection, {"hello": 1} if hello_ok else {"isMaster": 1}
            )
        except MongoError:
            return False
        if not isinstance(answer, CheckReply):
            raise LocalProtocolError(
                f"a CheckConnection must be answered with a CheckReply, got {answer!r}"
            )
        now = yield Now()
        if not self._closed:
            self._apply(
                self._topology.heartbeat_succeeded(
                    address, answer.reply, duration=answer.round_trip_time, now=now
                )
            )
        self._release(connection, now)
        return True

    def _check_failed(self, address: Address, error: MongoError, *, cooldown: bool) -> ScanFlow:
        now = yield Now()
        if self._closed:
            return
        self._apply(
            self._topology.heartbeat_failed(
                address,
                error,
                duration=0.0,
                now=now,
                timeout=isinstance(error, NetworkTimeout),
            )
        )
        if cooldown:
            self._cooldown_until[address] = now + COOLDOWN

    # -- connections ----------------------------------------------------------------------------

    def check_out(self, address: tuple[str, int], now: float) -> C | None:
        """An idle connection to ``address`` (a flow/transport address), or None: open one and
        report it with :meth:`connection_opened` (``idle=False``)."""
        self._require_open()
        return self._connections.check_out(self.sdam_address(address), now)

    def connection_opened(
        self, address: tuple[str, int], opened: Opened[C], now: float, *, idle: bool = False
    ) -> None:
        """A connection to ``address`` was established: keep it (checked out unless ``idle``)
        and let its handshake reply update the topology."""
        sdam_address = self.sdam_address(address)
        self._connections.add(
            sdam_address, opened.connection, opened.description, now=now, idle=idle
        )
        if self._closed:
            return
        self._described[sdam_address] = opened.description
        self._cooldown_until.pop(sdam_address, None)
        self._apply(
            self._topology.handshake_succeeded(
                sdam_address,
                opened.description.reply,
                round_trip_time=opened.round_trip_time,
                now=now,
            )
        )

    def check_in(self, connection: C, now: float) -> bool:
        """Take back a checked-out connection; False means the adapter must close it."""
        return self._connections.check_in(connection, now)

    def forget(self, connection: C) -> None:
        """The adapter closed ``connection`` because its I/O failed."""
        self._connections.forget(connection)

    def take_to_close(self) -> list[C]:
        """Connections the adapter must close now (pool clears, removed servers, close)."""
        return self._connections.take_to_close()

    def _release(self, connection: C, now: float) -> None:
        if not self._connections.check_in(connection, now):
            self._connections.discard(connection)

    # -- errors and commands ------------------------------------------------------------------

    def mark_server_unknown(self, request: MarkServerUnknown, now: float) -> None:
        """A flow saw ``request.error`` on ``request.address``: tell SDAM (see the module
        docstring)."""
        if self._closed:
            return
        address = self.sdam_address(request.address)
        server = self._topology.description.servers.get(address)
        if server is None:
            return
        error = request.error
        reply: Mapping[str, Any] | None = None
        if isinstance(error, NetworkTimeout):
            kind = ErrorKind.TIMEOUT
        elif isinstance(error, ServerError):
            kind = ErrorKind.COMMAND
            reply = error.details or {"ok": 0, "code": error.code, "errmsg": error.errmsg}
        else:
            kind = ErrorKind.NETWORK
        self._apply(
            self._topology.application_error(
                ApplicationError(
                    address=address,
                    kind=kind,
                    max_wire_version=server.max_wire_version if server.is_known else None,
                    reply=reply,
                    message=str(error),
                ),
                now=now,
            )
        )

    def command_body(self, server: ServerInfo, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """``body`` as sent to ``server``: a direct connection (topology Single) to a replica
        set member gets ``$readPreference: primaryPreferred`` when the flow set none, so that a
        secondary accepts the read (server-selection.md, "Topology type: Single")."""
        description = self._topology.description
        if description.type is not TopologyType.SINGLE or "$readPreference" in body:
            return body
        known = description.servers.get(self.sdam_address(server.address))
        if known is None or known.type in _READ_WITHOUT_PREFERENCE:
            return body
        return {**body, "$readPreference": {"mode": "primaryPreferred"}}

    def command_timeout(
        self, request_timeout: float | None, body: Mapping[str, Any]
    ) -> float | None:
        """How long the adapter may wait for this command's reply: the flow's own timeout when
        it set one, else socketTimeoutMS extended by the command's ``maxTimeMS`` (an awaitData
        getMore waits that long before answering, so a plain socket timeout would cut it
        off); None waits for ever."""
        if request_timeout is not None:
            return request_timeout
        timeout = self.settings.socket_timeout
        max_time_ms = body.get("maxTimeMS")
        if (
            timeout is not None
            and isinstance(max_time_ms, int | float)
            and not isinstance(max_time_ms, bool)
            and max_time_ms > 0
        ):
            return timeout + max_time_ms / 1000.0
        return timeout

    # -- closing --------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the client: the topology closes and every idle connection is to be closed
        (:meth:`take_to_close`); connections in use are refused when checked in."""
        if self._closed:
            return
        self._closed = True
        self._apply(self._topology.close())
        self._connections.close()

    def _require_open(self) -> None:
        if self._closed:
            raise InvalidOperation("the client is closed")

    # -- SDAM outputs ---------------------------------------------------------------------------

    def _apply(self, outputs: list[Output]) -> None:
        """Carry out what SDAM asked for that concerns this core; the rest (monitors, events)
        has no meaning without background monitoring."""
        for output in outputs:
            if isinstance(output, ServerOpeningEvent):
                self._connections.track(output.address)
            elif isinstance(output, ServerClosedEvent):
                self._connections.remove(output.address)
                self._cooldown_until.pop(output.address, None)
                self._described.pop(output.address, None)
            elif isinstance(output, ClearPool):
                self._connections.clear(output.address)
            elif isinstance(output, RequestImmediateCheck):
                self._stale = True
