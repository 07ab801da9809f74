"""Scripted flows (no sockets) for the client-side operations timeout and transaction rules:
no wtimeout on a transaction's end under a timeoutMS, maxAwaitTimeMS refused when it is not
below the time left, a non-primary read preference of a command refused in a transaction,
w:0 refused for a transaction and ignored inside one."""

from __future__ import annotations

from typing import Any

import pytest
from flow_script import ABSENT, Step, command, run_flow, select

from mongo_sansio.cursors.cursor import check_max_await
from mongo_sansio.errors import ConfigurationError, InvalidOperation, NetworkError
from mongo_sansio.flow import MarkServerUnknown, Now, OperationContext, ServerInfo
from mongo_sansio.ops import crud
from mongo_sansio.ops.database import DatabaseOps
from mongo_sansio.ops.transactions import commit_transaction
from mongo_sansio.selection.read_preference import Mode, ReadPreference
from mongo_sansio.sessions import Session, TransactionOptions

A = ServerInfo(("a", 27017), max_wire_version=21, supports_retryable_writes=True)


def in_progress(write_concern: Any = None) -> Session:
    session = Session(object(), implicit=False)
    session.start_transaction(TransactionOptions(write_concern=write_concern))
    session.operation_sent()
    return session


def timed(session: Any = None, deadline: float = 10.0) -> OperationContext:
    return OperationContext(session=session, deadline=deadline)


def now(seconds: float) -> Step:
    return Step(Now, reply=seconds)


# -- transaction ends under timeoutMS ---------------------------------------------------------


def test_a_commit_under_timeout_ms_sends_no_wtimeout_even_on_its_majority_retry() -> None:
    session = in_progress({"w": 2, "wtimeout": 500})
    run_flow(
        commit_transaction(session),
        select(A),
        command(
            "commitTransaction",
            db="admin",
            body={"writeConcern": {"w": 2, "wtimeout": ABSENT}},
            error=NetworkError("reset"),
        ),
        Step(MarkServerUnknown),
        now(1.0),  # the retry is decided with the clock: time is left before the deadline
        select(A),
        command(
            "commitTransaction",
            db="admin",
            body={"writeConcern": {"w": "majority", "wtimeout": ABSENT}},
        ),
        context=timed(),
    )


def test_a_commit_whose_write_concern_is_only_a_wtimeout_sends_none_under_timeout_ms() -> None:
    session = in_progress({"wtimeout": 1})
    run_flow(
        commit_transaction(session),
        select(A),
        command("commitTransaction", db="admin", body={"writeConcern": ABSENT}),
        context=timed(),
    )


# -- maxAwaitTimeMS against the time left -----------------------------------------------------


# 4 ms left (9.996 s of a 10 s deadline): 4 ms or more cannot be waited
@pytest.mark.parametrize("max_await_ms", [4, 5])
def test_max_await_not_below_the_time_left_is_refused_before_anything_is_sent(
    max_await_ms: int,
) -> None:
    with pytest.raises(InvalidOperation, match="maxAwaitTimeMS"):
        run_flow(check_max_await(max_await_ms), now(9.996), context=timed(deadline=10.0))


def test_max_await_below_the_time_left_or_without_a_deadline_is_accepted() -> None:
    run_flow(check_max_await(4), now(9.995), context=timed(deadline=10.0))
    run_flow(check_max_await(10_000))  # no deadline: nothing asked
    run_flow(check_max_await(None), context=timed())


# -- read preference of a command in a transaction ---------------------------------------------


def test_a_command_asking_for_a_secondary_in_a_transaction_is_refused() -> None:
    flow = DatabaseOps("db").command("ping", read_preference=ReadPreference(mode=Mode.SECONDARY))
    with pytest.raises(InvalidOperation, match="must be primary"):
        run_flow(flow, context=OperationContext(session=in_progress()))


def test_a_command_asking_for_a_secondary_outside_a_transaction_runs() -> None:
    secondary = ReadPreference(mode=Mode.SECONDARY)
    reply = run_flow(
        DatabaseOps("db").command("ping", read_preference=secondary),
        select(A),
        command("ping", {"ok": 1}),
    )
    assert reply == {"ok": 1}


# -- w:0 and transactions ------------------------------------------------------------------------


@pytest.mark.parametrize("concern", [{"w": 0}, {"w": 0, "j": False}])
def test_a_transaction_with_an_unacknowledged_write_concern_is_refused(concern: Any) -> None:
    session = Session(object(), implicit=False)
    with pytest.raises(ConfigurationError, match="unacknowledged write concern"):
        session.start_transaction(TransactionOptions(write_concern=concern))
    assert not session.in_transaction


def test_a_w0_delete_inside_a_transaction_is_acknowledged() -> None:
    body = {"delete": "c", "ordered": True, "writeConcern": {"w": 0}}
    result = run_flow(
        crud.delete("db", body, {"q": {}, "limit": 1}, acknowledged=False),
        select(A),
        command("delete", {"ok": 1, "n": 1}),
        context=OperationContext(session=in_progress(), retry_writes=False),
    )
    assert result.acknowledged and result.deleted_count == 1


def test_a_w0_delete_outside_a_transaction_is_not_acknowledged() -> None:
    body = {"delete": "c", "ordered": True, "writeConcern": {"w": 0}}
    result = run_flow(
        crud.delete("db", body, {"q": {}, "limit": 1}, acknowledged=False),
        select(A),
        command("delete", {"ok": 1, "n": 1}),
    )
    assert not result.acknowledged
