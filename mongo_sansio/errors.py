"""The library's exception hierarchy, typed by blame and named as PyMongo names it.

Every error the library raises derives from :class:`MongoError` (also importable as
PyMongo's name, :class:`PyMongoError`).  Two branches say who is at fault, in the manner of h11:

* :class:`LocalProtocolError` -- the caller misused a machine or passed a value the library
  cannot represent (our side's mistake).
* :class:`RemoteProtocolError` -- the peer (a server, a file, a network buffer) sent bytes that
  break the protocol.

Alongside them runs PyMongo's tree, so that code moved over from PyMongo by changing its imports
catches what it caught before:

* :class:`OperationFailure` (also named :class:`ServerError`): the server refused a command.
  Under it :class:`WriteError` > :class:`DuplicateKeyError`, :class:`WriteConcernError` >
  :class:`WTimeoutError`, :class:`BulkWriteError`, :class:`ClientBulkWriteException`,
  :class:`ExecutionTimeout`, :class:`CursorNotFound`.
* :class:`ConnectionFailure` > :class:`AutoReconnect` > :class:`NetworkError` (ours: the
  connection broke) > :class:`NetworkTimeout`; :class:`NotPrimaryError` and
  ``ServerSelectionTimeoutError`` are AutoReconnects too, ``WaitQueueTimeoutError`` a
  ConnectionFailure.  The last two live with the machines that raise them (server selection,
  the pool) and are re-exported here.
* One deliberate difference: :class:`NotPrimaryError` is an :class:`OperationFailure` as well
  as an :class:`AutoReconnect` (PyMongo's is only the latter), because it is a server's reply
  and carries its ``code``, ``details`` and labels; ``except OperationFailure`` therefore also
  catches a not-primary error that survived the retry.

Every error carries ``error_labels`` (a frozenset) with ``has_error_label``; the retry flows
add and remove labels (``RetryableWriteError``...) on any error, network errors included.

Codec errors also derive from :class:`ValueError` or :class:`TypeError` so that code written
against other drivers, which catches those, keeps working.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from mongo_sansio._numbers import whole_number

if TYPE_CHECKING:
    from mongo_sansio.cmap.errors import WaitQueueTimeoutError
    from mongo_sansio.selection.errors import ServerSelectionTimeoutError

__all__ = [
    "MongoError",
    "PyMongoError",
    "LocalProtocolError",
    "RemoteProtocolError",
    "ProtocolError",
    "TruncatedMessage",
    "ConfigurationError",
    "InvalidURI",
    "InvalidName",
    "BSONError",
    "InvalidDocument",
    "DocumentTooLarge",
    "OperationFailure",
    "ServerError",
    "WriteError",
    "DuplicateKeyError",
    "WriteConcernError",
    "WTimeoutError",
    "BulkWriteError",
    "ClientBulkWriteException",
    "ExecutionTimeout",
    "CursorNotFound",
    "ConnectionFailure",
    "AutoReconnect",
    "NotPrimaryError",
    "NetworkError",
    "NetworkTimeout",
    "ConnectionSetupError",
    "ServerSelectionTimeoutError",
    "WaitQueueTimeoutError",
    "AuthenticationError",
    "IncompatibleServerError",
    "InvalidOperation",
    "CollectionInvalid",
    "server_error_from_reply",
    "write_concern_error_class",
    "check_reply",
    "command_succeeded",
]


class _Root(Exception):
    """The base of :class:`MongoError` and :class:`BSONError`, in place of ``Exception``: a
    class written in Python, so that its instances' layout (with a weakref slot) is that of
    PyMongo's ``PyMongoError`` and ``bson.errors.BSONError``, which the adapters put in its
    place once PyMongo is loaded (Python refuses a ``__bases__`` assignment that changes
    the layout, as replacing ``Exception`` itself would)."""


class MongoError(_Root):
    """Base class of every error raised by mongo-sansio (PyMongo's ``PyMongoError``).

    ``timeout`` is True when the error means a time limit expired (a network timeout, a
    server selection or wait-queue timeout, the server's MaxTimeMSExpired, an operation's
    ``timeoutMS``), as ``PyMongoError.timeout`` says in PyMongo.

    ``error_labels`` is the set of labels the error carries: the server's ``errorLabels`` for a
    reply, and those the driver adds (``RetryableWriteError`` on a network error of a retryable
    write, ``TransientTransactionError`` in a transaction...).

    ``partial_result`` is None, except on an error that ended a ``bulk_write`` after it began
    (a network error, a command error -- not a :class:`BulkWriteError`, whose ``details`` say
    it all): then the ``BulkWriteResult`` of the batches the server acknowledged before it
    (the CRUD specification's optional ``BulkWriteException.writeResult``; PyMongo's errors do
    not have it).  A :class:`ClientBulkWriteException` has its own (PyMongo's).
    """

    timeout: ClassVar[bool] = False
    partial_result: Any = None
    # A class-level default, so that subclasses whose __init__ never reaches ours still have one.
    _error_labels: frozenset[str] = frozenset()

    def __init__(self, *args: object, error_labels: Iterable[str] | None = None) -> None:
        # Exception's, not super()'s: once PyMongo is loaded our classes also derive from
        # PyMongo's (adapters/_pymongo_errors.py), whose __init__s take other arguments
        Exception.__init__(self, *args)
        if error_labels is not None:
            self._error_labels = frozenset(error_labels)

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from args and __dict__ without running __init__ (whose parameters are not
        # the args: InvalidDocument's message is built from its reason), also once PyMongo's
        # classes, which have their own __reduce__, are among the bases.
        return _rebuilt, (type(self), self.args, dict(self.__dict__))

    @property
    def _message(self) -> str:
        """The message (PyMongo's ``PyMongoError._message``)."""
        return str(self.args[0]) if self.args else ""

    @property
    def error_labels(self) -> frozenset[str]:
        return self._error_labels

    @error_labels.setter
    def error_labels(self, labels: Iterable[str]) -> None:
        self._error_labels = frozenset(labels)

    def has_error_label(self, label: str) -> bool:
        """Whether the error carries ``label``."""
        return label in self._error_labels

    def _add_error_label(self, label: str) -> None:
        self._error_labels = self._error_labels | {label}

    def _remove_error_label(self, label: str) -> None:
        self._error_labels = self._error_labels - {label}


#: PyMongo's name for the base class.
PyMongoError = MongoError


def _rebuilt(cls: type[MongoError], args: tuple[Any, ...], state: dict[str, Any]) -> MongoError:
    """An unpickled error: ``cls`` with ``args`` and the attributes ``state`` (see
    :meth:`MongoError.__reduce__`)."""
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


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


class InvalidURI(ConfigurationError):
    """A connection string that cannot be parsed."""


class InvalidName(ConfigurationError):
    """A database or collection name the server would refuse (empty, ``$``, NUL...).

    A :class:`ConfigurationError` too (PyMongo's is not), because names were refused with that
    class before this one existed."""


class InvalidOperation(LocalProtocolError):
    """The call is not allowed in the object's current state (e.g. iterating a closed cursor)."""


# --- codec errors (the rest of the family is in mongo_sansio.bson.errors) ---------------------


class BSONError(_Root, ValueError):
    """Base class of the codec's errors."""

    def __init__(self, *args: object, error_labels: Iterable[str] | None = None) -> None:
        # MongoError's, named here: once PyMongo is loaded, bson.errors.BSONError and
        # ValueError come before MongoError in the MRO of our errors deriving from both
        # (InvalidId...), whose construction must still be MongoError's
        MongoError.__init__(self, *args, error_labels=error_labels)  # type: ignore[arg-type]


class InvalidDocument(BSONError, LocalProtocolError):
    """A value that cannot be encoded as BSON.

    ``path`` names the key path to the offending value (``"a.b.3"``), empty for the top level.
    ``document`` is PyMongo's attribute (the offending document); ours is None.
    """

    document: Any = None

    def __init__(self, reason: str, path: str = "") -> None:
        self.reason = reason
        self.path = path
        where = f" at key path {path!r}" if path else ""
        super().__init__(f"cannot encode document{where}: {reason}")


class DocumentTooLarge(InvalidDocument):
    """A document to be sent is over a size limit (maxBsonObjectSize, or too large for any
    message under maxMessageSizeBytes); ``index`` is its position in the caller's list (None
    for a command body), ``size`` and ``limit`` are in bytes.  An :class:`InvalidDocument`, as
    in PyMongo."""

    def __init__(self, message: str, *, index: int | None = None, size: int = 0, limit: int = 0):
        # The message says what was too large; InvalidDocument's "cannot encode" prefix would not.
        LocalProtocolError.__init__(self, message)
        self.reason = message
        self.path = ""
        self.index = index
        self.size = size
        self.limit = limit


# --- errors of running operations against a server (client issue) ---------------------------

#: Codes the server uses for a duplicate key (insert, update and the legacy index build).
DUPLICATE_KEY_CODES = frozenset({11000, 11001, 12582})

_MAX_TIME_MS_EXPIRED = 50


class OperationFailure(MongoError):
    """A server answered a command with ``ok: 0`` (or with write errors); also named
    :class:`ServerError`.

    ``code`` and ``code_name`` are the server's, ``errmsg`` its message, ``error_labels`` the
    labels it attached (by default the ``errorLabels`` of ``details``), and ``details`` the
    whole reply document (never holding a secret: the commands whose replies could, the SASL
    ones, raise :class:`AuthenticationError` instead).  The positional arguments are PyMongo's
    (``error, code, details``); ``timeout`` is True for code 50 (MaxTimeMSExpired), as there.
    """

    # Class-level defaults, also so that PyMongo's read-only properties of these names (once
    # its OperationFailure is a base, after this class) do not refuse the assignments below.
    code: int | None = None
    details: Mapping[str, Any] = {}  # noqa: RUF012 - never mutated, replaced per instance

    def __init__(
        self,
        errmsg: str,
        code: int | None = None,
        details: Mapping[str, Any] | None = None,
        *,
        code_name: str | None = None,
        error_labels: Iterable[str] | None = None,
    ) -> None:
        super().__init__(errmsg if code is None else f"{errmsg} (code {code}{_name(code_name)})")
        self.errmsg = errmsg
        self.code = code
        self.code_name = code_name
        self.details = details if details is not None else {}
        if error_labels is None:
            found = self.details.get("errorLabels")
            error_labels = (
                [x for x in found if isinstance(x, str)] if isinstance(found, list | tuple) else ()
            )
        self.error_labels = frozenset(error_labels)

    @property
    def timeout(self) -> bool:  # type: ignore[override]  # PyMongo: depends on the code
        return self.code == _MAX_TIME_MS_EXPIRED


#: The name the rest of the library uses for :class:`OperationFailure`.
ServerError = OperationFailure


def _name(code_name: str | None) -> str:
    return f", {code_name}" if code_name else ""


class WriteError(OperationFailure):
    """One document of a write failed (an entry of the reply's ``writeErrors``)."""


class DuplicateKeyError(WriteError):
    """A write was refused because it would duplicate a unique index key (11000 and kin)."""


class WriteConcernError(OperationFailure):
    """The write was applied but its write concern was not satisfied (``writeConcernError``)."""


class WTimeoutError(WriteConcernError):
    """The write concern's ``wtimeout`` expired before enough members acknowledged the write
    (a ``writeConcernError`` with ``errInfo.wtimeout`` true, or code 50)."""

    @property
    def timeout(self) -> bool:  # type: ignore[override]
        return True


def write_concern_error_class(document: Mapping[str, Any]) -> type[WriteConcernError]:
    """The class for a ``writeConcernError`` document: :class:`WTimeoutError` when it reports
    an expired wtimeout (PyMongo's test: code 50 or a true ``errInfo.wtimeout``)."""
    return WTimeoutError if _is_wtimeout(document) else WriteConcernError


def _is_wtimeout(document: Mapping[str, Any]) -> bool:
    if whole_number(document.get("code")) == _MAX_TIME_MS_EXPIRED:
        return True
    info = document.get("errInfo")
    return isinstance(info, Mapping) and bool(info.get("wtimeout"))


def _listed(details: Mapping[str, Any], field: str) -> list[Mapping[str, Any]]:
    """A bulk write result's list ``field`` (a copy; empty when absent or malformed)."""
    errors = details.get(field, [])
    return list(errors) if isinstance(errors, list) else []


def _bulk_timed_out(error: BulkWriteError | ClientBulkWriteException) -> bool:
    """A bulk write's errors say its time ran out: the last write concern error a wtimeout,
    or the last write error MaxTimeMSExpired."""
    concerns = error.write_concern_errors
    if concerns and _is_wtimeout(concerns[-1]):
        return True
    errors = error.write_errors
    return bool(errors) and whole_number(errors[-1].get("code")) == _MAX_TIME_MS_EXPIRED


class BulkWriteError(OperationFailure):
    """A write of many documents met write errors or write concern errors.

    ``details`` is ``{writeErrors, writeConcernErrors, nInserted, nUpserted, nMatched,
    nModified, nRemoved, upserted}``; each write error's ``index`` is the position in the
    caller's list.  Documents after the first error of an ordered write were not sent.
    ``timeout`` is True when the last write concern error is a wtimeout or the last write
    error a MaxTimeMSExpired, as in PyMongo.
    """

    def __init__(self, details: Mapping[str, Any], *, error_labels: Sequence[str] = ()) -> None:
        super().__init__(
            "batch op errors occurred",
            code=65,  # the code other drivers give a BulkWriteError
            error_labels=tuple(error_labels),
            details=details,
        )

    def __str__(self) -> str:
        # PyMongo's wording: the summary, then the whole result (so the server's messages,
        # e.g. "E11000 duplicate key error ...", can be read and matched in the text)
        return f"{super().__str__()}, full error: {dict(self.details)!r}"

    @property
    def write_errors(self) -> list[Mapping[str, Any]]:
        return _listed(self.details, "writeErrors")

    @property
    def write_concern_errors(self) -> list[Mapping[str, Any]]:
        return _listed(self.details, "writeConcernErrors")

    @property
    def timeout(self) -> bool:  # type: ignore[override]
        return _bulk_timed_out(self)


class ClientBulkWriteException(OperationFailure):
    """``MongoClient.bulk_write`` met write errors, write concern errors or a top-level error
    (the bulk write specification's ``BulkWriteException``).

    ``details`` is the merged result document: ``writeErrors`` (the server's entries, each
    ``idx`` a position in the caller's list of models), ``writeConcernErrors`` (one per command
    that had one), the counts (``nInserted``, ``nUpserted``, ``nMatched``, ``nModified``,
    ``nDeleted``), ``insertResults`` / ``updateResults`` / ``deleteResults`` (verbose results
    only), ``anySuccessful`` and ``error``.  ``error`` is the top-level error that ended the
    bulk write (a network error, a command's ``ok: 0``, a failed getMore), None when only
    individual writes or write concerns failed; the exception carries its labels.
    ``partial_result`` is the ``ClientBulkWriteResult`` of what was written, or None when it
    cannot be told that any write succeeded.  ``timeout`` is the top-level error's, else as for
    :class:`BulkWriteError`.
    """

    def __init__(
        self,
        results: Mapping[str, Any],
        verbose: bool = False,
        *,
        error_labels: Iterable[str] | None = None,
    ) -> None:
        error = results.get("error")
        labels = set(error_labels or ())
        if isinstance(error, MongoError):
            labels |= error.error_labels
        super().__init__(
            "batch op errors occurred",
            code=65,  # as BulkWriteError (PyMongo gives this one the same code)
            error_labels=labels,
            details=results,
        )
        self.verbose = verbose
        partial = None
        if results.get("anySuccessful"):
            # imported here: the results module imports this one
            from mongo_sansio.ops.results import ClientBulkWriteResult

            partial = ClientBulkWriteResult(results, True, verbose)
        self.partial_result = partial

    def __str__(self) -> str:
        parts = [super().__str__()]
        if self.error is not None:
            parts.append(f"top-level error: {self.error}")
        if self.write_errors:
            parts.append(f"write errors: {self.write_errors!r}")
        if self.write_concern_errors:
            parts.append(f"write concern errors: {self.write_concern_errors!r}")
        return ", ".join(parts)

    @property
    def error(self) -> MongoError | None:
        """The top-level error that ended the bulk write, or None."""
        error = self.details.get("error")
        return error if isinstance(error, MongoError) else None

    @property
    def write_errors(self) -> list[Mapping[str, Any]]:
        return _listed(self.details, "writeErrors")

    @property
    def write_concern_errors(self) -> list[Mapping[str, Any]]:
        return _listed(self.details, "writeConcernErrors")

    @property
    def timeout(self) -> bool:  # type: ignore[override]
        error = self.error
        if error is not None:
            return bool(error.timeout)
        return _bulk_timed_out(self)


class ExecutionTimeout(OperationFailure):
    """The server stopped the operation at its time limit (code 50, MaxTimeMSExpired)."""

    @property
    def timeout(self) -> bool:  # type: ignore[override]
        return True


class CursorNotFound(OperationFailure):
    """The server no longer knows the cursor a getMore named (code 43)."""


class ConnectionFailure(MongoError):
    """The client could not talk to a server (PyMongo's base of the connection errors)."""


class AutoReconnect(ConnectionFailure):
    """A connection-level failure after which the operation may succeed if tried again.

    ``details`` and ``errors`` are PyMongo's: the server's reply for a :class:`NotPrimaryError`,
    else an empty list."""

    @property
    def details(self) -> Any:
        return []

    @property
    def errors(self) -> Any:
        return self.details


class NotPrimaryError(OperationFailure, AutoReconnect):
    """The server is not (or is no longer) a writable primary, or is recovering: SDAM's
    "state change" errors.  The server it came from is marked unknown.  Both an
    :class:`AutoReconnect` (as in PyMongo) and an :class:`OperationFailure` (it is a reply)."""

    # its own, so that PyMongo's NotPrimaryError.__init__ (a base once PyMongo is loaded)
    # is never the one called
    def __init__(
        self,
        errmsg: str,
        code: int | None = None,
        details: Mapping[str, Any] | None = None,
        *,
        code_name: str | None = None,
        error_labels: Iterable[str] | None = None,
    ) -> None:
        OperationFailure.__init__(
            self, errmsg, code, details, code_name=code_name, error_labels=error_labels
        )


class NetworkError(AutoReconnect):
    """The connection failed: refused, reset, closed mid-reply, or a TLS failure."""


class NetworkTimeout(NetworkError):
    """A connect or socket timeout expired."""

    timeout = True


class ConnectionSetupError(NetworkError):
    """A connection could not be set up for a reason the server's load plays no part in: a
    host name that does not resolve, a certificate or host name that does not verify.  Unlike
    other network errors met while connecting, it never gets the backpressure labels (CMAP
    spec, "backpressure-enabled")."""


class AuthenticationError(MongoError):
    """Authentication failed; ``code`` is the server's code when the server refused us (18,
    AuthenticationFailed) and None when we refused the server (a bad proof, a nonce that does
    not extend ours, too few iterations).  Messages never contain a password."""

    # PyMongo raises an OperationFailure (code 18) here: once PyMongo is loaded this class
    # derives from it, and these shadow its read-only properties
    code: int | None = None
    details: Mapping[str, Any] | None = None

    def __init__(self, message: str, *, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class IncompatibleServerError(MongoError):
    """The server's wire version range does not overlap ours; the message names both ranges."""


class CollectionInvalid(MongoError):
    """A collection cannot be created as asked (PyMongo's ``CollectionInvalid``): it exists."""


def __getattr__(name: str) -> Any:
    # The two errors defined beside the machines that raise them (which import this module)
    # are loaded on first use of their name here.
    if name == "ServerSelectionTimeoutError":
        from mongo_sansio.selection.errors import ServerSelectionTimeoutError

        return ServerSelectionTimeoutError
    if name == "WaitQueueTimeoutError":
        from mongo_sansio.cmap.errors import WaitQueueTimeoutError

        return WaitQueueTimeoutError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    if code == _MAX_TIME_MS_EXPIRED:
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
    if type(reply) is not dict and not isinstance(reply, Mapping):
        raise RemoteProtocolError(f"a command reply must be a document, got {type(reply).__name__}")
    if command_succeeded(reply):
        return reply
    raise server_error_from_reply(reply)
