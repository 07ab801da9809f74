"""Addresses, hello parsing and Server Description Equality (mongo_sansio.sdam.description)."""

from __future__ import annotations

import datetime
import math
from typing import Any

import pytest

from mongo_sansio.bson import DatetimeMS, Int64, ObjectId
from mongo_sansio.errors import ConfigurationError, RemoteProtocolError
from mongo_sansio.sdam import (
    InvalidHelloReply,
    ServerDescription,
    ServerType,
    TopologyVersion,
    compare_topology_versions,
    format_address,
    parse_address,
)

A = ("a", 27017)


def hello(**fields: Any) -> ServerDescription:
    reply = {"ok": 1, "minWireVersion": 0, "maxWireVersion": 21, **fields}
    return ServerDescription.from_hello(A, reply, round_trip_time=0.01, now=5.0)


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("a", ("a", 27017)),
        ("A:27018", ("a", 27018)),
        ("Example.COM:1", ("example.com", 1)),
        ("[::1]", ("::1", 27017)),
        ("[::1]:27018", ("::1", 27018)),
        ("[FE80::1]:5", ("fe80::1", 5)),
        ("127.0.0.1:65535", ("127.0.0.1", 65535)),
    ],
)
def test_parse_address(text: str, address: tuple[str, int]) -> None:
    assert parse_address(text) == address
    assert parse_address(format_address(address)) == address


@pytest.mark.parametrize(
    "text", ["", ":27017", "a:", "a:0", "a:65536", "a:x", "::1", "[::1", "[::1]x", "a b", "a:٣"]
)
def test_parse_address_rejects(text: str) -> None:
    with pytest.raises(ConfigurationError):
        parse_address(text)


def test_default_port_can_be_chosen() -> None:
    assert parse_address("a", default_port=1) == ("a", 1)


@pytest.mark.parametrize(
    ("fields", "server_type"),
    [
        ({"isWritablePrimary": True}, ServerType.STANDALONE),
        ({"ismaster": True}, ServerType.STANDALONE),
        ({"isWritablePrimary": True, "msg": "isdbgrid"}, ServerType.MONGOS),
        ({"isWritablePrimary": True, "setName": "rs"}, ServerType.RS_PRIMARY),
        ({"ismaster": True, "setName": "rs"}, ServerType.RS_PRIMARY),
        # isWritablePrimary wins over the legacy field when both are present
        ({"isWritablePrimary": False, "ismaster": True, "setName": "rs"}, ServerType.RS_OTHER),
        ({"secondary": True, "setName": "rs"}, ServerType.RS_SECONDARY),
        ({"secondary": True, "hidden": True, "setName": "rs"}, ServerType.RS_OTHER),
        ({"arbiterOnly": True, "setName": "rs"}, ServerType.RS_ARBITER),
        ({"setName": "rs"}, ServerType.RS_OTHER),
        ({"isreplicaset": True}, ServerType.RS_GHOST),
        ({"isreplicaset": True, "setName": "rs"}, ServerType.RS_GHOST),
    ],
)
def test_server_type(fields: dict[str, Any], server_type: ServerType) -> None:
    assert hello(**fields).type is server_type


@pytest.mark.parametrize("ok", [0, 0.0, False, None, "1", 2])
def test_a_reply_without_ok_1_is_unknown(ok: object) -> None:
    reply = {"ok": ok, "errmsg": "boom", "code": 8, "isWritablePrimary": True}
    sd = ServerDescription.from_hello(A, reply, round_trip_time=0.5, now=3.0)
    assert sd.type is ServerType.UNKNOWN
    assert sd.round_trip_time is None
    assert sd.last_update_time == 3.0
    assert sd.error is not None and "boom" in sd.error and "8" in sd.error


def test_fields_are_parsed_and_hosts_lower_cased() -> None:
    election = ObjectId("000000000000000000000007")
    process = ObjectId("000000000000000000000009")
    when = datetime.datetime(2024, 1, 2, tzinfo=datetime.UTC)
    sd = hello(
        isWritablePrimary=True,
        setName="rs",
        setVersion=Int64(3),
        electionId=election,
        hosts=["A:27017", "b:1"],
        passives=["C"],
        arbiters=["[::1]:2"],
        me="A",
        primary="A:27017",
        tags={"dc": "east"},
        logicalSessionTimeoutMinutes=30,
        topologyVersion={"processId": process, "counter": Int64(4)},
        lastWrite={"lastWriteDate": when, "opTime": {"ts": 1, "t": 2}},
        serviceId=election,
        helloOk=True,
        iscryptd=True,
    )
    assert sd.type is ServerType.RS_PRIMARY
    assert sd.hosts == {("a", 27017), ("b", 1)}
    assert sd.passives == {("c", 27017)}
    assert sd.arbiters == {("::1", 2)}
    assert sd.all_hosts == sd.hosts | sd.passives | sd.arbiters
    assert sd.me == sd.primary == ("a", 27017)
    assert (sd.set_name, sd.set_version, sd.election_id) == ("rs", 3, election)
    assert dict(sd.tags) == {"dc": "east"}
    assert sd.logical_session_timeout_minutes == 30
    assert sd.topology_version == TopologyVersion(process_id=process, counter=4)
    assert sd.last_write_date == DatetimeMS(when)
    assert sd.op_time is not None and dict(sd.op_time) == {"ts": 1, "t": 2}
    assert sd.service_id == election and sd.hello_ok and sd.iscryptd
    assert (sd.round_trip_time, sd.last_update_time) == (0.01, 5.0)
    assert sd.is_known and sd.is_data_bearing and sd.is_writable and sd.is_readable


def test_tags_cannot_be_modified() -> None:
    sd = hello(tags={"dc": "east"})
    with pytest.raises(TypeError):
        sd.tags["dc"] = "west"  # type: ignore[index]


@pytest.mark.parametrize(
    "fields",
    [
        {"setName": 1},
        {"hosts": "a:1"},
        {"hosts": [1]},
        {"hosts": ["a:x"]},
        {"me": "[::1"},
        {"setVersion": "1"},
        {"setVersion": 1.5},
        {"electionId": "000000000000000000000001"},
        {"secondary": "yes", "setName": "rs"},
        {"isreplicaset": "yes"},
        {"tags": {"a": 1}},
        {"tags": []},
        {"topologyVersion": {"processId": 1, "counter": 1}},
        {"topologyVersion": {"processId": ObjectId("000000000000000000000001")}},
        {"lastWrite": 3},
        {"lastWrite": {"lastWriteDate": "yesterday"}},
        {"lastWrite": {"opTime": 3}},
        {"minWireVersion": True},
    ],
)
def test_malformed_replies_raise_invalid_hello_reply(fields: dict[str, Any]) -> None:
    with pytest.raises(InvalidHelloReply) as info:
        hello(**fields)
    assert isinstance(info.value, RemoteProtocolError)


def test_a_reply_must_be_a_mapping() -> None:
    with pytest.raises(InvalidHelloReply):
        ServerDescription.from_hello(A, [], round_trip_time=None, now=0.0)  # type: ignore[arg-type]


def test_unknown_default() -> None:
    sd = ServerDescription.unknown(A)
    assert sd.type is ServerType.UNKNOWN and sd.error is None
    assert sd.last_update_time == -math.inf and sd.round_trip_time is None
    assert (sd.min_wire_version, sd.max_wire_version) == (0, 0)
    assert not sd.is_known and not sd.is_data_bearing


def test_equality_ignores_rtt_and_update_time() -> None:
    one = ServerDescription.from_hello(A, {"ok": 1}, round_trip_time=0.1, now=1.0)
    two = ServerDescription.from_hello(A, {"ok": 1}, round_trip_time=0.9, now=2.0)
    assert one.equivalent_to(two) and one != two


@pytest.mark.parametrize(
    "change",
    [
        {"error": "x"},
        {"type": ServerType.MONGOS},
        {"max_wire_version": 1},
        {"hosts": frozenset({("b", 1)})},
        {"tags": {"a": "b"}},
        {"set_version": 2},
        {"primary": ("b", 1)},
        {"logical_session_timeout_minutes": 1},
        {"iscryptd": True},
    ],
)
def test_equality_sees_the_marked_fields(change: dict[str, Any]) -> None:
    import attrs

    base = ServerDescription.unknown(A)
    assert not base.equivalent_to(attrs.evolve(base, **change))


def test_topology_version_comparison() -> None:
    p1, p2 = ObjectId("000000000000000000000001"), ObjectId("000000000000000000000002")
    tv = TopologyVersion(process_id=p1, counter=5)
    assert compare_topology_versions(None, tv) == -1
    assert compare_topology_versions(tv, None) == -1
    assert compare_topology_versions(tv, TopologyVersion(process_id=p2, counter=0)) == -1
    assert compare_topology_versions(tv, TopologyVersion(process_id=p1, counter=6)) == -1
    assert compare_topology_versions(tv, TopologyVersion(process_id=p1, counter=5)) == 0
    assert compare_topology_versions(tv, TopologyVersion(process_id=p1, counter=4)) == 1
    assert TopologyVersion.from_document(tv.to_document()) == tv
