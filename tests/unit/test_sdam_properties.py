"""Hypothesis over the topology machine: any sequence of checks, failures, RTT samples and
application errors, for every kind of initial topology, leaves a valid description; the only
exception ever raised is a LocalProtocolError (refusing a misuse), and it changes nothing."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import Int64, ObjectId
from mongo_sansio.errors import LocalProtocolError
from mongo_sansio.sdam import (
    ApplicationError,
    ErrorKind,
    ErrorPhase,
    ServerType,
    Topology,
    TopologyDescription,
    TopologySettings,
    TopologyType,
    parse_address,
)
from mongo_sansio.sdam.actions import (
    CancelCheck,
    ClearPool,
    ReadyPool,
    RequestImmediateCheck,
    StartMonitor,
    StopMonitor,
)
from mongo_sansio.sdam.events import (
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

OUTPUT_TYPES = (
    CancelCheck,
    ClearPool,
    ReadyPool,
    RequestImmediateCheck,
    StartMonitor,
    StopMonitor,
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

HOSTS = ["a:27017", "b:27017", "c:27017", "A", "[::1]:27017", "d:1"]
CONFIGURATIONS = [
    {"seeds": ["a"]},
    {"seeds": ["a", "b"]},
    {"seeds": ["a"], "direct_connection": True},
    {"seeds": ["a"], "direct_connection": True, "set_name": "rs"},
    {"seeds": ["a", "b", "c"], "set_name": "rs"},
    {"seeds": ["a"], "load_balanced": True},
]

hosts = st.sampled_from(HOSTS)
addresses = st.sampled_from(HOSTS[:3] + ["e:27017"]).map(parse_address)
oids = st.integers(0, 3).map(lambda n: ObjectId(f"{n:024x}"))
topology_versions = st.fixed_dictionaries(
    {"processId": oids, "counter": st.integers(0, 3).map(Int64)}
)
anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 30),
    st.floats(allow_nan=True),
    st.text(max_size=4),
    hosts,
    st.lists(st.one_of(hosts, st.integers()), max_size=3),
    oids,
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
well_formed = st.fixed_dictionaries(
    {"ok": st.sampled_from([1, 1.0, True, 0])},
    optional={
        "isWritablePrimary": st.booleans(),
        "ismaster": st.booleans(),
        "secondary": st.booleans(),
        "arbiterOnly": st.booleans(),
        "hidden": st.booleans(),
        "isreplicaset": st.booleans(),
        "msg": st.sampled_from(["isdbgrid", "other"]),
        "setName": st.sampled_from(["rs", "other"]),
        "setVersion": st.integers(0, 4),
        "electionId": oids,
        "hosts": st.lists(hosts, max_size=4),
        "passives": st.lists(hosts, max_size=2),
        "arbiters": st.lists(hosts, max_size=2),
        "me": hosts,
        "primary": hosts,
        "minWireVersion": st.integers(0, 30),
        "maxWireVersion": st.integers(0, 30),
        "logicalSessionTimeoutMinutes": st.one_of(st.none(), st.integers(0, 60)),
        "topologyVersion": topology_versions,
        "tags": st.dictionaries(st.sampled_from(["dc", "rack"]), st.sampled_from(["x", "y"])),
    },
)
garbage = st.dictionaries(
    st.sampled_from(
        [
            "ok",
            "setName",
            "hosts",
            "me",
            "primary",
            "setVersion",
            "electionId",
            "tags",
            "topologyVersion",
            "lastWrite",
            "maxWireVersion",
            "isWritablePrimary",
            "secondary",
        ]
    ),  # fmt: skip
    anything,
    max_size=6,
).map(lambda d: {"ok": 1, **d})
ROLES = [
    {"isWritablePrimary": True, "setName": "rs"},
    {"isWritablePrimary": False, "secondary": True, "setName": "rs"},
    {"arbiterOnly": True, "setName": "rs"},
    {"isWritablePrimary": False, "setName": "rs"},
    {"isWritablePrimary": True, "setName": "other"},
    {"isWritablePrimary": True, "msg": "isdbgrid"},
    {"isWritablePrimary": True},
    {"isreplicaset": True},
]
plausible = st.builds(
    lambda role, members, extra: {"ok": 1, **role, "hosts": members, **extra},
    st.sampled_from(ROLES),
    st.lists(st.sampled_from(HOSTS[:3]), min_size=1, max_size=3, unique=True),
    st.fixed_dictionaries(
        {"maxWireVersion": st.sampled_from([9, 16, 17, 21])},
        optional={
            "setVersion": st.integers(0, 3),
            "electionId": oids,
            "primary": st.sampled_from(HOSTS[:3]),
            "logicalSessionTimeoutMinutes": st.integers(1, 3),
            "topologyVersion": topology_versions,
        },
    ),
)
replies = st.one_of(plausible, plausible, plausible, well_formed, garbage)

error_replies = st.fixed_dictionaries(
    {"ok": st.sampled_from([0, 1])},
    optional={
        "code": st.sampled_from([91, 189, 10107, 11600, 13435, 1, 18]) | anything,
        "errmsg": st.sampled_from(["not master", "node is recovering", "x"]) | anything,
        "topologyVersion": topology_versions | anything,
        "errorLabels": st.lists(st.sampled_from(["SystemOverloadedError", "x"])) | anything,
        "writeConcernError": st.fixed_dictionaries({"code": st.sampled_from([91, 10107, 1])}),
    },
)
application_errors = st.builds(
    ApplicationError,
    address=addresses,
    kind=st.sampled_from(ErrorKind),
    phase=st.sampled_from(ErrorPhase),
    generation=st.none() | st.integers(0, 3),
    max_wire_version=st.none() | st.integers(0, 21),
    reply=st.none() | error_replies,
    error_labels=st.sets(st.sampled_from(["SystemOverloadedError", "RetryableError"])),
    service_id=st.none() | oids,
)
hellos = st.tuples(st.just("hello"), addresses, replies, st.booleans())
inputs = st.one_of(
    hellos,
    hellos,
    hellos,
    st.tuples(st.just("fail"), addresses, st.booleans()),
    st.tuples(st.just("error"), application_errors),
    st.tuples(st.just("rtt"), addresses, st.floats(0, 1)),
    st.tuples(st.just("handshake"), addresses, replies),
    st.tuples(st.just("started"), addresses),
)


def feed(t: Topology, step: tuple[Any, ...], now: float) -> list[Any]:
    kind = step[0]
    if kind == "hello":
        return t.heartbeat_succeeded(step[1], step[2], duration=0.01, now=now, awaited=step[3])
    if kind == "fail":
        return t.heartbeat_failed(step[1], "boom", duration=0.01, now=now, timeout=step[2])
    if kind == "error":
        return t.application_error(step[1], now=now)
    if kind == "rtt":
        return t.rtt_sample(step[1], step[2])
    if kind == "handshake":
        return t.handshake_succeeded(step[1], step[2], round_trip_time=0.01, now=now)
    return t.heartbeat_started(step[1])


def check_valid(td: TopologyDescription, options: dict[str, Any]) -> None:
    for address, sd in td.servers.items():
        assert sd.address == address
        assert sd.round_trip_time is None or sd.round_trip_time >= 0
    primaries = [sd for sd in td.servers.values() if sd.type is ServerType.RS_PRIMARY]
    assert td.compatible == (td.compatibility_error is None)
    if options.get("load_balanced"):
        assert td.type is TopologyType.LOAD_BALANCED and len(td.servers) == 1
        assert all(sd.type is ServerType.LOAD_BALANCER for sd in td.servers.values())
        assert td.compatible
    elif options.get("direct_connection"):
        assert td.type is TopologyType.SINGLE and len(td.servers) == 1
    else:
        assert td.type is not TopologyType.LOAD_BALANCED
    if td.type is TopologyType.REPLICA_SET_WITH_PRIMARY:
        assert len(primaries) == 1 and td.set_name is not None
    if td.type is TopologyType.REPLICA_SET_NO_PRIMARY:
        assert not primaries and td.set_name is not None
    if td.type is TopologyType.SHARDED:
        # Unknown -> Sharded on a mongos's reply leaves the other servers as they were until
        # their own next check (the SDAM spec only removes a non-mongos when it reports); in an
        # Unknown topology those can only be Unknown or RSGhost (see below).
        assert all(
            sd.type in (ServerType.UNKNOWN, ServerType.MONGOS, ServerType.RS_GHOST)
            for sd in td.servers.values()
        )
    if td.type is TopologyType.UNKNOWN:
        assert all(
            sd.type in (ServerType.UNKNOWN, ServerType.RS_GHOST) for sd in td.servers.values()
        )
    if options.get("set_name"):
        assert td.set_name == options["set_name"]
    if td.type is TopologyType.SINGLE:
        assert len(td.servers) == 1


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(CONFIGURATIONS), st.lists(inputs, max_size=12))
def test_any_input_leaves_a_valid_description(
    options: dict[str, Any], steps: list[tuple[Any, ...]]
) -> None:
    t = Topology(TopologySettings(**options), topology_id=0)
    t.open()
    for number, step in enumerate(steps):
        before = t.description
        try:
            out = feed(t, step, float(number))
        except LocalProtocolError:
            assert t.description is before
            continue
        assert all(isinstance(o, OUTPUT_TYPES) for o in out)
        check_valid(t.description, options)
    closing = t.close()
    assert isinstance(closing[-1], TopologyClosedEvent)
    assert t.description.servers == {}
