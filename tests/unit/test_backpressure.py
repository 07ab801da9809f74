"""Client backpressure (no sockets, no sleeps): the pure rules of mongo_sansio.backpressure fed
errors, jitter draws and times, then scripted retry flows (reads, writes, commit and abort, a
transaction's first command) checking the Random / Sleep / SelectServer requests they make."""

from __future__ import annotations

import math
from typing import Any, cast

import pytest
from flow_script import Step, command, error_reply, mark_unknown, network_error, run_flow

from mongo_sansio.backpressure import (
    BASE_BACKOFF,
    MAX_BACKOFF,
    MAX_RETRIES,
    Retry,
    RetryLedger,
    backoff,
    is_overload_error,
    is_retryable_overload_error,
    label_establishment_error,
    server_base_backoff,
)
from mongo_sansio.errors import (
    ConnectionSetupError,
    MongoError,
    NetworkError,
    NetworkTimeout,
    ServerError,
)
from mongo_sansio.flow import Now, OperationContext, Random, SelectServer, ServerInfo, Sleep
from mongo_sansio.ops import crud
from mongo_sansio.ops.transactions import abort_transaction, commit_transaction
from mongo_sansio.sessions import Session, TransactionOptions
from mongo_sansio.sessions.transaction import TransactionState

OVERLOAD = ("SystemOverloadedError", "RetryableError")


def overloaded(code: int = 462, *labels: str, **details: Any) -> ServerError:
    every = [*OVERLOAD, *labels]
    reply: dict[str, Any] = {"ok": 0, "code": code, "errmsg": "rate exceeded", "errorLabels": every}
    reply.update(details)
    return ServerError("rate exceeded", code=code, details=reply, error_labels=every)


def plain(code: int = 91, *labels: str) -> ServerError:
    return ServerError("shutting down", code=code, error_labels=labels)


# -- labels and backoff -------------------------------------------------------------------------


def test_overload_needs_its_label_and_retryable_overload_both() -> None:
    assert is_overload_error(overloaded()) and is_retryable_overload_error(overloaded())
    only_overload = plain(462, "SystemOverloadedError")
    assert is_overload_error(only_overload) and not is_retryable_overload_error(only_overload)
    only_retryable = plain(462, "RetryableError")
    assert not is_overload_error(only_retryable)
    assert not is_retryable_overload_error(only_retryable)
    assert not is_overload_error(ValueError("not ours"))


@pytest.mark.parametrize(
    ("attempt", "jitter", "expected"),
    [
        (1, 1.0, 0.2),  # the spec's formula: the exponent is the attempt number
        (2, 1.0, 0.4),
        (1, 0.5, 0.1),  # "delays of 100ms and 200ms after accounting for the average jitter"
        (2, 0.5, 0.2),
        (1, 0.0, 0.0),
        (7, 1.0, MAX_BACKOFF),  # 0.1 * 128 = 12.8 s, capped at 10 s
        (10_000, 0.25, MAX_BACKOFF / 4),
    ],
)
def test_backoff(attempt: int, jitter: float, expected: float) -> None:
    assert backoff(attempt, jitter) == pytest.approx(expected)


def test_backoff_with_the_servers_base_and_bad_inputs() -> None:
    assert backoff(1, 1.0, base=0.05) == pytest.approx(0.1)
    assert backoff(2, 1.0, base=0.05) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="attempt"):
        backoff(0, 0.5)
    with pytest.raises(ValueError, match="jitter"):
        backoff(1, 1.5)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(50, 0.05), (12.5, 0.0125), (0, None), (-3, None), (True, None), ("50", None),
     (math.nan, None), (math.inf, None)],
)
def test_server_base_backoff(value: Any, expected: float | None) -> None:
    assert server_base_backoff(overloaded(baseBackoffMS=value)) == expected
    assert server_base_backoff(overloaded()) is None
    assert server_base_backoff(NetworkError("reset")) is None


# -- the ledger -----------------------------------------------------------------------------------


def after(seconds: float) -> Retry:
    """A retry after about ``seconds``, not deprioritizing."""
    return Retry(delay=cast(float, pytest.approx(seconds)))


def decide(ledger: RetryLedger, error: BaseException, **kwargs: Any) -> Retry | None:
    arguments: dict[str, Any] = {"retryable": False, "overload_retry_enabled": True, "jitter": 1.0}
    arguments.update(kwargs)
    return ledger.after_failure(error, **arguments)


def test_overload_errors_are_retried_max_retries_times_with_growing_backoff() -> None:
    ledger = RetryLedger()
    delays = [decide(ledger, overloaded()) for _ in range(MAX_RETRIES + 1)]
    assert delays[:-1] == [after(0.2), after(0.4)]
    assert delays[-1] is None  # three attempts in all (prose test 3)


@pytest.mark.parametrize("max_adaptive_retries", [0, 1, 5])
def test_max_adaptive_retries(max_adaptive_retries: int) -> None:
    ledger = RetryLedger(max_adaptive_retries=max_adaptive_retries)
    retries = 0
    while decide(ledger, overloaded(), jitter=0.0) is not None:
        retries += 1
    assert retries == max_adaptive_retries


def test_overload_retries_need_the_setting_and_both_labels() -> None:
    assert decide(RetryLedger(), overloaded(), overload_retry_enabled=False) is None
    assert decide(RetryLedger(), plain(462, "SystemOverloadedError")) is None
    assert decide(RetryLedger(), plain(91)) is None


def test_an_overload_error_the_ordinary_rules_retry_gets_backoff_and_the_cap() -> None:
    """SystemOverloadedError without RetryableError, on an error retryable anyway (a network
    error, a RetryableWriteError): backoff applies, and the cap becomes maxAdaptiveRetries."""
    error = plain(91, "SystemOverloadedError", "RetryableWriteError")
    ledger = RetryLedger()
    first = decide(ledger, error, retryable=True, overload_retry_enabled=False, jitter=0.5)
    assert first == after(0.1)
    assert decide(ledger, error, retryable=True, jitter=0.5) == after(0.2)
    assert decide(ledger, error, retryable=True) is None


def test_non_overload_errors_retry_once_without_backoff() -> None:
    ledger = RetryLedger()
    assert decide(ledger, plain(), retryable=True) == Retry(delay=0.0)
    assert decide(ledger, plain(), retryable=True) is None


def test_an_overload_error_raises_the_limit_for_every_later_error() -> None:
    """Prose tests 4 and 5 of retryable reads / writes: an overload error, then retryable
    non-overload errors: MAX_RETRIES retries in all, backoff only after the overload one."""
    ledger = RetryLedger()
    assert decide(ledger, overloaded(91)) == after(0.2)
    assert decide(ledger, plain(91, "RetryableError"), retryable=True) == Retry(delay=0.0)
    assert decide(ledger, plain(91, "RetryableError"), retryable=True) is None
    assert ledger.retries == 3 and ledger.overloaded


def test_with_a_timeout_ordinary_errors_retry_while_time_is_left() -> None:
    ledger = RetryLedger(timeout=True)
    for now in (1.0, 2.0, 3.0, 4.0):
        assert decide(ledger, plain(), retryable=True, now=now, deadline=5.0) == Retry()
    assert decide(ledger, plain(), retryable=True, now=5.0, deadline=5.0) is None


def test_with_a_timeout_overload_errors_are_capped_and_the_wait_must_fit() -> None:
    ledger = RetryLedger(timeout=True)
    assert decide(ledger, overloaded(), now=0.0, deadline=10.0) is not None
    assert decide(ledger, overloaded(), now=0.0, deadline=10.0) is not None
    assert decide(ledger, overloaded(), now=0.0, deadline=10.0) is None  # MAX_RETRIES reached
    short = RetryLedger(timeout=True)
    # 0.2 s of backoff would end after the deadline: raise now instead of sleeping in vain
    assert decide(short, overloaded(), now=9.9, deadline=10.0) is None
    assert decide(RetryLedger(timeout=True), overloaded(), now=9.9, deadline=10.0, jitter=0.4)


def test_deprioritization() -> None:
    assert decide(RetryLedger(), plain(), retryable=True, sharded=True) == Retry(
        deprioritize=True
    )
    assert decide(RetryLedger(), plain(), retryable=True) == Retry(deprioritize=False)
    assert not decide(RetryLedger(), overloaded(), jitter=0.0).deprioritize  # type: ignore[union-attr]
    retargeting = RetryLedger(retargeting=True)
    assert decide(retargeting, overloaded(), jitter=0.0) == Retry(deprioritize=True)
    assert decide(RetryLedger(retargeting=True), plain(), retryable=True) == Retry()


def test_the_servers_base_backoff_replaces_the_default() -> None:
    ledger = RetryLedger()
    assert decide(ledger, overloaded(baseBackoffMS=50)) == after(0.1)
    assert decide(ledger, overloaded()) == after(4 * BASE_BACKOFF)


# -- connection establishment ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "authenticating", "labelled"),
    [
        (NetworkError("connection refused"), False, True),
        (NetworkTimeout("connect: timed out"), False, True),
        (NetworkError("closed during hello"), False, True),
        (NetworkError("closed during SASL"), True, False),
        (ConnectionSetupError("cannot resolve nowhere.invalid"), False, False),
        (ServerError("hello failed", code=8000), False, False),
    ],
)
def test_establishment_errors(error: MongoError, authenticating: bool, labelled: bool) -> None:
    label_establishment_error(error, authenticating=authenticating)
    assert is_retryable_overload_error(error) is labelled


# -- flows --------------------------------------------------------------------------------------

PRIMARY = ServerInfo(("p", 27017), max_wire_version=25, supports_retryable_writes=True)
SECONDARY = ServerInfo(("s", 27017), max_wire_version=25, supports_retryable_writes=True)
CONTEXT = OperationContext(session=None)


def pick(server: ServerInfo, avoiding: tuple[tuple[str, int], ...] = ()) -> Step:
    def check(request: Any) -> None:
        assert request.deprioritized == avoiding

    return Step(SelectServer, reply=server, check=check)


def draw(value: float) -> Step:
    return Step(Random, reply=value)


def sleep(seconds: float) -> Step:
    def check(request: Any) -> None:
        assert request.seconds == pytest.approx(seconds)

    return Step(Sleep, check=check)


def now(seconds: float = 0.0) -> Step:
    return Step(Now, reply=seconds)


def overload_reply(code: int = 462) -> dict[str, Any]:
    return error_reply(code, *OVERLOAD, errmsg="rate exceeded")


def count_flow() -> Any:
    return crud.read_command("db", {"count": "c"})


def test_a_read_is_retried_after_backoff_on_the_same_server() -> None:
    reply = run_flow(
        count_flow(),
        pick(PRIMARY),
        command("count", overload_reply()),
        draw(0.5),
        now(),
        sleep(0.1),
        pick(PRIMARY),  # replica set, retargeting off: not deprioritized
        command("count", overload_reply()),
        draw(1.0),
        now(),
        sleep(0.4),
        pick(PRIMARY),
        command("count", {"ok": 1, "n": 2}),
        context=CONTEXT,
    )
    assert reply["n"] == 2


def test_a_read_gives_up_after_max_adaptive_retries_and_keeps_the_labels() -> None:
    context = OperationContext(session=None, max_adaptive_retries=1)
    with pytest.raises(ServerError) as raised:
        run_flow(
            count_flow(),
            pick(PRIMARY),
            command("count", overload_reply()),
            draw(0.0),
            now(),
            pick(PRIMARY),
            command("count", overload_reply()),
            draw(0.0),
            now(),
            context=context,
        )
    assert raised.value.has_error_label("SystemOverloadedError")
    assert raised.value.has_error_label("RetryableError")


def test_retargeting_deprioritizes_the_overloaded_server() -> None:
    context = OperationContext(session=None, overload_retargeting=True)
    run_flow(
        count_flow(),
        pick(PRIMARY),
        command("count", overload_reply()),
        draw(0.0),
        now(),
        pick(SECONDARY, avoiding=(PRIMARY.address,)),
        command("count", {"ok": 1, "n": 0}),
        context=context,
    )


def test_no_overload_retry_when_retry_reads_is_false() -> None:
    context = OperationContext(session=None, retry_reads=False)
    with pytest.raises(ServerError):
        run_flow(count_flow(), pick(PRIMARY), command("count", overload_reply()), context=context)


def test_a_multi_document_update_is_retried_on_overload_without_a_txn_number() -> None:
    def no_txn(request: Any) -> None:
        assert request.txn is None

    flow = crud.update("db", {"update": "c"}, {"q": {}, "u": {"$set": {"a": 1}}, "multi": True})
    run_flow(
        flow,
        pick(PRIMARY),
        command("update", overload_reply(), check=no_txn),
        draw(0.0),
        now(),
        pick(PRIMARY),
        command("update", {"ok": 1, "n": 3, "nModified": 3}, check=no_txn),
        context=CONTEXT,
    )
    no_writes = OperationContext(session=None, retry_writes=False)
    flow = crud.update("db", {"update": "c"}, {"q": {}, "u": {"$set": {"a": 1}}, "multi": True})
    with pytest.raises(ServerError):
        run_flow(flow, pick(PRIMARY), command("update", overload_reply()), context=no_writes)


def test_a_retryable_write_keeps_its_txn_number_across_overload_retries() -> None:
    slots: list[Any] = []

    def remember(request: Any) -> None:
        slots.append(request.txn)

    run_flow(
        crud.insert_one("db", {"insert": "c"}, {"_id": 1}, 1),
        pick(PRIMARY),
        command("insert", overload_reply(), check=remember),
        draw(0.0),
        now(),
        pick(PRIMARY),
        network_error("insert", check=remember),
        mark_unknown(),
        now(),
        pick(PRIMARY),
        command("insert", {"ok": 1, "n": 1}, check=remember),
        context=CONTEXT,
    )
    assert slots[0] is not None and all(slot is slots[0] for slot in slots)


def test_a_transactions_first_command_is_retried_with_start_transaction() -> None:
    session = Session(object(), implicit=False)
    session.start_transaction(TransactionOptions())
    states: list[TransactionState] = []

    def sent(request: Any) -> None:  # what the client's session bookkeeping does on sending
        states.append(session.transaction_state)
        session.operation_sent()

    run_flow(
        crud.insert_one("db", {"insert": "c"}, {"_id": 1}, 1),
        pick(PRIMARY),
        command("insert", overload_reply(112), check=sent),
        draw(0.0),
        now(),
        pick(PRIMARY),
        command("insert", {"ok": 1, "n": 1}, check=sent),
        context=OperationContext(session=session),
    )
    assert states == [TransactionState.STARTING, TransactionState.STARTING]
    assert session.transaction_state is TransactionState.IN_PROGRESS


def in_progress() -> Session:
    session = Session(object(), implicit=False)
    session.start_transaction(TransactionOptions())
    session.operation_sent()
    return session


def commit(body: Any = None, reply: Any = None, error: Any = None) -> Step:
    return command("commitTransaction", reply, db="admin", body=body, error=error)


def test_commit_retries_overload_errors_with_the_same_write_concern() -> None:
    from flow_script import ABSENT

    run_flow(
        commit_transaction(in_progress()),
        pick(PRIMARY),
        commit({"writeConcern": ABSENT}, overload_reply(112)),
        draw(1.0),
        now(),
        sleep(0.2),
        pick(PRIMARY),
        commit({"writeConcern": ABSENT}, overload_reply(112)),
        draw(1.0),
        now(),
        sleep(0.4),
        pick(PRIMARY),
        commit({"writeConcern": ABSENT}),
        context=CONTEXT,
    )


def test_commit_after_a_non_overload_failure_asks_for_majority() -> None:
    run_flow(
        commit_transaction(in_progress()),
        pick(PRIMARY),
        commit(error=NetworkError("reset")),
        mark_unknown(),
        now(),
        pick(PRIMARY),
        commit({"writeConcern": {"w": "majority"}}, overload_reply(112)),
        draw(0.0),
        now(),
        pick(PRIMARY),
        commit({"writeConcern": {"w": "majority", "wtimeout": 10_000}}),
        context=CONTEXT,
    )


def test_abort_retries_overload_errors_then_swallows_the_last() -> None:
    def abort(reply: Any) -> Step:
        return command("abortTransaction", reply, db="admin")

    session = in_progress()
    run_flow(
        abort_transaction(session),
        pick(PRIMARY),
        abort(overload_reply(112)),
        draw(0.0),
        now(),
        pick(PRIMARY),
        abort(overload_reply(112)),
        draw(0.0),
        now(),
        pick(PRIMARY),
        abort(overload_reply(112)),
        draw(0.0),
        now(),
        context=CONTEXT,
    )
    assert session.transaction_state is TransactionState.ABORTED


def test_a_run_command_is_retried_on_overload_only_with_both_retry_settings() -> None:
    run_flow(
        crud.database_command("admin", {"ping": 1}),
        pick(PRIMARY),
        command("ping", overload_reply()),
        draw(0.0),
        now(),
        pick(PRIMARY),
        command("ping"),
        context=CONTEXT,
    )
    for context in (
        OperationContext(session=None, retry_reads=False),
        OperationContext(session=None, retry_writes=False),
    ):
        with pytest.raises(ServerError):
            run_flow(
                crud.database_command("admin", {"ping": 1}),
                pick(PRIMARY),
                command("ping", overload_reply()),
                context=context,
            )
    # an error that is not an overload error is not retried (runCommand is no retryable read)
    with pytest.raises(ServerError):
        run_flow(
            crud.database_command("admin", {"ping": 1}),
            pick(PRIMARY),
            command("ping", error_reply(11600, "RetryableError")),
            mark_unknown(),
            context=CONTEXT,
        )


def test_a_create_is_retried_on_overload() -> None:
    run_flow(
        crud.write_command("db", {"create": "c"}),
        pick(PRIMARY),
        command("create", overload_reply()),
        draw(0.0),
        now(),
        pick(PRIMARY),
        command("create"),
        context=CONTEXT,
    )


def test_a_get_more_is_retried_on_overload_on_its_cursors_server() -> None:
    from flow_script import cursor_reply

    from mongo_sansio.cursors.cursor import Cursor, cursor_next

    cursor = Cursor.from_reply(cursor_reply([], cursor_id=7), SECONDARY)
    document = run_flow(
        cursor_next(cursor),
        command("getMore", overload_reply(), address=SECONDARY.address),
        draw(0.5),
        now(),
        sleep(0.1),
        command("getMore", cursor_reply([{"_id": 2}], first=False), address=SECONDARY.address),
        context=CONTEXT,
    )
    assert document == {"_id": 2}
