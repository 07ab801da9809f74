"""The pool's errors, typed by blame.

Two families live here:

* Check-out failures, handed to a waiter inside a ``FailWaiter`` action (the pool never raises
  them itself): :class:`PoolClosedError`, :class:`PoolClearedError` (a retryable, non-timeout
  network error carrying the ``RetryableWriteError`` label) and :class:`WaitQueueTimeoutError`.
  Each carries the pool's ``address`` and the specification's ``message``.
* Misuse of the machine, raised by the method that was misused before anything changes:
  :class:`UnknownConnectionError`, :class:`ConnectionStateError`, :class:`UnknownWaiterError`
  (all :class:`~mongo_sansio.errors.LocalProtocolError`).
"""

from __future__ import annotations

from typing import ClassVar

from mongo_sansio.errors import ConnectionFailure, LocalProtocolError, MongoError

__all__ = [
    "PoolError",
    "PoolClosedError",
    "PoolClearedError",
    "WaitQueueTimeoutError",
    "PoolMisuseError",
    "UnknownConnectionError",
    "ConnectionStateError",
    "UnknownWaiterError",
]

RETRYABLE_WRITE_ERROR = "RetryableWriteError"


class PoolError(MongoError):
    """A check-out could not be served; ``str(error)`` is the specification's message."""

    #: whether an operation may be retried after this error
    retryable: ClassVar[bool] = False
    #: whether drivers treat the error as a network error (SDAM, retryability)
    network_error: ClassVar[bool] = False
    #: whether the error is a timeout
    timeout: ClassVar[bool] = False

    def __init__(self, message: str, address: str, labels: frozenset[str] = frozenset()) -> None:
        super().__init__(message)
        self.message = message
        self.address = address
        self.error_labels = labels

    def has_error_label(self, label: str) -> bool:
        return label in self.error_labels


class PoolClosedError(PoolError):
    """Checking out from a closed pool (or a pool closed while the check-out was waiting)."""

    def __init__(self, address: str) -> None:
        super().__init__("Attempted to check out a connection from closed connection pool", address)


class PoolClearedError(PoolError):
    """The pool is paused (cleared) or interrupted the check-out: retry on another attempt.

    Not an error that marks the server Unknown: SDAM must ignore it.  ``cause`` is the error that
    made someone clear the pool, when it was given to ``clear``.
    """

    retryable = True
    network_error = True

    def __init__(
        self,
        address: str,
        cause: BaseException | None = None,
        *,
        interrupted: bool = False,
    ) -> None:
        if interrupted:
            message = f"Connection to {address} interrupted due to server monitor timeout"
        elif cause is not None:
            message = (
                f"Connection pool for {address} was cleared because another operation failed"
                f" with: {cause}"
            )
        else:
            message = f"Connection pool for {address} is paused (cleared, or not yet ready)"
        super().__init__(message, address, frozenset({RETRYABLE_WRITE_ERROR}))
        self.cause = cause
        self.interrupted = interrupted


class WaitQueueTimeoutError(PoolError, ConnectionFailure):
    """The check-out waited longer than its timeout for a connection (a ConnectionFailure, as
    in PyMongo)."""

    timeout = True

    def __init__(self, address: str, detail: str | None = None) -> None:
        super().__init__(
            detail or "Timed out while checking out a connection from connection pool", address
        )


class PoolMisuseError(LocalProtocolError):
    """The caller used the pool in a way it does not allow; the pool state is unchanged."""


class UnknownConnectionError(PoolMisuseError):
    """A connection this pool never created (another pool's, or an id it never issued)."""


class ConnectionStateError(PoolMisuseError):
    """A connection in the wrong state: checked in twice, or a second result for one attempt."""


class UnknownWaiterError(PoolMisuseError):
    """A waiter id this pool never issued."""
