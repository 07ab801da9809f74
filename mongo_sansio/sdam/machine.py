"""The topology machine: SDAM's state, inputs and outputs in one object.

Theory of operation
-------------------
:class:`Topology` holds the current :class:`TopologyDescription`, each server's RTT statistics
and a mirror of each connection pool's generation.  Every input is a method call that returns
the outputs it caused, in the order the adapter must publish or carry them out: SDAM events
(:mod:`mongo_sansio.sdam.events`) interleaved with actions (:mod:`mongo_sansio.sdam.actions`).
The rules themselves are the pure functions of :mod:`~mongo_sansio.sdam.topology` (updates)
and :mod:`~mongo_sansio.sdam.errors` (error classification); this class only sequences them.

Inputs (``now`` is monotonic seconds; durations are seconds):

* :meth:`Topology.open` -- once, first.
* :meth:`Topology.heartbeat_started`, :meth:`Topology.heartbeat_succeeded`,
  :meth:`Topology.heartbeat_failed` -- a monitor's check (an ``ok: 0`` or malformed reply
  counts as a failure).
* :meth:`Topology.rtt_sample` -- the streaming protocol's dedicated RTT measurements.
* :meth:`Topology.handshake_succeeded` -- an application connection's hello reply.
* :meth:`Topology.application_error` -- an operation failed (:class:`ApplicationError`).
* :meth:`Topology.srv_hosts` -- an SRV rescan's host list (mongos discovery).
* :meth:`Topology.close` -- last; afterwards every input raises :class:`LocalProtocolError`.

Outputs: lists of :data:`Output`.  Events follow the logging-and-monitoring spec's order: a
server's ServerDescriptionChangedEvent, then ServerOpening/ServerClosed events for servers the
update added or removed, then the TopologyDescriptionChangedEvent; actions that touch pools
(ClearPool, ReadyPool) come after the description they belong to is published.

Pool generations: the machine counts one generation per server (per server and ``serviceId``
when load-balanced), starting at 0 and bumped by every ClearPool it emits, so that stale
errors (from connections of an older generation) can be recognised.  The CMAP pool keeps the
same count because it increments its generation exactly when told to clear.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from typing import Any

import attrs

from mongo_sansio.bson import ObjectId
from mongo_sansio.errors import LocalProtocolError, command_succeeded
from mongo_sansio.sdam.actions import (
    ClearPool,
    MarkUnknown,
    ReadyPool,
    RequestImmediateCheck,
    SdamAction,
    StartMonitor,
    StopMonitor,
)
from mongo_sansio.sdam.description import (
    Address,
    InvalidHelloReply,
    ServerDescription,
    ServerType,
    TopologyType,
    is_address,
)
from mongo_sansio.sdam.errors import ApplicationError, classify_application_error
from mongo_sansio.sdam.events import (
    SdamEvent,
    ServerClosedEvent,
    ServerDescriptionChangedEvent,
    ServerHeartbeatFailedEvent,
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
    ServerOpeningEvent,
    TopologyClosedEvent,
    TopologyDescriptionChangedEvent,
    TopologyOpeningEvent,
)
from mongo_sansio.sdam.monitor import RoundTripTimes
from mongo_sansio.sdam.topology import (
    TopologyDescription,
    TopologySettings,
    apply_server_description,
    apply_srv_hosts,
)

__all__ = ["Topology", "Output"]

Output = SdamEvent | SdamAction
"""One thing the machine asks the adapter to publish (an event) or to do (an action)."""

_OLD_SERVER_WIRE_VERSION = 8  # servers before 4.2 close their connections on stepdown


class _State(enum.Enum):
    NEW = "new"
    OPEN = "open"
    CLOSED = "closed"


class Topology:
    """SDAM for one client: feed it checks and errors, publish and carry out what it returns.

    ``topology_id`` identifies this topology in its events (the adapter makes one, for example
    an ObjectId; the core draws no randomness).
    """

    def __init__(self, settings: TopologySettings, *, topology_id: object) -> None:
        if not isinstance(settings, TopologySettings):
            raise LocalProtocolError("settings must be a TopologySettings")
        self._settings = settings
        self._topology_id = topology_id
        self._state = _State.NEW
        self._description = TopologyDescription.empty()
        self._rtts: dict[Address, RoundTripTimes] = {}
        self._generations: dict[tuple[Address, ObjectId | None], int] = {}

    # -- read-only state ----------------------------------------------------------------------

    @property
    def settings(self) -> TopologySettings:
        return self._settings

    @property
    def topology_id(self) -> object:
        return self._topology_id

    @property
    def description(self) -> TopologyDescription:
        """The current description (immutable; each change replaces it)."""
        return self._description

    @property
    def closed(self) -> bool:
        return self._state is _State.CLOSED

    def pool_generation(self, address: Address, service_id: ObjectId | None = None) -> int:
        """The generation of ``address``'s pool (of its ``service_id`` connections when
        load-balanced), as counted by the ClearPool actions this machine emitted."""
        return self._generations.get((address, service_id), 0)

    # -- inputs -------------------------------------------------------------------------------

    def open(self) -> list[Output]:
        """Publish the opening events and start monitoring every seed."""
        if self._state is not _State.NEW:
            raise LocalProtocolError(f"open() on a topology that is {self._state.value}")
        self._state = _State.OPEN
        initial = TopologyDescription.initial(self._settings)
        out: list[Output] = [TopologyOpeningEvent(topology_id=self._topology_id)]
        out.append(self._description_changed(self._description, initial))
        self._description = initial
        load_balanced = initial.type is TopologyType.LOAD_BALANCED
        for address in initial.servers:
            out.append(ServerOpeningEvent(topology_id=self._topology_id, address=address))
            if not load_balanced:
                out.append(StartMonitor(address=address))
        if load_balanced:
            (address,) = initial.servers
            balancer = ServerDescription(address=address, type=ServerType.LOAD_BALANCER)
            out.extend(self._apply(balancer, successful_check=True))
        return out

    def heartbeat_started(self, address: Address, *, awaited: bool = False) -> list[Output]:
        """A monitor is about to check ``address`` (or to read its next streamed reply)."""
        self._require_monitoring(address)
        return [ServerHeartbeatStartedEvent(connection_id=address, awaited=awaited)]

    def heartbeat_succeeded(
        self,
        address: Address,
        reply: Mapping[str, Any],
        *,
        duration: float,
        now: float,
        awaited: bool = False,
    ) -> list[Output]:
        """A monitor's hello returned ``reply`` after ``duration`` seconds.

        ``awaited`` replies (streaming protocol) do not count as RTT samples.  A reply without
        ``ok: 1``, or one that breaks the protocol, is handled as a failed check.
        """
        self._require_monitoring(address)
        _check_time(duration, "duration")
        _check_time(now, "now")
        if not isinstance(reply, Mapping):
            raise LocalProtocolError("reply must be a decoded document (a mapping)")
        if not command_succeeded(reply):
            return self.heartbeat_failed(
                address, dict(reply), duration=duration, now=now, awaited=awaited
            )
        rtt = self._rtts.get(address, RoundTripTimes())
        if not awaited:
            rtt = rtt.add(duration)
        try:
            server = ServerDescription.from_hello(
                address,
                reply,
                round_trip_time=rtt.average,
                min_round_trip_time=rtt.minimum,
                now=now,
            )
        except InvalidHelloReply as exc:
            return self.heartbeat_failed(address, exc, duration=duration, now=now, awaited=awaited)
        out: list[Output] = [
            ServerHeartbeatSucceededEvent(
                connection_id=address, duration=duration, reply=reply, awaited=awaited
            )
        ]
        if address in self._description.servers:
            self._rtts[address] = rtt
        out.extend(self._apply(server, successful_check=True))
        return out

    def heartbeat_failed(
        self,
        address: Address,
        failure: object,
        *,
        duration: float,
        now: float,
        awaited: bool = False,
        timeout: bool = False,
    ) -> list[Output]:
        """A monitor's check of ``address`` failed: ``failure`` is a message, the exception the
        adapter caught, or the ``ok: 0`` reply; ``timeout`` for a network timeout.

        The server becomes Unknown and its pool is cleared (interrupting in-use connections
        after a timeout), as server-monitoring.md requires.
        """
        self._require_monitoring(address)
        _check_time(duration, "duration")
        _check_time(now, "now")
        out: list[Output] = [
            ServerHeartbeatFailedEvent(
                connection_id=address, duration=duration, failure=failure, awaited=awaited
            )
        ]
        self._rtts.pop(address, None)
        if address not in self._description.servers:
            return out
        unknown = ServerDescription.unknown(
            address, _failure_message(failure), last_update_time=now
        )
        out.extend(self._apply(unknown))
        if address in self._description.servers:
            out.append(
                self._clear(ClearPool(address=address, interrupt_in_use_connections=timeout))
            )
        return out

    def rtt_sample(self, address: Address, rtt: float) -> list[Output]:
        """A round trip measured on the streaming protocol's dedicated RTT connection.

        Updates the stored description's RTTs; never publishes events (RTT is not part of
        Server Description Equality).  Always returns an empty list.
        """
        self._require_monitoring(address)
        current = self._description.servers.get(address)
        if current is None:
            return []
        times = self._rtts.get(address, RoundTripTimes()).add(rtt)
        self._rtts[address] = times
        if current.is_known:
            servers = dict(self._description.servers)
            servers[address] = attrs.evolve(
                current, round_trip_time=times.average, min_round_trip_time=times.minimum
            )
            self._description = attrs.evolve(self._description, servers=servers)
        return []

    def handshake_succeeded(
        self, address: Address, reply: Mapping[str, Any], *, round_trip_time: float, now: float
    ) -> list[Output]:
        """An application connection completed its hello: update the topology from the reply
        as from a check (the spec's "SHOULD").  Ignored in load-balanced mode and for replies
        without ``ok: 1`` (report those with :meth:`application_error`)."""
        self._require_open()
        _check_address(address)
        _check_time(round_trip_time, "round_trip_time")
        _check_time(now, "now")
        if not isinstance(reply, Mapping):
            raise LocalProtocolError("reply must be a decoded document (a mapping)")
        if self._description.type is TopologyType.LOAD_BALANCED or not command_succeeded(reply):
            return []
        if address not in self._description.servers:
            return []
        rtt = self._rtts.get(address, RoundTripTimes()).add(round_trip_time)
        try:
            server = ServerDescription.from_hello(
                address,
                reply,
                round_trip_time=rtt.average,
                min_round_trip_time=rtt.minimum,
                now=now,
            )
        except InvalidHelloReply:
            return []  # the connection's own handshake machine reports the protocol error
        self._rtts[address] = rtt
        return self._apply(server, successful_check=True)

    def application_error(self, error: ApplicationError, *, now: float) -> list[Output]:
        """An application operation on ``error.address`` failed; see
        :mod:`mongo_sansio.sdam.errors` for what that changes."""
        self._require_open()
        _check_time(now, "now")
        if not isinstance(error, ApplicationError):
            raise LocalProtocolError("error must be an ApplicationError")
        server = self._description.servers.get(error.address)
        if server is None:
            return []
        load_balanced = self._description.type is TopologyType.LOAD_BALANCED
        generation = self.pool_generation(
            error.address, error.service_id if load_balanced else None
        )
        out: list[Output] = []
        for action in classify_application_error(
            error,
            topology_type=self._description.type,
            server=server,
            pool_generation=generation,
        ):
            if isinstance(action, MarkUnknown):
                self._rtts.pop(action.address, None)
                unknown = ServerDescription.unknown(
                    action.address,
                    action.error,
                    topology_version=action.topology_version,
                    last_update_time=now,
                )
                out.extend(self._apply(unknown))
            elif isinstance(action, ClearPool):
                out.append(self._clear(action))
            else:
                out.append(action)
        return out

    def srv_hosts(self, hosts: list[Address] | tuple[Address, ...]) -> list[Output]:
        """An SRV rescan found ``hosts``: servers no longer listed are closed, new ones opened
        (Unknown) and monitored.  No effect unless the topology is Sharded or Unknown."""
        self._require_open()
        for address in hosts:
            _check_address(address)
        old = self._description
        new = apply_srv_hosts(old, hosts, self._settings)
        if new is old:
            return []
        self._description = new
        tid = self._topology_id
        out: list[Output] = []
        for address in new.servers:
            if address not in old.servers:
                out.append(ServerOpeningEvent(topology_id=tid, address=address))
                out.append(StartMonitor(address=address))
        for address in old.servers:
            if address not in new.servers:
                out.append(StopMonitor(address=address))
                out.append(ServerClosedEvent(topology_id=tid, address=address))
                self._rtts.pop(address, None)
                for key in [k for k in self._generations if k[0] == address]:
                    del self._generations[key]
        if not old.equivalent_to(new):
            out.append(self._description_changed(old, new))
        return out

    def close(self) -> list[Output]:
        """Stop monitoring every server and publish the closing events (idempotent)."""
        if self._state is not _State.OPEN:
            self._state = _State.CLOSED
            return []
        self._state = _State.CLOSED
        old = self._description
        out: list[Output] = []
        for address in old.servers:
            if old.type is not TopologyType.LOAD_BALANCED:
                out.append(StopMonitor(address=address))
            out.append(ServerClosedEvent(topology_id=self._topology_id, address=address))
        self._description = TopologyDescription.empty()
        self._rtts.clear()
        out.append(self._description_changed(old, self._description))
        out.append(TopologyClosedEvent(topology_id=self._topology_id))
        return out

    # -- internals ----------------------------------------------------------------------------

    def _require_open(self) -> None:
        if self._state is not _State.OPEN:
            raise LocalProtocolError(f"the topology is {self._state.value}; call open() first")

    def _require_monitoring(self, address: object) -> None:
        self._require_open()
        _check_address(address)
        if self._description.type is TopologyType.LOAD_BALANCED:
            raise LocalProtocolError("a load-balanced topology has no monitors")

    def _description_changed(
        self, old: TopologyDescription, new: TopologyDescription
    ) -> TopologyDescriptionChangedEvent:
        return TopologyDescriptionChangedEvent(
            topology_id=self._topology_id, previous_description=old, new_description=new
        )

    def _clear(self, action: ClearPool) -> ClearPool:
        key = (action.address, action.service_id)
        self._generations[key] = self._generations.get(key, 0) + 1
        return action

    def _apply(self, server: ServerDescription, *, successful_check: bool = False) -> list[Output]:
        """Run the update rules for ``server`` and turn the result into outputs."""
        old = self._description
        update = apply_server_description(old, server, self._settings)
        if update.ignored:
            return []
        new = self._description = update.description
        tid = self._topology_id
        out: list[Output] = []
        previous = update.previous_server
        if previous is not None and not previous.equivalent_to(update.server):
            out.append(
                ServerDescriptionChangedEvent(
                    topology_id=tid,
                    address=server.address,
                    previous_description=previous,
                    new_description=update.server,
                )
            )
        for address in update.invalidated:
            out.append(
                ServerDescriptionChangedEvent(
                    topology_id=tid,
                    address=address,
                    previous_description=old.servers[address],
                    new_description=new.servers[address],
                )
            )
        for address in update.added:
            out.append(ServerOpeningEvent(topology_id=tid, address=address))
            out.append(StartMonitor(address=address))
        for address in update.removed:
            out.append(StopMonitor(address=address))
            out.append(ServerClosedEvent(topology_id=tid, address=address))
            self._rtts.pop(address, None)
            for key in [k for k in self._generations if k[0] == address]:
                del self._generations[key]
        if not old.equivalent_to(new):
            out.append(self._description_changed(old, new))
        stored = new.servers.get(server.address)
        if (
            successful_check
            and stored is not None
            and (stored.is_data_bearing or (stored.is_known and new.type is TopologyType.SINGLE))
        ):
            out.append(ReadyPool(address=server.address))
        for address in update.invalidated:
            if old.servers[address].max_wire_version < _OLD_SERVER_WIRE_VERSION:
                out.append(self._clear(ClearPool(address=address)))
            out.append(RequestImmediateCheck(address=address))
        return out


def _check_address(value: object) -> None:
    if not is_address(value):
        raise LocalProtocolError(f"address must be a (host, port) tuple, got {value!r}")


def _check_time(value: object, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise LocalProtocolError(f"{name} must be a number of seconds, got {value!r}")


def _failure_message(failure: object) -> str:
    if isinstance(failure, str):
        return failure or "check failed"
    if isinstance(failure, Mapping):
        message = failure.get("errmsg")
        code = failure.get("code")
        text = f"hello failed: {message}" if isinstance(message, str) else "hello failed"
        if isinstance(code, int) and not isinstance(code, bool):
            text += f" (code {code})"
        return text
    if isinstance(failure, BaseException):
        return f"{type(failure).__name__}: {failure}"
    return str(failure)
