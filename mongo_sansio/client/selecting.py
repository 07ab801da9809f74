"""Server selection as the client runs it: wait for a suitable server, never poll.

Theory of operation
-------------------
:func:`select` tries the pure selection rules (:func:`~mongo_sansio.selection.select_server`)
on the current topology description.  With nothing suitable it asks every monitor for an
immediate check and waits on a signal the core fires when the description changes, until the
selection's deadline: serverSelectionTimeoutMS after it began, or the operation's own earlier
deadline.  The error then names the time waited, what was asked for and the topology seen.

Inputs: the request (read preference, writes, deprioritized servers, the operation's name),
the deadline, the answers to ``Now`` and ``Wait``.  Outputs: the chosen server's
:class:`~mongo_sansio.flow.ServerInfo`; the selection events (started, waiting once, succeeded
or failed) through the core's ``publish``.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any, Final

from mongo_sansio.client.runtime import Wait
from mongo_sansio.errors import MongoError
from mongo_sansio.flow import Now, SelectServer, ServerInfo
from mongo_sansio.sdam.description import Address, ServerDescription, ServerType, TopologyType
from mongo_sansio.sdam.topology import TopologyDescription
from mongo_sansio.selection import (
    PRIMARY,
    Mode,
    SelectionCriteria,
    ServerSelectionTimeoutError,
    choose,
    describe_topology,
    select_server,
    selection_window,
)
from mongo_sansio.selection.events import (
    ServerSelectionFailed,
    ServerSelectionStarted,
    ServerSelectionSucceeded,
    ServerSelectionWaiting,
    describe_selector,
)

if TYPE_CHECKING:
    from mongo_sansio.client.core import ClientCore

__all__ = ["select", "select_known", "criteria_for"]

Flow = Generator[Any, Any, Any]


def select_known(core: ClientCore, request: SelectServer) -> ServerInfo | None:
    """The server :func:`select` would return at once, without waiting or publishing (None:
    none suits now, or selection events are listened for: run :func:`select`).  Selection
    does not depend on the time, so the common case needs no clock reading and no flow."""
    if core.publish is not None:
        return None
    core.require_open()
    server = _known_server(core, criteria_for(core, request))
    return None if server is None else core.server_info(server.address)


def select(
    core: ClientCore,
    request: SelectServer,
    deadline: float | None = None,
    *,
    operation_id: int | None = None,
) -> Flow:
    """Wait for a server that suits ``request`` until serverSelectionTimeoutMS (or the
    operation's earlier ``deadline``); returns its :class:`ServerInfo`.  Publishes the
    selection events (started, waiting once, succeeded or failed)."""
    # The common case first: a suitable server is known and nobody listens for the events, so
    # no clock reading and no waiter are needed (the loop below would pick the same server)
    known = select_known(core, request)
    if known is not None:
        return known
    core.require_open()
    criteria = criteria_for(core, request)
    settings = core.settings.topology
    publish = core.publish
    start = yield Now()
    core.last_now = start
    limit = start + settings.server_selection_timeout
    if deadline is not None and deadline < limit:
        limit = deadline
    selector = describe_selector(criteria) if publish is not None else ""
    ids: dict[str, Any] = {"selector": selector, "operation": request.operation, "operation_id": operation_id}
    if publish is not None:
        publish(ServerSelectionStarted(topology_description=core.description, **ids))
    waited = False
    try:
        while True:
            core.require_open()
            # asked for before looking: a change while this flow is away from the core (it
            # yields Now below) then still wakes it, instead of the end of its time
            signal = core.wait_for_topology_change()
            try:
                server = select_server(
                    core.description,
                    criteria,
                    heartbeat_frequency=settings.heartbeat_frequency,
                    local_threshold=settings.local_threshold,
                    draw=core.draw,
                    operation_counts=core.in_use_counts(),
                )
                if server is not None:
                    if publish is not None:
                        publish(
                            ServerSelectionSucceeded(
                                topology_description=core.description,
                                address=server.address,
                                **ids,
                            )
                        )
                    return core.server_info(server.address)
                now = yield Now()
                core.last_now = now
                if now >= limit:
                    raise ServerSelectionTimeoutError(
                        f"Server selection timed out after {now - start:.3g} s: no server "
                        f"suitable for {criteria}; {describe_topology(core.description)}"
                    )
                if publish is not None and not waited:
                    publish(
                        ServerSelectionWaiting(
                            topology_description=core.description,
                            remaining_time=limit - now,
                            **ids,
                        )
                    )
                waited = True
                core.request_checks(now)
                yield Wait(signal, limit)
            finally:
                core.forget_waiter(signal)
    except MongoError as error:
        if publish is not None:
            publish(
                ServerSelectionFailed(
                    topology_description=core.description, failure=error, **ids
                )
            )
        raise


# The criteria of nearly every selection, made once: what a selection with them finds is
# then remembered for the current topology description (_known_server).
_PRIMARY_READ = SelectionCriteria.for_read(PRIMARY)
_WRITE = SelectionCriteria.for_write()


def _known_server(core: ClientCore, criteria: SelectionCriteria) -> ServerDescription | None:
    """What :func:`select_server` would choose now, without waiting (None: nothing suits).

    For the two common criteria the latency window is remembered with the description it
    came from, in one tuple swapped whole (flows of other threads may select meanwhile): a
    description is never changed, a new one replaces it, so the same object gives the same
    window.  Only the choice among several servers is made anew (it is random, and weighs
    the operations in progress)."""
    description = core.description
    slot = 1 if criteria is _PRIMARY_READ else 2 if criteria is _WRITE else 0
    memo = core.selection_windows
    window = memo[slot] if slot and memo[0] is description else None
    if window is None:
        settings = core.settings.topology
        window = selection_window(
            description,
            criteria,
            heartbeat_frequency=settings.heartbeat_frequency,
            local_threshold=settings.local_threshold,
        )
        if slot:
            kept = list(memo) if memo[0] is description else [description, None, None]
            kept[slot] = window
            core.selection_windows = (kept[0], kept[1], kept[2])
    if not window:
        return None
    if len(window) == 1:  # (choose's own answer, without counting the operations in use)
        return window[0]
    return choose(window, core.draw, core.in_use_counts())


def criteria_for(core: ClientCore, request: SelectServer) -> SelectionCriteria:
    if not request.deprioritized:
        if request.for_writes:
            return _WRITE
        # any primary read preference equals PRIMARY (that mode allows no tags, staleness or
        # hedge), and the one a collection holds is often an equal copy, not PRIMARY itself
        if request.read_preference.mode is Mode.PRIMARY:
            return _PRIMARY_READ
    deprioritized = frozenset(core.sdam_address(a) for a in request.deprioritized)
    if request.for_writes:
        return SelectionCriteria.for_write(deprioritized=deprioritized)
    return SelectionCriteria.for_read(request.read_preference, deprioritized=deprioritized)


#: servers that take no ``$readPreference`` from a direct connection
_READ_WITHOUT_PREFERENCE: Final = frozenset(
    {ServerType.MONGOS, ServerType.LOAD_BALANCER, ServerType.STANDALONE}
)


def direct_read_preference(
    description: TopologyDescription, address: Address, body: Mapping[str, Any]
) -> Mapping[str, Any]:
    """``body`` as sent to the server at ``address``: a direct connection (topology Single)
    to a replica set member gets ``$readPreference: primaryPreferred`` when the flow set
    none (Server Selection spec, "Topology Type Single")."""
    if description.type is not TopologyType.SINGLE or "$readPreference" in body:
        return body
    known = description.servers.get(address)
    if known is None or known.type in _READ_WITHOUT_PREFERENCE:
        return body
    return {**body, "$readPreference": {"mode": "primaryPreferred"}}
