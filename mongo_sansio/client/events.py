"""Command monitoring events, and the listener protocol adapters publish them to.

Adapters publish one :class:`CommandStartedEvent` per command an operation flow runs
(``RunCommand``; the handshake's and authentication's commands are not published), then a
:class:`CommandSucceededEvent` or a :class:`CommandFailedEvent`.  ``connection_id`` is the
server's address as flows see it; durations are seconds.  The commands and replies of
security-sensitive commands are replaced by empty documents (command-logging-and-monitoring.md,
"Security"): :func:`redacted` decides.

Inputs: the command, its reply or failure, the server, the durations the adapter measured.
Outputs: frozen event records.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Protocol

import attrs

__all__ = [
    "CommandStartedEvent",
    "CommandSucceededEvent",
    "CommandFailedEvent",
    "CommandListener",
    "SENSITIVE_COMMANDS",
    "redacted",
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


@attrs.frozen(kw_only=True)
class CommandSucceededEvent:
    command_name: str
    database_name: str
    reply: Mapping[str, Any]
    duration: float
    request_id: int | None
    connection_id: tuple[str, int]


@attrs.frozen(kw_only=True)
class CommandFailedEvent:
    command_name: str
    database_name: str
    failure: BaseException = attrs.field(eq=False)
    duration: float
    request_id: int | None
    connection_id: tuple[str, int]


class CommandListener(Protocol):
    """What a command listener implements (each method may do nothing)."""

    def started(self, event: CommandStartedEvent) -> None: ...

    def succeeded(self, event: CommandSucceededEvent) -> None: ...

    def failed(self, event: CommandFailedEvent) -> None: ...
