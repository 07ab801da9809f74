"""The change stream machine: commands, resume token tracking, resume points, error
classification, split events; and its flows, driven by scripted replies."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from flow_script import (
    command,
    cursor_reply,
    error_reply,
    mark_unknown,
    network_error,
    run_flow,
    select,
)
from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.bson import Timestamp
from mongo_sansio.cursors.change_stream import (
    RESUMABLE_CODES_BEFORE_WIRE_9,
    ChangeStream,
    ChangeStreamOptions,
    ChangeStreamTarget,
    ResumeDecision,
    choose_resume_point,
    is_resumable_error,
)
from mongo_sansio.cursors.change_stream_flow import (
    change_stream_close,
    change_stream_next,
    change_stream_open,
    change_stream_try_next,
)
from mongo_sansio.cursors.errors import (
    ChangeStreamClosed,
    ChangeStreamError,
    MissingResumeToken,
    SplitEventError,
)
from mongo_sansio.cursors.split_events import FragmentAssembler
from mongo_sansio.errors import (
    ConfigurationError,
    InvalidOperation,
    LocalProtocolError,
    MongoError,
    NetworkError,
    NetworkTimeout,
    RemoteProtocolError,
    ServerError,
    server_error_from_reply,
)
from mongo_sansio.flow import ServerInfo

SERVER = ServerInfo(("a", 27017), max_wire_version=21)
WIRE8 = ServerInfo(("old", 27017), max_wire_version=8)
COLL = ChangeStreamTarget("db", "coll")
T0 = Timestamp(100, 1)


def tok(n: int) -> dict[str, str]:
    return {"_data": f"{n:04d}"}


def ev(n: int, op: str = "insert", **fields: Any) -> dict[str, Any]:
    return {"_id": tok(n), "operationType": op, **fields}


def agg_reply(batch: Sequence[Any] = (), cursor_id: int = 5, **kwargs: Any) -> dict[str, Any]:
    return cursor_reply(batch, cursor_id=cursor_id, **kwargs)


def gm_reply(batch: Sequence[Any] = (), cursor_id: int = 5, **kwargs: Any) -> dict[str, Any]:
    return cursor_reply(batch, cursor_id=cursor_id, first=False, **kwargs)


def opened(
    reply: dict[str, Any] | None = None,
    server: ServerInfo = SERVER,
    target: ChangeStreamTarget = COLL,
    **options: Any,
) -> ChangeStream:
    cs = ChangeStream(target, [], ChangeStreamOptions(**options))
    cs.aggregate_command(server)
    cs.handle_aggregate_reply(reply if reply is not None else agg_reply(), server)
    return cs


def stage_of(body: dict[str, Any]) -> dict[str, Any]:
    stage: dict[str, Any] = body["pipeline"][0]["$changeStream"]
    return stage


# --- commands --------------------------------------------------------------------------------


def test_collection_watch_aggregate() -> None:
    cs = ChangeStream(COLL, [{"$match": {"x": 1}}], ChangeStreamOptions(batch_size=3))
    assert cs.aggregate_command(SERVER) == (
        "db",
        {
            "aggregate": "coll",
            "pipeline": [{"$changeStream": {}}, {"$match": {"x": 1}}],
            "cursor": {"batchSize": 3},
        },
    )


def test_database_watch_aggregates_one() -> None:
    db, body = ChangeStream(ChangeStreamTarget.database("db")).aggregate_command(SERVER)
    assert (db, body["aggregate"], body["cursor"]) == ("db", 1, {})


def test_cluster_watch_runs_on_admin_with_all_changes_for_cluster() -> None:
    cs = ChangeStream(ChangeStreamTarget.whole_cluster())
    db, body = cs.aggregate_command(SERVER)
    assert db == "admin" and body["aggregate"] == 1
    assert stage_of(body) == {"allChangesForCluster": True}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"db": "db", "coll": None, "cluster": True},
        {"db": "admin", "coll": "c", "cluster": True},
        {"db": ""},
    ],
)
def test_target_validation(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        ChangeStreamTarget(**kwargs)


def test_options_go_to_the_stage_or_the_command() -> None:
    options = ChangeStreamOptions(
        full_document="updateLookup",
        full_document_before_change="whenAvailable",
        resume_after=tok(1),
        max_await_time_ms=250,
        batch_size=0,
        collation={"locale": "fr"},
        comment={"why": "test"},
        show_expanded_events=False,
    )
    cs = ChangeStream(COLL, [], options, read_concern={"level": "majority"})
    _, body = cs.aggregate_command(SERVER)
    assert stage_of(body) == {
        "fullDocument": "updateLookup",
        "fullDocumentBeforeChange": "whenAvailable",
        "resumeAfter": tok(1),
        "showExpandedEvents": False,
    }
    assert body["cursor"] == {"batchSize": 0}
    assert body["collation"] == {"locale": "fr"} and body["comment"] == {"why": "test"}
    assert body["readConcern"] == {"level": "majority"}
    assert "maxTimeMS" not in body and "maxAwaitTimeMS" not in str(body)


def test_unknown_full_document_values_are_passed_on() -> None:
    cs = ChangeStream(COLL, [], ChangeStreamOptions(full_document="someday"))
    assert stage_of(cs.aggregate_command(SERVER)[1]) == {"fullDocument": "someday"}


def test_conflicting_start_options_are_left_to_the_server() -> None:
    options = ChangeStreamOptions(
        resume_after=tok(1), start_after=tok(2), start_at_operation_time=T0
    )
    stage = stage_of(ChangeStream(COLL, [], options).aggregate_command(SERVER)[1])
    assert stage == {"resumeAfter": tok(1), "startAfter": tok(2), "startAtOperationTime": T0}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"batch_size": -1},
        {"max_await_time_ms": "5"},
        {"resume_after": "token"},
        {"start_at_operation_time": 5},
    ],
)
def test_option_validation_names_the_option(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        ChangeStreamOptions(**kwargs)


def test_pipeline_must_be_documents() -> None:
    with pytest.raises(ConfigurationError):
        ChangeStream(COLL, [1])  # type: ignore[list-item]


@pytest.mark.parametrize(("server", "comment_sent"), [(SERVER, True), (WIRE8, False)])
def test_get_more_carries_max_await_time_batch_size_and_comment_from_wire_9(
    server: ServerInfo, comment_sent: bool
) -> None:
    cs = opened(agg_reply(ns="db.coll"), server, max_await_time_ms=900, batch_size=2, comment="c")
    target, db, body = cs.get_more_command()
    assert target is server and db == "db"
    assert body["collection"] == "coll" and body["maxTimeMS"] == 900 and body["batchSize"] == 2
    assert ("comment" in body) is comment_sent


def test_get_more_uses_the_namespace_the_server_returned() -> None:
    cs = opened(agg_reply(ns="db.$cmd.aggregate"), target=ChangeStreamTarget.database("db"))
    assert cs.get_more_command()[2]["collection"] == "$cmd.aggregate"


def test_split_large_events_appends_the_stage_once() -> None:
    options = ChangeStreamOptions(split_large_events=True)
    body = ChangeStream(COLL, [{"$match": {}}], options).aggregate_command(SERVER)[1]
    assert body["pipeline"][1:] == [{"$match": {}}, {"$changeStreamSplitLargeEvent": {}}]
    own: list[dict[str, Any]] = [{"$changeStreamSplitLargeEvent": {}}]
    assert ChangeStream(COLL, own, options).aggregate_command(SERVER)[1]["pipeline"][1:] == own


# --- resume token tracking -------------------------------------------------------------------


def test_token_starts_from_start_after_then_resume_after() -> None:
    assert ChangeStream(COLL).resume_token is None
    assert ChangeStream(COLL, [], ChangeStreamOptions(resume_after=tok(1))).resume_token == tok(1)
    both = ChangeStreamOptions(resume_after=tok(1), start_after=tok(2))
    assert ChangeStream(COLL, [], both).resume_token == tok(2)


def test_token_follows_events_and_post_batch_resume_tokens() -> None:
    cs = opened(agg_reply([], post_batch_resume_token=tok(10)))
    assert cs.resume_token == tok(10)  # empty first batch with a PBRT
    cs.handle_get_more_reply(gm_reply([ev(11), ev(12)], post_batch_resume_token=tok(13)))
    assert cs.resume_token == tok(10)  # nothing returned yet
    assert cs.next_event() == ev(11)
    assert cs.resume_token == tok(11)  # not the last of the batch: its _id
    assert cs.next_event() == ev(12)
    assert cs.resume_token == tok(13)  # the last of the batch: the PBRT
    cs.handle_get_more_reply(gm_reply([], post_batch_resume_token=tok(20)))
    assert cs.resume_token == tok(20)
    cs.handle_get_more_reply(gm_reply([ev(21)]))  # an old server: no PBRT
    assert cs.next_event() == ev(21) and cs.resume_token == tok(21)
    cs.handle_get_more_reply(gm_reply([]))
    assert cs.resume_token == tok(21)


def test_event_without_id_raises_and_closes() -> None:
    cs = opened(agg_reply([{"operationType": "insert"}]))
    with pytest.raises(MissingResumeToken, match="resume token is missing"):
        cs.next_event()
    assert cs.closed and isinstance(MissingResumeToken("x"), RemoteProtocolError)
    with pytest.raises(ChangeStreamClosed):
        cs.next_event()


def test_a_batch_element_that_is_not_a_document_raises() -> None:
    with pytest.raises(ChangeStreamError):
        opened(agg_reply([5])).next_event()


def test_invalidate_is_returned_then_the_stream_is_closed() -> None:
    cs = opened(agg_reply([ev(1, "drop"), ev(2, "invalidate")], cursor_id=0))
    assert cs.next_event() == ev(1, "drop") and cs.alive
    assert cs.next_event() == ev(2, "invalidate")
    assert cs.closed and not cs.alive and cs.resume_token == tok(2)
    with pytest.raises(ChangeStreamClosed):
        cs.next_event()
    assert isinstance(ChangeStreamClosed("x"), InvalidOperation)


def test_empty_first_batch_keeps_the_stream_alive() -> None:
    cs = opened(agg_reply([], cursor_id=5))
    assert cs.alive and cs.next_event() is None and cs.cursor is not None and cs.cursor.alive


def test_a_cursor_ended_by_the_server_ends_the_stream() -> None:
    cs = opened(agg_reply([ev(1)], cursor_id=0))
    assert cs.alive
    cs.next_event()
    assert not cs.alive


@pytest.mark.parametrize(
    ("options", "wire", "reply", "saved"),
    [
        ({}, 21, agg_reply(operation_time=T0), T0),
        ({}, 7, agg_reply(operation_time=T0), T0),
        ({}, 6, agg_reply(operation_time=T0), None),
        ({}, 21, agg_reply([ev(1)], operation_time=T0), None),
        ({}, 21, agg_reply(post_batch_resume_token=tok(1), operation_time=T0), None),
        ({"resume_after": tok(1)}, 21, agg_reply(operation_time=T0), None),
        ({"start_after": tok(1)}, 21, agg_reply(operation_time=T0), None),
        (
            {"start_at_operation_time": Timestamp(5, 5)},
            21,
            agg_reply(operation_time=T0),
            Timestamp(5, 5),
        ),
        ({}, 21, {**agg_reply(), "operationTime": "not a timestamp"}, None),
    ],
)
def test_operation_time_is_saved_only_as_the_spec_says(
    options: dict[str, Any], wire: int, reply: dict[str, Any], saved: Timestamp | None
) -> None:
    server = ServerInfo(("a", 1), max_wire_version=wire)
    assert opened(reply, server, **options).operation_time == saved


# --- resume points ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "start_after", "returned", "op_time", "wire", "expected"),
    [
        (tok(1), True, False, T0, 21, {"startAfter": tok(1)}),
        (tok(1), True, True, T0, 21, {"resumeAfter": tok(1)}),
        (tok(1), False, False, T0, 21, {"resumeAfter": tok(1)}),
        (tok(1), False, True, None, 6, {"resumeAfter": tok(1)}),
        (None, False, False, T0, 7, {"startAtOperationTime": T0}),
        (None, True, False, T0, 21, {"startAtOperationTime": T0}),
        (None, False, False, T0, 6, None),
        (None, False, False, None, 21, None),
    ],
)
def test_choose_resume_point(
    token: Any, start_after: bool, returned: bool, op_time: Any, wire: int, expected: Any
) -> None:
    got = choose_resume_point(
        resume_token=token,
        started_with_start_after=start_after,
        returned_any=returned,
        operation_time=op_time,
        max_wire_version=wire,
    )
    assert got == expected


def test_resume_command_replaces_the_original_start_fields() -> None:
    cs = opened(agg_reply([ev(1), ev(2)]), start_at_operation_time=T0, full_document="updateLookup")
    cs.next_event()
    assert cs.handle_get_more_error(NetworkError("x")) is ResumeDecision.RESUME
    kill = cs.begin_resume()
    assert kill == (SERVER, "db", {"killCursors": "coll", "cursors": [5]})
    body = cs.aggregate_command(SERVER)[1]
    assert stage_of(body) == {"fullDocument": "updateLookup", "resumeAfter": tok(1)}


def test_resume_without_token_or_time_resends_the_original_command() -> None:
    cs = opened(agg_reply(), WIRE8)  # wire 8 but the reply had no operationTime
    original = ChangeStream(COLL).aggregate_command(WIRE8)
    cs.handle_get_more_error(NetworkError("x"))
    cs.begin_resume()
    assert cs.aggregate_command(WIRE8) == original


# --- error classification --------------------------------------------------------------------


def server_error(code: int, *labels: str) -> ServerError:
    return server_error_from_reply(error_reply(code, *labels))


@pytest.mark.parametrize("code", sorted(RESUMABLE_CODES_BEFORE_WIRE_9))
def test_listed_codes_resume_before_wire_9_only(code: int) -> None:
    assert is_resumable_error(server_error(code), 8)
    assert not is_resumable_error(server_error(code), 9)
    assert is_resumable_error(server_error(code, "ResumableChangeStreamError"), 9)


def test_the_list_is_the_specs() -> None:
    assert RESUMABLE_CODES_BEFORE_WIRE_9 == {
        6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436, 63, 150, 13388, 234, 133
    }  # fmt: skip


@pytest.mark.parametrize(
    ("error", "wire", "resumable"),
    [
        (NetworkError("reset"), 21, True),
        (NetworkTimeout("timed out"), 21, True),
        (NetworkError("reset"), 6, True),
        (server_error(43), 21, True),
        (server_error(43), 6, True),
        (server_error(280, "ResumableChangeStreamError"), 9, True),
        (server_error(280, "ResumableChangeStreamError"), 8, False),  # labels mean nothing before 9
        (server_error(280), 21, False),  # ChangeStreamFatalError
        (server_error(11601), 8, False),  # Interrupted: not listed
        (server_error(50), 8, False),
        (server_error(262), 8, True),
        (server_error(91, "NotResumable"), 9, False),
        (RemoteProtocolError("bad reply"), 21, False),
        (LocalProtocolError("misuse"), 21, False),
        (ValueError("bug"), 21, False),
    ],
)
def test_error_classification(error: BaseException, wire: int, resumable: bool) -> None:
    assert is_resumable_error(error, wire) is resumable


def test_classification_uses_the_wire_version_of_the_get_more_server() -> None:
    cs = opened(server=WIRE8)
    assert cs.handle_get_more_error(server_error(10107)) is ResumeDecision.RESUME
    cs = opened(server=SERVER)
    assert cs.handle_get_more_error(server_error(10107)) is ResumeDecision.RAISE
    assert cs.closed


def test_a_second_error_before_progress_is_raised_and_leaves_a_pending_resume() -> None:
    cs = opened()
    assert cs.handle_get_more_error(NetworkError("1")) is ResumeDecision.RESUME
    cs.begin_resume()
    cs.aggregate_command(SERVER)
    cs.handle_aggregate_reply(agg_reply(), SERVER)
    assert cs.handle_get_more_error(NetworkError("2")) is ResumeDecision.RAISE
    assert cs.needs_resume and cs.alive and not cs.closed
    cs.begin_resume()
    cs.aggregate_command(SERVER)
    cs.handle_aggregate_reply(agg_reply(), SERVER)
    cs.handle_get_more_reply(gm_reply([]))  # progress
    assert cs.handle_get_more_error(NetworkError("3")) is ResumeDecision.RESUME


def test_a_call_cut_in_the_middle_of_a_resume_leaves_a_pending_resume() -> None:
    """Cut after the old cursor was dropped and before the new aggregate answered: the stream
    has no cursor, gives no event (no AssertionError) and the next call resumes from the last
    event returned."""
    cs = opened(agg_reply([ev(1), ev(2)]))
    assert cs.next_event() == ev(1)
    assert cs.handle_get_more_error(NetworkError("cut")) is ResumeDecision.RESUME
    cs.begin_resume()
    cs.interrupt()
    assert cs.needs_resume and cs.alive and cs.cursor is None
    assert cs.next_event() is None
    cs.begin_resume()
    _db, body = cs.aggregate_command(SERVER)
    assert stage_of(body)["resumeAfter"] == tok(1)
    cs.handle_aggregate_reply(agg_reply([ev(2)]), SERVER)
    assert cs.next_event() == ev(2)


def test_misuse_is_refused_before_anything_changes() -> None:
    cs = ChangeStream(COLL)
    for call in (cs.get_more_command, cs.next_event, cs.begin_resume):
        with pytest.raises(LocalProtocolError):
            call()
    with pytest.raises(LocalProtocolError):
        cs.handle_get_more_reply(gm_reply())
    cs = opened()
    with pytest.raises(LocalProtocolError):
        cs.aggregate_command(SERVER)
    with pytest.raises(LocalProtocolError):
        cs.handle_aggregate_reply(agg_reply(), SERVER)
    assert cs.state == "open"


def test_a_malformed_reply_closes_the_stream() -> None:
    cs = opened()
    with pytest.raises(RemoteProtocolError):
        cs.handle_get_more_reply({"ok": 1, "cursor": {"id": 5, "nextBatch": 3}})
    assert cs.closed
    assert cs.close() == (SERVER, "db", {"killCursors": "coll", "cursors": [5]})


# --- split events ----------------------------------------------------------------------------


def frag(n: int, of: int, token: int, **fields: Any) -> dict[str, Any]:
    return {"_id": tok(token), "splitEvent": {"fragment": n, "of": of}, **fields}


def test_fragments_are_merged_and_the_token_is_the_last_fragments() -> None:
    cs = opened(agg_reply([frag(1, 2, 1, operationType="update", a=1)]), split_large_events=True)
    assert cs.next_event() is None
    assert cs.resume_token is None
    cs.handle_get_more_reply(gm_reply([], post_batch_resume_token=tok(1)))
    assert cs.resume_token is None  # not moved in the middle of an event
    cs.handle_get_more_reply(gm_reply([frag(2, 2, 2, b=2), ev(3)]))
    assert cs.next_event() == {"_id": tok(2), "operationType": "update", "a": 1, "b": 2}
    assert cs.resume_token == tok(2)
    assert cs.next_event() == ev(3)


def test_fragments_pass_through_without_the_option() -> None:
    cs = opened(agg_reply([frag(1, 2, 1, a=1), frag(2, 2, 2, b=2)]))
    assert cs.next_event() == frag(1, 2, 1, a=1)
    assert cs.resume_token == tok(1)


@pytest.mark.parametrize(
    "batch",
    [
        [frag(2, 2, 1)],
        [frag(1, 3, 1), frag(3, 3, 2)],
        [frag(1, 2, 1), frag(2, 3, 2)],
        [frag(1, 2, 1), ev(2)],
        [frag(1, 2, 1, a=1), frag(2, 2, 2, a=2)],
        [{"_id": tok(1), "splitEvent": {"fragment": True, "of": 2}}],
        [{"_id": tok(1), "splitEvent": "1/2"}],
        [frag(0, 2, 1)],
    ],
)
def test_bad_fragments_raise_and_close(batch: list[Any]) -> None:
    cs = opened(agg_reply(batch), split_large_events=True)
    with pytest.raises(SplitEventError):
        cs.next_event()
        cs.next_event()
    assert cs.closed


def test_a_resume_drops_a_partial_event() -> None:
    cs = opened(agg_reply([ev(1), frag(1, 2, 2, a=1)]), split_large_events=True)
    assert cs.next_event() == ev(1)
    assert cs.next_event() is None
    cs.handle_get_more_error(NetworkError("x"))
    cs.begin_resume()
    assert stage_of(cs.aggregate_command(SERVER)[1]) == {"resumeAfter": tok(1)}
    cs.handle_aggregate_reply(agg_reply([frag(1, 2, 2, a=1), frag(2, 2, 3, b=1)]), SERVER)
    assert cs.next_event() == {"_id": tok(3), "a": 1, "b": 1}


@given(st.integers(1, 6), st.data())
def test_assembler_accepts_exactly_the_ordered_sequence(total: int, data: st.DataObject) -> None:
    parts = [frag(n, total, n, **{f"f{n}": n}) for n in range(1, total + 1)]
    order = data.draw(st.permutations(parts))
    assembler = FragmentAssembler()
    try:
        results = [assembler.add(p) for p in order]
    except SplitEventError:
        assert order != parts
        assert not assembler.pending
        return
    assert order == parts
    assert results[:-1] == [None] * (total - 1)
    assert results[-1] == {"_id": tok(total), **{f"f{n}": n for n in range(1, total + 1)}}


# --- flows -----------------------------------------------------------------------------------


def open_flow(cs: ChangeStream, reply: dict[str, Any]) -> None:
    run_flow(change_stream_open(cs), select(SERVER), command("aggregate", reply, db="db"))


def test_next_loops_over_empty_batches() -> None:
    cs = ChangeStream(COLL, [], ChangeStreamOptions(max_await_time_ms=10))
    open_flow(cs, agg_reply())
    event = run_flow(
        change_stream_next(cs),
        command("getMore", gm_reply([]), body={"maxTimeMS": 10}),
        command("getMore", gm_reply([ev(1)])),
    )
    assert event == ev(1)


def test_try_next_sends_one_get_more_and_returns_none() -> None:
    cs = ChangeStream(COLL)
    open_flow(cs, agg_reply())
    assert (
        run_flow(
            change_stream_try_next(cs),
            command("getMore", gm_reply([], post_batch_resume_token=tok(4))),
        )
        is None
    )
    assert cs.resume_token == tok(4)


def test_open_twice_is_refused_without_harm() -> None:
    cs = ChangeStream(COLL)
    open_flow(cs, agg_reply())
    with pytest.raises(InvalidOperation):
        run_flow(change_stream_open(cs))
    assert cs.alive


def test_close_kills_the_cursor_quietly_and_iteration_then_raises() -> None:
    cs = ChangeStream(COLL)
    open_flow(cs, agg_reply())
    run_flow(change_stream_close(cs), command("killCursors", error_reply(11601)))
    for flow in (change_stream_next(cs), change_stream_try_next(cs)):
        with pytest.raises(ChangeStreamClosed):
            run_flow(flow)


def test_after_an_invalidate_the_cursor_is_killed_if_the_server_kept_it() -> None:
    cs = ChangeStream(COLL)
    open_flow(cs, agg_reply([ev(1, "invalidate")], cursor_id=5))
    event = run_flow(change_stream_try_next(cs), command("killCursors", body={"cursors": [5]}))
    assert event == ev(1, "invalidate")
    with pytest.raises(ChangeStreamClosed):
        run_flow(change_stream_next(cs))


def test_a_cursor_closed_by_the_server_ends_next_and_try_next() -> None:
    cs = ChangeStream(COLL)
    open_flow(cs, agg_reply())
    with pytest.raises(ChangeStreamClosed):
        run_flow(change_stream_next(cs), command("getMore", gm_reply([], cursor_id=0)))
    cs = ChangeStream(COLL)
    open_flow(cs, agg_reply())
    assert (
        run_flow(change_stream_try_next(cs), command("getMore", gm_reply([], cursor_id=0))) is None
    )
    assert not cs.alive


def test_non_resumable_get_more_error_closes_the_stream() -> None:
    cs = ChangeStream(COLL)
    open_flow(cs, agg_reply())
    with pytest.raises(ServerError) as raised:
        run_flow(
            change_stream_next(cs),
            command("getMore", error_reply(280, errmsg="fatal")),
            command("killCursors"),
        )
    assert raised.value.code == 280 and cs.closed


def test_pending_resume_is_done_by_the_next_call() -> None:
    cs = ChangeStream(COLL)
    open_flow(cs, agg_reply())
    with pytest.raises(NetworkError):
        run_flow(
            change_stream_next(cs),
            network_error("getMore"),
            mark_unknown(),
            select(SERVER),
            command("killCursors"),
            command("aggregate", agg_reply(cursor_id=6)),
            network_error("getMore", body={"getMore": 6}),
            mark_unknown(),
        )
    assert cs.needs_resume and cs.alive
    event = run_flow(
        change_stream_next(cs),
        select(SERVER),
        command("killCursors", body={"cursors": [6]}),
        command("aggregate", agg_reply([ev(1)], cursor_id=7)),
    )
    assert event == ev(1)


def test_flow_errors_are_always_library_errors() -> None:
    cs = ChangeStream(COLL)
    with pytest.raises(MongoError):
        run_flow(
            change_stream_open(cs), select(SERVER), command("aggregate", {"ok": 1, "cursor": 5})
        )
    assert cs.closed


def _open_directly(cs: ChangeStream) -> None:
    cs.aggregate_command(SERVER)
    cs.handle_aggregate_reply(agg_reply([ev(1)]), SERVER)


def test_every_state_refuses_or_accepts_each_input_consistently() -> None:
    # A walk over (input sequence) pairs: any input either works or raises LocalProtocolError,
    # never anything else, and a refused input changes nothing.
    inputs: dict[str, Callable[[ChangeStream], object]] = {
        "aggregate": _open_directly,
        "getMore": lambda cs: cs.handle_get_more_reply(gm_reply([ev(2)])),
        "error": lambda cs: cs.handle_get_more_error(NetworkError("x")),
        "resume": lambda cs: cs.begin_resume(),
        "event": lambda cs: cs.next_event(),
    }
    for sequence in itertools.product(inputs, repeat=3):
        cs = ChangeStream(COLL)
        for name in sequence:
            before = (cs.state, cs.resume_token)
            try:
                inputs[name](cs)
            except LocalProtocolError:
                assert (cs.state, cs.resume_token) == before
