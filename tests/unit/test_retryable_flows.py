"""Scripted retry flows (no sockets): reads retried once on another server, write batches
retried with the same txnNumber, the cases that are never retried, and the commit / abort
flows of transactions (w:majority on a commit sent again, UnknownTransactionCommitResult,
abort errors swallowed) with the convenient API's decisions."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import pytest
from flow_script import (
    ABSENT,
    Step,
    command,
    error_reply,
    mark_unknown,
    network_error,
    run_flow,
)

from mongo_sansio.client.sessions import ClientSessions
from mongo_sansio.errors import MongoError, NetworkError, ServerError, WriteConcernError
from mongo_sansio.flow import Now, OperationContext, RunCommand, SelectServer, ServerInfo
from mongo_sansio.ops import crud
from mongo_sansio.ops.transactions import (
    WITH_TRANSACTION_TIMEOUT,
    Next,
    abort_transaction,
    after_callback_error,
    after_commit_error,
    commit_transaction,
)
from mongo_sansio.selection import ServerSelectionTimeoutError
from mongo_sansio.sessions import Session, TransactionOptions

# mongoses: a retry after any retryable error avoids the one that failed (replica set members
# are avoided only after overload errors: test_backpressure_flows.py)
A = ServerInfo(("a", 27017), max_wire_version=21, supports_retryable_writes=True, is_mongos=True)
B = ServerInfo(("b", 27017), max_wire_version=21, supports_retryable_writes=True, is_mongos=True)
STANDALONE = ServerInfo(("s", 27017), max_wire_version=21, supports_retryable_writes=False)
RETRYING = OperationContext(session=None)
TRANSIENT = "TransientTransactionError"
UNKNOWN = "UnknownTransactionCommitResult"
RETRYABLE = "RetryableWriteError"


def pick(server: ServerInfo, *, avoiding: tuple[tuple[str, int], ...] = ()) -> Step:
    """A SelectServer answered with ``server``; it must deprioritize ``avoiding``."""

    def check(request: Any) -> None:
        assert isinstance(request, SelectServer)
        assert request.deprioritized == avoiding

    return Step(SelectServer, reply=server, check=check)


def fail_selection() -> Step:
    return Step(SelectServer, error=ServerSelectionTimeoutError("no server"))


def now(seconds: float = 0.0) -> Step:
    return Step(Now, reply=seconds)


# -- reads ------------------------------------------------------------------------------------


def count_flow() -> Any:
    return crud.read_command("db", {"count": "c"})


def test_a_read_is_retried_once_on_another_server_after_a_network_error() -> None:
    reply = run_flow(
        count_flow(),
        pick(A),
        network_error("count", address=A.address),
        mark_unknown(A.address),
        now(),
        pick(B, avoiding=(A.address,)),
        command("count", {"ok": 1, "n": 3}, address=B.address),
        context=RETRYING,
    )
    assert reply["n"] == 3


def test_a_read_is_retried_after_a_retryable_code() -> None:
    reply = run_flow(
        count_flow(),
        pick(A),
        command("count", error_reply(11600, errmsg="interrupted at shutdown")),
        mark_unknown(A.address),
        now(),
        pick(B, avoiding=(A.address,)),
        command("count", {"ok": 1, "n": 1}),
        context=RETRYING,
    )
    assert reply["n"] == 1


def test_a_read_is_retried_only_once() -> None:
    with pytest.raises(NetworkError, match="second"):
        run_flow(
            count_flow(),
            pick(A),
            network_error("count", "first"),
            mark_unknown(),
            now(),
            pick(B, avoiding=(A.address,)),
            network_error("count", "second"),
            mark_unknown(),
            now(),
            context=RETRYING,
        )


def test_no_read_retry_when_retry_reads_is_false() -> None:
    with pytest.raises(NetworkError):
        run_flow(
            count_flow(),
            pick(A),
            network_error("count"),
            mark_unknown(),
            context=OperationContext(session=None, retry_reads=False),
        )


def test_no_read_retry_inside_a_transaction() -> None:
    session = Session(object(), implicit=False)
    session.start_transaction(TransactionOptions())
    with pytest.raises(NetworkError):
        run_flow(
            count_flow(),
            pick(A),
            network_error("count"),
            mark_unknown(),
            context=OperationContext(session=session),
        )


def test_no_read_retry_after_a_non_retryable_code() -> None:
    with pytest.raises(ServerError) as raised:
        run_flow(count_flow(), pick(A), command("count", error_reply(2)), context=RETRYING)
    assert raised.value.code == 2


def test_when_the_retry_finds_no_server_the_first_error_is_raised() -> None:
    with pytest.raises(NetworkError, match="first"):
        run_flow(
            count_flow(),
            pick(A),
            network_error("count", "first"),
            mark_unknown(),
            now(),
            fail_selection(),
            context=RETRYING,
        )


def test_with_a_deadline_reads_retry_while_time_is_left() -> None:
    context = OperationContext(session=None, deadline=10.0)
    reply = run_flow(
        count_flow(),
        pick(A),
        network_error("count"),
        mark_unknown(),
        now(1.0),
        pick(B, avoiding=(A.address,)),
        network_error("count"),
        mark_unknown(),
        now(2.0),
        pick(A, avoiding=(B.address,)),
        command("count", {"ok": 1, "n": 7}),
        context=context,
    )
    assert reply["n"] == 7
    with pytest.raises(NetworkError):
        run_flow(
            count_flow(),
            pick(A),
            network_error("count"),
            mark_unknown(),
            now(10.0),
            context=context,
        )


# -- writes -----------------------------------------------------------------------------------


class TxnRecorder:
    """Plays the client's part for each RunCommand: ClientSessions.prepare with a real
    session, recording the txnNumber each attempt would carry."""

    def __init__(self) -> None:
        numbers = itertools.count(1)
        self.sessions = ClientSessions(lambda: next(numbers).to_bytes(16, "big"), lambda: 30)
        self.session = Session(object(), implicit=True)
        self.sent: list[Mapping[str, Any]] = []
        self.slots: list[Any] = []

    def __call__(self, request: Any) -> None:
        assert isinstance(request, RunCommand)
        self.slots.append(request.txn)
        self.sent.append(self.sessions.prepare(request, self.session, request.body, 0.0))


def insert_flow(write_concern: Mapping[str, Any] | None = None) -> Any:
    body: dict[str, Any] = {"insert": "c", "ordered": True}
    if write_concern is not None:
        body["writeConcern"] = write_concern
    return crud.insert_one("db", body, {"_id": 1}, 1, acknowledged=write_concern is None)


def test_a_write_batch_is_retried_with_the_same_txn_number() -> None:
    record = TxnRecorder()
    result = run_flow(
        insert_flow(),
        pick(A),
        network_error("insert", check=record),
        mark_unknown(A.address),
        now(),
        pick(B, avoiding=(A.address,)),
        command("insert", {"ok": 1, "n": 1}, address=B.address, check=record),
        context=RETRYING,
    )
    assert result.inserted_id == 1
    first, retry = record.slots
    assert first is not None and first is retry and first.number == 1
    assert [body["txnNumber"] for body in record.sent] == [1, 1]
    assert record.sent[0]["lsid"] == record.sent[1]["lsid"]


def test_a_write_retried_after_a_labelled_server_error() -> None:
    record = TxnRecorder()
    run_flow(
        insert_flow(),
        pick(A),
        command("insert", error_reply(91, RETRYABLE, errmsg="shutting down"), check=record),
        mark_unknown(),
        now(),
        pick(B, avoiding=(A.address,)),
        command("insert", {"ok": 1, "n": 1}, check=record),
        context=RETRYING,
    )
    assert [body["txnNumber"] for body in record.sent] == [1, 1]


def test_a_write_concern_error_with_the_label_is_retried() -> None:
    labelled = {
        "ok": 1,
        "n": 1,
        "writeConcernError": {"code": 91, "errmsg": "shutting down"},
        "errorLabels": [RETRYABLE],
    }
    result = run_flow(
        insert_flow(),
        pick(A),
        command("insert", labelled),
        now(),
        pick(B, avoiding=(A.address,)),
        command("insert", {"ok": 1, "n": 1}),
        context=RETRYING,
    )
    assert result.acknowledged


def test_a_write_is_retried_only_once() -> None:
    with pytest.raises(NetworkError, match="second"):
        run_flow(
            insert_flow(),
            pick(A),
            network_error("insert", "first"),
            mark_unknown(),
            now(),
            pick(B, avoiding=(A.address,)),
            network_error("insert", "second"),
            mark_unknown(),
            now(),
            context=RETRYING,
        )


def test_no_writes_performed_on_the_retry_raises_the_first_error() -> None:
    """Retryable Writes prose test 3's shape: the retry fails with NoWritesPerformed (and the
    retryable label), so the first error is the one raised."""
    with pytest.raises(ServerError) as raised:
        run_flow(
            insert_flow(),
            pick(A),
            command("insert", error_reply(91, RETRYABLE, errmsg="first")),
            mark_unknown(),
            now(),
            pick(B, avoiding=(A.address,)),
            command("insert", error_reply(10107, RETRYABLE, "NoWritesPerformed", errmsg="second")),
            mark_unknown(),
            now(),
            context=RETRYING,
        )
    assert raised.value.code == 91


def test_a_non_retryable_error_on_the_retry_is_raised() -> None:
    with pytest.raises(ServerError) as raised:
        run_flow(
            insert_flow(),
            pick(A),
            network_error("insert"),
            mark_unknown(),
            now(),
            pick(B, avoiding=(A.address,)),
            command("insert", error_reply(2, errmsg="bad value")),
            context=RETRYING,
        )
    assert raised.value.code == 2


def test_a_write_retry_without_a_server_raises_the_first_error() -> None:
    with pytest.raises(NetworkError, match="first"):
        run_flow(
            insert_flow(),
            pick(A),
            network_error("insert", "first"),
            mark_unknown(),
            now(),
            fail_selection(),
            context=RETRYING,
        )


def test_the_retry_needs_a_server_that_supports_retryable_writes() -> None:
    with pytest.raises(NetworkError, match="first"):
        run_flow(
            insert_flow(),
            pick(A),
            network_error("insert", "first"),
            mark_unknown(),
            now(),
            pick(STANDALONE, avoiding=(A.address,)),
            context=RETRYING,
        )


def no_txn(request: Any) -> None:
    assert isinstance(request, RunCommand) and request.txn is None


@pytest.mark.parametrize(
    ("flow", "name"),
    [
        (
            lambda: crud.update(
                "db", {"update": "c"}, {"q": {}, "u": {"$set": {"x": 1}}, "multi": True}
            ),
            "update",
        ),
        (lambda: crud.delete("db", {"delete": "c"}, {"q": {}, "limit": 0}), "delete"),
        (lambda: insert_flow({"w": 0}), "insert"),
    ],
    ids=["updateMany", "deleteMany", "w0"],
)
def test_multi_statement_and_unacknowledged_writes_are_not_retried(flow: Any, name: str) -> None:
    with pytest.raises(NetworkError):
        run_flow(
            flow(),
            pick(A),
            network_error(name, check=no_txn),
            mark_unknown(),
            context=RETRYING,
        )


@pytest.mark.parametrize(
    ("server", "context"),
    [
        (A, OperationContext(session=None, retry_writes=False)),
        (STANDALONE, RETRYING),
    ],
    ids=["retryWrites=false", "standalone"],
)
def test_writes_not_retried_without_retry_writes_or_support(
    server: ServerInfo, context: OperationContext
) -> None:
    with pytest.raises(NetworkError):
        run_flow(
            insert_flow(),
            pick(server),
            network_error("insert", check=no_txn),
            mark_unknown(),
            context=context,
        )


def test_no_write_retry_inside_a_transaction() -> None:
    session = Session(object(), implicit=False)
    session.start_transaction(TransactionOptions())
    with pytest.raises(NetworkError):
        run_flow(
            insert_flow(),
            pick(A),
            network_error("insert", check=no_txn),
            mark_unknown(),
            context=OperationContext(session=session),
        )


def test_code_20_is_raised_with_the_specs_advice() -> None:
    reply = error_reply(
        20, errmsg="Transaction numbers are only allowed on a replica set member or mongos"
    )
    with pytest.raises(ServerError, match="Please add retryWrites=false"):
        run_flow(insert_flow(), pick(A), command("insert", reply), context=RETRYING)


# -- commit and abort -------------------------------------------------------------------------


def in_progress(write_concern: Any = None, max_commit_time_ms: int | None = None) -> Session:
    session = Session(object(), implicit=False)
    session.start_transaction(
        TransactionOptions(write_concern=write_concern, max_commit_time_ms=max_commit_time_ms)
    )
    session.operation_sent()
    return session


def commit(
    body: Mapping[str, Any] | None = None,
    reply: Mapping[str, Any] | None = None,
    error: BaseException | None = None,
) -> Step:
    return command("commitTransaction", reply, db="admin", body=body, error=error)


def test_commit_is_retried_once_with_majority_and_wtimeout() -> None:
    session = in_progress()
    run_flow(
        commit_transaction(session),
        pick(A),
        commit({"writeConcern": ABSENT, "maxTimeMS": ABSENT}, error=NetworkError("reset")),
        mark_unknown(),
        now(),
        pick(A),
        commit({"writeConcern": {"w": "majority", "wtimeout": 10_000}}),
        context=RETRYING,
    )
    assert session.transaction_state.value == "committed"


def test_commit_retry_keeps_the_transactions_wtimeout_and_max_commit_time() -> None:
    session = in_progress({"w": 2, "wtimeout": 500}, max_commit_time_ms=70)
    run_flow(
        commit_transaction(session),
        pick(A),
        commit(
            {"writeConcern": {"w": 2, "wtimeout": 500}, "maxTimeMS": 70}, error=NetworkError("x")
        ),
        mark_unknown(),
        now(),
        pick(A),
        commit({"writeConcern": {"w": "majority", "wtimeout": 500}, "maxTimeMS": 70}),
        context=RETRYING,
    )


def test_a_second_commit_by_the_user_asks_for_majority() -> None:
    session = in_progress({"w": 1})
    run_flow(commit_transaction(session), pick(A), commit({"writeConcern": {"w": 1}}))
    run_flow(
        commit_transaction(session),
        pick(A),
        commit({"writeConcern": {"w": "majority", "wtimeout": 10_000}}),
        context=RETRYING,
    )


def test_commit_failing_twice_has_an_unknown_result() -> None:
    session = in_progress()
    with pytest.raises(NetworkError) as raised:
        run_flow(
            commit_transaction(session),
            pick(A),
            commit(error=NetworkError("first")),
            mark_unknown(),
            now(),
            pick(A),
            commit(error=NetworkError("second")),
            mark_unknown(),
            now(),
            context=RETRYING,
        )
    assert raised.value.has_error_label(UNKNOWN)
    assert not raised.value.has_error_label(TRANSIENT)
    assert str(raised.value) == "second"


def test_commit_and_abort_are_retried_even_with_retry_writes_false() -> None:
    """The Transactions spec's retryable-commit / retryable-abort tests run on a client with
    retryWrites=false and expect the one retry."""
    no_retry_writes = OperationContext(session=None, retry_writes=False)
    with pytest.raises(NetworkError) as raised:
        run_flow(
            commit_transaction(in_progress()),
            pick(A),
            commit(error=NetworkError("first")),
            mark_unknown(),
            now(),
            pick(A),
            commit({"writeConcern": {"w": "majority"}}, error=NetworkError("second")),
            mark_unknown(),
            now(),
            context=no_retry_writes,
        )
    assert raised.value.has_error_label(UNKNOWN) and raised.value.has_error_label(RETRYABLE)
    run_flow(
        abort_transaction(in_progress()),
        pick(A),
        abort(NetworkError("first")),
        mark_unknown(),
        now(),
        pick(A),
        abort(),
        context=no_retry_writes,
    )


@pytest.mark.parametrize(
    ("concern_code", "unknown"),
    [(64, True), (91, True), (79, False), (100, False)],
    ids=["WriteConcernFailed", "ShutdownInProgress", "UnknownReplWriteConcern", "Unsatisfiable"],
)
def test_commit_write_concern_errors(concern_code: int, unknown: bool) -> None:
    reply = {"ok": 1, "writeConcernError": {"code": concern_code, "errmsg": "wc"}}
    steps = [pick(A), commit(reply=reply)]
    with pytest.raises(WriteConcernError) as raised:
        run_flow(
            commit_transaction(in_progress()),
            *steps,
            context=OperationContext(None, retry_writes=False),
        )
    assert raised.value.has_error_label(UNKNOWN) is unknown
    assert raised.value.code == concern_code


def test_commit_max_time_expired_has_an_unknown_result() -> None:
    with pytest.raises(ServerError) as raised:
        run_flow(
            commit_transaction(in_progress()),
            pick(A),
            commit(reply=error_reply(50, errmsg="operation exceeded time limit")),
            context=RETRYING,
        )
    assert raised.value.has_error_label(UNKNOWN)
    assert after_commit_error(raised.value, 1.0) is Next.RAISE  # not committed again


def test_commit_server_selection_failure_has_an_unknown_result() -> None:
    with pytest.raises(ServerSelectionTimeoutError) as raised:
        run_flow(commit_transaction(in_progress()), fail_selection(), context=RETRYING)
    assert raised.value.has_error_label(UNKNOWN)


def test_commit_of_an_aborted_transaction_on_the_server_is_transient_not_unknown() -> None:
    reply = error_reply(251, TRANSIENT, errmsg="no such transaction", name="NoSuchTransaction")
    with pytest.raises(ServerError) as raised:
        run_flow(commit_transaction(in_progress()), pick(A), commit(reply=reply), context=RETRYING)
    assert raised.value.has_error_label(TRANSIENT)
    assert not raised.value.has_error_label(UNKNOWN)


def test_a_transaction_that_sent_nothing_commits_and_aborts_without_a_word() -> None:
    session = Session(object(), implicit=False)
    session.start_transaction(TransactionOptions())
    run_flow(commit_transaction(session), context=RETRYING)
    assert session.transaction_state.value == "committed_empty"
    run_flow(commit_transaction(session), context=RETRYING)  # again: still nothing
    session.start_transaction(TransactionOptions())
    run_flow(abort_transaction(session), context=RETRYING)
    assert session.transaction_state.value == "aborted"


def abort(error: BaseException | None = None, reply: Mapping[str, Any] | None = None) -> Step:
    return command("abortTransaction", reply, db="admin", error=error)


def test_abort_is_retried_once_and_its_errors_are_swallowed() -> None:
    session = in_progress({"w": 1})
    run_flow(
        abort_transaction(session),
        pick(A),
        Step(
            RunCommand,
            "abortTransaction",
            "admin",
            {"writeConcern": {"w": 1}},
            error=NetworkError("first"),
        ),
        mark_unknown(),
        now(),
        pick(A),
        abort(NetworkError("second")),
        mark_unknown(),
        now(),
        context=RETRYING,
    )
    assert session.transaction_state.value == "aborted"


def test_abort_server_errors_are_swallowed_without_retry() -> None:
    run_flow(
        abort_transaction(in_progress()),
        pick(A),
        abort(reply=error_reply(251, errmsg="no such transaction")),
        context=RETRYING,
    )


# -- with_transaction's decisions ----------------------------------------------------------


def labelled(*labels: str, code: int = 2) -> MongoError:
    return ServerError("failed", code=code, error_labels=labels)


def test_after_callback_error() -> None:
    assert after_callback_error(labelled(TRANSIENT), 1.0) is Next.RETRY_TRANSACTION
    assert after_callback_error(labelled(TRANSIENT), WITH_TRANSACTION_TIMEOUT) is Next.RAISE
    assert after_callback_error(labelled(), 1.0) is Next.RAISE
    assert after_callback_error(ValueError("user's"), 1.0) is Next.RAISE
    assert WITH_TRANSACTION_TIMEOUT == 120.0


def test_after_commit_error() -> None:
    assert after_commit_error(labelled(UNKNOWN), 1.0) is Next.RETRY_COMMIT
    assert after_commit_error(labelled(UNKNOWN, code=50), 1.0) is Next.RAISE
    timeout_concern = WriteConcernError("wc", code=50, error_labels=[UNKNOWN])
    assert after_commit_error(timeout_concern, 1.0) is Next.RAISE
    assert after_commit_error(labelled(TRANSIENT), 1.0) is Next.RETRY_TRANSACTION
    assert after_commit_error(labelled(UNKNOWN), WITH_TRANSACTION_TIMEOUT + 1) is Next.RAISE
    assert after_commit_error(labelled(), 1.0) is Next.RAISE
    assert after_commit_error(RuntimeError("x"), 1.0) is Next.RAISE
