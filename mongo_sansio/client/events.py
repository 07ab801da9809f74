"""Command monitoring events, and the listener protocol adapters publish them to.

Adapters publish one :class:`CommandStartedEvent` per command an operation flow runs
(``RunCommand``; the handshake's and authentication's commands are not published), then a
:class:`CommandSucceededEvent` or a :class:`CommandFailedEvent`.  ``connection_id`` is the
server's address as flows see it; durations are seconds.  The commands and replies of
security-sensitive commands are replaced by empty documents (command-logging-and-monitoring.md,
"Security"): :func:`redacted` decides.  :class:`CommandMonitor` builds the events, so every
adapter shows the same thing: OP_MSG document sequences as arrays in the command, and a reply
with ``ok: 0`` as a failure.

The identifiers the monitoring and logging specs add are optional fields, None when unknown:
``operation_id`` (shared by the commands of one operation), ``driver_connection_id`` (the CMAP
connection id), ``server_connection_id`` (the server's ``connectionId`` from the handshake) and
``service_id`` (load-balanced mode).  ``redacted`` says the command was security-sensitive, so
its command and reply were replaced by empty documents (and loggers redact a server failure).

Inputs: the command, its reply or failure, the server, the durations the adapter measured.
Outputs: frozen event records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

import attrs

from mongo_sansio.bson import ObjectId, decode
from mongo_sansio.errors import command_succeeded, server_error_from_reply

__all__ = [
    "CommandStartedEvent",
    "CommandSucceededEvent",
    "CommandFailedEvent",
    "CommandListener",
    "SENSITIVE_COMMANDS",
    "redacted",
    "CommandMonitor",
]

SENSITIVE_COMMANDS: Final = frozenset(
    {
        "authenticate",
        "saslstart",
        "saslcontinue",
        "getnonce",
        "createuser",
        "updateuser",
        "copydbgetnonce",
        "copydbsaslstart",
        "copydb",
    }
)


def redacted(command_name: str, command: Mapping[str, Any]) -> bool:
    """Whether the command (and its reply) must not be shown: a sensitive command, or a hello
    carrying ``speculativeAuthenticate``."""
    name = command_name.lower()
    if name in SENSITIVE_COMMANDS:
        return True
    return name in ("hello", "ismaster") and "speculativeAuthenticate" in command


@attrs.frozen(kw_only=True)
class CommandStartedEvent:
    command_name: str
    database_name: str
    command: Mapping[str, Any]
    request_id: int | None
    connection_id: tuple[str, int]
    operation_id: int | None = None
    driver_connection_id: int | None = None
    server_connection_id: int | None = None
    service_id: ObjectId | None = None
    redacted: bool = False


@attrs.frozen(kw_only=True)
class CommandSucceededEvent:
    command_name: str
    database_name: str
    reply: Mapping[str, Any]
    duration: float
    request_id: int | None
    connection_id: tuple[str, int]
    operation_id: int | None = None
    driver_connection_id: int | None = None
    server_connection_id: int | None = None
    service_id: ObjectId | None = None
    redacted: bool = False


@attrs.frozen(kw_only=True)
class CommandFailedEvent:
    command_name: str
    database_name: str
    failure: BaseException = attrs.field(eq=False)
    duration: float
    request_id: int | None
    connection_id: tuple[str, int]
    operation_id: int | None = None
    driver_connection_id: int | None = None
    server_connection_id: int | None = None
    service_id: ObjectId | None = None
    redacted: bool = False


class CommandListener(Protocol):
    """What a command listener implements (each method may do nothing)."""

    def started(self, event: CommandStartedEvent) -> None: ...

    def succeeded(self, event: CommandSucceededEvent) -> None: ...

    def failed(self, event: CommandFailedEvent) -> None: ...


def _shown(item: Any) -> Any:
    """A document of an OP_MSG sequence as a listener sees it (flows may pass it encoded)."""
    if isinstance(item, bytes | bytearray | memoryview):
        return decode(bytes(item))
    return item


@attrs.frozen
class CommandMonitor:
    """The events of one command: built from what was sent, then from how it ended.

    ``CommandMonitor(db, body, sequences, request_id, connection_id)`` (plus the optional
    keyword identifiers the events carry, see the module docstring); :meth:`started` once
    the bytes are sent, then :meth:`finished` with the reply (``ok: 0`` gives a
    CommandFailedEvent carrying the typed ServerError) or :meth:`failed` with the error.
    """

    db: str
    body: Mapping[str, Any]
    sequences: Mapping[str, Sequence[Any]] | None
    request_id: int | None
    connection_id: tuple[str, int]
    operation_id: int | None = attrs.field(default=None, kw_only=True)
    driver_connection_id: int | None = attrs.field(default=None, kw_only=True)
    server_connection_id: int | None = attrs.field(default=None, kw_only=True)
    service_id: ObjectId | None = attrs.field(default=None, kw_only=True)

    def _ids(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "connection_id": self.connection_id,
            "operation_id": self.operation_id,
            "driver_connection_id": self.driver_connection_id,
            "server_connection_id": self.server_connection_id,
            "service_id": self.service_id,
            "redacted": self.hidden,
        }

    @property
    def name(self) -> str:
        return next(iter(self.body), "")

    @property
    def hidden(self) -> bool:
        return redacted(self.name, self.body)

    def started(self) -> CommandStartedEvent:
        command: dict[str, Any] = {}
        if not self.hidden:
            shown = {key: [_shown(d) for d in docs] for key, docs in (self.sequences or {}).items()}
            command = {**self.body, **shown, "$db": self.db}
        return CommandStartedEvent(
            command_name=self.name,
            database_name=self.db,
            command=command,
            **self._ids(),
        )

    def finished(
        self, reply: Mapping[str, Any], duration: float
    ) -> CommandSucceededEvent | CommandFailedEvent:
        if not command_succeeded(reply):
            # A command answered with ok: 0 failed, as far as monitoring is concerned.
            return self.failed(server_error_from_reply(reply), duration)
        return CommandSucceededEvent(
            command_name=self.name,
            database_name=self.db,
            reply={} if self.hidden else reply,
            duration=duration,
            **self._ids(),
        )

    def failed(self, failure: BaseException, duration: float) -> CommandFailedEvent:
        return CommandFailedEvent(
            command_name=self.name,
            database_name=self.db,
            failure=failure,
            duration=duration,
            **self._ids(),
        )
