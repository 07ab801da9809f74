"""Classifying application errors: which ones change the topology, and how.

Theory of operation
-------------------
When an application operation fails, the adapter describes the failure as an
:class:`ApplicationError` (what kind, in which phase of the connection's life, the connection's
pool generation and wire version, the server's reply) and hands it to the topology machine.
:func:`classify_application_error` decides, purely, what the spec's ``handleError`` would do
and returns it as actions: :class:`MarkUnknown`, :class:`ClearPool`,
:class:`RequestImmediateCheck`, :class:`CancelCheck` -- or nothing for a stale or irrelevant
error.  It never raises for odd server replies: an unreadable ``code`` counts as absent.

Inputs: an ApplicationError, the topology type, the server's current description and pool
generation.  Outputs: a tuple of actions.

The rules (server-discovery-and-monitoring.md, "Error handling"; load-balancers.md):

1. Stale errors change nothing: a connection generation older than the pool's, or a
   topologyVersion not newer than the server description's.
2. A State Change Error ("not writable primary" / "node is recovering", by code, or by message
   only when there is no code) marks the server Unknown (not in load-balanced mode), clears the
   pool if the error is "node is shutting down" or came from a server older than 4.2, and asks
   for an immediate check.  A ``writeConcernError`` is checked the same way.
3. Otherwise, errors carrying the ``SystemOverloadedError`` label change nothing (backpressure:
   the connection pool gives that label to network errors and timeouts met while connecting
   or running the handshake's hello, :func:`mongo_sansio.backpressure.label_establishment_error`).
   A non-timeout network error after the handshake, or any other error while establishing a
   connection (a name that does not resolve, authentication, a hello command error), marks
   the server Unknown and clears its pool (load-balanced: clears only the service's
   connections), and cancels the monitor's check.
4. A timeout after the handshake, and any other command error, change nothing.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs

from mongo_sansio._numbers import whole_number
from mongo_sansio.bson import ObjectId
from mongo_sansio.errors import LocalProtocolError
from mongo_sansio.sdam.actions import (
    CancelCheck,
    ClearPool,
    MarkUnknown,
    RequestImmediateCheck,
)
from mongo_sansio.sdam.description import (
    Address,
    InvalidHelloReply,
    ServerDescription,
    TopologyType,
    TopologyVersion,
    compare_topology_versions,
    format_address,
    is_address,
)

__all__ = [
    "ErrorKind",
    "ErrorPhase",
    "ApplicationError",
    "ClassifiedAction",
    "RECOVERING_CODES",
    "NOT_WRITABLE_PRIMARY_CODES",
    "SHUTDOWN_CODES",
    "SYSTEM_OVERLOADED_LABEL",
    "is_recovering",
    "is_not_writable_primary",
    "is_shutdown",
    "is_state_change_error",
    "error_code_and_message",
    "classify_application_error",
]

RECOVERING_CODES: Final = frozenset({11600, 11602, 13436, 189, 91})
"""InterruptedAtShutdown, InterruptedDueToReplStateChange, NotPrimaryOrSecondary,
PrimarySteppedDown, ShutdownInProgress: "node is recovering"."""
NOT_WRITABLE_PRIMARY_CODES: Final = frozenset({10107, 13435, 10058})
"""NotWritablePrimary, NotPrimaryNoSecondaryOk, LegacyNotPrimary: "not writable primary"."""
SHUTDOWN_CODES: Final = frozenset({11600, 91})
"""InterruptedAtShutdown, ShutdownInProgress: "node is shutting down"."""
SYSTEM_OVERLOADED_LABEL: Final = "SystemOverloadedError"
_WIRE_VERSION_4_2: Final = 8

ClassifiedAction = MarkUnknown | ClearPool | RequestImmediateCheck | CancelCheck


class ErrorKind(enum.Enum):
    NETWORK = "network"
    """A network error other than a timeout (reset, refused, closed, TLS failure...)."""
    TIMEOUT = "timeout"
    """A network timeout."""
    COMMAND = "command"
    """The server replied with an error (``ok: 0``, or a ``writeConcernError``)."""


class ErrorPhase(enum.Enum):
    CONNECTING = "connecting"
    """Opening the connection or running the handshake's hello."""
    AUTHENTICATING = "authenticating"
    """After the hello, during authentication."""
    ESTABLISHED = "established"
    """On a connection whose handshake completed (the spec's "after the handshake")."""


_WHEN: Final = {
    ErrorPhase.CONNECTING: "while connecting",
    ErrorPhase.AUTHENTICATING: "while authenticating",
    ErrorPhase.ESTABLISHED: "after the handshake",
}


def _labels(value: Iterable[str] | str) -> frozenset[str]:
    return frozenset({value}) if isinstance(value, str) else frozenset(value)


@attrs.frozen(kw_only=True, unsafe_hash=False)
class ApplicationError:
    """An application operation's failure, as SDAM needs to see it.

    ``generation`` is the connection's pool generation (None: the pool's current one).
    ``max_wire_version`` is the connection's (None when its handshake had not finished).
    ``reply`` is the server's reply for command errors (``code``, ``errmsg``,
    ``topologyVersion``, ``errorLabels``, ``writeConcernError``).  ``error_labels`` are labels
    the driver attached itself.  ``service_id`` is the connection's load-balanced service.
    ``message`` describes network errors (it ends up in the server description's ``error``).
    """

    address: Address
    kind: ErrorKind
    phase: ErrorPhase = ErrorPhase.ESTABLISHED
    generation: int | None = None
    max_wire_version: int | None = None
    reply: Mapping[str, Any] | None = None
    error_labels: frozenset[str] = attrs.field(default=frozenset(), converter=_labels)
    service_id: ObjectId | None = None
    message: str = ""

    def __attrs_post_init__(self) -> None:
        if not is_address(self.address):
            raise LocalProtocolError(f"address must be a (host, port) tuple: {self.address!r}")
        if not isinstance(self.kind, ErrorKind) or not isinstance(self.phase, ErrorPhase):
            raise LocalProtocolError("kind must be an ErrorKind and phase an ErrorPhase")
        for name in ("generation", "max_wire_version"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise LocalProtocolError(f"{name} must be an int or None, got {value!r}")
        if self.reply is not None and not isinstance(self.reply, Mapping):
            raise LocalProtocolError("reply must be the server's reply document or None")

    @property
    def topology_version(self) -> TopologyVersion | None:
        """The reply's topologyVersion; None when absent or malformed."""
        if self.reply is None or self.reply.get("topologyVersion") is None:
            return None
        try:
            return TopologyVersion.from_document(self.reply["topologyVersion"])
        except InvalidHelloReply:
            return None

    @property
    def labels(self) -> frozenset[str]:
        """The driver's labels together with the reply's ``errorLabels`` (strings only)."""
        raw = self.reply.get("errorLabels") if self.reply is not None else None
        if not isinstance(raw, list | tuple):
            return self.error_labels
        return self.error_labels | {label for label in raw if isinstance(label, str)}

    def describe(self) -> str:
        """A message for ServerDescription.error."""
        where = format_address(self.address)
        if self.kind is ErrorKind.COMMAND:
            code, message = error_code_and_message(self.reply)
            text = message or "command failed"
            if code is not None:
                text += f" (code {code})"
            return f"{text} on {where}"
        what = "network timeout" if self.kind is ErrorKind.TIMEOUT else "network error"
        detail = f": {self.message}" if self.message else ""
        return f"{what} {_WHEN[self.phase]} on {where}{detail}"


def is_recovering(code: int | None, message: str) -> bool:
    """A "node is recovering" error: by code when there is one, else by message."""
    if code is not None:
        return code in RECOVERING_CODES
    return "not master or secondary" in message or "node is recovering" in message


def is_not_writable_primary(code: int | None, message: str) -> bool:
    """A "not writable primary" error: by code when there is one, else by message."""
    if code is not None:
        return code in NOT_WRITABLE_PRIMARY_CODES
    return not is_recovering(None, message) and "not master" in message


def is_shutdown(code: int | None) -> bool:
    """A "node is shutting down" error (a subset of "node is recovering")."""
    return code is not None and code in SHUTDOWN_CODES


def is_state_change_error(code: int | None, message: str) -> bool:
    return is_recovering(code, message) or is_not_writable_primary(code, message)


def error_code_and_message(reply: Mapping[str, Any] | None) -> tuple[int | None, str]:
    """The (code, message) SDAM checks: the top-level error of an ``ok: 0`` reply (``errmsg``,
    or the legacy ``$err`` / ``err``), else the ``writeConcernError``; ``(None, "")`` if none."""
    if not isinstance(reply, Mapping):
        return None, ""
    ok = reply.get("ok", 0)
    if not (isinstance(ok, int | float) and ok == 1):
        for key in ("errmsg", "$err", "err"):
            message = reply.get(key)
            if isinstance(message, str):
                break
        else:
            message = ""
        return whole_number(reply.get("code")), message
    wce = reply.get("writeConcernError")
    if isinstance(wce, Mapping):
        message = wce.get("errmsg")
        return whole_number(wce.get("code")), message if isinstance(message, str) else ""
    return None, ""


def classify_application_error(
    error: ApplicationError,
    *,
    topology_type: TopologyType,
    server: ServerDescription,
    pool_generation: int,
) -> tuple[ClassifiedAction, ...]:
    """What the topology must do about ``error`` (see the module docstring for the rules)."""
    if error.generation is not None and error.generation < pool_generation:
        return ()
    new_version = error.topology_version
    if compare_topology_versions(server.topology_version, new_version) >= 0:
        return ()
    load_balanced = topology_type is TopologyType.LOAD_BALANCED
    if load_balanced and error.phase is ErrorPhase.CONNECTING:
        return ()  # load-balancers.md: handshake errors skip SDAM error handling
    address = error.address
    if error.kind is ErrorKind.COMMAND:
        code, message = error_code_and_message(error.reply)
        if is_state_change_error(code, message):
            actions: list[ClassifiedAction] = []
            if not load_balanced:
                actions.append(
                    MarkUnknown(
                        address=address, error=error.describe(), topology_version=new_version
                    )
                )
            wire_version = error.max_wire_version
            if is_shutdown(code) or (wire_version is not None and wire_version < _WIRE_VERSION_4_2):
                if not load_balanced:
                    actions.append(ClearPool(address=address))
                elif error.service_id is not None:
                    actions.append(ClearPool(address=address, service_id=error.service_id))
            if not load_balanced:
                actions.append(RequestImmediateCheck(address=address))
            return tuple(actions)
    if SYSTEM_OVERLOADED_LABEL in error.labels:
        return ()  # backpressure (the pool labels network errors of connecting and hello)
    marks_unknown = error.phase is not ErrorPhase.ESTABLISHED or error.kind is ErrorKind.NETWORK
    if not marks_unknown:
        return ()
    if load_balanced:
        if error.service_id is None:
            return ()
        return (ClearPool(address=address, service_id=error.service_id),)
    return (
        MarkUnknown(address=address, error=error.describe()),
        ClearPool(address=address),
        CancelCheck(address=address),
    )
