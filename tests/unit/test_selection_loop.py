"""The selection loop machine and flow: select, else check and wait, else time out."""

from __future__ import annotations

import random

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.errors import ConfigurationError, LocalProtocolError, MongoError
from mongo_sansio.sdam import (
    ServerDescription,
    ServerType,
    TopologyDescription,
    TopologySettings,
    TopologyType,
)
from mongo_sansio.selection import (
    IncompatibleTopologyError,
    ReadPreference,
    RequestCheckAndWait,
    Selected,
    SelectionCriteria,
    SelectionState,
    ServerSelection,
    ServerSelectionTimeoutError,
    TopologyChanged,
    select_server_flow,
)

SETTINGS = TopologySettings(
    seeds=["a:27017", "b:27017"], set_name="rs", server_selection_timeout=5.0
)
DRAW = random.Random(3).randrange
PRIMARY = ServerDescription(address=("a", 27017), type=ServerType.RS_PRIMARY, round_trip_time=0.002)
SECONDARY = ServerDescription(
    address=("b", 27017), type=ServerType.RS_SECONDARY, round_trip_time=0.004
)
DOWN = ServerDescription.unknown(("a", 27017), "connection refused")
NO_PRIMARY = TopologyDescription(
    type=TopologyType.REPLICA_SET_NO_PRIMARY,
    set_name="rs",
    servers={DOWN.address: DOWN, SECONDARY.address: SECONDARY},
)
WITH_PRIMARY = TopologyDescription(
    type=TopologyType.REPLICA_SET_WITH_PRIMARY,
    set_name="rs",
    servers={PRIMARY.address: PRIMARY, SECONDARY.address: SECONDARY},
)
WRITE = SelectionCriteria.for_write()


def test_selects_at_once_when_a_server_is_suitable() -> None:
    selection = ServerSelection(WRITE, SETTINGS, now=100.0)
    outcome = selection.attempt(WITH_PRIMARY, 100.0, DRAW)
    assert outcome == Selected(PRIMARY)
    assert selection.state is SelectionState.SELECTED
    assert selection.next_deadline() is None and selection.done


def test_waits_for_a_topology_change_then_selects() -> None:
    selection = ServerSelection(WRITE, SETTINGS, now=100.0)
    assert selection.next_deadline() == 105.0
    assert selection.attempt(NO_PRIMARY, 100.0, DRAW) == RequestCheckAndWait(deadline=105.0)
    assert selection.state is SelectionState.WAITING
    selection.handle_timeout(104.9)  # early: nothing happens
    assert selection.attempt(NO_PRIMARY, 102.0, DRAW) == RequestCheckAndWait(deadline=105.0)
    assert selection.attempt(WITH_PRIMARY, 104.0, DRAW) == Selected(PRIMARY)
    assert selection.attempts == 3


def test_timeout_describes_the_topology() -> None:
    selection = ServerSelection(WRITE, SETTINGS, now=100.0)
    selection.attempt(NO_PRIMARY, 100.0, DRAW)
    with pytest.raises(ServerSelectionTimeoutError) as info:
        selection.handle_timeout(105.0)
    message = str(info.value)
    for part in (
        "5 s",
        "writable",
        "ReplicaSetNoPrimary",
        "'rs'",
        "a:27017 Unknown",
        "connection refused",
        "b:27017 RSSecondary",
    ):
        assert part in message
    assert isinstance(info.value, MongoError)
    assert selection.state is SelectionState.FAILED
    with pytest.raises(LocalProtocolError):
        selection.attempt(WITH_PRIMARY, 106.0, DRAW)
    with pytest.raises(LocalProtocolError):
        selection.handle_timeout(106.0)


def test_an_attempt_after_the_deadline_fails_even_with_a_server() -> None:
    selection = ServerSelection(WRITE, SETTINGS, now=100.0)
    with pytest.raises(ServerSelectionTimeoutError):
        selection.attempt(WITH_PRIMARY, 105.5, DRAW)


def test_an_attempt_at_the_deadline_without_a_server_fails() -> None:
    selection = ServerSelection(WRITE, SETTINGS, now=100.0, timeout=0.0)
    with pytest.raises(ServerSelectionTimeoutError, match="0 s"):
        selection.attempt(NO_PRIMARY, 100.0, DRAW)
    # timeout 0 still tries once
    assert ServerSelection(WRITE, SETTINGS, now=1.0, timeout=0).attempt(
        WITH_PRIMARY, 1.0, DRAW
    ) == Selected(PRIMARY)


def test_incompatible_topology_fails_at_once() -> None:
    bad = attrs.evolve(
        WITH_PRIMARY,
        compatible=False,
        compatibility_error="Server at a:27017 reports wire version 5",
    )
    selection = ServerSelection(WRITE, SETTINGS, now=0.0)
    with pytest.raises(IncompatibleTopologyError, match="wire version 5"):
        selection.attempt(bad, 0.0, DRAW)
    assert selection.state is SelectionState.FAILED


def test_invalid_max_staleness_fails() -> None:
    rp = ReadPreference(mode="secondary", max_staleness_seconds=30)
    selection = ServerSelection(SelectionCriteria.for_read(rp), SETTINGS, now=0.0)
    with pytest.raises(ConfigurationError, match="maxStalenessSeconds"):
        selection.attempt(WITH_PRIMARY, 0.0, DRAW)
    assert selection.state is SelectionState.FAILED


def test_a_bad_random_source_is_misuse_and_changes_nothing() -> None:
    nearest = SelectionCriteria.for_read(
        ReadPreference(mode="nearest"),
    )
    selection = ServerSelection(nearest, SETTINGS, now=0.0)
    with pytest.raises(LocalProtocolError, match="random source"):
        selection.attempt(WITH_PRIMARY, 0.0, lambda n: -1)
    assert selection.state is SelectionState.SELECTING
    assert isinstance(selection.attempt(WITH_PRIMARY, 0.0, DRAW), Selected)


@pytest.mark.parametrize("now", [float("nan"), float("inf"), "1"])
def test_bad_now_is_misuse(now: object) -> None:
    with pytest.raises(LocalProtocolError):
        ServerSelection(WRITE, SETTINGS, now=now)  # type: ignore[arg-type]


def test_negative_timeout_is_misuse() -> None:
    with pytest.raises(LocalProtocolError):
        ServerSelection(WRITE, SETTINGS, now=0.0, timeout=-1.0)


def test_flow_yields_until_the_topology_changes() -> None:
    flow = select_server_flow(WRITE, SETTINGS, NO_PRIMARY, 10.0, DRAW)
    assert next(flow) == RequestCheckAndWait(deadline=15.0)
    assert flow.send(TopologyChanged(NO_PRIMARY, 12.0)) == RequestCheckAndWait(deadline=15.0)
    with pytest.raises(StopIteration) as done:
        flow.send(TopologyChanged(WITH_PRIMARY, 13.0))
    assert done.value.value == PRIMARY


def test_flow_times_out() -> None:
    flow = select_server_flow(WRITE, SETTINGS, NO_PRIMARY, 10.0, DRAW)
    next(flow)
    with pytest.raises(ServerSelectionTimeoutError):
        flow.send(TopologyChanged(NO_PRIMARY, 15.0))


def test_flow_must_be_sent_topology_changes() -> None:
    flow = select_server_flow(WRITE, SETTINGS, NO_PRIMARY, 10.0, DRAW)
    next(flow)
    with pytest.raises(LocalProtocolError):
        flow.send(WITH_PRIMARY)  # type: ignore[arg-type]


STEP = st.one_of(
    st.tuples(st.just("attempt"), st.floats(0, 3), st.booleans()),
    st.tuples(st.just("timeout"), st.floats(0, 3), st.just(False)),
)


@settings(max_examples=300, deadline=None)
@given(st.floats(0, 4), st.lists(STEP, max_size=12))
def test_never_returns_after_the_deadline_without_the_timeout_error(
    timeout: float, steps: list[tuple[str, float, bool]]
) -> None:
    now = 1000.0
    selection = ServerSelection(WRITE, SETTINGS, now=now, timeout=timeout)
    deadline = now + timeout
    for kind, elapsed, has_primary in steps:
        now += elapsed
        if selection.done:
            with pytest.raises(LocalProtocolError):
                if kind == "attempt":
                    selection.attempt(WITH_PRIMARY, now, DRAW)
                else:
                    selection.handle_timeout(now)
            continue
        topology = WITH_PRIMARY if has_primary else NO_PRIMARY
        try:
            if kind == "timeout":
                selection.handle_timeout(now)
                assert now < deadline
                continue
            outcome = selection.attempt(topology, now, DRAW)
        except ServerSelectionTimeoutError:
            assert now >= deadline
            assert selection.state is SelectionState.FAILED and selection.next_deadline() is None
            continue
        if isinstance(outcome, Selected):
            assert now <= deadline and has_primary
            assert selection.next_deadline() is None
        else:
            assert now < deadline and not has_primary
            assert outcome.deadline == deadline == selection.next_deadline()


def test_the_flow_with_descriptions_from_sdam() -> None:
    """Discovery through SDAM's rules: Unknown seeds, then a secondary, then the primary."""
    from mongo_sansio.sdam import apply_server_description

    settings = TopologySettings(seeds=["a:27017", "b:27017"], server_selection_timeout=30.0)
    topology = TopologyDescription.initial(settings)
    flow = select_server_flow(WRITE, settings, topology, 0.0, DRAW)
    assert next(flow) == RequestCheckAndWait(deadline=30.0)
    hosts = ["a:27017", "b:27017"]
    secondary = ServerDescription.from_hello(
        ("b", 27017),
        {"ok": 1, "setName": "rs", "secondary": True, "hosts": hosts, "maxWireVersion": 21},
        round_trip_time=0.003,
        now=1.0,
    )
    topology = apply_server_description(topology, secondary, settings).description
    assert topology.type is TopologyType.REPLICA_SET_NO_PRIMARY
    assert flow.send(TopologyChanged(topology, 1.0)) == RequestCheckAndWait(deadline=30.0)
    primary = ServerDescription.from_hello(
        ("a", 27017),
        {"ok": 1, "setName": "rs", "isWritablePrimary": True, "hosts": hosts, "maxWireVersion": 21},
        round_trip_time=0.002,
        now=2.0,
    )
    topology = apply_server_description(topology, primary, settings).description
    with pytest.raises(StopIteration) as done:
        flow.send(TopologyChanged(topology, 2.0))
    assert done.value.value.address == ("a", 27017)
