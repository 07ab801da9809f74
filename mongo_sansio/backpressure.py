"""Client backpressure: retrying overload errors with backoff (Client Backpressure spec).

Theory of operation
-------------------
An overloaded server (MongoDB 8.2's ingress rate limiters) refuses work with an error labelled
``SystemOverloadedError``; with ``RetryableError`` too it is a *retryable overload error*: the
server did nothing, so any command may be sent again, whether or not the Retryable Reads or
Writes rules would retry it.  This module holds the spec's rules as pure decisions; the retry
loops (:mod:`mongo_sansio.ops.retryable`, :mod:`mongo_sansio.ops.transactions`) ask them and
carry them out (select a server again, sleep, send again).

One :class:`RetryLedger` per operation counts its attempts across every retry policy (the
spec's ``attempt``).  After a failure, :meth:`RetryLedger.after_failure` says whether to try
again, after how long, and whether to avoid the server that failed:

* a retry is allowed when the error is retryable under the operation's own rules (a retryable
  read or write error) or is a retryable overload error and the client enables retries of
  that kind (``retryReads`` for reads, ``retryWrites`` for writes, both for ``runCommand``);
* the number of retries is one without a client-side operations timeout and unlimited (while
  time is left) with one -- until an error labelled ``SystemOverloadedError`` is seen: from
  then on it is ``maxAdaptiveRetries`` (default :data:`MAX_RETRIES`), for every later error;
* only after an overload error, the retry waits ``jitter * min(MAX_BACKOFF, base * 2**attempt)``
  seconds (``attempt`` is 1 for the first retry; ``base`` is :data:`BASE_BACKOFF`, or the
  error's own positive ``baseBackoffMS``); a wait that would end after the operation's
  deadline ends the loop instead;
* the failed server is deprioritized in the next selection when it is a mongos (any
  retryable error), or, with ``enableOverloadRetargeting``, after an overload error.

``jitter`` is a random number in ``[0, 1)`` that the caller draws (a flow asks its adapter
with :class:`~mongo_sansio.flow.Random`); ``now`` and ``deadline`` are monotonic seconds.

:func:`label_establishment_error` is the connection pool's rule: a network error or timeout
while a connection is opened or its ``hello`` runs may be the server's connection rate
limiter, and gets both labels (which keep SDAM from marking the server Unknown); errors that
no overload causes (a name that does not resolve, a certificate that does not verify) and
errors during authentication do not.

Inputs: errors, jitter draws, ``now``, the deadline, the client's settings.  Outputs:
:class:`Retry` decisions, labels.  Pure.
"""

from __future__ import annotations

import math
from typing import Final

import attrs

from mongo_sansio.errors import ConnectionSetupError, MongoError, NetworkError, ServerError

__all__ = [
    "SYSTEM_OVERLOADED_ERROR",
    "RETRYABLE_ERROR",
    "MAX_RETRIES",
    "BASE_BACKOFF",
    "MAX_BACKOFF",
    "is_overload_error",
    "is_retryable_overload_error",
    "may_retry",
    "server_base_backoff",
    "backoff",
    "Retry",
    "RetryLedger",
    "label_establishment_error",
]

SYSTEM_OVERLOADED_ERROR: Final = "SystemOverloadedError"
RETRYABLE_ERROR: Final = "RetryableError"
#: the default of ``maxAdaptiveRetries``
MAX_RETRIES: Final = 2
#: seconds: the base of the exponential backoff (100 ms)
BASE_BACKOFF: Final = 0.1
#: seconds: the longest backoff (10,000 ms)
MAX_BACKOFF: Final = 10.0


def is_overload_error(error: BaseException) -> bool:
    """The server is overloaded: ``error`` carries ``SystemOverloadedError``."""
    return isinstance(error, MongoError) and error.has_error_label(SYSTEM_OVERLOADED_ERROR)


def is_retryable_overload_error(error: BaseException) -> bool:
    """An overload error that any command may retry: both labels."""
    return (
        isinstance(error, MongoError)
        and error.has_error_label(SYSTEM_OVERLOADED_ERROR)
        and error.has_error_label(RETRYABLE_ERROR)
    )


def may_retry(error: BaseException, *, retryable: bool, overload_retry_enabled: bool) -> bool:
    """Whether ``error`` is one a retry may follow at all: retryable under the operation's own
    rules, or a retryable overload error where the client enables such retries (the limits
    are :meth:`RetryLedger.after_failure`'s)."""
    return retryable or (overload_retry_enabled and is_retryable_overload_error(error))


def server_base_backoff(error: BaseException) -> float | None:
    """The server's own base backoff (``baseBackoffMS`` of the error reply) in seconds, when
    it is a positive number; None otherwise."""
    if not isinstance(error, ServerError):
        return None
    value = error.details.get("baseBackoffMS") if error.details else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value) or value <= 0:
        return None
    return value / 1000.0


def backoff(attempt: int, jitter: float, base: float = BASE_BACKOFF) -> float:
    """Seconds to wait before retry number ``attempt`` (1 for the first retry)."""
    if attempt < 1:
        raise ValueError(f"attempt must be 1 or more, got {attempt}")
    if not 0.0 <= jitter <= 1.0:
        raise ValueError(f"jitter must be between 0 and 1, got {jitter}")
    # (2 ** attempt grows without bound; the cap keeps the product finite)
    ceiling = MAX_BACKOFF if attempt >= 64 else min(MAX_BACKOFF, base * 2**attempt)
    return jitter * ceiling


@attrs.frozen
class Retry:
    """Try again: after ``delay`` seconds, avoiding the failed server if ``deprioritize``."""

    delay: float = 0.0
    deprioritize: bool = False


@attrs.define
class RetryLedger:
    """One operation's attempts (see the module docstring).  ``max_adaptive_retries`` and
    ``retargeting`` are the client's ``maxAdaptiveRetries`` and ``enableOverloadRetargeting``;
    ``timeout`` says a client-side operations timeout applies (retry while time is left)."""

    max_adaptive_retries: int = MAX_RETRIES
    retargeting: bool = False
    timeout: bool = False
    retries: int = 0
    """Retries decided so far (the spec's ``attempt`` after the last failure)."""
    overloaded: bool = False
    """An error labelled SystemOverloadedError was seen: retries are capped from now on."""

    @property
    def allowed_retries(self) -> float:
        if self.overloaded:
            return self.max_adaptive_retries
        return math.inf if self.timeout else 1

    def after_failure(
        self,
        error: BaseException,
        *,
        retryable: bool,
        overload_retry_enabled: bool,
        jitter: float = 0.0,
        now: float = 0.0,
        deadline: float | None = None,
        sharded: bool = False,
    ) -> Retry | None:
        """Decide after an attempt failed with ``error``: a :class:`Retry`, or None to raise.

        ``retryable`` -- the operation's own rules retry ``error`` (retryable read or write);
        ``overload_retry_enabled`` -- the client's settings allow retrying this kind of command
        on a retryable overload error; ``jitter`` -- a draw in ``[0, 1)`` (used only after an
        overload error); ``sharded`` -- the failed server is a mongos."""
        overload = is_overload_error(error)
        if not may_retry(
            error, retryable=retryable, overload_retry_enabled=overload_retry_enabled
        ):
            return None
        self.retries += 1
        if overload:
            self.overloaded = True
        if self.retries > self.allowed_retries:
            return None
        if deadline is not None and now >= deadline:
            return None
        delay = 0.0
        if overload:
            base = server_base_backoff(error)
            delay = backoff(self.retries, jitter, BASE_BACKOFF if base is None else base)
            if deadline is not None and now + delay > deadline:
                return None
        return Retry(delay=delay, deprioritize=sharded or (overload and self.retargeting))


def label_establishment_error(error: MongoError, *, authenticating: bool) -> None:
    """Add the backpressure labels to an error met while a pooled connection was being
    established (see the module docstring); ``authenticating`` -- the hello had succeeded."""
    if authenticating or not isinstance(error, NetworkError):
        return
    if isinstance(error, ConnectionSetupError):
        return
    error._add_error_label(SYSTEM_OVERLOADED_ERROR)
    error._add_error_label(RETRYABLE_ERROR)
