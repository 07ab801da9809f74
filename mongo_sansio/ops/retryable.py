"""The retry loops of operation flows, deciding with :mod:`mongo_sansio.retry` and
:mod:`mongo_sansio.backpressure`.

:func:`retryable_read` and :func:`retryable_write_batch` wrap one attempt of a read or of one
write batch: select a server, run the attempt, and on an error the rules allow, select a server
again (avoiding the one that failed when it is a mongos, or after an overload error with
``enableOverloadRetargeting``) and run the attempt there.  Both ask the operation's context
(:class:`~mongo_sansio.flow.OperationContext`: session, ``retryReads`` / ``retryWrites``,
deadline, backpressure settings) once, and keep one
:class:`~mongo_sansio.backpressure.RetryLedger`.  After an overload error the retry first
sleeps the backoff (jitter from a :class:`~mongo_sansio.flow.Random` request).  Retryable
overload errors are retried even where the read and write rules would not: inside a
transaction (a first command retried keeps ``startTransaction``), a multi-document write, a
write without a retryable-writes server (no ``txnNumber`` then).

Inputs: the attempt (a function of the server, returning a flow), the read preference, whether
the write is acknowledged.  Outputs: the attempt's result, or the error the rules pick.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from mongo_sansio.backpressure import Retry, RetryLedger, is_overload_error, may_retry
from mongo_sansio.command import run_command
from mongo_sansio.errors import LocalProtocolError, MongoError, WriteConcernError
from mongo_sansio.flow import (
    Flow,
    GetContext,
    Now,
    OperationContext,
    Random,
    SelectServer,
    ServerInfo,
    Sleep,
    TxnSlot,
)
from mongo_sansio.ops.crud_commands import for_server
from mongo_sansio.ops.write_errors import reply_write_concern_error
from mongo_sansio.retry import (
    error_to_raise,
    explain_unsupported,
    is_retryable_read_error,
    is_retryable_write_error,
    label_write_error,
)
from mongo_sansio.selection.read_preference import PRIMARY, ReadPreference

__all__ = [
    "operation_context",
    "select",
    "retry_ledger",
    "decide_retry",
    "retryable_read",
    "overload_retried",
    "retryable_write_batch",
]

T = TypeVar("T")


def operation_context() -> Flow[OperationContext]:
    context = yield GetContext()
    if not isinstance(context, OperationContext):
        raise LocalProtocolError(
            f"GetContext must be answered with an OperationContext, got {context!r}"
        )
    return context


def select(
    read_preference: ReadPreference = PRIMARY,
    *,
    for_writes: bool = False,
    deprioritized: tuple[tuple[str, int], ...] = (),
    operation: str = "",
) -> Flow[ServerInfo]:
    """Ask the adapter for a server (for the command named ``operation``, which selection's
    log messages name); check that it answered with one."""
    server = yield SelectServer(read_preference, for_writes, deprioritized, operation)
    if not isinstance(server, ServerInfo):
        raise LocalProtocolError(f"SelectServer must be answered with a ServerInfo, got {server!r}")
    return server


def retry_ledger(context: OperationContext) -> RetryLedger:
    """A fresh ledger for one operation run in ``context``."""
    return RetryLedger(
        max_adaptive_retries=context.max_adaptive_retries,
        retargeting=context.overload_retargeting,
        timeout=context.deadline is not None,
    )


def decide_retry(
    ledger: RetryLedger,
    context: OperationContext,
    error: MongoError,
    server: ServerInfo,
    *,
    retryable: bool,
    overload_retry_enabled: bool,
    sharded: bool | None = None,
) -> Flow[Retry | None]:
    """Ask ``ledger`` about ``error`` (drawing jitter and reading the clock as needed); sleep
    the backoff when the answer is to retry.  Returns the decision.  An error no retry may
    follow is answered at once, without a request.  ``sharded`` overrides whether the failed
    server counts as a mongos (deprioritized after any retryable error)."""
    if not may_retry(error, retryable=retryable, overload_retry_enabled=overload_retry_enabled):
        return None
    jitter = 0.0
    if is_overload_error(error):
        jitter = yield Random()
    now = yield Now()
    decision = ledger.after_failure(
        error,
        retryable=retryable,
        overload_retry_enabled=overload_retry_enabled,
        jitter=jitter,
        now=now,
        deadline=context.deadline,
        sharded=server.is_mongos if sharded is None else sharded,
    )
    if decision is not None and decision.delay > 0:
        yield Sleep(decision.delay)
    return decision


def _keep_first_command(context: OperationContext, was_starting: bool) -> None:
    """A transaction's first command that failed and is retried is still its first: it is
    sent again with ``startTransaction`` (Transactions spec, client backpressure)."""
    if was_starting and context.in_transaction:
        context.session.retry_first_command()


def _starting(context: OperationContext) -> bool:
    # (starting_transaction alone: a transaction that is starting is in progress too)
    session = context.session
    return session is not None and bool(session.starting_transaction)


def retryable_read(
    attempt: Callable[[ServerInfo], Flow[T]],
    read_preference: ReadPreference = PRIMARY,
    *,
    for_writes: bool = False,
    operation: str = "",
) -> Flow[T]:
    """Run ``attempt`` on a selected server; again elsewhere after a retryable error, as the
    retry rules allow."""
    context = yield from operation_context()
    retry = context.retry_reads and not context.in_transaction
    return (
        yield from _retry_loop(
            context,
            attempt,
            read_preference,
            for_writes=for_writes,
            operation=operation,
            retryable=lambda error: retry and is_retryable_read_error(error),
            enabled=context.retry_reads,
        )
    )


def overload_retried(
    attempt: Callable[[ServerInfo], Flow[T]],
    read_preference: ReadPreference = PRIMARY,
    *,
    for_writes: bool = False,
    operation: str = "",
    reads: bool = False,
    writes: bool = False,
    server: ServerInfo | None = None,
) -> Flow[T]:
    """Run ``attempt`` -- a command no other retry policy covers (create, drop, a user's
    ``runCommand``, an aggregate with ``$out``, a getMore) -- retrying it only after
    retryable overload errors.  ``reads`` / ``writes``: the command counts as a read / a
    write, so ``retryReads`` / ``retryWrites`` must allow it (``runCommand``: both).
    ``server`` pins every attempt to that server (a cursor's getMore)."""
    context = yield from operation_context()
    enabled = (not reads or context.retry_reads) and (not writes or context.retry_writes)
    return (
        yield from _retry_loop(
            context,
            attempt,
            read_preference,
            for_writes=for_writes,
            operation=operation,
            retryable=lambda error: False,
            enabled=enabled,
            pinned=server,
        )
    )


def _retry_loop(
    context: OperationContext,
    attempt: Callable[[ServerInfo], Flow[T]],
    read_preference: ReadPreference,
    *,
    for_writes: bool,
    operation: str,
    retryable: Callable[[MongoError], bool],
    enabled: bool,
    pinned: ServerInfo | None = None,
) -> Flow[T]:
    if pinned is None:
        server = yield from select(read_preference, for_writes=for_writes, operation=operation)
    else:
        server = pinned
    ledger: RetryLedger | None = None  # (made at the first failure: most operations have none)
    while True:
        was_starting = _starting(context)
        try:
            return (yield from attempt(server))
        except MongoError as error:
            if ledger is None:
                ledger = retry_ledger(context)
            decision = yield from decide_retry(
                ledger,
                context,
                error,
                server,
                retryable=retryable(error),
                overload_retry_enabled=enabled,
            )
            if decision is None:
                raise
            failed = error
        _keep_first_command(context, was_starting)
        if pinned is not None:
            continue
        try:
            server = yield from select(
                read_preference,
                for_writes=for_writes,
                deprioritized=(server.address,) if decision.deprioritize else (),
                operation=operation,
            )
        except MongoError:
            raise failed from None


def _statements_retryable(command: Mapping[str, Any], statements: Sequence[Any]) -> bool:
    """Multi-document updates and deletes are not retryable writes (a bulkWrite batch is
    retryable only when none of its ops says ``multi: true``)."""
    name = next(iter(command), "")
    if name != "update" and name != "delete" and name != "bulkWrite":
        return True  # (an insert's statements are its documents: not looked at)
    for statement in statements:
        if not isinstance(statement, Mapping):
            continue
        if name in ("update", "bulkWrite") and statement.get("multi"):
            return False
        if name == "delete" and statement.get("limit") == 0:
            return False
    return True


def retryable_write_batch(
    context: OperationContext,
    server: ServerInfo,
    db: str,
    command: Mapping[str, Any],
    *,
    sequences: Mapping[str, Sequence[Any]] | None = None,
    statements: Sequence[Any] = (),
    acknowledged: bool = True,
) -> Flow[tuple[ServerInfo, Mapping[str, Any]]]:
    """Run one write command (one batch); once more, with the same ``txnNumber``, after a
    retryable write error.  Returns the server that answered and its reply."""
    retryable = (
        context.retry_writes
        and acknowledged
        and not context.in_transaction
        and server.supports_retryable_writes
        and _statements_retryable(command, statements)
    )
    slot = TxnSlot() if retryable else None
    ledger: RetryLedger | None = None  # (made at the first failure: most writes have none)
    first: MongoError | None = None
    while True:
        was_starting = _starting(context)
        try:
            sent = for_server(command, server)  # (a retry may go to another server)
            reply = yield from run_command(server, db, sent, sequences=sequences, txn=slot)
            if slot is None:
                return server, reply
            failure = reply_write_concern_error(reply)
            if failure is None:
                return server, reply
            label_write_error(failure, server.max_wire_version)
            if not is_retryable_write_error(failure):
                return server, reply
            raise failure
        except MongoError as error:
            if slot is not None:
                label_write_error(error, server.max_wire_version)
            if first is not None:
                error = error_to_raise(first, error)
            retryable_error = slot is not None and is_retryable_write_error(error)
            if ledger is None:
                ledger = retry_ledger(context)
            decision = yield from decide_retry(
                ledger,
                context,
                error,
                server,
                retryable=retryable_error,
                overload_retry_enabled=context.retry_writes and acknowledged,
            )
            if decision is None:
                if not retryable_error:
                    raise explain_unsupported(error) from None
                if isinstance(error, WriteConcernError) and error.details:
                    return server, error.details
                raise error  # not a bare raise: error may be the first one (NoWritesPerformed)
            first = first or error
        _keep_first_command(context, was_starting)
        try:
            server = yield from select(
                for_writes=True,
                deprioritized=(server.address,) if decision.deprioritize else (),
                operation=next(iter(command), ""),
            )
        except MongoError:
            raise first from None
        if slot is not None and not server.supports_retryable_writes:
            raise first
