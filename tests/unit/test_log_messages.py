"""mongo_sansio.log_messages: the specs' structured log messages, from scripted core events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mongo_sansio.bson import Int64, ObjectId
from mongo_sansio.client import events as ce
from mongo_sansio.cmap import events as pe
from mongo_sansio.errors import NetworkError, server_error_from_reply
from mongo_sansio.log_messages import (
    LogMessage,
    component_of,
    document_text,
    error_text,
    log_message,
    truncate,
)
from mongo_sansio.sdam import events as se
from mongo_sansio.sdam.description import ServerDescription, ServerType, TopologyType
from mongo_sansio.sdam.topology import TopologyDescription
from mongo_sansio.selection import events as sel
from mongo_sansio.selection.errors import ServerSelectionTimeoutError
from mongo_sansio.selection.read_preference import Mode, ReadPreference
from mongo_sansio.selection.rules import SelectionCriteria

ADDRESS = ("db.example", 27017)
POOL = "db.example:27017"


def message(event: object, **kwargs: Any) -> LogMessage:
    result = log_message(event, **kwargs)
    assert result is not None
    return result


def monitor(body: dict[str, Any], **ids: Any) -> ce.CommandMonitor:
    return ce.CommandMonitor("db", body, None, 11, ADDRESS, **ids)


# -- truncation and documents -------------------------------------------------------------------


def test_truncate_cuts_after_the_limit_and_appends_an_ellipsis() -> None:
    assert truncate("abcdef", 3) == "abc..."
    assert truncate("abc", 3) == "abc"
    assert truncate("", 0) == ""
    assert truncate("abc", 0) == "..."
    assert truncate("abc", -1) == "abc"  # negative: no limit


def test_truncation_counts_code_points_not_bytes() -> None:
    text = truncate("ééééé", 2)
    assert text == "éé..."
    text.encode("utf-8")  # whole code points only


def test_document_text_is_relaxed_extended_json() -> None:
    oid = ObjectId("0123456789abcdef01234567")
    text = document_text({"a": Int64(5), "b": 1.5, "_id": oid}, 1000)
    assert json.loads(text) == {"a": 5, "b": 1.5, "_id": {"$oid": str(oid)}}


def test_document_text_truncates_the_json_naively() -> None:
    document = {"x": "y" * 50}
    full = document_text(document, 10_000)
    assert document_text(document, 20) == full[:20] + "..."


def test_error_text_forms() -> None:
    server = server_error_from_reply({"ok": 0, "errmsg": "boom", "code": 2, "codeName": "X"})
    assert json.loads(error_text(server, 1000)) == {
        "ok": 0,
        "errmsg": "boom",
        "code": 2,
        "codeName": "X",
    }
    assert json.loads(error_text(server, 1000, redact=True)) == {"code": 2, "codeName": "X"}
    assert error_text(NetworkError("reset"), 1000) == "NetworkError: reset"
    assert error_text("plain words", 5) == "plain..."
    assert json.loads(error_text({"ok": 0}, 1000)) == {"ok": 0}


def test_str_of_a_message_is_its_data_as_json() -> None:
    msg = message(pe.PoolReady(address=POOL))
    assert json.loads(str(msg)) == dict(msg.data)
    assert msg.message == "Connection pool ready"


# -- command messages ---------------------------------------------------------------------------


def test_command_started_message() -> None:
    service = ObjectId()
    event = monitor(
        {"ping": 1}, operation_id=7, driver_connection_id=3, server_connection_id=42,
        service_id=service,
    ).started()  # fmt: skip
    msg = message(event)
    assert (msg.component, msg.level) == ("command", "debug")
    data = dict(msg.data)
    assert json.loads(data.pop("command")) == {"ping": 1, "$db": "db"}
    assert data == {
        "message": "Command started",
        "commandName": "ping",
        "databaseName": "db",
        "requestId": 11,
        "operationId": 7,
        "driverConnectionId": 3,
        "serverHost": "db.example",
        "serverPort": 27017,
        "serverConnectionId": 42,
        "serviceId": str(service),
    }


def test_unknown_ids_are_left_out_and_operation_id_falls_back() -> None:
    data = message(monitor({"ping": 1}).started()).data
    for key in ("driverConnectionId", "serverConnectionId", "serviceId"):
        assert key not in data
    assert data["operationId"] == 11
    assert None not in data.values()


def test_command_succeeded_message() -> None:
    data = message(monitor({"ping": 1}).finished({"ok": 1}, 0.0025)).data
    assert data["message"] == "Command succeeded"
    assert data["durationMS"] == pytest.approx(2.5)
    assert json.loads(data["reply"]) == {"ok": 1}


def test_command_failed_message() -> None:
    reply = {"ok": 0, "errmsg": "bad", "code": 2, "codeName": "BadValue"}
    data = message(monitor({"find": "c"}).finished(reply, 0.001)).data
    assert data["message"] == "Command failed"
    assert data["durationMS"] == pytest.approx(1.0)
    assert json.loads(data["failure"]) == reply


def test_long_command_is_truncated_at_the_max_document_length() -> None:
    event = monitor({"insert": "c", "documents": [{"x": "y" * 2000}]}).started()
    default = message(event).data["command"]
    assert len(default) == 1000 + 3 and default.endswith("...")
    short = message(event, max_document_length=50).data["command"]
    assert len(short) == 53
    assert default.startswith(short[:50])
    whole = message(event, max_document_length=-1).data["command"]
    assert json.loads(whole)["documents"][0]["x"] == "y" * 2000


@pytest.mark.parametrize(
    "body",
    [
        {"saslStart": 1, "payload": b"secret"},
        {"authenticate": 1, "user": "u"},
        {"createUser": "u", "pwd": "p"},
        {"hello": 1, "speculativeAuthenticate": {"x": 1}},
        {"isMaster": 1, "speculativeAuthenticate": {"x": 1}},
    ],
)
def test_sensitive_commands_are_redacted(body: dict[str, Any]) -> None:
    mon = monitor(body)
    assert message(mon.started()).data["command"] == "{}"
    assert message(mon.finished({"ok": 1, "payload": b"x"}, 0.0)).data["reply"] == "{}"
    reply = {"ok": 0, "errmsg": "secret", "code": 18, "codeName": "AuthenticationFailed"}
    failure = json.loads(message(mon.finished(reply, 0.0)).data["failure"])
    assert failure == {"code": 18, "codeName": "AuthenticationFailed"}


def test_hello_without_speculative_authentication_is_shown() -> None:
    data = message(monitor({"hello": 1}).started()).data
    assert json.loads(data["command"]) == {"hello": 1, "$db": "db"}


def test_network_failure_of_a_sensitive_command_is_not_redacted() -> None:
    data = message(monitor({"saslStart": 1}).failed(NetworkError("reset"), 0.0)).data
    assert data["failure"] == "NetworkError: reset"


# -- connection messages ------------------------------------------------------------------------

HOST = {"serverHost": "db.example", "serverPort": 27017}


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (
            pe.PoolCreated(
                address=POOL,
                options={"maxPoolSize": 5, "minPoolSize": 1, "populateBackoffMS": 9},
            ),
            {"message": "Connection pool created", "maxPoolSize": 5, "minPoolSize": 1},
        ),
        (pe.PoolReady(address=POOL), {"message": "Connection pool ready"}),
        (pe.PoolCleared(address=POOL), {"message": "Connection pool cleared"}),
        (pe.PoolClosed(address=POOL), {"message": "Connection pool closed"}),
        (
            pe.ConnectionCreated(address=POOL, connection_id=2),
            {"message": "Connection created", "driverConnectionId": 2},
        ),
        (
            pe.ConnectionReady(address=POOL, connection_id=2, duration=0.5),
            {"message": "Connection ready", "driverConnectionId": 2, "durationMS": 500.0},
        ),
        (
            pe.ConnectionClosed(
                address=POOL, connection_id=2, reason=pe.ConnectionClosedReason.POOL_CLOSED
            ),
            {
                "message": "Connection closed",
                "driverConnectionId": 2,
                "reason": "Connection pool was closed",
            },
        ),
        (
            pe.ConnectionClosed(
                address=POOL,
                connection_id=2,
                reason=pe.ConnectionClosedReason.ERROR,
                error=NetworkError("reset"),
            ),
            {
                "message": "Connection closed",
                "driverConnectionId": 2,
                "reason": "An error occurred while using the connection",
                "error": "NetworkError: reset",
            },
        ),
        (
            pe.ConnectionClosed(
                address=POOL, connection_id=2, reason=pe.ConnectionClosedReason.STALE
            ),
            {
                "message": "Connection closed",
                "driverConnectionId": 2,
                "reason": "Connection became stale because the pool was cleared",
            },
        ),
        (
            pe.ConnectionClosed(
                address=POOL, connection_id=2, reason=pe.ConnectionClosedReason.IDLE
            ),
            {
                "message": "Connection closed",
                "driverConnectionId": 2,
                "reason": "Connection has been available but unused for longer than the "
                "configured max idle time",
            },
        ),
        (pe.ConnectionCheckOutStarted(address=POOL), {"message": "Connection checkout started"}),
        (
            pe.ConnectionCheckOutFailed(
                address=POOL,
                reason=pe.CheckOutFailedReason.CONNECTION_ERROR,
                duration=0.25,
                error=NetworkError("refused"),
            ),
            {
                "message": "Connection checkout failed",
                "reason": "An error occurred while trying to establish a new connection",
                "error": "NetworkError: refused",
                "durationMS": 250.0,
            },
        ),
        (
            pe.ConnectionCheckOutFailed(
                address=POOL, reason=pe.CheckOutFailedReason.TIMEOUT, duration=1.0
            ),
            {
                "message": "Connection checkout failed",
                "reason": "Wait queue timeout elapsed without a connection becoming available",
                "durationMS": 1000.0,
            },
        ),
        (
            pe.ConnectionCheckedOut(address=POOL, connection_id=4, duration=0.001),
            {"message": "Connection checked out", "driverConnectionId": 4, "durationMS": 1.0},
        ),
        (
            pe.ConnectionCheckedIn(address=POOL, connection_id=4),
            {"message": "Connection checked in", "driverConnectionId": 4},
        ),
    ],
    ids=lambda x: type(x).__name__ if not isinstance(x, dict) else "",
)
def test_connection_messages(event: object, expected: dict[str, Any]) -> None:
    msg = message(event)
    assert (msg.component, msg.level) == ("connection", "debug")
    assert dict(msg.data) == {**expected, **HOST}
    assert list(msg.data)[0] == "message"


def test_pool_cleared_in_load_balanced_mode_names_the_service() -> None:
    service = ObjectId()
    data = message(pe.PoolCleared(address=POOL, service_id=service)).data
    assert data["serviceId"] == str(service)


def test_unix_socket_pool_has_no_port() -> None:
    data = message(pe.PoolReady(address="/tmp/mongodb-27017.sock")).data
    assert data["serverHost"] == "/tmp/mongodb-27017.sock"
    assert "serverPort" not in data


# -- topology messages --------------------------------------------------------------------------

TID = ObjectId()


def test_topology_and_server_monitoring_messages() -> None:
    cases = [
        (se.TopologyOpeningEvent(topology_id=TID), {"message": "Starting topology monitoring"}),
        (se.TopologyClosedEvent(topology_id=TID), {"message": "Stopped topology monitoring"}),
        (
            se.ServerOpeningEvent(topology_id=TID, address=ADDRESS),
            {"message": "Starting server monitoring", **HOST},
        ),
        (
            se.ServerClosedEvent(topology_id=TID, address=ADDRESS),
            {"message": "Stopped server monitoring", **HOST},
        ),
    ]
    for event, expected in cases:
        msg = message(event)
        assert (msg.component, msg.level) == ("topology", "debug")
        assert dict(msg.data) == {**expected, "topologyId": str(TID)}


def test_topology_description_changed_message() -> None:
    old = TopologyDescription.empty()
    new = TopologyDescription(
        type=TopologyType.SINGLE,
        servers={ADDRESS: ServerDescription(address=ADDRESS, type=ServerType.STANDALONE)},
    )
    data = message(
        se.TopologyDescriptionChangedEvent(
            topology_id=TID, previous_description=old, new_description=new
        )
    ).data
    assert data["message"] == "Topology description changed"
    assert "Unknown" in data["previousDescription"]
    assert "Single" in data["newDescription"] and "db.example:27017" in data["newDescription"]


def test_server_description_changed_is_not_logged() -> None:
    event = se.ServerDescriptionChangedEvent(
        topology_id=TID,
        address=ADDRESS,
        previous_description=ServerDescription(address=ADDRESS),
        new_description=ServerDescription(address=ADDRESS, type=ServerType.STANDALONE),
    )
    assert log_message(event) is None
    assert component_of(event) is None


def test_heartbeat_messages() -> None:
    started = message(
        se.ServerHeartbeatStartedEvent(connection_id=ADDRESS, awaited=True, driver_connection_id=1),
        topology_id=TID,
    )
    assert dict(started.data) == {
        "message": "Server heartbeat started",
        "topologyId": str(TID),
        **HOST,
        "driverConnectionId": 1,
        "awaited": True,
    }
    ok = message(
        se.ServerHeartbeatSucceededEvent(
            connection_id=ADDRESS,
            duration=0.003,
            reply={"ok": 1},
            topology_id=5,
            driver_connection_id=1,
            server_connection_id=77,
        ),
        topology_id=TID,
    ).data
    assert ok["topologyId"] == 5  # the event's own id wins
    assert ok["serverConnectionId"] == 77 and ok["awaited"] is False
    assert ok["durationMS"] == pytest.approx(3.0)
    assert json.loads(ok["reply"]) == {"ok": 1}
    failed = message(
        se.ServerHeartbeatFailedEvent(
            connection_id=ADDRESS, duration=0.5, failure=NetworkError("timed out")
        )
    ).data
    assert failed["message"] == "Server heartbeat failed"
    assert failed["failure"] == "NetworkError: timed out"
    assert "topologyId" not in failed  # unknown: left out, not null


# -- server selection messages ------------------------------------------------------------------


def selection_fields(**extra: Any) -> dict[str, Any]:
    return {
        "selector": "ReadPreference(primary)",
        "operation": "find",
        "topology_description": "topology type Unknown, servers: []",
        "operation_id": 9,
        **extra,
    }


def test_server_selection_messages() -> None:
    common = {
        "selector": "ReadPreference(primary)",
        "operationId": 9,
        "operation": "find",
        "topologyDescription": "topology type Unknown, servers: []",
    }
    started = message(sel.ServerSelectionStarted(**selection_fields()))
    assert (started.component, started.level) == ("serverSelection", "debug")
    assert dict(started.data) == {"message": "Server selection started", **common}
    ok = message(sel.ServerSelectionSucceeded(**selection_fields(address=ADDRESS)))
    assert dict(ok.data) == {"message": "Server selection succeeded", **common, **HOST}
    error = ServerSelectionTimeoutError("no primary")
    failed = message(sel.ServerSelectionFailed(**selection_fields(failure=error)))
    assert failed.data["message"] == "Server selection failed"
    assert failed.data["failure"].startswith("ServerSelectionTimeoutError: ")
    waiting = message(sel.ServerSelectionWaiting(**selection_fields(remaining_time=1.2346)))
    assert (waiting.level, waiting.data["remainingTimeMS"]) == ("info", 1235)
    assert waiting.data["message"] == "Waiting for suitable server to become available"
    forever = message(sel.ServerSelectionWaiting(**selection_fields(remaining_time=None)))
    assert "remainingTimeMS" not in forever.data


def test_selection_topology_description_object_is_described() -> None:
    fields = selection_fields(topology_description=TopologyDescription(type=TopologyType.SHARDED))
    data = message(sel.ServerSelectionStarted(**fields)).data
    assert data["topologyDescription"].startswith("topology type Sharded")


def test_describe_selector() -> None:
    pref = ReadPreference(mode=Mode.SECONDARY, tag_sets=[{"dc": "ny"}])
    read = sel.describe_selector(SelectionCriteria.for_read(pref, deprioritized=[ADDRESS]))
    assert "secondary" in read and "ny" in read and "db.example:27017" in read
    assert sel.describe_selector(SelectionCriteria.for_write()) == "WriteSelector"


def test_components_of_every_family() -> None:
    assert component_of(monitor({"ping": 1}).started()) == "command"
    assert component_of(pe.PoolReady(address=POOL)) == "connection"
    assert component_of(se.TopologyOpeningEvent(topology_id=1)) == "topology"
    assert component_of(sel.ServerSelectionStarted(**selection_fields())) == "serverSelection"
    assert component_of(object()) is None
    with pytest.raises(TypeError):
        log_message(object())
