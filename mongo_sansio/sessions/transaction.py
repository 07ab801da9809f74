"""The transaction state of a session, as a table (Transactions spec, "Client Session changes").

States: ``NONE`` (no transaction), ``STARTING`` (started, nothing sent yet), ``IN_PROGRESS``
(a command was sent), ``COMMITTED``, ``COMMITTED_EMPTY`` (committed with nothing sent: no
command goes to the server), ``ABORTED``.

Inputs: :data:`START`, :data:`OPERATION` (a command of the session is sent), :data:`COMMIT`,
:data:`ABORT`, :data:`RETRY_FIRST` (the transaction's first command failed with a retryable
overload error and is sent again: it is still the first, with ``startTransaction``).  Output: the next state, or :class:`~mongo_sansio.errors.InvalidOperation` with
the spec's message when the input is not allowed in the current state.  Whether commit and abort
send a command is :func:`sends_command`'s answer.
"""

from __future__ import annotations

import enum
from typing import Any, Final

import attrs

from mongo_sansio.errors import InvalidOperation

__all__ = [
    "TransactionState",
    "TransactionOptions",
    "START",
    "OPERATION",
    "COMMIT",
    "ABORT",
    "RETRY_FIRST",
    "next_state",
    "sends_command",
]


class TransactionState(enum.Enum):
    NONE = "none"
    STARTING = "starting"
    IN_PROGRESS = "in_progress"
    COMMITTED = "committed"
    COMMITTED_EMPTY = "committed_empty"
    ABORTED = "aborted"


START: Final = "start"
OPERATION: Final = "operation"
COMMIT: Final = "commit"
ABORT: Final = "abort"
RETRY_FIRST: Final = "retry first command"

S = TransactionState
_TABLE: Final[dict[tuple[TransactionState, str], TransactionState | str]] = {
    (S.NONE, START): S.STARTING,
    (S.COMMITTED, START): S.STARTING,
    (S.COMMITTED_EMPTY, START): S.STARTING,
    (S.ABORTED, START): S.STARTING,
    (S.STARTING, START): "Transaction already in progress",
    (S.IN_PROGRESS, START): "Transaction already in progress",
    (S.NONE, OPERATION): S.NONE,
    (S.STARTING, OPERATION): S.IN_PROGRESS,
    (S.IN_PROGRESS, OPERATION): S.IN_PROGRESS,
    (S.COMMITTED, OPERATION): S.NONE,
    (S.COMMITTED_EMPTY, OPERATION): S.NONE,
    (S.ABORTED, OPERATION): S.NONE,
    (S.NONE, COMMIT): "No transaction started",
    (S.STARTING, COMMIT): S.COMMITTED_EMPTY,
    (S.IN_PROGRESS, COMMIT): S.COMMITTED,
    (S.COMMITTED, COMMIT): S.COMMITTED,
    (S.COMMITTED_EMPTY, COMMIT): S.COMMITTED_EMPTY,
    (S.ABORTED, COMMIT): "Cannot call commitTransaction after calling abortTransaction",
    (S.NONE, ABORT): "No transaction started",
    (S.STARTING, ABORT): S.ABORTED,
    (S.IN_PROGRESS, ABORT): S.ABORTED,
    (S.COMMITTED, ABORT): "Cannot call abortTransaction after calling commitTransaction",
    (S.COMMITTED_EMPTY, ABORT): "Cannot call abortTransaction after calling commitTransaction",
    (S.ABORTED, ABORT): "Cannot call abortTransaction twice",
    (S.NONE, RETRY_FIRST): "No transaction started",
    (S.STARTING, RETRY_FIRST): S.STARTING,
    (S.IN_PROGRESS, RETRY_FIRST): S.STARTING,
    (S.COMMITTED, RETRY_FIRST): "No transaction started",
    (S.COMMITTED_EMPTY, RETRY_FIRST): "No transaction started",
    (S.ABORTED, RETRY_FIRST): "No transaction started",
}


def next_state(state: TransactionState, event: str) -> TransactionState:
    """The state after ``event``; InvalidOperation when the table forbids it."""
    outcome = _TABLE[(state, event)]
    if isinstance(outcome, str):
        raise InvalidOperation(outcome)
    return outcome


def sends_command(state: TransactionState) -> bool:
    """Whether commit or abort from ``state`` (before the transition) talks to the server:
    not for a transaction that never sent a command."""
    return state in (S.IN_PROGRESS, S.COMMITTED)


@attrs.frozen
class TransactionOptions:
    """PyMongo's ``TransactionOptions``: the read concern, write concern and read preference of
    a transaction's operations, and ``max_commit_time_ms`` (commitTransaction's maxTimeMS).
    Unset values come from the session's defaults, then the client's."""

    read_concern: Any = None
    write_concern: Any = None
    read_preference: Any = None
    max_commit_time_ms: int | None = None

    def __attrs_post_init__(self) -> None:
        value = self.max_commit_time_ms
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise TypeError("max_commit_time_ms must be an integer or None")

    def merged(self, defaults: TransactionOptions | None) -> TransactionOptions:
        """These options, each unset one taken from ``defaults``."""
        if defaults is None:
            return self
        return TransactionOptions(
            read_concern=self.read_concern
            if self.read_concern is not None
            else defaults.read_concern,
            write_concern=self.write_concern
            if self.write_concern is not None
            else defaults.write_concern,
            read_preference=self.read_preference
            if self.read_preference is not None
            else defaults.read_preference,
            max_commit_time_ms=self.max_commit_time_ms
            if self.max_commit_time_ms is not None
            else defaults.max_commit_time_ms,
        )
