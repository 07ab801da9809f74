"""What SDAM asks an adapter to do (frozen, keyword-only records).

The topology machine returns these, in order, mixed with events; the adapter carries them out
under the same lock that serialises its calls into the machine, so that clearing a pool is
synchronised with marking the server Unknown (the spec requires it).

* :class:`StartMonitor` / :class:`StopMonitor` -- a server was added to / removed from the
  topology: begin monitoring it / stop its monitor and close its connection pool (a server
  added again later starts over with a new pool, generation 0).
* :class:`ReadyPool` -- create the server's connection pool if needed and mark it ready (after
  a successful check of a data-bearing server, or any known server on a direct connection).
* :class:`ClearPool` -- clear the server's pool (only connections of ``service_id`` in
  load-balanced mode); ``interrupt_in_use_connections`` after a monitor's network timeout.
* :class:`RequestImmediateCheck` -- wake the server's monitor (it still honours
  minHeartbeatFrequencyMS).
* :class:`CancelCheck` -- interrupt the monitor's in-progress check and close its connection
  (after a non-timeout network error on an application connection).
* :class:`MarkUnknown` -- produced by error classification (:mod:`mongo_sansio.sdam.errors`)
  and consumed by the topology machine itself, which turns it into an Unknown description run
  through the update rules; adapters never see it from the machine.
"""

from __future__ import annotations

import attrs

from mongo_sansio.bson import ObjectId
from mongo_sansio.sdam.description import Address, TopologyVersion

__all__ = [
    "SdamAction",
    "StartMonitor",
    "StopMonitor",
    "ReadyPool",
    "ClearPool",
    "RequestImmediateCheck",
    "CancelCheck",
    "MarkUnknown",
]


@attrs.frozen(kw_only=True)
class StartMonitor:
    address: Address


@attrs.frozen(kw_only=True)
class StopMonitor:
    address: Address


@attrs.frozen(kw_only=True)
class ReadyPool:
    address: Address


@attrs.frozen(kw_only=True)
class ClearPool:
    address: Address
    service_id: ObjectId | None = None
    interrupt_in_use_connections: bool = False


@attrs.frozen(kw_only=True)
class RequestImmediateCheck:
    address: Address


@attrs.frozen(kw_only=True)
class CancelCheck:
    address: Address


@attrs.frozen(kw_only=True)
class MarkUnknown:
    address: Address
    error: str
    topology_version: TopologyVersion | None = None


SdamAction = (
    StartMonitor | StopMonitor | ReadyPool | ClearPool | RequestImmediateCheck | CancelCheck
)
"""Actions the topology machine returns to adapters (MarkUnknown is internal)."""
