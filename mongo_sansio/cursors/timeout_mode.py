"""The CSOT spec's ``timeoutMode`` for the operations that open a cursor (find, aggregate,
listCollections, listIndexes, listDatabases, runCursorCommand): checked once here, before
anything is sent, for every runtime.

* ``timeoutMode`` (``"cursorLifetime"`` / ``"iteration"``, or the spec's ``CURSOR_LIFETIME`` /
  ``ITERATION``) without a ``timeoutMS`` anywhere in the chain (operation, collection,
  database, client, or a ``timeout()`` block) is a client-side error;
* a tailable cursor only takes ``iteration``; an aggregate writing with ``$out``/``$merge``
  only takes ``cursorLifetime``.

Inputs: the option as given and what the operation opens; the operation's deadline from its
:class:`~mongo_sansio.flow.OperationContext` (None: no timeoutMS).  Outputs: the normalised
mode, or ConfigurationError / InvalidOperation.  Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeVar

from mongo_sansio.errors import ConfigurationError, InvalidOperation
from mongo_sansio.flow import Flow, GetContext

__all__ = ["CURSOR_LIFETIME", "ITERATION", "parse_timeout_mode", "checked_timeout_mode", "writes_out"]

CURSOR_LIFETIME: Final = "cursorLifetime"
ITERATION: Final = "iteration"
_SPELLINGS: Final = {
    "cursorLifetime": CURSOR_LIFETIME, "CURSOR_LIFETIME": CURSOR_LIFETIME, "cursor_lifetime": CURSOR_LIFETIME,
    "iteration": ITERATION, "ITERATION": ITERATION,
}

T = TypeVar("T")


def parse_timeout_mode(value: Any) -> str | None:
    """The mode ``value`` names (None: not given); anything else is a ConfigurationError."""
    if value is None:
        return None
    mode = _SPELLINGS.get(value) if isinstance(value, str) else None
    if mode is None:
        raise ConfigurationError(f"timeoutMode must be 'cursorLifetime' or 'iteration', not {value!r}")
    return mode


def writes_out(pipeline: Sequence[Any] | None) -> bool:
    """Whether an aggregate pipeline ends with $out or $merge."""
    last = pipeline[-1] if pipeline else None
    return isinstance(last, Mapping) and next(iter(last), None) in ("$out", "$merge")


def checked_timeout_mode(
    timeout_mode: Any, flow: Flow[T], *, tailable: bool = False, writes: bool = False
) -> Flow[T]:
    """``flow`` (an operation opening a cursor), run only when ``timeout_mode`` passes the
    spec's rules; the checks come before the flow sends anything."""
    mode = parse_timeout_mode(timeout_mode)
    if mode is not None:
        context = yield GetContext()
        if getattr(context, "deadline", None) is None:
            raise ConfigurationError("timeoutMode requires timeoutMS (set on the operation, its collection, "
                                     "database or client, or by a timeout() block)")
        if tailable and mode == CURSOR_LIFETIME:
            raise InvalidOperation("a tailable cursor's timeoutMode can only be 'iteration'")
        if writes and mode == ITERATION:
            raise InvalidOperation("timeoutMode 'iteration' is not allowed for an aggregate with $out or $merge")
    return (yield from flow)
