"""SRV polling as the client runs it: a background task around the pure poller.

A client built from a ``mongodb+srv`` string whose topology may be sharded keeps rescanning
the SRV records (:class:`~mongo_sansio.uri.srv_polling.SrvPoller` decides when and what an
answer changes).  :func:`srv_poll_task` waits for the poller's deadline (woken early when the
client closes), asks the runtime to resolve (:class:`~.runtime.Resolve`), and hands the host
list to the topology (:meth:`~mongo_sansio.sdam.machine.Topology.srv_hosts`, through the core,
which opens and closes servers accordingly).  It stops for good once the topology is neither
Sharded nor Unknown (a replica set or a single server never polls), or when the client closes.

Inputs: the poller, the core's topology type, DNS answers, the time.  Outputs: host lists for
the topology.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import attrs

from mongo_sansio.client.runtime import Resolve, Signal, Wait
from mongo_sansio.flow import Now
from mongo_sansio.sdam.description import TopologyType
from mongo_sansio.uri.srv_polling import MIN_RESCAN_INTERVAL, SrvPoller

if TYPE_CHECKING:
    from mongo_sansio.client.core import ClientCore

__all__ = ["SrvSource", "srv_poll_task", "make_poller"]


@attrs.frozen
class SrvSource:
    """Where a ``mongodb+srv`` client's hosts came from: the SRV name, ``srvServiceName``,
    ``srvMaxHosts`` and the lowest TTL of the initial answer (None: the resolver gave none)."""

    hostname: str
    srv_service_name: str = "mongodb"
    srv_max_hosts: int = 0
    min_ttl: float | None = None
    rescan_floor: float = MIN_RESCAN_INTERVAL
    """rescanSRVIntervalMS in seconds: the shortest interval between two rescans."""


def make_poller(core: ClientCore, source: SrvSource, now: float) -> SrvPoller:
    settings = core.settings.topology
    return SrvPoller(
        source.hostname,
        hosts=list(core.description.servers),
        now=now,
        min_ttl=source.min_ttl,
        srv_service_name=source.srv_service_name,
        srv_max_hosts=source.srv_max_hosts,
        heartbeat_frequency=settings.heartbeat_frequency,
        randbelow=core.draw,
        load_balanced=core.description.type is TopologyType.LOAD_BALANCED,
        rescan_floor=source.rescan_floor,
    )


def srv_poll_task(core: ClientCore, poller: SrvPoller) -> Generator[Any, Any, None]:
    """Rescan until the poller stops or the client closes (see the module docstring)."""
    try:
        while not core.closed:
            poller.topology_type_changed(core.description.type)
            deadline = poller.next_deadline()
            if deadline is None:
                return
            signal = Signal("srv polling")
            core.srv_signal = signal
            yield Wait(signal, deadline)
            core.srv_signal = None
            if core.closed:
                return
            # the topology may have become a replica set while this task waited
            poller.topology_type_changed(core.description.type)
            now = yield Now()
            question = poller.handle_timeout(now)
            if question is None:
                continue
            answer = yield Resolve(question)
            if core.closed:
                return
            now = yield Now()
            result = poller.receive_answer(
                answer, now, current_hosts=list(core.description.servers)
            )
            if result.changed:
                core.srv_hosts_changed(list(result.hosts), now)
    finally:
        poller.close()
