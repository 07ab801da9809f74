"""The server selection rules as pure functions (server-selection.md, max-staleness.md).

Theory of operation
-------------------
One selection attempt, given a topology description, is four filters and a choice:

1. :func:`suitable_servers` -- the servers the topology type, the operation (read or write) and
   the read preference allow.  For replica-set reads this is mode, then staleness
   (:func:`staleness`), then tag sets.  Deprioritized servers (those a retried operation already
   failed on) are left out when that leaves anything suitable; otherwise they are used after all.
2. the application's server selector, if any (:attr:`SelectionCriteria.server_selector`).
3. :func:`in_latency_window` -- the suitable servers whose average RTT is within
   ``localThresholdMS`` of the fastest.
4. :func:`choose` -- two random servers of the window (the draws are an input), the one with
   the smaller ``operationCount`` wins.

Inputs: a :class:`TopologyDescription`, :class:`SelectionCriteria`, heartbeat frequency and local
threshold (seconds), a random source (``draw(n)`` -> an int in ``range(n)``), operation counts.
Outputs: tuples of :class:`ServerDescription` (the filters) or one of them (the choice);
:class:`ConfigurationError` for a maxStalenessSeconds too small for a replica set;
:class:`IncompatibleTopologyError` when the topology says it is incompatible.

Deprioritization applies to every topology type, matched by address: the specification's test
data (ReplicaSetWithPrimary/read/Deprioritized*) expects it for replica sets too, while the older
prose limited it to sharded clusters; the data wins.

Times are seconds.  Staleness mixes the monotonic ``last_update_time`` with the wall-clock
``lastWriteDate``; the with-primary formula only uses differences of the two between servers,
so the clocks' offset cancels out.  A member that reported no lastWriteDate counts as having
written at the epoch: it looks maximally stale, so maxStalenessSeconds never picks it by
mistake.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

import attrs

from mongo_sansio.errors import LocalProtocolError
from mongo_sansio.sdam.description import Address, ServerDescription, ServerType, TopologyType
from mongo_sansio.sdam.topology import TopologyDescription
from mongo_sansio.selection.errors import IncompatibleTopologyError
from mongo_sansio.selection.read_preference import (
    PRIMARY,
    Mode,
    ReadPreference,
    TagSet,
    check_max_staleness,
)

__all__ = [
    "Operation",
    "ServerSelector",
    "RandomDraw",
    "SelectionCriteria",
    "check_compatible",
    "staleness",
    "suitable_servers",
    "in_latency_window",
    "choose",
    "select_server",
]

ServerSelector = Callable[[Sequence[ServerDescription]], Sequence[ServerDescription]]
"""An application's filter: suitable servers in, the ones still acceptable out."""
RandomDraw = Callable[[int], int]
"""``draw(n)`` returns an integer in ``range(n)``, uniformly (e.g. ``random.Random().randrange``)."""

# Comparisons of seconds computed from millisecond data get a tolerance far below a millisecond,
# so that 0.005 + 0.015 is still "<= 0.020" despite binary floating point.
_EPSILON: Final = 1e-9


class Operation(enum.Enum):
    READ = "read"
    WRITE = "write"


def _addresses(value: Iterable[Address]) -> frozenset[Address]:
    return frozenset(value)


@attrs.frozen(kw_only=True)
class SelectionCriteria:
    """What one selection looks for.

    ``read_preference`` only matters for reads.  ``deprioritized`` holds the addresses of
    servers a retried operation already failed on.  ``server_selector`` is the application's
    hook, called with the suitable servers; it must return a subset of them.
    """

    operation: Operation = Operation.READ
    read_preference: ReadPreference = PRIMARY
    deprioritized: frozenset[Address] = attrs.field(default=frozenset(), converter=_addresses)
    server_selector: ServerSelector | None = attrs.field(default=None, eq=False)

    @classmethod
    def for_read(
        cls,
        read_preference: ReadPreference = PRIMARY,
        *,
        deprioritized: Iterable[Address] = (),
        server_selector: ServerSelector | None = None,
    ) -> SelectionCriteria:
        return cls(
            operation=Operation.READ,
            read_preference=read_preference,
            deprioritized=frozenset(deprioritized),
            server_selector=server_selector,
        )

    @classmethod
    def for_write(
        cls,
        *,
        deprioritized: Iterable[Address] = (),
        server_selector: ServerSelector | None = None,
    ) -> SelectionCriteria:
        return cls(
            operation=Operation.WRITE,
            deprioritized=frozenset(deprioritized),
            server_selector=server_selector,
        )

    def __str__(self) -> str:
        text = (
            "a writable server" if self.operation is Operation.WRITE else str(self.read_preference)
        )
        if self.deprioritized:
            text += f" (deprioritized: {len(self.deprioritized)})"
        if self.server_selector is not None:
            text += " with a custom server selector"
        return text


def check_compatible(topology: TopologyDescription) -> None:
    """Raise :class:`IncompatibleTopologyError` with SDAM's text if the topology says so."""
    if not topology.compatible:
        raise IncompatibleTopologyError(
            topology.compatibility_error or "the topology is incompatible with this client"
        )


# -- staleness -----------------------------------------------------------------------------------


def _write_seconds(server: ServerDescription) -> float:
    return 0.0 if server.last_write_date is None else int(server.last_write_date) / 1000.0


def _staleness_of(
    topology: TopologyDescription, heartbeat_frequency: float
) -> Callable[[ServerDescription], float]:
    """The staleness formula for this topology, its per-topology terms computed once.

    Both formulas are ``u * S.lastUpdateTime - S.lastWriteDate + constant``: with a primary
    ``u = 1`` and the constant is ``heartbeat - (P.lastUpdateTime - P.lastWriteDate)``; without
    one ``u = 0`` and the constant is ``SMax.lastWriteDate + heartbeat``.
    """
    primary = topology.primary
    if topology.type is TopologyType.REPLICA_SET_WITH_PRIMARY and primary is not None:
        uses_update_time = True
        constant = heartbeat_frequency - (primary.last_update_time - _write_seconds(primary))
    else:
        uses_update_time = False
        latest = max(
            (
                _write_seconds(sd)
                for sd in topology.servers.values()
                if sd.type is ServerType.RS_SECONDARY
            ),
            default=0.0,
        )
        constant = latest + heartbeat_frequency

    def staleness_of(server: ServerDescription) -> float:
        if server.type is not ServerType.RS_SECONDARY:
            return 0.0
        written = server.last_write_date
        lag = constant - (0.0 if written is None else int(written) / 1000.0)
        if uses_update_time:
            lag += server.last_update_time
        # a never-checked description has last_update_time -inf: count it as infinitely stale
        return lag if math.isfinite(lag) else math.inf

    return staleness_of


def staleness(
    server: ServerDescription,
    topology: TopologyDescription,
    heartbeat_frequency: float,
) -> float:
    """A member's estimated replication lag in seconds (max-staleness.md).

    Non-secondaries have none.  With a primary ``P``:
    ``(S.lastUpdateTime - S.lastWriteDate) - (P.lastUpdateTime - P.lastWriteDate) + heartbeat``;
    without one, against the secondary ``SMax`` with the latest lastWriteDate:
    ``SMax.lastWriteDate - S.lastWriteDate + heartbeat``.
    """
    return _staleness_of(topology, heartbeat_frequency)(server)


def _fresh(
    candidates: Sequence[ServerDescription],
    topology: TopologyDescription,
    read_preference: ReadPreference,
    heartbeat_frequency: float,
) -> list[ServerDescription]:
    limit = read_preference.max_staleness_seconds
    if limit is None:
        return list(candidates)
    staleness_of = _staleness_of(topology, heartbeat_frequency)
    bound = limit + _EPSILON
    return [sd for sd in candidates if staleness_of(sd) <= bound]


def _tagged(
    candidates: Sequence[ServerDescription], tag_sets: Sequence[TagSet]
) -> list[ServerDescription]:
    """The first tag set that matches anything decides; no tag sets means no restriction.  A
    tag set matches a server whose tags include all of it (a subset test on item views)."""
    if not tag_sets:
        return list(candidates)
    for tag_set in tag_sets:
        wanted = tag_set.items()
        matching = [sd for sd in candidates if wanted <= sd.tags.items()]
        if matching:
            return matching
    return []


# -- suitability ----------------------------------------------------------------------------------


def _eligible_secondaries(
    servers: Sequence[ServerDescription],
    topology: TopologyDescription,
    read_preference: ReadPreference,
    heartbeat_frequency: float,
    *,
    with_primary: bool = False,
) -> list[ServerDescription]:
    wanted = (
        (ServerType.RS_SECONDARY, ServerType.RS_PRIMARY)
        if with_primary
        else (ServerType.RS_SECONDARY,)
    )
    candidates = [sd for sd in servers if sd.type in wanted]
    fresh = _fresh(candidates, topology, read_preference, heartbeat_frequency)
    return _tagged(fresh, read_preference.tag_sets)


def _replica_set_read(
    servers: Sequence[ServerDescription],
    topology: TopologyDescription,
    read_preference: ReadPreference,
    heartbeat_frequency: float,
) -> list[ServerDescription]:
    mode = read_preference.mode
    primaries = [sd for sd in servers if sd.type is ServerType.RS_PRIMARY]
    if mode is Mode.PRIMARY:
        return primaries
    if mode is Mode.PRIMARY_PREFERRED and primaries:
        return primaries
    if mode is Mode.NEAREST:
        return _eligible_secondaries(
            servers, topology, read_preference, heartbeat_frequency, with_primary=True
        )
    secondaries = _eligible_secondaries(servers, topology, read_preference, heartbeat_frequency)
    if mode is Mode.SECONDARY_PREFERRED and not secondaries:
        return primaries
    return secondaries


def _suitable_among(
    servers: Sequence[ServerDescription],
    topology: TopologyDescription,
    criteria: SelectionCriteria,
    heartbeat_frequency: float,
) -> list[ServerDescription]:
    kind = topology.type
    if kind is TopologyType.UNKNOWN:
        return []
    if kind is TopologyType.SINGLE:
        return [sd for sd in servers if sd.is_known]
    if kind is TopologyType.SHARDED:
        return [sd for sd in servers if sd.type is ServerType.MONGOS]
    if kind is TopologyType.LOAD_BALANCED:
        return [sd for sd in servers if sd.type is ServerType.LOAD_BALANCER]
    # replica sets
    if criteria.operation is Operation.WRITE:
        return [sd for sd in servers if sd.type is ServerType.RS_PRIMARY]
    return _replica_set_read(servers, topology, criteria.read_preference, heartbeat_frequency)


def suitable_servers(
    topology: TopologyDescription,
    criteria: SelectionCriteria,
    heartbeat_frequency: float,
) -> tuple[ServerDescription, ...]:
    """The servers suitable for ``criteria``, before the server selector and latency window.

    Raises :class:`ConfigurationError` when a replica set is asked for a maxStalenessSeconds
    below ``max(90, heartbeat_frequency + 10)``.
    """
    if criteria.operation is Operation.READ and topology.type in (
        TopologyType.REPLICA_SET_WITH_PRIMARY,
        TopologyType.REPLICA_SET_NO_PRIMARY,
    ):
        check_max_staleness(criteria.read_preference, heartbeat_frequency)
    servers = list(topology.servers.values())
    if criteria.deprioritized:
        preferred = [sd for sd in servers if sd.address not in criteria.deprioritized]
        if len(preferred) < len(servers):
            found = _suitable_among(preferred, topology, criteria, heartbeat_frequency)
            if found:
                return tuple(found)
    return tuple(_suitable_among(servers, topology, criteria, heartbeat_frequency))


def _rtt(server: ServerDescription) -> float:
    # a known server always has an RTT; an unmeasured one is not held against it
    return server.round_trip_time if server.round_trip_time is not None else 0.0


def in_latency_window(
    servers: Sequence[ServerDescription], local_threshold: float
) -> tuple[ServerDescription, ...]:
    """The servers whose average RTT is at most ``local_threshold`` seconds above the fastest."""
    if not servers:
        return ()
    limit = min(_rtt(sd) for sd in servers) + local_threshold + _EPSILON
    return tuple(sd for sd in servers if _rtt(sd) <= limit)


def choose(
    window: Sequence[ServerDescription],
    draw: RandomDraw,
    operation_counts: Mapping[Address, int] | None = None,
) -> ServerDescription:
    """Two distinct random servers of ``window``; the one with fewer operations in progress
    (absent counts are 0; a tie goes to the first drawn).  ``window`` must not be empty."""
    if not window:
        raise LocalProtocolError("choose() needs at least one server")
    if len(window) == 1:
        return window[0]
    first = _draw(draw, len(window))
    second = _draw(draw, len(window) - 1)
    if second >= first:
        second += 1  # a second distinct index, uniformly among the others
    a, b = window[first], window[second]
    counts = operation_counts or {}
    return b if counts.get(b.address, 0) < counts.get(a.address, 0) else a


def _draw(draw: RandomDraw, n: int) -> int:
    value = draw(n)
    if not isinstance(value, int) or not 0 <= value < n:
        raise LocalProtocolError(f"the random source returned {value!r}, not an int in range({n})")
    return value


def select_server(
    topology: TopologyDescription,
    criteria: SelectionCriteria,
    *,
    heartbeat_frequency: float,
    local_threshold: float,
    draw: RandomDraw,
    operation_counts: Mapping[Address, int] | None = None,
) -> ServerDescription | None:
    """One selection attempt: compatibility, suitability, the server selector, the latency
    window, the choice.  None when nothing is suitable now."""
    window = selection_window(
        topology, criteria, heartbeat_frequency=heartbeat_frequency, local_threshold=local_threshold
    )
    if not window:
        return None
    return choose(window, draw, operation_counts)


def selection_window(
    topology: TopologyDescription,
    criteria: SelectionCriteria,
    *,
    heartbeat_frequency: float,
    local_threshold: float,
) -> tuple[ServerDescription, ...]:
    """Everything of :func:`select_server` but the choice: compatibility, suitability, the
    server selector and the latency window (empty when nothing is suitable now).  Without a
    server selector it depends only on its arguments, so a caller may keep it for as long as
    the topology description is the same object."""
    check_compatible(topology)
    suitable: Sequence[ServerDescription] = suitable_servers(
        topology, criteria, heartbeat_frequency
    )
    if criteria.server_selector is not None and suitable:
        # keep only what was offered: a selector cannot make an unsuitable server suitable
        offered = {sd.address for sd in suitable}
        suitable = tuple(sd for sd in criteria.server_selector(suitable) if sd.address in offered)
    return in_latency_window(suitable, local_threshold)
