"""mongo_sansio.monitoring: PyMongo's listener API, the public events, and to_public."""

from __future__ import annotations

import datetime
import inspect
from typing import Any

import pymongo.monitoring as pm
import pytest
from pymongo.server_type import SERVER_TYPE as PM_SERVER_TYPE
from pymongo.topology_description import TOPOLOGY_TYPE as PM_TOPOLOGY_TYPE

from mongo_sansio import monitoring as m
from mongo_sansio.bson import ObjectId
from mongo_sansio.client import events as ce
from mongo_sansio.cmap import events as pe
from mongo_sansio.errors import NetworkError, ServerError, server_error_from_reply
from mongo_sansio.sdam import events as se
from mongo_sansio.sdam.description import (
    SERVER_TYPE,
    TOPOLOGY_TYPE,
    ServerDescription,
    ServerType,
    TopologyType,
)
from mongo_sansio.sdam.topology import TopologyDescription, TopologySettings

ADDRESS = ("db.example", 27017)
EVENT_CLASSES = [
    name
    for name, value in vars(pm).items()
    if inspect.isclass(value)
    and name.endswith("Event")
    and not name.startswith("_")
    and value.__module__ == pm.__name__
]
LISTENER_CLASSES = [
    "CommandListener",
    "ServerListener",
    "ServerHeartbeatListener",
    "TopologyListener",
    "ConnectionPoolListener",
]


def public_names(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


# -- differential: the names PyMongo offers ---------------------------------------------------


def test_every_pymongo_event_class_exists() -> None:
    assert len(EVENT_CLASSES) >= 23
    missing = [name for name in EVENT_CLASSES if not hasattr(m, name)]
    assert missing == []


@pytest.mark.parametrize("name", EVENT_CLASSES)
def test_event_class_offers_every_public_attribute_of_pymongos(name: str) -> None:
    ours = getattr(m, name)
    assert public_names(getattr(pm, name)) <= public_names(ours)


@pytest.mark.parametrize("name", EVENT_CLASSES)
def test_event_constructor_takes_pymongos_parameters(name: str) -> None:
    theirs = list(inspect.signature(getattr(pm, name)).parameters)
    ours = list(inspect.signature(getattr(m, name)).parameters)
    if theirs[-1] == "args":  # PyMongo forwards *args to the base class: the base's names
        theirs = theirs[:-1]
    assert ours[: len(theirs)] == theirs


@pytest.mark.parametrize("name", LISTENER_CLASSES)
def test_listener_classes_have_pymongos_methods(name: str) -> None:
    assert public_names(getattr(pm, name)) == public_names(getattr(m, name))


@pytest.mark.parametrize("name", LISTENER_CLASSES)
def test_listener_methods_raise_not_implemented(name: str) -> None:
    listener = getattr(m, name)()
    for method in public_names(type(listener)):
        with pytest.raises(NotImplementedError):
            getattr(listener, method)(object())


@pytest.mark.parametrize(
    ("name", "ours"),
    [
        ("ConnectionClosedReason", m.ConnectionClosedReason),
        ("ConnectionCheckOutFailedReason", m.ConnectionCheckOutFailedReason),
    ],
)
def test_reason_constants_match_pymongos(name: str, ours: type) -> None:
    theirs = getattr(pm, name)
    assert {k: getattr(theirs, k) for k in public_names(theirs)} == {
        k: getattr(ours, k) for k in public_names(ours)
    }


def test_reason_constants_match_the_core_enums() -> None:
    assert {r.value for r in pe.ConnectionClosedReason} == {
        m.ConnectionClosedReason.STALE,
        m.ConnectionClosedReason.IDLE,
        m.ConnectionClosedReason.ERROR,
        m.ConnectionClosedReason.POOL_CLOSED,
    }
    assert {r.value for r in pe.CheckOutFailedReason} == {
        m.ConnectionCheckOutFailedReason.TIMEOUT,
        m.ConnectionCheckOutFailedReason.POOL_CLOSED,
        m.ConnectionCheckOutFailedReason.CONN_ERROR,
    }


# -- descriptions offer PyMongo's names ------------------------------------------------------


@pytest.mark.parametrize("server_type", list(ServerType))
def test_server_type_codes_and_names_are_pymongos(server_type: ServerType) -> None:
    sd = ServerDescription(address=ADDRESS, type=server_type)
    expected = "Unknown" if server_type is ServerType.POSSIBLE_PRIMARY else server_type.value
    assert sd.server_type_name == expected
    assert sd.server_type == getattr(PM_SERVER_TYPE, expected)
    assert sd.is_server_type_known == (expected != "Unknown")
    assert SERVER_TYPE == tuple(PM_SERVER_TYPE)


@pytest.mark.parametrize("topology_type", list(TopologyType))
def test_topology_type_codes_and_names_are_pymongos(topology_type: TopologyType) -> None:
    td = TopologyDescription(type=topology_type)
    assert td.topology_type_name == topology_type.value
    assert td.topology_type == getattr(PM_TOPOLOGY_TYPE, topology_type.value)
    assert TOPOLOGY_TYPE._fields == PM_TOPOLOGY_TYPE._fields


def test_topology_description_offers_server_descriptions() -> None:
    td = TopologyDescription.initial(TopologySettings(seeds=["a:1", "b:2"], set_name="rs"))
    servers = td.server_descriptions()
    assert list(servers) == [("a", 1), ("b", 2)]
    assert all(sd.server_type_name == "Unknown" for sd in servers.values())
    servers.clear()  # a copy: the description is unchanged
    assert len(td.server_descriptions()) == 2
    assert td.replica_set_name == "rs"
    assert td.has_server(("a", 1)) and not td.has_server(("c", 3))
    assert not td.has_known_servers
    assert td.readable_servers == ()


def test_server_description_pymongo_properties() -> None:
    primary = ServerDescription(
        address=ADDRESS, type=ServerType.RS_PRIMARY, set_name="rs", max_wire_version=21
    )
    assert primary.replica_set_name == "rs"
    assert primary.retryable_writes_supported and primary.retryable_reads_supported
    assert not primary.mongos
    assert ServerDescription(address=ADDRESS, type=ServerType.MONGOS).mongos
    secondary = ServerDescription(address=ADDRESS, type=ServerType.RS_SECONDARY)
    assert not secondary.retryable_writes_supported
    assert not secondary.retryable_reads_supported  # max wire version 0


# -- public constructors behave as PyMongo's --------------------------------------------------


def test_command_started_constructor_redacts_and_rejects_empty() -> None:
    event = m.CommandStartedEvent({"saslStart": 1, "payload": b"x"}, "admin", 3, ADDRESS, 3)
    assert event.command == {} and event.command_name == "saslStart"
    hello = m.CommandStartedEvent(
        {"hello": 1, "speculativeAuthenticate": {}}, "admin", 1, ADDRESS, 1
    )
    assert hello.command == {}
    plain = m.CommandStartedEvent({"hello": 1}, "admin", 1, ADDRESS, 1)
    assert plain.command == {"hello": 1}
    with pytest.raises(ValueError):
        m.CommandStartedEvent({}, "admin", 1, ADDRESS, 1)


def test_command_succeeded_constructor_converts_the_duration() -> None:
    event = m.CommandSucceededEvent(
        datetime.timedelta(milliseconds=1.5), {"ok": 1}, "ping", 4, ADDRESS, None
    )
    assert event.duration_micros == 1500
    assert event.database_name == ""
    redacted = m.CommandSucceededEvent(
        datetime.timedelta(0), {"ok": 1, "payload": b"x"}, "saslContinue", 4, ADDRESS, 4
    )
    assert redacted.reply == {}


def test_events_are_read_only() -> None:
    event = m.PoolReadyEvent(ADDRESS)
    with pytest.raises(AttributeError):
        event.address = ("x", 1)  # type: ignore[misc]


def test_check_out_failed_has_connection_id_zero_as_pymongo() -> None:
    ours = m.ConnectionCheckOutFailedEvent(ADDRESS, "timeout", 0.5)
    theirs = pm.ConnectionCheckOutFailedEvent(ADDRESS, "timeout", 0.5)
    assert (ours.connection_id, ours.reason, ours.duration) == (
        theirs.connection_id,
        theirs.reason,
        theirs.duration,
    )
    assert repr(ours) == repr(theirs)


# -- to_public ----------------------------------------------------------------------------------


def monitor(body: dict[str, Any], **ids: Any) -> ce.CommandMonitor:
    return ce.CommandMonitor("db", body, None, 11, ADDRESS, **ids)


def test_command_started_to_public_carries_every_id() -> None:
    service = ObjectId()
    core = monitor(
        {"find": "c"},
        operation_id=7,
        driver_connection_id=3,
        server_connection_id=42,
        service_id=service,
    ).started()
    event = m.to_public(core)
    assert isinstance(event, m.CommandStartedEvent)
    assert (event.command_name, event.database_name, event.request_id) == ("find", "db", 11)
    assert event.command == {"find": "c", "$db": "db"}
    assert event.connection_id == ADDRESS
    assert (event.operation_id, event.driver_connection_id) == (7, 3)
    assert (event.server_connection_id, event.service_id) == (42, service)


def test_operation_id_falls_back_to_the_request_id() -> None:
    event = m.to_public(monitor({"ping": 1}).started())
    assert isinstance(event, m.CommandStartedEvent)
    assert event.operation_id == 11


def test_command_succeeded_to_public() -> None:
    event = m.to_public(monitor({"ping": 1}).finished({"ok": 1}, 0.002))
    assert isinstance(event, m.CommandSucceededEvent)
    assert event.duration_micros == 2000
    assert event.reply == {"ok": 1}


def test_ok_zero_reply_becomes_a_failure_document() -> None:
    reply = {"ok": 0, "errmsg": "no", "code": 2, "codeName": "BadValue"}
    event = m.to_public(monitor({"find": "c"}).finished(reply, 0.001))
    assert isinstance(event, m.CommandFailedEvent)
    assert event.failure == reply
    assert event.duration_micros == 1000


def test_sensitive_server_failure_is_redacted() -> None:
    reply = {
        "ok": 0,
        "errmsg": "secret detail",
        "code": 18,
        "codeName": "AuthenticationFailed",
        "errorLabels": ["X"],
    }
    core = monitor({"saslStart": 1}).finished(reply, 0.0)
    assert isinstance(core, ce.CommandFailedEvent) and core.redacted
    event = m.to_public(core)
    assert isinstance(event, m.CommandFailedEvent)
    assert event.failure == {"code": 18, "codeName": "AuthenticationFailed", "errorLabels": ["X"]}


def test_network_failure_of_a_sensitive_command_is_not_redacted() -> None:
    event = m.to_public(monitor({"saslStart": 1}).failed(NetworkError("reset"), 0.0))
    assert isinstance(event, m.CommandFailedEvent)
    assert event.failure == {"errmsg": "reset", "errtype": "NetworkError"}


def test_failure_document_of_a_server_error_without_details() -> None:
    error = ServerError("bad", code=5, code_name="X", error_labels=["L"])
    assert m.failure_document(error) == {
        "ok": 0,
        "errmsg": "bad",
        "code": 5,
        "codeName": "X",
        "errorLabels": ["L"],
    }


POOL = "db.example:27017"


@pytest.mark.parametrize(
    ("core", "cls", "attributes"),
    [
        (
            pe.PoolCreated(address=POOL, options={"maxPoolSize": 5}),
            m.PoolCreatedEvent,
            {"options": {"maxPoolSize": 5}},
        ),
        (pe.PoolReady(address=POOL), m.PoolReadyEvent, {}),
        (
            pe.PoolCleared(address=POOL, interrupt_in_use_connections=True),
            m.PoolClearedEvent,
            {"service_id": None, "interrupt_connections": True},
        ),
        (pe.PoolClosed(address=POOL), m.PoolClosedEvent, {}),
        (
            pe.ConnectionCreated(address=POOL, connection_id=2),
            m.ConnectionCreatedEvent,
            {"connection_id": 2},
        ),
        (
            pe.ConnectionReady(address=POOL, connection_id=2, duration=0.25),
            m.ConnectionReadyEvent,
            {"connection_id": 2, "duration": 0.25},
        ),
        (
            pe.ConnectionClosed(
                address=POOL, connection_id=2, reason=pe.ConnectionClosedReason.IDLE
            ),
            m.ConnectionClosedEvent,
            {"connection_id": 2, "reason": "idle"},
        ),
        (pe.ConnectionCheckOutStarted(address=POOL), m.ConnectionCheckOutStartedEvent, {}),
        (
            pe.ConnectionCheckOutFailed(
                address=POOL, reason=pe.CheckOutFailedReason.CONNECTION_ERROR, duration=1.0
            ),
            m.ConnectionCheckOutFailedEvent,
            {"reason": "connectionError", "duration": 1.0, "connection_id": 0},
        ),
        (
            pe.ConnectionCheckedOut(address=POOL, connection_id=4, duration=0.5),
            m.ConnectionCheckedOutEvent,
            {"connection_id": 4, "duration": 0.5},
        ),
        (
            pe.ConnectionCheckedIn(address=POOL, connection_id=4),
            m.ConnectionCheckedInEvent,
            {"connection_id": 4},
        ),
    ],
    ids=lambda x: type(x).__name__ if not isinstance(x, dict) else "",
)
def test_pool_events_to_public(core: object, cls: type, attributes: dict[str, Any]) -> None:
    event = m.to_public(core)
    assert type(event) is cls
    assert event.address == ADDRESS  # type: ignore[attr-defined]
    for name, value in attributes.items():
        assert getattr(event, name) == value
    base, method = m.listener_method(event)
    assert base is m.ConnectionPoolListener and hasattr(base, method)


def test_pool_options_are_a_plain_dict() -> None:
    event = m.to_public(pe.PoolCreated(address=POOL, options={"minPoolSize": 1}))
    assert isinstance(event, m.PoolCreatedEvent)
    assert type(event.options) is dict


def test_pool_address_forms() -> None:
    assert m.pool_address("[::1]:27018") == ("::1", 27018)
    assert m.pool_address("/tmp/mongodb-27017.sock") == ("/tmp/mongodb-27017.sock", None)
    assert m.pool_address("[::1") == ("[::1", None)


def test_sdam_events_to_public() -> None:
    tid = ObjectId()
    old, new = (
        ServerDescription(address=ADDRESS),
        ServerDescription(address=ADDRESS, type=ServerType.STANDALONE),
    )
    told, tnew = TopologyDescription.empty(), TopologyDescription(type=TopologyType.SINGLE)
    cases: list[tuple[object, type, type, str]] = [
        (
            se.TopologyOpeningEvent(topology_id=tid),
            m.TopologyOpenedEvent,
            m.TopologyListener,
            "opened",
        ),
        (
            se.TopologyClosedEvent(topology_id=tid),
            m.TopologyClosedEvent,
            m.TopologyListener,
            "closed",
        ),
        (
            se.TopologyDescriptionChangedEvent(
                topology_id=tid, previous_description=told, new_description=tnew
            ),
            m.TopologyDescriptionChangedEvent,
            m.TopologyListener,
            "description_changed",
        ),
        (
            se.ServerOpeningEvent(topology_id=tid, address=ADDRESS),
            m.ServerOpeningEvent,
            m.ServerListener,
            "opened",
        ),
        (
            se.ServerClosedEvent(topology_id=tid, address=ADDRESS),
            m.ServerClosedEvent,
            m.ServerListener,
            "closed",
        ),
        (
            se.ServerDescriptionChangedEvent(
                topology_id=tid, address=ADDRESS, previous_description=old, new_description=new
            ),
            m.ServerDescriptionChangedEvent,
            m.ServerListener,
            "description_changed",
        ),
    ]
    for core, cls, base, method in cases:
        event = m.to_public(core)
        assert type(event) is cls
        assert event.topology_id == tid  # type: ignore[attr-defined]
        assert m.listener_method(event) == (base, method)
    changed = m.to_public(cases[5][0])
    assert isinstance(changed, m.ServerDescriptionChangedEvent)
    assert changed.server_address == ADDRESS
    assert changed.previous_description.server_type_name == "Unknown"
    assert changed.new_description.server_type_name == "Standalone"
    topology = m.to_public(cases[2][0])
    assert isinstance(topology, m.TopologyDescriptionChangedEvent)
    assert topology.new_description.topology_type_name == "Single"


def test_heartbeat_events_to_public() -> None:
    started = m.to_public(se.ServerHeartbeatStartedEvent(connection_id=ADDRESS, awaited=True))
    assert isinstance(started, m.ServerHeartbeatStartedEvent)
    assert (started.connection_id, started.awaited) == (ADDRESS, True)
    ok = m.to_public(
        se.ServerHeartbeatSucceededEvent(connection_id=ADDRESS, duration=0.01, reply={"ok": 1})
    )
    assert isinstance(ok, m.ServerHeartbeatSucceededEvent)
    assert (ok.duration, ok.reply, ok.awaited) == (0.01, {"ok": 1}, False)
    assert m.listener_method(ok) == (m.ServerHeartbeatListener, "succeeded")


@pytest.mark.parametrize(
    ("failure", "expected_type"),
    [
        (NetworkError("timed out"), NetworkError),
        ({"ok": 0, "errmsg": "no", "code": 2}, ServerError),
        ("monitor gave up", Exception),
    ],
)
def test_heartbeat_failure_is_an_exception(failure: object, expected_type: type) -> None:
    event = m.to_public(
        se.ServerHeartbeatFailedEvent(connection_id=ADDRESS, duration=0.5, failure=failure)
    )
    assert isinstance(event, m.ServerHeartbeatFailedEvent)
    assert isinstance(event.reply, expected_type)
    assert event.duration == 0.5


def test_to_public_and_listener_method_reject_other_objects() -> None:
    with pytest.raises(TypeError):
        m.to_public(object())
    with pytest.raises(TypeError):
        m.listener_method(object())


def test_command_events_map_to_command_listener_methods() -> None:
    started = m.to_public(monitor({"ping": 1}).started())
    failed = m.to_public(monitor({"ping": 1}).failed(server_error_from_reply({"ok": 0}), 0.0))
    assert m.listener_method(started) == (m.CommandListener, "started")
    assert m.listener_method(failed) == (m.CommandListener, "failed")


# -- validation and registration ----------------------------------------------------------------


def test_validate_listeners_names_the_offender() -> None:
    class NotAListener:
        def started(self, event: object) -> None:
            pass

    with pytest.raises(TypeError, match="NotAListener"):
        m.validate_listeners([m.CommandListener(), NotAListener()])
    with pytest.raises(TypeError, match="event_listeners must be a list or tuple"):
        m.validate_listeners(m.CommandListener())  # type: ignore[arg-type]
    listeners = [m.CommandListener(), m.TopologyListener()]
    assert m.validate_listeners(listeners) == tuple(listeners)


def test_register_rejects_non_listeners_and_keeps_order() -> None:
    with pytest.raises(TypeError):
        m.register(object())  # type: ignore[arg-type]
    first, second = m.ServerListener(), m.CommandListener()
    before = m.registered_listeners()
    try:
        m.register(first)
        m.register(second)
        assert m.registered_listeners()[-2:] == (first, second)
    finally:
        m._REGISTERED[:] = list(before)
