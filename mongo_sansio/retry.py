"""Retryable reads and writes: which errors an operation may try again after.

Rules (Retryable Reads and Retryable Writes specs):

* Reads retry once on a network error or a reply whose code is in :data:`RETRYABLE_READ_CODES`
  (the "not primary", "node is recovering" and network-ish server codes).
* Writes retry once when the error carries the ``RetryableWriteError`` label.  The driver adds
  that label (:func:`label_write_error`) to every network error, and -- for servers before 4.4
  (wire version 9), which do not label their own errors -- to replies whose code, or whose
  ``writeConcernError`` code, is in :data:`RETRYABLE_WRITE_CODES`.  From 4.4 on the server's
  label is the only word.
* Never inside a transaction (commit and abort have their own rule), never for an
  unacknowledged write, never when ``retryReads`` / ``retryWrites`` is false, and a write only
  on a server that supports retryable writes (sessions, not a standalone).
* The retry selects a server again, avoiding the one that failed when another suits (a
  mongos: the spec deprioritises it), and a write reuses its ``txnNumber``.
* When the retry fails with the ``NoWritesPerformed`` label, the first error is raised: it says
  more about what happened.  When the retry cannot even select a server, the first error too.
* Code 20 "Transaction numbers are only allowed on a replica set member or mongos" means the
  deployment (a standalone behind a proxy, an old storage engine) cannot retry writes: the
  error is raised with the spec's message asking for ``retryWrites=false``.
* With a client-side operation timeout the operation keeps retrying while time is left
  (CSOT spec), instead of once.  How many retries an operation gets, and after what backoff,
  is :class:`~mongo_sansio.backpressure.RetryLedger`'s to count (it also knows overload
  errors); the loops are :mod:`mongo_sansio.ops.retryable`.

Inputs: errors, the server's wire version.  Outputs: whether an error is retryable, its
labels, which error to raise.  Pure.
"""

from __future__ import annotations

from typing import Final

from mongo_sansio.cmap.errors import PoolClearedError
from mongo_sansio.errors import (
    MongoError,
    NetworkError,
    ServerError,
)

__all__ = [
    "RETRYABLE_READ_CODES",
    "RETRYABLE_WRITE_CODES",
    "RETRYABLE_WRITE_ERROR",
    "NO_WRITES_PERFORMED",
    "LABEL_WIRE_VERSION",
    "is_retryable_read_error",
    "label_write_error",
    "is_retryable_write_error",
    "error_to_raise",
    "explain_unsupported",
]

RETRYABLE_WRITE_CODES: Final = frozenset(
    {6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436}
)
RETRYABLE_READ_CODES: Final = RETRYABLE_WRITE_CODES | {134}
RETRYABLE_WRITE_ERROR: Final = "RetryableWriteError"
NO_WRITES_PERFORMED: Final = "NoWritesPerformed"
#: from MongoDB 4.4 the server labels its own retryable write errors
LABEL_WIRE_VERSION: Final = 9
_TXN_NUMBERS_UNSUPPORTED: Final = 20


def is_retryable_read_error(error: BaseException) -> bool:
    """A read may try again after ``error``: a network error, a retryable code, or the pool's
    PoolClearedError (a paused pool at check-out, or the interruption of the connection in
    use), which the retryable reads spec lists."""
    if isinstance(error, NetworkError | PoolClearedError):
        return True
    if isinstance(error, ServerError):
        return error.code in RETRYABLE_READ_CODES
    return False


def _write_concern_code(error: ServerError) -> int | None:
    concern = error.details.get("writeConcernError") if error.details else None
    if isinstance(concern, dict) or hasattr(concern, "get"):
        code = concern.get("code")  # type: ignore[union-attr]
        if isinstance(code, int) and not isinstance(code, bool):
            return code
    return None


def label_write_error(error: MongoError, max_wire_version: int) -> None:
    """Add ``RetryableWriteError`` where the driver must (network errors; retryable codes on
    servers older than 4.4)."""
    if isinstance(error, NetworkError):
        error._add_error_label(RETRYABLE_WRITE_ERROR)
        return
    if not isinstance(error, ServerError) or max_wire_version >= LABEL_WIRE_VERSION:
        return
    if error.code in RETRYABLE_WRITE_CODES or _write_concern_code(error) in RETRYABLE_WRITE_CODES:
        error._add_error_label(RETRYABLE_WRITE_ERROR)


def is_retryable_write_error(error: BaseException) -> bool:
    return isinstance(error, MongoError) and error.has_error_label(RETRYABLE_WRITE_ERROR)


def error_to_raise(first: MongoError, last: MongoError) -> MongoError:
    """After a failed retry: the first error when the retry says nothing was written."""
    if last.has_error_label(NO_WRITES_PERFORMED):
        return first
    return last


def explain_unsupported(error: MongoError) -> MongoError:
    """Code 20's "Transaction numbers are only allowed..." turned into the spec's advice; any
    other error unchanged."""
    if (
        isinstance(error, ServerError)
        and error.code == _TXN_NUMBERS_UNSUPPORTED
        and error.errmsg.startswith("Transaction numbers")
    ):
        replacement = ServerError(
            "This MongoDB deployment does not support retryable writes. Please add "
            "retryWrites=false to your connection string.",
            code=error.code,
            code_name=error.code_name,
            error_labels=error.error_labels,
            details=error.details,
        )
        replacement.__cause__ = error
        return replacement
    return error
