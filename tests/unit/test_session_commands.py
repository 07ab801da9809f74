"""The fields a session puts on each command (Driver Sessions, Causal Consistency, Snapshot
Reads and Transactions specs), through :func:`with_session_fields` and the client's
:meth:`ClientSessions.prepare` (which binds the session and draws a retryable write's number):
lsid, $clusterTime (wire 6 and later only), txnNumber, startTransaction and the transaction's
read concern on its first command only, autocommit false, afterClusterTime for causal reads,
snapshot reads' atClusterTime, and unacknowledged writes (no lsid on implicit sessions, an
error on explicit ones)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import pytest
from flow_script import ABSENT, ANY, matches

from mongo_sansio.bson import Int64, Timestamp
from mongo_sansio.client.sessions import ClientSessions
from mongo_sansio.errors import ConfigurationError, NetworkError
from mongo_sansio.flow import RunCommand, ServerInfo, TxnSlot
from mongo_sansio.sessions import ClusterClock, Session, TransactionOptions, with_session_fields

SERVER = ServerInfo(("a", 27017), max_wire_version=21, supports_retryable_writes=True)
OLD_SERVER = ServerInfo(("a", 27017), max_wire_version=5)
OWNER = object()


def cluster_time(seconds: int, inc: int = 1) -> dict[str, Any]:
    return {"clusterTime": Timestamp(seconds, inc), "signature": {"hash": b"x" * 20, "keyId": 1}}


def new_sessions(timeout: int | None = 30) -> ClientSessions:
    numbers = itertools.count(1)
    return ClientSessions(lambda: next(numbers).to_bytes(16, "big"), lambda: timeout)


def prepare(
    sessions: ClientSessions,
    session: Session | None,
    body: Mapping[str, Any],
    *,
    server: ServerInfo = SERVER,
    txn: TxnSlot | None = None,
) -> Mapping[str, Any]:
    request = RunCommand(server, "db", body, txn=txn)
    return sessions.prepare(request, session, body, 0.0)


def assert_matches(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> None:
    assert matches(expected, actual) == [], actual


# -- lsid and $clusterTime --------------------------------------------------------------------


def test_lsid_on_every_command_of_the_session() -> None:
    sessions = new_sessions()
    session = Session(OWNER, implicit=True)
    first = prepare(sessions, session, {"find": "c"})
    second = prepare(sessions, session, {"insert": "c"})
    assert first["lsid"] == second["lsid"] == session.session_id
    assert isinstance(first["lsid"]["id"].subtype, int) and first["lsid"]["id"].subtype == 4


def test_no_lsid_when_the_deployment_does_not_support_sessions() -> None:
    sessions = new_sessions(timeout=None)
    session = Session(OWNER, implicit=True)
    body = prepare(sessions, session, {"find": "c"})
    assert "lsid" not in body and session.server_session is None


def test_explicit_session_on_a_deployment_without_sessions_is_refused() -> None:
    sessions = new_sessions(timeout=None)
    with pytest.raises(ConfigurationError, match="Sessions are not supported"):
        prepare(sessions, Session(OWNER, implicit=False), {"find": "c"})


@pytest.mark.parametrize("name", ["hello", "isMaster", "saslStart", "saslContinue", "endSessions"])
def test_handshake_auth_and_end_sessions_carry_no_session(name: str) -> None:
    sessions = new_sessions()
    sessions.clock.advance(cluster_time(5))
    session = Session(OWNER, implicit=True)
    body = prepare(sessions, session, {name: 1})
    assert body == {name: 1}
    assert session.server_session is None


def test_cluster_time_from_wire_version_6_only() -> None:
    sessions = new_sessions()
    sessions.clock.advance(cluster_time(5))
    assert prepare(sessions, None, {"ping": 1})["$clusterTime"] == cluster_time(5)
    assert "$clusterTime" not in prepare(sessions, None, {"ping": 1}, server=OLD_SERVER)
    at_6 = ServerInfo(("a", 1), max_wire_version=6)
    assert "$clusterTime" in prepare(sessions, None, {"ping": 1}, server=at_6)


def test_without_a_session_only_the_cluster_time_is_added() -> None:
    clock = ClusterClock()
    clock.advance(cluster_time(3))
    body = with_session_fields(
        {"find": "c"}, None, clock, max_wire_version=21, sessions_supported=True
    )
    assert body == {"find": "c", "$clusterTime": cluster_time(3)}


def test_no_cluster_time_before_one_was_seen() -> None:
    assert "$clusterTime" not in prepare(new_sessions(), None, {"ping": 1})


def test_the_later_of_the_clients_and_the_sessions_cluster_time_is_sent() -> None:
    sessions = new_sessions()
    session = Session(OWNER, implicit=False)
    sessions.clock.advance(cluster_time(5))
    session.advance_cluster_time(cluster_time(9))
    assert prepare(sessions, session, {"find": "c"})["$clusterTime"] == cluster_time(9)
    sessions.clock.advance(cluster_time(12))
    assert prepare(sessions, session, {"find": "c"})["$clusterTime"] == cluster_time(12)


def test_replies_advance_the_clock_never_backwards() -> None:
    clock = ClusterClock()
    clock.absorb({"ok": 1, "$clusterTime": cluster_time(7, 2)})
    clock.absorb({"ok": 1, "$clusterTime": cluster_time(7, 1)})
    clock.absorb({"ok": 1, "$clusterTime": {"clusterTime": "not a timestamp"}})
    clock.absorb({"ok": 1})
    assert clock.cluster_time == cluster_time(7, 2)


def test_advance_cluster_time_and_operation_time_validate_and_keep_the_later() -> None:
    session = Session(OWNER, implicit=False)
    with pytest.raises(TypeError):
        session.advance_cluster_time("x")
    with pytest.raises(ValueError):
        session.advance_cluster_time({"clusterTime": 5})
    with pytest.raises(TypeError):
        session.advance_operation_time(5)
    session.advance_operation_time(Timestamp(10, 1))
    session.advance_operation_time(Timestamp(9, 9))
    assert session.operation_time == Timestamp(10, 1)


# -- retryable writes -------------------------------------------------------------------------


def test_a_retryable_write_takes_a_txn_number_kept_for_its_retry() -> None:
    sessions = new_sessions()
    session = Session(OWNER, implicit=True)
    slot = TxnSlot()
    first = prepare(sessions, session, {"insert": "c"}, txn=slot)
    retry = prepare(sessions, session, {"insert": "c"}, txn=slot)
    assert first["txnNumber"] == retry["txnNumber"] == Int64(1)
    assert isinstance(first["txnNumber"], Int64)
    following = prepare(sessions, session, {"insert": "c"}, txn=TxnSlot())
    assert following["txnNumber"] == Int64(2)
    assert "txnNumber" not in prepare(sessions, session, {"insert": "c"})  # not retryable


# -- unacknowledged writes --------------------------------------------------------------------

UNACK = {"insert": "c", "writeConcern": {"w": 0}}


def test_unacknowledged_write_on_an_implicit_session_sends_no_lsid() -> None:
    sessions = new_sessions()
    session = Session(OWNER, implicit=True)
    body = prepare(sessions, session, UNACK)
    assert "lsid" not in body and "txnNumber" not in body
    assert session.server_session is None  # nothing taken from the pool


def test_unacknowledged_write_on_an_explicit_session_is_refused() -> None:
    sessions = new_sessions()
    used = Session(OWNER, implicit=False)
    prepare(sessions, used, {"find": "c"})
    with pytest.raises(ConfigurationError, match="Explicit sessions are incompatible"):
        prepare(sessions, used, UNACK)


def test_unacknowledged_write_as_the_first_command_of_an_explicit_session_is_refused() -> None:
    sessions = new_sessions()
    with pytest.raises(ConfigurationError, match="Explicit sessions are incompatible"):
        prepare(sessions, Session(OWNER, implicit=False), UNACK)


# -- causal consistency -----------------------------------------------------------------------


def test_first_read_of_a_causal_session_has_no_after_cluster_time() -> None:
    sessions = new_sessions()
    session = Session(OWNER, implicit=False)
    body = prepare(sessions, session, {"find": "c"})
    assert "readConcern" not in body


def test_reads_after_an_operation_carry_after_cluster_time() -> None:
    sessions = new_sessions()
    session = Session(OWNER, implicit=False)
    prepare(sessions, session, {"insert": "c"})
    sessions.absorb(session, {"ok": 1, "operationTime": Timestamp(20, 3)})
    for name in ("find", "aggregate", "distinct", "count"):
        body = prepare(sessions, session, {name: "c"})
        assert body["readConcern"] == {"afterClusterTime": Timestamp(20, 3)}
    level = prepare(sessions, session, {"find": "c", "readConcern": {"level": "majority"}})
    assert level["readConcern"] == {"level": "majority", "afterClusterTime": Timestamp(20, 3)}
    # the Causal Consistency spec's write rule: write commands carry it too (no level)
    write = prepare(sessions, session, {"insert": "c"})
    assert write["readConcern"] == {"afterClusterTime": Timestamp(20, 3)}
    other = prepare(sessions, session, {"listCollections": 1})
    assert "readConcern" not in other


def test_error_replies_advance_the_operation_time_too() -> None:
    sessions = new_sessions()
    session = Session(OWNER, implicit=False)
    sessions.absorb(session, {"ok": 0, "code": 2, "operationTime": Timestamp(30, 1)})
    assert prepare(sessions, session, {"find": "c"})["readConcern"] == {
        "afterClusterTime": Timestamp(30, 1)
    }


def test_non_causal_sessions_never_send_after_cluster_time() -> None:
    sessions = new_sessions()
    for session in (
        Session(OWNER, implicit=False, causal_consistency=False),
        Session(OWNER, implicit=True),
    ):
        sessions.absorb(session, {"ok": 1, "operationTime": Timestamp(20, 3)})
        assert "readConcern" not in prepare(sessions, session, {"find": "c"})


# -- snapshot reads ----------------------------------------------------------------------------


def test_snapshot_reads_take_the_first_reads_at_cluster_time() -> None:
    sessions = new_sessions()
    session = Session(OWNER, implicit=False, snapshot=True)
    first = prepare(sessions, session, {"find": "c"})
    assert first["readConcern"] == {"level": "snapshot"}
    reply = {
        "ok": 1,
        "cursor": {"id": Int64(0), "firstBatch": [], "atClusterTime": Timestamp(40, 2)},
    }
    sessions.absorb(session, reply)
    second = prepare(sessions, session, {"aggregate": "c"})
    assert second["readConcern"] == {"level": "snapshot", "atClusterTime": Timestamp(40, 2)}
    sessions.absorb(session, {"ok": 1, "atClusterTime": Timestamp(50, 1)})
    third = prepare(sessions, session, {"distinct": "c"})
    assert third["readConcern"]["atClusterTime"] == Timestamp(40, 2)  # the first one stays


def test_a_snapshot_time_given_at_the_start_is_read_at_from_the_first_read() -> None:
    sessions = new_sessions()
    session = Session(OWNER, implicit=False, snapshot=True, snapshot_time=Timestamp(30, 1))
    assert session.snapshot_time == session.options.snapshot_time == Timestamp(30, 1)
    first = prepare(sessions, session, {"find": "c"})
    assert first["readConcern"] == {"level": "snapshot", "atClusterTime": Timestamp(30, 1)}
    sessions.absorb(session, {"ok": 1, "cursor": {"id": Int64(0), "atClusterTime": Timestamp(40, 2)}})
    assert session.snapshot_time == Timestamp(30, 1)  # the given one stays


def test_a_snapshot_session_sends_its_read_concern_on_every_command_but_cursor_continuations() -> None:
    # the snapshot sessions spec: writes and catalogue reads too, so the server refuses them
    sessions = new_sessions()
    session = Session(OWNER, implicit=False, snapshot=True, snapshot_time=Timestamp(30, 1))
    for body in ({"insert": "c", "documents": [{}]}, {"update": "c"}, {"delete": "c"},
                 {"findAndModify": "c"}, {"listDatabases": 1}, {"listCollections": 1},
                 {"listIndexes": "c"}, {"ping": 1}):
        sent = prepare(sessions, session, body)
        assert sent["readConcern"] == {"level": "snapshot", "atClusterTime": Timestamp(30, 1)}, body
    for body in ({"getMore": Int64(5), "collection": "c"}, {"killCursors": "c", "cursors": []}):
        assert "readConcern" not in prepare(sessions, session, body)


def test_a_snapshot_time_needs_a_snapshot_session_and_a_timestamp() -> None:
    with pytest.raises(ConfigurationError, match="snapshot=True"):
        Session(OWNER, implicit=False, snapshot_time=Timestamp(1, 1))
    with pytest.raises(TypeError, match="Timestamp"):
        Session(OWNER, implicit=False, snapshot=True, snapshot_time=12345)  # type: ignore[arg-type]


# -- transactions --------------------------------------------------------------------------------


def start(session: Session, **options: Any) -> None:
    session.start_transaction(TransactionOptions(**options))


class Majority:
    """A read concern the way PyMongo's ReadConcern exposes its document."""

    document = {"level": "majority"}


def test_transaction_fields_on_the_first_command_and_the_next() -> None:
    sessions = new_sessions()
    session = Session(OWNER, implicit=False)
    start(session, read_concern=Majority())
    first = prepare(sessions, session, {"insert": "c"})
    second = prepare(sessions, session, {"find": "c", "readConcern": {"level": "local"}})
    assert_matches(
        {
            "lsid": ANY,
            "txnNumber": Int64(1),
            "startTransaction": True,
            "autocommit": False,
            "readConcern": {"level": "majority"},
        },
        first,
    )
    assert_matches(
        {
            "lsid": first["lsid"],
            "txnNumber": Int64(1),
            "startTransaction": ABSENT,
            "autocommit": False,
            "readConcern": ABSENT,
            "writeConcern": ABSENT,
        },
        second,
    )
    assert isinstance(first["txnNumber"], Int64) and first["autocommit"] is False


def test_a_transaction_without_read_concern_sends_none() -> None:
    sessions = new_sessions()
    session = Session(OWNER, implicit=False, causal_consistency=False)
    start(session)
    assert_matches(
        {"startTransaction": True, "readConcern": ABSENT}, prepare(sessions, session, {"find": "c"})
    )


def test_a_causal_transaction_starts_after_the_sessions_operation_time() -> None:
    sessions = new_sessions()
    session = Session(OWNER, implicit=False)
    prepare(sessions, session, {"insert": "c"})
    sessions.absorb(session, {"ok": 1, "operationTime": Timestamp(60, 1)})
    start(session, read_concern={"level": "snapshot"})
    body = prepare(sessions, session, {"find": "c"})
    assert body["readConcern"] == {"level": "snapshot", "afterClusterTime": Timestamp(60, 1)}


def test_retryable_write_numbers_and_transactions_share_the_counter() -> None:
    sessions = new_sessions()
    session = Session(OWNER, implicit=False)
    write = prepare(sessions, session, {"insert": "c"}, txn=TxnSlot())
    start(session)
    inside = prepare(sessions, session, {"insert": "c"}, txn=None)
    session.commit()
    commit = prepare(sessions, session, {"commitTransaction": 1})
    after = prepare(sessions, session, {"insert": "c"}, txn=TxnSlot())
    assert [write["txnNumber"], inside["txnNumber"], commit["txnNumber"], after["txnNumber"]] == [
        1,
        2,
        2,
        3,
    ]
    assert_matches({"autocommit": False, "startTransaction": ABSENT}, commit)


def test_commit_and_abort_carry_the_number_but_never_start() -> None:
    sessions = new_sessions()
    session = Session(OWNER, implicit=False)
    start(session)
    prepare(sessions, session, {"insert": "c"})
    session.abort()
    abort = prepare(sessions, session, {"abortTransaction": 1, "writeConcern": {"w": 1}})
    assert_matches(
        {
            "txnNumber": Int64(1),
            "autocommit": False,
            "startTransaction": ABSENT,
            "writeConcern": {"w": 1},
        },
        abort,
    )


def test_the_first_command_after_a_transaction_leaves_it() -> None:
    sessions = new_sessions()
    session = Session(OWNER, implicit=False)
    start(session)
    prepare(sessions, session, {"insert": "c"})
    session.commit()
    after = prepare(sessions, session, {"find": "c"})
    assert_matches({"txnNumber": ABSENT, "autocommit": ABSENT, "startTransaction": ABSENT}, after)
    assert session.transaction_state.value == "none"


def test_a_network_error_inside_a_transaction_is_transient_and_dirties_the_session() -> None:
    sessions = new_sessions()
    session = Session(OWNER, implicit=False)
    start(session)
    prepare(sessions, session, {"insert": "c"})
    error = NetworkError("reset")
    sessions.failed(session, {"insert": "c"}, error)
    assert error.has_error_label("TransientTransactionError")
    assert session.server_session is not None and session.server_session.dirty
    commit_error = NetworkError("reset")
    sessions.failed(session, {"commitTransaction": 1}, commit_error)
    assert not commit_error.has_error_label("TransientTransactionError")


def test_the_collections_write_concern_is_ignored_inside_a_transaction() -> None:
    """PyMongo's rule and the Transactions spec's "collection writeConcern ignored" tests."""
    sessions = new_sessions()
    session = Session(OWNER, implicit=False)
    start(session)
    body = prepare(sessions, session, {"insert": "c", "writeConcern": {"w": 2}})
    assert_matches({"writeConcern": ABSENT, "startTransaction": True, "lsid": ANY}, body)


def test_an_unacknowledged_collection_inside_a_transaction_writes_in_it() -> None:
    sessions = new_sessions()
    session = Session(OWNER, implicit=False)
    start(session)
    body = prepare(sessions, session, UNACK)  # the session's first command: it binds now
    assert_matches(
        {"writeConcern": ABSENT, "lsid": ANY, "txnNumber": Int64(1), "autocommit": False}, body
    )
    session.commit()
    commit = prepare(sessions, session, {"commitTransaction": 1, "writeConcern": {"w": 1}})
    assert commit["writeConcern"] == {"w": 1}  # the transaction's own, at commit
