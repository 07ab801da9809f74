"""The library's exception hierarchy, typed by blame.

Every error the library raises derives from :class:`MongoError`.  Two branches say who is at
fault, in the manner of h11:

* :class:`LocalProtocolError` -- the caller misused a machine or passed a value the library
  cannot represent (our side's mistake).
* :class:`RemoteProtocolError` -- the peer (a server, a file, a network buffer) sent bytes that
  break the protocol.

Codec errors also derive from :class:`ValueError` or :class:`TypeError` so that code written
against other drivers, which catches those, keeps working.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from mongo_sansio._numbers import whole_number

__all__ = [
    "MongoError",
    "LocalProtocolError",
    "RemoteProtocolError",
    "ProtocolError",
    "TruncatedMessage",
    "ConfigurationError",
    "DocumentTooLarge",
    "ServerError",
    "DuplicateKeyError",
    "WriteError",
    "WriteConcernError",
    "BulkWriteError",
    "ExecutionTimeout",
    "NotPrimaryError",
    "CursorNotFound",
    "NetworkError",
    "NetworkTimeout",
    "AuthenticationError",
    "IncompatibleServerError",
    "InvalidOperation",
    "server_error_from_reply",
    "check_reply",
    "command_succeeded",
]


class MongoError(Exception):
    """Base class of every error raised by mongo-sansio.

    ``timeout`` is True when the error means a time limit expired (a network timeout, a
    server selection or wait-queue timeout, the server's MaxTimeMSExpired, an operation's
    ``timeoutMS``), as ``PyMongoError.timeout`` says in PyMongo.
    """

    timeout: ClassVar[bool] = False


class LocalProtocolError(MongoError):
    """The caller asked for something the protocol or the machine does not allow."""


class RemoteProtocolError(MongoError):
    """The peer sent data that violates the protocol."""


class ProtocolError(RemoteProtocolError):
    """Malformed wire-level data; a machine that raises it refuses further input."""


class TruncatedMessage(ProtocolError):
    """The stream ended in the middle of a message (a connection cut short, not bad bytes)."""


class ConfigurationError(LocalProtocolError, ValueError):
    """An option or setting is invalid; the message names the option."""


class DocumentTooLarge(LocalProtocolError, ValueError):
    """A document to be sent is over a size limit (maxBsonObjectSize, or too large for any
    message under maxMessageSizeBytes); ``index`` is its position in the caller's list (None
    for a command body), ``size`` and ``limit`` are in bytes."""

    def __init__(self, message: str, *, index: int | None = None, size: int = 0, limit: int = 0):
        super().__init__(message)
        self.index = index
        self.size = size
        self.limit = limit


# --- errors of running operations against a server (client issue) ---------------------------

#: Codes the server uses for a duplicate key (insert, update and the legacy index build).
DUPLICATE_KEY_CODES = frozenset({11000, 11001, 12582})


class ServerError(MongoError):
    """A server answered a command with ``ok: 0`` (or with write errors).

    ``code`` and ``code_name`` are the server's, ``errmsg`` its message, ``error_labels`` the
    labels it attached, and ``details`` the whole reply document (never holding a secret: the
    commands whose replies could, the SASL ones, raise :class:`AuthenticationError` instead).
    """

    def __init__(
        self,
        errmsg: str,
        *,
        code: int | None = None,
        code_name: str | None = None,
        error_labels: frozenset[str] | set[str] | list[str] | tuple[str, ...] = (),
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(errmsg if code is None else f"{errmsg} (code {code}{_name(code_name)})")
        self.errmsg = errmsg
        self.code = code
        self.code_name = code_name
        self.error_labels = frozenset(error_labels)
        self.details: Mapping[str, Any] = details if details is not None else {}

    def has_error_label(self, label: str) -> bool:
        return label in self.error_labels


def _name(code_name: str | None) -> str:
    return f", {code_name}" if code_name else ""


class DuplicateKeyError(ServerError):
    """A write was refused because it would duplicate a unique index key (11000 and kin)."""


class WriteError(ServerError):
    """One document of a write failed (an entry of the reply's ``writeErrors``)."""


class BulkWriteError(ServerError):
    """A write of many documents met write errors or write concern errors.

    ``details`` is ``{writeErrors, writeConcernErrors, nInserted, nUpserted, nMatched,
    nModified, nRemoved, upserted}``; each write error's ``index`` is the position in the
    caller's list.  Documents after the first error of an ordered write were not sent.
    """

    def __init__(self, details: Mapping[str, Any], *, error_labels: Sequence[str] = ()) -> None:
        super().__init__(
            "batch op errors occurred",
            code=65,  # the code other drivers give a BulkWriteError
            error_labels=tuple(error_labels),
            details=details,
        )

    @property
    def write_errors(self) -> list[Mapping[str, Any]]:
        errors = self.details.get("writeErrors", [])
        return list(errors) if isinstance(errors, list) else []

    @property
    def write_concern_errors(self) -> list[Mapping[str, Any]]:
        errors = self.details.get("writeConcernErrors", [])
        return list(errors) if isinstance(errors, list) else []


class WriteConcernError(ServerError):
    """The write was applied but its write concern was not satisfied (``writeConcernError``)."""


class ExecutionTimeout(ServerError):
    """The server stopped the operation at its time limit (code 50, MaxTimeMSExpired)."""

    timeout = True


class NotPrimaryError(ServerError):
    """The server is not (or is no longer) a writable primary, or is recovering: SDAM's
    "state change" errors.  The server it came from is marked unknown."""


class CursorNotFound(ServerError):
    """The server no longer knows the cursor a getMore named (code 43)."""


class NetworkError(MongoError):
    """The connection failed: refused, reset, closed mid-reply, or a TLS failure."""


class NetworkTimeout(NetworkError):
    """A connect or socket timeout expired."""

    timeout = True


class AuthenticationError(MongoError):
    """Authentication failed; ``code`` is the server's code when the server refused us (18,
    AuthenticationFailed) and None when we refused the server (a bad proof, a nonce that does
    not extend ours, too few iterations).  Messages never contain a password."""

    def __init__(self, message: str, *, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class IncompatibleServerError(MongoError):
    """The server's wire version range does not overlap ours; the message names both ranges."""


class InvalidOperation(LocalProtocolError):
    """The call is not allowed in the object's current state (e.g. iterating a closed cursor)."""


def server_error_from_reply(reply: Mapping[str, Any]) -> ServerError:
    """The typed :class:`ServerError` for an ``ok: 0`` reply (which subclass follows the code)."""
    code = whole_number(reply.get("code"))
    code_name = reply.get("codeName")
    errmsg = reply.get("errmsg")
    labels = reply.get("errorLabels")
    kwargs: dict[str, Any] = {
        "code": code,
        "code_name": code_name if isinstance(code_name, str) else None,
        "error_labels": [x for x in labels if isinstance(x, str)]
        if isinstance(labels, list | tuple)
        else (),
        "details": reply,
    }
    message = errmsg if isinstance(errmsg, str) else "command failed"
    return _error_class(code, message)(message, **kwargs)


def _error_class(code: int | None, errmsg: str) -> type[ServerError]:
    if code in DUPLICATE_KEY_CODES:
        return DuplicateKeyError
    if code == 50:
        return ExecutionTimeout
    if code == 43:
        return CursorNotFound
    # SDAM's state-change families, by code or, without one, by text.  Imported here because
    # mongo_sansio.sdam imports this module.
    from mongo_sansio.sdam.errors import is_state_change_error

    if is_state_change_error(code, errmsg):
        return NotPrimaryError
    return ServerError


def command_succeeded(reply: Mapping[str, Any]) -> bool:
    """Whether a reply document's ``ok`` says success: ``true``, or a number equal to 1."""
    ok = reply.get("ok")
    return ok is True or (isinstance(ok, int | float) and not isinstance(ok, bool) and ok == 1)


def check_reply(reply: Mapping[str, Any]) -> Mapping[str, Any]:
    """Return ``reply`` when its ``ok`` is true; raise the typed ServerError otherwise."""
    if not isinstance(reply, Mapping):
        raise RemoteProtocolError(f"a command reply must be a document, got {type(reply).__name__}")
    if command_succeeded(reply):
        return reply
    raise server_error_from_reply(reply)
