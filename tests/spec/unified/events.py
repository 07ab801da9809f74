"""What one client entity observes: monitoring events and log messages.

Inputs: events published by the client under test to a listener built from the driver's
listener base classes (command, heartbeat, server, topology and pool listeners), and log
records of the driver's loggers.  Outputs: per-client lists the runner asserts on, with the
format's filters applied (observeEvents, ignoreCommandMonitoringEvents, configureFailPoint,
sensitive commands), a checked-out connection count, stored event documents
(storeEventsAsEntities), and :func:`event_matches` -- does an observed event satisfy an
``expectedEvent``?
"""

from __future__ import annotations

import datetime
import enum
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .matching import Matcher, UnsupportedInTest

if TYPE_CHECKING:
    from .driver import Driver

__all__ = [
    "CATEGORIES",
    "EventLog",
    "LogCapture",
    "event_matches",
    "make_listener",
    "unified_name",
]

COMMAND_EVENTS = ("commandStartedEvent", "commandSucceededEvent", "commandFailedEvent")
CMAP_EVENTS = (
    "poolCreatedEvent",
    "poolReadyEvent",
    "poolClearedEvent",
    "poolClosedEvent",
    "connectionCreatedEvent",
    "connectionReadyEvent",
    "connectionClosedEvent",
    "connectionCheckOutStartedEvent",
    "connectionCheckOutFailedEvent",
    "connectionCheckedOutEvent",
    "connectionCheckedInEvent",
)
SDAM_EVENTS = (
    "serverDescriptionChangedEvent",
    "serverHeartbeatStartedEvent",
    "serverHeartbeatSucceededEvent",
    "serverHeartbeatFailedEvent",
    "topologyDescriptionChangedEvent",
    "topologyOpeningEvent",
    "topologyClosedEvent",
    "serverOpeningEvent",
    "serverClosedEvent",
)
CATEGORIES: dict[str, tuple[str, ...]] = {
    "command": COMMAND_EVENTS,
    "cmap": CMAP_EVENTS,
    "sdam": SDAM_EVENTS,
}
#: class names that differ from the format's event names
RENAMED = {"TopologyOpenedEvent": "topologyOpeningEvent"}
SENSITIVE_COMMANDS = frozenset(
    {"authenticate", "saslstart", "saslcontinue", "getnonce", "createuser", "updateuser",
     "copydbgetnonce", "copydbsaslstart", "copydb"}
)
HELLO_COMMANDS = frozenset({"hello", "ismaster"})
LISTENER_METHODS = (
    "started", "succeeded", "failed", "opened", "description_changed", "closed",
    "pool_created", "pool_ready", "pool_cleared", "pool_closed", "connection_created",
    "connection_ready", "connection_closed", "connection_check_out_started",
    "connection_check_out_failed", "connection_checked_out", "connection_checked_in",
)


def unified_name(event: Any) -> str:
    """The format's name of an event object (``commandStartedEvent``, ``poolClearedEvent``...)."""
    cls = type(event).__name__
    if cls in RENAMED:
        return RENAMED[cls]
    return cls[:1].lower() + cls[1:]


def make_listener(driver: Driver, sink: Callable[[Any], None]) -> Any:
    """One object subclassing every listener base class of ``driver``; every method hands the
    event to ``sink``."""

    def method(_self: Any, event: Any) -> None:
        sink(event)

    namespace = dict.fromkeys(LISTENER_METHODS, method)
    cls = type("UnifiedRecorder", driver.listener_bases(), namespace)
    return cls()


def type_name(description: Any, kind: str) -> Any:
    """A server or topology description's type as the format names it (``RSPrimary``,
    ``ReplicaSetWithPrimary``...), from PyMongo's ``*_type_name`` or our enum's value."""
    named = getattr(description, f"{kind}_type_name", None)
    if isinstance(named, str):
        return named
    value = getattr(description, f"{kind}_type", None)
    return getattr(value, "value", value)


def _has_service_id(event: Any) -> bool:
    value = getattr(event, "service_id", None)
    if value is None:
        return False
    raw = getattr(value, "binary", None)
    return raw is None or any(raw)


def _has_server_connection_id(event: Any) -> bool:
    value = getattr(event, "server_connection_id", None)
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def check_event(expected: Mapping[str, Any], event: Any, matcher: Matcher, where: str) -> None:
    """Assert ``event`` satisfies one ``expectedEvent`` (``{name: {field: value}}``)."""
    ((name, fields),) = expected.items()
    actual = unified_name(event)
    assert actual == name, f"{where}: expected {name}, got {actual}"
    for key, value in (fields or {}).items():
        here = f"{where} {name}.{key}"
        if key in ("command", "reply"):
            matcher.match(value, getattr(event, key), here, root=True)
        elif key in ("commandName", "databaseName"):
            attr = "command_name" if key == "commandName" else "database_name"
            assert getattr(event, attr) == value, f"{here}: expected {value!r}, got {getattr(event, attr)!r}"
        elif key == "hasServiceId":
            assert _has_service_id(event) == value, f"{here}: service_id {getattr(event, 'service_id', None)!r}"
        elif key == "hasServerConnectionId":
            got = getattr(event, "server_connection_id", None)
            assert _has_server_connection_id(event) == value, f"{here}: server_connection_id {got!r}"
        elif key == "interruptInUseConnections":
            got = getattr(event, "interrupt_connections", getattr(event, "interrupt_in_use_connections", None))
            assert got == value, f"{here}: expected {value!r}, got {got!r}"
        elif key in ("reason", "awaited"):
            got = getattr(event, key, None)
            got = getattr(got, "value", got)
            assert got == value, f"{here}: expected {value!r}, got {got!r}"
        elif key in ("previousDescription", "newDescription"):
            description = getattr(event, "previous_description" if key[0] == "p" else "new_description")
            kind = "topology" if name.startswith("topology") else "server"
            for field, want in value.items():
                if field != "type":
                    raise UnsupportedInTest(f"{name}.{key}.{field} is not an assertion this runner knows")
                got = type_name(description, kind)
                assert got == want, f"{here}.type: expected {want!r}, got {got!r}"
        else:
            raise UnsupportedInTest(f"expected event field {name}.{key} is not supported by this runner")


def event_matches(expected: Mapping[str, Any], event: Any, matcher: Matcher) -> bool:
    try:
        check_event(expected, event, matcher, "event")
    except AssertionError:
        return False
    return True


def describe(event: Any) -> str:
    name = unified_name(event)
    command = getattr(event, "command_name", None)
    if command:
        return f"{name}({command})"
    for kind, attr in (("server", "new_description"), ("topology", "new_description")):
        if name.startswith(kind) and hasattr(event, attr):
            return f"{name}({type_name(getattr(event, attr), kind)})"
    return name


def _event_document(event: Any) -> dict[str, Any]:
    """An event as a document for storeEventsAsEntities (its documented properties)."""
    cls = type(event).__name__
    document: dict[str, Any] = {"name": RENAMED.get(cls, cls), "observedAt": time.time()}
    for attr, key in (
        ("command_name", "commandName"), ("database_name", "databaseName"),
        ("request_id", "requestId"), ("operation_id", "operationId"),
        ("connection_id", "connectionId"), ("address", "address"), ("reason", "reason"),
        ("duration_micros", "duration"),
    ):
        if hasattr(event, attr):
            value = getattr(event, attr)
            document[key] = value if isinstance(value, (int, float, str)) else str(value)
    return document


class EventLog:
    """The events of one client entity (thread-safe; waiters wake on every new event)."""

    def __init__(
        self,
        observe: Iterable[str] = (),
        ignore_commands: Iterable[str] = (),
        observe_sensitive: bool = False,
        store: Sequence[tuple[list[dict[str, Any]], frozenset[str]]] = (),
    ) -> None:
        self.observe = frozenset(observe)
        self.ignore_commands = frozenset(ignore_commands) | {"configureFailPoint"}
        self.observe_sensitive = observe_sensitive
        self.store = store
        self.observed: list[Any] = []
        self.checked_out = 0
        self.enabled = True
        self._sensitive_requests: set[Any] = set()
        self._condition = threading.Condition()

    def _sensitive(self, name: str, event: Any) -> bool:
        command = getattr(event, "command_name", "") or ""
        key = (getattr(event, "request_id", None), str(getattr(event, "connection_id", None)))
        lowered = command.lower()
        if lowered in SENSITIVE_COMMANDS:
            return True
        if lowered not in HELLO_COMMANDS:
            return False
        if name == "commandStartedEvent":
            body = getattr(event, "command", {}) or {}
            if not body or "speculativeAuthenticate" in body:
                self._sensitive_requests.add(key)
                return True
            return False
        if name == "commandSucceededEvent" and not (getattr(event, "reply", None) or {}):
            return True
        return key in self._sensitive_requests

    def __call__(self, event: Any) -> None:
        name = unified_name(event)
        with self._condition:
            if name == "connectionCheckedOutEvent":
                self.checked_out += 1
            elif name == "connectionCheckedInEvent":
                self.checked_out -= 1
            stored_name = type(event).__name__
            for target, names in self.store:
                if stored_name in names:
                    target.append(_event_document(event))
            if not self.enabled or name not in self.observe:
                return
            if name in COMMAND_EVENTS:
                if getattr(event, "command_name", None) in self.ignore_commands:
                    return
                if not self.observe_sensitive and self._sensitive(name, event):
                    return
            self.observed.append(event)
            self._condition.notify_all()

    def events(self, category: str | None = None) -> list[Any]:
        with self._condition:
            events = list(self.observed)
        if category is None:
            return events
        names = CATEGORIES[category]
        return [e for e in events if unified_name(e) in names]

    def count(self, expected: Mapping[str, Any], matcher: Matcher) -> int:
        return sum(1 for e in self.events() if event_matches(expected, e, matcher))

    def wait_for(self, expected: Mapping[str, Any], count: int, matcher: Matcher, timeout: float) -> int:
        """Wait until ``count`` observed events match ``expected``; the number seen."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while True:
                seen = sum(1 for e in self.observed if event_matches(expected, e, matcher))
                remaining = deadline - time.monotonic()
                if seen >= count or remaining <= 0:
                    return seen
                self._condition.wait(min(remaining, 0.25))


# -- log messages ------------------------------------------------------------------------------

#: the format's severity names and the Python levels they map to
LEVELS = {
    "emergency": logging.CRITICAL, "alert": logging.CRITICAL, "critical": logging.CRITICAL,
    "error": logging.ERROR, "warning": logging.WARNING, "notice": logging.INFO,
    "informational": logging.INFO, "info": logging.INFO, "debug": logging.DEBUG,
    "trace": logging.DEBUG, "off": logging.CRITICAL + 10,
}


def level_name(levelno: int) -> str:
    if levelno >= logging.CRITICAL:
        return "critical"
    if levelno >= logging.ERROR:
        return "error"
    if levelno >= logging.WARNING:
        return "warning"
    if levelno >= logging.INFO:
        return "info"
    return "debug"


def _plain(value: Any) -> Any:
    """A log value as a document field: enums as their values (PyMongo's messages are
    str-enums), durations as milliseconds."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime.timedelta):
        return value.total_seconds() * 1000
    return value


class LogCapture(logging.Handler):
    """Collects one client entity's log messages for the components it observes.

    Attached to the driver's component loggers (``<prefix>.command`` ...) with their level
    lowered as needed; :meth:`close` detaches and restores.  Records whose client key is not
    this client's are dropped (when the driver can tell clients apart)."""

    def __init__(self, driver: Driver, observe: Mapping[str, str]) -> None:
        super().__init__(logging.DEBUG)
        self.driver = driver
        self.components: dict[str, int] = {}
        for component, level in observe.items():
            if level.lower() not in LEVELS:
                raise UnsupportedInTest(f"log level {level!r} is not one this runner knows")
            self.components[component] = LEVELS[level.lower()]
        self.client_key: Any = None
        self.messages: list[tuple[Any, dict[str, Any]]] = []
        self._loggers: list[tuple[logging.Logger, int, bool]] = []
        self._lock_messages = threading.Lock()
        names = list(self.components)
        if "all" in self.components:
            names = ["command", "topology", "serverSelection", "connection"]
            self.components = dict.fromkeys(names, self.components["all"])
        self.client_options: dict[str, Any] = {}
        if driver.client_log_options is not None:
            self.client_options = driver.client_log_options(self.components, self.add)
            return
        for component in names:
            logger = logging.getLogger(driver.logger_name(component))
            self._loggers.append((logger, logger.level, logger.propagate))
            logger.setLevel(logging.DEBUG)
            logger.addHandler(self)

    def add(self, component: str, level: str, data: Mapping[str, Any], owner: Any = None) -> None:
        """One message of this client (from the driver's per-client sink, or a record)."""
        if LEVELS.get(level.lower(), logging.DEBUG) < self.components.get(component, logging.CRITICAL + 10):
            return
        plain = {key: _plain(value) for key, value in data.items()}
        level = "info" if level.lower() in ("informational", "notice") else level.lower()
        with self._lock_messages:
            self.messages.append((owner, {"component": component, "level": level, "data": plain}))

    def _component(self, record: logging.LogRecord) -> str:
        return record.name.rsplit(".", 1)[-1]

    def emit(self, record: logging.LogRecord) -> None:
        data = self.driver.log_data(record)
        if data is None:
            return
        owner = data.get("clientId", data.get("topologyId"))
        self.add(self._component(record), level_name(record.levelno), data, owner)

    def snapshot(self) -> list[dict[str, Any]]:
        """This client's messages so far (all of them when the driver cannot tell clients
        apart, or for messages that name no client)."""
        with self._lock_messages:
            messages = list(self.messages)
        key = self.client_key
        return [m for owner, m in messages if key is None or owner is None or str(owner) == str(key)]

    def close(self) -> None:
        for logger, level, _propagate in self._loggers:
            logger.removeHandler(self)
            logger.setLevel(level)
        self._loggers = []
        super().close()
