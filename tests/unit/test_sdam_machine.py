"""The Topology machine (mongo_sansio.sdam.machine): event order, actions, pool generations,
RTTs and misuse."""

from __future__ import annotations

from typing import Any

import pytest

from mongo_sansio.bson import ObjectId
from mongo_sansio.errors import LocalProtocolError
from mongo_sansio.sdam import (
    ApplicationError,
    CancelCheck,
    ClearPool,
    ErrorKind,
    ReadyPool,
    RequestImmediateCheck,
    RoundTripTimes,
    ServerClosedEvent,
    ServerDescriptionChangedEvent,
    ServerHeartbeatFailedEvent,
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
    ServerOpeningEvent,
    ServerType,
    StartMonitor,
    StopMonitor,
    Topology,
    TopologyClosedEvent,
    TopologyDescriptionChangedEvent,
    TopologyOpeningEvent,
    TopologySettings,
    TopologyType,
)

A, B = ("a", 27017), ("b", 27017)
SERVICE = ObjectId("0000000000000000000000ff")


def topology(*seeds: str, **options: Any) -> Topology:
    t = Topology(TopologySettings(seeds=seeds or ("a",), **options), topology_id="t1")
    t.open()
    return t


def primary_reply(*hosts: str, **fields: Any) -> dict[str, Any]:
    return {
        "ok": 1,
        "isWritablePrimary": True,
        "setName": "rs",
        "hosts": list(hosts),
        "maxWireVersion": 21,
        **fields,
    }


def types(outputs: list[Any]) -> list[type]:
    return [type(o) for o in outputs]


def test_open_publishes_events_then_starts_monitors() -> None:
    t = Topology(TopologySettings(seeds=["a", "b"]), topology_id="t1")
    out = t.open()
    assert types(out) == [
        TopologyOpeningEvent,
        TopologyDescriptionChangedEvent,
        ServerOpeningEvent,
        StartMonitor,
        ServerOpeningEvent,
        StartMonitor,
    ]
    assert out[1].previous_description.servers == {}
    assert set(out[1].new_description.servers) == {A, B}
    with pytest.raises(LocalProtocolError):
        t.open()


def test_inputs_before_open_are_refused() -> None:
    t = Topology(TopologySettings(seeds=["a"]), topology_id=1)
    with pytest.raises(LocalProtocolError):
        t.heartbeat_started(A)


def test_successful_check_events_and_ready_pool() -> None:
    t = topology("a", "b", set_name="rs")
    assert types(t.heartbeat_started(A)) == [ServerHeartbeatStartedEvent]
    out = t.heartbeat_succeeded(A, primary_reply("a"), duration=0.02, now=1.0)
    assert types(out) == [
        ServerHeartbeatSucceededEvent,
        ServerDescriptionChangedEvent,
        StopMonitor,
        ServerClosedEvent,
        TopologyDescriptionChangedEvent,
        ReadyPool,
    ]
    assert out[2].address == B
    assert t.description.type is TopologyType.REPLICA_SET_WITH_PRIMARY
    assert t.description.servers[A].round_trip_time == pytest.approx(0.02)


def test_new_members_open_and_start_monitoring() -> None:
    t = topology("a", set_name="rs")
    out = t.heartbeat_succeeded(A, primary_reply("a", "b"), duration=0.0, now=1.0)
    index = types(out).index(ServerOpeningEvent)
    assert out[index].address == B and out[index + 1] == StartMonitor(address=B)


def test_equal_replies_publish_no_changes() -> None:
    t = topology("a", direct_connection=True)
    reply = {"ok": 1, "isWritablePrimary": True, "maxWireVersion": 21}
    t.heartbeat_succeeded(A, reply, duration=0.01, now=1.0)
    out = t.heartbeat_succeeded(A, reply, duration=0.03, now=2.0)
    assert types(out) == [ServerHeartbeatSucceededEvent, ReadyPool]
    # the description was still replaced: RTT and update time moved
    server = t.description.servers[A]
    assert server.last_update_time == 2.0
    assert server.round_trip_time == pytest.approx(0.2 * 0.03 + 0.8 * 0.01)
    assert server.min_round_trip_time == pytest.approx(0.01)


@pytest.mark.parametrize("timeout", [False, True])
def test_failed_check_marks_unknown_and_clears_the_pool(timeout: bool) -> None:
    t = topology("a", set_name="rs")
    t.heartbeat_succeeded(A, primary_reply("a"), duration=0.01, now=1.0)
    out = t.heartbeat_failed(A, OSError("reset"), duration=0.5, now=2.0, timeout=timeout)
    assert types(out) == [
        ServerHeartbeatFailedEvent,
        ServerDescriptionChangedEvent,
        TopologyDescriptionChangedEvent,
        ClearPool,
    ]
    assert out[-1] == ClearPool(address=A, interrupt_in_use_connections=timeout)
    server = t.description.servers[A]
    assert server.type is ServerType.UNKNOWN and server.round_trip_time is None
    assert server.error == "OSError: reset"
    assert t.pool_generation(A) == 1
    # the RTT average restarts from scratch afterwards
    t.heartbeat_succeeded(A, primary_reply("a"), duration=0.3, now=3.0)
    assert t.description.servers[A].round_trip_time == pytest.approx(0.3)


@pytest.mark.parametrize(
    "reply",
    [
        {"ok": 0, "errmsg": "denied", "code": 13},
        {"ok": 1, "hosts": "a:27017", "setName": "rs"},
    ],
)
def test_bad_replies_count_as_failed_checks(reply: dict[str, Any]) -> None:
    t = topology("a")
    out = t.heartbeat_succeeded(A, reply, duration=0.01, now=1.0)
    assert types(out)[0] is ServerHeartbeatFailedEvent
    assert out[-1] == ClearPool(address=A)
    assert t.description.servers[A].type is ServerType.UNKNOWN
    assert t.description.servers[A].error


def test_results_for_removed_servers_only_publish_the_heartbeat() -> None:
    t = topology("a", set_name="rs")
    out = t.heartbeat_succeeded(B, primary_reply("b"), duration=0.0, now=1.0)
    assert types(out) == [ServerHeartbeatSucceededEvent]
    assert types(t.heartbeat_failed(B, "x", duration=0.0, now=1.0)) == [ServerHeartbeatFailedEvent]


def test_new_primary_requests_a_check_of_the_old_one() -> None:
    t = topology("a", set_name="rs")
    t.heartbeat_succeeded(A, primary_reply("a", "b", maxWireVersion=7), duration=0.0, now=1.0)
    out = t.heartbeat_succeeded(B, primary_reply("a", "b"), duration=0.0, now=2.0)
    changed = [o for o in out if isinstance(o, ServerDescriptionChangedEvent)]
    assert [e.address for e in changed] == [B, A]
    # the old primary ran MongoDB < 4.2: its pool is cleared too
    assert out[-2:] == [ClearPool(address=A), RequestImmediateCheck(address=A)]


def test_application_network_error() -> None:
    t = topology("a", set_name="rs")
    t.heartbeat_succeeded(A, primary_reply("a"), duration=0.0, now=1.0)
    error = ApplicationError(address=A, kind=ErrorKind.NETWORK, generation=0)
    out = t.application_error(error, now=2.0)
    assert types(out) == [
        ServerDescriptionChangedEvent,
        TopologyDescriptionChangedEvent,
        ClearPool,
        CancelCheck,
    ]
    assert t.pool_generation(A) == 1
    # the same error from an older connection is stale now
    assert t.application_error(error, now=3.0) == []
    # errors about servers that left the topology are ignored
    assert t.application_error(ApplicationError(address=B, kind=ErrorKind.NETWORK), now=3.0) == []


def test_application_state_change_error() -> None:
    t = topology("a", set_name="rs")
    t.heartbeat_succeeded(A, primary_reply("a"), duration=0.0, now=1.0)
    error = ApplicationError(
        address=A, kind=ErrorKind.COMMAND, reply={"ok": 0, "code": 10107, "errmsg": "not primary"}
    )
    out = t.application_error(error, now=2.0)
    assert types(out)[-1] is RequestImmediateCheck
    assert t.description.type is TopologyType.REPLICA_SET_NO_PRIMARY
    assert t.pool_generation(A) == 0


def test_load_balanced_lifecycle() -> None:
    t = Topology(TopologySettings(seeds=["a"], load_balanced=True), topology_id="lb")
    out = t.open()
    assert types(out) == [
        TopologyOpeningEvent,
        TopologyDescriptionChangedEvent,
        ServerOpeningEvent,
        ServerDescriptionChangedEvent,
        TopologyDescriptionChangedEvent,
        ReadyPool,
    ]
    assert t.description.servers[A].type is ServerType.LOAD_BALANCER
    with pytest.raises(LocalProtocolError):
        t.heartbeat_started(A)
    error = ApplicationError(
        address=A, kind=ErrorKind.COMMAND, reply={"ok": 0, "code": 91}, service_id=SERVICE
    )
    assert t.application_error(error, now=1.0) == [ClearPool(address=A, service_id=SERVICE)]
    assert t.pool_generation(A, SERVICE) == 1 and t.pool_generation(A) == 0
    stale = ApplicationError(
        address=A,
        kind=ErrorKind.COMMAND,
        reply={"ok": 0, "code": 91},
        service_id=SERVICE,
        generation=0,
    )
    assert t.application_error(stale, now=1.0) == []
    assert t.handshake_succeeded(A, {"ok": 1}, round_trip_time=0.1, now=1.0) == []
    out = t.close()
    assert types(out) == [ServerClosedEvent, TopologyDescriptionChangedEvent, TopologyClosedEvent]


def test_close_stops_monitors_and_refuses_more_input() -> None:
    t = topology("a", "b")
    out = t.close()
    assert types(out) == [
        StopMonitor,
        ServerClosedEvent,
        StopMonitor,
        ServerClosedEvent,
        TopologyDescriptionChangedEvent,
        TopologyClosedEvent,
    ]
    assert out[-2].new_description.type is TopologyType.UNKNOWN
    assert out[-2].new_description.servers == {}
    assert t.closed and t.close() == []
    with pytest.raises(LocalProtocolError):
        t.heartbeat_succeeded(A, {"ok": 1}, duration=0.0, now=1.0)


def test_rtt_samples_update_the_description_silently() -> None:
    t = topology("a", direct_connection=True)
    reply = {"ok": 1, "isWritablePrimary": True, "maxWireVersion": 21}
    t.heartbeat_succeeded(A, reply, duration=0.1, now=1.0)
    assert t.rtt_sample(A, 0.2) == []
    server = t.description.servers[A]
    assert server.round_trip_time == pytest.approx(0.12)
    assert server.min_round_trip_time == pytest.approx(0.1)
    # an awaited (streaming) reply does not count as a sample
    t.heartbeat_succeeded(A, reply, duration=10.0, now=2.0, awaited=True)
    assert t.description.servers[A].round_trip_time == pytest.approx(0.12)


def test_handshake_replies_update_the_topology() -> None:
    t = topology("a", set_name="rs")
    out = t.handshake_succeeded(A, primary_reply("a"), round_trip_time=0.05, now=1.0)
    assert ReadyPool(address=A) in out
    assert t.description.type is TopologyType.REPLICA_SET_WITH_PRIMARY
    assert t.handshake_succeeded(A, {"ok": 0}, round_trip_time=0.05, now=1.0) == []


@pytest.mark.parametrize(
    "call",
    [
        lambda t: t.heartbeat_succeeded(A, [], duration=0.0, now=1.0),
        lambda t: t.heartbeat_succeeded(A, {"ok": 1}, duration=-1.0, now=1.0),
        lambda t: t.heartbeat_succeeded(A, {"ok": 1}, duration=0.0, now=float("nan")),
        lambda t: t.heartbeat_failed(A, "x", duration="1", now=1.0),
        lambda t: t.application_error("boom", now=1.0),
        lambda t: t.rtt_sample(A, float("inf")),
        lambda t: t.heartbeat_started("a:27017"),
        lambda t: t.heartbeat_failed(("a", "27017"), "x", duration=0.0, now=1.0),
        lambda t: t.handshake_succeeded(None, {"ok": 1}, round_trip_time=0.0, now=1.0),
    ],
)
def test_misuse_raises_local_protocol_error(call: Any) -> None:
    with pytest.raises(LocalProtocolError):
        call(topology("a"))


def test_round_trip_times() -> None:
    times = RoundTripTimes()
    assert times.average is None and times.minimum is None
    times = times.add(1.0)
    assert times.average == 1.0 and times.minimum == 0.0  # 0 until two samples exist
    for sample in [5.0] * 10:
        times = times.add(sample)
    assert times.minimum == 5.0 and len(times.samples) == 10
    assert times.average == pytest.approx(5.0 - 4.0 * 0.8**10)
