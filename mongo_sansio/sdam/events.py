"""SDAM monitoring events (server-discovery-and-monitoring-logging-and-monitoring.md).

Frozen, slotted, keyword-only records.  The core builds them and returns them in order; an
adapter publishes them to listeners.  Field names follow the spec in snake_case
(``topologyId`` -> ``topology_id``).  Durations are seconds (floats).  The heartbeat events'
``connection_id`` is the monitored server's address, which the spec allows for drivers whose
monitors do not expose connection objects.  The heartbeat events also carry what the
logging spec's heartbeat messages need, None when the emitter does not know it: the
``topology_id``, the monitoring connection's ``driver_connection_id`` and its
``server_connection_id`` (the server's ``connectionId`` from the handshake).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mongo_sansio.sdam.description import Address, ServerDescription
from mongo_sansio.sdam.topology import TopologyDescription

__all__ = [
    "SdamEvent",
    "TopologyOpeningEvent",
    "TopologyClosedEvent",
    "TopologyDescriptionChangedEvent",
    "ServerOpeningEvent",
    "ServerClosedEvent",
    "ServerDescriptionChangedEvent",
    "ServerHeartbeatStartedEvent",
    "ServerHeartbeatSucceededEvent",
    "ServerHeartbeatFailedEvent",
]


@attrs.frozen(kw_only=True)
class TopologyOpeningEvent:
    """The topology was created; always the first SDAM event."""

    topology_id: object


@attrs.frozen(kw_only=True)
class TopologyClosedEvent:
    """The topology was closed; always the last SDAM event."""

    topology_id: object


@attrs.frozen(kw_only=True, unsafe_hash=False)
class TopologyDescriptionChangedEvent:
    """The topology description changed (by the equivalence rule, not by RTT alone)."""

    topology_id: object
    previous_description: TopologyDescription
    new_description: TopologyDescription


@attrs.frozen(kw_only=True)
class ServerOpeningEvent:
    """A server joined the topology (before its monitor starts)."""

    topology_id: object
    address: Address


@attrs.frozen(kw_only=True)
class ServerClosedEvent:
    """A server left the topology (its monitor is stopped)."""

    topology_id: object
    address: Address


@attrs.frozen(kw_only=True, unsafe_hash=False)
class ServerDescriptionChangedEvent:
    """A server's description changed by Server Description Equality."""

    topology_id: object
    address: Address
    previous_description: ServerDescription
    new_description: ServerDescription


@attrs.frozen(kw_only=True)
class ServerHeartbeatStartedEvent:
    """A monitor is about to send hello (or to open its connection, or to read the next
    streamed reply when ``awaited``)."""

    connection_id: Address
    awaited: bool = False
    topology_id: object = None
    driver_connection_id: int | None = None
    server_connection_id: int | None = None


@attrs.frozen(kw_only=True, unsafe_hash=False)
class ServerHeartbeatSucceededEvent:
    """A monitor's hello succeeded; ``duration`` (seconds) is the RTT sample unless awaited."""

    connection_id: Address
    duration: float
    reply: Mapping[str, Any]
    awaited: bool = False
    topology_id: object = None
    driver_connection_id: int | None = None
    server_connection_id: int | None = None


@attrs.frozen(kw_only=True, unsafe_hash=False)
class ServerHeartbeatFailedEvent:
    """A monitor's hello failed: ``failure`` is the error message, the exception the adapter
    caught, or the server's ``ok: 0`` reply document."""

    connection_id: Address
    duration: float
    failure: object
    awaited: bool = False
    topology_id: object = None
    driver_connection_id: int | None = None
    server_connection_id: int | None = None


SdamEvent = (
    TopologyOpeningEvent
    | TopologyClosedEvent
    | TopologyDescriptionChangedEvent
    | ServerOpeningEvent
    | ServerClosedEvent
    | ServerDescriptionChangedEvent
    | ServerHeartbeatStartedEvent
    | ServerHeartbeatSucceededEvent
    | ServerHeartbeatFailedEvent
)
