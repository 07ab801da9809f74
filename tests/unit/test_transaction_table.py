"""The transaction state table (Transactions spec, "Client Session changes"): every state and
event, the messages PyMongo raises for the forbidden ones, which commits and aborts talk to the
server, and the Session methods built on the table (transaction numbers, snapshot sessions,
TransactionOptions)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.client.sessions import ClientSessions
from mongo_sansio.errors import ConfigurationError, InvalidOperation
from mongo_sansio.sessions import Session, SessionOptions, TransactionOptions, TransactionState
from mongo_sansio.sessions.transaction import (
    ABORT,
    COMMIT,
    OPERATION,
    START,
    next_state,
    sends_command,
)

S = TransactionState
EVENTS = (START, OPERATION, COMMIT, ABORT)

# (state, event) -> next state, or the message of the InvalidOperation (PyMongo's wording)
EXPECTED: dict[tuple[TransactionState, str], TransactionState | str] = {
    (S.NONE, START): S.STARTING,
    (S.NONE, OPERATION): S.NONE,
    (S.NONE, COMMIT): "No transaction started",
    (S.NONE, ABORT): "No transaction started",
    (S.STARTING, START): "Transaction already in progress",
    (S.STARTING, OPERATION): S.IN_PROGRESS,
    (S.STARTING, COMMIT): S.COMMITTED_EMPTY,
    (S.STARTING, ABORT): S.ABORTED,
    (S.IN_PROGRESS, START): "Transaction already in progress",
    (S.IN_PROGRESS, OPERATION): S.IN_PROGRESS,
    (S.IN_PROGRESS, COMMIT): S.COMMITTED,
    (S.IN_PROGRESS, ABORT): S.ABORTED,
    (S.COMMITTED, START): S.STARTING,
    (S.COMMITTED, OPERATION): S.NONE,
    (S.COMMITTED, COMMIT): S.COMMITTED,
    (S.COMMITTED, ABORT): "Cannot call abortTransaction after calling commitTransaction",
    (S.COMMITTED_EMPTY, START): S.STARTING,
    (S.COMMITTED_EMPTY, OPERATION): S.NONE,
    (S.COMMITTED_EMPTY, COMMIT): S.COMMITTED_EMPTY,
    (S.COMMITTED_EMPTY, ABORT): "Cannot call abortTransaction after calling commitTransaction",
    (S.ABORTED, START): S.STARTING,
    (S.ABORTED, OPERATION): S.NONE,
    (S.ABORTED, COMMIT): "Cannot call commitTransaction after calling abortTransaction",
    (S.ABORTED, ABORT): "Cannot call abortTransaction twice",
}


def test_the_table_covers_every_state_and_event() -> None:
    assert set(EXPECTED) == set(itertools.product(S, EVENTS))


@pytest.mark.parametrize(("state", "event"), list(itertools.product(S, EVENTS)))
def test_each_transition(state: TransactionState, event: str) -> None:
    outcome = EXPECTED[(state, event)]
    if isinstance(outcome, str):
        with pytest.raises(InvalidOperation) as raised:
            next_state(state, event)
        assert str(raised.value) == outcome
    else:
        assert next_state(state, event) is outcome


def test_only_a_transaction_that_sent_something_talks_to_the_server() -> None:
    assert {state for state in S if sends_command(state)} == {S.IN_PROGRESS, S.COMMITTED}


@given(st.lists(st.sampled_from(EVENTS), max_size=30))
def test_session_follows_the_table(events: list[str]) -> None:
    """A Session driven by any sequence of events is where the table says; a refused event
    leaves its state unchanged; in_transaction is exactly STARTING or IN_PROGRESS."""
    session = Session(object(), implicit=False)
    actions = {
        START: lambda: session.start_transaction(TransactionOptions()),
        OPERATION: session.operation_sent,
        COMMIT: session.commit,
        ABORT: session.abort,
    }
    for event in events:
        before = session.transaction_state
        outcome = EXPECTED[(before, event)]
        if isinstance(outcome, str):
            with pytest.raises(InvalidOperation, match=outcome):
                actions[event]()
            assert session.transaction_state is before
        else:
            actions[event]()
            assert session.transaction_state is outcome
        assert session.in_transaction == (session.transaction_state in (S.STARTING, S.IN_PROGRESS))


# -- transaction numbers ----------------------------------------------------------------------


def bound_session(**options: object) -> tuple[ClientSessions, Session]:
    numbers = itertools.count(1)
    sessions = ClientSessions(lambda: next(numbers).to_bytes(16, "big"), lambda: 30)
    session = Session(object(), implicit=False, **options)  # type: ignore[arg-type]
    return sessions, session


def test_each_transaction_takes_the_next_txn_number() -> None:
    sessions, session = bound_session()
    sessions.bind(session, 0.0)
    assert session.txn_number == 0
    session.start_transaction(TransactionOptions())
    assert session.txn_number == 1
    session.abort()
    session.start_transaction(TransactionOptions())
    assert session.txn_number == 2


def test_a_transaction_started_before_binding_takes_its_number_at_binding() -> None:
    sessions, session = bound_session()
    session.start_transaction(TransactionOptions())
    assert session.txn_number is None
    sessions.bind(session, 0.0)
    assert session.txn_number == 1


def test_snapshot_sessions_refuse_transactions() -> None:
    _, session = bound_session(snapshot=True)
    with pytest.raises(
        InvalidOperation, match="Transactions are not supported in snapshot sessions"
    ):
        session.start_transaction(TransactionOptions())
    assert session.transaction_state is S.NONE


# -- options ----------------------------------------------------------------------------------


def test_session_options_as_pymongo() -> None:
    assert SessionOptions().causal_consistency is True
    assert SessionOptions(snapshot=True).causal_consistency is False
    assert SessionOptions(causal_consistency=False).causal_consistency is False
    with pytest.raises(ConfigurationError):
        SessionOptions(causal_consistency=True, snapshot=True)
    with pytest.raises(TypeError):
        SessionOptions(default_transaction_options={"w": 1})  # type: ignore[arg-type]


def test_implicit_and_snapshot_sessions_are_not_causally_consistent() -> None:
    assert Session(object(), implicit=False).causal_consistency
    assert not Session(object(), implicit=True).causal_consistency
    assert not Session(object(), implicit=False, snapshot=True).causal_consistency
    assert not Session(object(), implicit=False, causal_consistency=False).causal_consistency


def test_transaction_options_merge_unset_values_from_defaults() -> None:
    defaults = TransactionOptions("rc", "wc", "rp", 5)
    assert TransactionOptions().merged(defaults) == defaults
    own = TransactionOptions("mine", None, None, 7)
    assert own.merged(defaults) == TransactionOptions("mine", "wc", "rp", 7)
    assert own.merged(None) is own
    with pytest.raises(TypeError):
        TransactionOptions(max_commit_time_ms="5")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        TransactionOptions(max_commit_time_ms=True)


def test_using_an_ended_session_or_another_clients_session_is_refused() -> None:
    owner = object()
    session = Session(owner, implicit=False)
    session.require_usable(owner)
    with pytest.raises(InvalidOperation, match="Can only use session with the MongoClient"):
        session.require_usable(object())
    session.ended = True
    with pytest.raises(InvalidOperation, match="Cannot use ended session"):
        session.require_usable(owner)


# -- a commit or abort cut before its answer ---------------------------------------------------


def _cut_commit() -> tuple[Session, Session, object]:
    """A session whose transaction sent a command and whose commit flow was closed where it
    waited (for a server, a connection, a reply)."""
    from mongo_sansio.ops.transactions import commit_transaction, take_cut_abort
    from mongo_sansio.sessions.server_session import ServerSession

    session = Session(object(), implicit=False)
    session.server_session = ServerSession({"id": b"lsid"}, 0.0)
    session.start_transaction(TransactionOptions())
    session.operation_sent()
    flow = commit_transaction(session)
    next(flow)  # the commit waits for its server
    flow.close()  # cut there
    assert session.cut_abort_due and session.cut_txn_number == session.txn_number
    cut = take_cut_abort(session)
    assert cut is not None and not session.cut_abort_due and take_cut_abort(session) is None
    stand_in, abort = cut
    return session, stand_in, abort


def test_a_cut_commit_is_aborted_by_a_stand_in_with_the_transactions_number() -> None:
    session, stand_in, abort = _cut_commit()
    assert session.transaction_state is TransactionState.COMMITTED  # a retry is a commit retry
    assert stand_in.session_id == session.session_id and stand_in.txn_number == 1
    assert not stand_in.in_transaction and not session.in_use
    session.start_transaction(TransactionOptions())  # the user goes on: a new number
    assert session.txn_number == 2 and stand_in.txn_number == 1
    assert session.cut_txn_number is None
    session.cut_resolved(1, "aborted")  # a late answer about the old one changes nothing
    assert session.cut_outcome is None
    del abort


def test_a_cut_commits_server_session_is_not_pooled_again() -> None:
    """The background abort runs under the session's lsid: once the session ends, its server
    session is discarded (dirty), never handed to another session while the abort may still
    be in flight (found by the chaos transactions sweep, seed 104 of --steps 8)."""
    from mongo_sansio.sessions.server_session import ServerSessionPool

    session, _, abort = _cut_commit()
    assert session.server_session is not None and session.server_session.dirty
    pool = ServerSessionPool(lambda: bytes(16))
    pool.release(session.server_session, 0.0, 30)
    assert len(pool) == 0
    del abort


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        ({"ok": 1.0}, "aborted"),
        ({"ok": 0.0, "code": 251, "codeName": "NoSuchTransaction", "errmsg": "x"}, "aborted"),
        ({"ok": 0.0, "code": 256, "codeName": "TransactionCommitted", "errmsg": "x"}, "committed"),
        ({"ok": 0.0, "code": 8000, "codeName": "AtlasError", "errmsg": "x"}, None),
    ],
)
def test_the_background_abort_tells_the_outcome(answer: dict[str, object], outcome: str | None) -> None:
    from mongo_sansio.flow import OperationContext, RunCommand, SelectServer, ServerInfo

    session, stand_in, abort = _cut_commit()
    server = ServerInfo(("a", 27017), max_wire_version=21)
    request = abort.send(None)  # type: ignore[attr-defined]
    sent = None
    while True:
        if isinstance(request, SelectServer):
            reply: object = server
        elif isinstance(request, RunCommand):
            sent = request.body
            reply = answer
        elif type(request).__name__ == "GetContext":
            reply = OperationContext(session=stand_in, retry_reads=True, retry_writes=True)
        else:
            reply = None
        try:
            request = abort.send(reply)  # type: ignore[attr-defined]
        except StopIteration:
            break
    assert sent == {"abortTransaction": 1}
    assert session.cut_outcome == outcome
    assert session.cut_txn_number == (None if outcome is not None else 1)
