"""Delivery of the core's monitoring events to listeners and to logs, for every runtime.

A :class:`Publisher` is built once per client from its ``event_listeners`` (PyMongo's listener
objects, validated: anything that is not a subclass of one of the listener bases of
:mod:`mongo_sansio.monitoring` or of ``pymongo.monitoring`` is a TypeError naming it) and its :class:`LogSettings`.
:meth:`Publisher.publish` takes one core event (``mongo_sansio.client.events``,
``.cmap.events``, ``.sdam.events``, ``.selection.events``), converts it once, calls the matching
method of every listener whose base class matches (an object that subclasses several bases gets
each of their events; globally :func:`~mongo_sansio.monitoring.register`-ed listeners come
first, as in PyMongo), then logs its standardized message.  A listener that raises is reported
on the ``mongo_sansio.monitoring`` logger and never breaks the operation.
:meth:`Publisher.wants` answers, cheaply, whether anyone listens to or logs a family, so the
core need not build events nobody wants.

Logging (logging.md).  Messages go through the standard :mod:`logging` module, one logger per
spec component (:data:`LOGGER_NAMES`)::

    mongo_sansio.command          commands (debug)
    mongo_sansio.topology         SDAM: topology, server and heartbeat messages (debug)
    mongo_sansio.serverSelection  server selection (debug; "Waiting ..." at info)
    mongo_sansio.connection       connection pools (debug)

so ``logging.getLogger("mongo_sansio.command").setLevel(logging.DEBUG)`` plus a handler enables
command logging, as with PyMongo's ``pymongo.command``.  Each record's ``msg`` is the
:class:`~mongo_sansio.log_messages.LogMessage` (``component``, ``level``, ``data``: the
structured fields under the spec's names; ``str()`` gives ``data`` as JSON), and the record also
carries it as ``record.mongo_log``.  Without code changes, the spec's environment variables
work too: ``MONGODB_LOG_ALL`` / ``MONGODB_LOG_COMMAND`` / ``MONGODB_LOG_TOPOLOGY`` /
``MONGODB_LOG_SERVER_SELECTION`` / ``MONGODB_LOG_CONNECTION`` set a component's minimum level
(``off``, ``emergency``, ``alert``, ``critical``, ``error``, ``warn``, ``notice``, ``info``,
``debug``, ``trace``; a component variable wins over ``MONGODB_LOG_ALL``; an invalid value is
ignored), which sets that logger's level and gives it one handler writing to
``MONGODB_LOG_PATH`` (``stdout``, ``stderr``, or a file appended to; stderr by default or when
the file cannot be opened); ``MONGODB_LOG_MAX_DOCUMENT_LENGTH`` sets the truncation length
(default 1000 characters).  Settings passed as ``log_settings=`` take precedence over the
environment (which is then not read): a program that prefers the environment's values builds
its settings with :func:`log_settings_from_environment` and changes what it wants.  A
``sink`` in the settings also receives every message at or above its component's level,
without going through :mod:`logging` (a test runner's per-client capture).

This is the only place that reads ``MONGODB_LOG_*``; the core gets the values as arguments.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import attrs

from mongo_sansio.client import events as command_events
from mongo_sansio.cmap import events as cmap_events
from mongo_sansio.log_messages import (
    COMMAND,
    COMPONENTS,
    CONNECTION,
    DEFAULT_MAX_DOCUMENT_LENGTH,
    SERVER_SELECTION,
    TOPOLOGY,
    LogMessage,
    log_message,
)
from mongo_sansio.monitoring import (
    CommandListener,
    ConnectionPoolListener,
    ServerHeartbeatListener,
    ServerListener,
    TopologyListener,
    listener_method,
    registered_listeners,
    to_public,
    validate_listeners,
)
from mongo_sansio.sdam import events as sdam_events
from mongo_sansio.selection import events as selection_events

from ._api.pymongo_objects import pymongo_listener_families

__all__ = [
    "LOGGER_NAMES",
    "MONITORING_LOGGER",
    "FAMILIES",
    "LogSettings",
    "Publisher",
    "family_of",
    "log_settings_from_environment",
    "parse_level",
]

LOGGER_NAMES: Final = {
    COMMAND: "mongo_sansio.command",
    TOPOLOGY: "mongo_sansio.topology",
    SERVER_SELECTION: "mongo_sansio.serverSelection",
    CONNECTION: "mongo_sansio.connection",
}
MONITORING_LOGGER: Final = "mongo_sansio.monitoring"
"""Where a listener's exception (or a bad logging variable) is reported."""

# Families of events: who can receive them, and which log component writes them.
FAMILIES: Final = ("command", "server", "heartbeat", "topology", "connection", "serverSelection")
_FAMILY_LISTENER: Final[Mapping[str, type | None]] = {
    "command": CommandListener,
    "server": ServerListener,
    "heartbeat": ServerHeartbeatListener,
    "topology": TopologyListener,
    "connection": ConnectionPoolListener,
    "serverSelection": None,
}
_FAMILY_COMPONENT: Final = {
    "command": COMMAND,
    "server": TOPOLOGY,
    "heartbeat": TOPOLOGY,
    "topology": TOPOLOGY,
    "connection": CONNECTION,
    "serverSelection": SERVER_SELECTION,
}
# The most severe level each component's messages use: below it, nothing of it is logged.
_COMPONENT_TOP_LEVEL: Final = {
    COMMAND: logging.DEBUG,
    TOPOLOGY: logging.DEBUG,
    SERVER_SELECTION: logging.INFO,
    CONNECTION: logging.DEBUG,
}
_MESSAGE_LEVELS: Final = {"debug": logging.DEBUG, "info": logging.INFO}

NOTICE: Final = 25  # between INFO and WARNING: logging has no "notice"
TRACE: Final = 5  # below DEBUG: logging has no "trace"
_SPEC_LEVELS: Final[Mapping[str, int | None]] = {
    "off": None,
    "emergency": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "critical": logging.CRITICAL,
    "error": logging.ERROR,
    "warn": logging.WARNING,
    "notice": NOTICE,
    "info": logging.INFO,
    "debug": logging.DEBUG,
    "trace": TRACE,
}
_ENV_COMPONENTS: Final = {
    COMMAND: "MONGODB_LOG_COMMAND",
    TOPOLOGY: "MONGODB_LOG_TOPOLOGY",
    SERVER_SELECTION: "MONGODB_LOG_SERVER_SELECTION",
    CONNECTION: "MONGODB_LOG_CONNECTION",
}


def parse_level(text: str) -> int | None:
    """A spec level name (case-insensitive) as a :mod:`logging` threshold; None for ``off``.
    ValueError for an unknown name."""
    try:
        return _SPEC_LEVELS[text.strip().lower()]
    except KeyError:
        raise ValueError(f"unknown log level {text!r}") from None


@attrs.frozen(kw_only=True)
class LogSettings:
    """How this client logs.  ``levels`` maps a component (``"command"``, ``"topology"``,
    ``"serverSelection"``, ``"connection"``) to a :mod:`logging` threshold (None: off); a
    component left out is not configured here (its logger's own level decides).  ``sink``
    receives each message at or above its component's threshold.  ``path`` is ``"stdout"``,
    ``"stderr"`` or a file: the configured components' loggers then get these levels and one
    handler writing there (None: :mod:`logging` stays as the application set it up).  ``problems`` lists the
    invalid values that were ignored."""

    levels: Mapping[str, int | None] = attrs.field(factory=dict)
    max_document_length: int = DEFAULT_MAX_DOCUMENT_LENGTH
    path: str | None = None
    sink: Callable[[LogMessage], None] | None = attrs.field(default=None, eq=False)
    problems: tuple[str, ...] = ()

    def __attrs_post_init__(self) -> None:
        unknown = set(self.levels) - set(COMPONENTS)
        if unknown:
            raise ValueError(f"unknown log components {sorted(unknown)}; expected {COMPONENTS}")
        if isinstance(self.max_document_length, bool) or not isinstance(
            self.max_document_length, int
        ):
            raise TypeError("max_document_length must be an integer")


def log_settings_from_environment(environ: Mapping[str, str]) -> LogSettings:
    """The settings the ``MONGODB_LOG_*`` variables of ``environ`` describe (logging.md's
    fallback configuration); invalid values are ignored and listed in ``problems``."""
    problems: list[str] = []

    def level_of(name: str) -> tuple[bool, int | None]:
        text = environ.get(name)
        if text is None:
            return False, None
        try:
            return True, parse_level(text)
        except ValueError:
            problems.append(f"{name}={text!r} is not a log level; ignored")
            return False, None

    has_all, all_level = level_of("MONGODB_LOG_ALL")
    levels: dict[str, int | None] = {}
    for component, name in _ENV_COMPONENTS.items():
        has, level = level_of(name)
        if has:
            levels[component] = level
        elif has_all:
            levels[component] = all_level
    max_length = DEFAULT_MAX_DOCUMENT_LENGTH
    text = environ.get("MONGODB_LOG_MAX_DOCUMENT_LENGTH")
    if text is not None:
        try:
            max_length = int(text.strip())
            if max_length < 0:
                raise ValueError
        except ValueError:
            problems.append(f"MONGODB_LOG_MAX_DOCUMENT_LENGTH={text!r} is not a length; ignored")
            max_length = DEFAULT_MAX_DOCUMENT_LENGTH
    path = environ.get("MONGODB_LOG_PATH") or "stderr"
    return LogSettings(
        levels=levels, max_document_length=max_length, path=path, problems=tuple(problems)
    )


# Handlers installed for the environment's configuration, one per (logger, destination).
_INSTALLED: dict[tuple[str, str], logging.Handler] = {}
_INSTALL_LOCK = threading.Lock()


def _handler_for(path: str) -> tuple[str, logging.Handler]:
    key = path.strip().lower()
    if key == "stdout":
        return "stdout", logging.StreamHandler(sys.stdout)
    if key == "stderr":
        return "stderr", logging.StreamHandler(sys.stderr)
    try:
        return path, logging.FileHandler(path, mode="a", encoding="utf-8")
    except OSError as exc:
        logging.getLogger(MONITORING_LOGGER).warning(
            "MONGODB_LOG_PATH=%r cannot be written (%s); logging to stderr", path, exc
        )
        return "stderr", logging.StreamHandler(sys.stderr)


def _install(settings: LogSettings) -> None:
    """Give each configured component's logger its level and one handler (idempotent)."""
    for problem in settings.problems:
        logging.getLogger(MONITORING_LOGGER).warning("%s", problem)
    if settings.path is None:
        return
    with _INSTALL_LOCK:
        _install_locked(settings, settings.path)


def _install_locked(settings: LogSettings, path: str) -> None:
    for component, level in settings.levels.items():
        logger = logging.getLogger(LOGGER_NAMES[component])
        if level is None:
            logger.setLevel(logging.CRITICAL + 1)
            continue
        logger.setLevel(level)
        if any(name == logger.name for name, _ in _INSTALLED):
            continue
        destination, handler = _handler_for(path)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
        _INSTALLED[(logger.name, destination)] = handler


def family_of(event: object) -> str:
    """The family of a core event (one of :data:`FAMILIES`); TypeError for anything else."""
    if isinstance(
        event,
        command_events.CommandStartedEvent
        | command_events.CommandSucceededEvent
        | command_events.CommandFailedEvent,
    ):
        return "command"
    if isinstance(event, cmap_events.PoolEvent):
        return "connection"
    se = sdam_events
    if isinstance(
        event,
        se.ServerHeartbeatStartedEvent
        | se.ServerHeartbeatSucceededEvent
        | se.ServerHeartbeatFailedEvent,
    ):
        return "heartbeat"
    if isinstance(
        event, se.ServerOpeningEvent | se.ServerClosedEvent | se.ServerDescriptionChangedEvent
    ):
        return "server"
    if isinstance(
        event,
        se.TopologyOpeningEvent | se.TopologyClosedEvent | se.TopologyDescriptionChangedEvent,
    ):
        return "topology"
    sel = selection_events
    if isinstance(
        event,
        sel.ServerSelectionStarted
        | sel.ServerSelectionSucceeded
        | sel.ServerSelectionFailed
        | sel.ServerSelectionWaiting,
    ):
        return "serverSelection"
    raise TypeError(f"not a core monitoring event: {type(event).__name__}")


class Publisher:
    """Listeners and loggers of one client.

    ``Publisher(listeners, log_settings=None, topology_id=None, environ=None)``: ``listeners``
    is the ``event_listeners`` option (validated); without ``log_settings`` the settings come
    from ``environ`` (default: ``os.environ``).  ``topology_id`` fills heartbeat log messages
    whose events lack one.
    """

    def __init__(
        self,
        listeners: Sequence[object] = (),
        *,
        log_settings: LogSettings | None = None,
        topology_id: object = None,
        environ: Mapping[str, str] | None = None,
        option: str = "event_listeners",
    ) -> None:
        # listeners subclassing PyMongo's listener classes (pymongo.monitoring) get their
        # families' events too; everything else must be one of ours
        theirs: dict[int, frozenset[str]] = {}
        if isinstance(listeners, Sequence) and not isinstance(listeners, str | bytes):
            for listener in listeners:
                families = pymongo_listener_families(listener)
                if families:
                    theirs[id(listener)] = families
        validate_listeners(
            [x for x in listeners if id(x) not in theirs] if theirs else listeners, option
        )
        checked = registered_listeners() + tuple(listeners)
        self.listeners = checked

        def receives(listener: object, family: str, base: type | None) -> bool:
            if family in theirs.get(id(listener), ()):
                return True
            return base is not None and isinstance(listener, base)

        self._by_family: dict[str, tuple[object, ...]] = {
            family: tuple(x for x in checked if receives(x, family, base))
            for family, base in _FAMILY_LISTENER.items()
        }
        if log_settings is None:
            log_settings = log_settings_from_environment(os.environ if environ is None else environ)
        _install(log_settings)
        self.log_settings = log_settings
        self.topology_id = topology_id
        self._loggers = {c: logging.getLogger(name) for c, name in LOGGER_NAMES.items()}
        self._monitoring_logger = logging.getLogger(MONITORING_LOGGER)

    # -- who wants what ----------------------------------------------------------------------

    @property
    def active(self) -> bool:
        """Whether any family is listened to or logged (else the client needs no publisher)."""
        return any(self.wants(family) for family in FAMILIES)

    def wants(self, family: str) -> bool:
        """Whether a listener or a logger would receive events of ``family`` (one of
        :data:`FAMILIES`; ValueError for another name)."""
        try:
            listeners = self._by_family[family]
        except KeyError:
            raise ValueError(
                f"unknown event family {family!r}; expected one of {FAMILIES}"
            ) from None
        return bool(listeners) or self.logs(_FAMILY_COMPONENT[family])

    def wants_event(self, event: object) -> bool:
        return self.wants(family_of(event))

    def logs(self, component: str) -> bool:
        """Whether any message of ``component`` would be written (to a logger or the sink)."""
        top = _COMPONENT_TOP_LEVEL[component]
        if self.log_settings.sink is not None and self._sink_takes(component, top):
            return True
        return self._loggers[component].isEnabledFor(top)

    def _sink_takes(self, component: str, level: int) -> bool:
        threshold = self.log_settings.levels.get(component)
        return threshold is not None and level >= threshold

    @property
    def enabled_for_commands(self) -> bool:
        return self.wants("command")

    @property
    def enabled_for_server(self) -> bool:
        return self.wants("server")

    @property
    def enabled_for_server_heartbeat(self) -> bool:
        return self.wants("heartbeat")

    @property
    def enabled_for_topology(self) -> bool:
        return self.wants("topology")

    @property
    def enabled_for_cmap(self) -> bool:
        return self.wants("connection")

    @property
    def enabled_for_server_selection(self) -> bool:
        return self.wants("serverSelection")

    # -- delivery ----------------------------------------------------------------------------

    def publish(self, event: object) -> None:
        """Deliver one core event to the listeners of its family, then log it."""
        family = family_of(event)
        listeners = self._by_family[family]
        if listeners:
            public = to_public(event)
            _, method = listener_method(public)
            for listener in listeners:
                try:
                    getattr(listener, method)(public)
                except Exception:
                    self._monitoring_logger.exception(
                        "event listener %r raised in %s(%r)", listener, method, public
                    )
        component = _FAMILY_COMPONENT[family]
        if self.logs(component):
            self._log(event, component)

    def publish_all(self, events: Sequence[object]) -> None:
        for event in events:
            self.publish(event)

    def _log(self, event: object, component: str) -> None:
        try:
            message = log_message(
                event,
                max_document_length=self.log_settings.max_document_length,
                topology_id=self.topology_id,
            )
        except Exception:
            self._monitoring_logger.exception("could not build the log message of %r", event)
            return
        if message is None:
            return
        level = _MESSAGE_LEVELS[message.level]
        sink = self.log_settings.sink
        if sink is not None and self._sink_takes(component, level):
            try:
                sink(message)
            except Exception:
                self._monitoring_logger.exception("log sink %r raised", sink)
        logger = self._loggers[component]
        if logger.isEnabledFor(level):
            logger.log(level, message, extra={"mongo_log": message})
