"""The pure update rules (mongo_sansio.sdam.topology): settings, the TopologyType table, each
topology type's handlers, stale primaries, compatibility and session timeouts."""

from __future__ import annotations

from typing import Any

import pytest

from mongo_sansio.bson import ObjectId
from mongo_sansio.errors import ConfigurationError
from mongo_sansio.sdam import (
    ServerDescription,
    ServerType,
    TopologyDescription,
    TopologySettings,
    TopologyType,
    apply_server_description,
    parse_address,
)
from mongo_sansio.sdam.topology import (
    NEWER_PRIMARY_ERROR,
    STALE_PRIMARY_ERROR,
    TRANSITIONS,
    TopologyUpdate,
)

A, B, C = ("a", 27017), ("b", 27017), ("c", 27017)


def settings(*seeds: str, **options: Any) -> TopologySettings:
    return TopologySettings(seeds=seeds or ("a",), **options)


def reply(address: tuple[str, int], **fields: Any) -> ServerDescription:
    document = {"ok": 1, "minWireVersion": 0, "maxWireVersion": 21, **fields}
    return ServerDescription.from_hello(address, document, round_trip_time=0.01, now=1.0)


def primary(address: tuple[str, int], hosts: list[str], **fields: Any) -> ServerDescription:
    return reply(address, isWritablePrimary=True, setName="rs", hosts=hosts, **fields)


def secondary(address: tuple[str, int], hosts: list[str], **fields: Any) -> ServerDescription:
    return reply(address, secondary=True, setName="rs", hosts=hosts, **fields)


def apply(td: TopologyDescription, sd: ServerDescription, s: TopologySettings) -> TopologyUpdate:
    return apply_server_description(td, sd, s)


def run(s: TopologySettings, *servers: ServerDescription) -> TopologyDescription:
    td = TopologyDescription.initial(s)
    for sd in servers:
        td = apply(td, sd, s).description
    return td


# -- settings ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "seeds", "initial"),
    [
        ({}, ("a",), TopologyType.UNKNOWN),
        ({}, ("a", "b"), TopologyType.UNKNOWN),
        ({"direct_connection": True}, ("a",), TopologyType.SINGLE),
        ({"direct_connection": True, "set_name": "rs"}, ("a",), TopologyType.SINGLE),
        (
            {"direct_connection": False, "set_name": "rs"},
            ("a",),
            TopologyType.REPLICA_SET_NO_PRIMARY,
        ),
        ({"set_name": "rs"}, ("a", "b"), TopologyType.REPLICA_SET_NO_PRIMARY),
        ({"load_balanced": True}, ("a",), TopologyType.LOAD_BALANCED),
    ],
)
def test_initial_topology_type(
    options: dict[str, Any], seeds: tuple[str, ...], initial: TopologyType
) -> None:
    s = TopologySettings(seeds=seeds, **options)
    td = TopologyDescription.initial(s)
    assert td.type is initial
    assert list(td.servers) == [parse_address(x) for x in seeds]
    assert all(sd.type is ServerType.UNKNOWN for sd in td.servers.values())


@pytest.mark.parametrize(
    ("options", "option_name"),
    [
        ({"seeds": ()}, "seeds"),
        ({"seeds": ("a", "b"), "direct_connection": True}, "directConnection"),
        ({"seeds": ("a", "b"), "load_balanced": True}, "loadBalanced"),
        ({"seeds": ("a",), "load_balanced": True, "set_name": "rs"}, "replicaSet"),
        ({"seeds": ("a",), "load_balanced": True, "direct_connection": True}, "directConnection"),
        ({"seeds": ("a",), "heartbeat_frequency": 0.4}, "heartbeatFrequencyMS"),
        ({"seeds": ("a",), "local_threshold": -1}, "localThresholdMS"),
        ({"seeds": ("a",), "server_selection_timeout": -1}, "serverSelectionTimeoutMS"),
        ({"seeds": ("a",), "set_name": ""}, "replicaSet"),
        ({"seeds": (3,)}, "seeds"),
        ({"seeds": ("a:x",)}, "host"),
    ],
)
def test_invalid_settings_name_the_option(options: dict[str, Any], option_name: str) -> None:
    with pytest.raises(ConfigurationError, match=option_name):
        TopologySettings(**options)


def test_seeds_are_normalised_and_deduplicated() -> None:
    s = TopologySettings(seeds=["A", "a:27017", ("B", 1)])
    assert s.seeds == (("a", 27017), ("b", 1))


def test_the_table_covers_every_pair() -> None:
    multi = [TopologyType.UNKNOWN, TopologyType.SHARDED]
    multi += [TopologyType.REPLICA_SET_NO_PRIMARY, TopologyType.REPLICA_SET_WITH_PRIMARY]
    assert set(TRANSITIONS) == {(t, s) for t in multi for s in ServerType}


# -- ignored inputs -------------------------------------------------------------------------


def test_a_server_not_in_the_topology_is_ignored() -> None:
    s = settings("a")
    td = TopologyDescription.initial(s)
    update = apply(td, reply(B, isWritablePrimary=True), s)
    assert update.ignored and update.description is td


def test_an_older_topology_version_is_ignored() -> None:
    s = settings("a", set_name="rs")
    pid = ObjectId("000000000000000000000001")
    td = run(s, primary(A, ["a"], topologyVersion={"processId": pid, "counter": 2}))
    older = secondary(A, ["a"], topologyVersion={"processId": pid, "counter": 1})
    assert apply(td, older, s).ignored
    equal = secondary(A, ["a"], topologyVersion={"processId": pid, "counter": 2})
    assert apply(td, equal, s).description.servers[A].type is ServerType.RS_SECONDARY


# -- TopologyType Unknown and Sharded --------------------------------------------------------


def test_single_seed_standalone_becomes_single() -> None:
    td = run(settings("a"), reply(A, isWritablePrimary=True))
    assert td.type is TopologyType.SINGLE
    assert td.servers[A].type is ServerType.STANDALONE


def test_standalone_among_several_seeds_is_removed() -> None:
    s = settings("a", "b")
    update = apply(TopologyDescription.initial(s), reply(A, isWritablePrimary=True), s)
    assert update.description.type is TopologyType.UNKNOWN
    assert update.removed == (A,) and list(update.description.servers) == [B]


def test_mongos_makes_sharded_and_non_mongos_are_removed() -> None:
    s = settings("a", "b", "c")
    td = run(s, reply(A, msg="isdbgrid"), secondary(B, ["b"]), ServerDescription.unknown(C, "x"))
    assert td.type is TopologyType.SHARDED
    assert set(td.servers) == {A, C}


def test_ghost_leaves_unknown_alone() -> None:
    td = run(settings("a", "b"), reply(A, isreplicaset=True))
    assert td.type is TopologyType.UNKNOWN and td.servers[A].type is ServerType.RS_GHOST


# -- replica sets -----------------------------------------------------------------------------


def test_secondary_discovers_members_and_possible_primary() -> None:
    s = settings("a")
    update = apply(TopologyDescription.initial(s), secondary(A, ["a", "b", "c"], primary="c"), s)
    td = update.description
    assert td.type is TopologyType.REPLICA_SET_NO_PRIMARY and td.set_name == "rs"
    assert update.added == (B, C)
    assert td.servers[C].type is ServerType.POSSIBLE_PRIMARY
    assert td.servers[B].type is ServerType.UNKNOWN


def test_member_with_wrong_set_name_is_removed() -> None:
    s = settings("a", "b", set_name="rs")
    td = run(s, reply(A, secondary=True, setName="other", hosts=["a"]))
    assert list(td.servers) == [B] and td.type is TopologyType.REPLICA_SET_NO_PRIMARY


def test_member_whose_me_differs_is_removed_after_adding_its_hosts() -> None:
    s = settings("a", set_name="rs")
    td = run(s, secondary(A, ["b", "c"], me="b"))
    assert set(td.servers) == {B, C}


def test_primary_sets_the_member_list() -> None:
    s = settings("a", "b", "c", set_name="rs")
    update = apply(TopologyDescription.initial(s), primary(A, ["a", "b"], passives=["d"]), s)
    td = update.description
    assert td.type is TopologyType.REPLICA_SET_WITH_PRIMARY
    assert set(td.servers) == {A, B, ("d", 27017)}
    assert update.removed == (C,) and update.added == (("d", 27017),)
    assert td.primary is not None and td.primary.address == A


def test_primary_losing_itself_from_hosts_leaves_no_primary() -> None:
    td = run(settings("a", set_name="rs"), primary(A, ["b"]))
    assert set(td.servers) == {B} and td.type is TopologyType.REPLICA_SET_NO_PRIMARY


def test_unknown_primary_makes_no_primary() -> None:
    s = settings("a", set_name="rs")
    td = run(s, primary(A, ["a", "b"]), ServerDescription.unknown(A, "gone"))
    assert td.type is TopologyType.REPLICA_SET_NO_PRIMARY and set(td.servers) == {A, B}


def test_secondary_with_primary_known_keeps_type() -> None:
    s = settings("a", set_name="rs")
    td = run(s, primary(A, ["a", "b"]), secondary(B, ["a", "b"]))
    assert td.type is TopologyType.REPLICA_SET_WITH_PRIMARY


def test_former_primary_reporting_as_secondary_drops_to_no_primary() -> None:
    s = settings("a", set_name="rs")
    td = run(s, primary(A, ["a", "b"]), secondary(A, ["a", "b"], primary="b"))
    assert td.type is TopologyType.REPLICA_SET_NO_PRIMARY
    assert td.servers[B].type is ServerType.POSSIBLE_PRIMARY


def test_new_primary_invalidates_the_old_one() -> None:
    s = settings("a", set_name="rs")
    td = run(s, primary(A, ["a", "b"]))
    update = apply(td, primary(B, ["a", "b"]), s)
    assert update.invalidated == (A,)
    old = update.description.servers[A]
    assert old.type is ServerType.UNKNOWN and old.error == NEWER_PRIMARY_ERROR


def oid(n: int) -> dict[str, Any]:
    return {"electionId": ObjectId(f"{n:024x}")}


@pytest.mark.parametrize("wire", [17, 21])
def test_stale_primary_by_election_id_since_6_0(wire: int) -> None:
    s = settings("a", set_name="rs")
    td = run(
        s,
        primary(A, ["a", "b"], setVersion=1, **oid(2), maxWireVersion=wire),
        primary(B, ["a", "b"], setVersion=9, **oid(1), maxWireVersion=wire),
    )
    assert td.servers[B].type is ServerType.UNKNOWN and td.servers[B].error == STALE_PRIMARY_ERROR
    assert td.servers[A].type is ServerType.RS_PRIMARY
    assert (td.max_election_id, td.max_set_version) == (ObjectId(f"{2:024x}"), 1)


def test_greater_election_id_wins_even_with_lower_set_version_since_6_0() -> None:
    s = settings("a", set_name="rs")
    td = run(
        s,
        primary(A, ["a", "b"], setVersion=5, **oid(1)),
        primary(B, ["a", "b"], setVersion=1, **oid(2)),
    )
    assert td.primary is not None and td.primary.address == B
    assert td.max_set_version == 1  # may go down: (electionId, setVersion) is one tuple


def test_set_version_first_before_6_0() -> None:
    s = settings("a", set_name="rs")
    td = run(
        s,
        primary(A, ["a", "b"], setVersion=2, **oid(1), maxWireVersion=16),
        primary(B, ["a", "b"], setVersion=1, **oid(2), maxWireVersion=16),
    )
    assert td.servers[B].error == STALE_PRIMARY_ERROR
    assert td.primary is not None and td.primary.address == A


def test_primary_without_election_id_is_stale_once_one_is_known_since_6_0() -> None:
    s = settings("a", set_name="rs")
    td = run(
        s, primary(A, ["a", "b"], setVersion=1, **oid(2)), primary(B, ["a", "b"], setVersion=1)
    )
    assert td.servers[B].type is ServerType.UNKNOWN


def test_primary_with_wrong_set_name_is_removed() -> None:
    s = settings("a", "b", set_name="rs")
    td = run(s, reply(A, isWritablePrimary=True, setName="x", hosts=["a"]))
    assert list(td.servers) == [B] and td.type is TopologyType.REPLICA_SET_NO_PRIMARY


@pytest.mark.parametrize("fields", [{"msg": "isdbgrid"}, {}])
def test_non_members_are_removed_from_a_replica_set(fields: dict[str, Any]) -> None:
    s = settings("a", set_name="rs")
    td = run(s, primary(A, ["a", "b"]), reply(B, isWritablePrimary=True, **fields))
    assert set(td.servers) == {A} and td.type is TopologyType.REPLICA_SET_WITH_PRIMARY


# -- Single and LoadBalanced ------------------------------------------------------------------


def test_single_keeps_any_server_type() -> None:
    s = settings("a", direct_connection=True)
    td = run(s, secondary(A, ["a", "b"]))
    assert td.type is TopologyType.SINGLE and list(td.servers) == [A]
    assert td.servers[A].type is ServerType.RS_SECONDARY


def test_single_with_set_name_rejects_another_set() -> None:
    s = settings("a", direct_connection=True, set_name="rs")
    td = run(s, reply(A, isWritablePrimary=True, setName="other"))
    assert td.servers[A].type is ServerType.UNKNOWN
    assert td.servers[A].error is not None and "other" in td.servers[A].error


def test_load_balanced_never_changes_type() -> None:
    s = settings("a", load_balanced=True)
    td = run(s, ServerDescription(address=A, type=ServerType.LOAD_BALANCER))
    assert td.type is TopologyType.LOAD_BALANCED and td.compatible
    assert td.servers[A].type is ServerType.LOAD_BALANCER


# -- derived fields ---------------------------------------------------------------------------


def test_wire_version_too_old_message() -> None:
    td = run(settings("a"), reply(A, isWritablePrimary=True, maxWireVersion=6))
    assert not td.compatible
    assert td.compatibility_error == (
        "Server at a:27017 reports wire version 6, but this version of mongo-sansio requires "
        "at least 8 (MongoDB 4.2)."
    )


def test_wire_version_too_new_message() -> None:
    s = settings("a", driver_name="Test Driver", client_max_wire_version=25)
    td = run(s, reply(A, isWritablePrimary=True, minWireVersion=26, maxWireVersion=30))
    assert td.compatibility_error == (
        "Server at a:27017 requires wire version 26, but this version of Test Driver only "
        "supports up to 25."
    )


def test_unknown_servers_do_not_affect_compatibility() -> None:
    s = settings("a")
    td = run(s, reply(A, isWritablePrimary=True, maxWireVersion=1), ServerDescription.unknown(A))
    assert td.compatible and td.compatibility_error is None


def test_logical_session_timeout_is_the_minimum_over_data_bearing_servers() -> None:
    s = settings("a", set_name="rs")
    td = run(
        s,
        primary(A, ["a", "b", "c"], logicalSessionTimeoutMinutes=30),
        secondary(B, ["a", "b", "c"], logicalSessionTimeoutMinutes=10),
        reply(C, arbiterOnly=True, setName="rs", hosts=["a", "b", "c"]),
    )
    assert td.logical_session_timeout_minutes == 10  # the arbiter carries no data
    td = apply(td, secondary(B, ["a", "b", "c"]), s).description
    assert td.logical_session_timeout_minutes is None


def test_topology_equivalence_ignores_rtt() -> None:
    s = settings("a")
    one = run(s, reply(A, isWritablePrimary=True))
    faster = ServerDescription.from_hello(
        A, {"ok": 1, "isWritablePrimary": True, "maxWireVersion": 21}, round_trip_time=9, now=9
    )
    two = apply(one, faster, s).description
    assert one.equivalent_to(two) and one != two


def test_writable_and_readable_questions() -> None:
    s = settings("a", set_name="rs")
    assert not TopologyDescription.initial(s).has_writable_server()
    td = run(s, primary(A, ["a"]))
    assert td.has_writable_server() and td.has_readable_server()
    assert run(settings("a", "b"), reply(A, msg="isdbgrid")).has_writable_server()
    assert run(settings("a", direct_connection=True), secondary(A, ["a"])).has_writable_server()
    assert td.common_wire_version == 21
