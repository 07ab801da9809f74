"""The selection rules: suitability per topology type, staleness, tags, latency window, the
operationCount choice, deprioritized servers, the server selector hook; with properties."""

from __future__ import annotations

import random
from collections.abc import Sequence

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import DatetimeMS
from mongo_sansio.errors import ConfigurationError, LocalProtocolError
from mongo_sansio.sdam import ServerDescription, ServerType, TopologyDescription, TopologyType
from mongo_sansio.selection import (
    IncompatibleTopologyError,
    Mode,
    Operation,
    ReadPreference,
    SelectionCriteria,
    choose,
    in_latency_window,
    select_server,
    staleness,
    suitable_servers,
)

HEARTBEAT = 10.0
THRESHOLD = 0.015


def sd(
    name: str,
    type: ServerType,
    rtt_ms: float = 5.0,
    *,
    tags: dict[str, str] | None = None,
    updated: float = 0.0,
    written_ms: int | None = None,
) -> ServerDescription:
    return ServerDescription(
        address=(name, 27017),
        type=type,
        round_trip_time=rtt_ms / 1000.0,
        tags=tags or {},
        last_update_time=updated,
        last_write_date=None if written_ms is None else DatetimeMS(written_ms),
    )


def topo(type: TopologyType, *servers: ServerDescription, **fields: object) -> TopologyDescription:
    return TopologyDescription(type=type, servers={s.address: s for s in servers}, **fields)  # type: ignore[arg-type]


def names(servers: Sequence[ServerDescription]) -> set[str]:
    return {s.address[0] for s in servers}


def read(mode: str, **kwargs: object) -> SelectionCriteria:
    return SelectionCriteria.for_read(ReadPreference(mode=mode, **kwargs))  # type: ignore[arg-type]


P = sd("p", ServerType.RS_PRIMARY, tags={"dc": "ny"})
S1 = sd("s1", ServerType.RS_SECONDARY, tags={"dc": "ny", "rack": "1"})
S2 = sd("s2", ServerType.RS_SECONDARY, 30, tags={"dc": "sf"})
ARB = sd("arb", ServerType.RS_ARBITER)
RS = topo(TopologyType.REPLICA_SET_WITH_PRIMARY, P, S1, S2, ARB)
RS_NO_PRIMARY = topo(TopologyType.REPLICA_SET_NO_PRIMARY, S1, S2, ARB)


@pytest.mark.parametrize(
    ("topology", "criteria", "expected"),
    [
        (RS, read("primary"), {"p"}),
        (RS, read("secondary"), {"s1", "s2"}),
        (RS, read("nearest"), {"p", "s1", "s2"}),
        (RS, read("primaryPreferred"), {"p"}),
        (RS_NO_PRIMARY, read("primaryPreferred"), {"s1", "s2"}),
        (RS, read("secondaryPreferred", tag_sets=[{"dc": "tokyo"}]), {"p"}),
        (RS, read("secondary", tag_sets=[{"dc": "tokyo"}, {"dc": "sf"}, {}]), {"s2"}),
        (RS, read("nearest", tag_sets=[{"dc": "ny"}]), {"p", "s1"}),
        (RS, read("secondary", tag_sets=[]), {"s1", "s2"}),
        (RS, SelectionCriteria.for_write(), {"p"}),
        (RS_NO_PRIMARY, SelectionCriteria.for_write(), set()),
        (RS_NO_PRIMARY, read("primary"), set()),
        (topo(TopologyType.UNKNOWN, S1), read("nearest"), set()),
        (
            topo(TopologyType.SHARDED, sd("m1", ServerType.MONGOS), sd("u", ServerType.UNKNOWN)),
            read("secondary", tag_sets=[{"dc": "x"}]),
            {"m1"},
        ),
        (topo(TopologyType.SINGLE, S2), SelectionCriteria.for_write(), {"s2"}),
        (topo(TopologyType.SINGLE, sd("u", ServerType.UNKNOWN)), read("nearest"), set()),
        (
            topo(TopologyType.LOAD_BALANCED, sd("lb", ServerType.LOAD_BALANCER)),
            read("primary"),
            {"lb"},
        ),
    ],
)
def test_suitable_servers(
    topology: TopologyDescription, criteria: SelectionCriteria, expected: set[str]
) -> None:
    assert names(suitable_servers(topology, criteria, HEARTBEAT)) == expected


def test_staleness_with_a_primary_uses_update_and_write_times() -> None:
    primary = sd("p", ServerType.RS_PRIMARY, updated=1000.0, written_ms=999_000)
    behind = sd("s", ServerType.RS_SECONDARY, updated=1002.0, written_ms=900_000)
    topology = topo(TopologyType.REPLICA_SET_WITH_PRIMARY, primary, behind)
    # (1002 - 900) - (1000 - 999) + 10
    assert staleness(behind, topology, HEARTBEAT) == pytest.approx(111.0)
    assert staleness(primary, topology, HEARTBEAT) == 0.0


def test_staleness_without_a_primary_uses_the_latest_secondary() -> None:
    fresh = sd("a", ServerType.RS_SECONDARY, written_ms=500_000)
    behind = sd("b", ServerType.RS_SECONDARY, written_ms=300_000)
    topology = topo(TopologyType.REPLICA_SET_NO_PRIMARY, fresh, behind)
    assert staleness(fresh, topology, HEARTBEAT) == pytest.approx(10.0)
    assert staleness(behind, topology, HEARTBEAT) == pytest.approx(210.0)
    rp = ReadPreference(mode="secondary", max_staleness_seconds=200)
    assert names(suitable_servers(topology, SelectionCriteria.for_read(rp), HEARTBEAT)) == {"a"}


def test_max_staleness_too_small_for_a_replica_set() -> None:
    rp = ReadPreference(mode="nearest", max_staleness_seconds=89)
    with pytest.raises(ConfigurationError, match="maxStalenessSeconds"):
        suitable_servers(RS, SelectionCriteria.for_read(rp), HEARTBEAT)
    # mongos validates maxStalenessSeconds itself
    sharded = topo(TopologyType.SHARDED, sd("m", ServerType.MONGOS))
    assert names(suitable_servers(sharded, SelectionCriteria.for_read(rp), HEARTBEAT)) == {"m"}


def test_latency_window() -> None:
    servers = [
        sd("a", ServerType.MONGOS, 5),
        sd("b", ServerType.MONGOS, 20),
        sd("c", ServerType.MONGOS, 20.1),
    ]
    assert names(in_latency_window(servers, THRESHOLD)) == {"a", "b"}
    assert names(in_latency_window(servers, 0.0)) == {"a"}
    assert in_latency_window([], THRESHOLD) == ()


def test_choose_takes_the_less_busy_of_two_random_servers() -> None:
    servers = [sd(n, ServerType.MONGOS) for n in "abc"]
    draws = iter([0, 1])  # a, then c (index 1 of the two others)
    chosen = choose(servers, lambda n: next(draws), {("a", 27017): 5, ("c", 27017): 1})
    assert chosen.address[0] == "c"
    draws = iter([2, 0])  # c, then a: a tie goes to the first drawn
    assert choose(servers, lambda n: next(draws)).address[0] == "c"

    def no_draws(n: int) -> int:
        raise AssertionError("one server needs no draw")

    assert choose(servers[:1], no_draws).address[0] == "a"


def test_choose_refuses_a_bad_random_source_and_an_empty_window() -> None:
    servers = [sd(n, ServerType.MONGOS) for n in "ab"]
    with pytest.raises(LocalProtocolError, match="random source"):
        choose(servers, lambda n: n)
    with pytest.raises(LocalProtocolError):
        choose([], random.Random(1).randrange)


def test_incompatible_topology_raises_its_error() -> None:
    bad = attrs.evolve(RS, compatible=False, compatibility_error="Server at p:27017 requires ...")
    with pytest.raises(IncompatibleTopologyError, match="requires"):
        select_server(
            bad,
            read("nearest"),
            heartbeat_frequency=HEARTBEAT,
            local_threshold=THRESHOLD,
            draw=random.Random(1).randrange,
        )


def test_server_selector_hook_filters_suitable_servers() -> None:
    seen: list[set[str]] = []

    def only_s2(servers: Sequence[ServerDescription]) -> list[ServerDescription]:
        seen.append(names(servers))
        return [s for s in servers if s.address[0] == "s2"] + [ARB]  # ARB was never offered

    criteria = SelectionCriteria.for_read(ReadPreference(mode="nearest"), server_selector=only_s2)
    for seed in range(20):
        chosen = select_server(
            RS,
            criteria,
            heartbeat_frequency=HEARTBEAT,
            local_threshold=THRESHOLD,
            draw=random.Random(seed).randrange,
        )
        assert chosen is not None and chosen.address[0] == "s2"  # out of p's window, still chosen
    assert seen[0] == {"p", "s1", "s2"}


def test_deprioritized_servers_in_a_sharded_cluster() -> None:
    cluster = topo(TopologyType.SHARDED, sd("a", ServerType.MONGOS), sd("b", ServerType.MONGOS, 50))
    criteria = SelectionCriteria.for_write(deprioritized=[("a", 27017)])
    assert names(suitable_servers(cluster, criteria, HEARTBEAT)) == {"b"}
    everyone = SelectionCriteria.for_write(deprioritized=[("a", 27017), ("b", 27017)])
    assert names(suitable_servers(cluster, everyone, HEARTBEAT)) == {"a", "b"}


# -- properties ------------------------------------------------------------------------------

NAMES = [f"h{i}" for i in range(7)]
TAGS = st.dictionaries(
    st.sampled_from(["dc", "rack"]), st.sampled_from(["ny", "sf", "1"]), max_size=2
)


@st.composite
def servers(draw: st.DrawFn, types: Sequence[ServerType]) -> ServerDescription:
    return sd(
        draw(st.sampled_from(NAMES)),
        draw(st.sampled_from(types)),
        draw(st.floats(0, 60)),
        tags=draw(TAGS),
        updated=draw(st.floats(0, 500)),
        written_ms=draw(st.none() | st.integers(0, 500_000)),
    )


RS_TYPES = [
    ServerType.RS_PRIMARY, ServerType.RS_SECONDARY, ServerType.RS_SECONDARY, ServerType.RS_ARBITER,
    ServerType.RS_OTHER, ServerType.RS_GHOST, ServerType.UNKNOWN, ServerType.POSSIBLE_PRIMARY,
]  # fmt: skip


@st.composite
def topologies(draw: st.DrawFn) -> TopologyDescription:
    kind = draw(
        st.sampled_from(
            [
                TopologyType.REPLICA_SET_WITH_PRIMARY,
                TopologyType.REPLICA_SET_NO_PRIMARY,
                TopologyType.SHARDED,
                TopologyType.SINGLE,
            ]
        )
    )
    types = [ServerType.MONGOS, ServerType.UNKNOWN] if kind is TopologyType.SHARDED else RS_TYPES
    members = draw(st.lists(servers(types), max_size=7, unique_by=lambda s: s.address))
    if kind is TopologyType.SINGLE:
        members = members[:1]
    primaries = [m for m in members if m.type is ServerType.RS_PRIMARY]
    if kind is TopologyType.REPLICA_SET_WITH_PRIMARY and not primaries:
        kind = TopologyType.REPLICA_SET_NO_PRIMARY
    if kind is TopologyType.REPLICA_SET_NO_PRIMARY:
        members = [m for m in members if m.type is not ServerType.RS_PRIMARY]
    members = [m for m in members if m.type is not ServerType.RS_PRIMARY or m is primaries[0]]
    return topo(kind, *members)


@st.composite
def criteria_strategy(draw: st.DrawFn, staleness: bool = True) -> SelectionCriteria:
    if draw(st.booleans()):
        operation, rp = Operation.WRITE, ReadPreference()
    else:
        mode = draw(st.sampled_from(list(Mode)))
        if mode is Mode.PRIMARY:
            rp = ReadPreference()
        else:
            rp = ReadPreference(
                mode=mode,
                tag_sets=draw(st.lists(TAGS, max_size=3)),
                max_staleness_seconds=draw(st.none() | st.integers(90, 400)) if staleness else None,
            )
        operation = Operation.READ
    deprioritized = draw(st.sets(st.sampled_from(NAMES), max_size=4))
    return SelectionCriteria(
        operation=operation, read_preference=rp, deprioritized={(n, 27017) for n in deprioritized}
    )


@settings(max_examples=300, deadline=None)
@given(
    topologies(),
    criteria_strategy(),
    st.integers(0, 2**32),
    st.dictionaries(st.sampled_from(NAMES), st.integers(0, 5)),
)
def test_the_chosen_server_is_suitable_and_in_the_latency_window(
    topology: TopologyDescription, criteria: SelectionCriteria, seed: int, counts: dict[str, int]
) -> None:
    suitable = suitable_servers(topology, criteria, HEARTBEAT)
    window = in_latency_window(suitable, THRESHOLD)
    chosen = select_server(
        topology,
        criteria,
        heartbeat_frequency=HEARTBEAT,
        local_threshold=THRESHOLD,
        draw=random.Random(seed).randrange,
        operation_counts={(n, 27017): c for n, c in counts.items()},
    )
    assert (chosen is None) == (not suitable)
    if chosen is not None:
        assert chosen in window and chosen in suitable
        if topology.type is not TopologyType.SINGLE:  # a direct connection takes any type
            assert chosen.is_data_bearing
            if criteria.operation is Operation.WRITE:
                assert chosen.is_writable
        fastest = min(s.round_trip_time or 0.0 for s in suitable)
        assert (chosen.round_trip_time or 0.0) <= fastest + THRESHOLD + 1e-9
        rp = criteria.read_preference
        if (
            criteria.operation is Operation.READ
            and rp.max_staleness_seconds is not None
            and topology.type is not TopologyType.SHARDED
            and topology.type is not TopologyType.SINGLE
        ):
            assert staleness(chosen, topology, HEARTBEAT) <= rp.max_staleness_seconds + 1e-6


@settings(max_examples=300, deadline=None)
@given(topologies(), criteria_strategy(staleness=False))
def test_deprioritized_servers_only_when_nothing_else_is_suitable(
    topology: TopologyDescription, criteria: SelectionCriteria
) -> None:
    plain = attrs.evolve(criteria, deprioritized=frozenset())
    with_deprioritized = suitable_servers(topology, criteria, HEARTBEAT)
    without = suitable_servers(topology, plain, HEARTBEAT)
    # deprioritizing never makes selection fail, and never invents a server
    assert bool(with_deprioritized) == bool(without)
    if any(s.address in criteria.deprioritized for s in with_deprioritized):
        # ... and a deprioritized server shows up only if the others alone offer nothing
        others = topo(
            topology.type,
            *(s for s in topology.servers.values() if s.address not in criteria.deprioritized),
        )
        assert suitable_servers(others, plain, HEARTBEAT) == ()
        assert with_deprioritized == without
