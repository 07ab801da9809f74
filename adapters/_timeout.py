"""``timeout(seconds)``: a client-side operation timeout for a block of code, like
``pymongo.timeout``.

Every operation started inside ``with timeout(seconds):`` (``async with`` works too) must end
before the block's deadline, across server selection, waiting for a connection and every byte
of every command; an operation that runs out of time raises an error whose ``timeout`` is True.
Blocks nest: an inner block never extends an outer one's deadline.  ``timeout(None)`` sets no
deadline of its own (an enclosing one still holds).  The deadline is kept in a context
variable, so it follows threads, greenlets, asyncio tasks and trio tasks separately.  Each
runtime's client module exports this one function.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import time
from collections.abc import Iterator
from typing import Any

from mongo_sansio.errors import ConfigurationError, InvalidOperation

__all__ = [
    "timeout",
    "current_deadline",
    "operation_timeout",
    "deadline_block",
    "callback_block",
]

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "mongo_sansio_deadline", default=None
)
#: True while a with_transaction callback runs under that call's timeoutMS: the CSOT spec
#: refuses a timeout of its own for an operation inside it (client-side error)
_IN_TIMED_CALLBACK: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "mongo_sansio_in_timed_callback", default=False
)


def current_deadline() -> float | None:
    """The deadline (``time.monotonic`` seconds) of the innermost ``timeout`` block, or None."""
    return _DEADLINE.get()


class _Timeout:
    def __init__(self, seconds: float | None) -> None:
        if seconds is not None and (
            not isinstance(seconds, int | float)
            or isinstance(seconds, bool)
            or not math.isfinite(seconds)
            or seconds < 0
        ):
            raise ConfigurationError(f"timeout must be None or a number >= 0, not {seconds!r}")
        self._seconds = seconds
        self._tokens: list[contextvars.Token[float | None]] = []

    def __enter__(self) -> None:
        if _IN_TIMED_CALLBACK.get():
            raise InvalidOperation(
                "timeoutMS cannot be overridden inside a with_transaction callback (the "
                "callback's operations share with_transaction's timeout)"
            )
        outer = _DEADLINE.get()
        deadline = outer
        if self._seconds == 0:
            # timeout(0), like timeoutMS=0: no limit for this block's operations (an outer
            # block's limit still holds), whatever the collection's or client's timeoutMS say
            deadline = math.inf if outer is None else outer
        elif self._seconds is not None:
            mine = time.monotonic() + self._seconds
            deadline = mine if outer is None else min(outer, mine)
        self._tokens.append(_DEADLINE.set(deadline))

    def __exit__(self, *exc: Any) -> None:
        _DEADLINE.reset(self._tokens.pop())

    async def __aenter__(self) -> None:
        self.__enter__()

    async def __aexit__(self, *exc: Any) -> None:
        self.__exit__(*exc)


@contextlib.contextmanager
def deadline_block(deadline: float | None) -> Iterator[None]:
    """Operations inside run until ``deadline`` exactly (an absolute ``time.monotonic``
    value; None: no block of its own, the client's or collection's timeoutMS apply), the way
    with_transaction shares one deadline between its callback, commit and retries."""
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


@contextlib.contextmanager
def callback_block(timed: bool) -> Iterator[None]:
    """While a with_transaction callback runs: ``timed`` (the call has a timeoutMS) makes a
    ``timeout()`` block inside it a client-side error."""
    token = _IN_TIMED_CALLBACK.set(timed)
    try:
        yield
    finally:
        _IN_TIMED_CALLBACK.reset(token)


def timeout(seconds: float | None) -> _Timeout:
    """A block whose operations all end within ``seconds`` (see the module docstring)."""
    return _Timeout(seconds)


def operation_timeout(timeout_ms: float | None) -> float | None:
    """A database's or collection's ``timeoutMS`` (milliseconds) in seconds; None stays None
    (inherit), 0 means no limit.  A negative or non-numeric value is a ConfigurationError."""
    if timeout_ms is None:
        return None
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int | float) or timeout_ms < 0:
        raise ConfigurationError(
            f"timeoutMS must be a non-negative number of milliseconds, got {timeout_ms!r}"
        )
    return timeout_ms / 1000.0
