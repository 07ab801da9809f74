"""adapters/_publish.py: listener dispatch, logging through `logging`, the MONGODB_LOG_* variables."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mongo_sansio import monitoring as m
from mongo_sansio.adapters import _publish
from mongo_sansio.adapters._publish import (
    LOGGER_NAMES,
    LogSettings,
    Publisher,
    family_of,
    log_settings_from_environment,
    parse_level,
)
from mongo_sansio.client import events as ce
from mongo_sansio.cmap import events as pe
from mongo_sansio.log_messages import LogMessage
from mongo_sansio.sdam import events as se
from mongo_sansio.selection import events as sel

ADDRESS = ("db.example", 27017)
POOL = "db.example:27017"
NO_ENV: dict[str, str] = {}


def command_started() -> ce.CommandStartedEvent:
    return ce.CommandMonitor("db", {"ping": 1}, None, 1, ADDRESS).started()


def selection_waiting() -> sel.ServerSelectionWaiting:
    return sel.ServerSelectionWaiting(
        selector="ReadPreference(primary)",
        operation="find",
        topology_description="topology type Unknown, servers: []",
        remaining_time=1.0,
    )


class Recorder(m.CommandListener, m.ConnectionPoolListener):
    """Subclasses two bases: receives both families."""

    def __init__(self, calls: list[tuple[str, str, object]], name: str) -> None:
        self.calls, self.name = calls, name

    def started(self, event: m.CommandStartedEvent) -> None:
        self.calls.append((self.name, "started", event))

    def pool_ready(self, event: m.PoolReadyEvent) -> None:
        self.calls.append((self.name, "pool_ready", event))


class Heartbeats(m.ServerHeartbeatListener):
    def __init__(self) -> None:
        self.events: list[object] = []

    def started(self, event: m.ServerHeartbeatStartedEvent) -> None:
        self.events.append(event)


class Raising(m.CommandListener):
    def started(self, event: m.CommandStartedEvent) -> None:
        raise RuntimeError("listener bug")


@pytest.fixture(autouse=True)
def quiet_loggers() -> Iterator[None]:
    """Leave the component loggers as they were (tests set levels and handlers)."""
    saved = {name: logging.getLogger(name).level for name in LOGGER_NAMES.values()}
    handlers = {name: list(logging.getLogger(name).handlers) for name in LOGGER_NAMES.values()}
    installed = dict(_publish._INSTALLED)
    yield
    for name, level in saved.items():
        logger = logging.getLogger(name)
        logger.setLevel(level)
        for handler in logger.handlers[:]:
            if handler not in handlers[name]:
                logger.removeHandler(handler)
                handler.close()
    _publish._INSTALLED.clear()
    _publish._INSTALLED.update(installed)


# -- dispatch -----------------------------------------------------------------------------------


def test_dispatch_by_base_class_and_order() -> None:
    calls: list[tuple[str, str, object]] = []
    first, second = Recorder(calls, "first"), Recorder(calls, "second")
    heartbeats = Heartbeats()
    publisher = Publisher([first, heartbeats, second], environ=NO_ENV)
    publisher.publish(command_started())
    publisher.publish(pe.PoolReady(address=POOL))
    assert [(name, method) for name, method, _ in calls] == [
        ("first", "started"),
        ("second", "started"),
        ("first", "pool_ready"),
        ("second", "pool_ready"),
    ]
    assert isinstance(calls[0][2], m.CommandStartedEvent)
    assert calls[0][2] is calls[1][2]  # converted once
    assert heartbeats.events == []
    publisher.publish(se.ServerHeartbeatStartedEvent(connection_id=ADDRESS))
    assert len(heartbeats.events) == 1 and len(calls) == 4


def test_a_raising_listener_is_logged_and_the_others_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[tuple[str, str, object]] = []
    publisher = Publisher([Raising(), Recorder(calls, "after")], environ=NO_ENV)
    with caplog.at_level(logging.ERROR, logger="mongo_sansio.monitoring"):
        publisher.publish(command_started())  # does not raise
    assert [c[:2] for c in calls] == [("after", "started")]
    (record,) = [r for r in caplog.records if r.name == "mongo_sansio.monitoring"]
    assert "Raising" in record.getMessage() and record.exc_info is not None
    assert "listener bug" in str(record.exc_info[1])


def test_a_listener_not_overriding_a_method_is_reported_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    publisher = Publisher([m.TopologyListener()], environ=NO_ENV)
    with caplog.at_level(logging.ERROR, logger="mongo_sansio.monitoring"):
        publisher.publish(se.TopologyOpeningEvent(topology_id=1))
    assert any(r.exc_info and r.exc_info[0] is NotImplementedError for r in caplog.records)


def test_non_listener_is_a_type_error_naming_it() -> None:
    class Duck:
        def started(self, event: object) -> None:
            pass

    with pytest.raises(TypeError, match="Duck"):
        Publisher([Duck()], environ=NO_ENV)


def test_registered_listeners_come_first() -> None:
    calls: list[tuple[str, str, object]] = []
    before = m.registered_listeners()
    try:
        m.register(Recorder(calls, "global"))
        Publisher([Recorder(calls, "local")], environ=NO_ENV).publish(command_started())
    finally:
        m._REGISTERED[:] = list(before)
    assert [c[0] for c in calls] == ["global", "local"]


@pytest.mark.parametrize(
    ("event", "family"),
    [
        (command_started(), "command"),
        (pe.PoolReady(address=POOL), "connection"),
        (se.ServerHeartbeatStartedEvent(connection_id=ADDRESS), "heartbeat"),
        (se.ServerOpeningEvent(topology_id=1, address=ADDRESS), "server"),
        (se.TopologyClosedEvent(topology_id=1), "topology"),
        (selection_waiting(), "serverSelection"),
    ],
    ids=lambda x: x if isinstance(x, str) else type(x).__name__,
)
def test_family_of(event: object, family: str) -> None:
    assert family_of(event) == family


def test_family_of_rejects_other_objects() -> None:
    with pytest.raises(TypeError):
        family_of(object())


# -- who wants what -----------------------------------------------------------------------------


def test_nobody_wants_anything_without_listeners_or_logging() -> None:
    publisher = Publisher([], environ=NO_ENV)
    for name in LOGGER_NAMES.values():
        logging.getLogger(name).setLevel(logging.WARNING)
    assert not any(publisher.wants(family) for family in _publish.FAMILIES)
    assert not publisher.enabled_for_commands and not publisher.enabled_for_cmap


def test_unknown_family_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="commands"):
        Publisher([], environ=NO_ENV).wants("commands")


def test_a_listener_makes_its_family_wanted() -> None:
    logging.getLogger("mongo_sansio.topology").setLevel(logging.WARNING)
    publisher = Publisher([Heartbeats()], environ=NO_ENV)
    assert publisher.enabled_for_server_heartbeat
    assert not publisher.enabled_for_topology and not publisher.enabled_for_server


def test_an_enabled_logger_makes_its_families_wanted() -> None:
    publisher = Publisher([], environ=NO_ENV)
    logging.getLogger("mongo_sansio.topology").setLevel(logging.DEBUG)
    assert publisher.wants("heartbeat") and publisher.wants("topology")
    logging.getLogger("mongo_sansio.serverSelection").setLevel(logging.INFO)
    assert publisher.enabled_for_server_selection  # "Waiting ..." is logged at info


# -- logging ------------------------------------------------------------------------------------


def test_messages_reach_the_component_logger_with_their_structure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    publisher = Publisher([], environ=NO_ENV)
    with caplog.at_level(logging.DEBUG, logger="mongo_sansio.command"):
        publisher.publish(command_started())
    (record,) = [r for r in caplog.records if r.name == "mongo_sansio.command"]
    assert record.levelno == logging.DEBUG
    assert isinstance(record.msg, LogMessage)
    assert record.mongo_log is record.msg  # type: ignore[attr-defined]
    assert record.msg.data["message"] == "Command started"
    assert json.loads(record.getMessage())["commandName"] == "ping"


def test_waiting_for_a_server_is_logged_at_info(caplog: pytest.LogCaptureFixture) -> None:
    publisher = Publisher([], environ=NO_ENV)
    with caplog.at_level(logging.INFO, logger="mongo_sansio.serverSelection"):
        publisher.publish(selection_waiting())
    (record,) = [r for r in caplog.records if r.name == "mongo_sansio.serverSelection"]
    assert record.levelno == logging.INFO


def test_sink_receives_messages_at_or_above_the_component_level() -> None:
    got: list[LogMessage] = []
    settings = LogSettings(
        levels={"command": logging.DEBUG, "serverSelection": logging.INFO}, sink=got.append
    )
    publisher = Publisher([], log_settings=settings, topology_id="t1")
    assert publisher.enabled_for_commands and not publisher.enabled_for_cmap
    publisher.publish(command_started())
    publisher.publish(pe.PoolReady(address=POOL))  # connection: not configured
    publisher.publish(selection_waiting())
    publisher.publish(
        sel.ServerSelectionStarted(
            selector="s", operation="find", topology_description="t"
        )  # debug < info: filtered
    )
    assert [msg.message for msg in got] == [
        "Command started",
        "Waiting for suitable server to become available",
    ]


def test_heartbeat_messages_get_the_publishers_topology_id() -> None:
    got: list[LogMessage] = []
    settings = LogSettings(levels={"topology": logging.DEBUG}, sink=got.append)
    Publisher([], log_settings=settings, topology_id="t1").publish(
        se.ServerHeartbeatStartedEvent(connection_id=ADDRESS)
    )
    assert got[0].data["topologyId"] == "t1"


def test_max_document_length_applies(caplog: pytest.LogCaptureFixture) -> None:
    got: list[LogMessage] = []
    settings = LogSettings(
        levels={"command": logging.DEBUG}, max_document_length=5, sink=got.append
    )
    Publisher([], log_settings=settings).publish(command_started())
    assert got[0].data["command"] == '{"pin...'


def test_a_raising_sink_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    def sink(message: LogMessage) -> None:
        raise RuntimeError("sink bug")

    settings = LogSettings(levels={"command": logging.DEBUG}, sink=sink)
    with caplog.at_level(logging.ERROR, logger="mongo_sansio.monitoring"):
        Publisher([], log_settings=settings).publish(command_started())
    assert any("sink" in r.getMessage() for r in caplog.records)


def test_log_settings_reject_unknown_components() -> None:
    with pytest.raises(ValueError, match="commands"):
        LogSettings(levels={"commands": logging.DEBUG})


# -- environment variables ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("off", None),
        ("emergency", logging.CRITICAL),
        ("alert", logging.CRITICAL),
        ("critical", logging.CRITICAL),
        ("error", logging.ERROR),
        ("warn", logging.WARNING),
        ("notice", _publish.NOTICE),
        ("INFO", logging.INFO),
        ("Debug", logging.DEBUG),
        ("trace", _publish.TRACE),
    ],
)
def test_parse_level(text: str, level: int | None) -> None:
    assert parse_level(text) == level


def test_parse_level_rejects_unknown_names() -> None:
    with pytest.raises(ValueError):
        parse_level("verbose")


def test_environment_all_and_component_precedence() -> None:
    settings = log_settings_from_environment(
        {"MONGODB_LOG_ALL": "info", "MONGODB_LOG_COMMAND": "debug", "MONGODB_LOG_CONNECTION": "off"}
    )
    assert dict(settings.levels) == {
        "command": logging.DEBUG,
        "topology": logging.INFO,
        "serverSelection": logging.INFO,
        "connection": None,
    }
    assert settings.max_document_length == 1000
    assert settings.path == "stderr"
    assert settings.problems == ()


def test_nothing_is_configured_without_variables() -> None:
    settings = log_settings_from_environment({})
    assert dict(settings.levels) == {}


def test_invalid_values_are_ignored_and_reported() -> None:
    settings = log_settings_from_environment(
        {
            "MONGODB_LOG_ALL": "loud",
            "MONGODB_LOG_TOPOLOGY": "debug",
            "MONGODB_LOG_COMMAND": "nope",
            "MONGODB_LOG_MAX_DOCUMENT_LENGTH": "-5",
        }
    )
    assert dict(settings.levels) == {"topology": logging.DEBUG}
    assert settings.max_document_length == 1000
    assert len(settings.problems) == 3


@pytest.mark.parametrize(("text", "length"), [("50", 50), (" 0 ", 0), ("abc", 1000)])
def test_max_document_length_variable(text: str, length: int) -> None:
    settings = log_settings_from_environment({"MONGODB_LOG_MAX_DOCUMENT_LENGTH": text})
    assert settings.max_document_length == length


def test_environment_logs_to_a_file_without_code_changes(tmp_path: Path) -> None:
    path = tmp_path / "driver.log"
    path.write_text("earlier line\n")
    environ = {"MONGODB_LOG_COMMAND": "debug", "MONGODB_LOG_PATH": str(path)}
    publisher = Publisher([], environ=environ)
    assert publisher.enabled_for_commands and not publisher.enabled_for_cmap
    publisher.publish(command_started())
    Publisher([], environ=environ)  # a second client adds no second handler
    publisher.publish(command_started())
    for handler in logging.getLogger("mongo_sansio.command").handlers:
        handler.flush()
    lines = path.read_text().splitlines()
    assert lines[0] == "earlier line"  # appended to
    assert len(lines) == 3
    assert all('"message": "Command started"' in line for line in lines[1:])


def test_unwritable_log_path_falls_back_to_stderr(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    environ = {"MONGODB_LOG_CONNECTION": "debug", "MONGODB_LOG_PATH": str(tmp_path / "no" / "x")}
    with caplog.at_level(logging.WARNING, logger="mongo_sansio.monitoring"):
        publisher = Publisher([], environ=environ)
    assert publisher.enabled_for_cmap
    assert any("MONGODB_LOG_PATH" in r.getMessage() for r in caplog.records)
    assert ("mongo_sansio.connection", "stderr") in _publish._INSTALLED


def test_programmatic_settings_win_over_the_environment(monkeypatch: Any) -> None:
    monkeypatch.setenv("MONGODB_LOG_COMMAND", "debug")
    logging.getLogger("mongo_sansio.command").setLevel(logging.WARNING)
    publisher = Publisher([], log_settings=LogSettings())
    assert not publisher.enabled_for_commands
    assert publisher.log_settings.levels == {}
