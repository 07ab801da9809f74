"""The retry loops of operation flows, deciding with :mod:`mongo_sansio.retry`.

:func:`retryable_read` and :func:`retryable_write_batch` wrap one attempt of a read or of one
write batch: select a server, run the attempt, and on an error the rules allow, select a server
again (avoiding the one that failed) and run the attempt there.  Both ask the operation's
context (:class:`~mongo_sansio.flow.OperationContext`: session, ``retryReads`` /
``retryWrites``, deadline) once.

Inputs: the attempt (a function of the server, returning a flow), the read preference, whether
the write is acknowledged.  Outputs: the attempt's result, or the error the rules pick.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from mongo_sansio.command import run_command
from mongo_sansio.errors import LocalProtocolError, MongoError, WriteConcernError
from mongo_sansio.flow import (
    Flow,
    GetContext,
    Now,
    OperationContext,
    SelectServer,
    ServerInfo,
    TxnSlot,
)
from mongo_sansio.ops.write_errors import reply_write_concern_error
from mongo_sansio.retry import (
    error_to_raise,
    explain_unsupported,
    is_retryable_read_error,
    is_retryable_write_error,
    label_write_error,
    may_retry_again,
)
from mongo_sansio.selection.read_preference import PRIMARY, ReadPreference

__all__ = ["operation_context", "select", "retryable_read", "retryable_write_batch"]

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


def retryable_read(
    attempt: Callable[[ServerInfo], Flow[T]],
    read_preference: ReadPreference = PRIMARY,
    *,
    for_writes: bool = False,
    operation: str = "",
) -> Flow[T]:
    """Run ``attempt`` on a selected server; once more elsewhere after a retryable error."""
    context = yield from operation_context()
    server = yield from select(read_preference, for_writes=for_writes, operation=operation)
    retry = context.retry_reads and not context.in_transaction
    attempts = 1
    while True:
        try:
            return (yield from attempt(server))
        except MongoError as error:
            if not retry or not is_retryable_read_error(error):
                raise
            now = yield Now()
            if not may_retry_again(attempts, context.deadline, now):
                raise
            failed = error
        try:
            server = yield from select(
                read_preference,
                for_writes=for_writes,
                deprioritized=(server.address,),
                operation=operation,
            )
        except MongoError:
            raise failed from None
        attempts += 1


def _statements_retryable(command: Mapping[str, Any], statements: Sequence[Any]) -> bool:
    """Multi-document updates and deletes are not retryable writes."""
    name = next(iter(command), "")
    for statement in statements:
        if not isinstance(statement, Mapping):
            continue
        if name == "update" and statement.get("multi"):
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
    attempts = 1
    first: MongoError | None = None
    while True:
        try:
            reply = yield from run_command(server, db, command, sequences=sequences, txn=slot)
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
            if slot is None:
                raise explain_unsupported(error) from None
            label_write_error(error, server.max_wire_version)
            if first is not None:
                error = error_to_raise(first, error)
            if not is_retryable_write_error(error):
                raise explain_unsupported(error) from None
            now = yield Now()
            if not may_retry_again(attempts, context.deadline, now):
                if isinstance(error, WriteConcernError) and error.details:
                    return server, error.details
                raise error  # not a bare raise: error may be the first one (NoWritesPerformed)
            first = first or error
        try:
            server = yield from select(
                for_writes=True, deprioritized=(server.address,), operation=next(iter(command), "")
            )
        except MongoError:
            raise first from None
        if not server.supports_retryable_writes:
            raise first
        attempts += 1
