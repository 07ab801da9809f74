"""What the client knows about the deployment, and the pure rules that update it.

Theory of operation
-------------------
:class:`TopologyDescription` is immutable.  :func:`apply_server_description` takes the current
description, one new :class:`ServerDescription` (from a check, or the Unknown description an
error produced) and the :class:`TopologySettings`, and returns a :class:`TopologyUpdate`: the new
description plus what changed (servers added, removed, old primaries invalidated).  It never
mutates its inputs, keeps no time and publishes nothing; turning an update into events and
actions is the job of :class:`mongo_sansio.sdam.machine.Topology`.

Inputs: a TopologyDescription, a ServerDescription, TopologySettings.
Outputs: a TopologyUpdate (new description; added/removed/invalidated addresses).

Rule 1: the spec's "TopologyType table" is the data :data:`TRANSITIONS`: for each
(TopologyType, ServerType) pair, the named steps to run after the server's description is
replaced.  Rule 2: TopologyType Single and LoadBalanced never change type; they have no table
row.  Rule 3: a description from a server not in the topology, or one whose topologyVersion is
older than the stored one, is ignored (``TopologyUpdate.ignored``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final

import attrs

from mongo_sansio.bson import ObjectId
from mongo_sansio.errors import ConfigurationError
from mongo_sansio.sdam.description import (
    Address,
    ServerDescription,
    ServerType,
    TopologyType,
    compare_topology_versions,
    format_address,
    parse_address,
    topology_type_code,
)

__all__ = [
    "CLIENT_MIN_WIRE_VERSION",
    "CLIENT_MAX_WIRE_VERSION",
    "MIN_HEARTBEAT_FREQUENCY",
    "TopologySettings",
    "TopologyDescription",
    "TopologyUpdate",
    "TRANSITIONS",
    "apply_server_description",
    "apply_srv_hosts",
    "STALE_PRIMARY_ERROR",
    "NEWER_PRIMARY_ERROR",
]

CLIENT_MIN_WIRE_VERSION: Final = 8  # MongoDB 4.2
CLIENT_MAX_WIRE_VERSION: Final = 27  # MongoDB 8.2
MIN_HEARTBEAT_FREQUENCY: Final = 0.5  # seconds; minHeartbeatFrequencyMS, not configurable

STALE_PRIMARY_ERROR: Final = "primary marked stale due to electionId/setVersion mismatch"
NEWER_PRIMARY_ERROR: Final = "primary marked stale due to discovery of newer primary"

# MongoDB release that introduced a wire version, for the "requires at least" message.
_MONGODB_VERSIONS: Final = {
    6: "3.6", 7: "4.0", 8: "4.2", 9: "4.4", 13: "5.0", 17: "6.0", 21: "7.0", 25: "8.0",
}  # fmt: skip


def _seeds(value: Iterable[str | Address]) -> tuple[Address, ...]:
    seeds: dict[Address, None] = {}
    for seed in value:
        if isinstance(seed, str):
            address = parse_address(seed)
        elif (
            isinstance(seed, tuple)
            and len(seed) == 2
            and isinstance(seed[0], str)
            and isinstance(seed[1], int)
        ):
            address = parse_address(format_address((seed[0], seed[1])))
        else:
            raise ConfigurationError(f"seeds: expected 'host:port' or (host, port), got {seed!r}")
        seeds[address] = None
    return tuple(seeds)


@attrs.frozen(kw_only=True)
class TopologySettings:
    """Client options that shape discovery.  Times are seconds.

    ``direct_connection`` None means "not given" (treated as false).  Validation follows the
    spec's "Allowed configuration combinations" and raises :class:`ConfigurationError` naming
    the URI option.
    """

    seeds: tuple[Address, ...] = attrs.field(converter=_seeds)
    set_name: str | None = None
    direct_connection: bool | None = None
    load_balanced: bool = False
    heartbeat_frequency: float = 10.0
    local_threshold: float = 0.015
    server_selection_timeout: float = 30.0
    client_min_wire_version: int = CLIENT_MIN_WIRE_VERSION
    client_max_wire_version: int = CLIENT_MAX_WIRE_VERSION
    driver_name: str = "mongo-sansio"

    def __attrs_post_init__(self) -> None:
        if not self.seeds:
            raise ConfigurationError("seeds: at least one host is required")
        if self.set_name is not None and not self.set_name:
            raise ConfigurationError("replicaSet: must not be empty")
        if self.direct_connection and len(self.seeds) > 1:
            raise ConfigurationError("directConnection=true cannot be used with multiple seeds")
        if self.load_balanced:
            if len(self.seeds) > 1:
                raise ConfigurationError("loadBalanced=true cannot be used with multiple seeds")
            if self.set_name is not None:
                raise ConfigurationError("loadBalanced=true cannot be used with replicaSet")
            if self.direct_connection:
                raise ConfigurationError(
                    "loadBalanced=true cannot be used with directConnection=true"
                )
        if not self.heartbeat_frequency >= MIN_HEARTBEAT_FREQUENCY:
            raise ConfigurationError("heartbeatFrequencyMS: must be at least 500")
        if not self.local_threshold >= 0:
            raise ConfigurationError("localThresholdMS: must not be negative")
        if not self.server_selection_timeout >= 0:
            raise ConfigurationError("serverSelectionTimeoutMS: must not be negative")

    @property
    def initial_type(self) -> TopologyType:
        """The spec's "Initial TopologyType" table, plus loadBalanced."""
        if self.load_balanced:
            return TopologyType.LOAD_BALANCED
        if self.direct_connection:
            return TopologyType.SINGLE
        if self.set_name is not None:
            return TopologyType.REPLICA_SET_NO_PRIMARY
        return TopologyType.UNKNOWN


def _frozen_servers(
    value: Mapping[Address, ServerDescription],
) -> Mapping[Address, ServerDescription]:
    return MappingProxyType(dict(value))


@attrs.frozen(kw_only=True, unsafe_hash=False)
class TopologyDescription:
    """The client's view of the deployment (server-discovery-and-monitoring.md).

    ``servers`` maps each address to its description, in discovery order.  ``compatible``,
    ``compatibility_error`` and ``logical_session_timeout_minutes`` are derived from the
    servers by :func:`apply_server_description`.  ``==`` compares every field;
    :meth:`equivalent_to` is what decides whether to publish a change.
    """

    type: TopologyType
    servers: Mapping[Address, ServerDescription] = attrs.field(
        factory=dict, converter=_frozen_servers
    )
    set_name: str | None = None
    max_set_version: int | None = None
    max_election_id: ObjectId | None = None
    compatible: bool = True
    compatibility_error: str | None = None
    logical_session_timeout_minutes: int | None = None

    @classmethod
    def initial(cls, settings: TopologySettings) -> TopologyDescription:
        """The description before any check: every seed Unknown, the initial type."""
        return cls(
            type=settings.initial_type,
            servers={address: ServerDescription.unknown(address) for address in settings.seeds},
            set_name=settings.set_name,
        )

    @classmethod
    def empty(cls) -> TopologyDescription:
        """Type Unknown with no servers: before opening and after closing."""
        return cls(type=TopologyType.UNKNOWN)

    def equivalent_to(self, other: TopologyDescription) -> bool:
        """Equal type, set name, election tuple, derived fields, and equivalent servers."""
        return (
            self.type == other.type
            and self.set_name == other.set_name
            and self.max_set_version == other.max_set_version
            and self.max_election_id == other.max_election_id
            and self.compatible == other.compatible
            and self.compatibility_error == other.compatibility_error
            and self.logical_session_timeout_minutes == other.logical_session_timeout_minutes
            and self.servers.keys() == other.servers.keys()
            and all(sd.equivalent_to(other.servers[a]) for a, sd in self.servers.items())
        )

    # -- questions server selection asks ----------------------------------------------------

    @property
    def known_servers(self) -> tuple[ServerDescription, ...]:
        """Servers of a known type (not Unknown nor PossiblePrimary)."""
        return tuple(sd for sd in self.servers.values() if sd.is_known)

    @property
    def primary(self) -> ServerDescription | None:
        for sd in self.servers.values():
            if sd.type is ServerType.RS_PRIMARY:
                return sd
        return None

    @property
    def common_wire_version(self) -> int | None:
        """The smallest maxWireVersion among known servers (None when none is known)."""
        versions = [sd.max_wire_version for sd in self.known_servers]
        return min(versions) if versions else None

    def has_writable_server(self) -> bool:
        """The logging-and-monitoring spec's ``hasWritableServer``: a known server in Single
        and Sharded topologies, a primary in replica sets, always when load-balanced."""
        if self.type is TopologyType.LOAD_BALANCED:
            return True
        if self.type in (TopologyType.SINGLE, TopologyType.SHARDED):
            return bool(self.known_servers)
        if self.type is TopologyType.REPLICA_SET_WITH_PRIMARY:
            return self.primary is not None
        return False

    def has_readable_server(self) -> bool:
        """``hasReadableServer`` for the default read preference (primary); server selection
        answers the question for other read preferences."""
        return self.has_writable_server()

    # -- PyMongo's names, for monitoring listeners (pymongo.topology_description) ----------

    @property
    def topology_type(self) -> int:
        """PyMongo's integer code for the type (``TOPOLOGY_TYPE`` in
        :mod:`mongo_sansio.sdam.description`)."""
        return topology_type_code(self.type)

    @property
    def topology_type_name(self) -> str:
        """PyMongo's name for the type: "ReplicaSetWithPrimary", "Single", "Unknown", ..."""
        return self.type.value

    def server_descriptions(self) -> dict[Address, ServerDescription]:
        """A new dict of address -> ServerDescription, as PyMongo's method returns."""
        return dict(self.servers)

    def has_server(self, address: Address) -> bool:
        return address in self.servers

    @property
    def replica_set_name(self) -> str | None:
        return self.set_name

    @property
    def has_known_servers(self) -> bool:
        return bool(self.known_servers)

    @property
    def readable_servers(self) -> tuple[ServerDescription, ...]:
        """Known servers that may receive reads (data-bearing)."""
        return tuple(sd for sd in self.servers.values() if sd.is_readable)


@attrs.frozen(kw_only=True)
class TopologyUpdate:
    """What :func:`apply_server_description` did.

    ``server`` is the description now stored for the checked address (it may differ from the
    input: a stale primary is stored as Unknown), or the input itself when the rules removed
    the server.  ``invalidated`` lists old primaries replaced by Unknown.  ``ignored`` is true
    when the input was dropped (server not in the topology, or an older topologyVersion); the
    description is then unchanged.
    """

    description: TopologyDescription
    server: ServerDescription
    previous_server: ServerDescription | None
    added: tuple[Address, ...] = ()
    removed: tuple[Address, ...] = ()
    invalidated: tuple[Address, ...] = ()
    ignored: bool = False


# -- the TopologyType table, as data -------------------------------------------------------------

_U, _SH = TopologyType.UNKNOWN, TopologyType.SHARDED
_NP, _WP = TopologyType.REPLICA_SET_NO_PRIMARY, TopologyType.REPLICA_SET_WITH_PRIMARY
_RS_MEMBER = ("update_rs_without_primary",)
_WITH_CHECK = ("check_if_has_primary",)

TRANSITIONS: Final[Mapping[tuple[TopologyType, ServerType], tuple[str, ...]]] = MappingProxyType({
    # TopologyType Unknown
    (_U, ServerType.UNKNOWN): (),
    (_U, ServerType.POSSIBLE_PRIMARY): (),
    (_U, ServerType.STANDALONE): ("update_unknown_with_standalone",),
    (_U, ServerType.MONGOS): ("set_sharded",),
    (_U, ServerType.RS_PRIMARY): ("set_rs_with_primary", "update_rs_from_primary"),
    (_U, ServerType.RS_SECONDARY): ("set_rs_no_primary", *_RS_MEMBER),
    (_U, ServerType.RS_ARBITER): ("set_rs_no_primary", *_RS_MEMBER),
    (_U, ServerType.RS_OTHER): ("set_rs_no_primary", *_RS_MEMBER),
    (_U, ServerType.RS_GHOST): (),
    (_U, ServerType.LOAD_BALANCER): ("remove",),
    # TopologyType Sharded
    (_SH, ServerType.UNKNOWN): (),
    (_SH, ServerType.POSSIBLE_PRIMARY): (),
    (_SH, ServerType.STANDALONE): ("remove",),
    (_SH, ServerType.MONGOS): (),
    (_SH, ServerType.RS_PRIMARY): ("remove",),
    (_SH, ServerType.RS_SECONDARY): ("remove",),
    (_SH, ServerType.RS_ARBITER): ("remove",),
    (_SH, ServerType.RS_OTHER): ("remove",),
    (_SH, ServerType.RS_GHOST): ("remove",),
    (_SH, ServerType.LOAD_BALANCER): ("remove",),
    # TopologyType ReplicaSetNoPrimary
    (_NP, ServerType.UNKNOWN): (),
    (_NP, ServerType.POSSIBLE_PRIMARY): (),
    (_NP, ServerType.STANDALONE): ("remove",),
    (_NP, ServerType.MONGOS): ("remove",),
    (_NP, ServerType.RS_PRIMARY): ("set_rs_with_primary", "update_rs_from_primary"),
    (_NP, ServerType.RS_SECONDARY): _RS_MEMBER,
    (_NP, ServerType.RS_ARBITER): _RS_MEMBER,
    (_NP, ServerType.RS_OTHER): _RS_MEMBER,
    (_NP, ServerType.RS_GHOST): (),
    (_NP, ServerType.LOAD_BALANCER): ("remove",),
    # TopologyType ReplicaSetWithPrimary
    (_WP, ServerType.UNKNOWN): _WITH_CHECK,
    (_WP, ServerType.POSSIBLE_PRIMARY): _WITH_CHECK,
    (_WP, ServerType.STANDALONE): ("remove", *_WITH_CHECK),
    (_WP, ServerType.MONGOS): ("remove", *_WITH_CHECK),
    (_WP, ServerType.RS_PRIMARY): ("update_rs_from_primary",),
    (_WP, ServerType.RS_SECONDARY): ("update_rs_with_primary_from_member",),
    (_WP, ServerType.RS_ARBITER): ("update_rs_with_primary_from_member",),
    (_WP, ServerType.RS_OTHER): ("update_rs_with_primary_from_member",),
    (_WP, ServerType.RS_GHOST): _WITH_CHECK,
    (_WP, ServerType.LOAD_BALANCER): ("remove", *_WITH_CHECK),
})  # fmt: skip
"""(current TopologyType, new ServerType) -> the steps to run after replacing the server's
description; ``()`` is the spec's "no-op".  Single and LoadBalanced have no rows."""


class _Draft:
    """A mutable working copy used while one update's steps run; never escapes this module."""

    def __init__(self, description: TopologyDescription, settings: TopologySettings) -> None:
        self.type = description.type
        self.set_name = description.set_name
        self.max_set_version = description.max_set_version
        self.max_election_id = description.max_election_id
        self.servers = dict(description.servers)
        self.settings = settings
        self.invalidated: list[Address] = []

    def remove(self, address: Address) -> None:
        self.servers.pop(address, None)

    def add_unknown(self, addresses: Iterable[Address]) -> None:
        for address in sorted(addresses):
            if address not in self.servers:
                self.servers[address] = ServerDescription.unknown(address)

    def mark_possible_primary(self, address: Address | None) -> None:
        current = self.servers.get(address) if address is not None else None
        if current is not None and current.type is ServerType.UNKNOWN:
            self.servers[current.address] = attrs.evolve(current, type=ServerType.POSSIBLE_PRIMARY)

    def check_if_has_primary(self) -> None:
        has_primary = any(sd.type is ServerType.RS_PRIMARY for sd in self.servers.values())
        self.type = _WP if has_primary else _NP


Step = Callable[[_Draft, ServerDescription], None]


def _remove(draft: _Draft, sd: ServerDescription) -> None:
    draft.remove(sd.address)


def _check_if_has_primary(draft: _Draft, sd: ServerDescription) -> None:
    draft.check_if_has_primary()


def _set_sharded(draft: _Draft, sd: ServerDescription) -> None:
    draft.type = _SH


def _set_rs_no_primary(draft: _Draft, sd: ServerDescription) -> None:
    draft.type = _NP


def _set_rs_with_primary(draft: _Draft, sd: ServerDescription) -> None:
    draft.type = _WP


def _update_unknown_with_standalone(draft: _Draft, sd: ServerDescription) -> None:
    if len(draft.settings.seeds) == 1:
        draft.type = TopologyType.SINGLE
    else:
        draft.remove(sd.address)


def _update_rs_without_primary(draft: _Draft, sd: ServerDescription) -> None:
    if draft.set_name is None:
        draft.set_name = sd.set_name
    elif draft.set_name != sd.set_name:
        draft.remove(sd.address)
        return
    draft.add_unknown(sd.all_hosts)
    draft.mark_possible_primary(sd.primary)
    if sd.me is not None and sd.address != sd.me:
        draft.remove(sd.address)


def _update_rs_with_primary_from_member(draft: _Draft, sd: ServerDescription) -> None:
    if draft.set_name != sd.set_name or (sd.me is not None and sd.address != sd.me):
        draft.remove(sd.address)
        draft.check_if_has_primary()
        return
    if not any(s.type is ServerType.RS_PRIMARY for s in draft.servers.values()):
        draft.type = _NP
        draft.mark_possible_primary(sd.primary)


def _none_first(value: Any) -> tuple[int, Any]:
    """Sort key making None less than any value (the spec's rule for absent electionId and
    setVersion); ObjectIds compare bytewise."""
    if value is None:
        return (0, b"")
    return (1, value.binary if isinstance(value, ObjectId) else value)


def _is_stale_primary(draft: _Draft, sd: ServerDescription) -> bool:
    """The (electionId, setVersion) check of updateRSFromPrimary; records the new maxima."""
    if sd.max_wire_version >= 17:  # MongoDB 6.0+: electionId first, then setVersion
        new = (_none_first(sd.election_id), _none_first(sd.set_version))
        old = (_none_first(draft.max_election_id), _none_first(draft.max_set_version))
        if new < old:
            return True
        draft.max_election_id, draft.max_set_version = sd.election_id, sd.set_version
        return False
    # before 6.0: (setVersion, electionId), compared only when both tuples are complete; a
    # complete new tuple that is not stale becomes the recorded electionId
    if sd.set_version is not None and sd.election_id is not None:
        if draft.max_set_version is not None and draft.max_election_id is not None:
            new_tuple = (sd.set_version, sd.election_id.binary)
            if new_tuple < (draft.max_set_version, draft.max_election_id.binary):
                return True
        draft.max_election_id = sd.election_id
    if sd.set_version is not None and (
        draft.max_set_version is None or sd.set_version > draft.max_set_version
    ):
        draft.max_set_version = sd.set_version
    return False


def _update_rs_from_primary(draft: _Draft, sd: ServerDescription) -> None:
    if draft.set_name is None:
        draft.set_name = sd.set_name
    elif draft.set_name != sd.set_name:
        draft.remove(sd.address)
        draft.check_if_has_primary()
        return
    if _is_stale_primary(draft, sd):
        draft.servers[sd.address] = ServerDescription.unknown(
            sd.address, STALE_PRIMARY_ERROR, last_update_time=sd.last_update_time
        )
        draft.check_if_has_primary()
        return
    for address, other in list(draft.servers.items()):
        if address != sd.address and other.type is ServerType.RS_PRIMARY:
            draft.servers[address] = ServerDescription.unknown(address, NEWER_PRIMARY_ERROR)
            draft.invalidated.append(address)
    members = sd.all_hosts
    draft.add_unknown(members)
    for address in list(draft.servers):
        if address not in members:
            draft.remove(address)
    draft.check_if_has_primary()


_STEPS: Final[Mapping[str, Step]] = MappingProxyType({
    "remove": _remove,
    "check_if_has_primary": _check_if_has_primary,
    "set_sharded": _set_sharded,
    "set_rs_no_primary": _set_rs_no_primary,
    "set_rs_with_primary": _set_rs_with_primary,
    "update_unknown_with_standalone": _update_unknown_with_standalone,
    "update_rs_without_primary": _update_rs_without_primary,
    "update_rs_with_primary_from_member": _update_rs_with_primary_from_member,
    "update_rs_from_primary": _update_rs_from_primary,
})  # fmt: skip


# -- the update function ---------------------------------------------------------------------


def apply_server_description(
    description: TopologyDescription,
    server: ServerDescription,
    settings: TopologySettings,
) -> TopologyUpdate:
    """Replace ``server.address``'s description and run the spec's rules for the topology type.

    Pure: returns a :class:`TopologyUpdate` and touches neither argument.
    """
    previous = description.servers.get(server.address)
    if (
        previous is None
        or compare_topology_versions(previous.topology_version, server.topology_version) > 0
    ):
        return TopologyUpdate(
            description=description, server=server, previous_server=previous, ignored=True
        )
    draft = _Draft(description, settings)
    draft.servers[server.address] = server
    if draft.type is TopologyType.SINGLE:
        if (
            settings.set_name is not None
            and server.is_known
            and server.set_name != settings.set_name
        ):
            draft.servers[server.address] = ServerDescription.unknown(
                server.address,
                f"replica set name {server.set_name!r} does not match replicaSet="
                f"{settings.set_name!r}",
                last_update_time=server.last_update_time,
            )
    elif draft.type is not TopologyType.LOAD_BALANCED:
        for step in TRANSITIONS[(draft.type, server.type)]:
            _STEPS[step](draft, server)
    new = _finish(draft)
    return TopologyUpdate(
        description=new,
        server=new.servers.get(server.address, server),
        previous_server=previous,
        added=tuple(a for a in new.servers if a not in description.servers),
        removed=tuple(a for a in description.servers if a not in new.servers),
        invalidated=tuple(a for a in draft.invalidated if a in new.servers),
    )


def apply_srv_hosts(
    description: TopologyDescription, hosts: Iterable[Address], settings: TopologySettings
) -> TopologyDescription:
    """The description after an SRV rescan (Polling SRV Records for mongos Discovery): hosts
    no longer listed are removed, new ones added as Unknown.  Only a Sharded or Unknown
    topology changes; others are returned as they are.  Pure."""
    if description.type not in (TopologyType.SHARDED, TopologyType.UNKNOWN):
        return description
    wanted = list(dict.fromkeys(hosts))
    draft = _Draft(description, settings)
    for address in list(draft.servers):
        if address not in wanted:
            draft.remove(address)
    draft.add_unknown(a for a in wanted if a not in draft.servers)
    return _finish(draft)


def _finish(draft: _Draft) -> TopologyDescription:
    compatibility_error = _compatibility_error(draft.servers.values(), draft.settings)
    return TopologyDescription(
        type=draft.type,
        servers=draft.servers,
        set_name=draft.set_name,
        max_set_version=draft.max_set_version,
        max_election_id=draft.max_election_id,
        compatible=compatibility_error is None,
        compatibility_error=compatibility_error,
        logical_session_timeout_minutes=_session_timeout(draft.type, draft.servers.values()),
    )


def _compatibility_error(
    servers: Iterable[ServerDescription], settings: TopologySettings
) -> str | None:
    """The spec's wire-protocol compatibility message for the first incompatible server."""
    for sd in servers:
        if not sd.is_known or sd.type is ServerType.LOAD_BALANCER:
            continue
        where = format_address(sd.address)
        if sd.min_wire_version > settings.client_max_wire_version:
            return (
                f"Server at {where} requires wire version {sd.min_wire_version}, but this "
                f"version of {settings.driver_name} only supports up to "
                f"{settings.client_max_wire_version}."
            )
        if sd.max_wire_version < settings.client_min_wire_version:
            version = _MONGODB_VERSIONS.get(settings.client_min_wire_version)
            suffix = f" (MongoDB {version})" if version else ""
            return (
                f"Server at {where} reports wire version {sd.max_wire_version}, but this "
                f"version of {settings.driver_name} requires at least "
                f"{settings.client_min_wire_version}{suffix}."
            )
    return None


def _session_timeout(
    topology_type: TopologyType, servers: Iterable[ServerDescription]
) -> int | None:
    """The smallest logicalSessionTimeoutMinutes of the data-bearing servers; None if any of
    them lacks one (or none is known).  Load-balanced topologies ignore it."""
    if topology_type is TopologyType.LOAD_BALANCED:
        return None
    timeouts = [sd.logical_session_timeout_minutes for sd in servers if sd.is_data_bearing]
    if not timeouts or any(t is None for t in timeouts):
        return None
    return min(t for t in timeouts if t is not None)
